package api

import (
	"context"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"funnelchat/models"
)

// dedupeTTL is how long the Redis fast path remembers a messageSid; the database's unique index is the
// guarantee beyond it.
const dedupeTTL = 24 * time.Hour

// redisFastPathTimeout bounds the de-duplication key's Redis calls: the database decides without
// them, so when Redis is down they must not hold the request (go-redis would retry dialing for
// seconds).
const redisFastPathTimeout = 250 * time.Millisecond

// enqueueTimeout bounds an enqueue on the request path: work stored but not queued is answered 503
// (incoming) or left to the sweep (sends), sooner than a client's own timeout would expire.
const enqueueTimeout = 2 * time.Second

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
	key := dedupeKey(acc.ID, in.ExternalID)
	switch {
	case !chk.sidRead || in.ExternalID != sid:
		why := "not looked up"
		if chk.redisErr != nil {
			why = chk.redisErr.Error()
		}
		s.log.Warn("dedupe fast path unavailable; the database decides", "error", why, "request_id", requestIDOf(c))
	case chk.duplicateOf != "":
		return c.JSON(fiber.Map{"success": true, "messageId": chk.duplicateOf, "duplicate": true})
	}

	msg, duplicate, err := s.store.IngestIncoming(ctx, acc.ID, in)
	if err != nil {
		return err
	}
	c.Locals(localMessageID, msg.ID)
	enqCtx, cancel := context.WithTimeout(ctx, enqueueTimeout)
	defer cancel()
	remembered := false
	if msg.BotStatus != nil && *msg.BotStatus == models.BotPending {
		// Also on a duplicate: a client retrying after a 503 completes the enqueue that failed. The
		// messageSid's SET goes in the enqueue's round trip, and only once the task is queued, so that
		// such a retry is not answered from Redis before the work is owed.
		setErr, err := s.queue.BotReplyAndSet(enqCtx, msg.ID, key, msg.ID, dedupeTTL)
		if err != nil {
			// Stored but not queued: the sweep would answer it later; a 503 makes the client retry
			// sooner, and its retry is de-duplicated by messageSid.
			s.log.Warn("incoming stored, bot reply not enqueued", "message_id", msg.ID, "error", err.Error())
			return models.Errorf(models.CodeUnavailable, "the message was stored but could not be queued; retry with the same messageSid")
		}
		if setErr != nil {
			s.log.Warn("dedupe fast path not updated", "error", setErr.Error())
		}
		remembered = true
	}
	if !duplicate && msg.MediaCheck != nil {
		if err := s.queue.MediaCheck(enqCtx, msg.ID); err != nil {
			s.log.Warn("media link check not enqueued", "message_id", msg.ID, "error", err.Error())
		}
	}
	if !remembered {
		s.rememberSid(ctx, key, msg.ID)
	}
	if duplicate {
		return c.JSON(fiber.Map{"success": true, "messageId": msg.ID, "duplicate": true})
	}
	return c.JSON(fiber.Map{"success": true, "messageId": msg.ID})
}

func dedupeKey(accountID, sid string) string { return dedupePrefix + accountID + ":" + sid }

// rememberSid sets the messageSid's key when no enqueue carried it (no bot reply owed).
func (s *Server) rememberSid(ctx context.Context, key, messageID string) {
	ctx, cancel := context.WithTimeout(ctx, redisFastPathTimeout)
	defer cancel()
	if err := s.redis.Set(ctx, key, messageID, dedupeTTL).Err(); err != nil {
		s.log.Warn("dedupe fast path not updated", "error", err.Error())
	}
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
	msg, contact, err := s.store.SendCustom(c.UserContext(), accountOf(c).ID, in)
	if err != nil {
		return err
	}
	c.Locals(localMessageID, msg.ID)
	s.enqueueDelivery(c, msg)
	return c.Status(fiber.StatusCreated).JSON(fiber.Map{
		"success": true, "messageId": msg.ID, "contactId": contact.ID,
		"message": "Message accepted and queued for delivery to your custom channel webhook",
	})
}

// enqueueDelivery queues an outgoing message's delivery. The message is stored as pending already, so
// if Redis refuses the sweep delivers it later; the request still succeeds, because a client retry of a
// send would send the message twice.
func (s *Server) enqueueDelivery(c *fiber.Ctx, msg *models.Message) {
	ctx, cancel := context.WithTimeout(c.UserContext(), enqueueTimeout)
	defer cancel()
	if err := s.queue.Deliver(ctx, msg.ID, msg.DeliveryRound); err != nil {
		s.log.Warn("outgoing stored, delivery not enqueued; the sweep will deliver it", "message_id", msg.ID,
			"error", err.Error(), "request_id", requestIDOf(c))
	}
}
