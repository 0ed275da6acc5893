package api

import (
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"funnelchat/api/app"
	"funnelchat/models"
)

// dedupeTTL is how long the Redis fast path remembers a messageSid; the database's unique index is the
// guarantee beyond it.
const dedupeTTL = 24 * time.Hour

type incomingRequest struct {
	CustomData *struct {
		MessageSid       *string `json:"messageSid"`
		ID               *string `json:"id"`
		FromID           *string `json:"fromId"`
		ToID             *string `json:"toId"`
		Body             *string `json:"body"`
		Status           *string `json:"status"`
		Channel          *string `json:"channel"`
		CampaignID       *string `json:"campaignId"`
		FirstName        *string `json:"firstName"`
		LastName         *string `json:"lastName"`
		Email            *string `json:"email"`
		MediaURL         *string `json:"mediaUrl"`
		MediaContentType *string `json:"mediaContentType"`
	} `json:"customData"`
	MessageType *string `json:"messageType"`
}

func (r *incomingRequest) input() (models.IncomingInput, error) {
	d := r.CustomData
	if d == nil {
		return models.IncomingInput{}, models.Errorf(models.CodeValidation, "customData is required")
	}
	in := models.IncomingInput{
		ExternalID: str(d.MessageSid), FromID: str(d.FromID), ToID: str(d.ToID), Body: str(d.Body),
		Status: str(d.Status), Channel: str(d.Channel), CampaignID: str(d.CampaignID), FirstName: str(d.FirstName),
		LastName: str(d.LastName), Email: str(d.Email), MediaURL: str(d.MediaURL), MediaContentType: str(d.MediaContentType),
		MessageType: str(r.MessageType),
	}
	if in.ExternalID == "" {
		in.ExternalID = str(d.ID)
	}
	return in, nil
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// maxSidLookup bounds the messageSid the key check looks up in Redis before the body is validated: a
// valid one is at most 256 characters (models.IncomingInput.Validate) of at most 4 bytes.
const maxSidLookup = 4 * 256

// incomingMessage: POST /v1/incoming_custom_channel_message. It stores the message and
// enqueues the bot's reply; it never calls the bot itself. A repeated messageSid answers 200 with the
// first message's id and "duplicate": true. Errors use the string form.
//
// The route runs no authenticate/rateLimit middleware: the body is decoded first (CPU only, and only
// for a request that sends a key), so that one Redis call checks the key, counts the request and looks
// the messageSid up (checks.go). The answers keep the order of every keyed route: 401, then 429, then
// the body's 400, then the duplicate's 200. On the fast path (key cached, new message) the request
// costs two Redis round trips, that call and the enqueue (with the messageSid's SET in the same
// pipeline), around the database's one.
func (s *Server) incomingMessage(c *fiber.Ctx) error {
	apiKey, err := requestKey(c, true)
	if err != nil {
		return err
	}
	var req incomingRequest
	var in models.IncomingInput
	bodyErr := decodeJSON(c, &req)
	if bodyErr == nil {
		in, bodyErr = req.input()
	}
	sid := ""
	if bodyErr == nil {
		// As Validate will trim it; a body that Validate refuses is answered 400 whatever Redis held.
		if t := strings.TrimSpace(in.ExternalID); len(t) <= maxSidLookup {
			sid = t
		}
	}
	ctx := c.UserContext()
	chk, err := s.checkKey(ctx, apiKey, sid)
	if err != nil {
		return err
	}
	acc := chk.acc
	c.Locals(localAccount, acc)
	if err := s.applyRateLimit(c, chk); err != nil {
		return err
	}
	if bodyErr != nil {
		return bodyErr
	}
	if err := in.Validate(s.cfg.MaxMediaBytes); err != nil {
		return err
	}
	key := dedupeKey(chk.keyHash, in.ExternalID)
	switch {
	case !chk.sidRead || in.ExternalID != sid:
		why := "not looked up"
		if chk.redisErr != nil {
			why = chk.redisErr.Error()
		}
		s.log.WarnContext(ctx, "dedupe fast path unavailable; the database decides", "error", why)
	case chk.duplicateOf != "":
		return c.JSON(fiber.Map{"success": true, "messageId": chk.duplicateOf, "duplicate": true})
	}

	accepted, err := s.app.AcceptIncoming(ctx, acc.ID, in, &app.Remember{Key: key, TTL: dedupeTTL})
	if err != nil {
		return err
	}
	c.Locals(localMessageID, accepted.Message.ID)
	if accepted.Duplicate {
		return c.JSON(fiber.Map{"success": true, "messageId": accepted.Message.ID, "duplicate": true})
	}
	return c.JSON(fiber.Map{"success": true, "messageId": accepted.Message.ID})
}

// methodNotAllowed answers any method but POST on the incoming endpoint (before authentication).
func methodNotAllowed(c *fiber.Ctx) error {
	c.Set(fiber.HeaderAllow, fiber.MethodPost)
	return models.Errorf(codeMethodNotAllowed, "use POST for this endpoint")
}

// sendCustomMessage: POST /v1/send_custom_channel_message -> 201 with the queued message.
func (s *Server) sendCustomMessage(c *fiber.Ctx) error {
	var req struct {
		CustomData *struct {
			FromID        *string `json:"fromId"`
			CustomChannel *string `json:"customChannel"`
			Body          *string `json:"body"`
			CampaignID    *string `json:"campaignId"`
			FirstName     *string `json:"firstName"`
			LastName      *string `json:"lastName"`
			Email         *string `json:"email"`
		} `json:"customData"`
	}
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	d := req.CustomData
	if d == nil {
		return models.Errorf(models.CodeValidation, "customData is required")
	}
	in := models.CustomSendInput{
		FromID: str(d.FromID), Channel: str(d.CustomChannel), Body: str(d.Body), CampaignID: str(d.CampaignID),
		FirstName: str(d.FirstName), LastName: str(d.LastName), Email: str(d.Email),
	}
	if err := in.Validate(); err != nil {
		return err
	}
	msg, contact, err := s.app.SendCustom(c.UserContext(), accountOf(c).ID, in)
	if err != nil {
		return err
	}
	c.Locals(localMessageID, msg.ID)
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{
		"success": true, "messageId": msg.ID, "contactId": contact.ID,
		"message": "Message accepted and queued for delivery to your custom channel webhook",
	})
}
