package jobs

import (
	"context"
	"net/http"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"funnelchat/config"
)

// The bot writes the business's messages: the LLM bot (bot_llm.go) when a model is configured, else the
// offline bot (bot_offline.go).

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
	Text          string // the reply to send; empty when Handoff or OptOut
	Handoff       bool   // the bot needs a human
	HandoffReason string // why, e.g. "contact asked for a human" or the model's stated reason
	// OptOut: the contact asked, in its own words, to receive no more messages ("please stop texting
	// me"); the service opts it out and sends the confirmation instead of Text.
	OptOut bool
	// Goal: the model judged that the conversation reached the campaign's goal (its goal_reached tool),
	// with its one-line summary for the team ("" when its arguments were malformed). Text, if any,
	// is still sent; a hand-off still happens.
	Goal        bool
	GoalSummary string
}

// Bot writes the business's next message in a conversation.
type Bot interface {
	// Reply returns a non-empty Text, or Handoff with a reason, or OptOut, or Goal (with or without Text). An error means no answer could be
	// obtained this time (network, timeout, HTTP error status, malformed or empty model output): the
	// caller retries and, once out of retries, raises an alert. Reply never retries by itself.
	Reply(ctx context.Context, req BotRequest) (BotResponse, error)
}

// Handoff reasons the bot gives on its own.
const (
	HandoffContactAsked = "contact asked for a human"
	HandoffBotAsked     = "the bot asked for a human"
)

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
