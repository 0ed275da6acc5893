package models_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/uptrace/bun"

	"funnelchat/models"
)

// writeCounter counts the statements that write, on the store it is added to.
type writeCounter struct{ writes atomic.Int64 }

func (w *writeCounter) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	return ctx
}

func (w *writeCounter) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	q := strings.ToUpper(strings.TrimSpace(e.Query))
	if strings.HasPrefix(q, "UPDATE") || strings.HasPrefix(q, "INSERT") || strings.HasPrefix(q, "DELETE") {
		w.writes.Add(1)
	}
}

func TestWebhookSettingsWritesOnlyTheFirstSecret(t *testing.T) {
	store := env.FreshStore(t)
	ctx := context.Background()
	created, err := store.CreateAccount(ctx, models.NewAccount{Email: uniqueEmail("hook")})
	if err != nil {
		t.Fatal(err)
	}
	counter := &writeCounter{}
	store.DB().AddQueryHook(counter)

	first, err := store.WebhookSettings(ctx, created.Account.ID, "whsec_first")
	if err != nil {
		t.Fatal(err)
	}
	if counter.writes.Load() != 1 {
		t.Fatalf("the first read stored the secret with %d writes, want 1", counter.writes.Load())
	}
	for range 3 {
		again, err := store.WebhookSettings(ctx, created.Account.ID, "whsec_other")
		if err != nil {
			t.Fatal(err)
		}
		if again.SigningSecret != first.SigningSecret {
			t.Fatalf("the signing secret changed on a read: %q -> %q", first.SigningSecret, again.SigningSecret)
		}
	}
	if n := counter.writes.Load(); n != 1 {
		t.Fatalf("reading the settings wrote %d times after the secret existed, want 0", n-1)
	}
}
