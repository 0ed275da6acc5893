package api_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"funnelchat/models"
)

// TestConcurrentWorkerWritesAreExact drives the worker's two writes, the bot reply and the delivery
// attempt, from many goroutines at once, as concurrent tasks do: on PostgreSQL they are batched into
// shared statements and commits, and every reply and attempt must still be written exactly once, each
// to its own message, with the outcome its caller gave (two tasks answering one message leave one reply).
func TestConcurrentWorkerWritesAreExact(t *testing.T) {
	ctx := context.Background()
	acc, _ := newAccount(t)
	const n = 80
	incoming := make([]*models.Message, n)
	for i := range incoming {
		in := models.IncomingInput{ExternalID: fmt.Sprintf("ww-%d", i), FromID: fmt.Sprintf("ww-visitor-%d", i), ToID: "biz", Body: "hi"}
		if err := in.Validate(1 << 20); err != nil {
			t.Fatal(err)
		}
		m, _, err := env.Store.IngestIncoming(ctx, acc.ID, in)
		if err != nil {
			t.Fatal(err)
		}
		incoming[i] = m
	}

	// Every message answered by two tasks at once: one reply each all the same.
	replies := make([][2]*models.Message, n)
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i := range incoming {
		for k := range 2 {
			wg.Go(func() {
				r, _, err := env.Store.CreateBotReply(ctx, incoming[i], nil, fmt.Sprintf("reply %d", i), acc, 0)
				if err != nil {
					errs <- err
					return
				}
				replies[i][k] = r
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i, pair := range replies {
		if pair[0].ID != pair[1].ID || pair[0].Body != fmt.Sprintf("reply %d", i) || *pair[0].ReplyToID != incoming[i].ID {
			t.Fatalf("message %d: two tasks got replies %s and %s (%q)", i, pair[0].ID, pair[1].ID, pair[0].Body)
		}
		// The second task's reply was read back from the database: it must not have been read into
		// the caller's message (two tasks share one incoming message, so that was a data race).
		if pair[0].ReplyToID == &incoming[i].ID || pair[1].ReplyToID == &incoming[i].ID {
			t.Fatalf("message %d: the reply's replyToId points into the incoming message", i)
		}
		if got := messageBotStatus(t, incoming[i].ID); got != models.BotDone {
			t.Fatalf("message %d: bot status %q, want done", i, got)
		}
	}

	// One attempt per reply at once: even ones accepted, odd ones failed with a retry time.
	next := time.Now().Add(time.Minute).UTC().Truncate(time.Second)
	for i := range replies {
		wg.Go(func() {
			out := models.AttemptOutcome{StatusCode: 200, Duration: time.Duration(i) * time.Millisecond, ProviderID: fmt.Sprintf("prov-%d", i)}
			if i%2 == 1 {
				out = models.AttemptOutcome{StatusCode: 503, Error: fmt.Sprintf("HTTP 503: down %d", i), NextAttemptAt: &next}
			}
			if err := env.Store.RecordAttempt(ctx, replies[i][0].ID, out); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for i := range replies {
		m, err := env.Store.MessageByID(ctx, acc.ID, replies[i][0].ID)
		if err != nil {
			t.Fatal(err)
		}
		attempts, err := env.Store.MessageAttempts(ctx, acc.ID, m.ID)
		if err != nil {
			t.Fatal(err)
		}
		if m.Attempts != 1 || len(attempts) != 1 {
			t.Fatalf("reply %d: %d attempts counted, %d recorded, want 1", i, m.Attempts, len(attempts))
		}
		switch i % 2 {
		case 0:
			if m.Status != models.StatusSent || m.Error != nil || m.SentAt == nil || m.ProviderMessageID == nil || *m.ProviderMessageID != fmt.Sprintf("prov-%d", i) {
				t.Fatalf("reply %d: %+v, want sent with its provider id", i, m)
			}
		case 1:
			if m.Status != models.StatusFailed || m.Error == nil || *m.Error != fmt.Sprintf("HTTP 503: down %d", i) ||
				m.NextAttemptAt == nil || !m.NextAttemptAt.Equal(next) || m.SentAt != nil {
				t.Fatalf("reply %d: %+v, want failed with its own error and next attempt", i, m)
			}
		}
	}
}

func messageBotStatus(t *testing.T, id string) string {
	t.Helper()
	m, err := env.Store.Message(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if m.BotStatus == nil {
		return ""
	}
	return *m.BotStatus
}

// TestBotAnswersMessagesOlderThanItsWindow: a message that more than the bot's window of newer ones
// followed before the worker got to it is still answered, once, and so is every newer one.
func TestBotAnswersMessagesOlderThanItsWindow(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	hook := newSink(t, nil)
	key, _ := messagingAccount(t, srv, hook)
	const n = 26 // more than the bot's window of 20
	var ids []string
	for i := range n {
		r := incoming(t, srv, key, fmt.Sprintf("window-%d", i), "window-visitor", fmt.Sprintf("message %d", i))
		expect(t, r, 200, "")
		ids = append(ids, r.JSON(t)["messageId"].(string))
	}
	startWorker(t) // only now: the first messages are older than the window when their tasks run
	waitFor(t, 20*time.Second, "a reply to every message", func() bool { return len(hook.deliveries()) >= n })
	waitDrained(t, mustAccountID(t, key), retryHorizon) // a second reply, if one were coming, would still be in a task
	if got := len(hook.deliveries()); got != n {
		t.Fatalf("%d replies to %d messages", got, n)
	}
	for _, id := range ids {
		if got := messageBotStatus(t, id); got != "done" {
			t.Fatalf("message %s: bot status %q", id, got)
		}
	}
}
