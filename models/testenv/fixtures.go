package testenv

// Fixtures shared by the tests of package models and of the packages split out of it (models/report):
// Go test helpers cannot be imported across packages, so the one copy lives here. Each takes the store
// it works on, and fails the test on any error.

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/uptrace/bun"

	"funnelchat/models"
	"funnelchat/models/report"
)

// seq makes the emails, sender ids and message ids below unique within the test binary; the clock in
// them keeps them apart from other runs on the same database.
var seq atomic.Int64

// IDPrefix is prefix ("msg_", "cns_") and the part of an id that its time t makes (ids are lower-case
// ULIDs): fixtures that insert messages or consent events directly start their ids with it, so that on
// PostgreSQL the rows fall in the partition of t's month (models/partitions.go). An id that is not
// shaped so, such as "msg_x", sorts after every partition and is refused.
func IDPrefix(prefix string, t time.Time) string {
	return prefix + strings.ToLower(ulid.MustNew(ulid.Timestamp(t), nil).String()[:10])
}

// UniqueEmail returns an email no other test uses (users' emails are unique across accounts).
func UniqueEmail(name string) string {
	return fmt.Sprintf("%s-%d-%d@example.com", name, time.Now().UnixNano(), seq.Add(1))
}

// UniqueFromID returns a sender id (not a phone number) no other test uses.
func UniqueFromID(name string) string {
	return fmt.Sprintf("%s-%d-%d", name, time.Now().UnixNano(), seq.Add(1))
}

// NewAccount creates an account named name (possibly empty) with a unique email; its owner has no
// password.
func NewAccount(t testing.TB, s *models.Store, name string) *models.CreatedAccount {
	t.Helper()
	created, err := s.CreateAccount(context.Background(), models.NewAccount{Email: UniqueEmail("owner"), Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return created
}

// AddUser adds a user with the role and a unique email to the account.
func AddUser(t testing.TB, s *models.Store, accountID, role string) *models.AddedUser {
	t.Helper()
	added, err := s.AddUser(context.Background(), accountID, UniqueEmail(role), role)
	if err != nil {
		t.Fatalf("AddUser(%s): %v", role, err)
	}
	return added
}

// AccountOwner returns the id of the account's first team member, its owner.
func AccountOwner(t testing.TB, s *models.Store, accountID string) string {
	t.Helper()
	members, err := s.TeamMembers(context.Background(), accountID)
	if err != nil || len(members) == 0 {
		t.Fatalf("team: %v", err)
	}
	return members[0].ID
}

// WantCode fails the test (without stopping it) unless err carries the domain error code.
func WantCode(t testing.TB, err error, code, what string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error, want %s", what, code)
		return
	}
	if got := models.ErrorCode(err); got != code {
		t.Errorf("%s: %v (code %s), want %s", what, err, got, code)
	}
}

// Person is who a custom-channel message comes from.
type Person struct {
	First, Last, Email string
}

// Receive stores an incoming custom-channel message from fromID on the default channel, as POST
// /v1/incoming_custom_channel_message does.
func Receive(t testing.TB, s *models.Store, accountID, fromID, body string, p Person) *models.Message {
	t.Helper()
	return ingest(t, s, accountID, models.IncomingInput{
		FromID: fromID, ToID: "business", Body: body,
		FirstName: p.First, LastName: p.Last, Email: p.Email,
	})
}

// ReceiveOn stores an incoming custom-channel text message from fromID on channel, as POST
// /v1/incoming_custom_channel_message does.
func ReceiveOn(t testing.TB, s *models.Store, accountID, fromID, channel, body string) *models.Message {
	t.Helper()
	return ingest(t, s, accountID, models.IncomingInput{FromID: fromID, ToID: "business", Body: body, Channel: channel})
}

// ingest validates and stores in under a fresh external id, failing the test when the store takes it
// for a duplicate.
func ingest(t testing.TB, s *models.Store, accountID string, in models.IncomingInput) *models.Message {
	t.Helper()
	in.ExternalID = fmt.Sprintf("sid-%d-%d", time.Now().UnixNano(), seq.Add(1))
	if err := in.Validate(1 << 20); err != nil {
		t.Fatal(err)
	}
	m, dup, err := s.IngestIncoming(context.Background(), accountID, in)
	if err != nil {
		t.Fatal(err)
	}
	if dup {
		t.Fatalf("message %s stored as a duplicate", in.ExternalID)
	}
	return m
}

// SendCustom stores an outgoing custom-channel message to fromID on channel "chat", as POST
// /v1/send_custom_channel_message does.
func SendCustom(t testing.TB, s *models.Store, accountID, fromID, body string) (*models.Message, *models.Contact) {
	t.Helper()
	in := models.CustomSendInput{FromID: fromID, Channel: "chat", Body: body}
	if err := in.Validate(); err != nil {
		t.Fatal(err)
	}
	m, c, err := s.SendCustom(context.Background(), accountID, in)
	if err != nil {
		t.Fatal(err)
	}
	return m, c
}

// MarkRead marks the contact's conversation read by the user.
func MarkRead(t testing.TB, s *models.Store, accountID, readerID, contactID string) {
	t.Helper()
	if err := s.MarkRead(context.Background(), accountID, readerID, contactID); err != nil {
		t.Fatalf("MarkRead(%s, %s): %v", readerID, contactID, err)
	}
}

// Contact reads the account's contact.
func Contact(t testing.TB, s *models.Store, accountID, id string) *models.Contact {
	t.Helper()
	c, err := s.ContactByID(context.Background(), accountID, id)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Queue adds the contacts to the list and returns the campaign send it queued for each, by contact
// id; it fails the test unless each contact got one.
func Queue(t testing.TB, s *models.Store, accountID, listID string, contactIDs ...string) map[string]string {
	t.Helper()
	res, err := s.AddToList(context.Background(), accountID, listID, contactIDs)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Sends) != len(contactIDs) {
		t.Fatalf("AddToList queued %d sends, want %d", len(res.Sends), len(contactIDs))
	}
	out := map[string]string{}
	for _, d := range res.Sends {
		send, err := s.CampaignSend(context.Background(), d.SendID)
		if err != nil {
			t.Fatal(err)
		}
		out[send.ContactID] = send.ID
	}
	return out
}

// Exec runs a fixture statement (to set times the store takes from the clock, say) and fails the test
// on error.
func Exec(t testing.TB, s *models.Store, query string, args ...any) {
	t.Helper()
	if _, err := s.DB().NewRaw(query, args...).Exec(context.Background()); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// Conversations returns every conversation of the account (one page of the maximum size) as the user
// readerID sees it through r.
func Conversations(t testing.TB, r *report.Reader, accountID, readerID string, f report.ConversationFilter) []report.Conversation {
	t.Helper()
	CheckConversationTable(t, r.DB(), accountID)
	convs, next, err := r.Conversations(context.Background(), accountID, readerID, f, models.Page{Limit: models.MaxPageLimit})
	if err != nil {
		t.Fatalf("Conversations(%+v): %v", f, err)
	}
	if next != "" {
		t.Fatalf("Conversations(%+v): more than one page", f)
	}
	return convs
}

// ContactIDs returns the conversations' contact ids, in order.
func ContactIDs(convs []report.Conversation) []string {
	ids := make([]string, len(convs))
	for i, c := range convs {
		ids[i] = c.Contact.ID
	}
	return ids
}

// FindConversation returns the conversation of the contact, failing the test when it is not listed.
func FindConversation(t testing.TB, convs []report.Conversation, contactID string) report.Conversation {
	t.Helper()
	for _, c := range convs {
		if c.Contact.ID == contactID {
			return c
		}
	}
	t.Fatalf("contact %s is not in the list %v", contactID, ContactIDs(convs))
	return report.Conversation{}
}

// Ptr returns a pointer to a copy of v.
func Ptr[T any](v T) *T { return &v }

// Str is *p, or "<nil>" when p is nil.
func Str(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

// conversationRow is a row of the conversations table (models/conversation_table.go), or what it
// should be.
type conversationRow struct {
	ContactID      string     `bun:"contact_id"`
	LastMessageID  string     `bun:"last_message_id"`
	LastIncomingID *string    `bun:"last_incoming_id"`
	Failed         int        `bun:"failed"`
	Status         string     `bun:"conversation_status"`
	SnoozedUntil   *time.Time `bun:"snoozed_until"`
	AssigneeID     *string    `bun:"assignee_id"`
}

// CheckConversationTable fails the test unless the account's rows of the conversations table, which
// database triggers keep, are what the messages and contacts say: one per contact with messages, with
// its latest message and incoming message, its failed outgoing messages counted, and the contact's
// status and assignee.
func CheckConversationTable(t testing.TB, db bun.IDB, accountID string) {
	t.Helper()
	ctx := context.Background()
	var got, want []conversationRow
	if err := db.NewSelect().TableExpr("conversations").
		Column("contact_id", "last_message_id", "last_incoming_id", "failed", "conversation_status", "snoozed_until", "assignee_id").
		Where("account_id = ?", accountID).Order("contact_id").Scan(ctx, &got); err != nil {
		t.Fatalf("conversations table: %v", err)
	}
	if err := db.NewRaw(`
SELECT c.id AS contact_id, m.last_id AS last_message_id, m.last_in AS last_incoming_id, m.failed,
       c.conversation_status, c.snoozed_until, c.assignee_id
FROM (SELECT contact_id, MAX(id) AS last_id, MAX(CASE WHEN direction = 'incoming' THEN id END) AS last_in,
             SUM(CASE WHEN direction = 'outgoing' AND status = 'failed' THEN 1 ELSE 0 END) AS failed
      FROM messages WHERE account_id = ? GROUP BY contact_id) AS m
JOIN contacts AS c ON c.id = m.contact_id
ORDER BY c.id`, accountID).Scan(ctx, &want); err != nil {
		t.Fatalf("conversations from the messages: %v", err)
	}
	if len(got) != len(want) {
		t.Fatalf("conversations table: %d rows, the messages make %d conversations", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.ContactID != w.ContactID || g.LastMessageID != w.LastMessageID || Str(g.LastIncomingID) != Str(w.LastIncomingID) ||
			g.Failed != w.Failed || g.Status != w.Status || Str(g.AssigneeID) != Str(w.AssigneeID) ||
			(g.SnoozedUntil == nil) != (w.SnoozedUntil == nil) || (g.SnoozedUntil != nil && !g.SnoozedUntil.Equal(*w.SnoozedUntil)) {
			t.Errorf("conversations table row %+v; the messages and contact say %+v", g, w)
		}
	}
}

// CheckCampaignSends fails the test unless the account's campaign sends' written_at and first_reply_at,
// which database triggers keep (models/campaign_first_reply.go), are what the messages and consent events
// say, worked out here in Go from the rows: written_at is the opening message's time (NULL without one),
// first_reply_at the time of the contact's first incoming message after it that is not a keyword, or
// is a keyword that recorded an opt-in.
func CheckCampaignSends(t testing.TB, db bun.IDB, accountID string) {
	t.Helper()
	ctx := context.Background()
	var sends []struct {
		ID           string     `bun:"id"`
		ContactID    string     `bun:"contact_id"`
		MessageID    *string    `bun:"message_id"`
		WrittenAt    *time.Time `bun:"written_at"`
		FirstReplyAt *time.Time `bun:"first_reply_at"`
	}
	if err := db.NewRaw("SELECT id, contact_id, message_id, written_at, first_reply_at FROM campaign_sends WHERE account_id = ? ORDER BY id",
		accountID).Scan(ctx, &sends); err != nil {
		t.Fatalf("campaign sends: %v", err)
	}
	var messages []struct {
		ID        string    `bun:"id"`
		ContactID string    `bun:"contact_id"`
		Direction string    `bun:"direction"`
		BotStatus *string   `bun:"bot_status"`
		CreatedAt time.Time `bun:"created_at"`
	}
	if err := db.NewRaw("SELECT id, contact_id, direction, bot_status, created_at FROM messages WHERE account_id = ?",
		accountID).Scan(ctx, &messages); err != nil {
		t.Fatalf("messages: %v", err)
	}
	var optIns []string
	if err := db.NewRaw("SELECT message_id FROM consent_events WHERE account_id = ? AND status = 'opted_in' AND message_id IS NOT NULL",
		accountID).Scan(ctx, &optIns); err != nil {
		t.Fatalf("consent events: %v", err)
	}
	optedIn := map[string]bool{}
	for _, id := range optIns {
		optedIn[id] = true
	}
	at := map[string]time.Time{}
	byContact := map[string][]int{}
	for i, m := range messages {
		at[m.ID] = m.CreatedAt
		byContact[m.ContactID] = append(byContact[m.ContactID], i)
	}
	same := func(a, b *time.Time) bool { return (a == nil) == (b == nil) && (a == nil || a.Equal(*b)) }
	show := func(p *time.Time) string {
		if p == nil {
			return "NULL"
		}
		return p.UTC().Format(time.RFC3339Nano)
	}
	for _, s := range sends {
		var written, first *time.Time
		if s.MessageID != nil {
			if w, ok := at[*s.MessageID]; ok {
				written = &w
			}
		}
		if written != nil {
			for _, i := range byContact[s.ContactID] {
				m := messages[i]
				if m.Direction != models.DirectionIncoming || !m.CreatedAt.After(*written) || (Str(m.BotStatus) == models.BotKeyword && !optedIn[m.ID]) {
					continue
				}
				if first == nil || m.CreatedAt.Before(*first) {
					c := m.CreatedAt
					first = &c
				}
			}
		}
		if !same(s.WrittenAt, written) || !same(s.FirstReplyAt, first) {
			t.Errorf("campaign send %s: written_at %s, first_reply_at %s; the messages say %s and %s",
				s.ID, show(s.WrittenAt), show(s.FirstReplyAt), show(written), show(first))
		}
	}
}
