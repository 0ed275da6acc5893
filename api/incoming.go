package api

import (
	"context"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"

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

// incomingMessage: POST /v1/incoming_custom_channel_message. It stores the message and
// enqueues the bot's reply; it never calls the bot itself. A repeated messageSid answers 200 with the
// first message's id and "duplicate": true. Errors use the string form.
func (s *Server) incomingMessage(c *fiber.Ctx) error {
	var req incomingRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	in, err := req.input()
	if err != nil {
		return err
	}
	if err := in.Validate(s.cfg.MaxMediaBytes); err != nil {
		return err
	}
	ctx, acc := c.UserContext(), accountOf(c)
	key := dedupeKey(acc.ID, in.ExternalID)
	fastCtx, cancel := context.WithTimeout(ctx, redisFastPathTimeout)
	id, err := s.redis.Get(fastCtx, key).Result()
	cancel()
	if err == nil {
		return c.JSON(fiber.Map{"success": true, "messageId": id, "duplicate": true})
	} else if err != redis.Nil {
		s.log.Warn("dedupe fast path unavailable; the database decides", "error", err.Error(), "request_id", requestIDOf(c))
	}

	msg, duplicate, err := s.store.IngestIncoming(ctx, acc.ID, in)
	if err != nil {
		return err
	}
	c.Locals(localMessageID, msg.ID)
	enqCtx, cancel := context.WithTimeout(ctx, enqueueTimeout)
	defer cancel()
	if msg.BotStatus != nil && *msg.BotStatus == models.BotPending {
		// Also on a duplicate: a client retrying after a 503 completes the enqueue that failed.
		if err := s.queue.BotReply(enqCtx, msg.ID); err != nil {
			// Stored but not queued: the sweep would answer it later; a 503 makes the client retry
			// sooner, and its retry is de-duplicated by messageSid.
			s.log.Warn("incoming stored, bot reply not enqueued", "message_id", msg.ID, "error", err.Error())
			return models.Errorf(models.CodeUnavailable, "the message was stored but could not be queued; retry with the same messageSid")
		}
	}
	if !duplicate && msg.MediaCheck != nil {
		if err := s.queue.MediaCheck(enqCtx, msg.ID); err != nil {
			s.log.Warn("media link check not enqueued", "message_id", msg.ID, "error", err.Error())
		}
	}
	s.rememberSid(ctx, key, msg.ID)
	if duplicate {
		return c.JSON(fiber.Map{"success": true, "messageId": msg.ID, "duplicate": true})
	}
	return c.JSON(fiber.Map{"success": true, "messageId": msg.ID})
}

func dedupeKey(accountID, sid string) string { return "dedupe:incoming:" + accountID + ":" + sid }

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
