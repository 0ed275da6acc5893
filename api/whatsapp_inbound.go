package api

import (
	"encoding/json"
	"mime"
	"strings"

	"github.com/gofiber/fiber/v2"

	"funnelchat/jobs"
	"funnelchat/models"
)

// WhatsApp's webhook sends notifications: entries of changes, each change a field ("messages" for
// messages and their statuses; "message_template_status_update", "account_update" and others for the
// business account) whose value names, when it concerns a phone number, its phone_number_id.
//
// Meta signs a notification (X-Hub-Signature-256) with the secret of the Meta app that sends it. The
// service knows app secrets per account (appSecret in the account's WhatsApp settings), and finds the
// account through the phone_number_id of a change. So a notification is judged per configured number,
// in this order:
//
//  1. Without X-Hub-Signature-256 it is refused (403).
//  2. Each phone_number_id it names is looked up. A number no account has configured, and a change
//     that names none (template status, account updates), stores nothing: it is acknowledged and
//     logged at info, since Meta retries anything but a 200 for days.
//  3. A configured number is trusted when the signature verifies with its own account's app secret:
//     one account's secret never vouches for another account's messages. When the notification names
//     configured numbers and the signature verifies for none of them, it is refused (403: a forgery,
//     or an app secret the account must correct while Meta retries). A number that does not verify
//     while another does is ignored and logged as a warning.
//  4. Only then are the messages of the trusted numbers' changes stored (each once, by its id), so a
//     notification is never half stored and then refused, and a message batched with changes the
//     service ignores is stored at the first delivery.

// whatsAppNotification is the part of a WhatsApp webhook notification we read.
type whatsAppNotification struct {
	Entry []struct {
		Changes []whatsAppChange `json:"changes"`
	} `json:"entry"`
}

// whatsAppChange is one change of a notification.
type whatsAppChange struct {
	Field string `json:"field"`
	Value struct {
		Metadata struct {
			PhoneNumberID string `json:"phone_number_id"`
		} `json:"metadata"`
		Contacts []struct {
			WaID    string `json:"wa_id"`
			Profile struct {
				Name string `json:"name"`
			} `json:"profile"`
		} `json:"contacts"`
		Messages []whatsAppMessage `json:"messages"`
		Statuses []json.RawMessage `json:"statuses"`
	} `json:"value"`
}

// number is the phone number id the change concerns, "" when it names none.
func (ch whatsAppChange) number() string {
	return strings.TrimSpace(ch.Value.Metadata.PhoneNumberID)
}

// kind names a change that holds no message, for the log.
func (ch whatsAppChange) kind() string {
	switch {
	case ch.Field == "messages" && len(ch.Value.Statuses) > 0:
		return "statuses"
	case ch.Field == "":
		return "(no field)"
	}
	return ch.Field
}

// whatsAppMessage is one message a contact sent.
type whatsAppMessage struct {
	From     string                `json:"from"`
	ID       string                `json:"id"`
	Type     string                `json:"type"`
	Text     struct{ Body string } `json:"text"`
	Reaction struct {
		Emoji     string `json:"emoji"`
		MessageID string `json:"message_id"`
	} `json:"reaction"`
	Image    *whatsAppMedia `json:"image"`
	Audio    *whatsAppMedia `json:"audio"`
	Video    *whatsAppMedia `json:"video"`
	Document *whatsAppMedia `json:"document"`
	Sticker  *whatsAppMedia `json:"sticker"`
}

// whatsAppMedia is the file of a media message: an id that only the Graph API resolves.
type whatsAppMedia struct {
	ID       string `json:"id"`
	MimeType string `json:"mime_type"`
	Caption  string `json:"caption"`
	Filename string `json:"filename"`
}

// media is the message's file, nil for a message of another type.
func (m whatsAppMessage) media() *whatsAppMedia {
	switch m.Type {
	case "image":
		return m.Image
	case "audio":
		return m.Audio
	case "video":
		return m.Video
	case "document":
		return m.Document
	case "sticker":
		return m.Sticker
	}
	return nil
}

// whatsAppMediaRanges is the media type stored for a file whose mime_type WhatsApp did not give; the
// worker's check sniffs the file and names it.
var whatsAppMediaRanges = map[string]string{
	"image": "image/*", "audio": "audio/*", "video": "video/*", "document": "application/octet-stream", "sticker": "image/webp",
}

// whatsAppInbound: POST /v1/channels/whatsapp/inbound, Meta's webhook, judged by the rule above.
// Errors: 400 INVALID_JSON for a body that is not a notification; 403 FORBIDDEN without
// X-Hub-Signature-256, or when it verifies with the app secret of none of the configured numbers the
// notification names. 200 once every message of a trusted number is stored; a message that cannot be
// stored is logged and dropped.
func (h *channels) whatsAppInbound(c *fiber.Ctx) error {
	raw := c.Body()
	signature := c.Get("X-Hub-Signature-256")
	if signature == "" {
		return models.Errorf(models.CodeForbidden, "X-Hub-Signature-256 is required")
	}
	var n whatsAppNotification
	if err := json.Unmarshal(raw, &n); err != nil {
		return models.Errorf(models.CodeInvalidJSON, "request body is not a WhatsApp webhook")
	}
	trusted, err := h.whatsAppTrustedNumbers(c, raw, signature, n)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	var ignored []string
	for _, entry := range n.Entry {
		for _, change := range entry.Changes {
			if len(change.Value.Messages) == 0 {
				ignored = append(ignored, change.kind())
				continue
			}
			accountID, ok := trusted[change.number()]
			if !ok {
				if change.number() == "" {
					ignored = append(ignored, "messages without metadata.phone_number_id")
				}
				continue // an unknown or unverified number: logged by whatsAppTrustedNumbers
			}
			names := map[string]string{}
			for _, ct := range change.Value.Contacts {
				names[ct.WaID] = ct.Profile.Name
			}
			for _, m := range change.Value.Messages {
				if err := h.ingestProviderMessage(c, accountID, h.whatsAppIncoming(change.number(), names, m)); err != nil {
					if models.ErrorCode(err) != models.CodeValidation {
						return err
					}
					// Meta retries a failed webhook for days: drop what cannot be stored, keep the rest.
					h.log.WarnContext(ctx, "whatsapp message not stored", "account_id", accountID, "error", err.Error())
				}
			}
		}
	}
	if len(ignored) > 0 {
		h.log.InfoContext(ctx, "whatsapp notification: changes without messages acknowledged and ignored", "changes", ignored)
	}
	return c.JSON(fiber.Map{"success": true})
}

// whatsAppTrustedNumbers applies steps 2 and 3 of the rule: it returns the account of each configured
// phone number id of n for which the signature verifies with that account's app secret. Errors:
// FORBIDDEN when n names configured numbers and the signature verifies for none.
func (h *channels) whatsAppTrustedNumbers(c *fiber.Ctx, raw []byte, signature string, n whatsAppNotification) (map[string]string, error) {
	ctx := c.UserContext()
	trusted := map[string]string{}
	seen := map[string]bool{}
	var unknown, unverified []string
	for _, entry := range n.Entry {
		for _, change := range entry.Changes {
			number := change.number()
			if number == "" || seen[number] {
				continue
			}
			seen[number] = true
			accountID, err := h.store.AccountForChannel(ctx, models.ChannelWhatsApp, number)
			if models.ErrorCode(err) == models.CodeNotFound {
				unknown = append(unknown, number)
				continue
			}
			if err != nil {
				return nil, err
			}
			creds, err := h.store.WhatsAppSettings(ctx, accountID)
			if err != nil {
				return nil, err
			}
			if !jobs.VerifyMetaSignature(creds.AppSecret, raw, signature) {
				unverified = append(unverified, number)
				continue
			}
			trusted[number] = accountID
		}
	}
	if len(unverified) > 0 && len(trusted) == 0 {
		return nil, models.Errorf(models.CodeForbidden, "signature does not verify")
	}
	if len(unknown) > 0 {
		h.log.InfoContext(ctx, "whatsapp notification for phone number ids no account has configured: acknowledged and ignored",
			"phone_number_ids", unknown)
	}
	if len(unverified) > 0 {
		h.log.WarnContext(ctx, "whatsapp notification: the signature does not verify with these numbers' app secrets; their changes are ignored",
			"phone_number_ids", unverified)
	}
	return trusted, nil
}

// whatsAppIncoming is the incoming message m, sent to the phone number id number. A media message
// (image, audio, video, document, sticker) is stored with its caption as the body and a media link to
// the Graph API's media endpoint, which the worker's media check fetches and stores
// (jobs.WhatsAppMediaLink). Other types without text (location, contacts...) are stored as a note of
// their type.
func (h *channels) whatsAppIncoming(number string, names map[string]string, m whatsAppMessage) models.IncomingInput {
	in := models.IncomingInput{
		ExternalID: m.ID, FromID: "+" + strings.TrimPrefix(m.From, "+"), ToID: number,
		Channel: models.ChannelWhatsApp, Transport: models.ChannelWhatsApp, FirstName: names[m.From],
	}
	media := m.media()
	switch {
	case m.Type == "text":
		in.Body = m.Text.Body
	case m.Type == "reaction":
		in.Body, in.MessageType, in.ReactsTo = m.Reaction.Emoji, models.MessageTypeReaction, m.Reaction.MessageID
	case media != nil && strings.TrimSpace(media.ID) != "":
		in.Body = media.Caption
		if strings.TrimSpace(in.Body) == "" {
			in.Body = strings.TrimSpace("(" + m.Type + ") " + media.Filename)
		}
		in.MediaURL = jobs.WhatsAppMediaLink(h.cfg.WhatsAppAPIBaseURL, strings.TrimSpace(media.ID))
		in.MediaContentType = media.MimeType
		if t, _, err := mime.ParseMediaType(media.MimeType); err != nil || !strings.Contains(t, "/") {
			in.MediaContentType = whatsAppMediaRanges[m.Type]
		}
	default:
		in.Body = "(" + m.Type + " message)"
	}
	return in
}
