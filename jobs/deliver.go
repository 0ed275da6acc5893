package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"funnelchat/models"
)

// replyPayload is the body of the outbound custom-channel webhook (ReplyWebhookPayload in the OpenAPI document).
type replyPayload struct {
	ContactID string `json:"contactId"`
	MessageID string `json:"messageId"`
	UserID    string `json:"userId"`
	Body      string `json:"body"`
	ToID      string `json:"toId"`
	Channel   string `json:"channel"`
}

// handleDeliver posts an outgoing message to the account's webhook (or provider) and records the
// attempt. Retryable failures return an error so asynq retries on WEBHOOK_RETRY_SCHEDULE (a longer
// Retry-After is honoured); final ones are recorded as failed and end the task.
func (h *Handler) handleDeliver(ctx context.Context, t *asynq.Task) error {
	p, err := payloadOf[DeliverPayload](t)
	if err != nil {
		return err
	}
	m, err := h.Store.MessageForWork(ctx, p.MessageID)
	if err != nil {
		return gone(err)
	}
	if m.Status == models.StatusSent || m.DeliveryRound != p.Round || m.Direction != models.DirectionOutgoing {
		return nil // delivered already, or superseded by a redeliver
	}
	retried, _ := asynq.GetRetryCount(ctx)
	next, err := h.attempt(ctx, m, m.Account, p.Prior+retried, t.Payload())
	if err != nil || next == nil {
		return err
	}
	return &retryAt{err: errors.New(*m.Error), at: *next}
}

// deliverInline makes the first delivery attempt of a reply the bot has just stored, in the bot's own
// task: when the receiver accepts it, the message is answered with one task instead of two. A process
// that dies before the attempt is recorded leaves the reply pending: the bot task's rerun, or the
// sweep, delivers it again under the same webhook-id.
func (h *Handler) deliverInline(ctx context.Context, m *models.Message, acc *models.Account) error {
	return h.firstAttempt(ctx, m, acc, h.recordAttemptOf(m.ID))
}

// deliverFirst sends the bot's reply, built but not stored (models.NewBotReply), and then stores it
// with the outcome of that first attempt, the attempt, and its incoming message as answered, in one
// write (models.RecordBotReply), instead of storing it pending, sending it, and recording the attempt.
// It is for a reply that a rerun of the bot task writes again word for word under the same id: a
// process that dies between the receiver's answer and the record leaves the incoming message owed a
// reply, and the rerun (or the sweep's) sends the same reply under the same webhook-id.
func (h *Handler) deliverFirst(ctx context.Context, reply *models.Message, acc *models.Account) error {
	return h.firstAttempt(ctx, reply, acc, func(ctx context.Context, out models.AttemptOutcome) error {
		_, err := h.Store.RecordBotReply(ctx, reply, out)
		return err
	})
}

// firstAttempt makes the first delivery attempt of m inside another task (the bot's) and records it
// with record. A failed attempt that may be retried leaves a delivery task on the critical queue, due
// at the retry time the attempt recorded, which carries on with the rest of the schedule.
func (h *Handler) firstAttempt(ctx context.Context, m *models.Message, acc *models.Account, record func(context.Context, models.AttemptOutcome) error) error {
	payload, err := json.Marshal(DeliverPayload{MessageID: m.ID, Round: m.DeliveryRound})
	if err != nil {
		return err
	}
	next, err := h.attemptWith(ctx, m, acc, 0, payload, record)
	if errors.Is(err, asynq.SkipRetry) {
		return nil // failed for good, and recorded so: the bot's task itself succeeded
	}
	if err != nil || next == nil {
		return err
	}
	return h.Queue.DeliverRetry(ctx, m.ID, m.DeliveryRound, 1, *next)
}

// attempt makes attempt number n (0-based, within the message's delivery round) to deliver m and
// records it. It returns when the next attempt is due, or nil when there is none (sent, or failed for
// good); m.Error is the failure's error then.
func (h *Handler) attempt(ctx context.Context, m *models.Message, acc *models.Account, n int, payload []byte) (*time.Time, error) {
	return h.attemptWith(ctx, m, acc, n, payload, h.recordAttemptOf(m.ID))
}

// recordAttemptOf records an attempt of a stored message (models.RecordAttempt).
func (h *Handler) recordAttemptOf(messageID string) func(context.Context, models.AttemptOutcome) error {
	return func(ctx context.Context, out models.AttemptOutcome) error {
		return h.Store.RecordAttempt(ctx, messageID, out)
	}
}

// attemptWith is attempt with the attempt recorded by record.
func (h *Handler) attemptWith(ctx context.Context, m *models.Message, acc *models.Account, n int, payload []byte,
	record func(context.Context, models.AttemptOutcome) error) (*time.Time, error) {
	transport, ok := h.transports()[m.Transport]
	if !ok {
		return nil, fmt.Errorf("deliver %s: unknown transport %q: %w", m.ID, m.Transport, asynq.SkipRetry)
	}
	if m.Author == models.AuthorSystem {
		// A consent keyword's answer goes after any campaign message to the contact that is already
		// with its channel (models.DecideAttempt): the receiver never gets an opening after the
		// opt-out's confirmation. It waits without spending a retry.
		wait, err := h.Store.HandoverWait(ctx, m.ContactID)
		if err != nil {
			return nil, err
		}
		if wait > 0 {
			// Looked at again every second: the handover usually ends long before its lease.
			return nil, &rateLimited{retryAfter: min(wait, time.Second)}
		}
	}
	// The door decides this attempt once; the transport follows its decision. Nothing is held
	// across the call.
	d, err := h.Store.DecideAttempt(ctx, m, h.Config.WebhookTimeout)
	if err != nil {
		return nil, err
	}
	var res DeliveryResult
	if !d.Allowed() {
		// Written before the contact opted out on the channel (or while the bot was thinking), or
		// outside the channel's window now: it does not go, and no call is made.
		res = DeliveryResult{Error: d.Reason}
	} else {
		res = transport.Deliver(ctx, m, acc, d)
	}
	deliveryLatency.WithLabelValues(m.Transport).Observe(res.Duration.Seconds())
	h.Log.InfoContext(ctx, "delivery", "message_id", m.ID, "account_id", m.AccountID, "transport", m.Transport,
		"status_code", res.StatusCode, "ok", res.OK(), "attempt", n+1, "duration_ms", res.Duration.Milliseconds())
	out := models.AttemptOutcome{StatusCode: res.StatusCode, Error: res.Error, Duration: res.Duration, ProviderID: res.ProviderID}
	if res.OK() {
		out.Error = ""
		deliveries.WithLabelValues(m.Transport, "sent").Inc()
		if err := h.recordSent(ctx, m, record, out); err != nil {
			return nil, err
		}
		if m.Author == models.AuthorCampaign {
			return nil, h.settleOpening(ctx, m.ID, true, time.Now(), "")
		}
		return nil, nil
	}
	schedule := h.Config.WebhookRetrySchedule
	final := !res.Retryable || n >= len(schedule)
	if !final {
		next := nextAttempt(schedule, n, payload, res.RetryAfter)
		out.NextAttemptAt = &next
	}
	if err := record(ctx, out); err != nil {
		return nil, err
	}
	m.Error = &res.Error
	if final {
		deliveries.WithLabelValues(m.Transport, "failed").Inc()
		if m.Author == models.AuthorCampaign {
			if err := h.settleOpening(ctx, m.ID, false, time.Now(), res.Error); err != nil {
				return nil, err
			}
		}
		return nil, fmt.Errorf("deliver %s: %s: %w", m.ID, res.Error, asynq.SkipRetry)
	}
	deliveries.WithLabelValues(m.Transport, "retry").Inc()
	return out.NextAttemptAt, nil
}

// DeliverRetry enqueues the rest of a delivery round whose first prior attempts were made outside a
// delivery task (the bot's inline attempt), to run at its next attempt's time.
func (q *Queue) DeliverRetry(ctx context.Context, messageID string, round, prior int, at time.Time) error {
	return q.enqueue(ctx, TypeWebhookDeliver, DeliverPayload{MessageID: messageID, Round: round, Prior: prior},
		asynq.TaskID(deliverTaskID(messageID, round)), asynq.Queue(QueueDeliveries),
		asynq.MaxRetry(max(len(q.cfg.WebhookRetrySchedule)-prior, 0)), asynq.ProcessAt(at))
}

// settleOpening records on a campaign send how its opening's delivery ended, and queues the first
// follow-up of a delivered one: a follow-up's delay counts from its opening's delivery, and a contact
// whose opening failed gets none. For any other message it changes nothing.
func (h *Handler) settleOpening(ctx context.Context, messageID string, delivered bool, at time.Time, failure string) error {
	due, err := h.Store.SettleOpening(ctx, messageID, delivered, at, failure)
	if err != nil || due == nil {
		return err
	}
	return h.Queue.FollowUp(ctx, due.SendID, due.Step, due.DueAt)
}

// recordPatience is how long recordSent retries the record of an accepted delivery after an error
// that does not say our database is out of reach. Such an error may pass (a deadlock, SQLite's busy
// database, a statement cancelled under load), and giving up sends the message again; one that does
// not pass (a bug, a schema this binary does not know) holds the worker's slot meanwhile, which slows
// a worker that cannot record down rather than letting it send every message twice.
const recordPatience = 30 * time.Second

// recordSent records a delivery the receiver accepted. Failing here would retry the task and send the
// message again, so the record is retried, never the send: an outage of our own database is waited
// out (until the task's deadline), any other error for recordPatience, each logged at ERROR. Only an
// error that outlasts that, or a worker that dies meanwhile, leaves a repeat, which the receiver drops
// by its webhook-id.
func (h *Handler) recordSent(ctx context.Context, m *models.Message, record func(context.Context, models.AttemptOutcome) error, out models.AttemptOutcome) error {
	var giveUpAt time.Time
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		err := record(ctx, out)
		if err == nil {
			return nil
		}
		if !models.IsUnavailable(err) {
			if giveUpAt.IsZero() {
				giveUpAt = time.Now().Add(recordPatience)
			}
			giveUp := time.Now().After(giveUpAt)
			h.Log.ErrorContext(ctx, "delivery accepted but not recorded", "message_id", m.ID, "account_id", m.AccountID,
				"error", err.Error(), "retrying_record", !giveUp)
			if giveUp {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
	}
}
