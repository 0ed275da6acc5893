package models_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"funnelchat/models"
	"funnelchat/models/report"
)

// TestOneMigrationBehind: during a rolling deploy an api or worker one migration behind runs against
// the newer schema, where a migration has added columns its structs do not have. Every statement that
// fills a struct from a table must keep working there. Above all, recording a delivery the receiver
// accepted: when that failed (RETURNING * into Message: bun refuses a column the struct lacks, and
// PostgreSQL refuses a prepared statement whose * now means one more column, "cached plan must not
// change result type"), the delivery task was retried and the person got the message twice.
// The columns are added on a database of the test's own (FreshStore), so the other tests of the
// package never see them.
func TestOneMigrationBehind(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := env.FreshStore(t)
	rec := &recorder{}
	s.UseEvents(rec)
	created, err := s.CreateAccount(ctx, models.NewAccount{Email: uniqueEmail("behind"), Name: "Behind"})
	if err != nil {
		t.Fatal(err)
	}
	accID := created.Account.ID

	// A worker that has been running: the statements of a delivery are prepared already (PostgreSQL).
	warm, _ := sendCustom(t, s, accID, "behind-warm", "warm")
	if _, err := s.MessageForWork(ctx, warm.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordAttempt(ctx, warm.ID, models.AttemptOutcome{StatusCode: 200}); err != nil {
		t.Fatal(err)
	}
	m, contact := sendCustom(t, s, accID, "behind-1", "hello")
	in := csIncoming(t, s, accID, csFrom("behind"), "web", "a person please")
	alert, err := s.Handoff(ctx, in, "asked for a person")
	if err != nil {
		t.Fatal(err)
	}
	list, err := s.CreateList(ctx, accID, "behind")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddToList(ctx, accID, list.ID, []string{contact.ID}); err != nil {
		t.Fatal(err)
	}
	consent := models.ConsentInput{Channel: "chat", Status: models.ConsentOptedIn, Text: "I agree"}
	if err := consent.Normalize("", models.ConsentSourceAPI); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetConsent(ctx, accID, contact.ID, consent); err != nil {
		t.Fatal(err)
	}
	rec.take(accID)

	// The next migration, which this code does not know.
	for _, table := range []string{"messages", "alerts", "users", "contacts", "consent_events", "accounts"} {
		if _, err := s.DB().ExecContext(ctx, "ALTER TABLE "+table+" ADD COLUMN from_the_next_migration TEXT"); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("a delivery the receiver accepted is recorded", func(t *testing.T) {
		if err := s.RecordAttempt(ctx, m.ID, models.AttemptOutcome{StatusCode: 200, ProviderID: "prov-1"}); err != nil {
			t.Fatalf("RecordAttempt: %v", err)
		}
		stored, err := s.MessageForWork(ctx, m.ID)
		if err != nil {
			t.Fatal(err)
		}
		if stored.Status != models.StatusSent || stored.Attempts != 1 || stored.ProviderMessageID == nil || *stored.ProviderMessageID != "prov-1" {
			t.Errorf("message after a successful attempt: status %s, attempts %d, provider id %v; want sent, 1, prov-1",
				stored.Status, stored.Attempts, stored.ProviderMessageID)
		}
		attempts, err := s.MessageAttempts(ctx, accID, m.ID)
		if err != nil || len(attempts) != 1 {
			t.Errorf("attempts %+v, %v; want exactly one", attempts, err)
		}
		// The live event is the row the statement returned.
		data := oneEvent(t, rec, accID, models.EventMessageUpdated, "a successful attempt")
		wantFields(t, data, "a successful attempt", map[string]any{"id": m.ID, "status": "sent", "attempts": float64(1)})
	})

	t.Run("an alert is escalated", func(t *testing.T) {
		escalated, err := s.EscalateAlerts(ctx, time.Now().Add(time.Hour), 1000)
		if err != nil {
			t.Fatalf("EscalateAlerts: %v", err)
		}
		if len(escalated) != 1 || escalated[0].ID != alert.ID || escalated[0].EscalatedAt == nil {
			t.Errorf("escalated %+v, want alert %s with its escalation time", escalated, alert.ID)
		}
	})

	t.Run("a user's availability is set", func(t *testing.T) {
		member, err := s.SetAvailable(ctx, accID, created.User.ID, false)
		if err != nil {
			t.Fatalf("SetAvailable: %v", err)
		}
		if member.ID != created.User.ID || member.Available {
			t.Errorf("member %+v, want %s unavailable", member, created.User.ID)
		}
	})

	t.Run("an API key authenticates", func(t *testing.T) {
		acc, err := s.Authenticate(ctx, created.APIKey)
		if err != nil {
			t.Fatalf("Authenticate: %v", err)
		}
		if acc.ID != accID {
			t.Errorf("authenticated as %s, want %s", acc.ID, accID)
		}
	})

	t.Run("a list's contacts are listed", func(t *testing.T) {
		contacts, _, err := s.ListContacts(ctx, accID, list.ID, models.Page{Limit: 10})
		if err != nil {
			t.Fatalf("ListContacts: %v", err)
		}
		if len(contacts) != 1 || contacts[0].ID != contact.ID {
			t.Errorf("list contacts %+v, want %s", contacts, contact.ID)
		}
	})

	t.Run("consent is exported", func(t *testing.T) {
		var got []string
		err := report.New(s).ExportConsent(ctx, accID, time.Now().Add(-time.Hour), time.Now().Add(time.Hour), func(r *report.ConsentExportRow) error {
			got = append(got, r.ContactID)
			return nil
		})
		if err != nil {
			t.Fatalf("ExportConsent: %v", err)
		}
		if !slices.Contains(got, contact.ID) {
			t.Errorf("exported consent of %v, want %s among them", got, contact.ID)
		}
	})

	t.Run("conversations are listed", func(t *testing.T) {
		convs, _, err := report.New(s).Conversations(ctx, accID, models.ReaderAPI, report.ConversationFilter{}, models.Page{Limit: 50})
		if err != nil {
			t.Fatalf("Conversations: %v", err)
		}
		if len(convs) != 3 {
			t.Errorf("%d conversations, want 3", len(convs))
		}
	})
}
