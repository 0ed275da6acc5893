package models

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"
)

// Conversation status (README, "Conversations: open, resolved, snoozed"). Each conversation (one per
// contact) is open, resolved, or snoozed until a time, kept on the contact's row: conversation_status,
// snoozed_until, and conversation_status_at (when it last changed).
//
// A snooze ends by itself. A conversation snoozed until T counts as open from T on: every read and every
// conditional write decides it by the time it runs (conversationIs), so no job has to run at T, and the
// list, the counts and the writes that reopen agree at every instant. The row keeps saying "snoozed"
// after T; only the next change rewrites it.

// Conversation statuses.
const (
	ConversationOpen     = "open"
	ConversationResolved = "resolved"
	ConversationSnoozed  = "snoozed"
)

// EventConversationStatusChanged tells listeners (GET /v1/events, the inbox) that a conversation's
// status changed: by PATCH /v1/conversations/{contactId}, the inbox, or a reopening (a new incoming
// message, a hand-off, an opt-out). Its data is a ConversationStatus.
const EventConversationStatusChanged = "conversation.status_changed"

// ConversationStatus is a conversation's status as the API shows it, and the data of
// conversation.status_changed. SnoozedUntil is set only while Status is ConversationSnoozed.
type ConversationStatus struct {
	ContactID    string     `json:"contactId"`
	Status       string     `json:"status"`
	SnoozedUntil *time.Time `json:"snoozedUntil"`
}

// conversationIs is the one rule of what a status means: the SQL condition that the conversation of
// the contacts row alias has status at the time at (an SQL expression: "?" for a bound time, or a
// PL/pgSQL parameter). Open is the stored "open" and every snooze whose time has come.
func conversationIs(status, alias, at string) string {
	c := alias + "."
	switch status {
	case ConversationResolved:
		return "(" + c + "conversation_status = 'resolved')"
	case ConversationSnoozed:
		return "(" + c + "conversation_status = 'snoozed' AND " + c + "snoozed_until > " + at + ")"
	}
	return "(" + strings.Join(openRanges(alias, at), " OR ") + ")"
}

// openRanges are the two parts of the open status, each a range of an index on (..., conversation_status,
// ...): the stored "open", and the snoozes whose time has come.
func openRanges(alias, at string) []string {
	c := alias + "."
	return []string{c + "conversation_status = 'open'", "(" + c + "conversation_status = 'snoozed' AND " + c + "snoozed_until <= " + at + ")"}
}

// ConversationRanges is ConversationIs cut into conditions whose union it is, each one range of an index
// that leads with the conversation status (the conversation list reads each range in order and merges
// them): two for open, one for the others, and for "" (every status) the three statuses as stored.
func ConversationRanges(status, alias string, at time.Time) []Cond {
	parts := []string{conversationIs(status, alias, "?")}
	switch status {
	case ConversationOpen:
		parts = openRanges(alias, "?")
	case "":
		parts = nil
		for _, st := range []string{ConversationOpen, ConversationSnoozed, ConversationResolved} {
			parts = append(parts, alias+".conversation_status = '"+st+"'")
		}
	}
	out := make([]Cond, len(parts))
	for i, p := range parts {
		out[i] = Cond{Expr: p, Args: timeArgs(p, at)}
	}
	return out
}

// Cond is an SQL condition with its arguments.
type Cond struct {
	Expr string
	Args []any
}

// ConversationIs is the condition, with its arguments, that the conversation of the contacts row alias
// has status at the time at, for the read models (models/report).
func ConversationIs(status, alias string, at time.Time) (string, []any) {
	expr := conversationIs(status, alias, "?")
	return expr, timeArgs(expr, at)
}

// ConversationStatusColumns selects the status of the conversation of the contacts row alias at the
// time at, as conversation_status_now, and the end of its snooze (NULL unless snoozed), as
// snoozed_until_now: the same rule as ConversationIs, so a row shows the status it is filtered by.
func ConversationStatusColumns(alias string, at time.Time) (string, []any) {
	snoozed, resolved := conversationIs(ConversationSnoozed, alias, "?"), conversationIs(ConversationResolved, alias, "?")
	expr := "CASE WHEN " + snoozed + " THEN 'snoozed' WHEN " + resolved + " THEN 'resolved' ELSE 'open' END AS conversation_status_now, " +
		"CASE WHEN " + snoozed + " THEN " + alias + ".snoozed_until END AS snoozed_until_now"
	return expr, timeArgs(expr, at)
}

// timeArgs is at once for each placeholder of expr (the conditions above bind only the time); nil for
// none.
func timeArgs(expr string, at time.Time) []any {
	n := strings.Count(expr, "?")
	if n == 0 {
		return nil
	}
	args := make([]any, n)
	for i := range args {
		args[i] = at
	}
	return args
}

// reopenSQL is the one write that reopens conversations: the contacts rows that from and where select
// (from "" for none; at is the time, an SQL expression as in conversationIs) become open, unless they
// are open already at that time, with RETURNING the ids of those it reopened. IngestIncoming's
// PostgreSQL functions run it as text (ingest_pg.go), reopenConversation through bun.
func reopenSQL(from, where, at string) string {
	q := "UPDATE contacts SET conversation_status = 'open', snoozed_until = NULL, conversation_status_at = " + at
	if from != "" {
		q += " FROM " + from
	}
	return q + " WHERE " + where + " AND NOT " + conversationIs(ConversationOpen, "contacts", at) + " RETURNING contacts.id"
}

// reopenConversation reopens the conversation with the contact inside tx, when it is resolved or
// snoozed at the time at: a new incoming message, a hand-off and an opt-out need the team again. The
// condition is in the write, so it is decided in the same transaction as what reopens it. It reports
// whether it reopened it (the caller publishes that once tx has committed: emitReopened).
func reopenConversation(ctx context.Context, tx bun.IDB, contactID string, at time.Time) (bool, error) {
	var ids []string
	if err := tx.NewRaw(reopenSQL("", "contacts.id = ?", "?"), at, contactID, at).Scan(ctx, &ids); err != nil && !isNoRows(err) {
		return false, fmt.Errorf("reopen conversation: %w", err)
	}
	return len(ids) > 0, nil
}

// emitReopened publishes that the conversation with the contact was reopened.
func (s *Store) emitReopened(ctx context.Context, accountID, contactID string) {
	s.emit(ctx, accountID, EventConversationStatusChanged, ConversationStatus{ContactID: contactID, Status: ConversationOpen})
}

// ConversationStatusInput is a status to give a conversation: Status, and SnoozedUntil (required, and
// in the future) for ConversationSnoozed only.
type ConversationStatusInput struct {
	Status       string
	SnoozedUntil *time.Time
}

// normalize checks the input at the time at and stores SnoozedUntil as the database keeps times.
// Errors: VALIDATION_ERROR.
func (in *ConversationStatusInput) normalize(at time.Time) error {
	switch in.Status {
	case "":
		return Errorf(CodeValidation, "status is required: open, resolved or snoozed")
	case ConversationOpen, ConversationResolved:
		if in.SnoozedUntil != nil {
			return Errorf(CodeValidation, "snoozedUntil is only for status snoozed: leave it out to make the conversation %s", in.Status)
		}
	case ConversationSnoozed:
		if in.SnoozedUntil == nil {
			return Errorf(CodeValidation, "snoozedUntil is required to snooze: the time (RFC 3339) the conversation opens again")
		}
		until := in.SnoozedUntil.UTC().Truncate(time.Microsecond)
		if !until.After(at) {
			return Errorf(CodeValidation, "snoozedUntil must be in the future")
		}
		in.SnoozedUntil = &until
	default:
		return Errorf(CodeValidation, "status must be open, resolved or snoozed")
	}
	return nil
}

// SetConversationStatus gives the account's conversation with the contact a status (PATCH
// /v1/conversations/{contactId}, the inbox) and returns it. Only a change is written and published
// (conversation.status_changed): the condition is in the write, so two people pressing Resolve at once
// make one change. changed says whether there was one (a new status, or a snooze's new end). Errors:
// VALIDATION_ERROR; NOT_FOUND for another account's contact, and for a contact without messages, which
// has no conversation.
func (s *Store) SetConversationStatus(ctx context.Context, accountID, contactID string, in ConversationStatusInput) (st *ConversationStatus, changed bool, err error) {
	at := now()
	if err := in.normalize(at); err != nil {
		return nil, false, err
	}
	if contactID == "" || len(contactID) > maxIDLength {
		return nil, false, notFound("contact")
	}
	q := s.db.NewUpdate().Model((*Contact)(nil)).
		Set("conversation_status = ?", in.Status).Set("snoozed_until = ?", in.SnoozedUntil).Set("conversation_status_at = ?", at).
		Where("contact.id = ? AND contact.account_id = ?", contactID, accountID).
		Where("EXISTS (SELECT 1 FROM messages AS cm WHERE cm.contact_id = contact.id)")
	if in.Status == ConversationSnoozed {
		q = q.Where("NOT (contact.conversation_status = 'snoozed' AND contact.snoozed_until = ?)", *in.SnoozedUntil)
	} else {
		already, args := ConversationIs(in.Status, "contact", at)
		q = q.Where("NOT "+already, args...)
	}
	res, err := q.Exec(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("set conversation status: %w", err)
	}
	st = &ConversationStatus{ContactID: contactID, Status: in.Status, SnoozedUntil: in.SnoozedUntil}
	if n, _ := res.RowsAffected(); n > 0 {
		s.emit(ctx, accountID, EventConversationStatusChanged, st)
		return st, true, nil
	}
	// Nothing written: the conversation has that status already, or there is none.
	if _, err := s.ContactByID(ctx, accountID, contactID); err != nil {
		return nil, false, err
	}
	has, err := s.db.NewSelect().Model((*Message)(nil)).Where("contact_id = ?", contactID).Exists(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("set conversation status: %w", err)
	}
	if !has {
		return nil, false, Errorf(CodeNotFound, "no conversation with this contact: it has no messages yet")
	}
	return st, false, nil
}
