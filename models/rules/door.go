package rules

import (
	"fmt"
	"strings"
	"time"
)

// The outgoing door's rules, given their facts (package models' Decide reads the facts and applies
// them in order: consent, the channel's messaging window, quiet hours; README, "Outgoing messages").

// Purposes of an outgoing message: what it is decides which rules apply to it.
const (
	// PurposeCampaign is a campaign's opening or follow-up: business-initiated.
	PurposeCampaign = "campaign"
	// PurposeBotReply is the bot's answer to a message the contact just sent.
	PurposeBotReply = "bot_reply"
	// PurposeTeamReply is a reply typed by a team member, in the inbox or through the API.
	PurposeTeamReply = "team_reply"
	// PurposeAPISend is a message an integration sends with POST /v1/send_custom_channel_message.
	PurposeAPISend = "api_send"
	// PurposeCompliance is the service's own answer to a consent keyword (an opt-out or opt-in
	// confirmation, the help text): it goes even to a contact who just opted out, as the one
	// confirmation the rules allow.
	PurposeCompliance = "compliance"
)

// Channels whose provider sets a messaging window.
const (
	ChannelWhatsApp  = "whatsapp"
	ChannelMessenger = "messenger"
	ChannelInstagram = "instagram"
)

// Meta's messaging windows: anything may be sent within StandardWindow of the contact's last message
// on the channel; after that, until HumanAgentWindow, only a reply typed by a team member, sent with
// the HUMAN_AGENT tag; after that, nothing. WhatsApp's free-text window is StandardWindow too.
const (
	StandardWindow   = 24 * time.Hour
	HumanAgentWindow = 7 * 24 * time.Hour
)

// Codes of the reasons a message cannot go out, stored as the message's error or the send's detail
// ("NO_CHANNEL_IDENTITY: ...").
const (
	// ReasonOptedOut: the contact opted out on the message's channel.
	ReasonOptedOut          = "OPTED_OUT"
	ReasonNoChannelIdentity = "NO_CHANNEL_IDENTITY"
	ReasonOutsideWindow     = "OUTSIDE_MESSAGING_WINDOW"
	// ReasonQuietHours: the contact's zones leave no minute outside the quiet hours.
	ReasonQuietHours = "QUIET_HOURS"
)

// Verdict is the door's answer: send now, send later, or do not send.
type Verdict int

// The door's verdicts.
const (
	SendNow Verdict = iota
	// SendLater: the message may go at Decision.NotBefore, not before.
	SendLater
	// DoNotSend: the message must not go; Decision.Reason says why.
	DoNotSend
)

func (v Verdict) String() string {
	switch v {
	case SendNow:
		return "send now"
	case SendLater:
		return "send later"
	}
	return "do not send"
}

// Decision is the door's answer for one outgoing message.
type Decision struct {
	Verdict Verdict
	// NotBefore is when a SendLater message may go.
	NotBefore time.Time
	// Reason is why a message may not go, as "CODE: explanation" (ReasonOptedOut,
	// ReasonNoChannelIdentity, ReasonOutsideWindow): stored as a failed message's error or a campaign
	// send's detail.
	Reason string
	// HumanAgent: on Messenger and Instagram the message must carry the HUMAN_AGENT tag (a team
	// member's reply from 24 hours to 7 days after the contact last wrote there).
	HumanAgent bool
	// Template: on WhatsApp, outside the 24-hour window, the campaign's approved template goes instead
	// of the text.
	Template bool
}

// Allowed reports whether the message may go now.
func (d Decision) Allowed() bool { return d.Verdict == SendNow }

// Code is the reason's code ("OPTED_OUT" of "OPTED_OUT: ..."), "" for a message that may go.
func (d Decision) Code() string {
	code, _, _ := strings.Cut(d.Reason, ":")
	return code
}

// Refuse is the decision not to send, for reason ("CODE: explanation").
func Refuse(reason string) Decision {
	return Decision{Verdict: DoNotSend, Reason: reason}
}

// ConsentRule is the door's first rule, given the contact's consent: nothing but a keyword's own
// answer (PurposeCompliance) goes to a contact who opted out on channel. refused says that it
// refuses, with the decision to give.
func ConsentRule(purpose string, consent ConsentMap, channel string) (d Decision, refused bool) {
	if purpose == PurposeCompliance {
		return Decision{}, false
	}
	st, ok := consent.For(channel)
	if !ok || st.Status != ConsentOptedOut {
		return Decision{}, false
	}
	return Refuse(fmt.Sprintf("%s: the contact opted out on %s on %s (%s)", ReasonOptedOut, channel,
		st.At.UTC().Format("2006-01-02 15:04 MST"), st.Source)), true
}

// WindowFacts is what the messaging-window rule needs to know of a message to an addressed contact
// on a channel with a window (WhatsApp, Messenger, Instagram).
type WindowFacts struct {
	Channel string
	Purpose string
	// HasTemplate: the message is a campaign's and the campaign has an approved WhatsApp template.
	HasTemplate bool
	// LastWrote is when the contact last wrote on Channel; the zero time: never.
	LastWrote time.Time
	// At is when the message would go.
	At time.Time
}

// WindowRule is the door's rule for the channels with a messaging window:
//   - WhatsApp: free text within 24 hours of the contact's last message on WhatsApp; after that only a
//     campaign's approved template (business-initiated messages whose campaign has one).
//   - Messenger and Instagram: anything within 24 hours of the contact's last message on that channel;
//     a team member's reply, tagged HUMAN_AGENT, up to 7 days; nothing after.
func WindowRule(f WindowFacts) Decision {
	ch, last := f.Channel, f.LastWrote
	age := f.At.Sub(last)
	if !last.IsZero() && age <= StandardWindow {
		return Decision{Verdict: SendNow}
	}
	since := "has never written on " + ch
	if !last.IsZero() {
		since = "last wrote on " + ch + " more than 24 hours ago"
	}
	if ch == ChannelWhatsApp {
		if f.Purpose == PurposeCampaign && f.HasTemplate {
			return Decision{Verdict: SendNow, Template: true}
		}
		if f.Purpose == PurposeCampaign {
			return Refuse(ReasonOutsideWindow + ": the contact " + since + ", and the campaign has no whatsappTemplate to open the conversation with")
		}
		return Refuse(ReasonOutsideWindow + ": the contact " + since + "; WhatsApp then accepts only a campaign's approved template")
	}
	if last.IsZero() {
		return Refuse(ReasonOutsideWindow + ": the contact " + since)
	}
	if age <= HumanAgentWindow {
		if f.Purpose == PurposeTeamReply {
			return Decision{Verdict: SendNow, HumanAgent: true}
		}
		return Refuse(ReasonOutsideWindow + ": the contact " + since + "; only a team member's reply may go out, for 7 days")
	}
	return Refuse(ReasonOutsideWindow + ": the contact last wrote on " + ch + " more than 7 days ago")
}

// QuietFacts is what the quiet-hours rule needs to know of a business-initiated message.
type QuietFacts struct {
	// Quiet is the account's quiet hours (its own, else the operator's default); nil: none.
	Quiet *QuietHours
	// Phone (E.164) and TimeZone are the contact's, "" when not known; AccountZone is the account's.
	Phone, TimeZone, AccountZone string
	// At is when the message would go.
	At time.Time
}

// QuietRule is the door's last rule, for business-initiated messages: inside the contact's quiet
// hours, allowed d becomes SendLater at the first minute allowed in every zone of the contact
// (NextAllowed over ContactZones: its own time zone, else the ones its phone number implies, else the
// account's). When no minute of the next two days is allowed, the message does not go.
func QuietRule(d Decision, f QuietFacts) Decision {
	if f.Quiet == nil {
		return d
	}
	next, ok := NextAllowed(f.At, f.Quiet, f.Phone, ContactZones(f.TimeZone, f.Phone, f.AccountZone))
	if !ok {
		return Refuse(ReasonQuietHours + ": no minute of the next two days is outside the quiet hours in every time zone of the contact")
	}
	if next.After(f.At) {
		d.Verdict, d.NotBefore = SendLater, next
	}
	return d
}
