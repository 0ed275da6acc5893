package models

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"funnelchat/models/rules"
)

// Consent (README, "Compliance"): a contact's state per channel, opted in or opted out, with nothing
// recorded meaning unknown (sending is allowed). Every change is an event of the append-only ledger
// (consent_events): no code path updates or deletes one. The state is kept on the contact as well, so
// that the outgoing door knows it without a query of its own.

// Consent statuses (rules.ConsentOptedIn, rules.ConsentOptedOut).
const (
	ConsentOptedIn  = rules.ConsentOptedIn
	ConsentOptedOut = rules.ConsentOptedOut
)

// ConsentAllChannels is the channel of consent given or withdrawn for every channel at once (a form's
// consent, or a PUT without a channel). A channel's own state, recorded later, overrides it.
const ConsentAllChannels = rules.ConsentAllChannels

// Sources of consent changes that the service makes itself; any other source is the caller's.
const (
	ConsentSourceKeyword = "keyword"
	ConsentSourceBot     = "bot"
	ConsentSourceInbox   = "inbox"
	ConsentSourceImport  = "import"
	ConsentSourceAPI     = "api"
)

// ReasonOptedOut is the door's reason for a message to a contact who opted out on its channel, and the
// error code of a send the API refuses for it (409).
const ReasonOptedOut = rules.ReasonOptedOut

// CodeOptedOut is the error of a team reply or a send to an opted-out contact: 409, nothing stored.
const CodeOptedOut = ReasonOptedOut

// EventConsentChanged tells live listeners that a contact's consent changed; its data is the contact's
// id and consent.
const EventConsentChanged = "contact.consent_changed"

// Limits of consent evidence.
const (
	maxConsentSource = 100
	maxConsentText   = 2000
)

// ConsentState is a contact's consent on one channel: its status, when and by what it was given or
// withdrawn (rules.ConsentState).
type ConsentState = rules.ConsentState

// ConsentMap is a contact's consent by channel (ConsentAllChannels for all of them), stored as JSON.
// It is rules.ConsentMap with the methods that store it; one converts to the other.
type ConsentMap map[string]ConsentState

// For returns the state that holds on channel: its own, else the all-channels state.
func (m ConsentMap) For(channel string) (ConsentState, bool) {
	return rules.ConsentMap(m).For(channel)
}

// OptedOut reports whether the contact opted out on channel.
func (m ConsentMap) OptedOut(channel string) bool {
	st, ok := m.For(channel)
	return ok && st.Status == ConsentOptedOut
}

// Value stores the map as a JSON object ("{}" when empty).
func (m ConsentMap) Value() (driver.Value, error) {
	if len(m) == 0 {
		return "{}", nil
	}
	b, err := json.Marshal(map[string]ConsentState(m))
	return string(b), err
}

// Scan reads the stored JSON object.
func (m *ConsentMap) Scan(src any) error {
	var raw []byte
	switch v := src.(type) {
	case nil:
		*m = ConsentMap{}
		return nil
	case string:
		raw = []byte(v)
	case []byte:
		raw = v
	default:
		return fmt.Errorf("consent: cannot scan %T", src)
	}
	out := ConsentMap{}
	if err := json.Unmarshal(raw, &out); err != nil {
		return fmt.Errorf("consent: %w", err)
	}
	*m = out
	return nil
}

// MarshalJSON writes an empty map as {} rather than null.
func (m ConsentMap) MarshalJSON() ([]byte, error) {
	if m == nil {
		return []byte("{}"), nil
	}
	return json.Marshal(map[string]ConsentState(m))
}

// ConsentEvent is one change in the ledger, as GET /v1/contacts/{id}/consent lists it.
type ConsentEvent struct {
	bun.BaseModel `bun:"table:consent_events"`

	ID        string    `bun:"id,pk" json:"-"`
	AccountID string    `bun:"account_id" json:"-"`
	ContactID string    `bun:"contact_id" json:"-"`
	Channel   string    `bun:"channel" json:"channel"`
	Status    string    `bun:"status" json:"status"`
	Source    string    `bun:"source" json:"source"`
	Text      string    `bun:"text" json:"text"`
	IP        *string   `bun:"ip" json:"ip"`
	MessageID *string   `bun:"message_id" json:"messageId"`
	UserID    *string   `bun:"user_id" json:"userId"`
	At        time.Time `bun:"at" json:"at"`

	// UserEmail (with UserID) and APIKeyLast4 are who recorded the change, as stored.
	UserEmail   *string `bun:"user_email" json:"-"`
	APIKeyLast4 *string `bun:"api_key_last4" json:"-"`
	// RecordedBy is who recorded the change by hand, from UserID, UserEmail and APIKeyLast4; nil for
	// a change the service made itself (keyword, bot).
	RecordedBy *ConsentRecorder `bun:"-" json:"recordedBy"`
}

var _ bun.AfterScanRowHook = (*ConsentEvent)(nil)

// AfterScanRow fills RecordedBy from the stored columns, for every query that reads events.
func (e *ConsentEvent) AfterScanRow(context.Context) error {
	e.RecordedBy = nil
	switch {
	case e.UserID != nil:
		e.RecordedBy = &ConsentRecorder{UserID: *e.UserID, Email: derefOr(e.UserEmail, "")}
	case e.APIKeyLast4 != nil:
		e.RecordedBy = &ConsentRecorder{APIKey: *e.APIKeyLast4}
	}
	return nil
}

// ConsentRecorder is who recorded a consent change by hand: a signed-in inbox user (UserID and their
// Email as it was then) or a request with an API key (APIKey: the key's last 4 characters; the key
// itself is never stored). Make one with RecordedByUser or RecordedByAPIKey.
type ConsentRecorder struct {
	UserID string `json:"userId,omitempty"`
	Email  string `json:"email,omitempty"`
	APIKey string `json:"apiKey,omitempty"`
}

// RecordedByUser is the inbox user who records a change.
func RecordedByUser(userID, email string) *ConsentRecorder {
	return &ConsentRecorder{UserID: userID, Email: email}
}

// apiKeyShown is how many of an API key's last characters a consent event keeps: enough for the
// account to tell its keys apart, far too few to use one.
const apiKeyShown = 4

// RecordedByAPIKey is the API request that records a change, named by the last 4 characters of key,
// the raw key it authenticated with (only those are kept); nil when there is no key.
func RecordedByAPIKey(key string) *ConsentRecorder {
	if key == "" {
		return nil
	}
	if len(key) > apiKeyShown {
		key = key[len(key)-apiKeyShown:] // keys are ASCII (newAPIKey)
	}
	return &ConsentRecorder{APIKey: strings.Clone(key)}
}

// Label is how the export names the recorder: the user's email, or "api_key:" and the key's last 4.
// A user recorded before emails were kept, and since removed from the team, is "user:" and their id.
func (r *ConsentRecorder) Label() string {
	switch {
	case r == nil:
		return ""
	case r.APIKey != "":
		return "api_key:" + r.APIKey
	case r.Email != "":
		return r.Email
	}
	return "user:" + r.UserID
}

// ConsentInput is evidence of consent given or withdrawn, from the API, the inbox or an import.
type ConsentInput struct {
	// Channel is the channel it is for; "" or ConsentAllChannels: every channel.
	Channel string
	// Status is ConsentOptedIn or ConsentOptedOut ("" means opted in, for evidence given with a new
	// contact).
	Status string
	// Source says where it came from ("landing-page form"); "" is the default of the path.
	Source string
	// Text is the wording the person agreed to, or a note on how it was collected.
	Text string
	IP   string
	// At is when it was given; zero: now. It may not lie in the future.
	At time.Time
	// RecordedBy is the inbox user or the API key that recorded it (RecordedByUser,
	// RecordedByAPIKey); nil for a change the service makes itself.
	RecordedBy *ConsentRecorder
}

// Normalize validates the input and fills its defaults: defaultSource when it has no source. Errors:
// VALIDATION_ERROR naming the field (prefix, e.g. "consent.", goes before each name).
func (in *ConsentInput) Normalize(prefix, defaultSource string) error {
	in.Channel = strings.TrimSpace(in.Channel)
	if in.Channel == "" {
		in.Channel = ConsentAllChannels
	}
	if err := checkText(prefix+"channel", in.Channel, maxLabelLength); err != nil {
		return err
	}
	switch in.Status = strings.TrimSpace(in.Status); in.Status {
	case "":
		in.Status = ConsentOptedIn
	case ConsentOptedIn, ConsentOptedOut:
	default:
		return Errorf(CodeValidation, "%sstatus must be opted_in or opted_out", prefix)
	}
	if in.Source = strings.TrimSpace(in.Source); in.Source == "" {
		in.Source = defaultSource
	}
	if err := checkTexts(textField{prefix + "source", in.Source, maxConsentSource}, textField{prefix + "text", in.Text, maxConsentText}); err != nil {
		return err
	}
	if in.IP = strings.TrimSpace(in.IP); in.IP != "" {
		addr, err := netip.ParseAddr(in.IP)
		if err != nil {
			return Errorf(CodeValidation, "%sip must be an IPv4 or IPv6 address", prefix)
		}
		in.IP = addr.String()
	}
	if in.At.IsZero() {
		in.At = now()
	} else if in.At.After(now().Add(time.Minute)) {
		return Errorf(CodeValidation, "%sat must not be in the future", prefix)
	}
	// Microseconds, as the database keeps times: the state on the contact and its ledger event agree.
	in.At = in.At.UTC().Truncate(time.Microsecond)
	return nil
}

// consentChange is a change to apply to one contact.
type consentChange struct {
	ConsentInput
	MessageID string
	// Always records the event even when the state does not change (evidence given again); a keyword
	// or the bot repeating the state records nothing.
	Always bool
}

// applyConsent records change for the contact c inside tx, which must hold c's row locked (lockContact)
// so that two changes of one contact apply one after the other. It appends the event, updates the
// contact's state, and on an opt-out stops what the campaigns still owe the contact on that channel
// (suppressSends) and reopens a resolved or snoozed conversation (the team should know). It returns
// whether anything was recorded, and whether the conversation was reopened (for emitConsent).
//
// What the change does to the state is rules.NextConsent: the state is the latest change by its time
// (at), not by when it was recorded, so back-dated evidence goes into the ledger and changes no state.
func applyConsent(ctx context.Context, tx bun.IDB, c *Contact, change consentChange) (recorded, reopened bool, err error) {
	next, record, apply := rules.NextConsent(rules.ConsentMap(c.Consent), rules.ConsentChange{
		Channel: change.Channel, Status: change.Status, Source: change.Source, At: change.At, Always: change.Always,
	})
	if !record {
		return false, false, nil
	}
	e := &ConsentEvent{
		ID: newID(prefixConsent), AccountID: c.AccountID, ContactID: c.ID, Channel: change.Channel, Status: change.Status,
		Source: change.Source, Text: change.Text, At: change.At,
		IP: nilIfEmpty(change.IP), MessageID: nilIfEmpty(change.MessageID),
	}
	if by := change.RecordedBy; by != nil {
		e.UserID, e.UserEmail, e.APIKeyLast4 = nilIfEmpty(by.UserID), nilIfEmpty(by.Email), nilIfEmpty(by.APIKey)
	}
	if _, err := tx.NewInsert().Model(e).Exec(ctx); err != nil {
		return false, false, fmt.Errorf("record consent: %w", err)
	}
	if !apply {
		return true, false, nil // older than the state in force: evidence for the ledger only
	}
	at := now()
	if _, err := tx.NewUpdate().Model((*Contact)(nil)).Set("consent = ?", ConsentMap(next)).Set("updated_at = ?", at).
		Where("id = ?", c.ID).Exec(ctx); err != nil {
		return false, false, fmt.Errorf("record consent: %w", err)
	}
	c.Consent = ConsentMap(next)
	if change.Status == ConsentOptedOut {
		if err := suppressSends(ctx, tx, c.ID, change.Channel); err != nil {
			return false, false, err
		}
		if reopened, err = reopenConversation(ctx, tx, c.ID, at); err != nil {
			return false, false, err
		}
	}
	return true, reopened, nil
}

// suppressSends stops what campaigns owe a contact who opted out on channel (ConsentAllChannels: on
// every channel): sends not written yet become suppressed with ReasonOptedOut, and no follow-up is due
// any more. An opening already written is stopped by the door when its delivery asks it.
func suppressSends(ctx context.Context, tx bun.IDB, contactID, channel string) error {
	campaigns := tx.NewSelect().TableExpr("campaigns").Column("id")
	if channel != ConsentAllChannels {
		campaigns = campaigns.Where("channel = ? OR channel = ?", channel, customPrefix+channel)
	}
	at := now()
	_, err := tx.NewUpdate().Model((*CampaignSend)(nil)).
		Set("status = ?", SendSuppressed).Set("detail = ?", ReasonOptedOut).Set("status_at = ?", at).
		Set("follow_ups_done = ?", true).Set("next_follow_up_at = NULL").
		Where("contact_id = ? AND status IN (?)", contactID, bun.In(unwrittenSendStatuses)).
		Where("campaign_id IN (?)", campaigns).Exec(ctx)
	if err != nil {
		return fmt.Errorf("suppress sends: %w", err)
	}
	_, err = tx.NewUpdate().Model((*CampaignSend)(nil)).
		Set("follow_ups_done = ?", true).Set("next_follow_up_at = NULL").
		Where("contact_id = ? AND follow_ups_done = ?", contactID, false).
		Where("campaign_id IN (?)", campaigns).Exec(ctx)
	if err != nil {
		return fmt.Errorf("suppress follow-ups: %w", err)
	}
	return nil
}

// changeConsent runs fn, a transaction that changes the contact's consent (fn locks the contact with
// lockContact first). A campaign message being decided for delivery share-locks the contact for that
// short transaction only (DecideAttempt), so a change waits for no delivery's call; a deadlock or
// serialization failure is run again (inTx), so fn sets all it returns anew on each run.
func (s *Store) changeConsent(ctx context.Context, fn func(context.Context, bun.Tx) error) error {
	return s.inTx(ctx, fn)
}

// lockContact reads the contact inside tx and, on PostgreSQL, locks its row until tx ends (SQLite has
// one writer at a time).
func (s *Store) lockContact(ctx context.Context, tx bun.IDB, accountID, contactID string) (*Contact, error) {
	c := new(Contact)
	q := tx.NewSelect().Model(c).Where("account_id = ? AND id = ?", accountID, contactID)
	if !s.IsSQLite() {
		q = q.For("UPDATE")
	}
	if err := q.Scan(ctx); err != nil {
		if isNoRows(err) {
			return nil, notFound("contact")
		}
		return nil, fmt.Errorf("lock contact: %w", err)
	}
	return c, nil
}

// consentChanged is the data of a contact.consent_changed event.
type consentChanged struct {
	ID      string     `json:"id"`
	Consent ConsentMap `json:"consent"`
}

// emitConsent publishes a consent change, and the reopening it made.
func (s *Store) emitConsent(ctx context.Context, c *Contact, reopened bool) {
	s.emit(ctx, c.AccountID, EventConsentChanged, consentChanged{ID: c.ID, Consent: c.Consent})
	if reopened {
		s.emitReopened(ctx, c.AccountID, c.ID)
	}
}

// SetConsent records consent given or withdrawn by hand (PUT /v1/contacts/{id}/consent, the inbox):
// always an event, as evidence, even when the state stays the same. in must have passed Normalize.
// It returns the contact with its consent after the change. Errors: NOT_FOUND.
func (s *Store) SetConsent(ctx context.Context, accountID, contactID string, in ConsentInput) (*Contact, error) {
	var (
		c        *Contact
		reopened bool
	)
	err := s.changeConsent(ctx, func(ctx context.Context, tx bun.Tx) error {
		var err error
		if c, err = s.lockContact(ctx, tx, accountID, contactID); err != nil {
			return err
		}
		_, reopened, err = applyConsent(ctx, tx, c, consentChange{ConsentInput: in, Always: true})
		return err
	})
	if err != nil {
		return nil, err
	}
	s.emitConsent(ctx, c, reopened)
	return c, nil
}

// ContactConsent is what GET /v1/contacts/{id}/consent shows: the states and every event, oldest
// first.
type ContactConsent struct {
	Channels ConsentMap      `json:"channels"`
	Events   []*ConsentEvent `json:"events"`
}

// maxConsentEvents bounds the events one contact's ledger lists; the export has them all.
const maxConsentEvents = 1000

// ConsentOf returns the contact's consent and its ledger. Errors: NOT_FOUND.
func (s *Store) ConsentOf(ctx context.Context, accountID, contactID string) (*ContactConsent, error) {
	c, err := s.ContactByID(ctx, accountID, contactID)
	if err != nil {
		return nil, err
	}
	out := &ContactConsent{Channels: c.Consent, Events: []*ConsentEvent{}}
	if out.Channels == nil {
		out.Channels = ConsentMap{}
	}
	// The newest events when there are more than the page holds (they set the state in force), listed
	// oldest first.
	if err := s.db.NewSelect().Model(&out.Events).Where("contact_id = ?", c.ID).Order("id DESC").Limit(maxConsentEvents).Scan(ctx); err != nil {
		return nil, fmt.Errorf("consent events: %w", err)
	}
	slices.Reverse(out.Events)
	return out, nil
}

func nilIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
