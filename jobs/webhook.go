package jobs

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"code.dny.dev/ssrf"

	"funnelchat/models"
)

// Outbound webhooks (README, "Custom channels, the bot and the reply webhook"): Standard Webhooks signing, an HTTP
// transport whose dialer refuses non-public destinations, and the check a customer's URL passes when it
// is saved. Retry scheduling is the caller's: Send only reports what happened and whether it may be retried.

const (
	webhookSecretPrefix = "whsec_"
	webhookUserAgent    = "funnelchat-webhooks/1"

	// maxWebhookURLLength bounds a saved webhook URL.
	maxWebhookURLLength = 2048
)

// NewWebhookSecret returns a new per-account signing secret in the Standard Webhooks format: "whsec_"
// followed by the standard, padded base64 encoding of 32 random bytes.
func NewWebhookSecret() string {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // crypto/rand.Read never returns an error; it crashes the program instead
	return webhookSecretPrefix + base64.StdEncoding.EncodeToString(key)
}

// SignWebhook returns the value of the webhook-signature header, "v1,<base64 HMAC-SHA256>", computed over
// "<id>.<unix seconds of ts>.<body>" with the key that secret encodes after its "whsec_" prefix. It fails
// when secret is not valid base64 or encodes an empty key.
func SignWebhook(secret, id string, ts time.Time, body []byte) (string, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, webhookSecretPrefix))
	if err != nil {
		return "", fmt.Errorf("sign webhook: secret is not base64: %w", err)
	}
	if len(key) == 0 {
		return "", errors.New("sign webhook: empty secret")
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id))
	mac.Write([]byte("."))
	mac.Write(strconv.AppendInt(nil, ts.Unix(), 10))
	mac.Write([]byte("."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil)), nil
}

// WebhookRequest is one delivery attempt of one payload.
type WebhookRequest struct {
	URL     string
	Secret  string
	ID      string // webhook-id header; the message id, the same on every retry
	Payload []byte // JSON body
}

// DeliveryResult is what one delivery attempt came to. It is what the message's attempt log stores.
type DeliveryResult struct {
	StatusCode int           // 0 when no HTTP response was received
	Error      string        // "" on success; else e.g. "HTTP 500: <excerpt>", "timeout after 10s", "connection refused"
	Duration   time.Duration // from the start of the attempt to the end of reading the response
	Retryable  bool          // timeouts, connection errors, 408, 429, 5xx; other non-2xx and refused destinations are final
	RetryAfter time.Duration // the response's Retry-After (seconds or HTTP date), 0 if absent or invalid, at most 1h
	ProviderID string        // the provider's id of the accepted message (SMS, WhatsApp, Messenger, Instagram); "" for webhooks
}

// OK reports whether the receiver answered with a 2xx status.
func (r DeliveryResult) OK() bool { return r.StatusCode >= 200 && r.StatusCode <= 299 }

// WebhookSender delivers webhooks over its own HTTP client. It is safe for concurrent use and meant to
// be shared, so that connections to a receiver are reused.
type WebhookSender struct {
	client  *http.Client
	timeout time.Duration
}

// errDestinationNotAllowed marks a connection the SSRF guard refused.
var errDestinationNotAllowed = errors.New("destination not allowed")

// NewWebhookSender returns a sender whose every request, from dialing to reading the response, must
// finish within timeout (WEBHOOK_TIMEOUT). Unless allowPrivate is set (WEBHOOK_ALLOW_PRIVATE), every
// connection is checked in the dialer against the IP address actually dialed, so neither a hostname
// that resolves to a private address (including by DNS rebinding after the URL was saved) nor a proxy
// can reach one. Redirects are never followed and environment proxy settings are ignored.
func NewWebhookSender(timeout time.Duration, allowPrivate bool) *WebhookSender {
	dialer := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		dialer.Control = guardConnection
	}
	transport := &http.Transport{
		Proxy:             nil, // a proxy would make the guard check the proxy's address, not the receiver's
		DialContext:       dialer.DialContext,
		ForceAttemptHTTP2: true,
		MaxIdleConns:      256,
		// Most accounts' replies go to one host: with fewer idle connections per host than deliveries
		// in flight, every delivery beyond them closed its connection and the next dialed a new one
		// (a TCP handshake, and a TLS one in production, per reply under load).
		MaxIdleConnsPerHost:    64,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    timeout,
		MaxResponseHeaderBytes: maxWebhookResponseBytes,
	}
	return &WebhookSender{
		client: &http.Client{
			Transport: transport,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		},
		timeout: timeout,
	}
}

// Send makes one delivery attempt: a POST of req.Payload with the headers Content-Type:
// application/json, User-Agent, webhook-id (req.ID), webhook-timestamp (unix seconds) and
// webhook-signature. A redirect is a final failure ("HTTP 302: redirect not followed"). At most 64 KiB of
// the response body is read. Send never panics and returns no error: every failure is described in the
// result, with whether a later attempt may succeed.
func (s *WebhookSender) Send(ctx context.Context, req WebhookRequest) (res DeliveryResult) {
	start := time.Now()
	defer func() {
		if p := recover(); p != nil {
			res = DeliveryResult{Error: fmt.Sprintf("internal error: %v", p)}
		}
		res.Duration = time.Since(start)
	}()

	target, err := url.Parse(req.URL)
	if err != nil || (target.Scheme != "http" && target.Scheme != "https") || target.Host == "" {
		return DeliveryResult{Error: "invalid webhook URL"}
	}
	signature, err := SignWebhook(req.Secret, req.ID, start, req.Payload)
	if err != nil {
		return DeliveryResult{Error: "invalid webhook secret"}
	}

	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	httpReq, err := http.NewRequestWithContext(ctx, http.MethodPost, target.String(), bytes.NewReader(req.Payload))
	if err != nil {
		return DeliveryResult{Error: "invalid webhook request: " + err.Error()}
	}
	httpReq.Header.Set("Content-Type", "application/json")
	httpReq.Header.Set("User-Agent", webhookUserAgent)
	// Set through the map so that the names keep the lower case the Standard Webhooks spec uses.
	httpReq.Header["webhook-id"] = []string{req.ID}
	httpReq.Header["webhook-timestamp"] = []string{strconv.FormatInt(start.Unix(), 10)}
	httpReq.Header["webhook-signature"] = []string{signature}

	resp, err := s.client.Do(httpReq)
	if err != nil {
		return s.transportFailure(ctx, err)
	}
	defer resp.Body.Close()
	// The receiver's body is only an excerpt for a failure's Error: no message id, nothing to redact.
	return classifyResponse(resp, responseReading{})
}

// transportFailure describes an attempt that got no HTTP response (classifyTransportFailure). Only a
// refused destination is final.
func (s *WebhookSender) transportFailure(ctx context.Context, err error) DeliveryResult {
	return classifyTransportFailure(ctx, err, s.timeout)
}

// ValidateWebhookURL checks a webhook URL a customer saves: an absolute http or https URL of at most 2048
// characters with a host and without user information. Unless allowPrivate is set, it must use https and
// its host, an IP literal or every address the name resolves to (net.DefaultResolver, with ctx), must be
// public per IsPublicIP. Every refusal is a CodeValidation error whose message says why.
func ValidateWebhookURL(ctx context.Context, raw string, allowPrivate bool) error {
	if strings.TrimSpace(raw) == "" {
		return models.Errorf(models.CodeValidation, "url is required")
	}
	if len(raw) > maxWebhookURLLength {
		return models.Errorf(models.CodeValidation, "url is longer than %d characters", maxWebhookURLLength)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return models.Errorf(models.CodeValidation, "url is not a valid URL")
	}
	if !u.IsAbs() {
		return models.Errorf(models.CodeValidation, "url must be an absolute http or https URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return models.Errorf(models.CodeValidation, "url must use http or https, not %q", u.Scheme)
	}
	if u.User != nil {
		return models.Errorf(models.CodeValidation, "url must not contain a user name or password")
	}
	host := u.Hostname()
	if host == "" {
		return models.Errorf(models.CodeValidation, "url must have a host")
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
			return models.Errorf(models.CodeValidation, "url has an invalid port %q", port)
		}
	}
	if allowPrivate {
		return nil
	}
	if u.Scheme != "https" {
		return models.Errorf(models.CodeValidation, "url must use https")
	}

	if ip, err := netip.ParseAddr(host); err == nil {
		if !IsPublicIP(ip) {
			return models.Errorf(models.CodeValidation, "url host %s is not a public address", host)
		}
		return nil
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		return models.Errorf(models.CodeValidation, "url host %s could not be resolved", host)
	}
	for _, ip := range addrs {
		if !IsPublicIP(ip) {
			// The address itself is not shown: it would tell the client about our network.
			return models.Errorf(models.CodeValidation, "url host %s resolves to a non-public address", host)
		}
	}
	return nil
}

// guard is the SSRF guard of code.dny.dev/ssrf: tcp4 and tcp6 only, any port (receivers may listen on
// 8443), and its deny lists (IANA special-purpose IPv4 ranges; IPv6 outside 2000::/3 or special-purpose).
var guard = ssrf.New(ssrf.WithAnyPort())

// deniedV4 and deniedV6 are the ranges the service refuses (README), checked in addition to the library's lists so
// that a change of its defaults cannot open them.
var (
	deniedV4 = mustPrefixes(
		"0.0.0.0/8",      // "this network"
		"10.0.0.0/8",     // RFC 1918
		"100.64.0.0/10",  // CGNAT (RFC 6598)
		"127.0.0.0/8",    // loopback
		"169.254.0.0/16", // link-local, including the cloud metadata address 169.254.169.254
		"172.16.0.0/12",  // RFC 1918
		"192.168.0.0/16", // RFC 1918
		"224.0.0.0/4",    // multicast
		"240.0.0.0/4",    // reserved, including the broadcast address 255.255.255.255
	)
	deniedV6 = mustPrefixes(
		"::/128",        // unspecified
		"::1/128",       // loopback
		"fc00::/7",      // unique local (ULA)
		"fe80::/10",     // link-local
		"ff00::/8",      // multicast
		"64:ff9b::/96",  // NAT64, which embeds any IPv4 address
		"2002::/16",     // 6to4, which embeds any IPv4 address
		"::ffff:0:0/96", // IPv4-mapped; the IPv4 address inside is checked against deniedV4 as well
	)
)

func mustPrefixes(prefixes ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(prefixes))
	for i, p := range prefixes {
		out[i] = netip.MustParsePrefix(p)
	}
	return out
}

// IsPublicIP reports whether a webhook may be delivered to ip: the ssrf library's guard allows it and it
// is in none of the ranges the service refuses (loopback, RFC 1918, link-local, CGNAT, 0/8, multicast,
// reserved, IPv6 unspecified, ULA, link-local, NAT64, 6to4, and the IPv4-mapped form of every IPv4 one).
// An address with an IPv6 zone is never public. Note that the library refuses every IPv4-mapped IPv6
// address, public or not; the dialer never sees one, as Go dials those over IPv4.
func IsPublicIP(ip netip.Addr) bool {
	if !ip.IsValid() || ip.Zone() != "" {
		return false
	}
	if guard.SafeAddr(ip) != nil {
		return false
	}
	v4 := ip.Unmap()
	if v4.Is4() {
		for _, p := range deniedV4 {
			if p.Contains(v4) {
				return false
			}
		}
	}
	if ip.Is6() {
		for _, p := range deniedV6 {
			if p.Contains(ip) {
				return false
			}
		}
	}
	return !ip.IsLoopback() && !ip.IsPrivate() && !ip.IsLinkLocalUnicast() && !ip.IsMulticast() &&
		!ip.IsUnspecified()
}

// guardError is a connection the guard refused, with the reason.
type guardError struct{ reason string }

func (e *guardError) Error() string { return "destination not allowed: " + e.reason }
func (e *guardError) Unwrap() error { return errDestinationNotAllowed }

// guardConnection is the net.Dialer Control function: it runs after name resolution, on the address
// about to be connected to, so it sees what DNS answered at that moment.
func guardConnection(network, address string, conn syscall.RawConn) error {
	if err := guard.Safe(network, address, conn); err != nil {
		return &guardError{reason: err.Error()}
	}
	addrPort, err := netip.ParseAddrPort(address)
	if err != nil {
		return &guardError{reason: fmt.Sprintf("cannot parse address %q", address)}
	}
	if !IsPublicIP(addrPort.Addr()) {
		return &guardError{reason: fmt.Sprintf("%s is not a public address", addrPort.Addr())}
	}
	return nil
}
