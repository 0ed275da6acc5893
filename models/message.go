package models

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"
)

// Message directions, statuses and authors.
const (
	DirectionIncoming = "incoming"
	DirectionOutgoing = "outgoing"

	StatusReceived = "received"
	StatusPending  = "pending"
	StatusSent     = "sent"
	StatusFailed   = "failed"

	AuthorBot      = "bot"
	AuthorHuman    = "human"
	AuthorAPI      = "api"
	AuthorCampaign = "campaign"
	// AuthorSystem is the service's own answer to a consent keyword (confirmations, help text).
	AuthorSystem = "system"

	// Bot states of an incoming message.
	BotPending = "pending" // a reply is owed
	BotDone    = "done"    // answered
	BotSkipped = "skipped" // the bot was paused for the contact
	BotHandoff = "handoff" // handed to a human
	BotFailed  = "failed"  // the bot could not answer; an alert was raised
	BotNone    = "none"    // no reply is due (a reaction)
	BotKeyword = "keyword" // a consent keyword: the service answered it, not the bot (HandleKeyword)

	MessageTypeText     = "text"
	MessageTypeReaction = "reaction"
)

// Message is one message of a conversation, in either direction.
type Message struct {
	bun.BaseModel `bun:"table:messages"`

	ID               string  `bun:"id,pk" json:"id"`
	AccountID        string  `bun:"account_id" json:"-"`
	ContactID        string  `bun:"contact_id" json:"contactId"`
	CampaignID       *string `bun:"campaign_id" json:"campaignId"`
	Direction        string  `bun:"direction" json:"direction"`
	Channel          string  `bun:"channel" json:"channel"`
	Transport        string  `bun:"transport" json:"-"`
	MessageType      string  `bun:"message_type" json:"messageType"`
	Body             string  `bun:"body" json:"body"`
	MediaURL         *string `bun:"media_url" json:"mediaUrl"`
	MediaContentType *string `bun:"media_content_type" json:"mediaContentType"`
	MediaCheck       *string `bun:"media_check" json:"mediaCheck,omitempty"`
	ExternalID       *string `bun:"external_id" json:"messageSid,omitempty"`
	// ProviderMessageID is the id a provider (SMS, WhatsApp, Messenger, Instagram) gave an outgoing
	// message it accepted.
	ProviderMessageID *string `bun:"provider_message_id" json:"providerMessageId,omitempty"`
	FromID            string  `bun:"from_id" json:"-"`
	ToID              string  `bun:"to_id" json:"-"`
	Author            string  `bun:"author" json:"authorType,omitempty"`
	// AuthorUserID and AuthorEmail name the team member who wrote a team reply (By).
	AuthorUserID  *string    `bun:"author_user_id" json:"-"`
	AuthorEmail   *string    `bun:"author_email" json:"-"`
	Status        string     `bun:"status" json:"status"`
	Error         *string    `bun:"error" json:"error"`
	Attempts      int        `bun:"attempts" json:"attempts"`
	DeliveryRound int        `bun:"delivery_round" json:"-"`
	NextAttemptAt *time.Time `bun:"next_attempt_at" json:"nextAttemptAt"`
	// GivenUpAt is when the delivery last gave up (failed with no next attempt; givenUp); it is
	// kept when a redelivery moves the message on, so it counts only while the message is failed
	// with no next attempt (the inbox's count of deliveries that gave up lately).
	GivenUpAt *time.Time `bun:"given_up_at" json:"-"`
	ReplyToID *string    `bun:"reply_to_id" json:"replyToId,omitempty"`
	// ReactsToID is the message a reaction is on, when the provider named one we have.
	ReactsToID *string    `bun:"reacts_to_id" json:"reactsToId,omitempty"`
	BotStatus  *string    `bun:"bot_status" json:"botStatus,omitempty"`
	CreatedAt  time.Time  `bun:"created_at" json:"createdAt"`
	SentAt     *time.Time `bun:"sent_at" json:"sentAt"`

	// Contact and Account are loaded with the message by MessageForWork only.
	Contact *Contact `bun:"rel:belongs-to,join:contact_id=id" json:"-"`
	Account *Account `bun:"rel:belongs-to,join:account_id=id" json:"-"`

	// By is the team member who wrote a team reply (from AuthorUserID and AuthorEmail); nil for the
	// bot's, a campaign's, the API's own and the service's messages.
	By *Assignee `bun:"-" json:"author"`
}

var _ bun.AfterScanRowHook = (*Message)(nil)

// AfterScanRow fills By from the stored author, for every query that reads messages.
func (m *Message) AfterScanRow(context.Context) error {
	if m.AuthorUserID != nil {
		m.By = &Assignee{UserID: *m.AuthorUserID, Email: derefOr(m.AuthorEmail, "")}
	}
	return nil
}

// Attempt is one try at delivering an outgoing message.
type Attempt struct {
	bun.BaseModel `bun:"table:message_attempts"`

	ID         string    `bun:"id,pk" json:"-"`
	MessageID  string    `bun:"message_id" json:"-"`
	At         time.Time `bun:"at" json:"at"`
	StatusCode *int      `bun:"status_code" json:"statusCode"`
	Error      *string   `bun:"error" json:"error"`
	DurationMS int64     `bun:"duration_ms" json:"durationMs"`
}

// MessageByID returns the account's message, or NOT_FOUND.
func (s *Store) MessageByID(ctx context.Context, accountID, id string) (*Message, error) {
	if id == "" || len(id) > maxIDLength {
		return nil, notFound("message")
	}
	return oneMessage(ctx, s.db.NewSelect().Where("account_id = ? AND id = ?", accountID, id))
}

// ReplyTo returns the bot's reply to an incoming message, or NOT_FOUND.
func (s *Store) ReplyTo(ctx context.Context, incomingID string) (*Message, error) {
	return oneMessage(ctx, s.db.NewSelect().Where("reply_to_id = ?", incomingID))
}

// Message returns a message by id alone, for the worker, which acts on ids from its own tasks.
func (s *Store) Message(ctx context.Context, id string) (*Message, error) {
	return oneMessage(ctx, s.db.NewSelect().Where("id = ?", id))
}

// MessageForWork returns a message with its contact and account (m.Contact, m.Account) in one query:
// what a worker task needs before it answers or delivers. Errors: NOT_FOUND.
func (s *Store) MessageForWork(ctx context.Context, id string) (*Message, error) {
	// Runs twice per answered message, so it is prepared (see prepared.go); the statement and the
	// query bun scans with come from one builder, so their columns cannot drift apart.
	conn, err := s.preparedConnFor(ctx, "message_for_work", s.messageForWorkSQL, id)
	if err != nil {
		return nil, fmt.Errorf("select message: %w", err)
	}
	m := new(Message)
	err = s.messageForWork(m).Conn(conn).Where("message.id = ?", id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("message")
	}
	if err != nil {
		return nil, fmt.Errorf("select message: %w", err)
	}
	return m, nil
}

// messageForWork is MessageForWork's query, which bun scans with.
func (s *Store) messageForWork(m *Message) *bun.SelectQuery {
	return s.db.NewSelect().Model(m).Relation("Contact").Relation("Account")
}

// messageForWorkSQL is MessageForWork's prepared statement: its query with the message's id as $1, each
// relation looked up by its primary key (LEFT JOIN LATERAL ... LIMIT 1) instead of bun's plain join, so
// that the plan does not depend on the tables' sizes. A prepared statement keeps the generic plan made
// when its connection first ran it (store.go, genericPlans), and on a new database the plain joins'
// plan was a hash join over every contact and every account, kept as the tables grew (PostgreSQL does
// not analyze a table before autovacuum does, and some servers run without it): 122 buffers and 2.4 ms
// a read in a closed loop, against 7 buffers with the lookups (docs/performance.md, second sitting of
// 2026-11-28). The columns, and so the rows bun scans, are the query's own.
func (s *Store) messageForWorkSQL() string {
	return probeRelations(s.messageForWork(nil).Where("message.id = $1").String())
}

// probeRelations rewrites bun's joins of a message's contact and account in text into primary-key
// lookups (see messageForWorkSQL).
func probeRelations(text string) string {
	for _, r := range []struct{ table, alias, key string }{{"contacts", "contact", "contact_id"}, {"accounts", "account", "account_id"}} {
		join := fmt.Sprintf(`LEFT JOIN "%s" AS "%s" ON ("%s"."id" = "message"."%s")`, r.table, r.alias, r.alias, r.key)
		probe := fmt.Sprintf(`LEFT JOIN LATERAL (SELECT * FROM "%s" WHERE "%s"."id" = "message"."%s" LIMIT 1) AS "%s" ON TRUE`,
			r.table, r.table, r.key, r.alias)
		text = strings.Replace(text, join, probe, 1)
	}
	return text
}

// MessagesForWork is MessageForWork for several messages in one query (a batch of bot replies), in the
// order of their ids; a message that no longer exists is left out.
func (s *Store) MessagesForWork(ctx context.Context, ids []string) ([]*Message, error) {
	// Prepared, as MessageForWork is, with the ids as one JSON array: unprepared, each batch was parsed
	// and planned anew, 0.9-2.0 ms of PostgreSQL's CPU for a read that then ran in 0.3 ms, about 1.1 s of
	// a steady run's 9 s (docs/performance.md, 2026-11-28, third sitting).
	asked, err := json.Marshal(ids)
	if err != nil {
		return nil, fmt.Errorf("select messages: %w", err)
	}
	conn, err := s.preparedConnFor(ctx, "messages_for_work", s.messagesForWorkSQL, string(asked))
	if err != nil {
		return nil, fmt.Errorf("select messages: %w", err)
	}
	var msgs []*Message
	err = s.messagesForWork(&msgs).Conn(conn).Where("message.id IN (?)", bun.In(ids)).Order("message.id").Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("select messages: %w", err)
	}
	return msgs, nil
}

// messagesForWork is MessagesForWork's query, which bun scans with.
func (s *Store) messagesForWork(msgs *[]*Message) *bun.SelectQuery {
	return s.db.NewSelect().Model(msgs).Relation("Contact").Relation("Account")
}

// messagesForWorkSQL is MessagesForWork's prepared statement, with the ids as the JSON array $1. Each
// message, and its contact and account, is looked up by its primary key, whatever the tables' sizes
// when the statement's generic plan was made (see messageForWorkSQL); an id given twice is read once.
func (s *Store) messagesForWorkSQL() string {
	text := probeRelations(s.messagesForWork(new([]*Message)).Order("message.id").String())
	return strings.Replace(text, `FROM "messages" AS "message"`,
		`FROM (SELECT DISTINCT jsonb_array_elements_text($1::jsonb) AS id) AS wanted `+
			`CROSS JOIN LATERAL (SELECT * FROM "messages" WHERE "messages"."id" = wanted.id LIMIT 1) AS "message"`, 1)
}

func oneMessage(ctx context.Context, q *bun.SelectQuery) (*Message, error) {
	m := new(Message)
	err := q.Model(m).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("message")
	}
	if err != nil {
		return nil, fmt.Errorf("select message: %w", err)
	}
	return m, nil
}

// ContactMessages returns one page of a contact's conversation, oldest first. Errors: NOT_FOUND.
func (s *Store) ContactMessages(ctx context.Context, accountID, contactID string, page Page) ([]Message, string, error) {
	if _, err := s.ContactByID(ctx, accountID, contactID); err != nil {
		return nil, "", err
	}
	var msgs []Message
	q := s.db.NewSelect().Model(&msgs).Where("contact_id = ?", contactID).Order("id").Limit(int64(page.Limit) + 1)
	if page.Cursor != "" {
		q = q.Where("id > ?", page.Cursor)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, "", fmt.Errorf("contact messages: %w", err)
	}
	msgs, next := cutPage(msgs, page, func(i int) string { return msgs[i].ID })
	return msgs, next, nil
}

// RecentConversation returns up to n of the contact's latest messages, oldest first: the bot's context.
func (s *Store) RecentConversation(ctx context.Context, contactID string, n int) ([]Message, error) {
	// Runs for every bot reply, so it is prepared (see prepared.go), from the same builder as the
	// query bun scans with.
	query := func(model any) *bun.SelectQuery {
		return s.db.NewSelect().Model(model).Order("id DESC").Limit(int64(n))
	}
	conn, err := s.preparedConnFor(ctx, fmt.Sprintf("recent_conversation_%d", n), func() string {
		return query((*Message)(nil)).Where("contact_id = $1").String()
	}, contactID)
	if err != nil {
		return nil, fmt.Errorf("recent conversation: %w", err)
	}
	var msgs []Message
	err = query(&msgs).Conn(conn).Where("contact_id = ?", contactID).Scan(ctx)
	if err != nil {
		return nil, fmt.Errorf("recent conversation: %w", err)
	}
	for i, j := 0, len(msgs)-1; i < j; i, j = i+1, j-1 {
		msgs[i], msgs[j] = msgs[j], msgs[i]
	}
	return msgs, nil
}

// MediaCheckPending marks a linked media file the worker has yet to fetch.
const MediaCheckPending = "pending"

// SetMediaCheck records what the worker found at a message's media link: "ok", or the problem.
func (s *Store) SetMediaCheck(ctx context.Context, messageID, result string) error {
	_, err := s.db.NewUpdate().Model((*Message)(nil)).Set("media_check = ?", truncate(result, 500)).Where("id = ?", messageID).Exec(ctx)
	if err != nil {
		return fmt.Errorf("set media check: %w", err)
	}
	return nil
}

// SetFetchedMedia stores the file the worker fetched for a message's media link (a data URI of mediaType,
// EmbedMedia) in place of the link and records the check as "ok". The write happens only while the
// message still has that link and its check is pending, so a check that runs twice stores once.
func (s *Store) SetFetchedMedia(ctx context.Context, messageID, link, dataURI, mediaType string) error {
	_, err := s.db.NewUpdate().Model((*Message)(nil)).
		Set("media_url = ?", dataURI).Set("media_content_type = ?", mediaType).Set("media_check = ?", "ok").
		Where("id = ? AND media_url = ? AND media_check = ?", messageID, link, MediaCheckPending).Exec(ctx)
	if err != nil {
		return fmt.Errorf("set fetched media: %w", err)
	}
	return nil
}

// MessageAttempts lists the delivery attempts of the account's message, oldest first. Errors: NOT_FOUND.
func (s *Store) MessageAttempts(ctx context.Context, accountID, messageID string) ([]Attempt, error) {
	if _, err := s.MessageByID(ctx, accountID, messageID); err != nil {
		return nil, err
	}
	var attempts []Attempt
	if err := s.db.NewSelect().Model(&attempts).Where("message_id = ?", messageID).Order("id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("message attempts: %w", err)
	}
	return attempts, nil
}

// AttemptOutcome is what one delivery attempt found out.
type AttemptOutcome struct {
	StatusCode int // 0 when no response
	Error      string
	Duration   time.Duration
	// NextAttemptAt is when the next retry is due; nil when this attempt was the last.
	NextAttemptAt *time.Time
	// ProviderID is the provider's id of the message it accepted (SMS, WhatsApp, Messenger and
	// Instagram; "" for webhooks). It is stored with the message, so that a reaction the provider
	// reports later finds the message it names.
	ProviderID string
}

// RecordAttempt stores a delivery attempt and moves the message to sent (no error) or failed (with the
// error and, while a retry is scheduled, nextAttemptAt), ending its handover (DecideAttempt). A
// message already sent stays sent.
func (s *Store) RecordAttempt(ctx context.Context, messageID string, out AttemptOutcome) error {
	a := newAttempt(messageID, out)
	at := a.At
	update := func(db bun.IDB) *bun.UpdateQuery {
		q := db.NewUpdate().Model((*Message)(nil)).
			Set("attempts = attempts + 1").Set("handover_until = NULL").
			Where("id = ? AND status <> ?", messageID, StatusSent)
		if out.Error == "" {
			q = q.Set("status = ?", StatusSent).Set("error = NULL").Set("next_attempt_at = NULL").Set("sent_at = ?", at)
			if out.ProviderID != "" {
				q = q.Set("provider_message_id = ?", out.ProviderID)
			}
			return q
		}
		q = q.Set("status = ?", StatusFailed).Set("error = ?", out.Error).Set("next_attempt_at = ?", out.NextAttemptAt)
		if at := givenUp(out, at); at != nil {
			q = q.Set("given_up_at = ?", *at)
		}
		return q
	}
	if !s.IsSQLite() {
		return s.recordAttemptPG(ctx, a, out)
	}
	var updated []Message
	err := s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		updated = nil
		if _, err := tx.NewInsert().Model(a).Exec(ctx); err != nil {
			return fmt.Errorf("record attempt: %w", err)
		}
		if err := update(tx).Returning(s.columnsOf((*Message)(nil), "")).Scan(ctx, &updated); err != nil && !isNoRows(err) {
			return fmt.Errorf("record attempt: %w", err)
		}
		return nil
	})
	if err == nil {
		s.emitUpdated(ctx, updated)
	}
	return err
}

// givenUp is when a delivery attempt made at at and ended as out gave up: at, when it failed with no
// next attempt; nil when it was sent or a retry is due (the stored time is then left as it is).
func givenUp(out AttemptOutcome, at time.Time) *time.Time {
	if out.Error == "" || out.NextAttemptAt != nil {
		return nil
	}
	return &at
}

// newAttempt is the record of an attempt to deliver messageID that ended as out, made now.
func newAttempt(messageID string, out AttemptOutcome) *Attempt {
	a := &Attempt{ID: newID(prefixAttempt), MessageID: messageID, At: now(), DurationMS: out.Duration.Milliseconds()}
	if out.StatusCode != 0 {
		a.StatusCode = &out.StatusCode
	}
	if out.Error != "" {
		a.Error = &out.Error
	}
	return a
}

// emitUpdated tells live listeners about messages whose delivery status changed.
func (s *Store) emitUpdated(ctx context.Context, msgs []Message) {
	for i := range msgs {
		s.emit(ctx, msgs[i].AccountID, EventMessageUpdated, &msgs[i])
	}
}

// recordAttemptSQL stores an attempt and the message's status as one prepared statement (see
// prepared.go): one round trip, one commit, no planning. It returns the updated message, for the live
// event (none when the message was sent already): RETURNING is followed by Message's columns, named
// (columns.go). $9, the sent time, is NULL for a failure; $10, the provider's message id, is NULL
// unless a provider accepted the message; $11, the time the delivery gave up, is NULL unless it did
// (givenUp).
var recordAttemptSQL = `WITH attempt AS (
	INSERT INTO message_attempts (id, message_id, at, status_code, error, duration_ms) VALUES ($1, $2, $3, $4, $5, $6)
)
UPDATE messages SET attempts = attempts + 1, status = $7, error = $5, next_attempt_at = $8, sent_at = COALESCE($9, sent_at),
	provider_message_id = COALESCE($10, provider_message_id), handover_until = NULL, given_up_at = COALESCE($11, given_up_at)
WHERE id = $2 AND status <> '` + StatusSent + `'
RETURNING `

// recordAttemptPG is RecordAttempt on PostgreSQL.
func (s *Store) recordAttemptPG(ctx context.Context, a *Attempt, out AttemptOutcome) error {
	stmt, err := s.prepared(ctx, "record_attempt", func() string { return recordAttemptSQL + s.columnsOf((*Message)(nil), "") })
	if err != nil {
		return fmt.Errorf("record attempt: %w", err)
	}
	status, sentAt, next, providerID := StatusSent, any(a.At), any(nil), any(nil)
	if out.ProviderID != "" {
		providerID = out.ProviderID
	}
	if out.Error != "" {
		status, sentAt, providerID = StatusFailed, nil, nil
		if out.NextAttemptAt != nil {
			next = *out.NextAttemptAt
		}
	}
	rows, err := stmt.QueryContext(ctx, a.ID, a.MessageID, a.At, orNil(a.StatusCode), orNil(a.Error), a.DurationMS, status, next, sentAt, providerID,
		orNil(givenUp(out, a.At)))
	if err != nil {
		return fmt.Errorf("record attempt: %w", err)
	}
	// The updated row comes back with the statement (RETURNING), so the live event costs no read.
	var updated []Message
	if err := s.db.ScanRows(ctx, rows, &updated); err != nil {
		return fmt.Errorf("record attempt: %w", err)
	}
	s.emitUpdated(ctx, updated)
	return nil
}

// orNil is *p, or a NULL argument when p is nil.
func orNil[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// Redeliver queues a failed outgoing message again, after the outgoing door has decided it anew for
// now: time has passed since it was written. It goes back to pending in a new delivery round, whose
// number the caller uses in the delivery task id; a campaign's message that would go inside the
// contact's quiet hours is pending with NextAttemptAt at the end of them, for the caller to queue then.
// A message the door refuses now (the contact opted out on the channel since, the channel's window
// closed) stays failed with the door's reason as its error (ReasonOptedOut: ...), and nothing is
// queued. Errors: NOT_FOUND, CONFLICT when the message is not a failed outgoing message.
func (s *Store) Redeliver(ctx context.Context, accountID, messageID string) (*Message, error) {
	m, err := s.MessageByID(ctx, accountID, messageID)
	if err != nil {
		return nil, err
	}
	if m.Direction != DirectionOutgoing {
		return nil, Errorf(CodeConflict, "only outgoing messages are delivered")
	}
	if m.Status != StatusFailed {
		return nil, Errorf(CodeConflict, "message is %s; only a failed message can be redelivered", m.Status)
	}
	d, err := s.retryDecision(ctx, m)
	if err != nil {
		return nil, fmt.Errorf("redeliver: %w", err)
	}
	err = s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		// The lock order (tx.go): the contact, its send, then the message.
		if err := s.lockContactFirst(ctx, tx, m.ContactID); err != nil {
			return err
		}
		if d.Verdict == DoNotSend {
			res, err := tx.NewUpdate().Model((*Message)(nil)).Set("error = ?", d.Reason).Set("next_attempt_at = NULL").Set("given_up_at = ?", now()).
				Where("id = ? AND status = ?", m.ID, StatusFailed).Exec(ctx)
			return moved(res, err)
		}
		if m.Author == AuthorCampaign {
			// A failed opening being delivered again: its send is pending until this delivery ends.
			_, err := tx.NewUpdate().Model((*CampaignSend)(nil)).Set("status = ?", SendPending).Set("detail = NULL").
				Set("status_at = ?", now()).Where("message_id = ? AND status = ?", m.ID, SendFailed).Exec(ctx)
			if err != nil {
				return err
			}
		}
		var notBefore *time.Time
		if d.Verdict == SendLater {
			notBefore = &d.NotBefore
		}
		res, err := tx.NewUpdate().Model((*Message)(nil)).
			Set("status = ?", StatusPending).
			Set("next_attempt_at = ?", notBefore).
			Set("delivery_round = delivery_round + 1").
			Where("id = ? AND status = ?", m.ID, StatusFailed).
			Exec(ctx)
		return moved(res, err)
	})
	if err != nil {
		return nil, fmt.Errorf("redeliver: %w", err)
	}
	m, err = s.Message(ctx, m.ID)
	if err == nil {
		s.emit(ctx, accountID, EventMessageUpdated, m)
	}
	return m, err
}

// moved is the outcome of Redeliver's UPDATE of the message: CONFLICT when another retry moved it
// first.
func moved(res sql.Result, err error) error {
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return Errorf(CodeConflict, "message is no longer failed; only a failed message can be redelivered")
	}
	return nil
}

// retryDecision is the outgoing door's decision for a failed message delivered again now: its consent
// and window as for any delivery, and for a campaign's message the contact's quiet hours too (a
// retry is a new decision to send it, at a time nobody chose).
func (s *Store) retryDecision(ctx context.Context, m *Message) (Decision, error) {
	out, err := s.storedOutgoing(ctx, m)
	if err != nil {
		return Decision{}, err
	}
	return s.Decide(ctx, out)
}

// copyOf returns a pointer to a copy of *p (nil for nil), for a row that must not share its
// caller's variables: bun scans into the value a non-nil pointer field points at.
func copyOf[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
