package api

import (
	"context"
	"log/slog"
	"time"

	"github.com/gofiber/fiber/v2"

	"funnelchat/api/app"
	"funnelchat/api/web"
	"funnelchat/models"
	"funnelchat/models/report"
)

// consent serves the consent ledger, its export and the compliance settings (README, "Compliance").
type consent struct {
	store   *models.Store
	reports *report.Reader
	app     *app.App
	log     *slog.Logger
}

// consentRequest is consent evidence as the API takes it: the "consent" object of POST /v1/contacts
// and POST /v1/lists/{id}/contacts, and the body of PUT /v1/contacts/{id}/consent.
type consentRequest struct {
	Channel string    `json:"channel"`
	Status  string    `json:"status"`
	Source  string    `json:"source"`
	Text    string    `json:"text"`
	IP      string    `json:"ip"`
	At      time.Time `json:"at"`
}

// input validates the evidence of the request c; prefix names its fields in errors ("consent."). The
// change is recorded as made by the request's API key.
func (r *consentRequest) input(c *fiber.Ctx, prefix string) (models.ConsentInput, error) {
	in := models.ConsentInput{Channel: r.Channel, Status: r.Status, Source: r.Source, Text: r.Text, IP: r.IP, At: r.At,
		RecordedBy: recordedByOf(c)}
	return in, in.Normalize(prefix, models.ConsentSourceAPI)
}

// getConsent: GET /v1/contacts/{id}/consent -> {"channels":{...},"events":[...]}, the events oldest
// first.
func (s *consent) getConsent(c *fiber.Ctx) error {
	consent, err := s.store.ConsentOf(c.UserContext(), accountOf(c).ID, c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(consent)
}

// putConsent: PUT /v1/contacts/{id}/consent {"channel"?,"status","source"?,"text"?,"ip"?,"at"?} ->
// the contact's consent and events after the change. status is required here: withdrawing must be
// as easy as giving, and neither is assumed.
func (s *consent) putConsent(c *fiber.Ctx) error {
	var req consentRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if req.Status == "" {
		return models.Errorf(models.CodeValidation, "status is required: opted_in or opted_out")
	}
	in, err := req.input(c, "")
	if err != nil {
		return err
	}
	ctx, acc := c.UserContext(), accountOf(c)
	if _, err := s.app.SetConsent(ctx, acc.ID, c.Params("id"), in); err != nil {
		return err
	}
	return s.getConsent(c)
}

// exportConsent: GET /v1/consent/export?from=&to= streams the account's consent events whose time is
// in [from, to) as CSV (report.ConsentExportHeader), oldest first. from and to are RFC 3339 times or
// dates (YYYY-MM-DD, midnight UTC); both are optional. The rows are read in batches and written as
// they come, so memory stays flat for any number of events. A failure after the first byte cannot
// change the status any more: the body then ends early, which the missing rows show, and it is logged.
func (s *consent) exportConsent(c *fiber.Ctx) error {
	from, err := timeParam(c, "from", time.Time{})
	if err != nil {
		return err
	}
	to, err := timeParam(c, "to", time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		return err
	}
	if !from.Before(to) {
		return models.Errorf(models.CodeValidation, "from must be before to")
	}
	accountID := accountOf(c).ID
	return web.StreamCSV(c, s.log.With("account_id", accountID), "consent export", "consent.csv", report.ConsentExportHeader,
		func(ctx context.Context, write func([]string) error) error {
			return s.reports.ExportConsent(ctx, accountID, from, to, func(r *report.ConsentExportRow) error { return write(r.Record()) })
		})
}

// timeParam reads the query parameter name as an RFC 3339 time or a date; def when it is absent.
func timeParam(c *fiber.Ctx, name string, def time.Time) (time.Time, error) {
	v := c.Query(name)
	if v == "" {
		return def, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t, nil
	}
	return time.Time{}, models.Errorf(models.CodeValidation, "%s must be an RFC 3339 time (2026-11-25T00:00:00Z) or a date (2026-11-25)", name)
}

// getCompliance: GET /v1/settings/compliance -> the account's effective compliance settings.
func (s *consent) getCompliance(c *fiber.Ctx) error {
	settings, err := s.store.ComplianceSettings(c.UserContext(), accountOf(c).ID)
	if err != nil {
		return err
	}
	return c.JSON(settings)
}

// putCompliance: PUT /v1/settings/compliance with any of its fields -> the settings after the update.
// quietHours is replaced whole; null means none for the account; defaultCountry null clears it.
// Validation is models.UpdateComplianceSettings'.
func (s *consent) putCompliance(c *fiber.Ctx) error {
	var req struct {
		OptOutKeywords     *[]string                   `json:"optOutKeywords"`
		OptInKeywords      *[]string                   `json:"optInKeywords"`
		OptOutConfirmation *string                     `json:"optOutConfirmation"`
		OptInConfirmation  *string                     `json:"optInConfirmation"`
		HelpText           *string                     `json:"helpText"`
		QuietHours         nullable[models.QuietHours] `json:"quietHours"`
		TimeZone           *string                     `json:"timeZone"`
		DefaultCountry     nullable[string]            `json:"defaultCountry"`
	}
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	settings, err := s.app.UpdateComplianceSettings(c.UserContext(), accountOf(c).ID, models.ComplianceInput{
		OptOutKeywords: req.OptOutKeywords, OptInKeywords: req.OptInKeywords,
		OptOutConfirmation: req.OptOutConfirmation, OptInConfirmation: req.OptInConfirmation, HelpText: req.HelpText,
		SetQuietHours: req.QuietHours.Set, QuietHours: req.QuietHours.Value, TimeZone: req.TimeZone,
		SetDefaultCountry: req.DefaultCountry.Set, DefaultCountry: req.DefaultCountry.Value,
	})
	if err != nil {
		return err
	}
	return c.JSON(settings)
}
