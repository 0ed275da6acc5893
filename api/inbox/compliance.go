package inbox

import (
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/gofiber/fiber/v2"

	"funnelchat/models"
)

// The compliance section of the settings page (README, "Compliance"): the account's own consent
// keywords, the texts sent for them, its quiet hours, its time zone and the country its contacts'
// national phone numbers are read in. Every member sees them; only owners save them.

// commonTimeZones are suggested for the account's time zone (any IANA name is accepted).
var commonTimeZones = []string{
	"UTC",
	"America/New_York", "America/Chicago", "America/Denver", "America/Phoenix", "America/Los_Angeles",
	"America/Anchorage", "Pacific/Honolulu", "America/Toronto", "America/Vancouver", "America/Mexico_City",
	"America/Bogota", "America/Lima", "America/Santiago", "America/Argentina/Buenos_Aires", "America/Sao_Paulo",
	"Europe/London", "Europe/Dublin", "Europe/Lisbon", "Europe/Madrid", "Europe/Paris", "Europe/Berlin",
	"Europe/Amsterdam", "Europe/Brussels", "Europe/Rome", "Europe/Zurich", "Europe/Stockholm", "Europe/Warsaw",
	"Europe/Athens", "Europe/Istanbul", "Europe/Kyiv", "Europe/Moscow",
	"Africa/Lagos", "Africa/Cairo", "Africa/Nairobi", "Africa/Johannesburg",
	"Asia/Dubai", "Asia/Karachi", "Asia/Kolkata", "Asia/Dhaka", "Asia/Bangkok", "Asia/Jakarta", "Asia/Singapore",
	"Asia/Manila", "Asia/Hong_Kong", "Asia/Shanghai", "Asia/Seoul", "Asia/Tokyo",
	"Australia/Perth", "Australia/Brisbane", "Australia/Sydney", "Pacific/Auckland",
}

// complianceView is the compliance section's data: the stored settings, or a refused form's as typed
// with Errors, every reason it was refused.
type complianceView struct {
	*models.ComplianceSettings
	TimeZones []string
	// MaxText is the longest a confirmation or the help text may be.
	MaxText int
	Errors  []string
}

// QuietStart and QuietEnd are the quiet hours' times for the form ("" when there are none).
func (v complianceView) QuietStart() string {
	if v.QuietHours == nil {
		return ""
	}
	return v.QuietHours.Start
}

func (v complianceView) QuietEnd() string {
	if v.QuietHours == nil {
		return ""
	}
	return v.QuietHours.End
}

// Country is the account's default country for the form ("" when it has none).
func (v complianceView) Country() string {
	if v.DefaultCountry == nil {
		return ""
	}
	return *v.DefaultCountry
}

// ZoneCountry is the country phone numbers are read in while the account has no default country: its
// time zone's, or "" when that zone is not one country's.
func (v complianceView) ZoneCountry() string {
	return models.ZoneRegion(v.TimeZone)
}

// splitKeywords reads a keyword field: words separated by commas or spaces.
func splitKeywords(s string) []string {
	words := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' || unicode.IsSpace(r) })
	if words == nil {
		words = []string{}
	}
	return words
}

// saveCompliance: POST /inbox/settings/compliance {optOutKeywords, optInKeywords, optOutConfirmation,
// optInConfirmation, helpText, noQuietHours, quietStart, quietEnd, timeZone, defaultCountry} (owners;
// an empty defaultCountry clears it). Only what the form changed is saved, so that a setting still at
// its default (the texts naming the account, the operator's quiet hours) keeps following it. Nothing
// is saved when a field is invalid: the form comes back (422) with what was typed and every field's
// error, named as the form names it.
func (h *Handler) saveCompliance(c *fiber.Ctx) error {
	const back = settingsPath + "#compliance"
	sess := sessionOf(c)
	ctx := c.UserContext()
	cur, err := h.store.ComplianceSettings(ctx, sess.AccountID)
	if err != nil {
		return h.actionFailed(c, back, err)
	}
	typed := *cur // the form as typed, shown again when it is refused
	var in models.ComplianceInput
	for _, kw := range []struct {
		field string
		cur   []string
		out   **[]string
		typed *[]string
	}{{"optOutKeywords", cur.OptOutKeywords, &in.OptOutKeywords, &typed.OptOutKeywords}, {"optInKeywords", cur.OptInKeywords, &in.OptInKeywords, &typed.OptInKeywords}} {
		words := splitKeywords(c.FormValue(kw.field))
		if *kw.typed = words; !slices.Equal(words, kw.cur) {
			*kw.out = &words
		}
	}
	for _, t := range []struct {
		field string
		cur   string
		out   **string
		typed *string
	}{{"optOutConfirmation", cur.OptOutConfirmation, &in.OptOutConfirmation, &typed.OptOutConfirmation},
		{"optInConfirmation", cur.OptInConfirmation, &in.OptInConfirmation, &typed.OptInConfirmation},
		{"helpText", cur.HelpText, &in.HelpText, &typed.HelpText}} {
		v := strings.TrimSpace(c.FormValue(t.field))
		if *t.typed = v; v != t.cur {
			*t.out = &v
		}
	}
	var quiet *models.QuietHours
	quietBlank := false
	if c.FormValue("noQuietHours") != "true" {
		quiet = &models.QuietHours{Start: strings.TrimSpace(c.FormValue("quietStart")), End: strings.TrimSpace(c.FormValue("quietEnd"))}
		quietBlank = quiet.Start == "" && quiet.End == ""
	}
	typed.QuietHours = quiet
	if (quiet == nil) != (cur.QuietHours == nil) || (quiet != nil && *quiet != *cur.QuietHours) {
		in.SetQuietHours, in.QuietHours = true, quiet
	}
	tz := strings.TrimSpace(c.FormValue("timeZone"))
	if typed.TimeZone = tz; tz != cur.TimeZone {
		in.TimeZone = &tz
	}
	country := strings.TrimSpace(c.FormValue("defaultCountry"))
	typed.DefaultCountry = nil
	if country != "" {
		typed.DefaultCountry = &country
	}
	if country != (complianceView{ComplianceSettings: cur}).Country() {
		in.SetDefaultCountry = true
		if country != "" {
			in.DefaultCountry = &country
		}
	}
	if _, err := h.app.UpdateComplianceSettings(ctx, sess.AccountID, in); err != nil {
		if models.ErrorCode(err) != models.CodeValidation {
			return h.actionFailed(c, back, err)
		}
		v := settingsView{Compliance: complianceView{ComplianceSettings: &typed}}
		for _, msg := range models.AllErrors(err) {
			if quietBlank && strings.HasPrefix(msg, "quietHours: ") {
				msg = "Give the quiet hours' start and end (HH:MM, such as 21:00 and 08:00), or tick No quiet hours."
			}
			v.Compliance.Errors = append(v.Compliance.Errors, complianceMessage(msg))
		}
		return h.renderSettingsStatus(c, fiber.StatusUnprocessableEntity, v)
	}
	return h.done(c, back, true, "Compliance settings saved.")
}

// complianceFields are the settings' fields as the API names them in errors, and as the form does.
var complianceFields = []struct{ field, label string }{
	{"optOutKeywords", "Opt-out keywords"}, {"optInKeywords", "Opt-in keywords"},
	{"optOutConfirmation", "Opt-out confirmation"}, {"optInConfirmation", "Opt-in confirmation"},
	{"helpText", "Help text"}, {"quietHours", "Quiet hours"}, {"timeZone", "Time zone"},
	{"defaultCountry", "Default country"},
}

// keywordIndex is the index of a keyword in an error's field ("optOutKeywords[2]").
var keywordIndex = regexp.MustCompile(`^(optOutKeywords|optInKeywords)\[\d+\]`)

// complianceMessage is a validation error of the compliance settings in the form's words: the field
// as the form labels it rather than as the API names it.
func complianceMessage(msg string) string {
	msg = keywordIndex.ReplaceAllString(msg, "$1:")
	msg = strings.TrimPrefix(msg, "quietHours: ")
	for _, f := range complianceFields {
		if strings.HasPrefix(msg, f.field) {
			msg = f.label + msg[len(f.field):]
			break
		}
	}
	return sentence(msg)
}
