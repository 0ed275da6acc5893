package inbox

import (
	"context"
	"strings"

	"github.com/gofiber/fiber/v2"

	"funnelchat/api/app"
	"funnelchat/models"
)

// The Channels section of the settings page: the account's SMS (Twilio), WhatsApp, Messenger and
// Instagram credentials, saved as PUT /v1/settings/channels/{channel} saves them (the same use cases,
// app.App.SaveSMSSettings and its siblings), and the webhook address to paste into the provider.
// Everyone sees which channels are connected; only those who may change where messages go save them
// (mayRoute, routing.go).
//
// Secrets are write-only: the page says whether each one is set and never carries it, not even back
// into a refused form. A secret field left empty keeps the stored secret: the handler reads the stored
// credentials and saves them whole again with the new values, since the store replaces a channel's
// credentials as a whole. With nothing stored, the models' rule stands: every required field is needed.

// channelKinds are the built-in channels, in the order the section shows them.
var channelKinds = []string{models.ChannelSMS, models.ChannelWhatsApp, models.ChannelMessenger, models.ChannelInstagram}

// channelField is a field of a channel's form. Value is the stored or typed value, never a secret's.
type channelField struct {
	Name, Label, Value, Hint, Placeholder string
	Secret                                bool
	// Set: a secret is stored for the field.
	Set bool
	// Optional: the channel works without it.
	Optional bool
	// Numeric: an id Meta shows as digits (inputmode numeric).
	Numeric bool
}

// channelForm is one channel's part of the section.
type channelForm struct {
	Kind, Title, Provider string
	Connected             bool
	// ID is the stored number or id that names the connection ("+14155550123", a page id).
	ID     string
	Fields []channelField
	// Webhook is the address the provider posts to; PasteInto names where it is pasted (for Meta's
	// channels the Meta app, never the page or the account itself), Setup the steps. Plain: the
	// address is http://, which Meta refuses.
	Webhook   string
	PasteInto string
	Setup     []string
	Plain     bool
	// Error is why a save was refused; the form then shows what was typed (secrets excepted).
	Error string
}

// Anchor is the id of the channel's block on the page, and its flash's section.
func (f channelForm) Anchor() string { return "channel-" + f.Kind }

// field returns the form's field called name.
func (f *channelForm) field(name string) *channelField {
	for i := range f.Fields {
		if f.Fields[i].Name == name {
			return &f.Fields[i]
		}
	}
	return nil
}

// storedChannel is a channel's stored credentials, flattened: the form's field names to values.
type storedChannel map[string]string

// loadChannel reads the account's credentials of kind; nil when none are stored.
func (h *Handler) loadChannel(ctx context.Context, accountID, kind string) (storedChannel, error) {
	var out storedChannel
	var err error
	switch kind {
	case models.ChannelSMS:
		var v *models.SMSSettings
		if v, err = h.store.SMSSettings(ctx, accountID); err == nil {
			out = storedChannel{"accountSid": v.AccountSID, "authToken": v.AuthToken, "from": v.From}
		}
	case models.ChannelWhatsApp:
		var v *models.WhatsAppSettings
		if v, err = h.store.WhatsAppSettings(ctx, accountID); err == nil {
			out = storedChannel{"phoneNumberId": v.PhoneNumberID, "accessToken": v.AccessToken, "appSecret": v.AppSecret, "verifyToken": v.VerifyToken}
		}
	case models.ChannelMessenger:
		var v *models.MetaSettings
		if v, err = h.store.MetaSettings(ctx, accountID, kind); err == nil {
			out = storedChannel{"pageId": v.ID, "pageAccessToken": v.AccessToken, "appSecret": v.AppSecret, "verifyToken": v.VerifyToken}
		}
	case models.ChannelInstagram:
		var v *models.MetaSettings
		if v, err = h.store.MetaSettings(ctx, accountID, kind); err == nil {
			out = storedChannel{"accountId": v.ID, "accessToken": v.AccessToken, "appSecret": v.AppSecret, "verifyToken": v.VerifyToken}
		}
	}
	if models.ErrorCode(err) == models.CodeNotFound {
		return nil, nil
	}
	return out, err
}

// blankChannelForm is a channel's form with its fields and set-up steps, nothing filled in.
func blankChannelForm(kind, base string) channelForm {
	metaSetup := func(product, subject, fields string) []string {
		return []string{
			"Save the four values here first: Meta checks the callback URL with the verify token.",
			"In the Meta App Dashboard, open your app (add the " + product + " product if it has not got it), then Webhooks or " +
				product + " settings, and set the callback URL to the address above, with the same verify token.",
			"In the app's " + product + " settings, subscribe the " + subject + " to the fields " + fields + ".",
		}
	}
	secret := func(name, label, hint string) channelField {
		return channelField{Name: name, Label: label, Secret: true, Hint: hint}
	}
	f := channelForm{Kind: kind, Webhook: base + "/v1/channels/" + kind + "/inbound", Plain: strings.HasPrefix(base, "http://")}
	switch kind {
	case models.ChannelSMS:
		f.Title, f.Provider, f.PasteInto = "SMS", "Twilio", "the Twilio number’s messaging settings"
		f.Fields = []channelField{
			{Name: "accountSid", Label: "Account SID", Placeholder: "AC…", Hint: "On the Twilio Console's home page, under Account info."},
			secret("authToken", "Auth token", "Next to the Account SID; it also checks that incoming messages come from Twilio."),
			{Name: "from", Label: "Sender number", Placeholder: "+14155550123", Hint: "The Twilio number messages are sent from, with its country code."},
		}
		f.Setup = []string{"In Twilio, open the number's configuration and set “A message comes in” to Webhook, HTTP POST, at the address above."}
	case models.ChannelWhatsApp:
		f.Title, f.Provider, f.PasteInto = "WhatsApp", "WhatsApp Cloud API", "your Meta app: App Dashboard > WhatsApp > Configuration"
		f.Fields = []channelField{
			{Name: "phoneNumberId", Label: "Phone number ID", Numeric: true, Hint: "In the Meta app: WhatsApp, API Setup (not the phone number itself)."},
			secret("accessToken", "Access token", "A permanent token of a system user with the whatsapp_business_messaging permission."),
			secret("appSecret", "App secret", "Checks that incoming messages come from Meta."),
			secret("verifyToken", "Verify token", "Any text you choose; Meta presents it when it checks the callback URL."),
		}
		f.Fields[2].Optional, f.Fields[3].Optional = true, true
		f.Setup = []string{"In your Meta app's WhatsApp configuration, set the callback URL to the address above with the same verify token, and subscribe to messages."}
	case models.ChannelMessenger:
		f.Title, f.Provider, f.PasteInto = "Messenger", "Facebook page", "your Meta app, not the page: App Dashboard > Webhooks or Messenger settings"
		f.Fields = []channelField{
			{Name: "pageId", Label: "Page ID", Numeric: true, Hint: "The page's numeric id, from its About section or the Meta app's Messenger settings."},
			secret("pageAccessToken", "Page access token", "Generated for the page in the Meta app's Messenger settings."),
			secret("appSecret", "App secret", "From the app's Basic settings; checks that incoming messages come from Meta."),
			secret("verifyToken", "Verify token", "Any text you choose; Meta presents it when it checks the callback URL."),
		}
		f.Setup = metaSetup("Messenger", "page", "messages, message_reactions and messaging_postbacks")
	case models.ChannelInstagram:
		f.Title, f.Provider, f.PasteInto = "Instagram", "Instagram professional account", "your Meta app, not the Instagram account: App Dashboard > Webhooks or Instagram settings"
		f.Fields = []channelField{
			{Name: "accountId", Label: "Instagram account ID", Numeric: true, Hint: "The professional account's numeric id (not its @name)."},
			secret("accessToken", "Access token", "Generated for the account in the Meta app's Instagram settings."),
			secret("appSecret", "App secret", "From the app's Basic settings; checks that incoming messages come from Meta."),
			secret("verifyToken", "Verify token", "Any text you choose; Meta presents it when it checks the callback URL."),
		}
		f.Setup = metaSetup("Instagram", "account", "messages, messaging_reactions and messaging_postbacks")
	}
	return f
}

// channelForms are the section's four channels with the account's stored state. A refused form among
// drafts (at most one) keeps what was typed and its error.
func (h *Handler) channelForms(c *fiber.Ctx, accountID string, drafts []channelForm) ([]channelForm, error) {
	base := h.publicBase(c)
	out := make([]channelForm, len(channelKinds))
	for i, kind := range channelKinds {
		stored, err := h.loadChannel(c.UserContext(), accountID, kind)
		if err != nil {
			return nil, err
		}
		f := blankChannelForm(kind, base)
		f.Connected = stored != nil
		for j := range f.Fields {
			fl := &f.Fields[j]
			if fl.Secret {
				fl.Set = stored[fl.Name] != ""
			} else {
				fl.Value = stored[fl.Name]
			}
		}
		if f.Connected {
			f.ID = f.Fields[0].Value
			if kind == models.ChannelSMS {
				f.ID = f.field("from").Value
			}
		}
		for _, d := range drafts {
			if d.Kind != kind {
				continue
			}
			f.Error = d.Error
			for _, typed := range d.Fields {
				if fl := f.field(typed.Name); fl != nil && !fl.Secret {
					fl.Value = typed.Value
				}
			}
		}
		out[i] = f
	}
	return out, nil
}

// publicBase is the service's address as the provider reaches it: the scheme and host of this request,
// as the inbound handlers rebuild the address a provider signed.
func (h *Handler) publicBase(c *fiber.Ctx) string {
	scheme := "http"
	if h.https.IsTLS(c) {
		scheme = "https"
	}
	return scheme + "://" + c.Hostname()
}

// saveChannel: POST /inbox/settings/channels/{sms|whatsapp|messenger|instagram} (mayRoute) saves the
// channel's credentials. A secret left empty keeps the stored one. A refused save shows the form again
// with what was typed (not the secrets) and the reason (422); a saved one is a 303 to the channel.
func (h *Handler) saveChannel(c *fiber.Ctx) error {
	kind := strings.Clone(c.Params("kind"))
	switch kind {
	case models.ChannelSMS, models.ChannelWhatsApp, models.ChannelMessenger, models.ChannelInstagram:
	default:
		return h.inboxNotFound(c)
	}
	ctx, accountID := c.UserContext(), sessionOf(c).AccountID
	stored, err := h.loadChannel(ctx, accountID, kind)
	if err != nil {
		return h.inboxFailure(c, err)
	}
	form := blankChannelForm(kind, "")
	values := map[string]string{}
	missing := false // a secret left empty with none stored
	for i := range form.Fields {
		fl := &form.Fields[i]
		v := strings.TrimSpace(c.FormValue(fl.Name))
		if fl.Secret && v == "" {
			v = stored[fl.Name]
			missing = missing || (v == "" && !fl.Optional)
		}
		if !fl.Secret {
			fl.Value = v
		}
		values[fl.Name] = v
	}
	switch kind {
	case models.ChannelSMS:
		in := models.SMSSettings{AccountSID: values["accountSid"], AuthToken: values["authToken"], From: values["from"]}
		_, err = h.app.SaveSMSSettings(ctx, accountID, in)
	case models.ChannelWhatsApp:
		in := models.WhatsAppSettings{PhoneNumberID: values["phoneNumberId"], AccessToken: values["accessToken"],
			AppSecret: values["appSecret"], VerifyToken: values["verifyToken"]}
		_, err = h.app.SaveWhatsAppSettings(ctx, accountID, in)
	case models.ChannelMessenger, models.ChannelInstagram:
		var meta app.MetaCredentials = models.MessengerSettings{PageID: values["pageId"],
			PageAccessToken: values["pageAccessToken"], AppSecret: values["appSecret"], VerifyToken: values["verifyToken"]}
		if kind == models.ChannelInstagram {
			meta = models.InstagramSettings{AccountID: values["accountId"], AccessToken: values["accessToken"],
				AppSecret: values["appSecret"], VerifyToken: values["verifyToken"]}
		}
		_, err = h.app.SaveMetaSettings(ctx, accountID, kind, meta)
	}
	if err != nil {
		switch models.ErrorCode(err) {
		case models.CodeInternal, models.CodeUnavailable, models.CodeNotFound:
			return h.inboxFailure(c, err)
		}
		labels := make([]fieldLabel, len(form.Fields))
		for i, fl := range form.Fields {
			labels[i] = fieldLabel{Field: fl.Name, Label: fl.Label}
		}
		if models.ErrorCode(err) == models.CodeInvalidPhone {
			// "phone \"...\" has no country code": the number is the sender number's.
			err = models.Errorf(models.CodeValidation, "%s", "from "+strings.TrimPrefix(models.ErrorMessage(err), "phone "))
		}
		form.Error = formMessage(err, labels)
		if missing {
			every := "Every field is needed"
			for _, fl := range form.Fields {
				if fl.Optional {
					every = "Every field not marked optional is needed"
				}
			}
			form.Error += " " + every + " the first time; after that, a secret left empty keeps the saved one."
		}
		form.Error += " Nothing was saved."
		return h.renderSettingsStatus(c, fiber.StatusUnprocessableEntity, settingsView{Channels: []channelForm{form}})
	}
	if stored == nil {
		return h.done(c, settingsPath+"#channel-"+kind, true, form.Title+" connected. Paste the webhook address below into "+form.PasteInto+", if you have not yet.")
	}
	return h.done(c, settingsPath+"#channel-"+kind, true, form.Title+" settings saved.")
}
