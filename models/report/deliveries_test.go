package report_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"funnelchat/models"
	"funnelchat/models/report"
	"funnelchat/models/testenv"
)

// deliveryIDs are the ids of one state's failed deliveries, newest first (every page).
func deliveryIDs(t *testing.T, accountID, state string) []string {
	t.Helper()
	var out []string
	page := models.Page{Limit: 2}
	for {
		msgs, next, err := reader.Deliveries(context.Background(), accountID, state, page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			out = append(out, m.ID)
		}
		if next == "" {
			return out
		}
		page.Cursor = next
	}
}

// TestDeliveriesGaveUpApartFromRetrying: the Deliveries page's two states (a failed delivery with no
// next attempt gave up, one with a next attempt is retrying), each counted, and the navigation's count
// of the deliveries that gave up in the last 7 days: every way a delivery gives up stamps when (a final
// attempt, a bot reply that failed for good, the door refusing a retry), one that gave up 8 days ago
// is not counted, and one retrying or sent again is not either.
func TestDeliveriesGaveUpApartFromRetrying(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := env.Store
	acc := testenv.NewAccount(t, s, "")
	id := acc.Account.ID
	owner := acc.Account.OwnerUserID

	// Retrying: a next attempt in a minute.
	retrying, contact := testenv.SendCustom(t, s, id, testenv.UniqueFromID("retry"), "your order shipped")
	failDelivery(t, s, retrying.ID)
	// Gave up at its last attempt (the receiver's final answer).
	final := reply(t, s, id, contact.ID, "your parcel is at the post office")
	failDelivery(t, s, final.ID)
	before := time.Now()
	if err := s.RecordAttempt(ctx, final.ID, models.AttemptOutcome{StatusCode: 410, Error: "webhook answered 410"}); err != nil {
		t.Fatal(err)
	}
	// A bot reply whose one attempt failed for good.
	in := testenv.Receive(t, s, id, testenv.UniqueFromID("bot"), "hello?", testenv.Person{First: "Lia"})
	bot := models.NewBotReply(in, nil, "Hi Lia!")
	if stored, err := s.RecordBotReply(ctx, bot, models.AttemptOutcome{StatusCode: 400, Error: "webhook answered 400"}); err != nil || !stored {
		t.Fatalf("bot reply: %v %v", stored, err)
	}
	// Gave up 8 days ago: not counted in the navigation, still listed.
	old := reply(t, s, id, contact.ID, "an old reply")
	if err := s.RecordAttempt(ctx, old.ID, models.AttemptOutcome{StatusCode: 410, Error: "webhook answered 410"}); err != nil {
		t.Fatal(err)
	}
	testenv.Exec(t, s, "UPDATE messages SET given_up_at = ? WHERE id = ?", time.Now().Add(-8*24*time.Hour).UTC(), old.ID)
	// Sent: in neither.
	sent := reply(t, s, id, contact.ID, "delivered")
	if err := s.RecordAttempt(ctx, sent.ID, models.AttemptOutcome{StatusCode: 200}); err != nil {
		t.Fatal(err)
	}
	// Another account's: not this one's.
	other := testenv.NewAccount(t, s, "")
	elsewhere, _ := testenv.SendCustom(t, s, other.Account.ID, testenv.UniqueFromID("other"), "elsewhere")
	if err := s.RecordAttempt(ctx, elsewhere.ID, models.AttemptOutcome{StatusCode: 410, Error: "webhook answered 410"}); err != nil {
		t.Fatal(err)
	}

	for _, m := range []*models.Message{final, bot} {
		got, err := s.MessageByID(ctx, id, m.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.GivenUpAt == nil || got.GivenUpAt.Before(before.Add(-time.Second)) || got.GivenUpAt.After(time.Now().Add(time.Second)) {
			t.Fatalf("message %s (%s) gave up at %v, want now", m.ID, got.Status, got.GivenUpAt)
		}
	}
	if got, _ := s.MessageByID(ctx, id, retrying.ID); got.GivenUpAt != nil {
		t.Fatalf("a retrying message gave up at %v", got.GivenUpAt)
	}

	check := func(what string, gaveUp, retry []string, badge int) {
		t.Helper()
		// Newest first: by id (a bot reply's id comes from its incoming message's).
		for _, ids := range [][]string{gaveUp, retry} {
			slices.Sort(ids)
			slices.Reverse(ids)
		}
		if got := deliveryIDs(t, id, report.DeliveryGaveUp); !slices.Equal(got, gaveUp) {
			t.Fatalf("%s: gave up %q, want %q", what, got, gaveUp)
		}
		if got := deliveryIDs(t, id, report.DeliveryRetrying); !slices.Equal(got, retry) {
			t.Fatalf("%s: retrying %q, want %q", what, got, retry)
		}
		if got := deliveryIDs(t, id, ""); len(got) != len(gaveUp)+len(retry) {
			t.Fatalf("%s: %d failed in all, want %d", what, len(got), len(gaveUp)+len(retry))
		}
		counts, err := reader.DeliveryCounts(ctx, id)
		if err != nil || *counts != (report.DeliveryCounts{GaveUp: len(gaveUp), Retrying: len(retry)}) {
			t.Fatalf("%s: delivery counts %+v %v", what, counts, err)
		}
		nav, err := reader.Counts(ctx, id, owner)
		if err != nil || nav.GaveUp != badge {
			t.Fatalf("%s: %+v %v, want %d gave up in the last 7 days", what, nav, err, badge)
		}
	}
	check("at first", []string{old.ID, bot.ID, final.ID}, []string{retrying.ID}, 2)

	// Sent again, the one that gave up lately leaves the count; refused by the door on a retry (the
	// contact opted out since), it gives up again, now.
	if _, err := s.Redeliver(ctx, id, final.ID); err != nil {
		t.Fatal(err)
	}
	check("the final one queued again", []string{old.ID, bot.ID}, []string{retrying.ID}, 1)
	if _, err := s.Redeliver(ctx, id, old.ID); err != nil { // the old one, pending again
		t.Fatal(err)
	}
	if err := s.RecordAttempt(ctx, old.ID, models.AttemptOutcome{StatusCode: 500, Error: "webhook answered 500", NextAttemptAt: testenv.Ptr(time.Now().Add(time.Hour))}); err != nil {
		t.Fatal(err)
	}
	check("the old one retrying", []string{bot.ID}, []string{old.ID, retrying.ID}, 1)
	// The final one fails for good again (8 days ago, say); then the contact opts out, and its retry,
	// refused by the door, gives up again: now.
	if err := s.RecordAttempt(ctx, final.ID, models.AttemptOutcome{StatusCode: 410, Error: "webhook answered 410"}); err != nil {
		t.Fatal(err)
	}
	testenv.Exec(t, s, "UPDATE messages SET given_up_at = ? WHERE id = ?", time.Now().Add(-8*24*time.Hour).UTC(), final.ID)
	check("the final one gave up long ago", []string{bot.ID, final.ID}, []string{old.ID, retrying.ID}, 1)
	optOut := models.ConsentInput{Status: models.ConsentOptedOut, Text: "asked by phone to stop"}
	if err := optOut.Normalize("", models.ConsentSourceAPI); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetConsent(ctx, id, contact.ID, optOut); err != nil {
		t.Fatal(err)
	}
	refused, err := s.Redeliver(ctx, id, final.ID)
	if err != nil || refused.Status != models.StatusFailed || refused.GivenUpAt == nil || time.Since(*refused.GivenUpAt) > time.Minute {
		t.Fatalf("a retry the door refuses: %+v %v", refused, err)
	}
	check("the door refused a retry", []string{bot.ID, final.ID}, []string{old.ID, retrying.ID}, 2)
}
