package jobs

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// The built-in channel transports: SMS through a Twilio-compatible REST API and WhatsApp through the
// WhatsApp Cloud API, and the signature checks of the webhooks those providers send us. A send is one
// attempt described by a DeliveryResult, classified like a webhook delivery (webhook.go): timeouts,
// connection errors, 408, 429 and 5xx may be retried, any other non-2xx answer is final, and Retry-After
// is honoured. Provider hosts come from the operator's configuration, not from customers, so these
// requests do not go through the SSRF guard.

const (
	// WhatsAppAPIVersion is the Graph API version of the WhatsApp Cloud API requests.
	WhatsAppAPIVersion = "v21.0"

	defaultSMSAPIBaseURL       = "https://api.twilio.com"
	defaultWhatsAppAPIBaseURL  = "https://graph.facebook.com"
	defaultMessengerAPIBaseURL = "https://graph.facebook.com/v23.0"
	defaultInstagramAPIBaseURL = "https://graph.instagram.com/v23.0"
	defaultProviderTimeout     = 10 * time.Second
	providerUserAgent          = "funnelchat/1"
	// redactedSecret replaces a credential wherever a provider's answer echoes it.
	redactedSecret = "[redacted]"
)

// SMSCredentials are an account's Twilio-style credentials.
type SMSCredentials struct{ AccountSID, AuthToken, From string }

// WhatsAppCredentials are an account's WhatsApp Cloud API credentials.
type WhatsAppCredentials struct{ PhoneNumberID, AccessToken string }

// WhatsAppTemplate is an approved WhatsApp message template and the values of its body parameters
// ({{1}}, {{2}}... in order).
type WhatsAppTemplate struct {
	Name       string
	Language   string // a WhatsApp language code such as "en_US"
	Parameters []string
}

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
	base := func(configured, def string) string {
		if strings.TrimSpace(configured) == "" {
			return def
		}
		return strings.TrimRight(strings.TrimSpace(configured), "/")
	}
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
		smsBase:       base(endpoints.SMS, defaultSMSAPIBaseURL),
		whatsAppBase:  base(endpoints.WhatsApp, defaultWhatsAppAPIBaseURL),
		messengerBase: base(endpoints.Messenger, defaultMessengerAPIBaseURL),
		instagramBase: base(endpoints.Instagram, defaultInstagramAPIBaseURL),
		timeout:       timeout,
	}
}

// SendSMS makes one attempt to send body to the phone number to (E.164): a POST of the form fields To,
// From and Body to {base}/2010-04-01/Accounts/{AccountSID}/Messages.json with HTTP basic auth
// AccountSID:AuthToken. On a 2xx answer the result is OK and ProviderID is the message's "sid". A Twilio
// error body {"code":21211,"message":"..."} becomes the Error "HTTP 400: twilio 21211: <message>"; other
// failures read like webhook failures ("HTTP 500: <excerpt>", "timeout after 10s", "connection refused").
// Incomplete credentials are a final failure without a request. The auth token never appears in the result.
func (p *ProviderClient) SendSMS(ctx context.Context, creds SMSCredentials, to, body string) DeliveryResult {
	if missing := missingFields("accountSid", creds.AccountSID, "authToken", creds.AuthToken, "from", creds.From); missing != "" {
		return DeliveryResult{Error: "SMS credentials incomplete: missing " + missing}
	}
	form := url.Values{"To": {to}, "From": {creds.From}, "Body": {body}}
	basic := base64.StdEncoding.EncodeToString([]byte(creds.AccountSID + ":" + creds.AuthToken))
	return p.post(ctx, providerCall{
		api:           twilioAPI,
		url:           p.smsBase + "/2010-04-01/Accounts/" + url.PathEscape(creds.AccountSID) + "/Messages.json",
		contentType:   "application/x-www-form-urlencoded",
		body:          []byte(form.Encode()),
		authorization: "Basic " + basic,
		secrets:       []string{creds.AuthToken, basic},
	})
}

// SendWhatsApp makes one attempt to send a message to the phone number to (E.164; the "+" is stripped,
// as the Cloud API wants digits): a POST of JSON to {base}/v21.0/{PhoneNumberID}/messages with
// Authorization: Bearer AccessToken. With a template it sends that template message, its Parameters as
// the body component's text parameters (no components without parameters); otherwise a text message of
// text. On a 2xx answer the result is OK and ProviderID is the id of messages[0] ("wamid..."). A Graph API
// error body {"error":{"message":"...","code":131047}} becomes the Error "HTTP 400: whatsapp 131047:
// <message>"; other failures read like webhook failures. Incomplete credentials or a template without a
// name or language are a final failure without a request. The access token never appears in the result.
func (p *ProviderClient) SendWhatsApp(ctx context.Context, creds WhatsAppCredentials, to, text string, template *WhatsAppTemplate) DeliveryResult {
	if missing := missingFields("phoneNumberId", creds.PhoneNumberID, "accessToken", creds.AccessToken); missing != "" {
		return DeliveryResult{Error: "WhatsApp credentials incomplete: missing " + missing}
	}
	msg := whatsAppMessage{MessagingProduct: "whatsapp", To: strings.TrimPrefix(to, "+")}
	if template != nil {
		if missing := missingFields("name", template.Name, "language", template.Language); missing != "" {
			return DeliveryResult{Error: "WhatsApp template incomplete: missing " + missing}
		}
		msg.Type = "template"
		msg.Template = &whatsAppTemplateObject{Name: template.Name, Language: whatsAppLanguage{Code: template.Language}}
		if len(template.Parameters) > 0 {
			body := whatsAppComponent{Type: "body", Parameters: make([]whatsAppParameter, len(template.Parameters))}
			for i, value := range template.Parameters {
				body.Parameters[i] = whatsAppParameter{Type: "text", Text: value}
			}
			msg.Template.Components = []whatsAppComponent{body}
		}
	} else {
		msg.Type = "text"
		msg.Text = &whatsAppText{Body: text}
	}
	payload, err := json.Marshal(msg)
	if err != nil {
		return DeliveryResult{Error: "WhatsApp message could not be encoded"}
	}
	return p.post(ctx, providerCall{
		api:           whatsAppAPI,
		url:           p.whatsAppBase + "/" + WhatsAppAPIVersion + "/" + url.PathEscape(creds.PhoneNumberID) + "/messages",
		contentType:   "application/json",
		body:          payload,
		authorization: "Bearer " + creds.AccessToken,
		secrets:       []string{creds.AccessToken},
	})
}

// whatsAppMessage is the body of a Cloud API send: a text message or a template message.
type whatsAppMessage struct {
	MessagingProduct string                  `json:"messaging_product"`
	To               string                  `json:"to"`
	Type             string                  `json:"type"`
	Text             *whatsAppText           `json:"text,omitempty"`
	Template         *whatsAppTemplateObject `json:"template,omitempty"`
}

type whatsAppText struct {
	Body string `json:"body"`
}

type whatsAppTemplateObject struct {
	Name       string              `json:"name"`
	Language   whatsAppLanguage    `json:"language"`
	Components []whatsAppComponent `json:"components,omitempty"`
}

type whatsAppLanguage struct {
	Code string `json:"code"`
}

type whatsAppComponent struct {
	Type       string              `json:"type"`
	Parameters []whatsAppParameter `json:"parameters"`
}

type whatsAppParameter struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// providerAPI is how one provider's answers read. Every provider's answers are classified alike (see
// post); only reading its bodies differs.
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

var twilioAPI = providerAPI{
	name: "twilio",
	messageID: func(body []byte) string {
		var ok struct {
			SID string `json:"sid"`
		}
		_ = json.Unmarshal(body, &ok)
		return ok.SID
	},
	apiError: providerCodeError("twilio", false),
}

var whatsAppAPI = providerAPI{
	name: "whatsapp",
	messageID: func(body []byte) string {
		var ok struct {
			Messages []struct {
				ID string `json:"id"`
			} `json:"messages"`
		}
		if json.Unmarshal(body, &ok) != nil || len(ok.Messages) == 0 {
			return ""
		}
		return ok.Messages[0].ID
	},
	apiError: providerCodeError("whatsapp", true),
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
	// A read error after the status line changes nothing: the provider has answered.
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxWebhookResponseBytes))

	res = DeliveryResult{
		StatusCode: resp.StatusCode,
		RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()),
	}
	switch code := resp.StatusCode; {
	case code >= 200 && code <= 299:
		res.RetryAfter = 0
		res.ProviderID = responseExcerpt([]byte(call.api.messageID(body)))
	case code >= 300 && code <= 399:
		res.Error = fmt.Sprintf("HTTP %d: redirect not followed", code)
	default:
		res.Error = fmt.Sprintf("HTTP %d", code)
		res.Retryable = retryableStatus(code)
		detail := string(body)
		if text, throttled, ok := call.api.apiError(body); ok {
			detail = text
			res.Retryable = res.Retryable || throttled
			if call.api.bareErrors {
				res.Error = ""
			}
		}
		// Redacted before the cut, so that no part of a credential survives at the end of the excerpt.
		if excerpt := responseExcerpt([]byte(redactSecrets(detail, call.secrets))); excerpt != "" {
			res.Error = strings.TrimPrefix(res.Error+": "+excerpt, ": ")
		}
	}
	return res
}

// transportFailure describes an attempt that got no HTTP response, with the webhook sender's rules
// (all of them retryable here, as no SSRF guard refuses a provider host).
func (p *ProviderClient) transportFailure(ctx context.Context, err error) DeliveryResult {
	return (&WebhookSender{timeout: p.timeout}).transportFailure(ctx, err)
}

// retryableStatus reports whether an answer with this non-2xx status may be retried: 408, 429 and 5xx,
// as for webhook deliveries (WebhookSender.Send).
func retryableStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || (code >= 500 && code <= 599)
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

// VerifyTwilioSignature reports whether signature, the X-Twilio-Signature header of a Twilio webhook,
// is valid for a POST of form to fullURL (the URL Twilio requested, query included): the base64 of the
// HMAC-SHA1, keyed with authToken, of fullURL followed by every form parameter sorted by name, each name
// immediately followed by its value (a repeated name once per distinct value, values sorted), as Twilio
// documents. Like Twilio's own libraries it also accepts the signature of fullURL with its port removed,
// or with the scheme's default port added when it has none, since Twilio signs either form. The
// comparison takes constant time. An empty authToken or signature never verifies.
func VerifyTwilioSignature(authToken, fullURL string, form url.Values, signature string) bool {
	if authToken == "" || signature == "" {
		return false
	}
	params := twilioSignedParams(form)
	valid := false
	for _, u := range twilioURLForms(fullURL) {
		expected := twilioSignature(authToken, u, params)
		if subtle.ConstantTimeCompare([]byte(expected), []byte(signature)) == 1 {
			valid = true
		}
	}
	return valid
}

// twilioSignature is the base64 HMAC-SHA1 of fullURL followed by params, keyed with authToken.
func twilioSignature(authToken, fullURL, params string) string {
	mac := hmac.New(sha1.New, []byte(authToken))
	mac.Write([]byte(fullURL))
	mac.Write([]byte(params))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// twilioSignedParams is the part of the signed text that form contributes: names in byte order, each
// followed by each of its distinct values in byte order. form is not modified.
func twilioSignedParams(form url.Values) string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(form)) {
		values := slices.Clone(form[name])
		slices.Sort(values)
		for _, v := range slices.Compact(values) {
			b.WriteString(name)
			b.WriteString(v)
		}
	}
	return b.String()
}

// twilioURLForms is fullURL as given and, for an http or https URL, the same URL with its port removed,
// or with the scheme's default port added when it has none. The text outside the port is kept as it is,
// since it is signed byte for byte.
func twilioURLForms(fullURL string) []string {
	forms := []string{fullURL}
	u, err := url.Parse(fullURL)
	if err != nil || u.Host == "" {
		return forms
	}
	var defaultPort string
	switch strings.ToLower(u.Scheme) {
	case "https":
		defaultPort = "443"
	case "http":
		defaultPort = "80"
	default:
		return forms
	}
	_, rest, ok := strings.Cut(fullURL, "://")
	if !ok {
		return forms
	}
	authorityEnd := len(fullURL) - len(rest)
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authorityEnd += i
	} else {
		authorityEnd = len(fullURL)
	}
	authority := fullURL[len(fullURL)-len(rest) : authorityEnd]
	switch port := u.Port(); {
	case port == "":
		if strings.HasSuffix(authority, ":") { // an empty port: "https://host:/path"
			return forms
		}
		forms = append(forms, fullURL[:authorityEnd]+":"+defaultPort+fullURL[authorityEnd:])
	case strings.HasSuffix(authority, ":"+port):
		forms = append(forms, fullURL[:authorityEnd-len(port)-1]+fullURL[authorityEnd:])
	}
	return forms
}

// VerifyMetaSignature reports whether header, the X-Hub-Signature-256 header of a Meta (WhatsApp Cloud
// API) webhook, is "sha256=" followed by the hex HMAC-SHA256 of rawBody keyed with appSecret. The
// comparison takes constant time. An empty appSecret, a header without the "sha256=" prefix, and one whose
// digest is not 32 bytes of hex never verify.
func VerifyMetaSignature(appSecret string, rawBody []byte, header string) bool {
	if appSecret == "" {
		return false
	}
	digest, ok := strings.CutPrefix(strings.TrimSpace(header), "sha256=")
	if !ok {
		return false
	}
	got, err := hex.DecodeString(digest)
	if err != nil || len(got) != sha256.Size {
		return false
	}
	mac := hmac.New(sha256.New, []byte(appSecret))
	mac.Write(rawBody)
	return hmac.Equal(got, mac.Sum(nil))
}
