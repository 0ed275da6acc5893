package jobs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"
)

// The client of the built-in channel providers: SMS through a Twilio-compatible REST API (twilio.go),
// WhatsApp through the WhatsApp Cloud API (whatsapp.go), Messenger and Instagram through Meta's Send API
// (meta.go). A send is one attempt described by a DeliveryResult, classified like a webhook delivery
// (classifyResponse, response.go): timeouts, connection errors, 408, 429 and 5xx may be retried, any
// other non-2xx answer is final, and Retry-After is honoured. Provider hosts come from the operator's
// configuration, not from customers, so these requests do not go through the SSRF guard.

const (
	defaultSMSAPIBaseURL       = "https://api.twilio.com"
	defaultWhatsAppAPIBaseURL  = "https://graph.facebook.com"
	defaultMessengerAPIBaseURL = "https://graph.facebook.com/v23.0"
	defaultInstagramAPIBaseURL = "https://graph.instagram.com/v23.0"
	defaultProviderTimeout     = 10 * time.Second
	providerUserAgent          = "funnelchat/1"
	// redactedSecret replaces a credential wherever a provider's answer echoes it.
	redactedSecret = "[redacted]"
)

// ProviderClient sends through the SMS, WhatsApp, Messenger and Instagram providers over its own HTTP
// client. It is safe for concurrent use and meant to be shared, so that connections to a provider are
// reused.
type ProviderClient struct {
	client        *http.Client
	smsBase       string
	whatsAppBase  string
	messengerBase string
	instagramBase string
	timeout       time.Duration
}

// ProviderEndpoints are the providers' base URLs; an empty one is the provider's public API.
type ProviderEndpoints struct {
	SMS       string // SMS_API_BASE_URL; https://api.twilio.com
	WhatsApp  string // WHATSAPP_API_BASE_URL; https://graph.facebook.com (the version is appended)
	Messenger string // MESSENGER_API_BASE_URL; https://graph.facebook.com/v23.0 (with the version)
	Instagram string // INSTAGRAM_API_BASE_URL; https://graph.instagram.com/v23.0 (with the version)
}

// NewProviderClient returns a client for the providers at endpoints. Each request, from dialing to
// reading the response, must finish within timeout (10 s when timeout is not positive). Redirects are
// not followed.
func NewProviderClient(endpoints ProviderEndpoints, timeout time.Duration) *ProviderClient {
	if timeout <= 0 {
		timeout = defaultProviderTimeout
	}
	transport := &http.Transport{
		Proxy:                  http.ProxyFromEnvironment,
		DialContext:            (&net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           100,
		MaxIdleConnsPerHost:    16, // campaign sends go to one host
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    timeout,
		MaxResponseHeaderBytes: maxWebhookResponseBytes,
	}
	return &ProviderClient{
		client: &http.Client{
			Transport: transport,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		},
		smsBase:       providerBase(endpoints.SMS, defaultSMSAPIBaseURL),
		whatsAppBase:  providerBase(endpoints.WhatsApp, defaultWhatsAppAPIBaseURL),
		messengerBase: providerBase(endpoints.Messenger, defaultMessengerAPIBaseURL),
		instagramBase: providerBase(endpoints.Instagram, defaultInstagramAPIBaseURL),
		timeout:       timeout,
	}
}

// providerBase is a provider's base URL: the configured one without a trailing slash, or def.
func providerBase(configured, def string) string {
	if strings.TrimSpace(configured) == "" {
		return def
	}
	return strings.TrimRight(strings.TrimSpace(configured), "/")
}

// providerAPI is how one provider's answers read. Every provider's answers are classified alike, and
// like a webhook's (classifyResponse); only reading its bodies differs (providerCall.reading).
type providerAPI struct {
	name      string                   // "twilio", "whatsapp", "messenger", "instagram"
	messageID func(body []byte) string // the accepted message's id in a 2xx body
	// apiError reads the provider's error in a failure body: the text stored with the message, and
	// whether the provider says the failure is throttling, which a later attempt may get past. ok is
	// false when the body is not the provider's error.
	apiError func(body []byte) (text string, throttled, ok bool)
	// bareErrors stores the provider's error text alone, without "HTTP <status>: " before it (the
	// attempt keeps the status code).
	bareErrors bool
}

// providerCodeError reads the {"code","message"} error bodies of Twilio, and of the Graph API under
// "error" (nested true), as "<name> <code>: <message>".
func providerCodeError(name string, nested bool) func(body []byte) (string, bool, bool) {
	return func(body []byte) (string, bool, bool) {
		var e struct {
			Code    json.Number `json:"code"`
			Message string      `json:"message"`
		}
		if nested {
			var wrapped struct {
				Error *struct {
					Code    json.Number `json:"code"`
					Message string      `json:"message"`
				} `json:"error"`
			}
			if json.Unmarshal(body, &wrapped) != nil || wrapped.Error == nil {
				return "", false, false
			}
			e.Code, e.Message = wrapped.Error.Code, wrapped.Error.Message
		} else if json.Unmarshal(body, &e) != nil {
			return "", false, false
		}
		if e.Message == "" {
			return "", false, false
		}
		if e.Code == "" {
			return name + ": " + e.Message, false, true
		}
		return name + " " + e.Code.String() + ": " + e.Message, false, true
	}
}

// providerCall is one POST to a provider.
type providerCall struct {
	api           providerAPI
	url           string
	contentType   string
	body          []byte
	authorization string   // the Authorization header
	secrets       []string // credentials, as sent, that must not appear in the result
}

// post makes one attempt of call and describes its outcome. It never panics.
func (p *ProviderClient) post(ctx context.Context, call providerCall) (res DeliveryResult) {
	start := time.Now()
	defer func() {
		if r := recover(); r != nil {
			res = DeliveryResult{Error: redactSecrets(fmt.Sprintf("internal error: %v", r), call.secrets)}
		}
		res.Duration = time.Since(start)
	}()

	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, call.url, bytes.NewReader(call.body))
	if err != nil {
		return DeliveryResult{Error: "invalid " + call.api.name + " API URL"}
	}
	req.Header.Set("Content-Type", call.contentType)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", providerUserAgent)
	req.Header.Set("Authorization", call.authorization)

	resp, err := p.client.Do(req)
	if err != nil {
		res = p.transportFailure(ctx, err)
		res.Error = redactSecrets(res.Error, call.secrets)
		return res
	}
	defer resp.Body.Close()
	return classifyResponse(resp, call.reading())
}

// reading is how call's answers read: the provider's message id, and its error, when a failure's body
// is one, in place of the body; either way without call's secrets.
func (call providerCall) reading() responseReading {
	return responseReading{
		messageID: call.api.messageID,
		failure: func(body []byte) ([]byte, bool, bool) {
			detail, throttled, bare := string(body), false, false
			if text, t, ok := call.api.apiError(body); ok {
				detail, throttled, bare = text, t, call.api.bareErrors
			}
			// Redacted before the cut, so that no part of a credential survives at the end of the excerpt.
			return []byte(redactSecrets(detail, call.secrets)), throttled, bare
		},
	}
}

// transportFailure describes an attempt that got no HTTP response, with the webhook sender's rules
// (classifyTransportFailure; all of them retryable here, as no SSRF guard refuses a provider host).
func (p *ProviderClient) transportFailure(ctx context.Context, err error) DeliveryResult {
	return classifyTransportFailure(ctx, err, p.timeout)
}

// missingFields names the fields, given as name, value pairs, whose value is blank.
func missingFields(pairs ...string) string {
	var missing []string
	for i := 0; i+1 < len(pairs); i += 2 {
		if strings.TrimSpace(pairs[i+1]) == "" {
			missing = append(missing, pairs[i])
		}
	}
	return strings.Join(missing, ", ")
}

// redactSecrets replaces every occurrence of a non-empty secret in text, in one pass (so that a secret
// that happens to occur in the replacement is not replaced again), the longest secret first.
func redactSecrets(text string, secrets []string) string {
	secrets = slices.DeleteFunc(slices.Clone(secrets), func(s string) bool { return s == "" })
	slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(secrets))
	for _, s := range secrets {
		pairs = append(pairs, s, redactedSecret)
	}
	return strings.NewReplacer(pairs...).Replace(text)
}
