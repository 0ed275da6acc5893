package jobs

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/hibiken/asynq"

	"funnelchat/models"
)

// TypeMediaCheck fetches the start of a linked media file and compares it with its declared type.
const TypeMediaCheck = "media:check"

// MediaCheckPayload names the incoming message whose media link to check.
type MediaCheckPayload struct {
	MessageID string `json:"messageId"`
}

// mediaSniffBytes is how much of a linked file is fetched: enough to recognize any type we sniff.
const mediaSniffBytes = 4096

// MediaCheck enqueues the check of an incoming message's media link.
func (q *Queue) MediaCheck(ctx context.Context, messageID string) error {
	return q.enqueue(ctx, TypeMediaCheck, MediaCheckPayload{MessageID: messageID},
		asynq.TaskID("media:"+messageID), asynq.Queue(QueueLow), asynq.MaxRetry(2))
}

// handleMediaCheck fetches the first bytes of a message's media link (through the same SSRF guard as
// webhooks) and records "ok" or what is wrong: unreachable, an HTTP error, or content of another type
// than mediaContentType. A WhatsApp message's link is the Graph API's, whose file is fetched whole and
// stored with the message (checkWhatsAppMedia). The message itself is kept either way.
func (h *Handler) handleMediaCheck(ctx context.Context, t *asynq.Task) error {
	p, err := payloadOf[MediaCheckPayload](t)
	if err != nil {
		return err
	}
	m, err := h.Store.Message(ctx, p.MessageID)
	if err != nil {
		return gone(err)
	}
	if m.MediaURL == nil || m.MediaContentType == nil || !models.IsMediaLink(*m.MediaURL) {
		return nil
	}
	if m.Transport == models.ChannelWhatsApp {
		return h.checkWhatsAppMedia(ctx, m)
	}
	return h.Store.SetMediaCheck(ctx, m.ID, h.Sender.checkMedia(ctx, *m.MediaURL, *m.MediaContentType))
}

// checkMedia fetches the start of url and says "ok" or what is wrong with it.
func (s *WebhookSender) checkMedia(ctx context.Context, url, declared string) string {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "invalid link"
	}
	req.Header.Set("Range", fmt.Sprintf("bytes=0-%d", mediaSniffBytes-1))
	req.Header.Set("User-Agent", webhookUserAgent)
	resp, err := s.client.Do(req)
	if err != nil {
		return "unreachable: " + s.transportFailure(ctx, err).Error
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Sprintf("unreachable: HTTP %d", resp.StatusCode)
	}
	head, _ := io.ReadAll(io.LimitReader(resp.Body, mediaSniffBytes))
	if detected, ok := models.MediaMatches(head, declared); !ok {
		return models.MediaMismatch(declared, detected)
	}
	return "ok"
}
