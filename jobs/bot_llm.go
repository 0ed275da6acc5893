package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3"
	"golang.org/x/text/language"
	"golang.org/x/text/language/display"
)

// handoffTool is the function the model calls to hand the conversation to a human; optOutTool the one
// it calls when the contact asks, in its own words, to receive no more messages; goalTool the one it
// calls when the conversation reached the campaign's goal.
const (
	handoffTool = "handoff_to_human"
	optOutTool  = "opt_out"
	goalTool    = "goal_reached"
)

// llmBot asks an OpenAI-compatible chat completions endpoint.
type llmBot struct {
	completions openai.ChatCompletionService
	model       string
	httpClient  *http.Client
}

func (b *llmBot) Reply(ctx context.Context, req BotRequest) (BotResponse, error) {
	completion, err := b.completions.New(ctx, b.params(req))
	if err != nil {
		// The SDK's error text is a sanitized status line ("OpenAI API error: 429 Too Many Requests");
		// callers that need the provider's message can errors.As to *openai.Error.
		return BotResponse{}, fmt.Errorf("bot reply: %w", err)
	}
	if len(completion.Choices) == 0 {
		return BotResponse{}, errors.New("bot reply: the model returned no choices")
	}
	msg := completion.Choices[0].Message
	// An opt-out is honoured before anything else the model asked for: a person who said stop must
	// hear nothing more but the confirmation.
	for _, call := range msg.ToolCalls {
		if call.Function.Name == optOutTool && !req.FollowUp {
			return BotResponse{OptOut: true}, nil
		}
	}
	if msg.FunctionCall.Name == optOutTool && !req.FollowUp {
		return BotResponse{OptOut: true}, nil
	}
	// A goal is recorded whatever else the model did: reaching it and wanting a human can go together.
	var goal BotResponse
	for _, call := range msg.ToolCalls {
		if call.Function.Name == goalTool && req.Goal != "" && !req.FollowUp {
			goal = BotResponse{Goal: true, GoalSummary: goalSummary(call.Function.Arguments)}
		}
	}
	if msg.FunctionCall.Name == goalTool && req.Goal != "" && !req.FollowUp {
		goal = BotResponse{Goal: true, GoalSummary: goalSummary(msg.FunctionCall.Arguments)}
	}
	for _, call := range msg.ToolCalls {
		if call.Function.Name == handoffTool {
			goal.Handoff, goal.HandoffReason = true, handoffReason(call.Function.Arguments)
			return goal, nil
		}
	}
	if msg.FunctionCall.Name == handoffTool { // servers that still answer with the legacy function_call
		goal.Handoff, goal.HandoffReason = true, handoffReason(msg.FunctionCall.Arguments)
		return goal, nil
	}
	if text := strings.TrimSpace(msg.Content); text != "" {
		goal.Text = text
		return goal, nil
	}
	if goal.Goal {
		return goal, nil // the goal without a text: nothing to send, and nothing to retry
	}
	if refusal := strings.TrimSpace(msg.Refusal); refusal != "" {
		// A refusal will not change on retry: a human should take over.
		return BotResponse{Handoff: true, HandoffReason: "the model refused: " + truncateRunes(refusal, 200)}, nil
	}
	return BotResponse{}, fmt.Errorf("bot reply: the model returned no text and no tool call (finish reason %q)", completion.Choices[0].FinishReason)
}

// params builds the chat completion request: one system message, then the history in order.
func (b *llmBot) params(req BotRequest) openai.ChatCompletionNewParams {
	messages := make([]openai.ChatCompletionMessageParamUnion, 0, len(req.History)+1)
	messages = append(messages, openai.SystemMessage(systemPrompt(req)))
	for _, turn := range req.History {
		if strings.TrimSpace(turn.Text) == "" {
			continue // media-only or reaction turns carry no text for the model
		}
		if turn.Role == BotRoleAssistant {
			messages = append(messages, openai.AssistantMessage(turn.Text))
		} else {
			messages = append(messages, openai.UserMessage(turn.Text))
		}
	}
	tools := []openai.ChatCompletionToolUnionParam{
		functionTool(handoffTool, "Hand the conversation to a human member of the business's team. Call it when "+
			"the contact asks for a human (a person, an agent, a representative), or when you cannot help "+
			"them with what they need. Do not write a reply when you call it.",
			"reason", "Why a human is needed, in one short sentence for the team."),
	}
	if !req.FollowUp {
		// A follow-up answers no message of the contact's, so there is no request to read in it.
		tools = append(tools, functionTool(optOutTool, "Record that the contact does not want to receive any more messages from the business. "+
			"Call it when the contact's last message asks to stop, in any words or language (\"please stop texting me\", "+
			"\"take me off your list\", \"leave me alone\"). Do not call it for complaints or questions that are not "+
			"such a request. Do not write a reply when you call it: the service sends the confirmation.", "", ""))
	}
	if strings.TrimSpace(req.Goal) != "" && !req.FollowUp {
		// Offered only when there is a goal to reach, and only in answer to the contact.
		tools = append(tools, functionTool(goalTool, "Record that the conversation reached the goal of the conversation given in the instructions "+
			"(for example the contact booked the call, bought, or confirmed the visit). Call it only when the contact's "+
			"messages show the goal is reached, not when it is merely likely. Still write your reply to the contact in "+
			"the same answer.",
			"summary", "What the contact did or agreed to, in one short sentence for the team."))
	}
	return openai.ChatCompletionNewParams{Model: b.model, Messages: messages, Tools: tools}
}

// functionTool is a tool the model may call, with one required string argument (none when arg is "").
func functionTool(name, description, arg, argDescription string) openai.ChatCompletionToolUnionParam {
	params := openai.FunctionParameters{"type": "object", "properties": map[string]any{}, "additionalProperties": false}
	if arg != "" {
		params["properties"] = map[string]any{arg: map[string]any{"type": "string", "description": argDescription}}
		params["required"] = []string{arg}
	}
	return openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: name, Description: openai.String(description), Parameters: params})
}

// systemPrompt tells the model who it is, what the business wants, and how to answer.
func systemPrompt(req BotRequest) string {
	var p strings.Builder
	p.WriteString("You write the messages of a business to one of its contacts in a chat (SMS, WhatsApp, Messenger, Instagram or a website chat). " +
		"Keep messages short, friendly and in plain text, without markdown. Do not invent facts, prices or promises " +
		"that the instructions below do not give you.\n")
	fmt.Fprintf(&p, "Answer in %s.\n", languageName(req.Language))
	if name := strings.TrimSpace(req.FirstName); name != "" {
		fmt.Fprintf(&p, "The contact's first name is %s.\n", name)
	}
	if instructions := strings.TrimSpace(req.Instructions); instructions != "" {
		fmt.Fprintf(&p, "\nInstructions from the business:\n%s\n", instructions)
	}
	if goal := strings.TrimSpace(req.Goal); goal != "" {
		fmt.Fprintf(&p, "\nGoal of the conversation: %s\nSteer the conversation toward this goal without being pushy.\n", goal)
		if !req.FollowUp {
			fmt.Fprintf(&p, "When the contact's messages show that the goal is reached, call the %s tool and still write your reply.\n", goalTool)
		}
	}
	fmt.Fprintf(&p, "\nIf the contact asks for a human, or you cannot help them, call the %s tool instead of replying.\n", handoffTool)
	if !req.FollowUp {
		fmt.Fprintf(&p, "If the contact asks to receive no more messages, call the %s tool instead of replying.\n", optOutTool)
	}
	if req.FollowUp {
		p.WriteString("\nThe contact has not answered the last message. Write one short follow-up message that " +
			"nudges them toward the goal. Do not repeat earlier messages word for word.\n")
	}
	return p.String()
}

// languageName turns a BCP 47 tag into "Spanish (es)" for the prompt; an unknown tag is used as given.
func languageName(tag string) string {
	tag = strings.TrimSpace(tag)
	if tag == "" {
		tag = "en"
	}
	t, err := language.Parse(tag)
	if err != nil {
		return tag
	}
	if name := display.English.Tags().Name(t); name != "" {
		return fmt.Sprintf("%s (%s)", name, tag)
	}
	return tag
}

// handoffReason reads the tool call's {"reason": "..."}; missing or malformed arguments get a generic
// reason, since the model's wish for a human matters more than its wording.
func handoffReason(arguments string) string {
	var args struct {
		Reason string `json:"reason"`
	}
	if json.Unmarshal([]byte(arguments), &args) == nil {
		if reason := strings.TrimSpace(args.Reason); reason != "" {
			return truncateRunes(reason, 500)
		}
	}
	return HandoffBotAsked
}

// goalSummary reads the goal tool call's {"summary": "..."}; missing or malformed arguments give ""
// (the goal counts; its wording is a nicety).
func goalSummary(arguments string) string {
	var args struct {
		Summary string `json:"summary"`
	}
	if json.Unmarshal([]byte(arguments), &args) != nil {
		return ""
	}
	return truncateRunes(strings.TrimSpace(args.Summary), 500)
}

// truncateRunes keeps at most n runes of s.
func truncateRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n])
	}
	return s
}
