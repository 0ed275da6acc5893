package models

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"funnelchat/models/rules"
)

// ComplianceSettings is an account's consent and quiet-hours configuration (GET /v1/settings/compliance;
// README, "Compliance"): its own keywords besides the built-in ones (keywords.go), the texts sent for
// an opt-out, an opt-in and HELP, the quiet hours of business-initiated messages (nil: none), the
// time zone used for a contact whose own zone is not known, and the country in which a phone number
// written without a country code is read (nil: the time zone's country, see PhoneRegion).
type ComplianceSettings struct {
	OptOutKeywords     []string    `json:"optOutKeywords"`
	OptInKeywords      []string    `json:"optInKeywords"`
	OptOutConfirmation string      `json:"optOutConfirmation"`
	OptInConfirmation  string      `json:"optInConfirmation"`
	HelpText           string      `json:"helpText"`
	QuietHours         *QuietHours `json:"quietHours"`
	TimeZone           string      `json:"timeZone"`
	DefaultCountry     *string     `json:"defaultCountry"`
}

// ComplianceInput is a partial update of ComplianceSettings: nil fields are left as they are.
// SetQuietHours says that QuietHours was given: nil then means none for the account ("quietHours":
// null), which is different from not having chosen (the operator's DEFAULT_QUIET_HOURS).
// SetDefaultCountry says that DefaultCountry was given: nil then clears it.
type ComplianceInput struct {
	OptOutKeywords     *[]string
	OptInKeywords      *[]string
	OptOutConfirmation *string
	OptInConfirmation  *string
	HelpText           *string
	SetQuietHours      bool
	QuietHours         *QuietHours
	TimeZone           *string
	SetDefaultCountry  bool
	DefaultCountry     *string
}

// Limits of the compliance settings.
const (
	// MaxComplianceText bounds a confirmation or the help text: two SMS segments of GSM-7.
	MaxComplianceText = 320
	// maxAccountKeywords bounds each of an account's keyword lists.
	maxAccountKeywords = 50
	defaultTimeZone    = "UTC"
	quietHoursOff      = "off"
)

// DefaultQuietHours is DEFAULT_QUIET_HOURS' default: the FCC's 8:00-21:00 calling window (47 CFR
// 64.1200(c)(1)) as quiet hours.
var DefaultQuietHours = QuietHours{Start: "21:00", End: "08:00"}

// SetDefaultQuietHours sets the quiet hours of accounts that have not chosen their own (the
// operator's DEFAULT_QUIET_HOURS; nil for none). Without a call they are DefaultQuietHours.
func (s *Store) SetDefaultQuietHours(q *QuietHours) {
	if q == nil {
		s.quietDefault = &QuietHours{} // the zero window: none
		return
	}
	cp := *q
	s.quietDefault = &cp
}

// defaultQuiet is the operator's quiet hours (nil for none).
func (s *Store) defaultQuiet() *QuietHours {
	switch {
	case s.quietDefault == nil:
		q := DefaultQuietHours
		return &q
	case *s.quietDefault == QuietHours{}:
		return nil
	}
	q := *s.quietDefault
	return &q
}

// complianceRow is an account's stored settings; NULL texts and quiet hours are the defaults.
type complianceRow struct {
	bun.BaseModel `bun:"table:compliance_settings"`

	AccountID          string    `bun:"account_id,pk"`
	OptOutKeywords     string    `bun:"opt_out_keywords"`
	OptInKeywords      string    `bun:"opt_in_keywords"`
	OptOutConfirmation *string   `bun:"opt_out_confirmation"`
	OptInConfirmation  *string   `bun:"opt_in_confirmation"`
	HelpText           *string   `bun:"help_text"`
	QuietHours         *string   `bun:"quiet_hours"`
	TimeZone           string    `bun:"time_zone"`
	DefaultCountry     *string   `bun:"default_country"`
	UpdatedAt          time.Time `bun:"updated_at"`
}

// ComplianceSettings returns the account's effective settings: its own, else the defaults. Errors:
// NOT_FOUND.
func (s *Store) ComplianceSettings(ctx context.Context, accountID string) (*ComplianceSettings, error) {
	return s.complianceSettings(ctx, s.db, accountID)
}

func (s *Store) complianceSettings(ctx context.Context, db bun.IDB, accountID string) (*ComplianceSettings, error) {
	var out struct {
		Name string `bun:"name"`
		complianceRow
	}
	err := db.NewSelect().TableExpr("accounts AS a").
		ColumnExpr("a.name").
		ColumnExpr("cs.opt_out_keywords, cs.opt_in_keywords, cs.opt_out_confirmation, cs.opt_in_confirmation, cs.help_text, cs.quiet_hours, cs.default_country").
		ColumnExpr("COALESCE(cs.time_zone, ?) AS time_zone", defaultTimeZone).
		Join("LEFT JOIN compliance_settings AS cs ON cs.account_id = a.id").
		Where("a.id = ?", accountID).Scan(ctx, &out)
	if isNoRows(err) {
		return nil, notFound("account")
	}
	if err != nil {
		return nil, fmt.Errorf("compliance settings: %w", err)
	}
	return s.settingsOf(out.Name, &out.complianceRow)
}

// settingsOf is the effective settings of an account named name with the stored row (its columns NULL
// or empty when the account never saved any).
func (s *Store) settingsOf(name string, row *complianceRow) (*ComplianceSettings, error) {
	// The default texts name the account, as carriers expect a program's messages to; an account
	// without a name speaks as "us".
	from, helpFrom := "us", ""
	if name = strings.TrimSpace(name); name != "" {
		from, helpFrom = name, name+": "
	}
	help := "reply to this message and our team will answer. Reply STOP to opt out."
	if helpFrom == "" {
		help = "Reply to this message and our team will answer. Reply STOP to opt out."
	}
	cs := &ComplianceSettings{
		OptOutKeywords:     []string{},
		OptInKeywords:      []string{},
		OptOutConfirmation: fmt.Sprintf("You have opted out of messages from %s on this channel and will receive no more. Reply START to opt back in.", from),
		OptInConfirmation:  fmt.Sprintf("You have opted in to messages from %s again. Reply STOP to opt out, HELP for help.", from),
		HelpText:           helpFrom + help,
		QuietHours:         s.defaultQuiet(),
		TimeZone:           row.TimeZone,
		DefaultCountry:     row.DefaultCountry,
	}
	for _, kw := range []struct {
		raw string
		out *[]string
	}{{row.OptOutKeywords, &cs.OptOutKeywords}, {row.OptInKeywords, &cs.OptInKeywords}} {
		if kw.raw != "" {
			if err := json.Unmarshal([]byte(kw.raw), kw.out); err != nil {
				return nil, fmt.Errorf("compliance settings: keywords: %w", err)
			}
		}
	}
	for _, t := range []struct {
		stored *string
		out    *string
	}{{row.OptOutConfirmation, &cs.OptOutConfirmation}, {row.OptInConfirmation, &cs.OptInConfirmation}, {row.HelpText, &cs.HelpText}} {
		if t.stored != nil {
			*t.out = *t.stored
		}
	}
	if row.QuietHours != nil {
		q, err := ParseQuietHours(*row.QuietHours)
		if err != nil {
			return nil, fmt.Errorf("compliance settings: stored quiet hours: %w", err)
		}
		cs.QuietHours = q
	}
	if cs.TimeZone == "" {
		cs.TimeZone = defaultTimeZone
	}
	return cs, nil
}

// UpdateComplianceSettings changes the fields in given and returns the effective settings after the
// update. Nothing is stored when a field is invalid. Errors: VALIDATION_ERROR naming the field (a
// FieldErrors with one error per invalid field, so that a form can list them all), NOT_FOUND.
func (s *Store) UpdateComplianceSettings(ctx context.Context, accountID string, in ComplianceInput) (*ComplianceSettings, error) {
	row := complianceRow{AccountID: accountID, OptOutKeywords: "[]", OptInKeywords: "[]", TimeZone: defaultTimeZone, UpdatedAt: now()}
	var set []string
	var problems FieldErrors
	for _, kw := range []struct {
		field string
		in    *[]string
		out   *string
	}{{"optOutKeywords", in.OptOutKeywords, &row.OptOutKeywords}, {"optInKeywords", in.OptInKeywords, &row.OptInKeywords}} {
		if kw.in == nil {
			continue
		}
		if len(*kw.in) > maxAccountKeywords {
			problems.add(Errorf(CodeValidation, "%s must hold at most %d keywords", kw.field, maxAccountKeywords))
			continue
		}
		words, err := NormalizeKeywordList(kw.field, *kw.in)
		if err != nil {
			problems.add(err)
			continue
		}
		raw, _ := json.Marshal(words)
		*kw.out = string(raw)
		set = append(set, snakeCase(kw.field))
	}
	for _, t := range []struct {
		field string
		in    *string
		out   **string
	}{{"optOutConfirmation", in.OptOutConfirmation, &row.OptOutConfirmation}, {"optInConfirmation", in.OptInConfirmation, &row.OptInConfirmation}, {"helpText", in.HelpText, &row.HelpText}} {
		if t.in == nil {
			continue
		}
		v := strings.TrimSpace(*t.in)
		if err := checkText(t.field, v, MaxComplianceText); err != nil {
			problems.add(err)
			continue
		}
		if v == "" {
			problems.add(Errorf(CodeValidation, "%s must not be empty: the contact is owed an answer", t.field))
			continue
		}
		*t.out = &v
		set = append(set, snakeCase(t.field))
	}
	if in.SetQuietHours {
		v := quietHoursOff
		if in.QuietHours != nil {
			if err := validateQuietHours(*in.QuietHours); err != nil {
				problems.add(Errorf(CodeValidation, "quietHours: %s", ErrorMessage(err)))
			}
			v = in.QuietHours.String()
		}
		row.QuietHours = &v
		set = append(set, "quiet_hours")
	}
	if in.TimeZone != nil {
		v := strings.TrimSpace(*in.TimeZone)
		if err := ValidTimeZone(v); err != nil {
			problems.add(Errorf(CodeValidation, "timeZone must be an IANA time zone such as America/New_York"))
		}
		row.TimeZone = v
		set = append(set, "time_zone")
	}
	if in.SetDefaultCountry {
		if in.DefaultCountry != nil {
			c, err := rules.Country("defaultCountry", *in.DefaultCountry)
			if err != nil {
				problems.add(validation(err))
			}
			row.DefaultCountry = &c
		}
		set = append(set, "default_country")
	}
	if err := problems.orNil(); err != nil {
		return nil, err
	}
	if _, err := s.AccountByID(ctx, accountID); err != nil {
		return nil, err
	}
	if len(set) > 0 {
		q := s.db.NewInsert().Model(&row).On("CONFLICT (account_id) DO UPDATE").Set("updated_at = EXCLUDED.updated_at")
		for _, col := range set {
			q = q.Set(col + " = EXCLUDED." + col)
		}
		if _, err := q.Exec(ctx); err != nil {
			return nil, fmt.Errorf("update compliance settings: %w", err)
		}
	}
	return s.ComplianceSettings(ctx, accountID)
}

// snakeCase turns a JSON field name into its column's name ("optOutKeywords" -> "opt_out_keywords").
func snakeCase(field string) string {
	var b strings.Builder
	for _, r := range field {
		if r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}
