package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"funnelchat/models"
)

// Campaign task types.
const (
	TypeCampaignOpening  = "campaign:opening"
	TypeCampaignFollowUp = "campaign:followup"
)

// OpeningPayload names the campaign send whose opening message to write.
type OpeningPayload struct {
	SendID string `json:"sendId"`
}

// FollowUpPayload names a send's follow-up step (1-based).
type FollowUpPayload struct {
	SendID string `json:"sendId"`
	Step   int    `json:"step"`
}

// openingBurst is how many opening messages go out at once before pacing starts (one to
// three contacts added at once are sent immediately); the limiter allows no burst beyond it.
const openingBurst = 3

// Opening enqueues the opening message of a campaign send, to run at its due time.
func (q *Queue) Opening(ctx context.Context, send models.DueSend) error {
	return q.enqueue(ctx, TypeCampaignOpening, OpeningPayload{SendID: send.SendID},
		asynq.TaskID(openingTaskID(send.SendID)), asynq.Queue(QueueOpenings), asynq.ProcessAt(notBefore(send.DueAt)), asynq.MaxRetry(5))
}

// openingTaskID is a campaign send's opening task: one per send.
func openingTaskID(sendID string) string { return "opening:" + sendID }

// Openings enqueues several opening messages; it stops at the first error (the sweep enqueues the rest).
func (q *Queue) Openings(ctx context.Context, sends []models.DueSend) error {
	for _, s := range sends {
		if err := q.Opening(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// FollowUp enqueues follow-up number step of a send at its due time.
func (q *Queue) FollowUp(ctx context.Context, sendID string, step int, at time.Time) error {
	return q.enqueue(ctx, TypeCampaignFollowUp, FollowUpPayload{SendID: sendID, Step: step},
		asynq.TaskID(fmt.Sprintf("followup:%s:%d", sendID, step)), asynq.Queue(QueueLow), asynq.ProcessAt(notBefore(at)), asynq.MaxRetry(5))
}

// rateLimited reschedules a task that the pacing limiter held back; it does not count as a failure, so
// it spends none of the task's retries.
type rateLimited struct{ retryAfter time.Duration }

func (e *rateLimited) Error() string { return fmt.Sprintf("paced: next slot in %s", e.retryAfter) }

// isFailure is the worker's asynq IsFailure: whether an error spends one of the task's retries.
func isFailure(err error) bool {
	var rl *rateLimited
	var ext *externalError
	switch {
	case errors.As(err, &rl):
		return false
	case errors.As(err, &ext):
		return true // the model, a customer URL or a provider failed: that spends a retry
	case models.IsUnavailable(err):
		// Our own database or Redis is down or restarting: the task waits it out, however long,
		// instead of running out of retries and being archived under its task id, where neither a
		// later retry nor the sweep could bring the work back.
		return false
	}
	return true
}

// externalError marks the failure of a service outside this one (the bot's model), so that a network
// error from it counts as a failed try even though it looks like an outage of our own dependencies.
type externalError struct{ err error }

func (e *externalError) Error() string { return e.err.Error() }
func (e *externalError) Unwrap() error { return e.err }

// handleOpening writes and sends a campaign's opening message to one contact, at the campaign's pace.
func (h *Handler) handleOpening(ctx context.Context, t *asynq.Task) error {
	p, err := payloadOf[OpeningPayload](t)
	if err != nil {
		return err
	}
	send, err := h.Store.CampaignSend(ctx, p.SendID)
	if err != nil {
		return gone(err)
	}
	if send.Status != models.SendQueued && send.Status != models.SendDeferred {
		return nil
	}
	campaign, err := h.Store.Campaign(ctx, send.CampaignID)
	if err != nil {
		return err
	}
	if campaign.Status != models.CampaignLive {
		// Held until the campaign is live again; resuming queues it anew, with a new slot.
		if err := h.pacer.release(ctx, campaign.AccountID, campaign.Channel, send.ID); err != nil {
			return err
		}
		return h.Store.SetSendStatus(ctx, send.ID, models.SendHeld, "")
	}
	contact, err := h.Store.ContactByID(ctx, send.AccountID, send.ContactID)
	if err != nil {
		return err
	}
	if campaign.OpeningDelayMinutes > 0 {
		wrote, err := h.Store.ContactWroteSince(ctx, contact.ID, send.CreatedAt)
		if err != nil {
			return err
		}
		if wrote {
			return h.Store.SetSendStatus(ctx, send.ID, models.SendSkipped, "the lead wrote first")
		}
	}
	route, d, err := h.campaignDecision(ctx, campaign, contact)
	if err != nil {
		return err
	}
	switch d.Verdict {
	case models.DoNotSend:
		if d.Code() == models.ReasonOptedOut {
			return h.Store.SetSendStatus(ctx, send.ID, models.SendSuppressed, d.Reason)
		}
		campaignSendFailures.Inc()
		return h.Store.SetSendStatus(ctx, send.ID, models.SendFailed, d.Reason)
	case models.SendLater:
		// Quiet hours: deferred, never dropped; the task runs again at the window's start and takes
		// its pacing slot then.
		if err := h.Store.DeferSend(ctx, send.ID, d.NotBefore); err != nil {
			return err
		}
		return &rateLimited{retryAfter: time.Until(d.NotBefore)}
	}
	// The text of the variant the send recorded, retired or not (variants keep their text once used).
	opening := campaign.OpeningFor(send.Variant)
	if opening == "" {
		return h.Store.SetSendStatus(ctx, send.ID, models.SendFailed, "the campaign has no opening text for its variant "+models.VariantLetter(send.Variant))
	}
	if err := h.pace(ctx, campaign, send.ID); err != nil {
		return err
	}
	m, err := h.Store.WriteOpening(ctx, send, models.OutgoingMessage{
		Campaign: campaign, Contact: contact, Body: models.Personalize(opening, contact), ToID: route.ToID,
	})
	if err != nil || m == nil {
		return err
	}
	campaignSends.Inc()
	h.Log.InfoContext(ctx, "campaign opening written", "campaign_id", campaign.ID, "message_id", m.ID, "account_id", campaign.AccountID)
	// Its first follow-up is queued once it is delivered (settleOpening).
	return h.Queue.Deliver(ctx, m.ID, m.DeliveryRound)
}

// campaignDecision asks the outgoing door about a campaign's message to the contact: where it goes
// (the campaign's channel, at the contact's address there) and whether it may go now. A contact it
// refuses (no address on the channel; on Messenger and Instagram, not within Meta's 24-hour window;
// on WhatsApp, outside it with no approved template) gets a failed send with the reason rather than
// being dropped, and no provider is called; one who opted out on the channel gets a suppressed send;
// one inside its quiet hours a deferred send, sent when they end.
func (h *Handler) campaignDecision(ctx context.Context, c *models.Campaign, contact *models.Contact) (models.Route, models.Decision, error) {
	route, err := h.Store.CampaignRoute(ctx, c, contact)
	if err != nil {
		return route, models.Decision{}, err
	}
	d, err := h.Store.Decide(ctx, models.Outgoing{
		Purpose: models.PurposeCampaign, AccountID: c.AccountID, ContactID: contact.ID, Route: route, Campaign: c, Contact: contact,
	})
	return route, d, err
}

// sleepBeforeSlot is how close to its slot a send waits in the handler rather than being rescheduled:
// asynq schedules in whole seconds, so a rescheduled task wakes up to about a second and a half early.
const sleepBeforeSlot = 2 * time.Second

// pace waits for the send's slot for the campaign's account and channel at the campaign's rate. A slot
// further away reschedules the task (without spending a retry) to wake shortly before it.
func (h *Handler) pace(ctx context.Context, c *models.Campaign, sendID string) error {
	rate := h.Config.CampaignSendsPerMinute
	if c.SendRatePerMinute != nil {
		rate = *c.SendRatePerMinute
	}
	wait, err := h.pacer.reserve(ctx, c.AccountID, c.Channel, sendID, rate)
	if err != nil {
		return err
	}
	if wait > sleepBeforeSlot {
		return &rateLimited{retryAfter: wait - time.Second}
	}
	if wait > 0 {
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// handleFollowUp writes follow-up number step when the lead has not replied since the opening.
func (h *Handler) handleFollowUp(ctx context.Context, t *asynq.Task) error {
	p, err := payloadOf[FollowUpPayload](t)
	if err != nil {
		return err
	}
	send, err := h.Store.CampaignSend(ctx, p.SendID)
	if err != nil {
		return gone(err)
	}
	if send.Status != models.SendSent || send.FollowUpsDone || send.FollowUpStep != p.Step-1 || send.SentAt == nil || send.MessageID == nil {
		return nil
	}
	campaign, err := h.Store.Campaign(ctx, send.CampaignID)
	if err != nil {
		return err
	}
	if !campaign.FollowUpsEnabled {
		return h.Store.StopFollowUps(ctx, send.ID)
	}
	if campaign.Status != models.CampaignLive {
		// Held: resuming the campaign queues it again, to go out at the pacing rate.
		return h.Store.HoldFollowUp(ctx, send.ID)
	}
	// Any reply since the opening was written counts, also one that came before its delivery ended.
	opening, err := h.Store.Message(ctx, *send.MessageID)
	if err != nil {
		return err
	}
	replied, err := h.Store.ContactWroteSince(ctx, send.ContactID, opening.CreatedAt)
	if err != nil {
		return err
	}
	if replied {
		return h.Store.StopFollowUps(ctx, send.ID) // any reply cancels the rest
	}
	contact, err := h.Store.ContactByID(ctx, send.AccountID, send.ContactID)
	if err != nil {
		return err
	}
	route, d, err := h.campaignDecision(ctx, campaign, contact)
	if err != nil {
		return err
	}
	switch d.Verdict {
	case models.DoNotSend:
		h.Log.InfoContext(ctx, "follow-up not sent", "send_id", send.ID, "step", p.Step, "reason", d.Reason)
		return h.Store.StopFollowUps(ctx, send.ID)
	case models.SendLater:
		return &rateLimited{retryAfter: time.Until(d.NotBefore)}
	}
	// Follow-ups share the channel's pace with openings, so that the follow-ups a pause held do not
	// all go at once when the campaign is live again.
	if err := h.pace(ctx, campaign, fmt.Sprintf("%s:followup:%d", send.ID, p.Step)); err != nil {
		return err
	}
	req, err := h.campaignBotRequest(ctx, campaign, contact, nil, nil)
	if err != nil {
		return err
	}
	req.FollowUp = true
	resp, err := h.Bot.Reply(ctx, req)
	if err != nil {
		return &externalError{err}
	}
	if resp.Handoff || resp.Text == "" {
		return h.Store.StopFollowUps(ctx, send.ID)
	}
	m, err := h.Store.WriteFollowUp(ctx, send, p.Step, models.OutgoingMessage{Campaign: campaign, Contact: contact, Body: resp.Text, ToID: route.ToID})
	if err != nil || m == nil {
		return err
	}
	if err := h.Queue.Deliver(ctx, m.ID, m.DeliveryRound); err != nil {
		return err
	}
	if delays := campaign.FollowUpDelaysHours; p.Step < len(delays) {
		return h.Queue.FollowUp(ctx, send.ID, p.Step+1, send.SentAt.Add(hours(delays[p.Step])))
	}
	return nil
}

func hours(h float64) time.Duration { return time.Duration(h * float64(time.Hour)) }
