package api

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/gofiber/fiber/v2"

	"funnelchat/jobs"
	"funnelchat/models"
)

// Messenger and Instagram send their events through the Messenger Platform's webhook: a batch of
// entries, one per page (or Instagram account), each with its messaging events. The batch is signed
// with the Meta app's secret (X-Hub-Signature-256 over the raw body); every entry's account must
// verify it before anything of the batch is stored, so a batch is stored whole or not at all.

// metaBatch is the part of a Messenger Platform webhook we read.
type metaBatch struct {
	Object string `json:"object"`
	Entry  []struct {
		ID        string      `json:"id"`
		Messaging []metaEvent `json:"messaging"`
	} `json:"entry"`
}

// metaEvent is one messaging event: a message (or its echo), a reaction, a postback (a button the
// contact tapped), or a read or delivery receipt, which need nothing from us.
type metaEvent struct {
	Sender    struct{ ID string } `json:"sender"`
	Timestamp json.RawMessage     `json:"timestamp"`
	Message   *struct {
		MID         string `json:"mid"`
		Text        string `json:"text"`
		IsEcho      bool   `json:"is_echo"`
		Attachments []struct {
			Type    string `json:"type"`
			Payload struct {
				URL string `json:"url"`
			} `json:"payload"`
		} `json:"attachments"`
	} `json:"message"`
	Reaction *struct {
		MID      string `json:"mid"`
		Action   string `json:"action"`
		Reaction string `json:"reaction"`
		Emoji    string `json:"emoji"`
	} `json:"reaction"`
	Postback *struct {
		MID     string `json:"mid"`
		Title   string `json:"title"`
		Payload string `json:"payload"`
	} `json:"postback"`
}

// metaObjects is the "object" each channel's webhook carries.
var metaObjects = map[string]string{models.ChannelMessenger: "page", models.ChannelInstagram: "instagram"}

// metaInbound: POST /v1/channels/{messenger,instagram}/inbound. Errors: 400 for an empty or malformed
// batch (not JSON, another object, an entry without an id), 401 UNAUTHORIZED when X-Hub-Signature-256
// is missing or does not verify with the app secret of every account the batch names. Entries of a
// page no account has connected are logged and acknowledged (Meta would retry them for days). Each
// message is stored once (de-duplicated by its mid) and answered like any incoming message; echoes of
// the page's own messages and receipts are acknowledged and not stored. 200 once all is stored.
func (h *channels) metaInbound(channel string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		raw := c.Body()
		if len(bytes.TrimSpace(raw)) == 0 {
			return models.Errorf(models.CodeValidation, "request body is empty: expected a %s webhook batch", channel)
		}
		signature := c.Get("X-Hub-Signature-256")
		if signature == "" {
			return models.Errorf(models.CodeUnauthorized, "X-Hub-Signature-256 is required")
		}
		var batch metaBatch
		if err := json.Unmarshal(raw, &batch); err != nil {
			return models.Errorf(models.CodeInvalidJSON, "request body is not a %s webhook batch", channel)
		}
		if batch.Object != metaObjects[channel] {
			return models.Errorf(models.CodeValidation, "object must be %q on the %s webhook", metaObjects[channel], channel)
		}
		ctx := c.UserContext()
		accounts := make([]string, len(batch.Entry)) // "" for a page no account has connected
		verified := map[string]bool{}
		for i, entry := range batch.Entry {
			if strings.TrimSpace(entry.ID) == "" {
				return models.Errorf(models.CodeValidation, "entry[%d].id is required", i)
			}
			accountID, err := h.store.AccountForChannel(ctx, channel, entry.ID)
			if models.ErrorCode(err) == models.CodeNotFound {
				h.log.WarnContext(c.UserContext(), channel+" webhook for a page no account has connected", "page_id", entry.ID)
				continue
			}
			if err != nil {
				return err
			}
			if !verified[accountID] {
				creds, err := h.store.MetaSettings(ctx, accountID, channel)
				if err != nil {
					return err
				}
				if !jobs.VerifyMetaSignature(creds.AppSecret, raw, signature) {
					return models.Errorf(models.CodeUnauthorized, "X-Hub-Signature-256 does not verify")
				}
				verified[accountID] = true
			}
			accounts[i] = accountID
		}
		for i, entry := range batch.Entry {
			if accounts[i] == "" {
				continue
			}
			for _, event := range entry.Messaging {
				in, ok := metaIncoming(channel, entry.ID, event)
				if !ok {
					continue
				}
				if err := h.ingestProviderMessage(c, accounts[i], in); err != nil {
					if models.ErrorCode(err) != models.CodeValidation && models.ErrorCode(err) != models.CodeTooLarge {
						return err
					}
					// Meta retries a failed webhook for days: drop what cannot be stored, keep the rest.
					h.log.WarnContext(c.UserContext(), channel+" message not stored", "account_id", accounts[i], "error", err.Error())
				}
			}
		}
		return c.JSON(fiber.Map{"success": true})
	}
}

// metaIncoming turns a messaging event into an incoming message; ok is false for events that store
// nothing: echoes of the page's own messages, receipts, removed reactions, events without a sender.
func metaIncoming(channel, pageID string, e metaEvent) (in models.IncomingInput, ok bool) {
	sender := strings.TrimSpace(e.Sender.ID)
	if sender == "" || sender == pageID {
		return in, false
	}
	in = models.IncomingInput{
		FromID: models.MetaSenderID(channel, sender), ToID: pageID, Channel: channel, Transport: channel,
	}
	switch {
	case e.Message != nil && !e.Message.IsEcho:
		in.ExternalID, in.Body = e.Message.MID, e.Message.Text
		var extra []string
		for _, a := range e.Message.Attachments {
			mediaType, isMedia := metaMediaTypes[a.Type]
			switch {
			case isMedia && a.Payload.URL != "" && in.MediaURL == "":
				in.MediaURL, in.MediaContentType = a.Payload.URL, mediaType
				if strings.TrimSpace(in.Body) == "" {
					in.Body = "(" + a.Type + ")"
				}
			case a.Payload.URL != "":
				extra = append(extra, "("+a.Type+") "+a.Payload.URL)
			default:
				extra = append(extra, "("+a.Type+")")
			}
		}
		if strings.TrimSpace(in.Body) == "" && len(extra) > 0 {
			in.Body, extra = extra[0], extra[1:]
		}
		if len(extra) > 0 {
			in.Body += "\n" + strings.Join(extra, "\n")
		}
	case e.Reaction != nil && e.Reaction.Action != "unreact":
		in.MessageType, in.ReactsTo = models.MessageTypeReaction, e.Reaction.MID
		in.Body = e.Reaction.Emoji
		if in.Body == "" {
			in.Body = e.Reaction.Reaction
		}
		// A reaction has no id of its own: the sender, the message and the time name it, and stay
		// the same when Meta redelivers the event.
		in.ExternalID = "reaction:" + sender + ":" + e.Reaction.MID + ":" + string(e.Timestamp)
	case e.Postback != nil:
		in.Body, in.ExternalID = e.Postback.Title, e.Postback.MID
		if strings.TrimSpace(in.Body) == "" {
			in.Body = e.Postback.Payload
		}
		if in.ExternalID == "" {
			in.ExternalID = "postback:" + sender + ":" + string(e.Timestamp)
		}
	default:
		return in, false
	}
	return in, true
}

// metaMediaTypes maps the Messenger Platform's attachment types to the media type stored with the
// message. Meta names only the kind of file; the worker's media check sniffs the file and confirms it.
var metaMediaTypes = map[string]string{
	"image": "image/*", "video": "video/*", "audio": "audio/*", "file": "application/octet-stream",
}
