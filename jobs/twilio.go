package jobs

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"maps"
	"net/url"
	"slices"
	"strings"
)

// SMS through a Twilio-compatible REST API: sending (SendSMS, through the ProviderClient of
// providers.go) and the signature check of the webhooks Twilio sends us (VerifyTwilioSignature).

// SMSCredentials are an account's Twilio-style credentials.
type SMSCredentials struct{ AccountSID, AuthToken, From string }

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

// twilioAPI reads the answers of the Messages API: the message "sid", and {"code","message"} errors.
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
