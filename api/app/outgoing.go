package app

import (
	"context"
	"time"

	"funnelchat/models"
)

// The outgoing use cases store a message as the outgoing door decides (models.Store.Decide) and queue
// its delivery. A message stored pending but not queued (Redis refused) is delivered by the sweep: the
// request still succeeds, because a client retrying a send would send it twice.

// TeamReply stores a team member's reply to the contact (on channel, when given) as written by the
// account's user authorID ("": its owner, for an API key) and queues its delivery; it pauses the bot
// for the contact. Errors: those of HumanReply.
func (a *App) TeamReply(ctx context.Context, accountID, contactID, authorID, body, channel string) (*models.Message, error) {
	m, err := a.store.HumanReply(ctx, accountID, contactID, authorID, body, channel)
	if err != nil {
		return nil, err
	}
	a.deliver(ctx, m)
	return m, nil
}

// SendCustom stores a message to a custom-channel contact and queues its delivery to the account's
// webhook. Errors: those of SendCustom.
func (a *App) SendCustom(ctx context.Context, accountID string, in models.CustomSendInput) (*models.Message, *models.Contact, error) {
	m, contact, err := a.store.SendCustom(ctx, accountID, in)
	if err != nil {
		return nil, nil, err
	}
	a.deliver(ctx, m)
	return m, contact, nil
}

// Redeliver queues a failed outgoing message again, as the outgoing door decides it now: sent at once,
// deferred to the end of the contact's quiet hours (a campaign's message), or left failed with the
// door's reason (the contact opted out since). Errors: those of Redeliver.
func (a *App) Redeliver(ctx context.Context, accountID, messageID string) (*models.Message, error) {
	m, err := a.store.Redeliver(ctx, accountID, messageID)
	if err != nil {
		return nil, err
	}
	a.deliver(ctx, m)
	return m, nil
}

// RetryAllFailed queues again up to models.MaxRetryAll of the account's failed messages and returns
// how many; safe to call twice or from two users at once (each message moves once).
func (a *App) RetryAllFailed(ctx context.Context, accountID string) (int, error) {
	moved, err := a.store.RetryAllFailed(ctx, accountID)
	for _, m := range moved {
		a.deliver(ctx, m)
	}
	return len(moved), err
}

// deliver queues a stored message's delivery, when it is pending (the door may have stored it failed),
// at its NextAttemptAt when the door deferred it.
func (a *App) deliver(ctx context.Context, m *models.Message) {
	if m.Status != models.StatusPending {
		return
	}
	enqCtx, cancel := context.WithTimeout(ctx, EnqueueTimeout)
	defer cancel()
	enqueue := func() error { return a.queue.Deliver(enqCtx, m.ID, m.DeliveryRound) }
	if m.NextAttemptAt != nil && m.NextAttemptAt.After(time.Now()) {
		enqueue = func() error { return a.queue.DeliverRetry(enqCtx, m.ID, m.DeliveryRound, 0, *m.NextAttemptAt) }
	}
	if err := enqueue(); err != nil {
		a.log.WarnContext(ctx, "outgoing stored, delivery not enqueued; the sweep will deliver it", "message_id", m.ID,
			"error", err.Error())
	}
}
