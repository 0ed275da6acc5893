package models

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/uptrace/bun"
)

// IncomingInput is a message from an external system on a custom channel (customData of POST /v1/incoming_custom_channel_message).
type IncomingInput struct {
	ExternalID       string // customData.messageSid, or customData.id
	FromID           string
	ToID             string
	Body             string
	Status           string
	Channel          string
	CampaignID       string
	FirstName        string
	LastName         string
	Email            string
	MediaURL         string
	MediaContentType string
	MessageType      string
	Transport        string // "" for a custom channel; sms, whatsapp, messenger or instagram for the built-in providers
	// ReactsTo is, for a reaction, the id (messageSid or the provider's id) of the message it is on.
	ReactsTo string
}

// Field limits of custom-channel messages.
const (
	maxExternalIDLength = 256
	maxBodyLength       = 4096 * 4 // characters; longer texts are not chat messages
	maxLabelLength      = 64
)

// Validate checks every rule of IncomingMessage in the OpenAPI document and normalizes the input in place. Errors:
// VALIDATION_ERROR naming the field, PAYLOAD_TOO_LARGE for embedded media over maxMediaBytes.
func (in *IncomingInput) Validate(maxMediaBytes int) error {
	in.ExternalID = strings.TrimSpace(in.ExternalID)
	in.FromID = strings.TrimSpace(in.FromID)
	in.ToID = strings.TrimSpace(in.ToID)
	switch {
	case in.ExternalID == "":
		return Errorf(CodeValidation, "customData.messageSid (or customData.id) is required")
	case in.FromID == "":
		return Errorf(CodeValidation, "customData.fromId is required")
	case in.ToID == "":
		return Errorf(CodeValidation, "customData.toId is required")
	case strings.TrimSpace(in.Body) == "":
		return Errorf(CodeValidation, "customData.body must not be empty")
	}
	if err := checkTexts(
		textField{"customData.messageSid", in.ExternalID, maxExternalIDLength},
		textField{"customData.fromId", in.FromID, maxExternalIDLength},
		textField{"customData.toId", in.ToID, maxExternalIDLength},
		textField{"customData.body", in.Body, maxBodyLength},
		textField{"customData.channel", in.Channel, maxLabelLength},
		textField{"customData.campaignId", in.CampaignID, maxIDLength},
	); err != nil {
		return err
	}
	in.Channel = strings.TrimSpace(in.Channel)
	if in.Channel == "" {
		in.Channel = "custom"
	}
	in.Status = strings.ToLower(strings.TrimSpace(in.Status))
	if in.Status == "" {
		in.Status = StatusReceived
	} else if !plainWord(in.Status, 32) {
		return Errorf(CodeValidation, "customData.status must be a short word such as received")
	}
	switch in.MessageType = strings.ToLower(strings.TrimSpace(in.MessageType)); in.MessageType {
	case "":
		in.MessageType = MessageTypeText
	case MessageTypeText, MessageTypeReaction:
	default:
		return Errorf(CodeValidation, "messageType must be text or reaction")
	}
	if err := cleanPerson(&in.FirstName, &in.LastName, &in.Email); err != nil {
		return err
	}
	var err error
	in.MediaURL, in.MediaContentType, err = checkMedia(in.MediaURL, in.MediaContentType, maxMediaBytes)
	return err
}

// textField is a text input with its client-facing name and its length limit in characters.
type textField struct {
	name, value string
	max         int
}

func checkTexts(fields ...textField) error {
	for _, f := range fields {
		if err := checkText(f.name, f.value, f.max); err != nil {
			return err
		}
	}
	return nil
}

// cleanPerson validates and normalizes the customData names and email used for a contact.
func cleanPerson(first, last, email *string) error {
	var err error
	if *first, err = cleanName("customData.firstName", *first); err != nil {
		return err
	}
	if *last, err = cleanName("customData.lastName", *last); err != nil {
		return err
	}
	if *email, err = NormalizeEmail(*email); err != nil {
		return Errorf(CodeValidation, "customData.email is not a valid email address")
	}
	return nil
}

func checkText(field, v string, max int) error {
	if !utf8.ValidString(v) || strings.ContainsRune(v, 0) {
		return Errorf(CodeValidation, "%s must be valid UTF-8 text without NUL characters", field)
	}
	if utf8.RuneCountInString(v) > max {
		return Errorf(CodeValidation, "%s must be at most %d characters", field, max)
	}
	return nil
}

func plainWord(v string, max int) bool {
	if v == "" || len(v) > max {
		return false
	}
	for _, r := range v {
		if !(r >= 'a' && r <= 'z' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// newIncoming is the message IngestIncoming stores for in, and the contact its sender becomes when new.
// Its id and time are the server's (the store's clock): on PostgreSQL the id decides the message's
// monthly partition (partitions.go).
func (s *Store) newIncoming(accountID string, in IncomingInput) (*Message, ContactInput) {
	botStatus := BotPending
	if in.MessageType == MessageTypeReaction {
		botStatus = BotNone
	}
	at := s.clockNow()
	m := &Message{
		ID:          newIDAt(prefixMessage, at),
		AccountID:   accountID,
		Direction:   DirectionIncoming,
		Channel:     in.Channel,
		Transport:   TransportCustom,
		MessageType: in.MessageType,
		Body:        in.Body,
		ExternalID:  &in.ExternalID,
		FromID:      in.FromID,
		ToID:        in.ToID,
		Status:      in.Status,
		BotStatus:   &botStatus,
		CreatedAt:   at.UTC().Truncate(time.Microsecond),
	}
	if in.Transport != "" {
		m.Transport = in.Transport
	}
	if in.CampaignID != "" {
		m.CampaignID = &in.CampaignID
	}
	if in.MediaURL != "" {
		m.MediaURL, m.MediaContentType = &in.MediaURL, &in.MediaContentType
		if IsMediaLink(in.MediaURL) {
			pending := MediaCheckPending
			m.MediaCheck = &pending
		}
	}
	return m, ContactInput{FirstName: in.FirstName, LastName: in.LastName, Email: in.Email}
}

// IngestIncoming stores an incoming custom-channel message: it resolves fromId to its one contact
// (creating it, with the given names and email, when new), stores the message and reopens the
// conversation when it is resolved or snoozed, all in one transaction. A repeated messageSid returns the
// first message with duplicate true and changes nothing. in must have passed Validate.
func (s *Store) IngestIncoming(ctx context.Context, accountID string, in IncomingInput) (msg *Message, duplicate bool, err error) {
	m, newContact := s.newIncoming(accountID, in)

	if !s.IsSQLite() {
		firstID, dup, reopened, err := s.ingestPostgres(ctx, m, newChannelContact(accountID, in.FromID, newContact, m.CreatedAt))
		if err != nil {
			return nil, false, fmt.Errorf("ingest incoming: %w", err)
		}
		if dup {
			first, err := s.MessageByID(ctx, accountID, firstID)
			if err != nil {
				return nil, false, fmt.Errorf("ingest incoming: read first: %w", err)
			}
			return first, true, nil
		}
		return m, false, s.created(ctx, m, in.ReactsTo, reopened)
	}
	var reopened bool
	err = s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		reopened = false
		contact, err := contactForExternalID(ctx, tx, accountID, in.FromID, newContact)
		if err != nil {
			return err
		}
		m.ContactID = contact.ID
		res, err := tx.NewInsert().Model(m).On("CONFLICT DO NOTHING").Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errDuplicate
		}
		if m.CampaignID != nil {
			if err := setConversationCampaign(ctx, tx, contact.ID, *m.CampaignID); err != nil {
				return err
			}
		}
		reopened, err = reopenConversation(ctx, tx, contact.ID, m.CreatedAt)
		return err
	})
	if errors.Is(err, errDuplicate) {
		first, err := oneMessage(ctx, s.db.NewSelect().Where("account_id = ? AND external_id = ?", accountID, in.ExternalID))
		if err != nil {
			return nil, false, fmt.Errorf("ingest incoming: read first: %w", err)
		}
		return first, true, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("ingest incoming: %w", err)
	}
	return m, false, s.created(ctx, m, in.ReactsTo, reopened)
}

// created finishes a stored incoming message: it links a reaction to its message and tells live
// listeners, of the conversation it reopened too.
func (s *Store) created(ctx context.Context, m *Message, reactsTo string, reopened bool) error {
	err := s.linkReaction(ctx, m, reactsTo)
	s.emit(ctx, m.AccountID, EventMessageCreated, m)
	if reopened {
		s.emitReopened(ctx, m.AccountID, m.ContactID)
	}
	return err
}

// linkReaction records which message a stored reaction is on: the account's message whose messageSid
// or provider id is reactsTo. A reaction to a message we do not have stays unlinked.
func (s *Store) linkReaction(ctx context.Context, m *Message, reactsTo string) error {
	if reactsTo == "" || m.MessageType != MessageTypeReaction {
		return nil
	}
	var ids []string
	var err error
	if s.IsSQLite() {
		err = s.db.NewSelect().Model((*Message)(nil)).Column("id").
			Where("account_id = ? AND (external_id = ? OR provider_message_id = ?) AND id <> ?", m.AccountID, reactsTo, reactsTo, m.ID).
			Order("id").Limit(1).Scan(ctx, &ids)
	} else {
		// The messageSid through its claim (messages has no index on external_id: partitions.go).
		err = s.db.NewRaw(`SELECT id FROM (
			SELECT message_id AS id FROM message_claims WHERE account_id = ? AND external_id = ?
			UNION ALL
			SELECT id FROM messages WHERE account_id = ? AND provider_message_id = ?) AS x
			WHERE id <> ? ORDER BY id LIMIT 1`, m.AccountID, reactsTo, m.AccountID, reactsTo, m.ID).Scan(ctx, &ids)
	}
	if err != nil || len(ids) == 0 {
		return err
	}
	if _, err := s.db.NewUpdate().Model((*Message)(nil)).Set("reacts_to_id = ?", ids[0]).Where("id = ?", m.ID).Exec(ctx); err != nil {
		return fmt.Errorf("link reaction: %w", err)
	}
	m.ReactsToID = &ids[0]
	return nil
}

// errDuplicate ends an ingest transaction whose messageSid is already stored; errRetry ends one that
// lost a race for a new contact identity and must start over to read the winner's.
var (
	errDuplicate = errors.New("duplicate message")
	errRetry     = errors.New("retry transaction")
)

// contactForExternalID returns the one contact of (account, externalID), creating it when new. Two
// transactions creating the same identity at once: the unique key makes the second wait for the first,
// find the key taken, and start over with errRetry, so both end with the same contact.
func contactForExternalID(ctx context.Context, tx bun.Tx, accountID, externalID string, fields ContactInput) (*Contact, error) {
	c := new(Contact)
	err := tx.NewSelect().Model(c).
		Join("JOIN contact_identities AS ci ON ci.contact_id = contact.id").
		Where("ci.account_id = ? AND ci.external_id = ?", accountID, externalID).
		Scan(ctx)
	if err == nil {
		return c, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	at := now()
	// A sender id that is a phone number or an email address names the contact the account already
	// has with it (a funnel lead answering its opening message); any other id starts a new contact.
	c, err = contactForAddress(ctx, tx, accountID, externalID)
	if err != nil {
		return nil, err
	}
	if c == nil {
		c = newChannelContact(accountID, externalID, fields, at)
		res, err := tx.NewInsert().Model(c).On("CONFLICT DO NOTHING").Exec(ctx)
		if err != nil {
			return nil, err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil, errRetry // the phone was taken meanwhile: start over and find that contact
		}
	}
	res, err := tx.NewInsert().Model(&contactIdentity{AccountID: accountID, ExternalID: externalID, ContactID: c.ID, CreatedAt: at}).
		On("CONFLICT DO NOTHING").Exec(ctx)
	if err != nil {
		return nil, err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil, errRetry
	}
	return c, nil
}

// newChannelContact is the contact a new sender id brings in: the names and email given with its first
// message, and the id as its phone when it is a phone number.
func newChannelContact(accountID, externalID string, fields ContactInput, at time.Time) *Contact {
	c := &Contact{
		ID: newID(prefixContact), AccountID: accountID, FirstName: fields.FirstName, LastName: fields.LastName,
		Origin: originChannel, CreatedAt: at, UpdatedAt: at,
	}
	if fields.Email != "" {
		c.Email = &fields.Email
	}
	if phone, err := NormalizePhone(externalID); err == nil && phone != "" {
		c.Phone = &phone
	}
	return c
}

// contactForAddress returns the account's contact whose phone (for an id in international phone form)
// or email (for an email address) is externalID, or nil.
func contactForAddress(ctx context.Context, tx bun.Tx, accountID, externalID string) (*Contact, error) {
	c := new(Contact)
	var err error
	switch phone, email := addressOf(externalID); {
	case phone != "":
		err = tx.NewSelect().Model(c).Where("account_id = ? AND phone = ?", accountID, phone).Scan(ctx)
	case email != "":
		err = tx.NewSelect().Model(c).Where("account_id = ? AND email = ? AND origin = ?", accountID, email, originAPI).Order("id").Limit(1).Scan(ctx)
	default:
		return nil, nil
	}
	if isNoRows(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

// addressOf reads a sender id as an address: the normalized phone of an id in international phone
// form (+ or 00), or the normalized email of an id with an @; both empty for any other id.
func addressOf(externalID string) (phone, email string) {
	switch {
	case strings.HasPrefix(externalID, "+") || strings.HasPrefix(externalID, "00"):
		if p, err := NormalizePhone(externalID); err == nil {
			return p, ""
		}
	case strings.Contains(externalID, "@"):
		if e, err := NormalizeEmail(externalID); err == nil {
			return "", e
		}
	}
	return "", ""
}

// contactIdentity maps a sender id on a custom channel (fromId) to its contact.
type contactIdentity struct {
	bun.BaseModel `bun:"table:contact_identities"`

	AccountID  string    `bun:"account_id,pk"`
	ExternalID string    `bun:"external_id,pk"`
	ContactID  string    `bun:"contact_id"`
	CreatedAt  time.Time `bun:"created_at"`
}

func setConversationCampaign(ctx context.Context, db bun.IDB, contactID, campaignID string) error {
	_, err := db.NewUpdate().Model((*Contact)(nil)).Set("conversation_campaign_id = ?", campaignID).Where("id = ?", contactID).Exec(ctx)
	return err
}
