package models

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"
)

// SMSSettings are an account's credentials for a Twilio-compatible SMS API.
type SMSSettings struct {
	AccountSID string `json:"accountSid"`
	AuthToken  string `json:"authToken"`
	From       string `json:"from"`
}

// WhatsAppSettings are an account's WhatsApp Cloud API credentials. AppSecret verifies inbound
// webhooks (X-Hub-Signature-256) and VerifyToken answers Meta's subscription challenge.
type WhatsAppSettings struct {
	PhoneNumberID string `json:"phoneNumberId"`
	AccessToken   string `json:"accessToken"`
	AppSecret     string `json:"appSecret"`
	VerifyToken   string `json:"verifyToken"`
}

type channelCredentials struct {
	bun.BaseModel `bun:"table:channel_credentials"`

	AccountID string    `bun:"account_id,pk"`
	Kind      string    `bun:"kind,pk"`
	Settings  string    `bun:"settings"`
	LookupKey string    `bun:"lookup_key"`
	UpdatedAt time.Time `bun:"updated_at"`
}

// Validate checks and normalizes SMS credentials. Errors: VALIDATION_ERROR, INVALID_PHONE.
func (s *SMSSettings) Validate() error {
	s.AccountSID, s.AuthToken = strings.TrimSpace(s.AccountSID), strings.TrimSpace(s.AuthToken)
	if err := requireFields(textField{name: "accountSid", value: s.AccountSID}, textField{name: "authToken", value: s.AuthToken},
		textField{name: "from", value: strings.TrimSpace(s.From)}); err != nil {
		return err
	}
	from, err := NormalizePhone(s.From)
	if err != nil {
		return err
	}
	s.From = from
	return checkTexts(textField{"accountSid", s.AccountSID, 128}, textField{"authToken", s.AuthToken, 256})
}

// Validate checks WhatsApp credentials. Errors: VALIDATION_ERROR.
func (w *WhatsAppSettings) Validate() error {
	w.PhoneNumberID, w.AccessToken = strings.TrimSpace(w.PhoneNumberID), strings.TrimSpace(w.AccessToken)
	if err := requireFields(textField{name: "phoneNumberId", value: w.PhoneNumberID}, textField{name: "accessToken", value: w.AccessToken}); err != nil {
		return err
	}
	return checkTexts(textField{"phoneNumberId", w.PhoneNumberID, 64}, textField{"accessToken", w.AccessToken, 4096},
		textField{"appSecret", w.AppSecret, 256}, textField{"verifyToken", w.VerifyToken, 256})
}

// requireFields is the VALIDATION_ERROR naming every field of fields left empty, and only those
// ("accessToken is required", "accountSid and from are required"); nil when none is.
func requireFields(fields ...textField) error {
	var missing []string
	for _, f := range fields {
		if f.value == "" {
			missing = append(missing, f.name)
		}
	}
	switch len(missing) {
	case 0:
		return nil
	case 1:
		return Errorf(CodeValidation, "%s is required", missing[0])
	}
	return Errorf(CodeValidation, "%s and %s are required", strings.Join(missing[:len(missing)-1], ", "), missing[len(missing)-1])
}

// SetSMSSettings stores the account's SMS credentials. Errors: CONFLICT when another account uses the
// same sender number.
func (s *Store) SetSMSSettings(ctx context.Context, accountID string, v SMSSettings) error {
	return s.setChannelSettings(ctx, accountID, ChannelSMS, v, v.AccountSID+":"+v.From)
}

// SetWhatsAppSettings stores the account's WhatsApp credentials. Errors: CONFLICT when another
// account uses the same phone number id.
func (s *Store) SetWhatsAppSettings(ctx context.Context, accountID string, v WhatsAppSettings) error {
	return s.setChannelSettings(ctx, accountID, ChannelWhatsApp, v, v.PhoneNumberID)
}

func (s *Store) setChannelSettings(ctx context.Context, accountID, kind string, v any, lookup string) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	sealed, err := s.secrets.seal(string(raw), channelSettingsAAD(accountID, kind))
	if err != nil {
		return err
	}
	row := &channelCredentials{AccountID: accountID, Kind: kind, Settings: sealed, LookupKey: lookup, UpdatedAt: now()}
	_, err = s.db.NewInsert().Model(row).
		On("CONFLICT (account_id, kind) DO UPDATE").
		Set("settings = EXCLUDED.settings, lookup_key = EXCLUDED.lookup_key, updated_at = EXCLUDED.updated_at").
		Exec(ctx)
	if isUniqueViolation(err) {
		return Errorf(CodeConflict, "these %s credentials are already in use by another account", kind)
	}
	if err != nil {
		return fmt.Errorf("set %s settings: %w", kind, err)
	}
	return nil
}

// SMSSettings returns the account's SMS credentials, or NOT_FOUND.
func (s *Store) SMSSettings(ctx context.Context, accountID string) (*SMSSettings, error) {
	v := new(SMSSettings)
	return v, s.loadChannelSettings(ctx, accountID, ChannelSMS, v)
}

// WhatsAppSettings returns the account's WhatsApp credentials, or NOT_FOUND.
func (s *Store) WhatsAppSettings(ctx context.Context, accountID string) (*WhatsAppSettings, error) {
	v := new(WhatsAppSettings)
	return v, s.loadChannelSettings(ctx, accountID, ChannelWhatsApp, v)
}

func (s *Store) loadChannelSettings(ctx context.Context, accountID, kind string, v any) error {
	stored, err := channelSettings(ctx, s.db, accountID, kind)
	if err != nil {
		return err
	}
	raw, err := s.secrets.open(stored, channelSettingsAAD(accountID, kind))
	if err != nil {
		return fmt.Errorf("account %s %s credentials: %w", accountID, kind, err)
	}
	return json.Unmarshal([]byte(raw), v)
}

func channelSettings(ctx context.Context, db bun.IDB, accountID, kind string) (string, error) {
	row := new(channelCredentials)
	err := db.NewSelect().Model(row).Where("account_id = ? AND kind = ?", accountID, kind).Scan(ctx)
	if isNoRows(err) {
		return "", Errorf(CodeNotFound, "no %s credentials configured", kind)
	}
	if err != nil {
		return "", fmt.Errorf("channel settings: %w", err)
	}
	return row.Settings, nil
}

// AccountForChannel finds the account whose credentials of kind have the lookup key (SMS: the
// provider account SID and the number messages are sent to; WhatsApp: the phone number id; Messenger
// and Instagram: the page or Instagram account id).
func (s *Store) AccountForChannel(ctx context.Context, kind, lookup string) (string, error) {
	row := new(channelCredentials)
	err := s.db.NewSelect().Model(row).Where("kind = ? AND lookup_key = ?", kind, lookup).Scan(ctx)
	if isNoRows(err) {
		return "", notFound(kind + " channel")
	}
	if err != nil {
		return "", fmt.Errorf("account for channel: %w", err)
	}
	return row.AccountID, nil
}

// VerifyTokens lists the verify tokens of every account's credentials of kind (whatsapp, messenger or
// instagram), for answering Meta's subscription check, which names no account.
func (s *Store) VerifyTokens(ctx context.Context, kind string) ([]string, error) {
	var rows []channelCredentials
	if err := s.db.NewSelect().Model(&rows).Where("kind = ?", kind).Scan(ctx); err != nil {
		return nil, fmt.Errorf("%s verify tokens: %w", kind, err)
	}
	var tokens []string
	for _, r := range rows {
		var v struct {
			VerifyToken string `json:"verifyToken"`
		}
		// A row this process cannot decrypt (CheckSecrets refuses to start with one) offers no token.
		raw, err := s.secrets.open(r.Settings, channelSettingsAAD(r.AccountID, r.Kind))
		if err == nil && json.Unmarshal([]byte(raw), &v) == nil && v.VerifyToken != "" {
			tokens = append(tokens, v.VerifyToken)
		}
	}
	return tokens, nil
}
