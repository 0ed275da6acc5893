package models

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// Campaign send states.
const (
	SendQueued  = "queued"  // owed, waiting for its time and the pacing limiter
	SendHeld    = "held"    // the campaign was not live when its turn came; resuming queues it again
	SendSent    = "sent"    // the opening message was written and handed to delivery
	SendSkipped = "skipped" // not needed, with the reason in detail (the lead wrote first)
	SendFailed  = "failed"  // the contact cannot be reached on the channel; detail says why
)

// SendCounts is how a campaign's opening messages stand: queued (waiting for their time, the pacing
// limiter or the campaign to be live again), sent, failed (the contact cannot be reached on the
// campaign's channel), and skipped (the lead wrote first, so no opening was needed).
type SendCounts struct {
	Queued  int `json:"queued"`
	Sent    int `json:"sent"`
	Failed  int `json:"failed"`
	Skipped int `json:"skipped"`
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
		case SendSent:
			counts.Sent += r.N
		case SendFailed:
			counts.Failed += r.N
		case SendSkipped:
			counts.Skipped += r.N
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
	SentAt         *time.Time `bun:"sent_at"`
}

// DueSend names a send to enqueue and when it may run.
type DueSend struct {
	SendID string    `bun:"id"`
	DueAt  time.Time `bun:"due_at"`
}

// triggerCampaigns records the opening message every live campaign of the list with the trigger on
// owes each newly added contact. A contact that already had a campaign's opening gets none again.
func triggerCampaigns(ctx context.Context, tx bun.Tx, accountID, listID string, contactIDs []string) ([]DueSend, error) {
	var campaigns []Campaign
	err := tx.NewSelect().Model(&campaigns).
		Where("account_id = ? AND list_id = ? AND status = ? AND trigger_on_list_add AND type <> ?", accountID, listID, CampaignLive, CampaignIncoming).
		Scan(ctx)
	if err != nil || len(campaigns) == 0 {
		return nil, err
	}
	var due []DueSend
	at := now()
	for _, c := range campaigns {
		for _, contactID := range contactIDs {
			send := &CampaignSend{
				ID: newID(prefixSend), AccountID: accountID, CampaignID: c.ID, ContactID: contactID, Status: SendQueued,
				DueAt: at.Add(time.Duration(c.OpeningDelayMinutes) * time.Minute), CreatedAt: at,
			}
			res, err := tx.NewInsert().Model(send).On("CONFLICT DO NOTHING").Exec(ctx)
			if err != nil {
				return nil, err
			}
			if n, _ := res.RowsAffected(); n == 1 {
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
		Set("status = ?", SendQueued).
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

// SetSendStatus moves a queued send to held, skipped or failed (with the reason).
func (s *Store) SetSendStatus(ctx context.Context, id, status, detail string) error {
	q := s.db.NewUpdate().Model((*CampaignSend)(nil)).Set("status = ?", status).Where("id = ? AND status = ?", id, SendQueued)
	if detail != "" {
		q = q.Set("detail = ?", detail)
	}
	_, err := q.Exec(ctx)
	return err
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

// WriteOpening stores a campaign's opening message for a queued send, marks the send sent, schedules
// its first follow-up and makes the campaign the contact's conversation campaign, in one transaction.
// A send that is no longer queued (written by another run) returns (nil, nil).
func (s *Store) WriteOpening(ctx context.Context, send *CampaignSend, out OutgoingMessage) (*Message, error) {
	m := newCampaignMessage(out)
	var written bool
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		q := tx.NewUpdate().Model((*CampaignSend)(nil)).
			Set("status = ?", SendSent).Set("message_id = ?", m.ID).Set("sent_at = ?", m.CreatedAt).
			Where("id = ? AND status = ?", send.ID, SendQueued)
		if delays := out.Campaign.FollowUpDelaysHours; out.Campaign.FollowUpsEnabled && len(delays) > 0 {
			q = q.Set("next_follow_up_at = ?", m.CreatedAt.Add(hours(delays[0])))
		} else {
			q = q.Set("follow_ups_done = ?", true)
		}
		res, err := q.Exec(ctx)
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

// WriteFollowUp stores follow-up number step (1-based) of a send and schedules the next one, unless
// the step was written already, in which case it returns (nil, nil).
func (s *Store) WriteFollowUp(ctx context.Context, send *CampaignSend, step int, out OutgoingMessage) (*Message, error) {
	m := newCampaignMessage(out)
	var written bool
	err := s.db.RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		q := tx.NewUpdate().Model((*CampaignSend)(nil)).
			Set("follow_up_step = ?", step).
			Where("id = ? AND follow_up_step = ? AND NOT follow_ups_done", send.ID, step-1)
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
			return nil
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

// ContactAddress returns the contact's address on a transport: the phone for SMS and WhatsApp; the
// latest Messenger or Instagram sender id for those (see MetaSenderID); for a custom channel the
// latest custom-channel fromId it wrote from, else its phone, else its email. "" when it has none.
func (s *Store) ContactAddress(ctx context.Context, c *Contact, transport string) (string, error) {
	switch transport {
	case ChannelSMS, ChannelWhatsApp:
		if c.Phone == nil {
			return "", nil
		}
		return *c.Phone, nil
	}
	q := s.db.NewSelect().Model((*contactIdentity)(nil)).Column("external_id").Where("contact_id = ?", c.ID)
	if IsMetaChannel(transport) {
		q = q.Where("external_id LIKE ?", transport+":%")
	} else {
		q = q.Where("external_id NOT LIKE ? AND external_id NOT LIKE ?", ChannelMessenger+":%", ChannelInstagram+":%")
	}
	var ids []string
	if err := q.Order("created_at DESC").Limit(1).Scan(ctx, &ids); err != nil {
		return "", err
	}
	switch {
	case len(ids) > 0:
		return ids[0], nil
	case IsMetaChannel(transport):
		return "", nil
	case c.Phone != nil:
		return *c.Phone, nil
	case c.Email != nil:
		return *c.Email, nil
	}
	return "", nil
}
