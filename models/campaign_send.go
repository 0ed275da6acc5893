package models

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// Campaign send states: what happened to the person, following the opening message.
const (
	SendQueued  = "queued"  // owed, waiting for its time and the pacing limiter
	SendHeld    = "held"    // the campaign was not live when its turn came; resuming queues it again
	SendPending = "pending" // the opening was written; its delivery is in progress or waits for a retry
	SendSent    = "sent"    // the opening was delivered: the receiver or provider accepted it
	SendSkipped = "skipped" // not needed, with the reason in detail (the lead wrote first, or left the list: RemoveFromList)
	SendFailed  = "failed"  // the contact cannot be reached, or the opening's delivery failed; detail says why
	// SendSuppressed: not sent because the contact opted out on the campaign's channel (detail OPTED_OUT).
	SendSuppressed = "suppressed"
	// SendDeferred: its time fell in the contact's quiet hours; due_at is when it may go (notBefore).
	SendDeferred = "deferred"
)

// SendCounts is how a campaign's opening messages stand: queued (waiting for their time, the pacing
// limiter or the campaign to be live again), pending (written, being delivered or waiting for a
// retry), sent (delivered), failed (the contact cannot be reached on the campaign's channel, or the
// delivery failed for good), and skipped (the lead wrote first, or was removed from the list, so no
// opening was needed).
type SendCounts struct {
	Queued  int `json:"queued"`
	Pending int `json:"pending"`
	Sent    int `json:"sent"`
	Failed  int `json:"failed"`
	Skipped int `json:"skipped"`
	// Suppressed: the contact opted out on the campaign's channel; Deferred: waiting for the end of
	// the contact's quiet hours.
	Suppressed int `json:"suppressed"`
	Deferred   int `json:"deferred"`
}

// CountSends fills Sends of each campaign with its sends by outcome, in one query.
func (s *Store) CountSends(ctx context.Context, campaigns ...*Campaign) error {
	if len(campaigns) == 0 {
		return nil
	}
	ids := make([]string, len(campaigns))
	byID := make(map[string]*SendCounts, len(campaigns))
	for i, c := range campaigns {
		ids[i], c.Sends = c.ID, &SendCounts{}
		byID[c.ID] = c.Sends
	}
	var rows []struct {
		CampaignID string `bun:"campaign_id"`
		Status     string `bun:"status"`
		N          int    `bun:"n"`
	}
	err := s.db.NewSelect().Model((*CampaignSend)(nil)).ColumnExpr("campaign_id, status, count(*) AS n").
		Where("campaign_id IN (?)", bun.In(ids)).Group("campaign_id", "status").Scan(ctx, &rows)
	if err != nil {
		return fmt.Errorf("count sends: %w", err)
	}
	for _, r := range rows {
		counts := byID[r.CampaignID]
		switch r.Status {
		case SendQueued, SendHeld:
			counts.Queued += r.N
		case SendPending:
			counts.Pending += r.N
		case SendSent:
			counts.Sent += r.N
		case SendFailed:
			counts.Failed += r.N
		case SendSkipped:
			counts.Skipped += r.N
		case SendSuppressed:
			counts.Suppressed += r.N
		case SendDeferred:
			counts.Deferred += r.N
		}
	}
	return nil
}

// CampaignSend is the opening message a campaign owes one contact, and its follow-ups.
type CampaignSend struct {
	bun.BaseModel `bun:"table:campaign_sends"`

	ID             string     `bun:"id,pk"`
	AccountID      string     `bun:"account_id"`
	CampaignID     string     `bun:"campaign_id"`
	ContactID      string     `bun:"contact_id"`
	Status         string     `bun:"status"`
	Detail         *string    `bun:"detail"`
	DueAt          time.Time  `bun:"due_at"`
	MessageID      *string    `bun:"message_id"`
	FollowUpStep   int        `bun:"follow_up_step"`
	FollowUpsDone  bool       `bun:"follow_ups_done"`
	FollowUpHeld   bool       `bun:"follow_up_held"`
	NextFollowUpAt *time.Time `bun:"next_follow_up_at"`
	CreatedAt      time.Time  `bun:"created_at"`
	// SentAt is when the opening was delivered; follow-ups count from it.
	SentAt *time.Time `bun:"sent_at"`
	// StatusAt is when the send reached its status.
	StatusAt *time.Time `bun:"status_at"`
	// Variant is the 0-based opening variant the contact got (0 with one opening message).
	Variant int `bun:"variant"`
}

// unwrittenSendStatuses are the statuses of a send whose opening is not written yet.
var unwrittenSendStatuses = []string{SendQueued, SendHeld, SendDeferred}

// DueSend names a send to enqueue and when it may run.
type DueSend struct {
	SendID string    `bun:"id"`
	DueAt  time.Time `bun:"due_at"`
}

// triggerCampaigns records the opening message every live campaign of the list with the trigger on
// owes each newly added contact. A contact that already had a campaign's opening gets none again.
func triggerCampaigns(ctx context.Context, tx bun.Tx, accountID, listID string, contactIDs []string) ([]DueSend, error) {
	var campaigns []Campaign
	q := tx.NewSelect().Model(&campaigns).
		Where("account_id = ? AND list_id = ? AND status IN (?) AND trigger_on_list_add AND type <> ?",
			accountID, listID, bun.In([]string{CampaignLive, CampaignPaused}), CampaignIncoming).
		Order("id")
	if tx.Dialect().Name() == dialect.PG {
		// A status change (UpdateCampaign) locks the campaign's row: this add waits for it and then
		// reads the new status, so a send is never written held by a pause that has just ended (and
		// that the resume, which queues the held sends, could not see).
		q = q.For("SHARE")
	}
	if err := q.Scan(ctx); err != nil || len(campaigns) == 0 {
		return nil, err
	}
	var due []DueSend
	at := now()
	// Sends are inserted in contact id order (the lock order in tx.go), whatever the caller's order.
	contactIDs = slices.Sorted(slices.Values(contactIDs))
	for _, c := range campaigns {
		for _, contactID := range contactIDs {
			send := &CampaignSend{
				ID: newID(prefixSend), AccountID: accountID, CampaignID: c.ID, ContactID: contactID, Status: SendQueued,
				DueAt: at.Add(time.Duration(c.OpeningDelayMinutes) * time.Minute), CreatedAt: at, StatusAt: &at,
				Variant: c.pickVariant(),
			}
			if c.Status == CampaignPaused {
				// Paused holds: the send is owed (counted as added, listed as queued, reason paused)
				// and going live again queues it (resumeSends).
				send.Status = SendHeld
			}
			res, err := tx.NewInsert().Model(send).On("CONFLICT DO NOTHING").Exec(ctx)
			if err != nil {
				return nil, err
			}
			if n, _ := res.RowsAffected(); n == 1 && send.Status == SendQueued {
				due = append(due, DueSend{SendID: send.ID, DueAt: send.DueAt})
			}
		}
	}
	return due, nil
}

// Resumed is the work a campaign's pause held, queued again when it goes live: openings, and the
// follow-ups that fell due meanwhile (sent now, at the pacing rate).
type Resumed struct {
	Openings  []DueSend
	FollowUps []DueFollowUp
}

// resumeSends queues again the openings and follow-ups a pause held.
func resumeSends(ctx context.Context, tx bun.Tx, campaignID string) (*Resumed, error) {
	r := &Resumed{}
	err := tx.NewUpdate().Model((*CampaignSend)(nil)).
		Set("status = ?", SendQueued).Set("status_at = ?", now()).
		Where("campaign_id = ? AND status = ?", campaignID, SendHeld).
		Returning("id, due_at").
		Scan(ctx, &r.Openings)
	if err != nil {
		return nil, err
	}
	err = tx.NewUpdate().Model((*CampaignSend)(nil)).
		Set("follow_up_held = ?", false).
		Where("campaign_id = ? AND follow_up_held", campaignID).
		Returning("id, follow_up_step + 1 AS step").
		Scan(ctx, &r.FollowUps)
	return r, err
}

// HoldFollowUp marks the next follow-up of a send as held: it fell due while the campaign was not
// live, and is sent when the campaign is live again.
func (s *Store) HoldFollowUp(ctx context.Context, sendID string) error {
	_, err := s.db.NewUpdate().Model((*CampaignSend)(nil)).Set("follow_up_held = ?", true).
		Where("id = ? AND NOT follow_ups_done", sendID).Exec(ctx)
	if err != nil {
		return fmt.Errorf("hold follow-up: %w", err)
	}
	return nil
}

// CampaignSend returns a send by id, for the worker.
func (s *Store) CampaignSend(ctx context.Context, id string) (*CampaignSend, error) {
	send := new(CampaignSend)
	if err := s.db.NewSelect().Model(send).Where("id = ?", id).Scan(ctx); err != nil {
		if isNoRows(err) {
			return nil, notFound("campaign send")
		}
		return nil, fmt.Errorf("campaign send: %w", err)
	}
	return send, nil
}

// SetSendStatus moves a queued (or deferred) send to held, skipped, failed or suppressed (with the
// reason).
func (s *Store) SetSendStatus(ctx context.Context, id, status, detail string) error {
	q := s.db.NewUpdate().Model((*CampaignSend)(nil)).Set("status = ?", status).Set("status_at = ?", now()).
		Where("id = ? AND status IN (?)", id, bun.In([]string{SendQueued, SendDeferred}))
	if status == SendSuppressed || status == SendFailed || status == SendSkipped {
		q = q.Set("follow_ups_done = ?", true)
	}
	if detail != "" {
		q = q.Set("detail = ?", detail)
	}
	_, err := q.Exec(ctx)
	return err
}

// DeferSend records that a queued send's time fell in the contact's quiet hours: deferred, due at
// notBefore (listed as its notBefore).
func (s *Store) DeferSend(ctx context.Context, id string, notBefore time.Time) error {
	_, err := s.db.NewUpdate().Model((*CampaignSend)(nil)).Set("status = ?", SendDeferred).Set("due_at = ?", notBefore.UTC()).
		Set("status_at = ?", now()).Where("id = ? AND status IN (?)", id, bun.In([]string{SendQueued, SendDeferred})).Exec(ctx)
	if err != nil {
		return fmt.Errorf("defer send: %w", err)
	}
	return nil
}

// ContactWroteSince reports whether the contact sent any message after t.
func (s *Store) ContactWroteSince(ctx context.Context, contactID string, t time.Time) (bool, error) {
	return s.db.NewSelect().Model((*Message)(nil)).
		Where("contact_id = ? AND direction = ? AND created_at > ?", contactID, DirectionIncoming, t).
		Exists(ctx)
}

// OutgoingMessage describes a message the service writes itself (an opening or a follow-up).
type OutgoingMessage struct {
	Campaign *Campaign
	Contact  *Contact
	Body     string
	ToID     string // the contact's address on the transport: fromId, phone or email
}

// WriteOpening stores a campaign's opening message for a queued send, marks the send pending (its
// delivery decides sent or failed: SettleOpening) and makes the campaign the contact's conversation
// campaign, in one transaction. A send that is no longer queued (written by another run) returns
// (nil, nil).
func (s *Store) WriteOpening(ctx context.Context, send *CampaignSend, out OutgoingMessage) (*Message, error) {
	m := newCampaignMessage(out)
	var written bool
	err := s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		written = false
		if err := s.lockContactFirst(ctx, tx, out.Contact.ID); err != nil {
			return err
		}
		res, err := tx.NewUpdate().Model((*CampaignSend)(nil)).
			Set("status = ?", SendPending).Set("message_id = ?", m.ID).Set("status_at = ?", m.CreatedAt).
			Where("id = ? AND status IN (?)", send.ID, bun.In([]string{SendQueued, SendDeferred})).Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil
		}
		written = true
		if _, err := tx.NewInsert().Model(m).Exec(ctx); err != nil {
			return err
		}
		return setConversationCampaign(ctx, tx, out.Contact.ID, out.Campaign.ID)
	})
	if err != nil || !written {
		return nil, err
	}
	s.emit(ctx, m.AccountID, EventMessageCreated, m)
	return m, nil
}

// SettleOpening records the outcome of an opening message's delivery on its send: delivered, the
// send is sent and its first follow-up (if the campaign has any) falls due its delay after at, which
// is returned; failed for good, the send is failed with the error and gets no follow-up. A message
// that is no campaign send's opening, or a send settled already, changes nothing (nil). A failed
// opening redelivered later is settled again when that delivery ends.
//
// Recording a delivery never re-enables follow-ups that something else ended: a goal (ReachGoal) or
// an opt-out (suppressSends) sets follow_ups_done on the send row, and the UPDATE reads that flag from
// the row it writes, so one that commits while this runs is kept (a flag read before the UPDATE, or
// a sub-select of goals, would see the snapshot from before it and overwrite it).
func (s *Store) SettleOpening(ctx context.Context, messageID string, delivered bool, at time.Time, failure string) (*DueFollowUp, error) {
	send := new(CampaignSend)
	err := s.db.NewSelect().Model(send).Column("id", "campaign_id", "contact_id", "status").
		Where("message_id = ? AND status IN (?)", messageID, bun.In([]string{SendPending, SendFailed})).
		Limit(1).Scan(ctx)
	if isNoRows(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("settle opening: %w", err)
	}
	q := s.db.NewUpdate().Model((*CampaignSend)(nil)).Set("status_at = ?", at).
		Where("id = ? AND status IN (?)", send.ID, bun.In([]string{SendPending, SendFailed}))
	if !delivered {
		if send.Status == SendFailed {
			return nil, nil
		}
		status := SendFailed
		if strings.HasPrefix(failure, ReasonOptedOut) {
			// The contact opted out between the writing and the delivery: no follow-up either.
			status = SendSuppressed
			q = q.Set("follow_ups_done = ?", true)
		}
		// A failed send gets no follow-up by its status; follow_ups_done stays as it is, so that a
		// redelivery that succeeds can still schedule them (unless a goal or an opt-out ended them).
		_, err := q.Set("status = ?", status).Set("detail = ?", failure).Set("next_follow_up_at = NULL").Exec(ctx)
		if err != nil {
			return nil, fmt.Errorf("settle opening: %w", err)
		}
		return nil, nil
	}
	campaign, err := s.Campaign(ctx, send.CampaignID)
	if err != nil {
		return nil, fmt.Errorf("settle opening: %w", err)
	}
	q = q.Set("status = ?", SendSent).Set("detail = NULL").Set("sent_at = ?", at)
	delays := campaign.FollowUpDelaysHours
	if !campaign.FollowUpsEnabled || len(delays) == 0 {
		q = q.Set("follow_ups_done = ?", true).Set("next_follow_up_at = NULL")
	} else {
		// A goal recorded before this send existed left no flag on it: the goals table says so.
		ended := bun.Safe("(campaign_send.follow_ups_done OR EXISTS (SELECT 1 FROM goals AS g " +
			"WHERE g.contact_id = campaign_send.contact_id AND g.campaign_id = campaign_send.campaign_id))")
		next := "?"
		if !s.IsSQLite() {
			next = "CAST(? AS timestamptz)" // a CASE of NULL and a literal would be text
		}
		q = q.Set("follow_ups_done = ?", ended).
			Set("next_follow_up_at = CASE WHEN ? THEN NULL ELSE "+next+" END", ended, at.Add(hours(delays[0])))
	}
	var settled []struct {
		FollowUpsDone  bool       `bun:"follow_ups_done"`
		NextFollowUpAt *time.Time `bun:"next_follow_up_at"`
	}
	if err := q.Returning("follow_ups_done, next_follow_up_at").Scan(ctx, &settled); err != nil && !isNoRows(err) {
		return nil, fmt.Errorf("settle opening: %w", err)
	}
	if len(settled) == 0 || settled[0].FollowUpsDone || settled[0].NextFollowUpAt == nil {
		return nil, nil // settled by another run, or its follow-ups ended
	}
	return &DueFollowUp{SendID: send.ID, Step: 1, DueAt: *settled[0].NextFollowUpAt}, nil
}

// WriteFollowUp stores follow-up number step (1-based) of a send and schedules the next one, unless
// the step was written already, in which case it returns (nil, nil).
//
// The conditions are in the write: the send's UPDATE changes its row only while the contact has sent
// no message after the opening and has not reached the campaign's goal, so a reply or a goal that
// commits while the follow-up's text was being generated stops it (the send's follow-ups end then,
// and (nil, nil) is returned).
func (s *Store) WriteFollowUp(ctx context.Context, send *CampaignSend, step int, out OutgoingMessage) (*Message, error) {
	m := newCampaignMessage(out)
	var written bool
	err := s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		written = false
		if err := s.lockContactFirst(ctx, tx, out.Contact.ID); err != nil {
			return err
		}
		q := tx.NewUpdate().Model((*CampaignSend)(nil)).
			Set("follow_up_step = ?", step).
			Where("campaign_send.id = ? AND follow_up_step = ? AND NOT follow_ups_done", send.ID, step-1).
			Where("NOT ?", followUpsEnded)
		if delays := out.Campaign.FollowUpDelaysHours; step < len(delays) && send.SentAt != nil {
			q = q.Set("next_follow_up_at = ?", send.SentAt.Add(hours(delays[step])))
		} else {
			q = q.Set("next_follow_up_at = NULL").Set("follow_ups_done = ?", true)
		}
		res, err := q.Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			// Written by another run, or the lead answered or reached the goal: in the last case no
			// later step is owed either.
			_, err := tx.NewUpdate().Model((*CampaignSend)(nil)).
				Set("follow_ups_done = ?", true).Set("next_follow_up_at = NULL").
				Where("campaign_send.id = ? AND follow_up_step = ? AND NOT follow_ups_done", send.ID, step-1).
				Where("?", followUpsEnded).Exec(ctx)
			return err
		}
		written = true
		_, err = tx.NewInsert().Model(m).Exec(ctx)
		return err
	})
	if err != nil || !written {
		return nil, err
	}
	s.emit(ctx, m.AccountID, EventMessageCreated, m)
	return m, nil
}

// followUpsEnded is true for a send (campaign_send) whose contact wrote after its opening was written,
// or reached the campaign's goal: no follow-up is owed then. Any reply counts, also one that came
// before the opening's delivery ended.
var followUpsEnded = bun.Safe(`(EXISTS (SELECT 1 FROM messages AS r WHERE r.contact_id = campaign_send.contact_id
		AND r.direction = '` + DirectionIncoming + `'
		AND r.created_at > (SELECT o.created_at FROM messages AS o WHERE o.id = campaign_send.message_id))
	OR EXISTS (SELECT 1 FROM goals AS g WHERE g.contact_id = campaign_send.contact_id AND g.campaign_id = campaign_send.campaign_id))`)

// StopFollowUps ends a send's follow-ups (the lead replied, or the campaign stopped them).
func (s *Store) StopFollowUps(ctx context.Context, sendID string) error {
	_, err := s.db.NewUpdate().Model((*CampaignSend)(nil)).
		Set("follow_ups_done = ?", true).Set("next_follow_up_at = NULL").
		Where("id = ?", sendID).Exec(ctx)
	return err
}

func newCampaignMessage(out OutgoingMessage) *Message {
	c := out.Campaign
	return &Message{
		ID: newID(prefixMessage), AccountID: c.AccountID, ContactID: out.Contact.ID, CampaignID: &c.ID,
		Direction: DirectionOutgoing, Channel: c.ChannelLabel(), Transport: c.Transport(), MessageType: MessageTypeText,
		Body: out.Body, ToID: out.ToID, Author: AuthorCampaign, Status: StatusPending, CreatedAt: now(),
	}
}

func hours(h float64) time.Duration { return time.Duration(h * float64(time.Hour)) }

// SendView is a campaign send as GET /v1/campaigns/{id}/sends lists it.
type SendView struct {
	ID        string     `json:"-"`
	ContactID string     `json:"contactId"`
	Status    string     `json:"status"`
	Reason    *string    `json:"reason"`
	Variant   int        `json:"variant"`
	MessageID *string    `json:"messageId"`
	NotBefore *time.Time `json:"notBefore"`
	At        time.Time  `json:"at"`
}

// sendStatuses are the statuses a send is listed with (a held send is listed as queued).
var sendStatuses = []string{SendQueued, SendPending, SendSent, SendFailed, SendSuppressed, SendDeferred, SendSkipped}

// CampaignSends lists a campaign's sends in the order they were owed, with status only those in
// status ("" for all). Errors: NOT_FOUND (another account's campaign too), VALIDATION_ERROR for an
// unknown status or cursor.
func (s *Store) CampaignSends(ctx context.Context, accountID, campaignID, status string, page Page) ([]SendView, string, error) {
	if _, err := s.CampaignByID(ctx, accountID, campaignID); err != nil {
		return nil, "", err
	}
	q := s.db.NewSelect().Model((*CampaignSend)(nil)).Where("campaign_id = ?", campaignID).Order("id").Limit(int64(page.Limit) + 1)
	switch {
	case status == SendQueued:
		q = q.Where("status IN (?)", bun.In([]string{SendQueued, SendHeld}))
	case status != "":
		known := false
		for _, st := range sendStatuses {
			known = known || st == status
		}
		if !known {
			return nil, "", Errorf(CodeValidation, "status must be one of queued, pending, sent, failed, suppressed, deferred, skipped")
		}
		q = q.Where("status = ?", status)
	}
	if page.Cursor != "" {
		q = q.Where("id > ?", page.Cursor)
	}
	var rows []CampaignSend
	if err := q.Scan(ctx, &rows); err != nil {
		return nil, "", fmt.Errorf("campaign sends: %w", err)
	}
	rows, next := cutPage(rows, page, func(i int) string { return rows[i].ID })
	out := make([]SendView, len(rows))
	for i, r := range rows {
		v := SendView{ID: r.ID, ContactID: r.ContactID, Status: r.Status, Reason: r.Detail, Variant: r.Variant, MessageID: r.MessageID, At: r.CreatedAt}
		if r.StatusAt != nil {
			v.At = *r.StatusAt
		}
		if r.Status == SendHeld {
			paused := "paused" // its campaign is paused; going live queues it
			v.Status, v.Reason = SendQueued, &paused
		}
		if v.Status == SendQueued || v.Status == SendDeferred {
			due := r.DueAt
			v.NotBefore = &due
		}
		out[i] = v
	}
	return out, next, nil
}
