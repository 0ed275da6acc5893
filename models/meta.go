package models

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"funnelchat/models/rules"
)

// Messenger and Instagram reach contacts through Meta's Messenger Platform: one page (or Instagram
// professional account) per service account, webhooks signed with the Meta app's secret, and the Send
// API, which only accepts messages inside Meta's messaging windows.

// The two Meta channels, as a campaign's channel, a message's channel and its transport.
const (
	ChannelMessenger = rules.ChannelMessenger
	ChannelInstagram = rules.ChannelInstagram
)

// Meta's messaging windows: anything may be sent within StandardWindow of the contact's last message
// on the channel; after that, until HumanAgentWindow, only a reply typed by a team member, sent with
// the HUMAN_AGENT tag; after that, nothing (rules.WindowRule).
const (
	StandardWindow   = rules.StandardWindow
	HumanAgentWindow = rules.HumanAgentWindow
)

// Codes of the reasons a Meta message or campaign send cannot go out, stored as the message's error
// or the send's detail ("NO_CHANNEL_IDENTITY: ...").
const (
	ReasonNoChannelIdentity = rules.ReasonNoChannelIdentity
	ReasonOutsideWindow     = rules.ReasonOutsideWindow
	// ReasonQuietHours: the contact's zones leave no minute outside the quiet hours.
	ReasonQuietHours = rules.ReasonQuietHours
)

// IsMetaChannel reports whether channel is Messenger or Instagram.
func IsMetaChannel(channel string) bool {
	return channel == ChannelMessenger || channel == ChannelInstagram
}

// MetaSenderID is the sender id (a contact's fromId) that a Meta page-scoped id has on channel:
// "messenger:<psid>" or "instagram:<igsid>". Page-scoped ids are numbers that mean nothing outside
// their channel, so the prefix keeps one contact per account and channel, apart from custom-channel
// ids and from each other.
func MetaSenderID(channel, scopedID string) string { return channel + ":" + scopedID }

// MetaRecipientID is the page-scoped id inside a MetaSenderID, or "" when senderID is not one of
// channel.
func MetaRecipientID(channel, senderID string) string {
	id, ok := strings.CutPrefix(senderID, channel+":")
	if !ok {
		return ""
	}
	return id
}

// isMetaSenderID reports whether a contact identity belongs to a Meta channel.
func isMetaSenderID(senderID string) bool {
	return strings.HasPrefix(senderID, ChannelMessenger+":") || strings.HasPrefix(senderID, ChannelInstagram+":")
}

// MetaSettings are an account's credentials for one Meta channel: the page (or Instagram account) id,
// the token the Send API takes, the app secret that signs webhooks, and the token that answers Meta's
// subscription check.
type MetaSettings struct {
	ID          string `json:"id"`
	AccessToken string `json:"accessToken"`
	AppSecret   string `json:"appSecret"`
	VerifyToken string `json:"verifyToken"`
}

// MessengerSettings is the body of PUT /v1/settings/channels/messenger.
type MessengerSettings struct {
	PageID          string `json:"pageId"`
	PageAccessToken string `json:"pageAccessToken"`
	AppSecret       string `json:"appSecret"`
	VerifyToken     string `json:"verifyToken"`
}

// InstagramSettings is the body of PUT /v1/settings/channels/instagram; AccountID is the Instagram
// professional account's id.
type InstagramSettings struct {
	AccountID   string `json:"accountId"`
	AccessToken string `json:"accessToken"`
	AppSecret   string `json:"appSecret"`
	VerifyToken string `json:"verifyToken"`
}

// Meta returns the settings in their stored form. Errors: VALIDATION_ERROR naming the field.
func (m MessengerSettings) Meta() (MetaSettings, error) {
	return validateMeta(MetaSettings{m.PageID, m.PageAccessToken, m.AppSecret, m.VerifyToken}, "pageId", "pageAccessToken")
}

// Meta returns the settings in their stored form. Errors: VALIDATION_ERROR naming the field.
func (i InstagramSettings) Meta() (MetaSettings, error) {
	return validateMeta(MetaSettings{i.AccountID, i.AccessToken, i.AppSecret, i.VerifyToken}, "accountId", "accessToken")
}

// validateMeta trims and checks Meta settings; idName and tokenName are the fields' names in the
// request. All four values are required: without the app secret no webhook can be verified, and
// without the verify token Meta cannot subscribe the webhook.
func validateMeta(v MetaSettings, idName, tokenName string) (MetaSettings, error) {
	v.ID, v.AccessToken = strings.TrimSpace(v.ID), strings.TrimSpace(v.AccessToken)
	v.AppSecret, v.VerifyToken = strings.TrimSpace(v.AppSecret), strings.TrimSpace(v.VerifyToken)
	if err := requireFields(textField{name: idName, value: v.ID}, textField{name: tokenName, value: v.AccessToken},
		textField{name: "appSecret", value: v.AppSecret}, textField{name: "verifyToken", value: v.VerifyToken}); err != nil {
		return v, err
	}
	for _, r := range v.ID {
		if r < '0' || r > '9' {
			return v, Errorf(CodeValidation, "%s must be the numeric id Meta shows for it", idName)
		}
	}
	return v, checkTexts(textField{idName, v.ID, 64}, textField{tokenName, v.AccessToken, 4096},
		textField{"appSecret", v.AppSecret, 256}, textField{"verifyToken", v.VerifyToken, 256})
}

// SetMetaSettings stores the account's credentials for channel (messenger or instagram). Errors:
// CONFLICT when another account has connected the same page or Instagram account.
func (s *Store) SetMetaSettings(ctx context.Context, accountID, channel string, v MetaSettings) error {
	if !IsMetaChannel(channel) {
		return fmt.Errorf("set meta settings: %q is not a Meta channel", channel)
	}
	return s.setChannelSettings(ctx, accountID, channel, v, v.ID)
}

// MetaSettings returns the account's credentials for channel, or NOT_FOUND.
func (s *Store) MetaSettings(ctx context.Context, accountID, channel string) (*MetaSettings, error) {
	v := new(MetaSettings)
	return v, s.loadChannelSettings(ctx, accountID, channel, v)
}

// LastIncomingOn returns when the contact last wrote on channel; zero when it never has.
func (s *Store) LastIncomingOn(ctx context.Context, contactID, channel string) (time.Time, error) {
	return lastIncomingOn(ctx, s.db, contactID, channel)
}

func lastIncomingOn(ctx context.Context, db bun.IDB, contactID, channel string) (time.Time, error) {
	if contactID == "" {
		return time.Time{}, nil
	}
	var at []time.Time
	err := db.NewSelect().Model((*Message)(nil)).Column("created_at").
		Where("contact_id = ? AND direction = ? AND channel = ?", contactID, DirectionIncoming, channel).
		Order("created_at DESC").Limit(1).Scan(ctx, &at)
	if err != nil {
		return time.Time{}, fmt.Errorf("last incoming: %w", err)
	}
	if len(at) == 0 {
		return time.Time{}, nil
	}
	return at[0], nil
}
