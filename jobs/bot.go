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
	"unicode/utf8"

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

// offlineBot answers without a model: deterministic and never empty. It writes in the request's
// language when it has texts for it (offlineLanguages; any other language gets English), follows the
// instructions' `when <word>[, <word>...]: <answer>` rules (offlineRules), and steers toward the goal.
type offlineBot struct{}

// handoffWords are the words that, as whole words (or with a plural -s) in any case, mean the contact
// asks for a human: "talk to an agent", "AGENTS please" and "a real person" hand off; "agenda",
// "humanity" and "personal" do not.
var handoffWords = map[string]bool{"human": true, "agent": true, "person": true, "representative": true}

func (offlineBot) Reply(_ context.Context, req BotRequest) (BotResponse, error) {
	tx := offlineTextsFor(req.Language)
	name := strings.TrimSpace(req.FirstName)
	goal := sentence(req.Goal)
	if req.FollowUp {
		return BotResponse{Text: tx.followUp(name, goal)}, nil
	}
	last := lastContactText(req.History)
	if asksForHuman(last) {
		return BotResponse{Handoff: true, HandoffReason: HandoffContactAsked}, nil
	}

	var text strings.Builder
	text.WriteString(tx.greeting(name))
	if answer, ok := ruleAnswer(req.Instructions, last); ok {
		text.WriteString(" " + answer)
		if goal != "" {
			fmt.Fprintf(&text, tx.nextStep, goal)
		}
		return BotResponse{Text: text.String()}, nil
	}
	if quote := quoteMessage(last); quote != "" {
		fmt.Fprintf(&text, tx.thanksQuote, quote)
	} else {
		text.WriteString(tx.thanks)
	}
	if goal != "" {
		fmt.Fprintf(&text, tx.nextStep, goal)
	} else {
		text.WriteString(tx.help)
	}
	return BotResponse{Text: text.String()}, nil
}

// offlineTexts are the offline bot's sentences in one language. Every sentence but the greeting starts
// with the space that separates it from the one before; %s is the first name, the quoted message or
// the goal.
type offlineTexts struct {
	hi, hiName          string // greeting without, and with, the first name
	thanks, thanksQuote string // thanks for the message, without and with a quote of it
	nextStep            string // the goal as the next step (after a reply)
	help                string // the offer of help when there is no goal
	checkIn             string // a follow-up's opening
	shallWe             string // the goal as the next step (in a follow-up)
	anything            string // a follow-up's offer of help when there is no goal
}

// offlineLanguages are the languages the offline bot writes, by base language of the BCP 47 tag
// ("pt-BR" is "pt"). The English texts are the fallback for every other language.
var offlineLanguages = map[string]offlineTexts{
	"en": {
		hi: "Hi!", hiName: "Hi %s!",
		thanks: " Thanks for your message.", thanksQuote: " Thanks for your message: \"%s\".",
		nextStep: " Could we take the next step together? %s.", help: " How can I help you?",
		checkIn: " Just checking in on my last message.", shallWe: " Shall we continue? %s.",
		anything: " Is there anything I can help you with?",
	},
	"es": {
		hi: "¡Hola!", hiName: "¡Hola, %s!",
		thanks: " Gracias por tu mensaje.", thanksQuote: " Gracias por tu mensaje: \"%s\".",
		nextStep: " ¿Damos juntos el siguiente paso? %s.", help: " ¿En qué puedo ayudarte?",
		checkIn: " Te escribo para retomar mi último mensaje.", shallWe: " ¿Seguimos? %s.",
		anything: " ¿Hay algo en lo que pueda ayudarte?",
	},
	"pt": {
		hi: "Olá!", hiName: "Olá, %s!",
		thanks: " Obrigado pela sua mensagem.", thanksQuote: " Obrigado pela sua mensagem: \"%s\".",
		nextStep: " Podemos dar o próximo passo juntos? %s.", help: " Como posso ajudar?",
		checkIn: " Passando para retomar a minha última mensagem.", shallWe: " Vamos continuar? %s.",
		anything: " Posso ajudar em alguma coisa?",
	},
	"fr": {
		hi: "Bonjour !", hiName: "Bonjour %s !",
		thanks: " Merci pour votre message.", thanksQuote: " Merci pour votre message : « %s ».",
		nextStep: " Pouvons-nous passer ensemble à l'étape suivante ? %s.", help: " Comment puis-je vous aider ?",
		checkIn: " Je reviens vers vous au sujet de mon dernier message.", shallWe: " Souhaitez-vous continuer ? %s.",
		anything: " Puis-je vous aider en quoi que ce soit ?",
	},
	"de": {
		hi: "Hallo!", hiName: "Hallo %s!",
		thanks: " Danke für Ihre Nachricht.", thanksQuote: " Danke für Ihre Nachricht: „%s“.",
		nextStep: " Sollen wir gemeinsam den nächsten Schritt gehen? %s.", help: " Wie kann ich Ihnen helfen?",
		checkIn: " Ich wollte kurz an meine letzte Nachricht erinnern.", shallWe: " Wollen wir weitermachen? %s.",
		anything: " Kann ich Ihnen irgendwie helfen?",
	},
	"it": {
		hi: "Ciao!", hiName: "Ciao %s!",
		thanks: " Grazie per il tuo messaggio.", thanksQuote: " Grazie per il tuo messaggio: \"%s\".",
		nextStep: " Facciamo insieme il prossimo passo? %s.", help: " Come posso aiutarti?",
		checkIn: " Ti scrivo per riprendere il mio ultimo messaggio.", shallWe: " Vogliamo continuare? %s.",
		anything: " Posso aiutarti in qualcosa?",
	},
}

// offlineTextsFor picks the texts for a BCP 47 tag by its base language; English when the tag is
// empty, invalid or in a language the offline bot does not write.
func offlineTextsFor(tag string) offlineTexts {
	if t, err := language.Parse(strings.TrimSpace(tag)); err == nil {
		base, _ := t.Base()
		if tx, ok := offlineLanguages[base.String()]; ok {
			return tx
		}
	}
	return offlineLanguages["en"]
}

func (tx offlineTexts) greeting(name string) string {
	if name != "" {
		return fmt.Sprintf(tx.hiName, name)
	}
	return tx.hi
}

// followUp is the short nudge sent when the contact has not answered. The follow-up does not look for
// handoff words or rules: the contact's last message was answered (or handed off) already.
func (tx offlineTexts) followUp(name, goal string) string {
	text := tx.greeting(name) + tx.checkIn
	if goal != "" {
		return text + fmt.Sprintf(tx.shallWe, goal)
	}
	return text + tx.anything
}

// offlineRule is one `when <word>[, <word>...]: <answer>` line of the instructions: the answer for a
// message that contains one of the words.
type offlineRule struct {
	words  [][]string // each word (or phrase) as the words of messageWords
	answer string
}

// offlineRules reads the rule lines of instructions, in order: a line that starts with "when" (any
// case) followed by a space, then words (or phrases) separated by commas, a colon and the answer, e.g.
// "when price, cost, pricing: Plans start at $10 a month." Every other line is for the model only; a
// rule line without a word or without an answer is ignored too.
func offlineRules(instructions string) []offlineRule {
	var rules []offlineRule
	for _, line := range strings.Split(instructions, "\n") {
		line = strings.TrimSpace(line)
		if len(line) < 5 || !strings.EqualFold(line[:4], "when") || !unicode.IsSpace(rune(line[4])) {
			continue
		}
		list, answer, ok := strings.Cut(line[4:], ":")
		answer = strings.TrimSpace(answer)
		if !ok || answer == "" {
			continue
		}
		rule := offlineRule{answer: answer}
		for _, w := range strings.Split(list, ",") {
			if words := messageWords(w); len(words) > 0 {
				rule.words = append(rule.words, words)
			}
		}
		if len(rule.words) > 0 {
			rules = append(rules, rule)
		}
	}
	return rules
}

// ruleAnswer is the answer of the first rule of instructions that matches text, ending with
// punctuation so that the goal can follow it. A rule matches when text contains one of its words as a
// whole word in any case, or with a plural -s as asksForHuman allows ("prices" matches "price",
// "priceless" does not); a phrase matches its words in a row.
func ruleAnswer(instructions, text string) (string, bool) {
	rules := offlineRules(instructions)
	if len(rules) == 0 {
		return "", false
	}
	words := messageWords(text)
	for _, rule := range rules {
		for _, phrase := range rule.words {
			if containsPhrase(words, phrase) {
				answer := rule.answer
				if last, _ := utf8.DecodeLastRuneInString(answer); !strings.ContainsRune(".!?…", last) {
					answer += "."
				}
				return answer, true
			}
		}
	}
	return "", false
}

// containsPhrase reports whether phrase occurs in words as consecutive words, each equal or with a
// plural -s added.
func containsPhrase(words, phrase []string) bool {
	for i := 0; i+len(phrase) <= len(words); i++ {
		match := true
		for j, p := range phrase {
			if w := words[i+j]; w != p && strings.TrimSuffix(w, "s") != p {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
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

// messageWords splits text into lower-case words: runs of letters and digits.
func messageWords(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// asksForHuman reports whether text contains one of handoffWords as a whole word, or its plural -s.
func asksForHuman(text string) bool {
	for _, w := range messageWords(text) {
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
