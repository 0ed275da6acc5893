package models

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/uptrace/bun"
)

// CustomSendInput is a message the client sends to a contact through a custom channel (POST /v1/send_custom_channel_message).
type CustomSendInput struct {
	FromID     string // the contact's id on the client's platform
	Channel    string // customData.customChannel
	Body       string
	CampaignID string
	FirstName  string
	LastName   string
	Email      string
}

// Validate checks CustomSend of the OpenAPI document and normalizes in place. Errors: VALIDATION_ERROR naming the field.
func (in *CustomSendInput) Validate() error {
	in.FromID, in.Channel, in.CampaignID = strings.TrimSpace(in.FromID), strings.TrimSpace(in.Channel), strings.TrimSpace(in.CampaignID)
	switch {
	case in.FromID == "":
		return Errorf(CodeValidation, "customData.fromId is required")
	case in.Channel == "":
		return Errorf(CodeValidation, "customData.customChannel is required")
	case strings.TrimSpace(in.Body) == "":
		return Errorf(CodeValidation, "customData.body must not be empty")
	}
	if err := checkTexts(
		textField{"customData.fromId", in.FromID, maxExternalIDLength},
		textField{"customData.customChannel", in.Channel, maxLabelLength},
		textField{"customData.body", in.Body, maxBodyLength},
		textField{"customData.campaignId", in.CampaignID, maxIDLength},
	); err != nil {
		return err
	}
	return cleanPerson(&in.FirstName, &in.LastName, &in.Email)
}

// SendCustom stores an outgoing message to the contact of fromId (created, or updated with the names
// and email given) as pending, for the worker to deliver through the account's webhook, when the
// outgoing door allows it (CONFLICT with the door's reason, and nothing stored, when it does not). in
// must have passed Validate.
func (s *Store) SendCustom(ctx context.Context, accountID string, in CustomSendInput) (*Message, *Contact, error) {
	var contact *Contact
	m := &Message{
		ID: newID(prefixMessage), AccountID: accountID, Direction: DirectionOutgoing, Channel: in.Channel, Transport: TransportCustom,
		MessageType: MessageTypeText, Body: in.Body, ToID: in.FromID, Author: AuthorAPI, Status: StatusPending,
		CreatedAt: now(),
	}
	if in.CampaignID != "" {
		m.CampaignID = &in.CampaignID
	}
	err := s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var err error
		contact, err = contactForExternalID(ctx, tx, accountID, in.FromID, ContactInput{FirstName: in.FirstName, LastName: in.LastName, Email: in.Email})
		if err != nil {
			return err
		}
		d, err := s.decide(ctx, tx, Outgoing{Purpose: PurposeAPISend, AccountID: accountID, ContactID: contact.ID,
			Route: Route{Channel: m.Channel, Transport: m.Transport, ToID: m.ToID}})
		if err != nil {
			return err
		}
		if !d.Allowed() {
			return refusal(d)
		}
		if err := updateContactFields(ctx, tx, contact, in.FirstName, in.LastName, in.Email); err != nil {
			return err
		}
		m.ContactID = contact.ID
		if _, err := tx.NewInsert().Model(m).Exec(ctx); err != nil {
			return err
		}
		if m.CampaignID != nil {
			return setConversationCampaign(ctx, tx, contact.ID, *m.CampaignID)
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("send custom: %w", err)
	}
	s.emit(ctx, accountID, EventMessageCreated, m)
	return m, contact, nil
}

// updateContactFields sets the names and email that were given (non-empty) on the contact.
func updateContactFields(ctx context.Context, tx bun.Tx, c *Contact, first, last, email string) error {
	q := tx.NewUpdate().Model((*Contact)(nil)).Where("id = ?", c.ID)
	changed := false
	if first != "" && first != c.FirstName {
		c.FirstName, changed = first, true
		q = q.Set("first_name = ?", first)
	}
	if last != "" && last != c.LastName {
		c.LastName, changed = last, true
		q = q.Set("last_name = ?", last)
	}
	if email != "" && (c.Email == nil || *c.Email != email) && c.Origin == originChannel {
		c.Email, changed = &email, true
		q = q.Set("email = ?", email)
	}
	if !changed {
		return nil
	}
	c.UpdatedAt = now()
	_, err := q.Set("updated_at = ?", c.UpdatedAt).Exec(ctx)
	return err
}

// HumanReply stores a reply typed by a team member and pauses the bot for the contact. It goes where
// RouteTo says (without channel, on the conversation's channel) and as the outgoing door says
// (PlanTeamReply). A reply the door refuses (outside a messaging window) is stored as failed with the
// reason and never reaches a provider; otherwise it is stored pending, for the worker to deliver. The
// reply records its author, the account's user authorID ("": the account's owner, who answers for an
// API key). Errors: NOT_FOUND, VALIDATION_ERROR (empty body, or an author who is not the account's),
// NO_ADDRESS (nowhere to reply), OPTED_OUT (the contact opted out on the channel: nothing is stored).
func (s *Store) HumanReply(ctx context.Context, accountID, contactID, authorID, body, channel string) (*Message, error) {
	channel = strings.TrimSpace(channel)
	if strings.TrimSpace(body) == "" {
		return nil, Errorf(CodeValidation, "body must not be empty")
	}
	if err := checkText("body", body, maxBodyLength); err != nil {
		return nil, err
	}
	if err := checkText("channel", channel, maxLabelLength); err != nil {
		return nil, err
	}
	contact, err := s.ContactByID(ctx, accountID, contactID)
	if err != nil {
		return nil, err
	}
	author, err := s.teamAuthor(ctx, accountID, authorID)
	if err != nil {
		return nil, err
	}
	plan, err := s.PlanTeamReply(ctx, contact, channel)
	if err != nil {
		return nil, fmt.Errorf("human reply: %w", err)
	}
	if plan.Problem != "" {
		return nil, Errorf(CodeNoAddress, "%s", plan.Problem)
	}
	if plan.Decision.Code() == ReasonOptedOut {
		return nil, refusal(plan.Decision)
	}
	r := plan.Route
	m := &Message{
		ID: newID(prefixMessage), AccountID: accountID, ContactID: contact.ID, CampaignID: contact.ConversationCampaignID,
		Direction: DirectionOutgoing, Channel: r.Channel, Transport: r.Transport, MessageType: MessageTypeText, Body: body, ToID: r.ToID,
		Author: AuthorHuman, Status: StatusPending, CreatedAt: now(), AuthorUserID: &author.UserID, AuthorEmail: &author.Email,
	}
	m.By = author
	if !plan.Decision.Allowed() {
		reason := plan.Decision.Reason
		m.Status, m.Error, m.GivenUpAt = StatusFailed, &reason, &m.CreatedAt
	}
	err = s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewInsert().Model(m).Exec(ctx); err != nil {
			return err
		}
		return setBotPaused(ctx, tx, contact.ID, true)
	})
	if err != nil {
		return nil, fmt.Errorf("human reply: %w", err)
	}
	s.emit(ctx, accountID, EventMessageCreated, m)
	return m, nil
}

// SetBotActive pauses or resumes the bot for a contact. Errors: NOT_FOUND.
func (s *Store) SetBotActive(ctx context.Context, accountID, contactID string, active bool) (*Contact, error) {
	contact, err := s.ContactByID(ctx, accountID, contactID)
	if err != nil {
		return nil, err
	}
	if err := setBotPaused(ctx, s.db, contact.ID, !active); err != nil {
		return nil, fmt.Errorf("set bot active: %w", err)
	}
	contact.BotPaused = !active
	s.emit(ctx, accountID, EventContactUpdated, botState{ID: contact.ID, BotActive: active})
	return contact, nil
}

// botState is the data of a contact.updated event.
type botState struct {
	ID        string `json:"id"`
	BotActive bool   `json:"botActive"`
}

func setBotPaused(ctx context.Context, db bun.IDB, contactID string, paused bool) error {
	at := now()
	q := db.NewUpdate().Model((*Contact)(nil)).Set("bot_paused = ?", paused).Set("updated_at = ?", at).Where("id = ?", contactID)
	if paused {
		q = q.Set("bot_paused_at = ?", at) // every pause and every team reply restarts botResumeMinutes
	}
	_, err := q.Exec(ctx)
	return err
}

// CreateBotReply stores the bot's answer to an incoming message as a pending outgoing message and marks
// the incoming message answered; a sub-account pays costMilli for it in the same transaction
// (ErrNoCredits when it cannot), and the low-balance event it may cause is returned. It is
// idempotent: a second call for the same incoming message returns the reply stored by the first.
func (s *Store) CreateBotReply(ctx context.Context, incoming *Message, campaignID *string, text string, payer *Account, costMilli int64) (*Message, *RechargeEvent, error) {
	var event *RechargeEvent
	m := newBotReply(incoming, campaignID, text, newID(prefixMessage))
	charge := ChargesBotReply(payer, costMilli)
	if !charge && !s.IsSQLite() {
		return s.createBotReplyPG(ctx, m, incoming.ID)
	}
	inserted := false
	err := s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		inserted, event = false, nil
		res, err := tx.NewInsert().Model(m).On("CONFLICT DO NOTHING").Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return tx.NewSelect().Model(m).Where("reply_to_id = ?", incoming.ID).Scan(ctx)
		}
		inserted = true
		contact := new(Contact)
		if err := tx.NewSelect().Model(contact).Column("id", "account_id", "consent").Where("id = ?", m.ContactID).Scan(ctx); err != nil {
			return err
		}
		m.Contact = contact
		if charge {
			if event, err = chargeBotReply(ctx, tx, payer.ID, incoming.ID, costMilli); err != nil {
				return err
			}
		}
		return setBotStatus(ctx, tx, incoming.ID, BotDone)
	})
	if err != nil {
		return nil, nil, fmt.Errorf("create bot reply: %w", err)
	}
	if inserted {
		s.emit(ctx, m.AccountID, EventMessageCreated, m)
	}
	return m, event, nil
}

// createBotReplySQL inserts a bot reply unless the incoming message $13 has one, and marks that message
// answered ($14), as one prepared statement (see prepared.go). The columns it leaves out are NULL or
// their defaults in a new reply.
var createBotReplySQL = `WITH reply AS (
	INSERT INTO messages (id, account_id, contact_id, campaign_id, direction, channel, transport, message_type,
		body, to_id, author, status, reply_to_id, created_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $15)
	ON CONFLICT DO NOTHING RETURNING id
), answered AS (
	UPDATE messages SET bot_status = $14 WHERE id = $13
)
SELECT reply.id, contacts.consent FROM reply JOIN contacts ON contacts.id = $3`

// createBotReplyPG is CreateBotReply for a reply nobody pays for, on PostgreSQL: the reply and the
// incoming message's bot status are written by one statement (atomic, one round trip and one commit
// instead of four round trips). SQLite has no data-modifying WITH, so it takes the transaction.
func (s *Store) createBotReplyPG(ctx context.Context, m *Message, incomingID string) (*Message, *RechargeEvent, error) {
	stmt, err := s.prepared(ctx, "create_bot_reply", func() string { return createBotReplySQL })
	if err != nil {
		return nil, nil, fmt.Errorf("create bot reply: %w", err)
	}
	rows, err := stmt.QueryContext(ctx, m.ID, m.AccountID, m.ContactID, orNil(m.CampaignID), m.Direction, m.Channel,
		m.Transport, m.MessageType, m.Body, m.ToID, m.Author, m.Status, incomingID, BotDone, m.CreatedAt)
	if err != nil {
		return nil, nil, fmt.Errorf("create bot reply: %w", err)
	}
	inserted := rows.Next()
	if inserted {
		// The contact's consent as the reply was written: its delivery must not go to a contact who
		// opted out while the bot was thinking (jobs' attempt asks it).
		var id string
		consent := ConsentMap{}
		if err := rows.Scan(&id, &consent); err != nil {
			_ = rows.Close()
			return nil, nil, fmt.Errorf("create bot reply: %w", err)
		}
		m.Contact = &Contact{ID: m.ContactID, AccountID: m.AccountID, Consent: consent}
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, nil, fmt.Errorf("create bot reply: %w", err)
	}
	if !inserted { // answered before (the task ran twice): the existing reply is the one to deliver
		if err := s.db.NewSelect().Model(m).Where("reply_to_id = ?", incomingID).Scan(ctx); err != nil {
			return nil, nil, fmt.Errorf("create bot reply: read existing: %w", err)
		}
	} else {
		s.emit(ctx, m.AccountID, EventMessageCreated, m)
	}
	return m, nil, nil
}

// SetBotStatus records what became of an incoming message's bot reply.
func (s *Store) SetBotStatus(ctx context.Context, messageID, status string) error {
	return setBotStatus(ctx, s.db, messageID, status)
}

func setBotStatus(ctx context.Context, db bun.IDB, messageID, status string) error {
	_, err := db.NewUpdate().Model((*Message)(nil)).Set("bot_status = ?", status).Where("id = ?", messageID).Exec(ctx)
	return err
}
