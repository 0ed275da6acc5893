package models

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"funnelchat/models/rules"
)

// The outgoing door: every message the service sends to a contact (a campaign's opening or follow-up,
// a bot reply, a team member's reply, a send_custom_channel_message) is decided by Decide, once when
// it is written and again at each delivery attempt (DecideAttempt, handover.go), so that a rule about
// who may be written to, when and on which channel is kept in one place (README, "Outgoing messages").

// Purposes of an outgoing message: what it is decides which rules apply to it (rules.PurposeCampaign
// and the others).
const (
	PurposeCampaign   = rules.PurposeCampaign
	PurposeBotReply   = rules.PurposeBotReply
	PurposeTeamReply  = rules.PurposeTeamReply
	PurposeAPISend    = rules.PurposeAPISend
	PurposeCompliance = rules.PurposeCompliance
)

// Verdict is the door's answer: send now, send later, or do not send (rules.Verdict).
type Verdict = rules.Verdict

// The door's verdicts.
const (
	SendNow   = rules.SendNow
	SendLater = rules.SendLater
	DoNotSend = rules.DoNotSend
)

// Route is where a message goes: the channel recorded on it, the transport that carries it, and the
// contact's address on that transport.
type Route struct {
	Channel   string
	Transport string
	ToID      string
}

// Outgoing is a message the service wants to send, as the door sees it.
type Outgoing struct {
	Purpose   string
	AccountID string
	ContactID string
	Route
	// Campaign is the campaign a PurposeCampaign message belongs to (its WhatsApp template).
	Campaign *Campaign
	// RepliesTo is the incoming message a bot reply answers: the contact wrote then, on its channel.
	RepliesTo *Message
	// Contact is the contact as the caller has read it (its consent, phone and time zone); nil: the
	// door reads it.
	Contact *Contact
	// Delivery says that the message is written already and about to be delivered: its time was
	// decided when it was written, so quiet hours are not applied again.
	Delivery bool
	// At is when the message would go; the zero time means now.
	At time.Time
}

// Decision is the door's answer for one outgoing message (rules.Decision).
type Decision = rules.Decision

// refusal is the error of a message a caller asked for and the door refused: 409 OPTED_OUT for a
// contact who opted out on the channel, else 409 CONFLICT with the reason. Nothing is stored.
func refusal(d Decision) error {
	if d.Code() == ReasonOptedOut {
		return Errorf(CodeOptedOut, "%s", d.Reason)
	}
	return Errorf(CodeConflict, "%s", d.Reason)
}

func refuse(reason string) (Decision, error) {
	return rules.Refuse(reason), nil
}

// Decide applies every rule an outgoing message must obey and answers send now, send later (with
// NotBefore) or do not send (with the reason). It reads what it needs from the store (the contact's
// consent, when it last wrote on the channel, the account's quiet hours); it changes nothing.
//
// Consent first: nothing but a keyword's own confirmation (PurposeCompliance) goes to a contact who
// opted out on the channel (ReasonOptedOut).
//
// The messaging windows, one rule per channel:
//   - WhatsApp: free text within 24 hours of the contact's last message on WhatsApp; after that only a
//     campaign's approved template (business-initiated messages whose campaign has one).
//   - Messenger and Instagram: anything within 24 hours of the contact's last message on that channel;
//     a team member's reply, tagged HUMAN_AGENT, up to 7 days; nothing after.
//   - SMS and custom channels: no window.
//
// Quiet hours last: a campaign's opening or follow-up that would go inside the contact's quiet hours
// (quietRule) is sent later, at the first allowed minute.
func (s *Store) Decide(ctx context.Context, out Outgoing) (Decision, error) {
	return s.decide(ctx, s.db, out)
}

// decide is Decide reading through db, so that a caller inside a transaction (on SQLite, the only
// connection) can ask the door before it writes.
func (s *Store) decide(ctx context.Context, db bun.IDB, out Outgoing) (Decision, error) {
	at := out.At
	if at.IsZero() {
		at = time.Now()
	}
	contact := out.Contact
	if contact == nil && out.Purpose != PurposeCompliance {
		var err error
		if contact, err = doorContact(ctx, db, out.ContactID); err != nil {
			return Decision{}, err
		}
	}
	if d, refused := ConsentRule(out.Purpose, contact, out.Channel); refused {
		return d, nil
	}
	var d Decision
	switch out.Transport {
	case ChannelWhatsApp, ChannelMessenger, ChannelInstagram:
		// The windows are the provider's: a custom channel an integration happens to label
		// "whatsapp" goes through its own webhook, and the integration keeps its provider's rules.
		var err error
		if d, err = windowRule(ctx, db, out, at); err != nil || !d.Allowed() {
			return d, err
		}
	default:
		if out.ToID == "" {
			return refuse(ReasonNoChannelIdentity + ": the contact has no address on " + out.Channel)
		}
		d = Decision{Verdict: SendNow}
	}
	if out.Purpose == PurposeCampaign && !out.Delivery {
		return s.quietRule(ctx, db, out.AccountID, contact, at, d)
	}
	return d, nil
}

// ConsentRule is the door's first rule, for a contact as read (its Consent): nothing but a keyword's
// own answer (PurposeCompliance) goes to a contact who opted out on channel (rules.ConsentRule). refused
// says that it refuses, with the decision to give. Decide applies it, when a message is written and
// again at each delivery attempt (DecideAttempt), with the contact as it reads then.
func ConsentRule(purpose string, contact *Contact, channel string) (d Decision, refused bool) {
	if contact == nil {
		return Decision{}, false
	}
	return rules.ConsentRule(purpose, rules.ConsentMap(contact.Consent), channel)
}

// doorContact reads what the door needs of a contact: its consent, phone and time zone.
func doorContact(ctx context.Context, db bun.IDB, contactID string) (*Contact, error) {
	return readDoorContact(ctx, db.NewSelect(), contactID)
}

// readDoorContact is doorContact with q as the select to run (DecideAttempt's share-locks the row).
func readDoorContact(ctx context.Context, q *bun.SelectQuery, contactID string) (*Contact, error) {
	c := new(Contact)
	err := q.Model(c).Column("id", "account_id", "phone", "time_zone", "consent").Where("id = ?", contactID).Scan(ctx)
	if isNoRows(err) {
		return &Contact{ID: contactID, Consent: ConsentMap{}}, nil // deleted meanwhile: nothing recorded
	}
	if err != nil {
		return nil, fmt.Errorf("door: read contact: %w", err)
	}
	return c, nil
}

// quietRule is Decide's last rule, for business-initiated messages: inside the contact's quiet hours
// (the account's, or the operator's default; README, "Compliance"), allowed d becomes SendLater at
// the first minute allowed in every zone of the contact (rules.QuietRule). The contact's zones are its own
// time zone, else the ones its phone number implies, else the account's.
func (s *Store) quietRule(ctx context.Context, db bun.IDB, accountID string, contact *Contact, at time.Time, d Decision) (Decision, error) {
	settings, err := s.complianceSettings(ctx, db, accountID)
	if err != nil {
		return Decision{}, fmt.Errorf("door: %w", err)
	}
	return rules.QuietRule(d, rules.QuietFacts{
		Quiet: settings.QuietHours, Phone: derefOr(contact.Phone, ""), TimeZone: derefOr(contact.TimeZone, ""),
		AccountZone: settings.TimeZone, At: at,
	}), nil
}

// windowRule is Decide for the channels with a messaging window (WhatsApp and Meta's two): a contact
// with no address there is refused before anything is read; else the rule is rules.WindowRule, given
// when the contact last wrote on the channel.
func windowRule(ctx context.Context, db bun.IDB, out Outgoing, at time.Time) (Decision, error) {
	ch := out.Channel
	if out.ToID == "" && !IsMetaChannel(ch) {
		return refuse(ReasonNoChannelIdentity + ": the contact has no address on " + ch)
	}
	if IsMetaChannel(ch) && MetaRecipientID(ch, out.ToID) == "" {
		return refuse(ReasonNoChannelIdentity + ": the contact has never written on " + ch)
	}
	last, err := lastWrote(ctx, db, out, ch)
	if err != nil {
		return Decision{}, err
	}
	return rules.WindowRule(rules.WindowFacts{
		Channel: ch, Purpose: out.Purpose, LastWrote: last, At: at,
		HasTemplate: out.Campaign != nil && out.Campaign.WhatsAppTemplate != nil,
	}), nil
}

// lastWrote is when the contact last wrote on channel: the message a reply answers when it was on
// that channel (no query), else the latest incoming message there.
func lastWrote(ctx context.Context, db bun.IDB, out Outgoing, channel string) (time.Time, error) {
	if r := out.RepliesTo; r != nil && r.Channel == channel && r.Direction == DirectionIncoming {
		return r.CreatedAt, nil
	}
	return lastIncomingOn(ctx, db, out.ContactID, channel)
}

// PurposeOf is the purpose of a stored outgoing message, from its author.
func PurposeOf(m *Message) string {
	switch m.Author {
	case AuthorCampaign:
		return PurposeCampaign
	case AuthorBot:
		return PurposeBotReply
	case AuthorHuman:
		return PurposeTeamReply
	case AuthorSystem:
		return PurposeCompliance
	}
	return PurposeAPISend
}

// CampaignRoute is where a campaign's messages to the contact go: the campaign's channel, at the
// address RouteTo gives there ("" when it has none: the door then refuses the message with the reason).
func (s *Store) CampaignRoute(ctx context.Context, c *Campaign, contact *Contact) (Route, error) {
	r, err := s.RouteTo(ctx, contact, c.ChannelLabel(), nil)
	if ErrorCode(err) == CodeNoAddress {
		return Route{Channel: c.ChannelLabel(), Transport: c.Transport()}, nil
	}
	if err != nil {
		return Route{}, fmt.Errorf("campaign route: %w", err)
	}
	return r, nil
}

// ReplyPlan is what the door will do with a team member's reply to a contact: where it goes and
// whether it may.
type ReplyPlan struct {
	Route    Route
	Decision Decision
	// Problem is why there is nowhere to reply ("" when there is a route).
	Problem string
}

// PlanTeamReply tells what a team member's reply to the contact would do now (on channel, when one is
// given), for the inbox to show before anything is typed. It is what HumanReply does.
func (s *Store) PlanTeamReply(ctx context.Context, contact *Contact, channel string) (ReplyPlan, error) {
	route, err := s.RouteTo(ctx, contact, channel, nil)
	if err != nil {
		if ErrorCode(err) == CodeNoAddress {
			return ReplyPlan{Problem: ErrorMessage(err)}, nil
		}
		return ReplyPlan{}, err
	}
	d, err := s.Decide(ctx, Outgoing{Purpose: PurposeTeamReply, AccountID: contact.AccountID, ContactID: contact.ID, Route: route})
	if err != nil {
		return ReplyPlan{}, err
	}
	return ReplyPlan{Route: route, Decision: d}, nil
}
