package report

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun"

	"funnelchat/models"
)

// Conversation is one line of the conversation list: a contact, its latest message, and markers.
type Conversation struct {
	Contact     *models.Contact `json:"contact"`
	LastMessage *models.Message `json:"lastMessage"`
	// Unread: an incoming message the reader has not seen.
	Unread bool `json:"unread"`
	// NeedsHuman: an open alert, or the bot paused for the contact.
	NeedsHuman bool `json:"needsHuman"`
	// Failed: an outgoing message whose delivery failed (retrying or given up).
	Failed bool `json:"failed"`
	// Assignee is who owns the conversation; nil: unassigned.
	Assignee *models.Assignee `json:"assignee"`
	// Status is open, resolved or snoozed (until SnoozedUntil) at the time of the read
	// (models/conversation_status.go).
	Status       string     `json:"status"`
	SnoozedUntil *time.Time `json:"snoozedUntil"`
	// SenderID is the contact's first sender id on a channel ("" for contacts made through the API),
	// which the inbox shows for a contact with no name, phone or email.
	SenderID string `json:"-"`
}

// ConversationFilter narrows the conversation list; the booleans select conversations with the marker
// when true and without it when false, and leave the marker out of the filter when nil.
type ConversationFilter struct {
	Unread     *bool
	NeedsHuman *bool
	Failed     *bool
	// Query is a contact search (contact_search.go): a prefix of a name, the email, the phone or a
	// sender id, in any case.
	Query string
	// Assignee keeps the conversations of one user (an id), or the unassigned ones (AssigneeNone).
	Assignee string
	// Newer, a list row's latest message id, asks for the page before that row (a list's way back):
	// the conversations with newer activity, the page's worth nearest to it. The page's cursor is
	// then ignored, and the cursor Conversations returns is the way further back (Newer again), ""
	// when no conversation is newer still.
	Newer string
	// Status keeps the conversations with that status (models.ConversationOpen, ...) at the time of the
	// read; "" or StatusAll: every status.
	Status string
}

// StatusAll is the Status filter of every conversation, whatever its status.
const StatusAll = "all"

// ParseStatusFilter reads a status filter as the API and the inbox take it: "" is open, the default
// view; open, resolved, snoozed, or all. Errors: VALIDATION_ERROR.
func ParseStatusFilter(v string) (string, error) {
	switch v {
	case "":
		return models.ConversationOpen, nil
	case models.ConversationOpen, models.ConversationResolved, models.ConversationSnoozed, StatusAll:
		return v, nil
	}
	return "", models.Errorf(models.CodeValidation, "status must be open, resolved, snoozed or all")
}

// byStatus reports whether f keeps one status only.
func (f ConversationFilter) byStatus() bool { return f.Status != "" && f.Status != StatusAll }

// AssigneeNone is the Assignee filter of the unassigned conversations.
const AssigneeNone = "none"

// Conversations lists the account's conversations (contacts with at least one message), newest activity
// first, with each marker as the reader sees it. The cursor is the last message id of the previous
// page's last conversation. Errors: VALIDATION_ERROR for a search that is too long. It may be read on
// the read replica (replica.go).
func (r *Reader) Conversations(ctx context.Context, accountID, readerID string, f ConversationFilter, page models.Page) ([]Conversation, string, error) {
	if err := checkContactQuery(f.Query); err != nil {
		return nil, "", err
	}
	// The page is chosen by one query and its rows and markers read by others: one snapshot keeps them
	// in agreement (a reply stored in between would otherwise be marked failed beside an older
	// lastMessage).
	var list []Conversation
	var next string
	// One time for the whole read: a snooze that ends meanwhile ends for the filter and the rows alike.
	at := time.Now().UTC()
	err := r.routed(ctx, ReadConversations, func(ctx context.Context, on source) error {
		return r.snapshot(ctx, on, func(ctx context.Context, db bun.IDB) error {
			var err error
			list, next, err = r.conversations(ctx, db, accountID, readerID, f, page, at)
			return err
		})
	})
	return list, next, err
}

func (r *Reader) conversations(ctx context.Context, db bun.IDB, accountID, readerID string, f ConversationFilter, page models.Page, at time.Time) ([]Conversation, string, error) {
	// Each status is one or more ranges of conversations_status_idx (models/conversation_table.go): each
	// range is read in the list's order up to a page, and the ranges are merged.
	status := f.Status
	if !f.byStatus() {
		status = ""
	}
	ranges := models.ConversationRanges(status, "cv", at)
	order := "DESC"
	if f.Newer != "" {
		order = "ASC"
	}
	limit := int64(page.Limit) + 1
	one := func(rg models.Cond) *bun.SelectQuery {
		q := db.NewSelect().TableExpr("conversations AS cv").ColumnExpr("cv.last_message_id").Where("cv.account_id = ?", accountID).
			Where(rg.Expr, rg.Args...)
		switch {
		case f.Newer != "":
			q = q.Where("cv.last_message_id > ?", f.Newer)
		case page.Cursor != "":
			q = q.Where("cv.last_message_id < ?", page.Cursor)
		}
		return filterConversations(q, db, accountID, readerID, f).OrderExpr("cv.last_message_id " + order).Limit(limit)
	}
	q := one(ranges[0])
	if len(ranges) > 1 {
		union := make([]string, len(ranges))
		parts := make([]any, len(ranges))
		for i, rg := range ranges {
			union[i] = "SELECT * FROM (?) AS r" + strconv.Itoa(i)
			parts[i] = one(rg)
		}
		q = db.NewSelect().TableExpr("("+strings.Join(union, " UNION ALL ")+") AS x", parts...).
			ColumnExpr("x.last_message_id").OrderExpr("x.last_message_id " + order).Limit(limit)
	}
	var ids []string
	if err := q.Scan(ctx, &ids); err != nil {
		return nil, "", fmt.Errorf("conversations: %w", err)
	}
	ids, next := models.CutPage(ids, page, func(i int) string { return ids[i] })
	if len(ids) == 0 {
		return []Conversation{}, "", nil
	}
	out, err := r.conversationRows(ctx, db, accountID, readerID, ids, at)
	return out, next, err
}

// filterConversations adds f's markers, assignee and search to a query of the conversations table (alias
// cv).
func filterConversations(q *bun.SelectQuery, db bun.IDB, accountID, readerID string, f ConversationFilter) *bun.SelectQuery {
	mk := conversationMarkers(accountID, readerID)
	for _, m := range []struct {
		want *bool
		expr func(string) (string, []any)
	}{{f.Unread, mk.unread}, {f.NeedsHuman, mk.needsHuman}, {f.Failed, mk.failed}} {
		if m.want == nil {
			continue
		}
		expr, args := m.expr("cv")
		if !*m.want {
			expr = "NOT " + expr
		}
		q = q.Where(expr, args...)
	}
	switch f.Assignee {
	case "":
	case AssigneeNone:
		q = q.Where("cv.assignee_id IS NULL")
	default:
		q = q.Where("cv.assignee_id = ?", f.Assignee)
	}
	// The search is the contact search's (contact_search.go), one rule for every list.
	if match, args := contactMatches(db, accountID, f.Query, nil); match != "" {
		q = q.Where("cv.contact_id IN ("+match+")", args...)
	}
	return q
}

// conversationRows reads the conversations whose latest messages are ids, in their order (newest
// first), with their contacts, markers, assignees and statuses at the time at.
func (r *Reader) conversationRows(ctx context.Context, db bun.IDB, accountID, readerID string, ids []string, at time.Time) ([]Conversation, error) {
	mk := conversationMarkers(accountID, readerID)
	// The page's rows with their contacts and markers, in one more query.
	type row struct {
		models.Message `bun:",extend"`
		Unread         bool   `bun:"unread"`
		NeedsHuman     bool   `bun:"needs_human"`
		Failed         bool   `bun:"failed"`
		SenderID       string `bun:"sender_id"`
	}
	var rows []row
	unread, unreadArgs := mk.unread("cv")
	needsHuman, needsHumanArgs := mk.needsHuman("cv")
	failed, failedArgs := mk.failed("cv")
	err := db.NewSelect().Model(&rows).ModelTableExpr("messages AS m JOIN conversations AS cv ON cv.contact_id = m.contact_id").
		ColumnExpr(r.store.ColumnsOf((*models.Message)(nil), "m")).
		ColumnExpr(unread+" AS unread", unreadArgs...).
		ColumnExpr(needsHuman+" AS needs_human", needsHumanArgs...).
		ColumnExpr(failed+" AS failed", failedArgs...).
		ColumnExpr(senderIDSQL("m.account_id", "m.contact_id")+" AS sender_id").
		Where("m.id IN (?)", bun.In(ids)).OrderExpr("m.id DESC").Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("conversations: %w", err)
	}
	contactIDs := make([]string, len(rows))
	for i := range rows {
		contactIDs[i] = rows[i].ContactID
	}
	var contacts []contactRow
	status, statusArgs := models.ConversationStatusColumns("c", at)
	if err := db.NewSelect().Model(&contacts).ModelTableExpr("contacts AS c").ColumnExpr(r.store.ColumnsOf((*models.Contact)(nil), "c")).
		ColumnExpr(status, statusArgs...).Where("c.id IN (?)", bun.In(contactIDs)).Scan(ctx); err != nil {
		return nil, fmt.Errorf("conversations: %w", err)
	}
	byID := make(map[string]*contactRow, len(contacts))
	var assigneeIDs []string
	for i := range contacts {
		byID[contacts[i].ID] = &contacts[i]
		if a := contacts[i].AssigneeID; a != nil {
			assigneeIDs = append(assigneeIDs, *a)
		}
	}
	assignees := map[string]*models.Assignee{}
	if len(assigneeIDs) > 0 {
		var users []models.User
		if err := db.NewSelect().Model(&users).Column("id", "email").Where("id IN (?)", bun.In(assigneeIDs)).Scan(ctx); err != nil {
			return nil, fmt.Errorf("conversations: %w", err)
		}
		for _, u := range users {
			assignees[u.ID] = &models.Assignee{UserID: u.ID, Email: u.Email}
		}
	}
	out := make([]Conversation, len(rows))
	for i := range rows {
		m := rows[i].Message
		out[i] = Conversation{LastMessage: &m, Unread: rows[i].Unread, NeedsHuman: rows[i].NeedsHuman, Failed: rows[i].Failed, SenderID: rows[i].SenderID}
		if c := byID[m.ContactID]; c != nil {
			out[i].Contact, out[i].Status, out[i].SnoozedUntil = &c.Contact, c.Status, c.SnoozedUntil
			if c.AssigneeID != nil {
				out[i].Assignee = assignees[*c.AssigneeID]
			}
		}
	}
	return out, nil
}

// contactRow is a contact with the status of its conversation (models.ConversationStatusColumns).
type contactRow struct {
	models.Contact `bun:",extend"`
	Status         string     `bun:"conversation_status_now"`
	SnoozedUntil   *time.Time `bun:"snoozed_until_now"`
}

// Conversation returns the account's conversation with the contact as the list shows it, read by
// readerID. Errors: NOT_FOUND for another account's contact, and for a contact without messages,
// which has no conversation.
func (r *Reader) Conversation(ctx context.Context, accountID, readerID, contactID string) (*Conversation, error) {
	var out []Conversation
	err := r.store.ReadSnapshot(ctx, func(ctx context.Context, db bun.IDB) error {
		var last sql.NullString
		err := db.NewSelect().TableExpr("conversations AS cv").ColumnExpr("cv.last_message_id").
			Where("cv.contact_id = ? AND cv.account_id = ?", contactID, accountID).Scan(ctx, &last)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("conversation: %w", err)
		}
		if !last.Valid {
			return models.Errorf(models.CodeNotFound, "no conversation with this contact: it has no messages yet")
		}
		out, err = r.conversationRows(ctx, db, accountID, readerID, []string{last.String}, time.Now().UTC())
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(out) != 1 || out[0].Contact == nil {
		return nil, models.Errorf(models.CodeNotFound, "contact not found")
	}
	return &out[0], nil
}

// conversationMarkerSet holds the SQL conditions of the list's markers for a conversations row alias, as
// the reader sees them.
type conversationMarkerSet struct {
	unread, needsHuman, failed func(cv string) (string, []any)
}

// unreadAgainst is the one rule of unread: the conversations row cv has an incoming message newer than
// lastRead, the id the reader read up to (an SQL expression, NULL when the reader has read nothing: then
// any incoming message is unread).
func unreadAgainst(cv, lastRead string) string {
	return "(" + cv + ".last_incoming_id IS NOT NULL AND " + cv + ".last_incoming_id > COALESCE(" + lastRead + ", ''))"
}

func conversationMarkers(accountID, readerID string) conversationMarkerSet {
	return conversationMarkerSet{
		unread: func(cv string) (string, []any) {
			return unreadAgainst(cv, `(SELECT r.last_read_id FROM conversation_reads AS r
					WHERE r.account_id = ? AND r.reader_id = ? AND r.contact_id = `+cv+`.contact_id)`), []any{accountID, readerID}
		},
		needsHuman: func(cv string) (string, []any) {
			return `(EXISTS (SELECT 1 FROM alerts AS a WHERE a.account_id = ? AND a.contact_id = ` + cv + `.contact_id AND a.resolved_at IS NULL)
				OR EXISTS (SELECT 1 FROM contacts AS bc WHERE bc.id = ` + cv + `.contact_id AND bc.bot_paused))`, []any{accountID}
		},
		failed: func(cv string) (string, []any) { return "(" + cv + ".failed > 0)", nil },
	}
}

// ConversationView is what the inbox shows of one conversation.
type ConversationView struct {
	Contact  *models.Contact
	SenderID string
	// Messages are the latest messages, oldest first; reactions linked to one of them are in
	// Reactions instead, by the id of the message they are on.
	Messages  []models.Message
	Reactions map[string][]models.Message
	// Older is the cursor of the messages before these ("" when there are none).
	Older string
	// Alerts are the contact's open alerts, newest first.
	Alerts []models.Alert
	// Reply is what a team member's reply would do now: where it goes and whether it may (the
	// outgoing door's answer, which HumanReply follows).
	Reply models.ReplyPlan
	// Status is the conversation's status now.
	Status models.ConversationStatus
}

// ConversationFor returns the account's conversation with the contact: up to n messages before the
// cursor (the newest when it is empty), oldest first, with the open alerts. Errors: NOT_FOUND (another
// account's contact too).
func (r *Reader) ConversationFor(ctx context.Context, accountID, contactID, before string, n int) (*ConversationView, error) {
	contact, err := r.store.ContactByID(ctx, accountID, contactID)
	if err != nil {
		return nil, err
	}
	v := &ConversationView{Contact: contact, Reactions: map[string][]models.Message{}}
	var msgs []models.Message
	q := r.db.NewSelect().Model(&msgs).Where("contact_id = ?", contact.ID).Order("id DESC").Limit(int64(n) + 1)
	if before != "" {
		q = q.Where("id < ?", before)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, fmt.Errorf("conversation: %w", err)
	}
	if len(msgs) > n {
		msgs = msgs[:n]
		v.Older = msgs[n-1].ID
	}
	shown := make(map[string]bool, len(msgs))
	for i := range msgs {
		shown[msgs[i].ID] = true
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.MessageType == models.MessageTypeReaction && m.ReactsToID != nil && shown[*m.ReactsToID] {
			v.Reactions[*m.ReactsToID] = append(v.Reactions[*m.ReactsToID], m)
			continue
		}
		v.Messages = append(v.Messages, m)
	}
	if v.Reply, err = r.store.PlanTeamReply(ctx, contact, ""); err != nil {
		return nil, fmt.Errorf("conversation: %w", err)
	}
	if v.Alerts, _, err = r.store.Alerts(ctx, accountID, models.AlertFilter{ContactID: contact.ID}, models.Page{Limit: models.MaxPageLimit}); err != nil {
		return nil, err
	}
	senders, err := r.SenderIDs(ctx, accountID, []string{contact.ID})
	if err != nil {
		return nil, fmt.Errorf("conversation: %w", err)
	}
	v.SenderID = senders[contact.ID]
	var st contactRow
	status, statusArgs := models.ConversationStatusColumns("c", time.Now().UTC())
	if err := r.db.NewSelect().Model(&st).ModelTableExpr("contacts AS c").ColumnExpr(status, statusArgs...).
		Where("c.id = ?", contact.ID).Scan(ctx); err != nil {
		return nil, fmt.Errorf("conversation: %w", err)
	}
	v.Status = models.ConversationStatus{ContactID: contact.ID, Status: st.Status, SnoozedUntil: st.SnoozedUntil}
	return v, nil
}
