package models_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"funnelchat/models"
)

// lrSetup makes an account with a live campaign on a list, and a contact on that list whose opening
// is queued.
func lrSetup(t *testing.T, name string) (c *models.Campaign, l *models.List, contact *models.Contact, sendID string) {
	t.Helper()
	accID := csAccount(t, name).Account.ID
	c, l = csCampaign(t, accID, "web")
	contactID := csIncoming(t, env.Store, accID, csFrom(name), "web", "hi").ContactID
	sendID = csQueue(t, accID, l.ID, contactID)[contactID]
	return c, l, csContact(t, accID, contactID), sendID
}

// lrSend returns a send as stored.
func lrSend(t *testing.T, id string) *models.CampaignSend {
	t.Helper()
	send, err := env.Store.CampaignSend(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return send
}

// lrWantSkipped checks that the send was skipped by the removal and owes nothing.
func lrWantSkipped(t *testing.T, id, what string) {
	t.Helper()
	send := lrSend(t, id)
	if send.Status != models.SendSkipped || send.Detail == nil || *send.Detail != models.ReasonRemovedFromList ||
		!send.FollowUpsDone || send.MessageID != nil {
		t.Errorf("%s: send %s/%s followUpsDone %v message %v, want skipped (%s), no follow-ups, no message",
			what, send.Status, csStr(send.Detail), send.FollowUpsDone, send.MessageID, models.ReasonRemovedFromList)
	}
}

// TestRemoveFromListEndsWhatTheListsCampaignsOwe: removing a contact from a list skips the openings
// the list's campaigns had not written for it (queued, held by a pause, deferred by quiet hours), ends
// the follow-ups of those written, and touches no other list's campaign.
func TestRemoveFromListEndsWhatTheListsCampaignsOwe(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, l, contact, queued := lrSetup(t, "LR owes")
	accID := c.AccountID

	// A paused campaign of the same list holds its send; another list's campaign queues one.
	name, ch, paused, opening, listID := "LR paused", "custom:web", models.CampaignPaused, "Hello", l.ID
	pc, err := env.Store.CreateCampaign(ctx, accID, models.CampaignInput{Name: &name, Channel: &ch, Status: &paused, OpeningMessage: &opening, ListID: &listID})
	if err != nil {
		t.Fatal(err)
	}
	_, otherList := csCampaign(t, accID, "web")
	otherSend := csQueue(t, accID, otherList.ID, contact.ID)[contact.ID]
	// A second contact added now owes both campaigns of the list: the paused one's send is held.
	second := csIncoming(t, env.Store, accID, csFrom("LR owes 2"), "web", "hi").ContactID
	res, err := env.Store.AddToList(ctx, accID, l.ID, []string{second})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Sends) != 1 {
		t.Fatalf("%d sends queued for the second contact, want the live campaign's", len(res.Sends))
	}
	var held, deferred string
	if err := env.Store.DB().NewSelect().TableExpr("campaign_sends").Column("id").
		Where("campaign_id = ? AND contact_id = ? AND status = ?", pc.ID, second, models.SendHeld).Scan(ctx, &held); err != nil {
		t.Fatalf("the paused campaign's held send: %v", err)
	}
	deferred = res.Sends[0].SendID
	if err := env.Store.DeferSend(ctx, deferred, time.Now().Add(8*time.Hour)); err != nil {
		t.Fatal(err)
	}

	if err := env.Store.RemoveFromList(ctx, accID, l.ID, contact.ID); err != nil {
		t.Fatal(err)
	}
	if err := env.Store.RemoveFromList(ctx, accID, l.ID, second); err != nil {
		t.Fatal(err)
	}
	lrWantSkipped(t, queued, "queued")
	lrWantSkipped(t, held, "held by the pause")
	lrWantSkipped(t, deferred, "deferred by quiet hours")
	if s := lrSend(t, otherSend); s.Status != models.SendQueued || s.FollowUpsDone {
		t.Errorf("another list's campaign's send: %s followUpsDone %v, want queued and owed", s.Status, s.FollowUpsDone)
	}

	// Going live again queues nothing that was skipped.
	live := models.CampaignLive
	_, resumed, err := env.Store.UpdateCampaign(ctx, accID, pc.ID, models.CampaignInput{Status: &live})
	if err != nil {
		t.Fatal(err)
	}
	if resumed != nil && len(resumed.Openings) != 0 {
		t.Errorf("resuming queued %v, want nothing", resumed.Openings)
	}
	lrWantSkipped(t, held, "held, after the resume")

	// The worker's write of a skipped send writes nothing.
	m, err := env.Store.WriteOpening(ctx, lrSend(t, queued), models.OutgoingMessage{Campaign: c, Contact: contact, Body: "Hi", ToID: "x"})
	if err != nil || m != nil {
		t.Fatalf("the opening of a skipped send was written: %+v, %v", m, err)
	}

	t.Run("an opening already written goes, and gets no follow-up", func(t *testing.T) {
		c, l, contact, sendID := lrSetup(t, "LR written")
		delays, on := []float64{24}, true
		c, _, err := env.Store.UpdateCampaign(ctx, c.AccountID, c.ID, models.CampaignInput{FollowUpsEnabled: &on, FollowUpDelaysHours: &delays})
		if err != nil {
			t.Fatal(err)
		}
		m, err := env.Store.WriteOpening(ctx, lrSend(t, sendID), models.OutgoingMessage{Campaign: c, Contact: contact, Body: "Hi", ToID: "x"})
		if err != nil || m == nil {
			t.Fatalf("write the opening: %+v, %v", m, err)
		}
		if err := env.Store.RemoveFromList(ctx, c.AccountID, l.ID, contact.ID); err != nil {
			t.Fatal(err)
		}
		if s := lrSend(t, sendID); s.Status != models.SendPending || !s.FollowUpsDone {
			t.Fatalf("written opening after the removal: %s followUpsDone %v, want pending with follow-ups ended", s.Status, s.FollowUpsDone)
		}
		due, err := env.Store.SettleOpening(ctx, m.ID, true, time.Now(), "")
		if err != nil || due != nil {
			t.Fatalf("the delivery scheduled a follow-up after the removal: %+v, %v", due, err)
		}
		if s := lrSend(t, sendID); s.Status != models.SendSent || !s.FollowUpsDone || s.NextFollowUpAt != nil {
			t.Fatalf("delivered: %s followUpsDone %v next %v, want sent without follow-ups", s.Status, s.FollowUpsDone, s.NextFollowUpAt)
		}
	})

	t.Run("not found", func(t *testing.T) {
		for _, tc := range []struct{ list, contact, want string }{
			{l.ID, contact.ID, "the contact is not on this list"}, // removed above
			{"lst_unknown", second, "list not found"},
			{l.ID, "ct_unknown", "contact not found"},
			{otherList.ID + "x", contact.ID, "list not found"},
		} {
			err := env.Store.RemoveFromList(ctx, accID, tc.list, tc.contact)
			if models.ErrorCode(err) != models.CodeNotFound || models.ErrorMessage(err) != tc.want {
				t.Errorf("remove %s from %s: %v, want NOT_FOUND %q", tc.contact, tc.list, err, tc.want)
			}
		}
		stranger := csAccount(t, "LR stranger").Account.ID
		if err := env.Store.RemoveFromList(ctx, stranger, otherList.ID, contact.ID); models.ErrorCode(err) != models.CodeNotFound {
			t.Errorf("another account removing from this account's list: %v, want NOT_FOUND", err)
		}
		if s := lrSend(t, otherSend); s.Status != models.SendQueued {
			t.Errorf("the refused removal changed the send: %s", s.Status)
		}
	})
}

// waitForLockWaiters waits until n statements on table wait for a lock (PostgreSQL).
func waitForLockWaiters(t *testing.T, table string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var got int
		err := env.Store.DB().QueryRowContext(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%' || ? || '%'`, table).Scan(&got)
		if err != nil {
			t.Fatal(err)
		}
		if got >= n {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("fewer than %d statements on %s waited for a lock", n, table)
}

// TestRemoveFromListRacingTheOpening: the worker writing a contact's opening and the contact's removal
// from the list, at the same time. Both lock the contact first (tx.go), so on PostgreSQL one runs
// after the other, and the conditions in their writes settle it: the opening written first goes (its
// send stays pending, with no follow-ups), or the removal first skips the send and the opening is not
// written. Never a skipped send with an opening, nor an error.
func TestRemoveFromListRacingTheOpening(t *testing.T) {
	if !env.Postgres() {
		t.Skip("row locks: PostgreSQL (SQLite runs one writer at a time)")
	}
	ctx := context.Background()

	type outcome struct {
		m   *models.Message
		err error
	}
	// race holds the contact's row locked, starts first and then second (each waiting for the lock),
	// and lets them go in that order.
	race := func(t *testing.T, name string, openingFirst bool) (*models.Message, string) {
		c, l, contact, sendID := lrSetup(t, name)
		tx, err := env.Store.DB().BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback() }()
		if _, err := tx.ExecContext(ctx, "SELECT id FROM contacts WHERE id = ? FOR NO KEY UPDATE", contact.ID); err != nil {
			t.Fatal(err)
		}
		send := lrSend(t, sendID) // as the worker read it before pacing
		opened, removed := make(chan outcome, 1), make(chan error, 1)
		write := func() {
			m, err := env.Store.WriteOpening(ctx, send, models.OutgoingMessage{Campaign: c, Contact: contact, Body: "Hi", ToID: "x"})
			opened <- outcome{m, err}
		}
		remove := func() { removed <- env.Store.RemoveFromList(ctx, c.AccountID, l.ID, contact.ID) }
		first, second := remove, write
		if openingFirst {
			first, second = write, remove
		}
		go first()
		waitForLockWaiters(t, "contacts", 1)
		go second()
		waitForLockWaiters(t, "contacts", 2)
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		o := <-opened
		if o.err != nil {
			t.Fatalf("write the opening: %v", o.err)
		}
		if err := <-removed; err != nil {
			t.Fatalf("remove: %v", err)
		}
		if members := testListMembers(t, l.ID); len(members) != 0 {
			t.Fatalf("still on the list: %v", members)
		}
		return o.m, sendID
	}

	t.Run("the opening written first goes", func(t *testing.T) {
		m, sendID := race(t, "LR race opening", true)
		if m == nil {
			t.Fatal("the opening was not written")
		}
		if s := lrSend(t, sendID); s.Status != models.SendPending || s.MessageID == nil || *s.MessageID != m.ID || !s.FollowUpsDone {
			t.Fatalf("send %s message %v followUpsDone %v, want pending with the opening and no follow-ups", s.Status, s.MessageID, s.FollowUpsDone)
		}
	})
	t.Run("the removal first skips it", func(t *testing.T) {
		m, sendID := race(t, "LR race removal", false)
		if m != nil {
			t.Fatalf("the opening %s was written after the contact was removed", m.ID)
		}
		lrWantSkipped(t, sendID, "removed while the worker wrote the opening")
	})

	t.Run("at once, many times", func(t *testing.T) {
		const rounds = 20
		var wg sync.WaitGroup
		results := make([]struct {
			m      *models.Message
			sendID string
			err    error
		}, rounds)
		for i := range rounds {
			c, l, contact, sendID := lrSetup(t, fmt.Sprintf("LR at once %d", i))
			send := lrSend(t, sendID)
			results[i].sendID = sendID
			start := make(chan struct{})
			wg.Go(func() {
				<-start
				m, err := env.Store.WriteOpening(ctx, send, models.OutgoingMessage{Campaign: c, Contact: contact, Body: "Hi", ToID: "x"})
				results[i].m = m
				if err != nil {
					results[i].err = err
				}
			})
			wg.Go(func() {
				<-start
				if err := env.Store.RemoveFromList(ctx, c.AccountID, l.ID, contact.ID); err != nil {
					t.Errorf("round %d: remove: %v", i, err)
				}
			})
			close(start)
		}
		wg.Wait()
		written := 0
		for i, r := range results {
			if r.err != nil {
				t.Fatalf("round %d: write the opening: %v", i, r.err)
			}
			s := lrSend(t, r.sendID)
			switch {
			case r.m != nil && s.Status == models.SendPending && s.MessageID != nil && *s.MessageID == r.m.ID && s.FollowUpsDone:
				written++
			case r.m == nil && s.Status == models.SendSkipped && s.MessageID == nil:
			default:
				t.Errorf("round %d: opening %v, send %s message %v followUpsDone %v: neither outcome", i, r.m != nil, s.Status, s.MessageID, s.FollowUpsDone)
			}
		}
		t.Logf("%d of %d openings were written before the removal, the others skipped", written, rounds)
	})
}

// testListMembers lists the contacts on a list.
func testListMembers(t *testing.T, listID string) []string {
	t.Helper()
	var ids []string
	if err := env.Store.DB().NewSelect().TableExpr("list_members").Column("contact_id").Where("list_id = ?", listID).
		Scan(context.Background(), &ids); err != nil {
		t.Fatal(err)
	}
	return ids
}
