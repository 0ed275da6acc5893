package jobs

import (
	"context"
	"errors"
	"time"

	"github.com/hibiken/asynq"

	"funnelchat/models"
)

// conversationWindow is how many recent messages the bot sees.
const conversationWindow = 20

// handleBotReply answers one incoming message. It runs at most one reply into the database however
// often it runs (the reply is keyed by the incoming message), skips contacts whose bot is paused,
// hands off to a human when the bot asks for one, and raises an alert when the bot keeps failing.
func (h *Handler) handleBotReply(ctx context.Context, t *asynq.Task) error {
	p, err := payloadOf[BotReplyPayload](t)
	if err != nil {
		return err
	}
	// The message, its contact and its account in one query.
	in, err := h.Store.MessageForWork(ctx, p.MessageID)
	if err != nil {
		return gone(err)
	}
	retried, _ := asynq.GetRetryCount(ctx)
	maxRetry, _ := asynq.GetMaxRetry(ctx)
	return h.answer(ctx, in, botTry{retried: retried + p.Prior, maxRetry: maxRetry + p.Prior})
}

// botTry is where a bot reply stands in its retries: tries made before this one, and how many retries it
// has in all. (A reply that failed in a batch, bot_batch.go, goes on in a task of its own: its payload's
// Prior counts the batch's try.)
type botTry struct{ retried, maxRetry int }

// answer is the bot's work on one incoming message, read with its contact and account (MessageForWork
// or MessagesForWork): a task for that message alone, or one message of a batch.
func (h *Handler) answer(ctx context.Context, in *models.Message, try botTry) error {
	if in.BotStatus != nil && *in.BotStatus == models.BotDone {
		return h.resumeReply(ctx, in)
	}
	if in.BotStatus == nil || *in.BotStatus != models.BotPending {
		return nil // skipped or handed off already
	}
	// A consent keyword is the service's to answer, not the bot's. The api handles it before it queues
	// this task; a message whose api died in between gets here through the sweep.
	if kw, err := h.Store.HandleKeyword(ctx, in); err != nil || kw != nil {
		if err != nil || kw.Reply == nil {
			return err
		}
		return h.Queue.Deliver(ctx, kw.Reply.ID, kw.Reply.DeliveryRound)
	}
	contact, payer := in.Contact, in.Account
	if (payer != nil && !payer.BotActive) || contact.BotPaused {
		// The account switched its bot off (PUT /v1/settings/bot {"active":false}), or the team took
		// the conversation: no reply; the message stays stored. A request in plain words to hear no
		// more is still honoured: with no bot to read it, the plain-language rule does.
		if in.MessageType == models.MessageTypeText && models.AsksToOptOut(in.Body) {
			return h.optOut(ctx, in)
		}
		return h.Store.SetBotStatus(ctx, in.ID, models.BotSkipped)
	}
	// The reply goes back where the message came from (models.AnswerRoute), if the outgoing door lets
	// it; asked before the model is, so that a reply that may not go costs nothing.
	d, err := h.Store.Decide(ctx, models.Outgoing{
		Purpose: models.PurposeBotReply, AccountID: in.AccountID, ContactID: in.ContactID, RepliesTo: in, Contact: contact,
		Route: models.AnswerRoute(in),
	})
	if err != nil {
		return err
	}
	if !d.Allowed() {
		h.Log.InfoContext(ctx, "bot reply not sent", "message_id", in.ID, "account_id", in.AccountID, "reason", d.Reason)
		return h.Store.SetBotStatus(ctx, in.ID, models.BotSkipped)
	}
	if !h.Store.CanPayBotReply(ctx, payer, h.botReplyCost()) {
		return h.outOfCredits(ctx, in)
	}
	campaign, err := h.conversationCampaign(ctx, in, contact)
	if err != nil {
		return err
	}
	req, err := h.campaignBotRequest(ctx, campaign, contact, payer, in)
	if err != nil {
		return err
	}

	started := time.Now()
	resp, err := h.Bot.Reply(ctx, req)
	botLatency.Observe(time.Since(started).Seconds())
	if err != nil {
		if try.retried < try.maxRetry {
			return &externalError{err}
		}
		// Out of retries: a person answers instead of nobody.
		h.Log.WarnContext(ctx, "bot gave up", "message_id", in.ID, "account_id", in.AccountID, "error", err.Error())
		alert, aerr := h.Store.BotFailed(ctx, in, "the bot could not answer: "+err.Error())
		if aerr != nil {
			return aerr
		}
		return h.sendAlert(ctx, alert)
	}
	if resp.OptOut {
		return h.optOut(ctx, in)
	}
	if resp.Goal {
		if err := h.reachGoal(ctx, in, campaign, resp.GoalSummary); err != nil {
			return err
		}
		if resp.Text == "" && !resp.Handoff {
			return h.Store.SetBotStatus(ctx, in.ID, models.BotSkipped) // the model wrote nothing to send
		}
	}
	if resp.Handoff {
		alert, err := h.Store.Handoff(ctx, in, resp.HandoffReason)
		if err != nil {
			return err
		}
		h.Log.InfoContext(ctx, "handoff to a human", "message_id", in.ID, "account_id", in.AccountID, "alert_id", alert.ID)
		if alert.HandoffReply != nil {
			// The customer hears that a person is coming; the sweep delivers it if this enqueue is lost.
			if err := h.Queue.Deliver(ctx, alert.HandoffReply.ID, alert.HandoffReply.DeliveryRound); err != nil {
				return err
			}
		}
		return h.sendAlert(ctx, alert)
	}
	var campaignID *string
	if campaign != nil {
		campaignID = &campaign.ID
	}
	if h.sendsBeforeStoring(payer) {
		reply := models.NewBotReply(in, campaignID, resp.Text)
		reply.Contact = contact // its consent as read when this task began, a moment ago
		return h.deliverFirst(ctx, reply, payer)
	}
	reply, event, err := h.Store.CreateBotReply(ctx, in, campaignID, resp.Text, payer, h.botReplyCost())
	if errors.Is(err, models.ErrNoCredits) {
		return h.outOfCredits(ctx, in)
	}
	if err != nil {
		return err
	}
	if event != nil {
		if err := h.Queue.Recharge(ctx, *event); err != nil {
			return err
		}
	}
	if reply.Status != models.StatusPending {
		return nil // this task ran before and its delivery went on already
	}
	if reply.Contact == nil {
		reply.Contact = contact // a reply stored by an earlier run: the consent read as this task began
	}
	return h.deliverInline(ctx, reply, payer)
}

// reachGoal records the goal the model saw reached in answer to in: the campaign's whose voice answered
// (the account's own bot's when campaign is nil). A retried task finds it recorded and changes nothing.
func (h *Handler) reachGoal(ctx context.Context, in *models.Message, campaign *models.Campaign, summary string) error {
	var campaignID *string
	if campaign != nil {
		campaignID = &campaign.ID
	}
	_, created, err := h.Store.ReachGoal(ctx, in.AccountID, in.ContactID, models.GoalInput{
		CampaignID: campaignID, Source: models.GoalSourceBot, Summary: summary, MessageID: &in.ID,
	})
	if models.ErrorCode(err) == models.CodeNotFound {
		return nil // the contact or campaign was deleted meanwhile: nothing to count
	}
	if err != nil {
		return err
	}
	if created {
		h.Log.InfoContext(ctx, "goal reached", "message_id", in.ID, "account_id", in.AccountID, "campaign_id", derefString(campaignID))
	}
	return nil
}

// resumeReply finishes the work of a bot task that ran before: when its process died after storing
// the reply and before its inline delivery was recorded, the reply is still pending, and is delivered
// again (under the same webhook-id) by a delivery task.
func (h *Handler) resumeReply(ctx context.Context, in *models.Message) error {
	reply, err := h.Store.ReplyTo(ctx, in.ID)
	if models.ErrorCode(err) == models.CodeNotFound {
		return nil
	}
	if err != nil || reply.Status != models.StatusPending {
		return err
	}
	return h.Queue.Deliver(ctx, reply.ID, reply.DeliveryRound)
}

// conversationCampaign is the campaign whose voice answers a message: the one the message names, else
// the contact's latest campaign; nil (the account's defaults) when neither exists.
func (h *Handler) conversationCampaign(ctx context.Context, in *models.Message, contact *models.Contact) (*models.Campaign, error) {
	id := in.CampaignID
	if id == nil {
		id = contact.ConversationCampaignID
	}
	if id == nil {
		return nil, nil
	}
	c, err := h.Store.Campaign(ctx, *id)
	if models.ErrorCode(err) == models.CodeNotFound || (err == nil && c.AccountID != in.AccountID) {
		return nil, nil
	}
	return c, err
}

// campaignBotRequest gathers the bot's context: the campaign's instructions, goal and language (the
// account's when campaign is nil; acc is the contact's account when the caller has it loaded already)
// and the conversation up to the message being answered (all of it when answering is nil, for a
// follow-up). A bot that reads only the message it answers (historyReader) gets just that turn, with no
// query for the rest.
func (h *Handler) campaignBotRequest(ctx context.Context, campaign *models.Campaign, contact *models.Contact, acc *models.Account, answering *models.Message) (BotRequest, error) {
	req := BotRequest{FirstName: contact.FirstName}
	if campaign != nil {
		req.Instructions, req.Goal, req.Language = campaign.BotInstructions, campaign.Goal, campaign.Language
	} else {
		if acc == nil {
			var err error
			if acc, err = h.Store.AccountByID(ctx, contact.AccountID); err != nil {
				return BotRequest{}, err
			}
		}
		req.Instructions, req.Goal, req.Language = acc.BotInstructions, acc.BotGoal, acc.BotLanguage
	}
	if r, ok := h.Bot.(historyReader); ok && !r.readsHistory() {
		if answering != nil {
			req.History = []BotTurn{botTurn(answering)}
		}
		return req, nil
	}
	msgs, err := h.Store.RecentConversation(ctx, contact.ID, conversationWindow)
	if err != nil {
		return BotRequest{}, err
	}
	for i := range msgs {
		if answering != nil && msgs[i].ID > answering.ID {
			break // written after the message being answered
		}
		req.History = append(req.History, botTurn(&msgs[i]))
	}
	return req, nil
}

// sendsBeforeStoring says whether this worker's bot replies go out before they are stored (deliverFirst:
// one write per answered message instead of two). That takes a bot whose rerun writes the same reply
// (repeatableBot), so that a process dying between the send and the record cannot leave the receiver
// and the conversation with two different texts under one id, and that answers at once, so that the
// contact's consent read as the task began is still current when the reply goes; and a reply nobody
// pays for, since a charged one takes its credits before it is sent.
func (h *Handler) sendsBeforeStoring(payer *models.Account) bool {
	r, ok := h.Bot.(repeatableBot)
	return ok && r.repeatable() && !models.ChargesBotReply(payer, h.botReplyCost())
}

// repeatableBot is a Bot that says whether it answers the same message with the same reply every
// time, at once (the offline bot). A model does not.
type repeatableBot interface {
	repeatable() bool
}

// historyReader is a Bot that says whether it reads the conversation before the message it answers.
// One that does not (the offline bot) saves the worker a query per reply.
type historyReader interface {
	readsHistory() bool
}

// botTurn is a stored message as the bot sees it.
func botTurn(m *models.Message) BotTurn {
	role := BotRoleUser
	if m.Direction == models.DirectionOutgoing {
		role = BotRoleAssistant
	}
	text := m.Body
	if m.MessageType == models.MessageTypeReaction {
		text = "(reacted with " + m.Body + ")"
	}
	return BotTurn{Role: role, Text: text}
}

// sendAlert enqueues an alert's webhook delivery when the account has an alert webhook.
func (h *Handler) sendAlert(ctx context.Context, alert *models.Alert) error {
	if alert.WebhookStatus != models.AlertWebhookPending {
		return nil
	}
	return h.Queue.Alert(ctx, alert.ID)
}

// outOfCredits stops the bot for a message its sub-account cannot pay for: the message stays stored,
// and the team is alerted instead of the contact being ignored silently.
func (h *Handler) outOfCredits(ctx context.Context, in *models.Message) error {
	alert, err := h.Store.BotFailed(ctx, in, "out of credits: the bot did not answer; grant credits to resume")
	if err != nil {
		return err
	}
	return h.sendAlert(ctx, alert)
}

var errNoWebhook = errors.New("no webhook URL configured: set one with PUT /v1/settings/webhook, then redeliver")

func derefString(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// optOut applies the contact's request, in its own words, to hear no more: the opt-out keyword's
// effect, and its confirmation instead of any text of the bot's.
func (h *Handler) optOut(ctx context.Context, in *models.Message) error {
	kw, err := h.Store.OptOutByBot(ctx, in)
	if err != nil || kw.Reply == nil {
		return err
	}
	h.Log.InfoContext(ctx, "opt-out in plain words", "message_id", in.ID, "account_id", in.AccountID)
	return h.Queue.Deliver(ctx, kw.Reply.ID, kw.Reply.DeliveryRound)
}
