package models_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"funnelchat/models"
	"funnelchat/models/report"
)

// An incoming message reopens its resolved or snoozed conversation in the transaction that stores it,
// on each way the ingest stores it: SQLite's transaction, and on PostgreSQL ingest_incoming (a message
// by itself), ingest_incoming_batch set-based, and the batch message by message. A snooze whose time
// has come is open already, and a new sender's conversation starts open: neither counts as reopened.
func TestIngestReopensConversations(t *testing.T) {
	ctx := context.Background()
	acc := newAccount(t).Account.ID
	reader := report.New(env.Store)
	seq := 0
	msg := func(from string) models.IncomingInput {
		seq++
		in := models.IncomingInput{ExternalID: fmt.Sprintf("reopen-%d", seq), FromID: from, ToID: "business", Body: "hello again", Channel: "chat"}
		if err := in.Validate(1 << 20); err != nil {
			t.Fatal(err)
		}
		return in
	}
	contact := map[string]string{}
	for _, from := range []string{"resolved", "snoozed", "snooze-over", "open"} {
		m, _, err := env.Store.IngestIncoming(ctx, acc, msg(from))
		if err != nil {
			t.Fatal(err)
		}
		contact[from] = m.ContactID
	}
	set := func(from, status string, until *time.Time) {
		t.Helper()
		if _, _, err := env.Store.SetConversationStatus(ctx, acc, contact[from], models.ConversationStatusInput{Status: status, SnoozedUntil: until}); err != nil {
			t.Fatal(err)
		}
	}
	statusOf := func(from string) string {
		t.Helper()
		c, err := reader.Conversation(ctx, acc, models.ReaderAPI, contact[from])
		if err != nil {
			t.Fatal(err)
		}
		return c.Status
	}
	prepare := func() {
		t.Helper()
		later := time.Now().Add(time.Hour)
		set("resolved", models.ConversationResolved, nil)
		set("snoozed", models.ConversationSnoozed, &later)
		set("snooze-over", models.ConversationSnoozed, &later)
		if _, err := env.Store.DB().NewRaw("UPDATE contacts SET snoozed_until = ? WHERE id = ?", time.Now().Add(-time.Minute).UTC(), contact["snooze-over"]).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		for from, want := range map[string]string{"resolved": "resolved", "snoozed": "snoozed", "snooze-over": "open", "open": "open"} {
			if got := statusOf(from); got != want {
				t.Fatalf("before: %s is %s, want %s", from, got, want)
			}
		}
	}
	allOpen := func(how string) {
		t.Helper()
		for from := range contact {
			if got := statusOf(from); got != models.ConversationOpen {
				t.Errorf("%s: %s is %s after its message", how, from, got)
			}
		}
	}

	prepare()
	for _, from := range []string{"resolved", "snoozed", "snooze-over", "open"} {
		if _, _, err := env.Store.IngestIncoming(ctx, acc, msg(from)); err != nil {
			t.Fatal(err)
		}
	}
	allOpen("IngestIncoming")
	if !env.Postgres() {
		return // the rest is PostgreSQL's functions
	}

	reopened := func(res []models.IngestedForTest) []bool {
		out := make([]bool, len(res))
		for i, r := range res {
			out[i] = r.Reopened
		}
		return out
	}
	t.Run("ingest_incoming_batch, set-based", func(t *testing.T) {
		prepare()
		res, err := env.Store.IngestForTest(ctx, acc, []models.IncomingInput{msg("resolved"), msg("snoozed"), msg("snooze-over"), msg("open"), msg("a-new-sender")}, false)
		if err != nil {
			t.Fatal(err)
		}
		if !res[0].SetBased {
			t.Fatal("the batch was not stored set-based")
		}
		if got, want := reopened(res), []bool{true, true, false, false, false}; !slices.Equal(got, want) {
			t.Fatalf("reopened %v, want %v", got, want)
		}
		allOpen("a set-based batch")
	})
	t.Run("ingest_incoming_batch, message by message", func(t *testing.T) {
		prepare()
		// One sender twice: the batch is stored message by message, in order.
		res, err := env.Store.IngestForTest(ctx, acc, []models.IncomingInput{msg("resolved"), msg("resolved"), msg("snoozed"), msg("snooze-over")}, false)
		if err != nil {
			t.Fatal(err)
		}
		if res[0].SetBased {
			t.Fatal("a batch with one sender twice was stored set-based")
		}
		if got, want := reopened(res), []bool{true, false, true, false}; !slices.Equal(got, want) {
			t.Fatalf("reopened %v, want %v", got, want)
		}
		allOpen("a batch message by message")
	})
	t.Run("ingest_incoming", func(t *testing.T) {
		prepare()
		res, err := env.Store.IngestForTest(ctx, acc, []models.IncomingInput{msg("resolved"), msg("snoozed"), msg("snooze-over"), msg("open")}, true)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := reopened(res), []bool{true, true, false, false}; !slices.Equal(got, want) {
			t.Fatalf("reopened %v, want %v", got, want)
		}
		allOpen("ingest_incoming")
	})
}
