package models_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"funnelchat/models"
	"funnelchat/models/report"
	"funnelchat/models/testenv"
)

// The conversation helpers below are testenv's fixtures, shared with models/report.

// person is who a custom-channel message comes from.
type person = testenv.Person

// receive stores an incoming custom-channel message from fromID, as POST /v1/incoming_custom_channel_message
// does.
func receive(t testing.TB, s *models.Store, accountID, fromID, body string, p person) *models.Message {
	t.Helper()
	return testenv.Receive(t, s, accountID, fromID, body, p)
}

// sendCustom stores an outgoing custom-channel message to fromID, as POST /v1/send_custom_channel_message
// does.
func sendCustom(t testing.TB, s *models.Store, accountID, fromID, body string) (*models.Message, *models.Contact) {
	t.Helper()
	return testenv.SendCustom(t, s, accountID, fromID, body)
}

func markRead(t testing.TB, accountID, readerID, contactID string) {
	t.Helper()
	testenv.MarkRead(t, env.Store, accountID, readerID, contactID)
}

// list returns every conversation of the account (one page of the maximum size) as the reader sees it.
func list(t testing.TB, accountID, readerID string, f report.ConversationFilter) []report.Conversation {
	t.Helper()
	return testenv.Conversations(t, report.New(env.Store), accountID, readerID, f)
}

// contactIDs returns the conversations' contact ids, in order.
func contactIDs(convs []report.Conversation) []string { return testenv.ContactIDs(convs) }

// find returns the conversation of the contact, failing the test when it is not listed.
func find(t testing.TB, convs []report.Conversation, contactID string) report.Conversation {
	t.Helper()
	return testenv.FindConversation(t, convs, contactID)
}

func ptr[T any](v T) *T { return testenv.Ptr(v) }

func TestMarkReadConcurrently(t *testing.T) {
	ctx := context.Background()
	acc := newAccount(t)
	reader := addUser(t, acc.Account.ID, "").User.ID
	m := receive(t, env.Store, acc.Account.ID, "racer-1", "hi", person{First: "Race"})
	receive(t, env.Store, acc.Account.ID, "racer-1", "hello?", person{})

	var wg sync.WaitGroup
	errs := make(chan error, 20)
	start := make(chan struct{})
	for range 20 {
		wg.Go(func() {
			<-start
			errs <- env.Store.MarkRead(ctx, acc.Account.ID, reader, m.ContactID)
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("MarkRead: %v", err)
		}
	}
	n, err := env.Store.DB().NewSelect().Table("conversation_reads").
		Where("account_id = ? AND reader_id = ? AND contact_id = ?", acc.Account.ID, reader, m.ContactID).Count(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("%d read rows, want 1", n)
	}
	if c := find(t, list(t, acc.Account.ID, reader, report.ConversationFilter{}), m.ContactID); c.Unread {
		t.Error("unread after the concurrent MarkRead calls")
	}

	// A mark older than the stored one (a slower tab that read the conversation before a newer message
	// was marked elsewhere) does not move the mark back: simulate the newer mark with a later id.
	const later = "msg_zzzzzzzzzzzzzzzzzzzzzzzzzz"
	q := env.Store.DB().NewUpdate().Table("conversation_reads").Set("last_read_id = ?", later).
		Where("account_id = ? AND reader_id = ? AND contact_id = ?", acc.Account.ID, reader, m.ContactID)
	if _, err := q.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	markRead(t, acc.Account.ID, reader, m.ContactID)
	var stored []string
	if err := env.Store.DB().NewSelect().Table("conversation_reads").Column("last_read_id").
		Where("account_id = ? AND reader_id = ? AND contact_id = ?", acc.Account.ID, reader, m.ContactID).Scan(ctx, &stored); err != nil {
		t.Fatal(err)
	}
	if len(stored) != 1 || stored[0] != later {
		t.Errorf("read mark %v after an older MarkRead, want it kept at %s", stored, later)
	}
}

func TestAlerts(t *testing.T) {
	ctx := context.Background()
	acc := newAccount(t)
	id := acc.Account.ID
	first := receive(t, env.Store, id, "alert-a", "help", person{First: "Al"})
	second := receive(t, env.Store, id, "alert-b", "help me too", person{First: "Bea"})
	a1, err := env.Store.Handoff(ctx, first, "handoff")
	if err != nil {
		t.Fatal(err)
	}
	a2, err := env.Store.BotFailed(ctx, second, "bot failed")
	if err != nil {
		t.Fatal(err)
	}
	if a1.ResolvedAt != nil || a2.ResolvedAt != nil {
		t.Fatal("a new alert is resolved")
	}
	other := newAccount(t)
	theirMsg := receive(t, env.Store, other.Account.ID, "alert-a", "help", person{})
	theirs, err := env.Store.Handoff(ctx, theirMsg, "handoff")
	if err != nil {
		t.Fatal(err)
	}

	alertIDs := func(f models.AlertFilter) []string {
		t.Helper()
		alerts, next, err := env.Store.Alerts(ctx, id, f, models.Page{Limit: 50})
		if err != nil {
			t.Fatal(err)
		}
		if next != "" {
			t.Fatal("more than one page")
		}
		ids := make([]string, len(alerts))
		for i, a := range alerts {
			ids[i] = a.ID
			if a.AccountID != id {
				t.Errorf("alert %s of account %s listed", a.ID, a.AccountID)
			}
		}
		return ids
	}
	if got, want := alertIDs(models.AlertFilter{}), []string{a2.ID, a1.ID}; !slices.Equal(got, want) {
		t.Errorf("open alerts %v, want %v (newest first)", got, want)
	}

	resolved, err := env.Store.ResolveAlert(ctx, id, a1.ID, "usr_someone")
	if err != nil {
		t.Fatal(err)
	}
	if resolved.ID != a1.ID || resolved.ResolvedAt == nil || resolved.ResolvedBy == nil || *resolved.ResolvedBy != "usr_someone" {
		t.Fatalf("ResolveAlert = %+v, want resolvedAt and resolvedBy set", resolved)
	}
	if d := time.Since(*resolved.ResolvedAt); d < -time.Minute || d > time.Minute {
		t.Errorf("resolvedAt %v is not about now", resolved.ResolvedAt)
	}

	if got, want := alertIDs(models.AlertFilter{}), []string{a2.ID}; !slices.Equal(got, want) {
		t.Errorf("open alerts after resolving one: %v, want %v", got, want)
	}
	all, _, err := env.Store.Alerts(ctx, id, models.AlertFilter{All: true}, models.Page{Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].ID != a2.ID || all[1].ID != a1.ID {
		t.Fatalf("all alerts %+v, want a2 and a1", all)
	}
	if all[0].ResolvedAt != nil {
		t.Errorf("open alert listed with resolvedAt %v", all[0].ResolvedAt)
	}
	if all[1].ResolvedAt == nil || !all[1].ResolvedAt.Equal(*resolved.ResolvedAt) {
		t.Errorf("resolved alert listed with resolvedAt %v, want %v", all[1].ResolvedAt, resolved.ResolvedAt)
	}
	if got := alertIDs(models.AlertFilter{ContactID: second.ContactID}); !slices.Equal(got, []string{a2.ID}) {
		t.Errorf("open alerts of the second contact: %v", got)
	}
	if got := alertIDs(models.AlertFilter{ContactID: first.ContactID}); len(got) != 0 {
		t.Errorf("open alerts of the first contact: %v, want none", got)
	}
	if got := alertIDs(models.AlertFilter{All: true, ContactID: first.ContactID}); !slices.Equal(got, []string{a1.ID}) {
		t.Errorf("all alerts of the first contact: %v", got)
	}

	t.Run("paging", func(t *testing.T) {
		page, next, err := env.Store.Alerts(ctx, id, models.AlertFilter{All: true}, models.Page{Limit: 1})
		if err != nil || len(page) != 1 || page[0].ID != a2.ID || next != a2.ID {
			t.Fatalf("first page %+v, next %q, %v", page, next, err)
		}
		page, next, err = env.Store.Alerts(ctx, id, models.AlertFilter{All: true}, models.Page{Limit: 1, Cursor: next})
		if err != nil || len(page) != 1 || page[0].ID != a1.ID || next != "" {
			t.Fatalf("second page %+v, next %q, %v", page, next, err)
		}
	})

	t.Run("resolving again changes nothing", func(t *testing.T) {
		again, err := env.Store.ResolveAlert(ctx, id, a1.ID, "api")
		if err != nil {
			t.Fatal(err)
		}
		if again.ResolvedAt == nil || !again.ResolvedAt.Equal(*resolved.ResolvedAt) {
			t.Errorf("second resolve: resolvedAt %v, want the first %v", again.ResolvedAt, resolved.ResolvedAt)
		}
		if again.ResolvedBy == nil || *again.ResolvedBy != "usr_someone" {
			t.Errorf("second resolve: resolvedBy %v, want the first resolver", again.ResolvedBy)
		}
	})

	t.Run("another account's alert is not found", func(t *testing.T) {
		_, err := env.Store.ResolveAlert(ctx, id, theirs.ID, "api")
		wantCode(t, err, models.CodeNotFound, "ResolveAlert of another account's alert")
		stored, err := env.Store.AlertByID(ctx, theirs.ID)
		if err != nil {
			t.Fatal(err)
		}
		if stored.ResolvedAt != nil {
			t.Error("another account's alert was resolved")
		}
		open, _, err := env.Store.Alerts(ctx, other.Account.ID, models.AlertFilter{}, models.Page{Limit: 50})
		if err != nil || len(open) != 1 || open[0].ID != theirs.ID {
			t.Errorf("the other account's open alerts: %+v, %v", open, err)
		}
	})

	t.Run("unknown id", func(t *testing.T) {
		for _, bad := range []string{"alr_nobody", "", strings.Repeat("x", 65)} {
			_, err := env.Store.ResolveAlert(ctx, id, bad, "api")
			wantCode(t, err, models.CodeNotFound, fmt.Sprintf("ResolveAlert(%q)", bad))
		}
	})
}
