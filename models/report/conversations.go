package report

import (
	"context"
	"fmt"
	"strings"

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
}

// AssigneeNone is the Assignee filter of the unassigned conversations.
const AssigneeNone = "none"

// Conversations lists the account's conversations (contacts with at least one message), newest activity
// first, with each marker as the reader sees it. The cursor is the last message id of the previous
// page's last conversation. Errors: VALIDATION_ERROR for a search that is too long.
func (r *Reader) Conversations(ctx context.Context, accountID, readerID string, f ConversationFilter, page models.Page) ([]Conversation, string, error) {
	if err := checkContactQuery(f.Query); err != nil {
		return nil, "", err
	}
	// The page is chosen by one query and its rows and markers read by others: one snapshot keeps them
	// in agreement (a reply stored in between would otherwise be marked failed beside an older
	// lastMessage).
	var list []Conversation
	var next string
	err := r.store.ReadSnapshot(ctx, func(ctx context.Context, db bun.IDB) error {
		var err error
		list, next, err = r.conversations(ctx, db, accountID, readerID, f, page)
		return err
	})
	return list, next, err
}

func (r *Reader) conversations(ctx context.Context, db bun.IDB, accountID, readerID string, f ConversationFilter, page models.Page) ([]Conversation, string, error) {
	mk := conversationMarkers(accountID, readerID)
	var q *bun.SelectQuery
	if f.NeedsHuman == nil || !*f.NeedsHuman {
		if f.Failed == nil || !*f.Failed {
			// Most conversations are unassigned: walking the messages finds them fastest.
			if strings.TrimSpace(f.Query) == "" && (f.Assignee == "" || f.Assignee == AssigneeNone) {
				q = conversationsByMessages(db, accountID)
			}
		}
	}
	// col is the contact id and last the latest message id of a row, as each query names them
	// (PostgreSQL does not let WHERE use an output column's alias).
	col, last := "m.contact_id", "m.id"
	if q == nil {
		q = conversationsByContacts(db, accountID, f)
		col, last = "x.cid", "x.last_id"
	}
	switch {
	case f.Newer != "":
		q = q.Where(last+" > ?", f.Newer).OrderExpr(last + " ASC").Limit(int64(page.Limit) + 1)
	default:
		q = q.OrderExpr(last + " DESC").Limit(int64(page.Limit) + 1)
		if page.Cursor != "" {
			q = q.Where(last+" < ?", page.Cursor)
		}
	}
	for _, m := range []struct {
		want *bool
		expr func(string) (string, []any)
	}{{f.Unread, mk.unread}, {f.NeedsHuman, mk.needsHuman}, {f.Failed, mk.failed}} {
		if m.want == nil {
			continue
		}
		expr, args := m.expr(col)
		if !*m.want {
			expr = "NOT " + expr
		}
		q = q.Where(expr, args...)
	}
	if f.Assignee == AssigneeNone {
		q = q.Where("(SELECT ac.assignee_id FROM contacts AS ac WHERE ac.id = " + col + ") IS NULL")
	}
	var ids []string
	if err := q.Scan(ctx, &ids); err != nil {
		return nil, "", fmt.Errorf("conversations: %w", err)
	}
	ids, next := models.CutPage(ids, page, func(i int) string { return ids[i] })
	if len(ids) == 0 {
		return []Conversation{}, "", nil
	}

	// The page's rows with their contacts and markers, in one more query.
	type row struct {
		models.Message `bun:",extend"`
		Unread         bool   `bun:"unread"`
		NeedsHuman     bool   `bun:"needs_human"`
		Failed         bool   `bun:"failed"`
		SenderID       string `bun:"sender_id"`
	}
	var rows []row
	unread, unreadArgs := mk.unread("m.contact_id")
	needsHuman, needsHumanArgs := mk.needsHuman("m.contact_id")
	failed, failedArgs := mk.failed("m.contact_id")
	err := db.NewSelect().Model(&rows).ModelTableExpr("messages AS m").ColumnExpr(r.store.ColumnsOf((*models.Message)(nil), "m")).
		ColumnExpr(unread+" AS unread", unreadArgs...).
		ColumnExpr(needsHuman+" AS needs_human", needsHumanArgs...).
		ColumnExpr(failed+" AS failed", failedArgs...).
		ColumnExpr(senderIDSQL("m.account_id", "m.contact_id")+" AS sender_id").
		Where("m.id IN (?)", bun.In(ids)).OrderExpr("m.id DESC").Scan(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("conversations: %w", err)
	}
	contactIDs := make([]string, len(rows))
	for i := range rows {
		contactIDs[i] = rows[i].ContactID
	}
	var contacts []models.Contact
	if err := db.NewSelect().Model(&contacts).Where("id IN (?)", bun.In(contactIDs)).Scan(ctx); err != nil {
		return nil, "", fmt.Errorf("conversations: %w", err)
	}
	byID := make(map[string]*models.Contact, len(contacts))
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
			return nil, "", fmt.Errorf("conversations: %w", err)
		}
		for _, u := range users {
			assignees[u.ID] = &models.Assignee{UserID: u.ID, Email: u.Email}
		}
	}
	out := make([]Conversation, len(rows))
	for i := range rows {
		m := rows[i].Message
		out[i] = Conversation{Contact: byID[m.ContactID], LastMessage: &m, Unread: rows[i].Unread, NeedsHuman: rows[i].NeedsHuman, Failed: rows[i].Failed, SenderID: rows[i].SenderID}
		if c := byID[m.ContactID]; c != nil && c.AssigneeID != nil {
			out[i].Assignee = assignees[*c.AssigneeID]
		}
	}
	return out, next, nil
}

// conversationsByMessages selects the latest message id (last_id) of each conversation by walking the
// account's messages newest first (messages_account_idx) and keeping those that are their contact's
// latest (messages_contact_idx answers that per row): a page costs about as many rows as it shows, as
// long as the filters keep most conversations (no filter, or unread).
func conversationsByMessages(db bun.IDB, accountID string) *bun.SelectQuery {
	return db.NewSelect().TableExpr("messages AS m").ColumnExpr("m.id AS last_id").
		Where("m.account_id = ?", accountID).
		Where("m.id = (SELECT MAX(l.id) FROM messages AS l WHERE l.contact_id = m.contact_id)")
}

// conversationsByContacts selects the latest message id (last_id) of each conversation among the
// contacts a selective filter names (needs a human, failed, or a search), found through their own
// small indexes; walking every message would read the whole history when few conversations match.
func conversationsByContacts(db bun.IDB, accountID string, f ConversationFilter) *bun.SelectQuery {
	c := db.NewSelect().TableExpr("contacts AS c").
		ColumnExpr("c.id AS cid").
		ColumnExpr("(SELECT MAX(l.id) FROM messages AS l WHERE l.contact_id = c.id) AS last_id").
		Where("c.account_id = ?", accountID)
	if f.NeedsHuman != nil && *f.NeedsHuman {
		c = c.Where(`c.id IN (SELECT a.contact_id FROM alerts AS a WHERE a.account_id = ? AND a.resolved_at IS NULL
			UNION SELECT p.id FROM contacts AS p WHERE p.account_id = ? AND p.bot_paused)`, accountID, accountID)
	}
	if f.Failed != nil && *f.Failed {
		c = c.Where(`c.id IN (SELECT fm.contact_id FROM messages AS fm
			WHERE fm.account_id = ? AND fm.direction = 'outgoing' AND fm.status = 'failed')`, accountID)
	}
	if f.Assignee != "" && f.Assignee != AssigneeNone {
		c = c.Where("c.assignee_id = ?", f.Assignee)
	}
	// The search is the contact search's (contact_search.go), one rule for every list.
	if match, args := contactMatches(db, accountID, f.Query, nil); match != "" {
		c = c.Where("c.id IN ("+match+")", args...)
	}
	return db.NewSelect().TableExpr("(?) AS x", c).ColumnExpr("x.last_id").Where("x.last_id IS NOT NULL")
}

// conversationMarkerSet holds the SQL conditions of the list's markers for a contact id column, as
// the reader sees them.
type conversationMarkerSet struct {
	unread, needsHuman, failed func(col string) (string, []any)
}

func conversationMarkers(accountID, readerID string) conversationMarkerSet {
	return conversationMarkerSet{
		unread: func(col string) (string, []any) {
			return `EXISTS (SELECT 1 FROM messages AS u WHERE u.contact_id = ` + col + ` AND u.direction = 'incoming'
				AND u.id > COALESCE((SELECT r.last_read_id FROM conversation_reads AS r
					WHERE r.account_id = ? AND r.reader_id = ? AND r.contact_id = ` + col + `), ''))`, []any{accountID, readerID}
		},
		needsHuman: func(col string) (string, []any) {
			return `(EXISTS (SELECT 1 FROM alerts AS a WHERE a.account_id = ? AND a.contact_id = ` + col + ` AND a.resolved_at IS NULL)
				OR EXISTS (SELECT 1 FROM contacts AS bc WHERE bc.id = ` + col + ` AND bc.bot_paused))`, []any{accountID}
		},
		failed: func(col string) (string, []any) {
			return `EXISTS (SELECT 1 FROM messages AS f WHERE f.account_id = ? AND f.contact_id = ` + col + `
				AND f.direction = 'outgoing' AND f.status = 'failed')`, []any{accountID}
		},
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
	return v, nil
}
