package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"golang.org/x/text/language"
	"golang.org/x/text/language/display"

	"funnelchat/config"
)

// Roles of a BotTurn.
const (
	BotRoleUser      = "user"      // the contact
	BotRoleAssistant = "assistant" // the business: the bot or a human
)

// BotTurn is one message of the conversation as the bot sees it.
type BotTurn struct {
	Role string // BotRoleUser (the contact) or BotRoleAssistant (the business: bot or human); any other role is read as the contact's
	Text string
}

// BotRequest is what the bot knows when it writes one message.
type BotRequest struct {
	Instructions string    // campaign's (or the account's default) bot instructions; may be empty
	Goal         string    // conversation goal; may be empty
	Language     string    // BCP 47 tag, e.g. "en", "es"; empty = "en"
	FirstName    string    // contact's first name, may be empty
	History      []BotTurn // recent conversation, oldest first; for a reply the last turn is the contact's message being answered
	FollowUp     bool      // true: the contact has not answered; write a short follow-up nudging toward the goal instead of answering
}

// BotResponse is the bot's decision: a message to send, or a handoff to a human.
type BotResponse struct {
	Text          string // the reply to send; empty when Handoff
	Handoff       bool   // the bot needs a human
	HandoffReason string // why, e.g. "contact asked for a human" or the model's stated reason
}

// Bot writes the business's next message in a conversation.
type Bot interface {
	// Reply returns a non-empty Text, or Handoff with a reason. An error means no answer could be
	// obtained this time (network, timeout, HTTP error status, malformed or empty model output): the
	// caller retries and, once out of retries, raises an alert. Reply never retries by itself.
	Reply(ctx context.Context, req BotRequest) (BotResponse, error)
}

// Handoff reasons the bot gives on its own.
const (
	HandoffContactAsked = "contact asked for a human"
	HandoffBotAsked     = "the bot asked for a human"
)

// handoffTool is the function the model calls to hand the conversation to a human.
const handoffTool = "handoff_to_human"

// defaultBotHTTPTimeout bounds one model call when NewBot is given no client.
const defaultBotHTTPTimeout = 30 * time.Second

// NewBot returns the LLM bot when cfg.LLMEnabled(), else the offline bot. httpClient may be nil (use a
// client with a 30s timeout).
func NewBot(cfg *config.Config, httpClient *http.Client) Bot {
	if !cfg.LLMEnabled() {
		return offlineBot{}
	}
	if httpClient == nil {
		httpClient = &http.Client{Timeout: defaultBotHTTPTimeout}
	}
	// The service is built from explicit options rather than openai.NewClient, which would also read
	// OPENAI_API_KEY, OPENAI_ORG_ID, OPENAI_CUSTOM_HEADERS... from the environment and could send an
	// OpenAI key to a third-party BOT_LLM_BASE_URL. Configuration comes from config only.
	completions := openai.NewChatCompletionService(
		option.WithBaseURL(cfg.BotLLMBaseURL), // the SDK appends "/" so that "chat/completions" lands under the version segment
		option.WithAPIKey(cfg.BotLLMAPIKey),   // empty: no Authorization header (local models)
		option.WithHTTPClient(httpClient),
		option.WithMaxRetries(0), // the job queue retries
	)
	return &llmBot{completions: completions, model: cfg.BotLLMModel, httpClient: httpClient}
}

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
	for _, call := range msg.ToolCalls {
		if call.Function.Name == handoffTool {
			return BotResponse{Handoff: true, HandoffReason: handoffReason(call.Function.Arguments)}, nil
		}
	}
	if msg.FunctionCall.Name == handoffTool { // servers that still answer with the legacy function_call
		return BotResponse{Handoff: true, HandoffReason: handoffReason(msg.FunctionCall.Arguments)}, nil
	}
	if text := strings.TrimSpace(msg.Content); text != "" {
		return BotResponse{Text: text}, nil
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
	return openai.ChatCompletionNewParams{
		Model:    b.model,
		Messages: messages,
		Tools: []openai.ChatCompletionToolUnionParam{
			openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
				Name: handoffTool,
				Description: openai.String("Hand the conversation to a human member of the business's team. Call it when " +
					"the contact asks for a human (a person, an agent, a representative), or when you cannot help " +
					"them with what they need. Do not write a reply when you call it."),
				Parameters: openai.FunctionParameters{
					"type": "object",
					"properties": map[string]any{
						"reason": map[string]any{
							"type":        "string",
							"description": "Why a human is needed, in one short sentence for the team.",
						},
					},
					"required":             []string{"reason"},
					"additionalProperties": false,
				},
			}),
		},
	}
}

// systemPrompt tells the model who it is, what the business wants, and how to answer.
func systemPrompt(req BotRequest) string {
	var p strings.Builder
	p.WriteString("You write the messages of a business to one of its contacts in a chat (SMS or WhatsApp). " +
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
	}
	fmt.Fprintf(&p, "\nIf the contact asks for a human, or you cannot help them, call the %s tool instead of replying.\n", handoffTool)
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

// offlineBot answers without a model: deterministic, never empty, English only.
type offlineBot struct{}

// handoffWords are the words that, as whole words (or with a plural -s) in any case, mean the contact
// asks for a human: "talk to an agent", "AGENTS please" and "a real person" hand off; "agenda",
// "humanity" and "personal" do not.
var handoffWords = map[string]bool{"human": true, "agent": true, "person": true, "representative": true}

func (offlineBot) Reply(_ context.Context, req BotRequest) (BotResponse, error) {
	name := strings.TrimSpace(req.FirstName)
	goal := sentence(req.Goal)
	if req.FollowUp {
		return BotResponse{Text: offlineFollowUp(name, goal)}, nil
	}
	last := lastContactText(req.History)
	if asksForHuman(last) {
		return BotResponse{Handoff: true, HandoffReason: HandoffContactAsked}, nil
	}

	var text strings.Builder
	if name != "" {
		fmt.Fprintf(&text, "Hi %s!", name)
	} else {
		text.WriteString("Hi!")
	}
	if quote := quoteMessage(last); quote != "" {
		fmt.Fprintf(&text, " Thanks for your message: \"%s\".", quote)
	} else {
		text.WriteString(" Thanks for your message.")
	}
	if goal != "" {
		fmt.Fprintf(&text, " Could we take the next step together? %s.", goal)
	} else {
		text.WriteString(" How can I help you?")
	}
	return BotResponse{Text: text.String()}, nil
}

// offlineFollowUp is the short nudge sent when the contact has not answered. The follow-up does not
// look for handoff words: the contact's last message was answered (or handed off) already.
func offlineFollowUp(name, goal string) string {
	greeting := "Hi!"
	if name != "" {
		greeting = "Hi " + name + "!"
	}
	if goal != "" {
		return fmt.Sprintf("%s Just checking in on my last message. Shall we continue? %s.", greeting, goal)
	}
	return greeting + " Just checking in on my last message. Is there anything I can help you with?"
}

// lastContactText is the text of the contact's most recent turn, or "" when there is none.
func lastContactText(history []BotTurn) string {
	for i := len(history) - 1; i >= 0; i-- {
		if history[i].Role != BotRoleAssistant {
			return history[i].Text
		}
	}
	return ""
}

// asksForHuman reports whether text contains one of handoffWords as a whole word, or its plural -s.
func asksForHuman(text string) bool {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	for _, w := range words {
		if handoffWords[w] || handoffWords[strings.TrimSuffix(w, "s")] {
			return true
		}
	}
	return false
}

// quoteMessage collapses whitespace and keeps the first 80 characters, marking a cut with "...".
func quoteMessage(text string) string {
	text = strings.Join(strings.Fields(text), " ")
	const limit = 80
	if len([]rune(text)) <= limit {
		return text
	}
	return strings.TrimSpace(string([]rune(text)[:limit-3])) + "..."
}

// sentence turns a goal such as "book a demo call." into "Book a demo call", ready for a sentence of
// its own.
func sentence(s string) string {
	s = strings.TrimRight(strings.TrimSpace(s), ".!?… ")
	r := []rune(s)
	if len(r) == 0 {
		return ""
	}
	r[0] = unicode.ToUpper(r[0])
	return string(r)
}

// truncateRunes keeps at most n runes of s.
func truncateRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n])
	}
	return s
}
