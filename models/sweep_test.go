package models_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"funnelchat/models"
)

// TestDueWorkListsPendingMediaChecks: a media link still unchecked is owed work the sweep re-enqueues,
// until its check is recorded; embedded media has nothing to check.
func TestDueWorkListsPendingMediaChecks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	accID := csAccount(t, "Media sweep").Account.ID
	store := func(sid, url, typ string) *models.Message {
		in := models.IncomingInput{ExternalID: csFrom(sid), FromID: csFrom("media"), ToID: "biz", Body: "see attached",
			MediaURL: url, MediaContentType: typ}
		if err := in.Validate(1 << 20); err != nil {
			t.Fatal(err)
		}
		m, _, err := env.Store.IngestIncoming(ctx, accID, in)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	link := store("link", "https://cdn.example.com/a.png", "image/png")
	embedded := store("data", "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==", "image/png")
	due := func() []string {
		d, err := env.Store.DueWork(ctx, time.Now().Add(time.Second), 100000)
		if err != nil {
			t.Fatal(err)
		}
		return d.MediaChecks
	}
	if got := due(); !slices.Contains(got, link.ID) || slices.Contains(got, embedded.ID) {
		t.Fatalf("due media checks %v: want %s (a link), not %s (embedded)", got, link.ID, embedded.ID)
	}
	if err := env.Store.SetMediaCheck(ctx, link.ID, "ok"); err != nil {
		t.Fatal(err)
	}
	if got := due(); slices.Contains(got, link.ID) {
		t.Fatalf("due media checks %v: %s was checked", got, link.ID)
	}
}
