package app

import (
	"context"
	"time"

	"funnelchat/models"
)

// Accepted is an incoming message that AcceptIncoming stored (or found stored before).
type Accepted struct {
	Message   *models.Message
	Duplicate bool
}

// Remember asks AcceptIncoming to set a Redis key to the message's id for TTL (the messageSid fast
// path of the incoming endpoint), in the enqueue's round trip when a bot reply is queued.
type Remember struct {
	Key string
	TTL time.Duration
}

// AcceptIncoming stores an incoming message (in must have passed Validate) and queues what it owes:
// the answer to a consent keyword (models.Store.HandleKeyword) or else the bot's reply (also for a duplicate whose reply is still owed: a sender retrying after a 503
// completes the enqueue that failed) and, for a new message with a linked file, the media check.
// Errors: those of IngestIncoming; UNAVAILABLE when the message was stored but its bot reply could
// not be queued, so that the sender retries (its retry is de-duplicated by the message's id) rather
// than waiting for the sweep.
func (a *App) AcceptIncoming(ctx context.Context, accountID string, in models.IncomingInput, remember *Remember) (*Accepted, error) {
	msg, duplicate, err := a.store.IngestIncoming(ctx, accountID, in)
	if err != nil {
		return nil, err
	}
	enqCtx, cancel := context.WithTimeout(ctx, EnqueueTimeout)
	defer cancel()
	remembered := false
	// A consent keyword (STOP, START, HELP) takes effect before the answer: the service answers it,
	// not the bot (README, "Compliance").
	if msg.BotStatus != nil && *msg.BotStatus == models.BotPending {
		kw, err := a.store.HandleKeyword(ctx, msg)
		if err != nil {
			return nil, err
		}
		if kw != nil && kw.Reply != nil {
			if err := a.queue.Deliver(enqCtx, kw.Reply.ID, kw.Reply.DeliveryRound); err != nil {
				// The answer is stored pending: the sweep delivers it, as it does any owed delivery.
				a.log.WarnContext(ctx, "keyword answer stored, delivery not enqueued; the sweep will deliver it",
					"message_id", kw.Reply.ID, "error", err.Error())
			}
		}
	}
	if msg.BotStatus != nil && *msg.BotStatus == models.BotPending {
		var err error
		switch {
		case duplicate:
			// The first try stored it and may have queued its reply, alone or in a batch.
			err = a.queue.BotReplyUnlessHeld(enqCtx, msg.ID)
		case remember != nil:
			// The key's SET goes in the enqueue's round trip, and only once the task is queued, so
			// that a retry is not answered from Redis before the work is owed.
			var setErr error
			setErr, err = a.queue.BotReplyAndSet(enqCtx, msg.ID, remember.Key, msg.ID, remember.TTL)
			if err == nil && setErr != nil {
				a.log.WarnContext(ctx, "dedupe fast path not updated", "error", setErr.Error())
			}
			remembered = err == nil
		default:
			err = a.queue.BotReplyToNew(enqCtx, msg.ID)
		}
		if err != nil {
			a.log.WarnContext(ctx, "incoming stored, bot reply not enqueued", "message_id", msg.ID, "error", err.Error())
			return nil, models.Errorf(models.CodeUnavailable, "the message was stored but could not be queued; retry with the same message id")
		}
	}
	if !duplicate && msg.MediaCheck != nil {
		if err := a.queue.MediaCheck(enqCtx, msg.ID); err != nil {
			a.log.WarnContext(ctx, "media link check not enqueued", "message_id", msg.ID, "error", err.Error())
		}
	}
	if remember != nil && !remembered {
		a.rememberKey(ctx, remember, msg.ID)
	}
	return &Accepted{Message: msg, Duplicate: duplicate}, nil
}

// redisFastPathTimeout bounds the de-duplication key's Redis calls: the database decides without
// them, so when Redis is down they must not hold the request (go-redis would retry dialing for
// seconds).
const redisFastPathTimeout = 250 * time.Millisecond

// rememberKey sets the messageSid's key when no enqueue carried it (no bot reply owed).
func (a *App) rememberKey(ctx context.Context, r *Remember, messageID string) {
	ctx, cancel := context.WithTimeout(ctx, redisFastPathTimeout)
	defer cancel()
	if err := a.redis.Set(ctx, r.Key, messageID, r.TTL).Err(); err != nil {
		a.log.WarnContext(ctx, "dedupe fast path not updated", "error", err.Error())
	}
}
