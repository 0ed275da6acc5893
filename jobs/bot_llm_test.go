package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
)

// fakeLLM is an OpenAI-compatible server: it records every request and answers with respond.
type fakeLLM struct {
	*httptest.Server
	respond func(w http.ResponseWriter, r *http.Request)

	mu       sync.Mutex
	requests []llmRequest
}

type llmRequest struct {
	Method, Path, Authorization string
	Body                        map[string]any
}

func newFakeLLM(t *testing.T, respond func(w http.ResponseWriter, r *http.Request)) *fakeLLM {
	t.Helper()
	f := &fakeLLM{respond: respond}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		f.mu.Lock()
		f.requests = append(f.requests, llmRequest{Method: r.Method, Path: r.URL.Path, Authorization: r.Header.Get("Authorization"), Body: body})
		f.mu.Unlock()
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
			return
		}
		f.respond(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeLLM) recorded() []llmRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]llmRequest(nil), f.requests...)
}

// llmAnswer writes a chat completion whose only choice carries message.
func llmAnswer(message string) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"test-model",`+
			`"choices":[{"index":0,"message":`+message+`,"logprobs":null,"finish_reason":"stop"}],`+
			`"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`)
	}
}

func llmStatus(code int, body string) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

var sampleRequest = BotRequest{
	Instructions: "You sell solar panels for Sunny Roofs.",
	Goal:         "book a free roof survey",
	Language:     "es",
	FirstName:    "Ana",
	History: []BotTurn{
		{Role: BotRoleAssistant, Text: "Hola Ana, ¿te interesa ahorrar en luz?"},
		{Role: BotRoleUser, Text: "Sí, ¿cuánto cuesta?"},
		{Role: BotRoleAssistant, Text: "Depende del tejado."},
		{Role: BotRoleUser, Text: "Tengo 40 m2."},
	},
}

func TestLLMBotRequest(t *testing.T) {
	for name, suffix := range map[string]string{"base without slash": "/v1", "base with trailing slash": "/v1/"} {
		t.Run(name, func(t *testing.T) {
			f := newFakeLLM(t, llmAnswer(`{"role":"assistant","content":"¡Genial!"}`))
			cfg := llmConfig(t, f.URL+suffix)
			cfg.BotLLMBaseURL = f.URL + suffix // config.Load trims the slash; prove the bot copes either way
			if _, err := NewBot(cfg, nil).Reply(context.Background(), sampleRequest); err != nil {
				t.Fatalf("Reply: %v", err)
			}

			reqs := f.recorded()
			if len(reqs) != 1 {
				t.Fatalf("got %d requests, want 1: %+v", len(reqs), reqs)
			}
			got := reqs[0]
			if got.Method != http.MethodPost || got.Path != "/v1/chat/completions" {
				t.Errorf("request went to %s %s, want POST /v1/chat/completions", got.Method, got.Path)
			}
			if got.Authorization != "Bearer sk-test" {
				t.Errorf("Authorization = %q, want Bearer sk-test", got.Authorization)
			}
			if got.Body["model"] != "test-model" {
				t.Errorf("model = %v, want test-model", got.Body["model"])
			}
			if stream, ok := got.Body["stream"]; ok && stream != false {
				t.Errorf("stream = %v, want a non-streaming request", stream)
			}

			messages, _ := got.Body["messages"].([]any)
			if len(messages) != 5 {
				t.Fatalf("got %d messages, want system + 4 turns: %v", len(messages), messages)
			}
			system := messages[0].(map[string]any)
			if system["role"] != "system" {
				t.Errorf("first message role = %v, want system", system["role"])
			}
			prompt, _ := system["content"].(string)
			for _, want := range []string{"You sell solar panels for Sunny Roofs.", "book a free roof survey", "Answer in Spanish (es)", "Ana", "handoff_to_human"} {
				if !strings.Contains(prompt, want) {
					t.Errorf("system prompt lacks %q:\n%s", want, prompt)
				}
			}
			var turns []BotTurn
			for _, m := range messages[1:] {
				m := m.(map[string]any)
				text, _ := m["content"].(string)
				turns = append(turns, BotTurn{Role: m["role"].(string), Text: text})
			}
			if diff := cmp.Diff(sampleRequest.History, turns); diff != "" {
				t.Errorf("history turns (-want +got):\n%s", diff)
			}

			tools, _ := got.Body["tools"].([]any)
			// Answering a contact's message toward a goal, the model may hand off, record an opt-out or
			// record the goal.
			if len(tools) != 3 {
				t.Fatalf("got %d tools, want 3: %v", len(tools), tools)
			}
			for i, name := range []string{"handoff_to_human", "opt_out", "goal_reached"} {
				tool := tools[i].(map[string]any)
				fn, _ := tool["function"].(map[string]any)
				if tool["type"] != "function" || fn["name"] != name {
					t.Errorf("tool %d = %v, want function %s", i, tool, name)
				}
			}
			fn, _ := tools[0].(map[string]any)["function"].(map[string]any)
			if desc, _ := fn["description"].(string); !strings.Contains(desc, "asks for a human") {
				t.Errorf("tool description = %q, want it to say when to call it", desc)
			}
			wantParams := map[string]any{
				"type":                 "object",
				"properties":           map[string]any{"reason": map[string]any{"type": "string", "description": "Why a human is needed, in one short sentence for the team."}},
				"required":             []any{"reason"},
				"additionalProperties": false,
			}
			if diff := cmp.Diff(wantParams, fn["parameters"]); diff != "" {
				t.Errorf("tool parameters (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLLMBotPromptVariants(t *testing.T) {
	// The SDK's own environment variables must not leak in: configuration comes from config only.
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-Leak: yes")
	f := newFakeLLM(t, llmAnswer(`{"role":"assistant","content":"ok"}`))
	cfg := llmConfig(t, f.URL+"/v1")
	cfg.BotLLMAPIKey = "" // a local model without a key
	bot := NewBot(cfg, nil)
	req := BotRequest{FollowUp: true, Goal: "book a call", History: []BotTurn{{Role: BotRoleAssistant, Text: "Hi!"}, {Role: BotRoleUser, Text: " "}}}
	if _, err := bot.Reply(context.Background(), req); err != nil {
		t.Fatalf("Reply: %v", err)
	}
	got := f.recorded()[0]
	if got.Authorization != "" {
		t.Errorf("Authorization = %q, want none without a key", got.Authorization)
	}
	messages := got.Body["messages"].([]any)
	if len(messages) != 2 {
		t.Errorf("got %d messages, want system + the one turn with text: %v", len(messages), messages)
	}
	prompt := messages[0].(map[string]any)["content"].(string)
	for _, want := range []string{"Answer in English (en)", "has not answered", "book a call"} {
		if !strings.Contains(prompt, want) {
			t.Errorf("system prompt lacks %q:\n%s", want, prompt)
		}
	}
	if strings.Contains(prompt, "first name") || strings.Contains(prompt, "Instructions from the business") {
		t.Errorf("system prompt mentions an empty field:\n%s", prompt)
	}
}

func TestLLMBotAnswers(t *testing.T) {
	tests := []struct {
		name    string
		message string
		want    BotResponse
	}{
		{"text is trimmed", `{"role":"assistant","content":"  ¡Hola Ana! ¿Te va bien el martes?\n\n"}`, BotResponse{Text: "¡Hola Ana! ¿Te va bien el martes?"}},
		{"tool call hands off with the reason", `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",` +
			`"function":{"name":"handoff_to_human","arguments":"{\"reason\":\"contact wants a refund\"}"}}]}`,
			BotResponse{Handoff: true, HandoffReason: "contact wants a refund"}},
		{"tool call wins over text", `{"role":"assistant","content":"Let me get someone.","tool_calls":[{"id":"call_1","type":"function",` +
			`"function":{"name":"handoff_to_human","arguments":"{\"reason\":\"asked for a manager\"}"}}]}`,
			BotResponse{Handoff: true, HandoffReason: "asked for a manager"}},
		{"tool call without a reason", `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",` +
			`"function":{"name":"handoff_to_human","arguments":"not json"}}]}`,
			BotResponse{Handoff: true, HandoffReason: "the bot asked for a human"}},
		{"refusal hands off", `{"role":"assistant","content":null,"refusal":"I can't help with that."}`,
			BotResponse{Handoff: true, HandoffReason: "the model refused: I can't help with that."}},
		{"opt_out records the opt-out, not the text", `{"role":"assistant","content":"Sorry to see you go!","tool_calls":[{"id":"call_1","type":"function",` +
			`"function":{"name":"opt_out","arguments":"{}"}}]}`,
			BotResponse{OptOut: true}},
		{"opt_out wins over a hand-off", `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",` +
			`"function":{"name":"handoff_to_human","arguments":"{\"reason\":\"angry\"}"}},{"id":"call_2","type":"function",` +
			`"function":{"name":"opt_out","arguments":"not json"}}]}`,
			BotResponse{OptOut: true}},
		{"goal_reached records the goal and keeps the text", `{"role":"assistant","content":"Great, see you Tuesday!","tool_calls":[{"id":"call_1","type":"function",` +
			`"function":{"name":"goal_reached","arguments":"{\"summary\":\" booked the survey for Tuesday \"}"}}]}`,
			BotResponse{Text: "Great, see you Tuesday!", Goal: true, GoalSummary: "booked the survey for Tuesday"}},
		{"goal_reached with malformed arguments still counts", `{"role":"assistant","content":"Done!","tool_calls":[{"id":"call_1","type":"function",` +
			`"function":{"name":"goal_reached","arguments":"{summary: booked"}}]}`,
			BotResponse{Text: "Done!", Goal: true}},
		{"goal_reached without text is no error", `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",` +
			`"function":{"name":"goal_reached","arguments":"{\"summary\":\"bought\"}"}}]}`,
			BotResponse{Goal: true, GoalSummary: "bought"}},
		{"goal_reached and a hand-off", `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",` +
			`"function":{"name":"goal_reached","arguments":"{\"summary\":\"booked\"}"}},{"id":"call_2","type":"function",` +
			`"function":{"name":"handoff_to_human","arguments":"{\"reason\":\"wants to pay by invoice\"}"}}]}`,
			BotResponse{Goal: true, GoalSummary: "booked", Handoff: true, HandoffReason: "wants to pay by invoice"}},
		{"opt_out wins over goal_reached", `{"role":"assistant","content":"Bye","tool_calls":[{"id":"call_1","type":"function",` +
			`"function":{"name":"goal_reached","arguments":"{}"}},{"id":"call_2","type":"function","function":{"name":"opt_out","arguments":"{}"}}]}`,
			BotResponse{OptOut: true}},
		{"legacy function_call goal_reached", `{"role":"assistant","content":"Booked!","function_call":{"name":"goal_reached","arguments":"{\"summary\":\"call booked\"}"}}`,
			BotResponse{Text: "Booked!", Goal: true, GoalSummary: "call booked"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeLLM(t, llmAnswer(tt.message))
			got, err := NewBot(llmConfig(t, f.URL+"/v1"), nil).Reply(context.Background(), sampleRequest)
			if err != nil {
				t.Fatalf("Reply: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLLMBotErrors(t *testing.T) {
	tests := []struct {
		name       string
		respond    func(w http.ResponseWriter, r *http.Request)
		wantStatus int // when the error is an API error
	}{
		{"500", llmStatus(http.StatusInternalServerError, `{"error":{"message":"boom","type":"server_error"}}`), 500},
		{"429", llmStatus(http.StatusTooManyRequests, `{"error":{"message":"slow down","type":"rate_limit"}}`), 429},
		{"500 with a text body", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "upstream broke", 500) }, 0},
		{"malformed JSON", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"choices":[{"message":`)
		}, 0},
		{"empty content", llmAnswer(`{"role":"assistant","content":"   "}`), 0},
		{"null content", llmAnswer(`{"role":"assistant","content":null}`), 0},
		{"no choices", llmStatus(http.StatusOK, `{"id":"x","object":"chat.completion","choices":[]}`), 0},
		{"other tool", llmAnswer(`{"role":"assistant","content":"","tool_calls":[{"id":"c","type":"function","function":{"name":"lookup","arguments":"{}"}}]}`), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeLLM(t, tt.respond)
			got, err := NewBot(llmConfig(t, f.URL+"/v1"), nil).Reply(context.Background(), sampleRequest)
			if err == nil {
				t.Fatalf("Reply = %+v, want an error", got)
			}
			if !strings.HasPrefix(err.Error(), "bot reply: ") {
				t.Errorf("error %q lacks the operation prefix", err)
			}
			if tt.wantStatus != 0 {
				var apiErr *openai.Error
				if !errors.As(err, &apiErr) || apiErr.StatusCode != tt.wantStatus {
					t.Errorf("error %v does not wrap an API error with status %d", err, tt.wantStatus)
				}
			}
			if n := len(f.recorded()); n != 1 {
				t.Errorf("server saw %d requests, want 1 (the job queue retries, not the bot)", n)
			}
		})
	}
}

func TestLLMBotTimeout(t *testing.T) {
	release := make(chan struct{})
	f := newFakeLLM(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release) // runs before the server's Close, so no handler outlives the test
	bot := NewBot(llmConfig(t, f.URL+"/v1"), nil)

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := bot.Reply(ctx, sampleRequest)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Reply error = %v, want one wrapping context.DeadlineExceeded", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Reply took %v after a 200ms deadline", took)
	}
}

func TestLLMBotHTTPClientTimeout(t *testing.T) {
	release := make(chan struct{})
	f := newFakeLLM(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	bot := NewBot(llmConfig(t, f.URL+"/v1"), &http.Client{Timeout: 200 * time.Millisecond})
	start := time.Now()
	if _, err := bot.Reply(context.Background(), sampleRequest); err == nil {
		t.Fatal("Reply succeeded against a hanging server")
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Reply took %v with a 200ms client timeout", took)
	}
}

func TestLLMBotConnectionRefused(t *testing.T) {
	f := newFakeLLM(t, llmAnswer(`{"role":"assistant","content":"unused"}`))
	bot := NewBot(llmConfig(t, f.URL+"/v1"), nil)
	f.Close()
	if _, err := bot.Reply(context.Background(), sampleRequest); err == nil || !strings.HasPrefix(err.Error(), "bot reply: ") {
		t.Fatalf("Reply error = %v, want a wrapped connection error", err)
	}
}

// TestLLMBotPromptCarriesInstructions: the model gets the instructions verbatim, rule lines included,
// with the goal and the language (an account's defaults arrive in the same BotRequest fields as a
// campaign's: see campaignBotRequest).
func TestLLMBotPromptCarriesInstructions(t *testing.T) {
	f := newFakeLLM(t, llmAnswer(`{"role":"assistant","content":"ok"}`))
	req := BotRequest{
		Instructions: "Answer for Acme Plans.\nwhen price, cost: Plans start at $10 a month.",
		Goal:         "start a free trial",
		Language:     "pt-BR",
		History:      []BotTurn{{Role: BotRoleUser, Text: "Quanto custa?"}},
	}
	if _, err := NewBot(llmConfig(t, f.URL+"/v1"), nil).Reply(context.Background(), req); err != nil {
		t.Fatalf("Reply: %v", err)
	}
	prompt := f.recorded()[0].Body["messages"].([]any)[0].(map[string]any)["content"].(string)
	for _, want := range []string{
		"Instructions from the business:\nAnswer for Acme Plans.\nwhen price, cost: Plans start at $10 a month.\n",
		"Goal of the conversation: start a free trial",
		"Answer in Brazilian Portuguese (pt-BR)",
	} {
		if !strings.Contains(prompt, want) {
			t.Errorf("system prompt lacks %q:\n%s", want, prompt)
		}
	}
}

// A follow-up answers no message of the contact's: the model is not offered opt_out, and an opt_out
// call it makes anyway records nothing (the follow-up is simply not sent, as with a hand-off).
func TestLLMBotFollowUpHasNoOptOut(t *testing.T) {
	f := newFakeLLM(t, llmAnswer(`{"role":"assistant","content":"Still keen on a call?","tool_calls":[{"id":"call_1","type":"function",`+
		`"function":{"name":"opt_out","arguments":"{}"}}]}`))
	req := sampleRequest
	req.FollowUp = true
	got, err := NewBot(llmConfig(t, f.URL+"/v1"), nil).Reply(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if got.OptOut || got.Text != "Still keen on a call?" {
		t.Fatalf("follow-up response %+v, want the text and no opt-out", got)
	}
	tools, _ := f.recorded()[0].Body["tools"].([]any)
	if len(tools) != 1 || strings.Contains(mustJSONText(tools), "opt_out") {
		t.Fatalf("tools offered for a follow-up: %v", tools)
	}
}

func mustJSONText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestLLMBotGoalToolOnlyWithAGoal: goal_reached is offered when the conversation has a goal and the
// bot answers the contact; without a goal a call of it is not taken as one.
func TestLLMBotGoalToolOnlyWithAGoal(t *testing.T) {
	f := newFakeLLM(t, llmAnswer(`{"role":"assistant","content":"Happy to help.","tool_calls":[{"id":"call_1","type":"function",`+
		`"function":{"name":"goal_reached","arguments":"{\"summary\":\"x\"}"}}]}`))
	bot := NewBot(llmConfig(t, f.URL+"/v1"), nil)
	if _, err := bot.Reply(context.Background(), sampleRequest); err != nil {
		t.Fatal(err)
	}
	tools := mustJSONText(f.recorded()[0].Body["tools"])
	if !strings.Contains(tools, `"goal_reached"`) || !strings.Contains(tools, `"summary"`) {
		t.Fatalf("tools with a goal do not offer goal_reached: %s", tools)
	}
	if prompt := mustJSONText(f.recorded()[0].Body["messages"]); !strings.Contains(prompt, "call the goal_reached tool and still write your reply") {
		t.Fatalf("prompt does not explain goal_reached: %s", prompt)
	}
	req := sampleRequest
	req.Goal = ""
	got, err := bot.Reply(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if got.Goal || got.Text != "Happy to help." {
		t.Fatalf("response without a goal %+v, want the text and no goal", got)
	}
	if tools := mustJSONText(f.recorded()[1].Body["tools"]); strings.Contains(tools, "goal_reached") {
		t.Fatalf("tools without a goal offer goal_reached: %s", tools)
	}
}
