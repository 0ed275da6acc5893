package models_test

import (
	"context"
	"strings"
	"testing"
)

// The campaign report's indexes (migration 20261204300001) are there on both backends with the columns
// its reads take from them (carried as INCLUDE columns on PostgreSQL, as last columns on SQLite), and
// messages_replies_idx replaced messages_incoming_idx.
func TestCampaignReportIndexes(t *testing.T) {
	t.Parallel()
	q := "SELECT name, sql AS def FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"
	want := map[string]string{
		"messages_campaign_idx":             "ON messages (campaign_id, id, created_at) WHERE campaign_id IS NOT NULL",
		"messages_replies_idx":              "ON messages (contact_id, created_at, bot_status, id) WHERE direction = 'incoming'",
		"consent_events_opt_in_message_idx": "ON consent_events (message_id) WHERE status = 'opted_in'",
	}
	if env.Postgres() {
		q = "SELECT indexname AS name, indexdef AS def FROM pg_indexes WHERE schemaname = current_schema()"
		want = map[string]string{
			"messages_campaign_idx":             "USING btree (campaign_id, id) INCLUDE (created_at) WHERE (campaign_id IS NOT NULL)",
			"messages_replies_idx":              "USING btree (contact_id, created_at) INCLUDE (bot_status, id) WHERE (direction = 'incoming'::text)",
			"consent_events_opt_in_message_idx": "USING btree (message_id) WHERE (status = 'opted_in'::text)",
		}
	}
	var rows []struct {
		Name string `bun:"name"`
		Def  string `bun:"def"`
	}
	if err := env.Store.DB().NewRaw(q).Scan(context.Background(), &rows); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range rows {
		got[r.Name] = r.Def
	}
	for name, def := range want {
		if !strings.Contains(got[name], def) {
			t.Errorf("index %s: %q, want it %s", name, got[name], def)
		}
	}
	if def, ok := got["messages_incoming_idx"]; ok {
		t.Errorf("messages_incoming_idx is still there: %s", def)
	}
}
