package jobs

import (
	"testing"
	"time"

	"funnelchat/config"
)

func loadConfig(t *testing.T, env map[string]string) *config.Config {
	t.Helper()
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("config.Load: %v", err)
	}
	return cfg
}

func llmConfig(t *testing.T, baseURL string) *config.Config {
	t.Helper()
	return loadConfig(t, map[string]string{
		"BOT_LLM_BASE_URL": baseURL,
		"BOT_LLM_API_KEY":  "sk-test",
		"BOT_LLM_MODEL":    "test-model",
	})
}

func TestNewBot(t *testing.T) {
	if _, ok := NewBot(loadConfig(t, map[string]string{}), nil).(offlineBot); !ok {
		t.Error("without BOT_LLM_BASE_URL NewBot did not return the offline bot")
	}
	llm, ok := NewBot(llmConfig(t, "https://api.example.com/v1"), nil).(*llmBot)
	if !ok {
		t.Fatal("with BOT_LLM_BASE_URL NewBot did not return the LLM bot")
	}
	if llm.httpClient == nil || llm.httpClient.Timeout != 30*time.Second {
		t.Errorf("default HTTP client = %+v, want a 30s timeout", llm.httpClient)
	}
}
