package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"funnelchat/models"
)

// WhatsApp media. An incoming image, audio, video or document names a media id, not a file that anyone
// may fetch: only the Cloud API serves it, to the account's access token, through a download URL that
// expires within minutes. So the api stores such a message with a media link to the Graph API's media
// endpoint (WhatsAppMediaLink) and a pending check, as it stores any media link, and the worker's media
// check (handleMediaCheck) fetches the file (FetchWhatsAppMedia), checks it by the rule embedded media
// obey (models.EmbedMedia) and stores it with the message, where the inbox shows it like an embedded file.

// WhatsAppMediaLink is the Graph API media endpoint of a WhatsApp media id under base
// (WHATSAPP_API_BASE_URL; empty for Meta's): the media link an incoming media message is stored with
// until the worker has fetched the file.
func WhatsAppMediaLink(base, mediaID string) string {
	return providerBase(base, defaultWhatsAppAPIBaseURL) + "/" + WhatsAppAPIVersion + "/" + url.PathEscape(mediaID)
}

// whatsAppMediaID is the media id at the end of a link WhatsAppMediaLink made ("" when there is none).
func whatsAppMediaID(link string) string {
	u, err := url.Parse(link)
	if err != nil {
		return ""
	}
	return u.Path[strings.LastIndex(u.Path, "/")+1:]
}

// maxGraphAnswerBytes bounds what is read of the media endpoint's JSON answer (a few hundred bytes).
const maxGraphAnswerBytes = 64 << 10

// FetchWhatsAppMedia fetches the file of a WhatsApp media link (WhatsAppMediaLink) with accessToken:
// GET {base}/v21.0/{media id}, base being this client's WhatsApp base URL whatever host the link names
// (the token goes to no other host the link could name), answers {"url": ...}, the file's download URL,
// which a second GET with the token reads. At most maxBytes+1 bytes are read, so that the check that
// follows sees a larger file as too large. When the file cannot be had, problem says why as the check
// of a media link does ("unreachable: HTTP 404 (whatsapp 100: ...)", "unreachable: timeout after 10s");
// the token never appears in it.
func (p *ProviderClient) FetchWhatsAppMedia(ctx context.Context, accessToken, link string, maxBytes int) (data []byte, problem string) {
	mediaID := whatsAppMediaID(link)
	if mediaID == "" {
		return nil, "invalid link"
	}
	if strings.TrimSpace(accessToken) == "" {
		return nil, "unreachable: the WhatsApp access token is missing"
	}
	answer, problem := p.getWithToken(ctx, p.whatsAppBase+"/"+WhatsAppAPIVersion+"/"+url.PathEscape(mediaID), accessToken, maxGraphAnswerBytes)
	if problem != "" {
		return nil, problem
	}
	var media struct {
		URL string `json:"url"`
	}
	if json.Unmarshal(answer, &media) != nil {
		return nil, "unreachable: the Graph API's answer is not JSON"
	}
	if u, err := url.Parse(media.URL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, "unreachable: the Graph API gave no download URL"
	}
	return p.getWithToken(ctx, media.URL, accessToken, int64(maxBytes)+1)
}

// getWithToken GETs rawURL with accessToken and reads at most limit bytes of a 2xx answer; otherwise
// problem says what went wrong, with the Graph error of a failure's body when it is one.
func (p *ProviderClient) getWithToken(ctx context.Context, rawURL, accessToken string, limit int64) (body []byte, problem string) {
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, "invalid link"
	}
	req.Header.Set("Authorization", "Bearer "+accessToken)
	req.Header.Set("User-Agent", providerUserAgent)
	secrets := []string{accessToken}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, "unreachable: " + redactSecrets(p.transportFailure(ctx, err).Error, secrets)
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(io.LimitReader(resp.Body, limit))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		problem = fmt.Sprintf("unreachable: HTTP %d", resp.StatusCode)
		if text, _, ok := whatsAppAPI.apiError(body); ok {
			problem += " (" + redactSecrets(text, secrets) + ")"
		}
		return nil, problem
	}
	if err != nil {
		return nil, "unreachable: " + redactSecrets(p.transportFailure(ctx, err).Error, secrets)
	}
	return body, ""
}

// checkWhatsAppMedia is the media check of a WhatsApp message (handleMediaCheck): it fetches the file
// with the account's access token, checks it, and stores it with the message, or records what went
// wrong as the check's result; the message is kept either way. No transaction or lock is held while
// the file is fetched: the write that stores it names the link it replaces (Store.SetFetchedMedia).
func (h *Handler) checkWhatsAppMedia(ctx context.Context, m *models.Message) error {
	creds, err := h.Store.WhatsAppSettings(ctx, m.AccountID)
	if models.ErrorCode(err) == models.CodeNotFound {
		return h.Store.SetMediaCheck(ctx, m.ID, "unreachable: the account's WhatsApp channel is no longer connected")
	}
	if err != nil {
		return err
	}
	data, problem := h.Providers.FetchWhatsAppMedia(ctx, creds.AccessToken, *m.MediaURL, h.Config.MaxMediaBytes)
	if problem != "" {
		return h.Store.SetMediaCheck(ctx, m.ID, problem)
	}
	dataURI, mediaType, problem := models.EmbedMedia(data, *m.MediaContentType, h.Config.MaxMediaBytes)
	if problem != "" {
		return h.Store.SetMediaCheck(ctx, m.ID, problem)
	}
	return h.Store.SetFetchedMedia(ctx, m.ID, *m.MediaURL, dataURI, mediaType)
}
