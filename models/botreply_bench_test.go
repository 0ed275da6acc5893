package models_test

import (
	"context"
	"fmt"
	"testing"

	"funnelchat/models"
)

// BenchmarkBotReplyWrites compares the two ways a bot reply is stored, per answered message, on the
// test database (set TEST_DATABASE_URL for PostgreSQL): stored pending first and its attempt recorded
// after the send (CreateBotReply + RecordAttempt: a model's reply), and stored once after the send with
// its attempt (RecordBotReply: the offline bot's). The incoming messages are stored before the timer.
//
//	go test -run XXX -bench BotReplyWrites -benchtime 2000x ./models
func BenchmarkBotReplyWrites(b *testing.B) {
	ctx := context.Background()
	ok := models.AttemptOutcome{StatusCode: 200}
	incoming := func(b *testing.B, name string) []*models.Message {
		acc := newAccount(b)
		ins := make([]*models.Message, b.N)
		for i := range ins {
			ins[i] = csIncoming(b, env.Store, acc.Account.ID, fmt.Sprintf("%s-%d-%s", name, i, csFrom("b")), "chat", "hello")
		}
		return ins
	}
	b.Run("stored-first", func(b *testing.B) {
		ins := incoming(b, "sf")
		b.ResetTimer()
		for i := range b.N {
			reply, _, err := env.Store.CreateBotReply(ctx, ins[i], nil, "hi there", nil, 0)
			if err != nil {
				b.Fatal(err)
			}
			if err := env.Store.RecordAttempt(ctx, reply.ID, ok); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sent-first", func(b *testing.B) {
		ins := incoming(b, "sent")
		b.ResetTimer()
		for i := range b.N {
			if _, err := env.Store.RecordBotReply(ctx, models.NewBotReply(ins[i], nil, "hi there"), ok); err != nil {
				b.Fatal(err)
			}
		}
	})
}
