package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// webhookTolerance is how far a delivery's webhook-timestamp may be from the sink's clock, as
// Standard Webhooks receivers check it against replays.
const webhookTolerance = 5 * time.Minute

// maxDeliveryBytes bounds a delivery body the sink reads.
const maxDeliveryBytes = 1 << 20

// delivery is one webhook request the sink received.
type delivery struct {
	Arrival   time.Time // when the handler was entered, before reading the body
	WebhookID string    // the webhook-id header: the id of the delivered message
	Body      []byte
	// BadSignature says why the signature did not verify; "" when it did.
	BadSignature string
}

// webhookPayload is the body of a reply or campaign-opening delivery (README: custom channels).
type webhookPayload struct {
	ContactID string `json:"contactId"`
	MessageID string `json:"messageId"`
	UserID    string `json:"userId"`
	Body      string `json:"body"`
	ToID      string `json:"toId"`
	Channel   string `json:"channel"`
}

// sink is the HTTP server the deployment delivers webhooks to. Its handler only records the arrival,
// checks the signature (one HMAC over a small body) and hands the delivery to Deliveries; the caller
// does the accounting. It is a fasthttp server, like the client, to take less of the CPU that the
// deployment under test shares.
type sink struct {
	Deliveries chan delivery

	ln      net.Listener
	srv     *fasthttp.Server
	url     string
	key     atomic.Pointer[[]byte]
	closing chan struct{}
	once    sync.Once
}

// openSink starts a sink and registers it as the account's webhook, so that the deployment's replies
// come to it signed with the secret the api gives back.
func openSink(ctx context.Context, api *client, addr, publicURL string, buffer int, progress io.Writer) (*sink, error) {
	snk, err := startSink(addr, publicURL, buffer)
	if err != nil {
		return nil, err
	}
	secret, err := api.setWebhook(ctx, snk.URL())
	if err == nil {
		err = snk.SetSecret(secret)
	}
	if err != nil {
		snk.Close()
		return nil, err
	}
	fmt.Fprintf(progress, "loadtest: webhook sink at %s\n", snk.URL())
	return snk, nil
}

// startSink listens on addr ("127.0.0.1:0" picks a free port) and serves until Close. publicURL is the
// URL the deployment should call; "" means http://<the address listened on>/hook. buffer is the
// capacity of Deliveries; a full channel makes the handler wait.
func startSink(addr, publicURL string, buffer int) (*sink, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("sink: listen on %s: %w", addr, err)
	}
	s := &sink{Deliveries: make(chan delivery, buffer), ln: ln, closing: make(chan struct{}), url: publicURL}
	if s.url == "" {
		s.url = "http://" + ln.Addr().String() + "/hook"
	}
	s.srv = &fasthttp.Server{
		Handler: s.serve, ReadTimeout: 10 * time.Second, MaxRequestBodySize: maxDeliveryBytes,
		NoDefaultServerHeader: true, NoDefaultContentType: true, NoDefaultDate: true,
	}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// URL is the webhook URL to register with the deployment.
func (s *sink) URL() string { return s.url }

// SetSecret sets the signing secret ("whsec_<base64 key>") deliveries are verified with.
func (s *sink) SetSecret(secret string) error {
	key, err := decodeSecret(secret)
	if err != nil {
		return err
	}
	s.key.Store(&key)
	return nil
}

// Close stops the server; handlers waiting on a full Deliveries channel drop their delivery.
func (s *sink) Close() {
	s.once.Do(func() {
		close(s.closing)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.srv.ShutdownWithContext(ctx)
	})
}

// serve answers 200 to a delivery with a valid signature and 401 to any other (a final answer for
// the sender: it does not retry 4xx), after handing it to Deliveries either way.
func (s *sink) serve(c *fasthttp.RequestCtx) {
	arrival := time.Now()
	if !c.IsPost() {
		c.Error("POST only", http.StatusMethodNotAllowed)
		return
	}
	body := append([]byte(nil), c.PostBody()...) // fasthttp reuses its buffer after the handler
	d := delivery{Arrival: arrival, WebhookID: string(c.Request.Header.Peek("webhook-id")), Body: body}
	var key []byte
	if k := s.key.Load(); k != nil {
		key = *k
	}
	if err := verifySignature(key, d.WebhookID, string(c.Request.Header.Peek("webhook-timestamp")), body,
		string(c.Request.Header.Peek("webhook-signature")), arrival); err != nil {
		d.BadSignature = err.Error()
	}
	select {
	case s.Deliveries <- d:
	case <-s.closing:
	}
	if d.BadSignature != "" {
		c.Error("bad signature", http.StatusUnauthorized)
		return
	}
	c.SetStatusCode(http.StatusOK)
}

// decodeSecret returns the HMAC key a Standard Webhooks secret encodes after its "whsec_" prefix.
func decodeSecret(secret string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return nil, fmt.Errorf("signing secret is not whsec_<base64>: %w", err)
	}
	if len(key) == 0 {
		return nil, errors.New("signing secret is empty")
	}
	return key, nil
}

// verifySignature checks a Standard Webhooks signature: header holds one or more space-separated
// "v1,<base64 HMAC-SHA256(key, id.timestamp.body)>" and one must match; timestamp (unix seconds) must
// be within webhookTolerance of now.
func verifySignature(key []byte, id, timestamp string, body []byte, header string, now time.Time) error {
	switch {
	case len(key) == 0:
		return errors.New("no signing secret known yet")
	case id == "" || timestamp == "" || header == "":
		return errors.New("missing webhook-id, webhook-timestamp or webhook-signature")
	}
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return fmt.Errorf("webhook-timestamp %q is not unix seconds", timestamp)
	}
	if skew := now.Sub(time.Unix(ts, 0)); skew > webhookTolerance || skew < -webhookTolerance {
		return fmt.Errorf("webhook-timestamp is %s away from now", skew.Round(time.Second))
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + timestamp + "."))
	mac.Write(body)
	want := mac.Sum(nil)
	for _, sig := range strings.Fields(header) {
		version, value, ok := strings.Cut(sig, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(value)
		if err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return errors.New("no v1 signature matches")
}

// decodePayload parses a delivery body; a body that is not the expected JSON gives the zero payload.
func decodePayload(body []byte) webhookPayload {
	var p webhookPayload
	_ = json.Unmarshal(body, &p)
	return p
}
