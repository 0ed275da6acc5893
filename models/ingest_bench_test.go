package models_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	"funnelchat/models"
)

// BenchmarkIngest measures the accept path's database write per incoming message on PostgreSQL (set
// TEST_DATABASE_URL), each message with a new messageSid:
//   - batch: ingest_incoming_batch with 64 messages of new senders a call, the shape a busy api's
//     group commit sends (set-based);
//   - batch-known: the same with senders seen before (their contacts and identities exist);
//   - concurrent: IngestIncoming from 64 goroutines at once through the store's batcher, new senders,
//     as the incoming endpoint calls it.
//
// ns/op is per message.
//
//	go test ./models -run '^$' -bench Ingest -benchtime 20000x
func BenchmarkIngest(b *testing.B) {
	if !env.Postgres() {
		b.Skip("the ingest functions are PostgreSQL's")
	}
	ctx := context.Background()
	var seq atomic.Int64
	msg := func(run, from string) models.IncomingInput {
		in := models.IncomingInput{ExternalID: fmt.Sprintf("%s-sid-%d", run, seq.Add(1)), FromID: from, ToID: "business",
			Body: "What does the premium plan cost?", Channel: "live-chat"}
		if err := in.Validate(1 << 20); err != nil {
			b.Fatal(err)
		}
		return in
	}
	const batch = 64
	batches := func(b *testing.B, known bool) {
		acc := newAccount(b).Account.ID
		run := csFrom("bench")
		senders := make([]string, batch)
		for i := range senders {
			senders[i] = fmt.Sprintf("%s-known-%d", run, i)
		}
		if known {
			first := make([]models.IncomingInput, batch)
			for i := range first {
				first[i] = msg(run, senders[i])
			}
			if _, err := env.Store.IngestForTest(ctx, acc, first, false); err != nil {
				b.Fatal(err)
			}
		}
		b.ResetTimer()
		for done := 0; done < b.N; done += batch {
			ins := make([]models.IncomingInput, min(batch, b.N-done))
			for i := range ins {
				from := fmt.Sprintf("%s-new-%d", run, done+i)
				if known {
					from = senders[i]
				}
				ins[i] = msg(run, from)
			}
			res, err := env.Store.IngestForTest(ctx, acc, ins, false)
			if err != nil {
				b.Fatal(err)
			}
			for _, r := range res {
				if r.Duplicate || !r.SetBased {
					b.Fatalf("a message stored as a duplicate or one by one: %+v", r)
				}
			}
		}
	}
	b.Run("batch", func(b *testing.B) { batches(b, false) })
	b.Run("batch-known", func(b *testing.B) { batches(b, true) })
	b.Run("concurrent", func(b *testing.B) {
		acc := newAccount(b).Account.ID
		run := csFrom("bench-c")
		var n atomic.Int64
		b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				in := msg(run, fmt.Sprintf("%s-%d", run, n.Add(1)))
				if _, dup, err := env.Store.IngestIncoming(ctx, acc, in); err != nil || dup {
					b.Errorf("IngestIncoming: %v, duplicate %v", err, dup)
					return
				}
			}
		})
	})
}
