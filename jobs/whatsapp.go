package jobs

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"
)

// WhatsApp through the WhatsApp Cloud API: sending (SendWhatsApp, through the ProviderClient of
// providers.go) and the signature check of the webhooks Meta sends us (VerifyMetaSignature, which the
// Messenger and Instagram webhooks use as well).

// WhatsAppAPIVersion is the Graph API version of the WhatsApp Cloud API requests.
const WhatsAppAPIVersion = "v21.0"

// WhatsAppCredentials are an account's WhatsApp Cloud API credentials.
type WhatsAppCredentials struct{ PhoneNumberID, AccessToken string }

// WhatsAppTemplate is an approved WhatsApp message template and the values of its body parameters
// ({{1}}, {{2}}... in order).
type WhatsAppTemplate struct {
	Name       string
	Language   string // a WhatsApp language code such as "en_US"
	Parameters []string
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

// whatsAppAPI reads the answers of the Cloud API: the id of messages[0], and Graph errors under "error".
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
