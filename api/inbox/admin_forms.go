package inbox

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"funnelchat/models"
)

// Helpers of the settings, campaign and deliveries forms: reading optional fields, and putting the
// models' validation messages, which name the API's fields, in the words of the form.

// Limits the forms state before the store checks them (models' own limits, which it keeps unexported).
const (
	maxHandoffMessage = 1000  // BotSettingsInput.HandoffMessage
	maxHandoffMinutes = 10080 // a week: HandoffEscalationMinutes, BotResumeMinutes
	maxShortcut       = 32    // CannedReply.Shortcut
	maxCannedBody     = 4000  // CannedReply.Body
)

// hasField reports whether the form posted a field at all (empty or not): a field the form did not
// send is left as it is.
func hasField(c *fiber.Ctx, name string) bool {
	if c.Request().PostArgs().Has(name) {
		return true
	}
	if form, err := c.MultipartForm(); err == nil {
		_, ok := form.Value[name]
		return ok
	}
	return false
}

// formMinutes reads a whole number of minutes: nil for an empty field, ok false for anything that is
// not a whole number (the range is the store's to check).
func formMinutes(v string) (n *int, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, true
	}
	i, err := strconv.Atoi(v)
	if err != nil {
		return nil, false
	}
	return &i, true
}

// fieldLabel is a field as the API names it in errors (Field) and as the form labels it (Label, in
// lower case unless it is a name). Item, when set, names one item of a list field ("openingMessages[1]"
// -> "variant B").
type fieldLabel struct {
	Field, Label string
	Item         func(i int) string
}

// apiSettingsPath is how the models tell to configure a channel (through the API).
var apiSettingsPath = regexp.MustCompile(`PUT /v1/settings/channels/[a-z]+`)

// formMessage is a domain error's message in the form's words: every field it names becomes the
// form's label, and it reads as a sentence.
func formMessage(err error, fields []fieldLabel) string {
	msg := apiSettingsPath.ReplaceAllString(models.ErrorMessage(err), "connect it under Settings, Channels")
	for _, f := range fields {
		re := regexp.MustCompile(`\b` + regexp.QuoteMeta(f.Field) + `\b(\[(\d+)\])?`)
		msg = re.ReplaceAllStringFunc(msg, func(m string) string {
			sub := re.FindStringSubmatch(m)
			if sub[2] != "" && f.Item != nil {
				if i, err := strconv.Atoi(sub[2]); err == nil {
					return f.Item(i)
				}
			}
			return f.Label
		})
	}
	return sentence(msg)
}
