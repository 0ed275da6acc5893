package jobs

import (
	"context"
	"encoding/json"
	"net/url"

	"funnelchat/models"
)

// Messenger and Instagram go through Meta's Send API, which the two channels share: the same request,
// the same answers and Graph's error format. Only the base URL and the id in the path differ.

// MetaCredentials are what a Send API call needs: the page (or Instagram account) id and its token.
type MetaCredentials struct{ ID, AccessToken string }

// Messaging types of the Send API.
const (
	metaResponse   = "RESPONSE"    // within 24 hours of the contact's last message
	metaMessageTag = "MESSAGE_TAG" // with a tag; HUMAN_AGENT: a team member's reply within 7 days
	metaHumanAgent = "HUMAN_AGENT"
)

// metaThrottlingCodes are Graph's rate-limit error codes (application, user, page and API-call
// limits): a later attempt may go through, so they are retried like a 429.
var metaThrottlingCodes = map[string]bool{"4": true, "17": true, "32": true, "613": true}

// metaMessage is the body of a Send API call.
type metaMessage struct {
	Recipient     metaRecipient `json:"recipient"`
	MessagingType string        `json:"messaging_type"`
	Tag           string        `json:"tag,omitempty"`
	Message       metaText      `json:"message"`
}

type metaRecipient struct {
	ID string `json:"id"`
}

type metaText struct {
	Text string `json:"text"`
}

// SendMeta makes one attempt to send text to recipient (a page-scoped id) on channel (messenger or
// instagram): a POST of JSON to {base}/{ID}/messages with Authorization: Bearer AccessToken, base being
// MESSENGER_API_BASE_URL or INSTAGRAM_API_BASE_URL. humanAgent sends it with messaging_type
// MESSAGE_TAG and tag HUMAN_AGENT (a team member's reply after Meta's 24-hour window), otherwise as
// RESPONSE. On a 2xx answer the result is OK and ProviderID is the answer's message_id. A Graph error
// {"error":{"message","code","error_subcode"}} becomes the Error "<code>/<subcode>: <message>" (the
// attempt keeps the HTTP status); 5xx, 429 and Graph's throttling codes (4, 17, 32, 613) may be retried,
// other errors are final. Incomplete credentials are a final failure without a request. The token never
// appears in the result.
func (p *ProviderClient) SendMeta(ctx context.Context, channel string, creds MetaCredentials, recipient, text string, humanAgent bool) DeliveryResult {
	if missing := missingFields("id", creds.ID, "accessToken", creds.AccessToken, "recipient", recipient); missing != "" {
		return DeliveryResult{Error: channel + " credentials incomplete: missing " + missing}
	}
	msg := metaMessage{Recipient: metaRecipient{ID: recipient}, MessagingType: metaResponse, Message: metaText{Text: text}}
	if humanAgent {
		msg.MessagingType, msg.Tag = metaMessageTag, metaHumanAgent
	}
	payload, err := json.Marshal(msg)
	if err != nil {
		return DeliveryResult{Error: channel + " message could not be encoded"}
	}
	base := p.messengerBase
	if channel == models.ChannelInstagram {
		base = p.instagramBase
	}
	return p.post(ctx, providerCall{
		api:           metaAPI(channel),
		url:           base + "/" + url.PathEscape(creds.ID) + "/messages",
		contentType:   "application/json",
		body:          payload,
		authorization: "Bearer " + creds.AccessToken,
		secrets:       []string{creds.AccessToken},
	})
}

// metaAPI reads the Send API's answers.
func metaAPI(channel string) providerAPI {
	return providerAPI{
		name: channel,
		messageID: func(body []byte) string {
			var ok struct {
				MessageID string `json:"message_id"`
			}
			_ = json.Unmarshal(body, &ok)
			return ok.MessageID
		},
		apiError:   graphError,
		bareErrors: true,
	}
}

// graphError reads a Graph API error as "<code>/<subcode>: <message>" ("<code>: <message>" without a
// subcode), throttled for Graph's rate-limit codes.
func graphError(body []byte) (string, bool, bool) {
	var e struct {
		Error *struct {
			Message string      `json:"message"`
			Code    json.Number `json:"code"`
			Subcode json.Number `json:"error_subcode"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || e.Error == nil || (e.Error.Message == "" && e.Error.Code == "") {
		return "", false, false
	}
	code := e.Error.Code.String()
	if code == "" {
		code = "0"
	}
	if e.Error.Subcode != "" {
		code += "/" + e.Error.Subcode.String()
	}
	return code + ": " + e.Error.Message, metaThrottlingCodes[e.Error.Code.String()], true
}

// metaTransport sends through an account's Messenger or Instagram credentials, inside Meta's messaging
// windows, which the door checks for each attempt before any call: within 24 hours of the contact's
// last message on the channel anything goes out as a RESPONSE; from 24 hours to 7 days only a reply
// typed by a team member, with the HUMAN_AGENT tag; otherwise the message fails with
// OUTSIDE_MESSAGING_WINDOW and no call is made (a final failure: waiting cannot bring the window back).
type metaTransport struct {
	channel string
	store   *models.Store
	client  *ProviderClient
}

func (t metaTransport) Deliver(ctx context.Context, m *models.Message, acc *models.Account, d models.Decision) DeliveryResult {
	creds, err := t.store.MetaSettings(ctx, acc.ID, t.channel)
	if err != nil {
		return credentialsFailure(err, t.channel)
	}
	recipient := models.MetaRecipientID(t.channel, m.ToID)
	return t.client.SendMeta(ctx, t.channel, MetaCredentials{ID: creds.ID, AccessToken: creds.AccessToken}, recipient, m.Body, d.HumanAgent)
}
