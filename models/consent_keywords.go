package models

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"

	"funnelchat/models/rules"
)

// KeywordOutcome is what HandleKeyword (or OptOutByBot) did with an incoming message.
type KeywordOutcome struct {
	Kind KeywordKind
	// Reply is the confirmation or the help text to deliver; nil when nothing is sent (a repeated
	// opt-out, or a message handled before whose answer went on already).
	Reply *Message
	// Changed says that the contact's consent changed.
	Changed bool
}

// HandleKeyword answers an incoming message that is a consent keyword (keywords.go: the built-in words
// and the account's own; README, "Compliance"), and returns nil for any other message, which the bot
// answers. For a keyword, in one transaction:
//   - opt-out: the contact is opted out on the message's channel, what campaigns still owe it there is
//     suppressed, and one confirmation is written; an opt-out while opted out already records and
//     sends nothing;
//   - opt-in: the contact is opted in again on the channel, and the confirmation is written;
//   - help: the help text is written (while opted out too).
//
// The bot does not answer a keyword (the message's bot status becomes BotKeyword). It acts once per
// message: a second call (a retried request, or the worker after a process died between the message's
// storing and this) finds the message claimed and returns its reply, if it is still to be delivered.
func (s *Store) HandleKeyword(ctx context.Context, m *Message) (*KeywordOutcome, error) {
	if m.Direction != DirectionIncoming || m.MessageType != MessageTypeText || !rules.KeywordCandidate(m.Body) {
		return nil, nil
	}
	settings, err := s.ComplianceSettings(ctx, m.AccountID)
	if err != nil {
		return nil, err
	}
	kind := ClassifyKeyword(m.Body, settings.OptOutKeywords, settings.OptInKeywords)
	if kind == KeywordNone {
		return nil, nil
	}
	return s.applyKeyword(ctx, m, kind, settings, ConsentSourceKeyword)
}

// OptOutByBot opts the contact out on the message's channel because the bot read an opt-out request
// in it (the LLM's opt_out tool, or the offline bot's phrases): the effect of an opt-out keyword, with
// source "bot".
func (s *Store) OptOutByBot(ctx context.Context, m *Message) (*KeywordOutcome, error) {
	settings, err := s.ComplianceSettings(ctx, m.AccountID)
	if err != nil {
		return nil, err
	}
	return s.applyKeyword(ctx, m, KeywordOptOut, settings, ConsentSourceBot)
}

func (s *Store) applyKeyword(ctx context.Context, m *Message, kind KeywordKind, settings *ComplianceSettings, source string) (*KeywordOutcome, error) {
	out := &KeywordOutcome{Kind: kind}
	var (
		contact  *Contact
		written  *Message // the reply this call wrote
		claimed  bool
		reopened bool
	)
	err := s.changeConsent(ctx, func(ctx context.Context, tx bun.Tx) error {
		*out, written, claimed, reopened = KeywordOutcome{Kind: kind}, nil, false, false // a run after a deadlock starts afresh
		var err error
		// The contact's row first: every consent change of one contact waits for the one before.
		if contact, err = s.lockContact(ctx, tx, m.AccountID, m.ContactID); err != nil {
			return err
		}
		res, err := tx.NewUpdate().Model((*Message)(nil)).Set("bot_status = ?", BotKeyword).
			Where("id = ? AND bot_status = ?", m.ID, BotPending).Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 1 {
			claimed = true
		} else {
			// Handled before, or answered by the bot already: only a reply still to deliver is owed.
			reply := new(Message)
			err := tx.NewSelect().Model(reply).Where("reply_to_id = ?", m.ID).Scan(ctx)
			if isNoRows(err) {
				return nil
			}
			if err == nil && reply.Author == AuthorSystem && reply.Status == StatusPending {
				out.Reply = reply
			}
			return err
		}
		var text string
		switch kind {
		case KeywordOptOut, KeywordOptIn:
			status, confirmation := ConsentOptedOut, settings.OptOutConfirmation
			if kind == KeywordOptIn {
				status, confirmation = ConsentOptedIn, settings.OptInConfirmation
			}
			change := consentChange{ConsentInput: ConsentInput{Channel: m.Channel, Status: status, Source: source, Text: m.Body, At: m.CreatedAt}, MessageID: m.ID}
			if out.Changed, reopened, err = applyConsent(ctx, tx, contact, change); err != nil {
				return err
			}
			if !out.Changed && kind == KeywordOptOut {
				return nil // opted out already: one confirmation was sent then, none now
			}
			text = confirmation
		case KeywordHelp:
			text = settings.HelpText
		}
		r := AnswerRoute(m)
		reply := &Message{
			ID: newID(prefixMessage), AccountID: m.AccountID, ContactID: m.ContactID, Direction: DirectionOutgoing,
			Channel: r.Channel, Transport: r.Transport, MessageType: MessageTypeText, Body: text, ToID: r.ToID,
			Author: AuthorSystem, Status: StatusPending, ReplyToID: &m.ID, CreatedAt: now(),
		}
		d, err := s.decide(ctx, tx, Outgoing{Purpose: PurposeCompliance, AccountID: m.AccountID, ContactID: m.ContactID,
			Contact: contact, RepliesTo: m, Route: r})
		if err != nil {
			return err
		}
		if !d.Allowed() {
			reason := d.Reason
			reply.Status, reply.Error, reply.GivenUpAt = StatusFailed, &reason, &reply.CreatedAt
		}
		res, err = tx.NewInsert().Model(reply).On("CONFLICT DO NOTHING").Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 1 {
			written = reply
			if reply.Status == StatusPending {
				out.Reply = reply
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("consent keyword: %w", err)
	}
	if claimed {
		status := BotKeyword
		m.BotStatus = &status
	}
	if out.Changed {
		s.emitConsent(ctx, contact, reopened)
	}
	if written != nil {
		s.emit(ctx, m.AccountID, EventMessageCreated, written)
	}
	return out, nil
}
