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

// Contact is a person an account talks to.
type Contact struct {
	bun.BaseModel `bun:"table:contacts"`

	ID        string  `bun:"id,pk" json:"id"`
	AccountID string  `bun:"account_id" json:"-"`
	FirstName string  `bun:"first_name" json:"firstName"`
	LastName  string  `bun:"last_name" json:"lastName"`
	Phone     *string `bun:"phone" json:"phone"`
	Email     *string `bun:"email" json:"email"`
	Origin    string  `bun:"origin" json:"-"`
	// BotPaused is set by a handoff or a human reply and cleared by PUT /contacts/{id}/bot.
	BotPaused bool `bun:"bot_paused" json:"-"`
	// ConversationCampaignID is the campaign whose bot configuration the conversation continues with.
	ConversationCampaignID *string `bun:"conversation_campaign_id" json:"-"`
	// AssigneeID is the user who owns the conversation (nil: unassigned); see Store.Assign.
	AssigneeID *string `bun:"assignee_id" json:"-"`
	// BotPausedAt is when the bot was last paused for the contact (see ResumeIdleBots).
	BotPausedAt *time.Time `bun:"bot_paused_at" json:"-"`
	// TimeZone is the contact's IANA zone for quiet hours; nil: its phone's, else the account's.
	TimeZone *string `bun:"time_zone" json:"timeZone"`
	// Consent is the contact's consent by channel (consent.go).
	Consent   ConsentMap `bun:"consent,type:text" json:"consent"`
	CreatedAt time.Time  `bun:"created_at" json:"createdAt"`
	UpdatedAt time.Time  `bun:"updated_at" json:"-"`
}

// ContactInput is what a client sends to create a contact.
type ContactInput struct {
	FirstName string
	LastName  string
	Phone     string
	Email     string
	// TimeZone is the contact's IANA time zone, for quiet hours ("" when not known).
	TimeZone string
}

// Where a contact came from: the API (identified by phone, else email) or a custom channel
// (identified by the sender's fromId).
const (
	originAPI     = "api"
	originChannel = "channel"
)

// maxNameLength bounds first and last names.
const maxNameLength = 200

// normalize validates the input and returns the contact it describes (without ids); a phone without a
// country code is read in region (Store.PhoneRegion).
func (in ContactInput) normalize(region string) (*Contact, error) {
	phone, err := NormalizePhoneIn(in.Phone, region)
	if err != nil {
		return nil, err
	}
	email, err := NormalizeEmail(in.Email)
	if err != nil {
		return nil, err
	}
	if phone == "" && email == "" {
		return nil, Errorf(CodeValidation, "a contact needs a phone or an email")
	}
	c := &Contact{}
	if c.FirstName, err = cleanName("firstName", in.FirstName); err != nil {
		return nil, err
	}
	if c.LastName, err = cleanName("lastName", in.LastName); err != nil {
		return nil, err
	}
	if phone != "" {
		c.Phone = &phone
	}
	if email != "" {
		c.Email = &email
	}
	if tz := strings.TrimSpace(in.TimeZone); tz != "" {
		if err := ValidTimeZone(tz); err != nil {
			return nil, Errorf(CodeValidation, "timeZone must be an IANA time zone such as America/New_York")
		}
		c.TimeZone = &tz
	}
	return c, nil
}

func cleanName(field, v string) (string, error) {
	v = strings.TrimSpace(v)
	if !utf8.ValidString(v) || strings.ContainsRune(v, 0) {
		return "", Errorf(CodeValidation, "%s must be valid UTF-8 text", field)
	}
	if utf8.RuneCountInString(v) > maxNameLength {
		return "", Errorf(CodeValidation, "%s must be at most %d characters", field, maxNameLength)
	}
	return v, nil
}

// CreateOrGetContact creates a contact, or returns the existing one when the phone (or, for a contact
// without a phone, the email) is already in the account; created tells which. Concurrent calls for one
// phone make one contact: the unique index decides, and the losers read the winner's row. A phone
// without a country code is read in the account's PhoneRegion. Errors: VALIDATION_ERROR, INVALID_PHONE.
func (s *Store) CreateOrGetContact(ctx context.Context, accountID string, in ContactInput) (*Contact, bool, error) {
	c, outcome, err := s.createOrGetContact(ctx, accountID, in)
	return c, outcome == contactCreated, err
}

// What createOrGetContact did: created the contact, changed an existing one (its time zone), or found
// it as it was.
const (
	contactCreated = iota + 1
	contactUpdated
	contactUnchanged
)

// createOrGetContact is CreateOrGetContact, telling also whether it changed an existing contact.
func (s *Store) createOrGetContact(ctx context.Context, accountID string, in ContactInput) (*Contact, int, error) {
	region, err := s.phoneRegionFor(ctx, accountID, in.Phone)
	if err != nil {
		return nil, 0, fmt.Errorf("create contact: %w", err)
	}
	c, err := in.normalize(region)
	if err != nil {
		return nil, 0, err
	}
	c.ID = newID(prefixContact)
	c.AccountID = accountID
	c.Origin = originAPI
	c.CreatedAt = now()
	c.UpdatedAt = c.CreatedAt

	res, err := s.db.NewInsert().Model(c).On("CONFLICT DO NOTHING").Exec(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("create contact: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return nil, 0, fmt.Errorf("create contact: %w", err)
	} else if n == 1 {
		return c, contactCreated, nil
	}

	var existing *Contact
	if c.Phone != nil {
		existing, err = s.ContactByPhone(ctx, accountID, *c.Phone)
	} else {
		existing, err = s.contactByEmailOnly(ctx, accountID, *c.Email)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("create contact: read existing: %w", err)
	}
	if c.TimeZone != nil && (existing.TimeZone == nil || *existing.TimeZone != *c.TimeZone) {
		// The newest word on where the person lives wins: quiet hours follow it.
		if _, err := s.db.NewUpdate().Model((*Contact)(nil)).Set("time_zone = ?", *c.TimeZone).Set("updated_at = ?", now()).
			Where("id = ?", existing.ID).Exec(ctx); err != nil {
			return nil, 0, fmt.Errorf("create contact: time zone: %w", err)
		}
		existing.TimeZone = c.TimeZone
		return existing, contactUpdated, nil
	}
	return existing, contactUnchanged, nil
}

// ContactByID returns the account's contact with id, or NOT_FOUND (also for another account's contact).
func (s *Store) ContactByID(ctx context.Context, accountID, id string) (*Contact, error) {
	if id == "" || len(id) > maxIDLength {
		return nil, notFound("contact")
	}
	return s.oneContact(ctx, s.db.NewSelect().Where("account_id = ? AND id = ?", accountID, id))
}

// ContactsByID returns the account's contacts among ids, by id, in one query (a page's rows naming
// their contacts); ids of other accounts' or deleted contacts are simply absent.
func (s *Store) ContactsByID(ctx context.Context, accountID string, ids []string) (map[string]*Contact, error) {
	out := make(map[string]*Contact, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var contacts []Contact
	if err := s.db.NewSelect().Model(&contacts).Where("account_id = ? AND id IN (?)", accountID, bun.In(dedupe(ids))).Scan(ctx); err != nil {
		return nil, fmt.Errorf("contacts by id: %w", err)
	}
	for i := range contacts {
		out[contacts[i].ID] = &contacts[i]
	}
	return out, nil
}

// ContactByPhone looks a contact up by phone in any accepted notation (without a country code: in the
// account's PhoneRegion, as CreateOrGetContact reads it). Errors: INVALID_PHONE, NOT_FOUND.
func (s *Store) ContactByPhone(ctx context.Context, accountID, phone string) (*Contact, error) {
	region, err := s.phoneRegionFor(ctx, accountID, phone)
	if err != nil {
		return nil, fmt.Errorf("contact by phone: %w", err)
	}
	norm, err := NormalizePhoneIn(phone, region)
	if err != nil {
		return nil, err
	}
	if norm == "" {
		return nil, Errorf(CodeValidation, "phoneNumber must not be empty")
	}
	return s.oneContact(ctx, s.db.NewSelect().Where("account_id = ? AND phone = ?", accountID, norm))
}

// ContactByEmail looks a contact up by email; when several contacts share it, the oldest is returned.
// Errors: VALIDATION_ERROR, NOT_FOUND.
func (s *Store) ContactByEmail(ctx context.Context, accountID, email string) (*Contact, error) {
	norm, err := NormalizeEmail(email)
	if err != nil {
		return nil, err
	}
	if norm == "" {
		return nil, Errorf(CodeValidation, "email must not be empty")
	}
	return s.oneContact(ctx, s.db.NewSelect().Where("account_id = ? AND email = ?", accountID, norm).Order("id").Limit(1))
}

func (s *Store) contactByEmailOnly(ctx context.Context, accountID, email string) (*Contact, error) {
	return s.oneContact(ctx, s.db.NewSelect().Where("account_id = ? AND email = ? AND phone IS NULL AND origin = ?", accountID, email, originAPI))
}

func (s *Store) oneContact(ctx context.Context, q *bun.SelectQuery) (*Contact, error) {
	c := new(Contact)
	err := q.Model(c).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("contact")
	}
	if err != nil {
		return nil, fmt.Errorf("select contact: %w", err)
	}
	return c, nil
}
