package models_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/driver/pgdriver"

	"funnelchat/models"
	"funnelchat/models/report"
	"funnelchat/models/testenv"
)

// partitionOf returns the partition (PostgreSQL) that holds each of the messages, by id.
func partitionOf(t testing.TB, db bun.IDB, table string, ids []string) map[string]string {
	t.Helper()
	var rows []struct {
		ID   string `bun:"id"`
		Part string `bun:"part"`
	}
	if err := db.NewRaw("SELECT id, tableoid::regclass::text AS part FROM ? WHERE id IN (?)", bun.Ident(table), bun.In(ids)).
		Scan(context.Background(), &rows); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range rows {
		out[r.ID] = r.Part
	}
	return out
}

// sqlState is the SQLSTATE of a PostgreSQL error, "" for another error.
func sqlState(err error) string {
	var pgErr pgdriver.Error
	if errors.As(err, &pgErr) {
		return pgErr.Field('C')
	}
	return ""
}

// 8 writers (stores of their own, so 8 ingest batchers on their own connections, each called by 8
// requests at once) send the same messageSids, their messages' ids alternating between the last
// millisecond of a month and the first of the next, so that the copies of one messageSid fall in two
// partitions. Each messageSid is stored once, and every writer's answer for it is that message: the one
// that stored it hears it is new, the others that it is a duplicate of it. (A unique index in each
// partition would let a messageSid through once per partition.)
func TestMessageSidsAreStoredOnceAcrossAMonthBoundary(t *testing.T) {
	if !env.Postgres() {
		t.Skip("the partitions and the batch ingest are PostgreSQL's")
	}
	t.Parallel()
	ctx := context.Background()
	acc := newAccount(t).Account.ID
	boundary := models.MonthStartForTest(time.Now(), 3) // between two monthly partitions made ahead
	before, after := boundary.Add(-time.Millisecond), boundary
	run := csFrom("boundary")
	const writers, callers, sids = 8, 8, 240

	type answer struct {
		id  string
		dup bool
	}
	answers := make([][]answer, writers) // by writer, by messageSid
	var wg sync.WaitGroup
	errs := make(chan error, writers*callers)
	for w := range writers {
		s, err := models.OpenPostgres(env.DatabaseURL, 4)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		var n atomic.Int64
		s.SetClockForTest(func() time.Time {
			if (n.Add(1)+int64(w))%2 == 0 {
				return before
			}
			return after
		})
		answers[w] = make([]answer, sids)
		var next atomic.Int64
		for range callers {
			wg.Go(func() {
				for {
					i := int(next.Add(1)) - 1
					if i >= sids {
						return
					}
					k := (i + w*sids/writers) % sids // each writer starts elsewhere
					in := models.IncomingInput{ExternalID: fmt.Sprintf("%s-sid-%d", run, k), FromID: fmt.Sprintf("%s-from-%d", run, k%16),
						ToID: "business", Body: fmt.Sprintf("hello %d", k), Channel: "chat"}
					if err := in.Validate(1 << 20); err != nil {
						errs <- err
						return
					}
					// A deadlock between batches is unavailable (503): the client sends it again.
					m, dup, err := s.IngestIncoming(ctx, acc, in)
					for try := 1; err != nil && models.IsUnavailable(err) && try < 10; try++ {
						m, dup, err = s.IngestIncoming(ctx, acc, in)
					}
					if err != nil {
						errs <- fmt.Errorf("writer %d, messageSid %d: %w", w, k, err)
						return
					}
					if m.ExternalID == nil || *m.ExternalID != in.ExternalID {
						errs <- fmt.Errorf("writer %d, messageSid %d: answered with message %s of messageSid %v", w, k, m.ID, m.ExternalID)
						return
					}
					answers[w][k] = answer{m.ID, dup}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	var stored []struct {
		ID         string `bun:"id"`
		ExternalID string `bun:"external_id"`
		Part       string `bun:"part"`
	}
	if err := env.Store.DB().NewRaw(`SELECT id, external_id, tableoid::regclass::text AS part FROM messages WHERE account_id = ? ORDER BY external_id`, acc).
		Scan(ctx, &stored); err != nil {
		t.Fatal(err)
	}
	byK := map[int]string{}
	parts := map[string]int{}
	for _, m := range stored {
		var k int
		if _, err := fmt.Sscanf(strings.TrimPrefix(m.ExternalID, run+"-sid-"), "%d", &k); err != nil {
			t.Fatalf("message %s: messageSid %q", m.ID, m.ExternalID)
		}
		if first, ok := byK[k]; ok {
			t.Errorf("messageSid %d stored twice: %s and %s", k, first, m.ID)
		}
		byK[k] = m.ID
		parts[m.Part]++
	}
	if len(byK) != sids {
		t.Errorf("%d messageSids stored, want %d", len(byK), sids)
	}
	wantParts := []string{models.PartitionNameForTest("messages", models.MonthStartForTest(time.Now(), 2)),
		models.PartitionNameForTest("messages", boundary)}
	for _, p := range wantParts {
		if parts[p] == 0 {
			t.Errorf("no message in partition %s (messages by partition: %v): the test did not cross the bound", p, parts)
		}
	}
	for k := range sids {
		news := 0
		for w := range writers {
			a := answers[w][k]
			if a.id != byK[k] {
				t.Errorf("messageSid %d: writer %d was answered %s, the stored message is %s", k, w, a.id, byK[k])
			}
			if !a.dup {
				news++
			}
		}
		if news != 1 {
			t.Errorf("messageSid %d: %d writers were told it is new, want 1", k, news)
		}
	}
	var claims int
	if err := env.Store.DB().NewRaw(`SELECT count(*) FROM message_claims AS c JOIN messages AS m ON m.id = c.message_id
		WHERE c.account_id = ? AND m.external_id = c.external_id`, acc).Scan(ctx, &claims); err != nil {
		t.Fatal(err)
	}
	if claims != sids {
		t.Errorf("%d claims name their message, want %d", claims, sids)
	}
	testenv.CheckConversationTable(t, env.Store.DB(), acc)
}

// A message's reply is stored once, whichever way it is written and whichever partition each way's id
// falls in: the reply that RecordBotReply stores has the id BotReplyID derives from the message's (the
// next month's partition, for a message of a month's last millisecond), the one CreateBotReply stores a
// new id (this month's partition). Written one after the other, the second finds the first; written at
// once, one of them is stored.
func TestBotRepliesAreStoredOnceAcrossPartitions(t *testing.T) {
	if !env.Postgres() {
		t.Skip("the partitions are PostgreSQL's")
	}
	t.Parallel()
	ctx := context.Background()
	acc := newAccount(t).Account.ID
	boundary := models.MonthStartForTest(time.Now(), 3)
	s, err := models.OpenPostgres(env.DatabaseURL, 8)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	s.SetClockForTest(func() time.Time { return boundary.Add(-time.Millisecond) })
	incoming := func() *models.Message {
		in := testenv.ReceiveOn(t, s, acc, csFrom("reply"), "chat", "hello")
		if got := partitionOf(t, s.DB(), "messages", []string{models.BotReplyID(in.ID), in.ID}); got[in.ID] == "" {
			t.Fatalf("message %s not stored", in.ID)
		}
		return in
	}
	replies := func(in *models.Message) []string {
		var ids []string
		if err := s.DB().NewRaw("SELECT id FROM messages WHERE reply_to_id = ?", in.ID).Scan(ctx, &ids); err != nil {
			t.Fatal(err)
		}
		return ids
	}
	ok := models.AttemptOutcome{StatusCode: 200}
	thisMonth := models.PartitionNameForTest("messages", models.MonthStartForTest(time.Now(), 0))
	legacy := "messages_legacy"

	t.Run("recorded first, then created", func(t *testing.T) {
		in := incoming()
		stored, err := s.RecordBotReply(ctx, models.NewBotReply(in, nil, "first"), ok)
		if err != nil || !stored {
			t.Fatalf("RecordBotReply: stored %v, %v", stored, err)
		}
		reply, _, err := s.CreateBotReply(ctx, in, nil, "second", nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		if reply.ID != models.BotReplyID(in.ID) || reply.Body != "first" {
			t.Errorf("CreateBotReply answered %s %q, want the recorded reply %s", reply.ID, reply.Body, models.BotReplyID(in.ID))
		}
		if got := replies(in); len(got) != 1 {
			t.Errorf("replies %v, want one", got)
		}
		where := partitionOf(t, s.DB(), "messages", []string{in.ID, reply.ID})
		if where[in.ID] == where[reply.ID] {
			t.Errorf("the message and its reply are both in %s: the test did not cross the bound", where[in.ID])
		}
	})
	t.Run("created first, then recorded", func(t *testing.T) {
		in := incoming()
		reply, _, err := s.CreateBotReply(ctx, in, nil, "first", nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		stored, err := s.RecordBotReply(ctx, models.NewBotReply(in, nil, "second"), ok)
		if err != nil || stored {
			t.Errorf("RecordBotReply after CreateBotReply: stored %v, %v; want nothing stored", stored, err)
		}
		if got := replies(in); len(got) != 1 || got[0] != reply.ID {
			t.Errorf("replies %v, want only %s", got, reply.ID)
		}
		if where := partitionOf(t, s.DB(), "messages", []string{reply.ID})[reply.ID]; where != thisMonth && where != legacy {
			t.Errorf("the created reply is in %s, want this month's partition", where)
		}
	})
	t.Run("at once", func(t *testing.T) {
		for range 10 {
			in := incoming()
			var wg sync.WaitGroup
			var recorded atomic.Int32
			created := make(chan string, 4)
			for i := range 8 {
				wg.Go(func() {
					if i%2 == 0 {
						stored, err := s.RecordBotReply(ctx, models.NewBotReply(in, nil, "recorded"), ok)
						if err != nil {
							t.Error(err)
						}
						if stored {
							recorded.Add(1)
						}
						return
					}
					reply, _, err := s.CreateBotReply(ctx, in, nil, "created", nil, 0)
					if err != nil {
						t.Error(err)
						return
					}
					created <- reply.ID
				})
			}
			wg.Wait()
			close(created)
			got := replies(in)
			if len(got) != 1 {
				t.Fatalf("message %s has replies %v, want one", in.ID, got)
			}
			if recorded.Load() > 1 || (recorded.Load() == 1) != (got[0] == models.BotReplyID(in.ID)) {
				t.Errorf("RecordBotReply stored %d replies; the reply is %s", recorded.Load(), got[0])
			}
			for id := range created {
				if id != got[0] {
					t.Errorf("CreateBotReply answered %s, the stored reply is %s", id, got[0])
				}
			}
			var claimed string
			if err := s.DB().NewRaw("SELECT message_id FROM reply_claims WHERE reply_to_id = ?", in.ID).Scan(ctx, &claimed); err != nil || claimed != got[0] {
				t.Errorf("reply claim names %q (%v), want %s", claimed, err, got[0])
			}
		}
	})
}

// tableDigest is a count and a digest of the rows a query returns, in its order.
func tableDigest(t testing.TB, db bun.IDB, query string, args ...any) string {
	t.Helper()
	var rows []map[string]any
	if err := db.NewRaw(query, args...).Scan(context.Background(), &rows); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	h := sha256.New()
	for _, r := range rows {
		keys := slices.Sorted(maps.Keys(r))
		for _, k := range keys {
			fmt.Fprintf(h, "%s=%v;", k, r[k])
		}
		h.Write([]byte{'\n'})
	}
	return fmt.Sprintf("%d rows, sha256 %x", len(rows), h.Sum(nil))
}

// A database with the schema before the partitioning and data of several months (messages, messageSids,
// bot replies, delivery attempts, failed deliveries, consent events, conversations) is converted in
// place: every row is still there, unchanged, in the partition its id says; the keys hold (primary key,
// foreign keys, messageSid de-duplication, one reply per message), and the inbox reads the same. While
// the conversion runs (between its steps), messages are stored and de-duplicated, replies written once.
func TestConversionToPartitionsKeepsEveryRow(t *testing.T) {
	if !env.Postgres() {
		t.Skip("the partitions are PostgreSQL's")
	}
	t.Parallel()
	ctx := context.Background()
	s := env.FreshUnmigratedStore(t)
	if err := s.MigrateBeforeForTest(ctx, models.PartitionMigrationForTest); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"messages", "consent_events"} {
		var kind string
		if err := s.DB().NewRaw("SELECT relkind::text FROM pg_class WHERE oid = to_regclass(?)", table).Scan(ctx, &kind); err != nil || kind != "r" {
			t.Fatalf("%s before the migration: kind %q (%v), want a plain table", table, kind, err)
		}
	}
	var clock atomic.Pointer[time.Time]
	s.SetClockForTest(func() time.Time { return *clock.Load() })
	at := func(tm time.Time) { clock.Store(&tm) }

	created, err := s.CreateAccount(ctx, models.NewAccount{Email: uniqueEmail("convert"), Name: "Convert"})
	if err != nil {
		t.Fatal(err)
	}
	acc, owner := created.Account.ID, created.User.ID
	other, err := s.CreateAccount(ctx, models.NewAccount{Email: uniqueEmail("convert-live"), Name: "Live"})
	if err != nil {
		t.Fatal(err)
	}
	live := other.Account.ID
	ingest := func(account, sid, from string) (*models.Message, bool) {
		in := models.IncomingInput{ExternalID: sid, FromID: from, ToID: "business", Body: "hello " + sid, Channel: "chat"}
		if err := in.Validate(1 << 20); err != nil {
			t.Fatal(err)
		}
		m, dup, err := s.IngestIncoming(ctx, account, in)
		if err != nil {
			t.Fatalf("ingest %s: %v", sid, err)
		}
		return m, dup
	}
	// Messages of four months, from 6 senders, a reply to most, failed and sent deliveries.
	now := time.Now()
	months := []time.Time{now.AddDate(0, -3, 0), now.AddDate(0, -2, 0), now.AddDate(0, -1, 0), now}
	var sids []string
	firstOf := map[string]string{}
	var answered, unanswered []*models.Message
	for mi, month := range months {
		for i := range 12 {
			at(month.Add(time.Duration(i) * time.Minute))
			sid := fmt.Sprintf("conv-%d-%d", mi, i)
			for _, account := range []string{acc, live} {
				m, dup := ingest(account, sid, fmt.Sprintf("sender-%d", i%6))
				if dup {
					t.Fatalf("%s stored as a duplicate", sid)
				}
				if account == acc {
					sids, firstOf[sid] = append(sids, sid), m.ID
				}
				switch {
				case i%4 == 0:
					if _, err := s.RecordBotReply(ctx, models.NewBotReply(m, nil, "recorded"), models.AttemptOutcome{StatusCode: 200}); err != nil {
						t.Fatal(err)
					}
					answered = append(answered, m)
				case i%4 == 1:
					reply, _, err := s.CreateBotReply(ctx, m, nil, "created", nil, 0)
					if err != nil {
						t.Fatal(err)
					}
					out := models.AttemptOutcome{StatusCode: 500, Error: "the receiver answered 500"}
					if i%8 == 1 {
						out = models.AttemptOutcome{StatusCode: 200}
					}
					if err := s.RecordAttempt(ctx, reply.ID, out); err != nil {
						t.Fatal(err)
					}
					answered = append(answered, m)
				default:
					unanswered = append(unanswered, m)
				}
			}
		}
		// A repeated messageSid of the month is a duplicate.
		if _, dup := ingest(acc, fmt.Sprintf("conv-%d-3", mi), "sender-3"); !dup {
			t.Fatalf("month %d: a repeated messageSid was stored", mi)
		}
	}
	for i := range 6 {
		contact := testenv.Receive(t, s, acc, fmt.Sprintf("sender-%d", i), "again", testenv.Person{}).ContactID
		in := models.ConsentInput{Channel: "chat", Status: models.ConsentOptedIn, Text: "yes", At: now.AddDate(0, -4, i)}
		if err := in.Normalize("", models.ConsentSourceAPI); err != nil {
			t.Fatal(err)
		}
		if _, err := s.SetConsent(ctx, acc, contact, in); err != nil {
			t.Fatal(err)
		}
	}
	at(now)

	// What the service reads, and every row, before.
	r := report.New(s)
	reads := func() string {
		var b strings.Builder
		convs, _, err := r.Conversations(ctx, acc, owner, report.ConversationFilter{}, models.Page{Limit: models.MaxPageLimit})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range convs {
			view, err := r.ConversationFor(ctx, acc, c.Contact.ID, "", 100)
			if err != nil {
				t.Fatal(err)
			}
			consent, err := s.ConsentOf(ctx, acc, c.Contact.ID)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s last %s unread %v failed %v\n", c.Contact.ID, c.LastMessage.ID, c.Unread, c.Failed)
			for _, m := range view.Messages {
				fmt.Fprintf(&b, "  %s %s %s %s %v\n", m.ID, m.Direction, m.Status, m.Body, m.ReplyToID != nil)
			}
			fmt.Fprintf(&b, "  consent %+v\n", consent.Channels)
			for _, e := range consent.Events {
				fmt.Fprintf(&b, "  consent event %+v\n", *e)
			}
		}
		failed, _, err := r.Deliveries(ctx, acc, "", models.Page{Limit: models.MaxPageLimit})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range failed {
			fmt.Fprintf(&b, "failed %s %s\n", m.ID, *m.Error)
		}
		counts, err := r.Counts(ctx, acc, owner)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "counts %+v\n", *counts)
		return b.String()
	}
	// The account's rows (the other account writes while the conversion runs).
	rows := func() map[string]string {
		out := map[string]string{}
		for table, query := range map[string]string{
			"messages":         "SELECT * FROM messages WHERE account_id = ? ORDER BY id",
			"consent_events":   "SELECT * FROM consent_events WHERE account_id = ? ORDER BY id",
			"message_attempts": "SELECT a.* FROM message_attempts AS a JOIN messages AS m ON m.id = a.message_id WHERE m.account_id = ? ORDER BY a.id",
			"conversations":    "SELECT * FROM conversations WHERE account_id = ? ORDER BY contact_id",
			"contacts":         "SELECT * FROM contacts WHERE account_id = ? ORDER BY id",
		} {
			out[table] = tableDigest(t, s.DB(), query, acc)
		}
		return out
	}
	readsBefore, rowsBefore := reads(), rows()

	// Between the conversion's steps: the other account's messages and replies.
	var steps []string
	s.OnConversionStepForTest(func(step string) {
		steps = append(steps, step)
		switch step {
		case "claims", "filled":
			// A messageSid stored before the claims, and one claimed since: duplicates of their first.
			for _, sid := range []string{"conv-0-2", "conv-3-5"} {
				var first string
				if err := s.DB().NewRaw("SELECT id FROM messages WHERE account_id = ? AND external_id = ?", live, sid).Scan(ctx, &first); err != nil {
					t.Fatal(err)
				}
				if m, dup := ingest(live, sid, "sender-x"); !dup || m.ID != first {
					t.Errorf("during the conversion (%s): %s answered %s (duplicate %v), want the first, %s", step, sid, m.ID, dup, first)
				}
			}
			if _, dup := ingest(live, "during-"+step, "sender-y"); dup {
				t.Errorf("during the conversion (%s): a new messageSid was a duplicate", step)
			}
			if m, dup := ingest(live, "during-"+step, "sender-y"); !dup {
				t.Errorf("during the conversion (%s): a messageSid stored during it was stored again as %s", step, m.ID)
			}
			// A message answered before, and one not: one reply each.
			for _, m := range []*models.Message{answered[1], unanswered[len(unanswered)-1]} {
				if m.AccountID != live {
					continue
				}
				if _, _, err := s.CreateBotReply(ctx, m, nil, "during "+step, nil, 0); err != nil {
					t.Fatal(err)
				}
				if _, err := s.RecordBotReply(ctx, models.NewBotReply(m, nil, "during "+step), models.AttemptOutcome{StatusCode: 200}); err != nil {
					t.Fatal(err)
				}
				var n int
				if err := s.DB().NewRaw("SELECT count(*) FROM messages WHERE reply_to_id = ?", m.ID).Scan(ctx, &n); err != nil || n != 1 {
					t.Errorf("during the conversion (%s): message %s has %d replies (%v), want 1", step, m.ID, n, err)
				}
			}
		}
	})
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	s.OnConversionStepForTest(nil)
	if want := []string{"claims", "checked messages", "filled", "swapped messages", "checked consent_events", "swapped consent_events"}; !slices.Equal(steps, want) {
		t.Errorf("conversion steps %v, want %v", steps, want)
	}

	// Every row as it was, and in its partition.
	if got := rows(); !reflect.DeepEqual(got, rowsBefore) {
		t.Errorf("the account's rows changed in the conversion: %v, before %v", got, rowsBefore)
	}
	if readsAfter := reads(); readsAfter != readsBefore {
		t.Errorf("the inbox reads differently after the conversion.\nbefore:\n%s\nafter:\n%s", readsBefore, readsAfter)
	}
	var misplaced int
	if err := s.DB().NewRaw("SELECT count(*) FROM messages WHERE account_id = ? AND tableoid <> 'messages_legacy'::regclass", acc).Scan(ctx, &misplaced); err != nil || misplaced != 0 {
		t.Errorf("%d of the account's messages (%v) are not in messages_legacy", misplaced, err)
	}
	for table, kind := range map[string]string{"messages": "p", "consent_events": "p", "messages_legacy": "r", "consent_events_legacy": "r"} {
		var got string
		if err := s.DB().NewRaw("SELECT relkind::text FROM pg_class WHERE oid = to_regclass(?)", table).Scan(ctx, &got); err != nil || got != kind {
			t.Errorf("%s: kind %q (%v), want %q", table, got, err, kind)
		}
	}
	// Left behind: the unique indexes (replaced by the claims) and messages_account_idx.
	var left []string
	if err := s.DB().NewRaw(`SELECT indexname FROM pg_indexes WHERE indexname IN
		('messages_external_key', 'messages_reply_key', 'messages_account_idx')`).Scan(ctx, &left); err != nil || len(left) > 0 {
		t.Errorf("indexes left behind: %v (%v)", left, err)
	}

	// The keys.
	for _, c := range []struct{ what, query, state string }{
		{"a second message with an id", "INSERT INTO messages SELECT * FROM messages WHERE id = '" + firstOf["conv-0-0"] + "'", "23505"},
		{"an attempt of no message", "INSERT INTO message_attempts (id, message_id, at, duration_ms) VALUES ('att_x', 'msg_00000000000000000000000000', now(), 0)", "23503"},
		{"a message of no contact", "INSERT INTO messages (id, account_id, contact_id, direction, channel, body, status, created_at) VALUES ('" +
			models.IDBoundForTest("msg_", now) + "zz', 'acc_x', 'ct_none', 'incoming', 'chat', 'x', 'received', now())", "23503"},
		{"a consent event of no contact", "INSERT INTO consent_events (id, account_id, contact_id, channel, status, source, at) VALUES ('" +
			models.IDBoundForTest("cns_", now) + "zz', '" + acc + "', 'ct_none', 'chat', 'opted_in', 'api', now())", "23503"},
		{"a message beyond the partitions made", "INSERT INTO messages (id, account_id, contact_id, direction, channel, body, status, created_at) VALUES ('msg_x', '" +
			acc + "', '" + answered[0].ContactID + "', 'incoming', 'chat', 'x', 'received', now())", "23514"},
	} {
		_, err := s.DB().ExecContext(ctx, c.query)
		if got := sqlState(err); got != c.state {
			t.Errorf("%s: %v (SQLSTATE %q), want SQLSTATE %s", c.what, err, got, c.state)
		}
	}
	// (PostgreSQL 15 leaves the entry that the foreign key of message_attempts keeps for the legacy
	// partition marked not validated when the key is validated: the key itself is, and it is the one
	// that checks writes.)
	var unvalidated int
	if err := s.DB().NewRaw("SELECT count(*) FROM pg_constraint WHERE NOT convalidated AND contype = 'f' AND conparentid = 0").Scan(ctx, &unvalidated); err != nil || unvalidated != 0 {
		t.Errorf("%d foreign keys not validated (%v)", unvalidated, err)
	}
	for _, sid := range sids {
		if m, dup := ingest(acc, sid, "sender-z"); !dup || m.ID != firstOf[sid] {
			t.Errorf("after the conversion: %s answered %s (duplicate %v), want the first, %s", sid, m.ID, dup, firstOf[sid])
		}
	}
	for _, m := range answered {
		if m.AccountID != acc {
			continue
		}
		var want string
		if err := s.DB().NewRaw("SELECT id FROM messages WHERE reply_to_id = ?", m.ID).Scan(ctx, &want); err != nil {
			t.Fatal(err)
		}
		reply, _, err := s.CreateBotReply(ctx, m, nil, "after", nil, 0)
		if err != nil || reply.ID != want {
			t.Errorf("after the conversion: CreateBotReply for %s answered %v (%v), want the reply %s", m.ID, reply, err, want)
		}
		if stored, err := s.RecordBotReply(ctx, models.NewBotReply(m, nil, "after"), models.AttemptOutcome{StatusCode: 200}); err != nil || stored {
			t.Errorf("after the conversion: RecordBotReply for %s stored %v (%v)", m.ID, stored, err)
		}
	}
	var missing int
	if err := s.DB().NewRaw(`SELECT count(*) FROM messages AS m WHERE (m.external_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM message_claims AS c
			WHERE c.account_id = m.account_id AND c.external_id = m.external_id AND c.message_id = m.id))
		OR (m.reply_to_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM reply_claims AS c WHERE c.reply_to_id = m.reply_to_id AND c.message_id = m.id))`).
		Scan(ctx, &missing); err != nil || missing != 0 {
		t.Errorf("%d messages without their claim (%v)", missing, err)
	}
	if got := rows(); !reflect.DeepEqual(got, rowsBefore) {
		t.Errorf("the account's rows changed after duplicates and replies that store nothing: %v, before %v", got, rowsBefore)
	}

	// New messages go to the partition of their month; the partitions ahead are there.
	ahead := models.MonthStartForTest(now, 2)
	at(ahead.Add(time.Hour))
	m, _ := ingest(acc, "after-conversion", "sender-1")
	if where := partitionOf(t, s.DB(), "messages", []string{m.ID})[m.ID]; where != models.PartitionNameForTest("messages", ahead) {
		t.Errorf("a message of %s is in %s", ahead.Format("2006-01"), where)
	}
	for _, table := range []string{"messages", "consent_events"} {
		for i := 2; i <= models.PartitionMonthsAhead; i++ {
			name := models.PartitionNameForTest(table, models.MonthStartForTest(now, i))
			var kind string
			if err := s.DB().NewRaw("SELECT relkind::text FROM pg_class WHERE oid = to_regclass(?)", name).Scan(ctx, &kind); err != nil || kind != "r" {
				t.Errorf("partition %s: %q (%v)", name, kind, err)
			}
		}
	}
	testenv.CheckConversationTable(t, s.DB(), acc)
	testenv.CheckConversationTable(t, s.DB(), live)
}

// MESSAGE_RETENTION_MONTHS: the maintenance at a time six months on, keeping 2 months, drops the
// messages of before the month four months on (on PostgreSQL the partitions that end by then: the
// legacy one and two monthly ones), with their delivery attempts and claims, and never a consent event.
// A conversation whose messages all went is no longer listed, one that keeps some has the failed
// deliveries that are left; a messageSid of a dropped message is new again.
func TestRetentionDropsOldMessagesAndNeverConsentEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := env.FreshStore(t)
	now := time.Now()
	later := models.MonthStartForTest(now, 6).Add(10 * 24 * time.Hour)
	if _, err := s.MaintainPartitions(ctx, later, 0); err != nil {
		t.Fatal(err)
	}
	var clock atomic.Pointer[time.Time]
	s.SetClockForTest(func() time.Time { return *clock.Load() })
	at := func(tm time.Time) { clock.Store(&tm) }
	created, err := s.CreateAccount(ctx, models.NewAccount{Email: uniqueEmail("retention"), Name: "Retention"})
	if err != nil {
		t.Fatal(err)
	}
	acc, owner := created.Account.ID, created.User.ID
	ingest := func(sid, from string) (*models.Message, bool) {
		in := models.IncomingInput{ExternalID: sid, FromID: from, ToID: "business", Body: "hello " + sid, Channel: "chat"}
		if err := in.Validate(1 << 20); err != nil {
			t.Fatal(err)
		}
		m, dup, err := s.IngestIncoming(ctx, acc, in)
		if err != nil {
			t.Fatalf("ingest %s: %v", sid, err)
		}
		return m, dup
	}
	// An outgoing message written at tm, whose one delivery attempt failed for good.
	failedAt := func(contactID string, tm time.Time) string {
		id := models.NewIDAtForTest("msg_", tm)
		if _, err := s.DB().ExecContext(ctx, `INSERT INTO messages (id, account_id, contact_id, direction, channel, transport, message_type,
			body, to_id, author, status, created_at) VALUES (?, ?, ?, 'outgoing', 'chat', 'custom', 'text', 'hi', 'x', 'api', 'pending', ?)`,
			id, acc, contactID, tm); err != nil {
			t.Fatal(err)
		}
		if err := s.RecordAttempt(ctx, id, models.AttemptOutcome{StatusCode: 410, Error: "gone"}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	month := func(n int) time.Time { return models.MonthStartForTest(now, n).Add(24 * time.Hour) }

	at(now)
	a, _ := ingest("a-old", "sender-a")
	failedAt(a.ContactID, now)
	at(month(2))
	ingest("a-m2", "sender-a")
	at(month(3))
	b, _ := ingest("b-m3", "sender-b")
	if stored, err := s.RecordBotReply(ctx, models.NewBotReply(b, nil, "old reply"), models.AttemptOutcome{StatusCode: 200}); err != nil || !stored {
		t.Fatalf("RecordBotReply: %v, %v", stored, err)
	}
	failedAt(b.ContactID, month(3))
	at(later)
	bNew, _ := ingest("b-later", "sender-b")
	bFailed := failedAt(b.ContactID, later.Add(500*time.Millisecond))
	at(later.Add(time.Second))
	c, _ := ingest("c-later", "sender-c")
	for _, contact := range []string{a.ContactID, b.ContactID} {
		in := models.ConsentInput{Channel: "chat", Status: models.ConsentOptedOut, Text: "STOP", At: now.AddDate(-1, 0, 0)}
		if err := in.Normalize("", models.ConsentSourceAPI); err != nil {
			t.Fatal(err)
		}
		if _, err := s.SetConsent(ctx, contact, contact, in); err == nil {
			t.Fatal("SetConsent of another account's contact succeeded")
		}
		if _, err := s.SetConsent(ctx, acc, contact, in); err != nil {
			t.Fatal(err)
		}
	}
	consentDigest := func() string { return tableDigest(t, s.DB(), "SELECT * FROM consent_events ORDER BY id") }
	partitions := func(table string) []string {
		if s.IsSQLite() {
			return nil
		}
		var names []string
		if err := s.DB().NewRaw(`SELECT c.relname FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid
			WHERE i.inhparent = to_regclass(?) ORDER BY c.relname`, table).Scan(ctx, &names); err != nil {
			t.Fatal(err)
		}
		return names
	}
	consentBefore, consentPartitions := consentDigest(), partitions("consent_events")
	if !s.IsSQLite() && !slices.Contains(consentPartitions, "consent_events_legacy") {
		t.Fatalf("consent partitions %v: no legacy partition to keep", consentPartitions)
	}

	rep, err := s.MaintainPartitions(ctx, later, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !s.IsSQLite() {
		want := []string{"messages_legacy", models.PartitionNameForTest("messages", models.MonthStartForTest(now, 2)),
			models.PartitionNameForTest("messages", models.MonthStartForTest(now, 3))}
		if !slices.Equal(rep.Dropped, want) {
			t.Errorf("dropped %v, want %v", rep.Dropped, want)
		}
		for _, p := range partitions("messages") {
			if slices.Contains(want, p) {
				t.Errorf("partition %s is still there", p)
			}
		}
	}
	if got := consentDigest(); got != consentBefore {
		t.Errorf("consent events changed: %s, before %s", got, consentBefore)
	}
	if got := partitions("consent_events"); !slices.Equal(got, consentPartitions) {
		t.Errorf("consent partitions %v, before %v", got, consentPartitions)
	}
	var left []string
	if err := s.DB().NewRaw("SELECT id FROM messages WHERE account_id = ? ORDER BY id", acc).Scan(ctx, &left); err != nil {
		t.Fatal(err)
	}
	if want := []string{bNew.ID, bFailed, c.ID}; !slices.Equal(left, slices.Sorted(slices.Values(want))) {
		t.Errorf("messages left %v, want %v", left, want)
	}
	var attempts []string
	if err := s.DB().NewRaw("SELECT message_id FROM message_attempts ORDER BY id").Scan(ctx, &attempts); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(attempts, []string{bFailed}) {
		t.Errorf("delivery attempts of %v, want only of %s", attempts, bFailed)
	}
	if !s.IsSQLite() {
		var claims []string
		if err := s.DB().NewRaw("SELECT external_id FROM message_claims WHERE account_id = ? ORDER BY external_id", acc).Scan(ctx, &claims); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(claims, []string{"b-later", "c-later"}) {
			t.Errorf("messageSid claims %v, want b-later and c-later", claims)
		}
		var replyClaims int
		if err := s.DB().NewRaw("SELECT count(*) FROM reply_claims").Scan(ctx, &replyClaims); err != nil || replyClaims != 0 {
			t.Errorf("%d reply claims left (%v), want none", replyClaims, err)
		}
	}
	testenv.CheckConversationTable(t, s.DB(), acc)
	convs, _, err := report.New(s).Conversations(ctx, acc, owner, report.ConversationFilter{}, models.Page{Limit: models.MaxPageLimit})
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, cv := range convs {
		listed = append(listed, cv.Contact.ID)
		if cv.Contact.ID == b.ContactID && (!cv.Failed || cv.LastMessage.ID != bFailed) {
			t.Errorf("B's conversation: failed %v, last %s; want its failed delivery %s", cv.Failed, cv.LastMessage.ID, bFailed)
		}
	}
	if want := []string{c.ContactID, b.ContactID}; !slices.Equal(listed, want) {
		t.Errorf("conversations listed %v, want %v (A's messages all went)", listed, want)
	}

	// A messageSid whose message went is new again; one whose message stays is a duplicate.
	if m, dup := ingest("a-old", "sender-a"); dup {
		t.Errorf("a-old answered as a duplicate of %s", m.ID)
	}
	if m, dup := ingest("b-later", "sender-b"); !dup || m.ID != bNew.ID {
		t.Errorf("b-later answered %s (duplicate %v), want the first, %s", m.ID, dup, bNew.ID)
	}
	testenv.CheckConversationTable(t, s.DB(), acc)
	if rep, err := s.MaintainPartitions(ctx, later, 2); err != nil || len(rep.Dropped) > 0 || len(rep.Created) > 0 {
		t.Errorf("run again: %+v, %v; want nothing done", rep, err)
	}
}

// The store's connections keep generic plans for the statements PostgreSQL caches plans of (the hot
// prepared statements, the ingest functions, the foreign keys' checks): on the partitioned messages
// table PostgreSQL would otherwise plan them anew on each execution (store.go, genericPlans).
func TestConnectionsKeepGenericPlans(t *testing.T) {
	if !env.Postgres() {
		t.Skip("a PostgreSQL setting")
	}
	t.Parallel()
	var mode string
	if err := env.Store.DB().QueryRowContext(context.Background(), "SHOW plan_cache_mode").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != "force_generic_plan" {
		t.Errorf("plan_cache_mode %q, want force_generic_plan", mode)
	}
}

// A message whose id has no partition yet (the partitions ahead were not made: no release and no worker
// for three months, or a clock far ahead) is refused as UNAVAILABLE, which the api answers 503 with
// Retry-After, not as a bug's 500: once the worker or admin migrate has made the partition, the client's
// retry stores it.
func TestAMessageWithoutItsPartitionIsUnavailable(t *testing.T) {
	if !env.Postgres() {
		t.Skip("partitions are PostgreSQL's")
	}
	acc := newAccount(t).Account.ID
	m := testenv.ReceiveOn(t, env.Store, acc, testenv.UniqueFromID("far"), "web", "hello")
	far := models.NewIDAtForTest("msg_", time.Now().AddDate(5, 0, 0))
	_, err := env.Store.DB().ExecContext(context.Background(), `INSERT INTO messages (id, account_id, contact_id, direction, channel,
		transport, message_type, body, status, created_at) VALUES (?, ?, ?, 'incoming', 'web', 'custom', 'text', 'later', 'received', now())`,
		far, acc, m.ContactID)
	if sqlState(err) != "23514" {
		t.Fatalf("insert past the last partition: %v, want SQLSTATE 23514", err)
	}
	if !models.IsUnavailable(err) {
		t.Errorf("%v is not UNAVAILABLE", err)
	}
}
