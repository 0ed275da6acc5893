package report_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun/driver/pgdriver"

	"funnelchat/models"
	"funnelchat/models/report"
	"funnelchat/models/testenv"
)

// The inbox at an agency's size (docs/performance.md, "Inbox at an agency's size"):
//
//	TEST_DATABASE_URL=... TEST_REDIS_URL=... go test ./models/report -run '^$' -bench InboxAtSize -benchtime 20x
//
// on PostgreSQL only. One account gets SIZE_CONTACTS contacts (200,000 by default) and SIZE_MESSAGES
// messages (1,000,000: five a contact, alternating directions), with mixed conversation statuses,
// assignees, alerts, failed deliveries, reads and a campaign of SIZE_SENDS sends (100,000), plus one
// conversation of SIZE_LONG messages (1,000) for the conversation page. Every row goes in through plain
// INSERT ... SELECT into the real tables, so whatever the tables' triggers maintain is maintained as
// the service's own writes would. Each case's answer is checked before it is timed; SIZE_EXPLAIN=1 logs
// EXPLAIN (ANALYZE, BUFFERS) of each case's statements.

// sizeInbox is the account the benchmark reads, filled once per run, and what it must show.
type sizeInbox struct {
	accountID, userA, userB, campaignID, longContact string
	shape                                            sizeShape
	sends, long                                      int
	// took is how long each table's inserts took, in order; vacuum is VACUUM ANALYZE's time.
	took   []tableTime
	vacuum time.Duration
	want   sizeWant
}

type tableTime struct {
	table string
	rows  int64
	took  time.Duration
}

// sizeShape lays out the messages: contact i (0 <= i < n) has a message in each round r while
// r*n + i < m, with seq r*n + perm(i), where perm scatters the contacts over each round's time so that
// recency has nothing to do with i. A message's id and its time grow with seq, as ULIDs grow with time.
// Round r of contact i is incoming when r+i is even.
type sizeShape struct {
	n, m   int64
	base   time.Time
	stepUS int64 // microseconds between two seqs
}

// sizePrime scatters the contacts within a round; it must not divide SIZE_CONTACTS.
const sizePrime = 7919

func (s sizeShape) rounds() int64            { return (s.m + s.n - 1) / s.n }
func (s sizeShape) perm(i int64) int64       { return i * sizePrime % s.n }
func (s sizeShape) seq(r, i int64) int64     { return r*s.n + s.perm(i) }
func (s sizeShape) last(i int64) int64       { return (s.m-i+s.n-1)/s.n - 1 }
func (s sizeShape) incoming(r, i int64) bool { return (r+i)%2 == 0 }
func (s sizeShape) at(seq int64) time.Time {
	return s.base.Add(time.Duration(seq*s.stepUS) * time.Microsecond)
}
func (s sizeShape) opening(i int64) int64 { return 1 - i%2 } // the first outgoing round
func (s sizeShape) latestOut(i int64) int64 { // -1: none
	if l := s.last(i); !s.incoming(l, i) {
		return l
	} else {
		return l - 1
	}
}

// The mix, by contact number (the SQL below says the same):
//   - status by i%100: open below 30; snoozed from 30 to 34, until tomorrow for even i and until
//     yesterday (so open again) for odd i; resolved from 35;
//   - assigned to user A when i%10 == 3, to user B when i%10 == 6;
//   - an open alert when i%25 == 5, a resolved one when i%25 == 6; the bot paused when i%100 == 19;
//   - the latest outgoing message failed when i%50 == 7 (gave up) or 9 (retrying);
//   - user A read the whole conversation when i%4 == 0, its first message only when i%4 == 2;
//   - the campaign's sends go to contacts 0 to SIZE_SENDS-1: failed when i%10 == 7, queued when 8,
//     suppressed when 9, else sent (its opening is the contact's first outgoing message).
func sizeStatus(i int64) string {
	switch m := i % 100; {
	case m < 30:
		return models.ConversationOpen
	case m < 35 && i%2 == 0:
		return models.ConversationSnoozed
	case m < 35:
		return models.ConversationOpen
	}
	return models.ConversationResolved
}

// sizeWant counts what the reads must find, made in Go from the rules above.
type sizeWant struct {
	status                               map[string]int
	all                                  int
	unreadOpen, readOpen, needsHumanOpen int
	failedOpen, mineOpen, unassignedOpen int
	openAlerts, gaveUp, retrying         int
	campaign                             report.CampaignReport
	gaveUpAt                             []time.Time // when each delivery gave up
}

// sizeArgs are the fill statements' named arguments.
type sizeArgs struct {
	Acct     string    `bun:"acct"`
	CP       string    `bun:"cp"` // contact ids: cp || lpad(i, 7, '0')
	MP       string    `bun:"mp"` // message ids: mp || lpad(seq, 10, '0')
	AP       string    `bun:"ap"` // alert ids
	SP       string    `bun:"sp"` // campaign send ids
	UserA    string    `bun:"user_a"`
	UserB    string    `bun:"user_b"`
	Campaign string    `bun:"campaign"`
	N        int64     `bun:"n"`
	M        int64     `bun:"m"`
	S        int64     `bun:"s"`
	L        int64     `bun:"l"`
	Lo       int64     `bun:"lo"`
	Hi       int64     `bun:"hi"`
	Step     int64     `bun:"step"`
	Base     time.Time `bun:"base"`
	Now      time.Time `bun:"now"`
}

var (
	sizeOnce sync.Once
	sizeBox  *sizeInbox
	sizeErr  error
)

func seedSizeInbox(b *testing.B) *sizeInbox {
	if !env.Postgres() {
		b.Skip("the inbox size benchmark runs on PostgreSQL (set TEST_DATABASE_URL)")
	}
	sizeOnce.Do(func() { sizeBox, sizeErr = fillSizeInbox() })
	if sizeErr != nil {
		b.Fatal(sizeErr)
	}
	return sizeBox
}

// The rows of contact i, as the statements below compute them from generate_series.
const (
	sizePerm = `(i::bigint * 7919) % ?n`
	sizeLast = `((?m - i + ?n - 1) / ?n - 1)`
	sizeAt   = `?base::timestamptz + (%s) * (?step * interval '1 microsecond')`
	// sizeSender is contact i's sender id on the web channel.
	sizeSender = `'web-' || substr(md5(i::text), 1, 8) || '-' || i::text`
)

func sizeAtOf(seq string) string { return fmt.Sprintf(sizeAt, seq) }

var sizeStatements = []struct{ table, sql string }{
	{"contacts", `
INSERT INTO contacts (id, account_id, first_name, last_name, phone, email, origin, assignee_id, bot_paused, bot_paused_at,
    conversation_status, snoozed_until, conversation_status_at, created_at, updated_at)
SELECT ?cp || lpad(i::text, 7, '0'), ?acct,
    (ARRAY['Ma','Jo','An','Lu','So','Ka','Fa','El','No','Ol','Li','Ai','Te','Yu','Om','Le','Iv','Ch','Di','Ra'])[1 + i % 20] ||
    (ARRAY['ria','na','nia','cas','fia','ma','lia','ena','ah','iver','am','sha','eo','ki','ar'])[1 + (i / 20) % 15],
    (ARRAY['Sil','Smi','Gar','Che','Kha','Mül','Ros','Dub','Kim','Nov','Lop','Bro','Iva','Tan','Had','Jon','Cos','Ngu','Eva','Mar'])[1 + (i / 300) % 20] ||
    (ARRAY['va','th','cia','n','ler','si','ois','ak','ez','wn','ova','aka','dad','es','ta','yen','ans','tin','berg','ford'])[1 + (i / 6000) % 20],
    '+1' || (200 + i % 800)::text || lpad((i / 800)::text, 7, '0'),
    'user' || i::text || '@example' || (i % 7)::text || '.com',
    'channel',
    CASE i % 10 WHEN 3 THEN ?user_a WHEN 6 THEN ?user_b END,
    i % 100 = 19, CASE WHEN i % 100 = 19 THEN ?now::timestamptz - interval '2 hours' END,
    CASE WHEN i % 100 < 30 THEN 'open' WHEN i % 100 < 35 THEN 'snoozed' ELSE 'resolved' END,
    CASE WHEN i % 100 >= 30 AND i % 100 < 35 THEN ?now::timestamptz + (CASE WHEN i % 2 = 0 THEN 1 ELSE -1 END) * interval '1 day' END,
    CASE WHEN i % 100 >= 30 THEN ?now::timestamptz - interval '1 hour' END,
    ` + sizeAtOf(sizePerm) + `, ?now
FROM generate_series(?lo, ?hi - 1) AS i`},
	{"contact_identities", `
INSERT INTO contact_identities (account_id, external_id, contact_id, created_at)
SELECT ?acct, ` + sizeSender + `, ?cp || lpad(i::text, 7, '0'), ` + sizeAtOf(sizePerm) + `
FROM generate_series(?lo, ?hi - 1) AS i`},
	// In time order within the slice. fail: 1 gave up, 2 retrying (the latest outgoing message of
	// i%50 == 7 and 9); opening: the campaign's opening of a contact whose send was sent.
	{"messages", `
INSERT INTO messages (id, account_id, contact_id, campaign_id, direction, channel, transport, message_type, body,
    from_id, to_id, author, status, error, attempts, next_attempt_at, given_up_at, bot_status, created_at, sent_at)
SELECT ?mp || lpad(seq::text, 10, '0'), ?acct, ?cp || lpad(i::text, 7, '0'), CASE WHEN opening THEN ?campaign END,
    CASE WHEN incoming THEN 'incoming' ELSE 'outgoing' END, 'web', 'custom', 'text',
    CASE WHEN incoming THEN 'Hello, is my order on its way' WHEN opening THEN 'Hi, your order has shipped.'
        ELSE 'We ship across Europe in 3 to 5 business days.' END,
    CASE WHEN incoming THEN sender ELSE '' END, CASE WHEN incoming THEN 'shop' ELSE sender END,
    CASE WHEN incoming THEN '' ELSE 'bot' END,
    CASE WHEN incoming THEN 'received' WHEN fail > 0 THEN 'failed' ELSE 'sent' END,
    CASE fail WHEN 1 THEN 'the receiver answered 410 Gone' WHEN 2 THEN 'the receiver did not answer in time' END,
    CASE fail WHEN 1 THEN 5 WHEN 2 THEN 2 ELSE CASE WHEN incoming THEN 0 ELSE 1 END END,
    CASE WHEN fail = 2 THEN ?now::timestamptz + interval '10 minutes' END,
    CASE WHEN fail = 1 THEN at + interval '30 minutes' END,
    CASE WHEN incoming THEN 'done' END,
    at, CASE WHEN NOT incoming AND fail = 0 THEN at END
FROM (
    SELECT i, seq, (r + i) % 2 = 0 AS incoming, ` + sizeAtOf("seq") + ` AS at, ` + sizeSender + ` AS sender,
        CASE WHEN (r + i) % 2 = 1 AND r = CASE WHEN (last + i) % 2 = 1 THEN last ELSE last - 1 END
            THEN CASE i % 50 WHEN 7 THEN 1 WHEN 9 THEN 2 ELSE 0 END ELSE 0 END AS fail,
        i < ?s AND i % 10 < 7 AND r = 1 - i % 2 AS opening
    FROM (SELECT i, r, r::bigint * ?n + ` + sizePerm + ` AS seq, ` + sizeLast + ` AS last
        FROM generate_series(?lo, ?hi - 1) AS i, generate_series(0, (?m + ?n - 1) / ?n - 1) AS r) AS g
    WHERE r <= last
) AS q ORDER BY seq`},
	// A minute after the contact's latest message, on its latest incoming one.
	{"alerts", `
INSERT INTO alerts (id, account_id, contact_id, message_id, reason, webhook_status, created_at, resolved_at, resolved_by)
SELECT ?ap || lpad((last * ?n + perm)::text, 10, '0'), ?acct, ?cp || lpad(i::text, 7, '0'),
    CASE WHEN li >= 0 THEN ?mp || lpad((li * ?n + perm)::text, 10, '0') END,
    'wants a person', 'none', at + interval '1 minute',
    CASE WHEN i % 25 = 6 THEN at + interval '1 hour' END, CASE WHEN i % 25 = 6 THEN ?user_a END
FROM (SELECT i, perm, last, CASE WHEN (last + i) % 2 = 0 THEN last ELSE last - 1 END AS li,
        ` + sizeAtOf("last * ?n + perm") + ` AS at
    FROM (SELECT i, ` + sizePerm + ` AS perm, ` + sizeLast + `::bigint AS last
        FROM generate_series(?lo, ?hi - 1) AS i WHERE i % 25 IN (5, 6)) AS g) AS q`},
	{"conversation_reads", `
INSERT INTO conversation_reads (account_id, reader_id, contact_id, last_read_id, read_at)
SELECT ?acct, ?user_a, ?cp || lpad(i::text, 7, '0'), ?mp || lpad((upto * ?n + perm)::text, 10, '0'),
    ` + sizeAtOf("upto * ?n + perm") + ` + interval '2 minutes'
FROM (SELECT i, ` + sizePerm + ` AS perm, CASE WHEN i % 4 = 0 THEN ` + sizeLast + ` ELSE 0 END::bigint AS upto
    FROM generate_series(?lo, ?hi - 1) AS i WHERE i % 2 = 0) AS g`},
	{"campaign_sends", `
INSERT INTO campaign_sends (id, account_id, campaign_id, contact_id, status, detail, due_at, message_id, follow_ups_done,
    created_at, sent_at, status_at, variant)
SELECT ?sp || lpad(i::text, 7, '0'), ?acct, ?campaign, ?cp || lpad(i::text, 7, '0'),
    CASE WHEN i % 10 = 7 THEN 'failed' WHEN i % 10 = 8 THEN 'queued' WHEN i % 10 = 9 THEN 'suppressed'
        WHEN sent THEN 'sent' ELSE 'queued' END,
    CASE WHEN i % 10 = 7 THEN 'the receiver answered 410 Gone' WHEN i % 10 = 9 THEN 'OPTED_OUT' END,
    at - interval '1 minute', CASE WHEN sent THEN ?mp || lpad((o * ?n + perm)::text, 10, '0') END, sent,
    at - interval '1 minute', CASE WHEN sent THEN at END, at, (i / 2) % 2
FROM (SELECT i, perm, o, i % 10 < 7 AND o <= last AS sent, ` + sizeAtOf("o * ?n + perm") + ` AS at
    FROM (SELECT i, ` + sizePerm + ` AS perm, (1 - i % 2)::bigint AS o, ` + sizeLast + ` AS last
        FROM generate_series(?lo, least(?hi, ?s) - 1) AS i) AS g) AS q`},
}

// sizeLong is the one long conversation (the conversation page's): its message k of ?l at seq
// k*(rounds*n/l), with an id just after that seq's, incoming when k is even.
var sizeLong = []struct{ table, sql string }{
	{"contacts", `
INSERT INTO contacts (id, account_id, first_name, last_name, phone, email, origin, created_at, updated_at)
VALUES (?cp || 'long', ?acct, 'Regular', 'Customer', '+442071838750', 'regular@example.org', 'channel', ?base, ?now)`},
	{"contact_identities", `
INSERT INTO contact_identities (account_id, external_id, contact_id, created_at) VALUES (?acct, 'web-regular', ?cp || 'long', ?base)`},
	{"messages", `
INSERT INTO messages (id, account_id, contact_id, direction, channel, transport, message_type, body, from_id, to_id,
    author, status, bot_status, created_at, sent_at)
SELECT ?mp || lpad(seq::text, 10, '0') || 'L', ?acct, ?cp || 'long', CASE WHEN k % 2 = 0 THEN 'incoming' ELSE 'outgoing' END,
    'web', 'custom', 'text', 'Message ' || k::text, CASE WHEN k % 2 = 0 THEN 'web-regular' ELSE '' END,
    CASE WHEN k % 2 = 0 THEN 'shop' ELSE 'web-regular' END, CASE WHEN k % 2 = 0 THEN '' ELSE 'bot' END,
    CASE WHEN k % 2 = 0 THEN 'received' ELSE 'sent' END, CASE WHEN k % 2 = 0 THEN 'done' END,
    ` + sizeAtOf("seq") + `, CASE WHEN k % 2 = 1 THEN ` + sizeAtOf("seq") + ` END
FROM (SELECT k, k * (((?m + ?n - 1) / ?n) * ?n / ?l) AS seq FROM generate_series(0, ?l - 1) AS k) AS g`},
}

func fillSizeInbox() (*sizeInbox, error) {
	ctx := context.Background()
	db := env.Store.DB()
	n, m := int64(benchInt("SIZE_CONTACTS", 200_000)), int64(benchInt("SIZE_MESSAGES", 1_000_000))
	sends, long := min(int64(benchInt("SIZE_SENDS", 100_000)), n), int64(benchInt("SIZE_LONG", 1000))
	slice := int64(benchInt("SIZE_SLICE", 5000))
	if m < n || n%sizePrime == 0 || long < 101 {
		return nil, fmt.Errorf("SIZE_MESSAGES %d must be at least SIZE_CONTACTS %d, which %d must not divide; SIZE_LONG %d above 100", m, n, sizePrime, long)
	}
	acc, err := env.Store.CreateAccount(ctx, models.NewAccount{Email: testenv.UniqueEmail("agency"), Name: "Agency"})
	if err != nil {
		return nil, err
	}
	id := acc.Account.ID
	var users [2]string
	for k, name := range []string{"agent-a", "agent-b"} {
		u, err := env.Store.AddUser(ctx, id, testenv.UniqueEmail(name), models.RoleMember)
		if err != nil {
			return nil, err
		}
		users[k] = u.User.ID
	}
	l, err := env.Store.CreateList(ctx, id, "agency")
	if err != nil {
		return nil, err
	}
	name, ch, listID := "agency", "custom:web", l.ID
	c, err := env.Store.CreateCampaign(ctx, id, models.CampaignInput{Name: &name, Channel: &ch, ListID: &listID,
		OpeningMessages: &[]string{"Hi A", "Hi B"}})
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	// Sixty days of history up to now.
	shape := sizeShape{n: n, m: m, base: now.Add(-60 * 24 * time.Hour)}
	shape.stepUS = (60 * 24 * time.Hour).Microseconds() / (shape.rounds() * n)
	args := sizeArgs{Acct: id, CP: "ct_sz_" + id + "_", MP: testenv.IDPrefix("msg_", time.Now()) + "sz_" + id + "_", AP: "alr_sz_" + id + "_", SP: "snd_sz_" + id + "_",
		UserA: users[0], UserB: users[1], Campaign: c.ID, N: n, M: m, S: sends, L: long, Step: shape.stepUS, Base: shape.base, Now: now}
	si := &sizeInbox{accountID: id, userA: users[0], userB: users[1], campaignID: c.ID, longContact: args.CP + "long",
		shape: shape, sends: int(sends), long: int(long)}
	took := map[string]*tableTime{}
	exec := func(table, query string, a sizeArgs) error {
		start := time.Now()
		res, err := db.NewRaw(query, a).Exec(ctx)
		if err != nil {
			return fmt.Errorf("fill %s [%d, %d): %w", table, a.Lo, a.Hi, err)
		}
		t := took[table]
		if t == nil {
			t = &tableTime{table: table}
			took[table] = t
			si.took = append(si.took, tableTime{table: table})
		}
		rows, _ := res.RowsAffected()
		t.rows += rows
		t.took += time.Since(start)
		return nil
	}
	// In slices of SIZE_SLICE contacts (5,000: 25,000 messages), so that no statement runs into the
	// connection's read timeout on a loaded machine.
	for lo := int64(0); lo < n; lo += slice {
		a := args
		a.Lo, a.Hi = lo, min(lo+slice, n)
		for _, st := range sizeStatements {
			if st.table == "campaign_sends" && lo >= sends {
				continue
			}
			if err := exec(st.table, st.sql, a); err != nil {
				return nil, err
			}
		}
	}
	for _, st := range sizeLong {
		if err := exec(st.table, st.sql, args); err != nil {
			return nil, err
		}
	}
	for k := range si.took {
		si.took[k] = *took[si.took[k].table]
	}
	start := time.Now()
	if err := vacuumAll(ctx); err != nil {
		return nil, err
	}
	si.vacuum = time.Since(start)
	si.want = sizeWants(si)
	return si, nil
}

// vacuumAll runs VACUUM ANALYZE on every table of the run's own database, as autovacuum leaves tables
// at rest: the ones filled here and any that their triggers fill. On a connection of its own with a
// long read timeout: VACUUM of a million messages can outlast the store's.
func vacuumAll(ctx context.Context) error {
	conn := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(env.DatabaseURL), pgdriver.WithReadTimeout(time.Hour)))
	defer conn.Close()
	rows, err := conn.QueryContext(ctx, "SELECT quote_ident(tablename) FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename")
	if err != nil {
		return err
	}
	var tables []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return err
		}
		tables = append(tables, t)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, t := range tables {
		if _, err := conn.ExecContext(ctx, "VACUUM ANALYZE "+t); err != nil {
			return fmt.Errorf("vacuum %s: %w", t, err)
		}
	}
	return nil
}

// sizeWants counts, from the rules of the fill, what the reads must find.
func sizeWants(si *sizeInbox) sizeWant {
	s := si.shape
	w := sizeWant{status: map[string]int{}}
	cr := &w.campaign
	for i := range s.n {
		last, status := s.last(i), sizeStatus(i)
		open := status == models.ConversationOpen
		w.status[status]++
		w.all++
		var unread bool
		switch i % 4 {
		case 0: // read it all
		case 2: // read round 0 (incoming for even i): the next incoming round is 2
			unread = last >= 2
		default: // never read; odd i: round 1 is the first incoming
			unread = last >= 1
		}
		needsHuman := i%25 == 5 || i%100 == 19
		out := s.latestOut(i)
		failed := out >= 0 && (i%50 == 7 || i%50 == 9)
		if i%25 == 5 {
			w.openAlerts++
		}
		if out >= 0 && i%50 == 7 {
			w.gaveUp++
			w.gaveUpAt = append(w.gaveUpAt, s.at(s.seq(out, i)).Add(30*time.Minute))
		}
		if out >= 0 && i%50 == 9 {
			w.retrying++
		}
		if open {
			switch {
			case unread:
				w.unreadOpen++
			default:
				w.readOpen++
			}
			if needsHuman {
				w.needsHumanOpen++
			}
			if failed {
				w.failedOpen++
			}
			switch i % 10 {
			case 3:
				w.mineOpen++
			case 6:
			default:
				w.unassignedOpen++
			}
		}
		if i >= int64(si.sends) {
			continue
		}
		cr.Added++
		o := s.opening(i)
		switch {
		case i%10 == 7:
			cr.Failed++
		case i%10 == 8:
			cr.Queued++
		case i%10 == 9:
			cr.Suppressed++
		case o > last:
			cr.Queued++
		default:
			cr.Opened++
			if o+1 <= last {
				cr.Replied++
			}
			if i%25 == 5 || i%25 == 6 {
				cr.HandedOff++
			}
		}
	}
	// The long conversation: open, unassigned, never read, nothing failed.
	w.status[models.ConversationOpen]++
	w.all++
	w.unreadOpen++
	w.unassignedOpen++
	return w
}

// sizeCase is one read of the benchmark: prepare checks the read's answer (failing the benchmark when
// it is implausible) and returns the read to time and how many rows it answered.
type sizeCase struct {
	name    string
	prepare func(b *testing.B) (read func() error, rows int)
}

// sizeResult is one line of the summary.
type sizeResult struct {
	name     string
	rows     int
	p50, p95 float64
}

// BenchmarkInboxAtSize times the inbox's reads over one account at an agency's size: the conversation
// list with each filter and deep pages, the counts, the contact and conversation searches, one
// conversation's pages, the campaign report and the deliveries. Each case's p50 and p95 are its
// metrics, and the run ends with a summary table in the log.
func BenchmarkInboxAtSize(b *testing.B) {
	si := seedSizeInbox(b)
	var fill time.Duration
	var parts []string
	for _, t := range si.took {
		fill += t.took
		parts = append(parts, fmt.Sprintf("%s %d rows %s", t.table, t.rows, t.took.Round(time.Millisecond)))
	}
	b.Logf("filled in %s (%s); VACUUM ANALYZE %s; conversations by status now: %v",
		fill.Round(time.Millisecond), strings.Join(parts, ", "), si.vacuum.Round(time.Millisecond), si.want.status)
	var results []sizeResult
	for _, c := range sizeCases(si) {
		b.Run(c.name, func(b *testing.B) {
			read, rows := c.prepare(b)
			explainWhen(b, "SIZE_EXPLAIN", read)
			var took []time.Duration
			b.ResetTimer()
			for b.Loop() {
				start := time.Now()
				if err := read(); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(start))
			}
			slices.Sort(took)
			r := sizeResult{name: c.name, rows: rows,
				p50: float64(took[len(took)/2].Microseconds()) / 1000, p95: float64(took[len(took)*95/100].Microseconds()) / 1000}
			b.ReportMetric(r.p50, "p50-ms")
			b.ReportMetric(r.p95, "p95-ms")
			results = append(results, r)
		})
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%-28s %6s %10s %10s\n", "case", "rows", "p50 ms", "p95 ms")
	for _, r := range results {
		fmt.Fprintf(&sb, "%-28s %6d %10.1f %10.1f\n", r.name, r.rows, r.p50, r.p95)
	}
	b.Logf("%d contacts, %d messages (+%d in one conversation), %d campaign sends:\n%s",
		si.shape.n, si.shape.m, si.long, si.sends, sb.String())
}

// sizeSearches are the searches of both the contact search and the conversation list's, each with the
// test a found contact must pass. All of them find open conversations (the inbox's default view).
var sizeSearches = []struct {
	name, q string
	match   func(c *models.Contact) bool
}{
	{"letter", "m", func(c *models.Contact) bool {
		return strings.HasPrefix(strings.ToLower(c.FirstName), "m") || strings.HasPrefix(strings.ToLower(c.LastName), "m")
	}},
	{"first-name", "maria", func(c *models.Contact) bool { return c.FirstName == "Maria" }},
	{"full-name", "maria sil", func(c *models.Contact) bool { return c.FirstName == "Maria" && strings.HasPrefix(c.LastName, "Sil") }},
	{"email", "user100", func(c *models.Contact) bool { return c.Email != nil && strings.HasPrefix(*c.Email, "user100") }},
	{"phone", "+1415000", func(c *models.Contact) bool { return c.Phone != nil && strings.HasPrefix(*c.Phone, "+1415000") }},
}

func sizeCases(si *sizeInbox) []sizeCase {
	ctx := context.Background()
	acct, w := si.accountID, si.want
	yes, no := true, false
	page := models.Page{Limit: 50}
	var cases []sizeCase
	// list is a case of the conversation list's first page, which must hold min(want, 50) rows
	// (want < 0: at least one) that each pass ok, newest first.
	list := func(name, readerID string, f report.ConversationFilter, want int, ok func(report.Conversation) bool) sizeCase {
		return sizeCase{name, func(b *testing.B) (func() error, int) {
			got, next, err := reader.Conversations(ctx, acct, readerID, f, page)
			if err != nil {
				b.Fatal(err)
			}
			checkConversations(b, got, ok)
			if want >= 0 && (len(got) != min(want, 50) || (next != "") != (want > 50)) {
				b.Fatalf("%d conversations, next %q; want %d of %d", len(got), next, min(want, 50), want)
			}
			if want < 0 && len(got) == 0 {
				b.Fatal("no conversation")
			}
			return func() error { _, _, err := reader.Conversations(ctx, acct, readerID, f, page); return err }, len(got)
		}}
	}
	is := func(status string) func(report.Conversation) bool {
		return func(c report.Conversation) bool {
			return c.Status == status && (status != models.ConversationSnoozed || c.SnoozedUntil != nil && c.SnoozedUntil.After(time.Now()))
		}
	}
	open := is(models.ConversationOpen)
	anyRow := func(report.Conversation) bool { return true }
	openF := func(f report.ConversationFilter) report.ConversationFilter {
		f.Status = models.ConversationOpen
		return f
	}
	cases = append(cases,
		list("list-all-api", models.ReaderAPI, report.ConversationFilter{Status: report.StatusAll}, w.all, anyRow),
		list("list-all", si.userA, report.ConversationFilter{Status: report.StatusAll}, w.all, anyRow),
		list("list-open", si.userA, report.ConversationFilter{Status: models.ConversationOpen}, w.status[models.ConversationOpen], open),
		list("list-resolved", si.userA, report.ConversationFilter{Status: models.ConversationResolved}, w.status[models.ConversationResolved], is(models.ConversationResolved)),
		list("list-snoozed", si.userA, report.ConversationFilter{Status: models.ConversationSnoozed}, w.status[models.ConversationSnoozed], is(models.ConversationSnoozed)),
		list("list-unread", si.userA, openF(report.ConversationFilter{Unread: &yes}), w.unreadOpen,
			func(c report.Conversation) bool { return open(c) && c.Unread }),
		list("list-read", si.userA, openF(report.ConversationFilter{Unread: &no}), w.readOpen,
			func(c report.Conversation) bool { return open(c) && !c.Unread }),
		list("list-needs-human", si.userA, openF(report.ConversationFilter{NeedsHuman: &yes}), w.needsHumanOpen,
			func(c report.Conversation) bool { return open(c) && c.NeedsHuman }),
		list("list-failed", si.userA, openF(report.ConversationFilter{Failed: &yes}), w.failedOpen,
			func(c report.Conversation) bool { return open(c) && c.Failed }),
		list("list-mine", si.userA, openF(report.ConversationFilter{Assignee: si.userA}), w.mineOpen,
			func(c report.Conversation) bool { return open(c) && c.Assignee != nil && c.Assignee.UserID == si.userA }),
		list("list-unassigned", si.userA, openF(report.ConversationFilter{Assignee: report.AssigneeNone}), w.unassignedOpen,
			func(c report.Conversation) bool { return open(c) && c.Assignee == nil }),
	)
	// Deep pages: the cursor of the 200th page (or of the last, in a smaller account), reached by
	// following the cursors once; then the page before it through Newer, which must be the 199th.
	deep := map[string]*deepPage{}
	for _, status := range []string{report.StatusAll, models.ConversationOpen} {
		f := report.ConversationFilter{Status: status}
		deep[status] = &deepPage{}
		cases = append(cases, sizeCase{"list-" + status + "-page200", func(b *testing.B) (func() error, int) {
			d := deep[status]
			d.follow(b, acct, si.userA, f)
			p := models.Page{Limit: 50, Cursor: d.cursor}
			got, _, err := reader.Conversations(ctx, acct, si.userA, f, p)
			if err != nil {
				b.Fatal(err)
			}
			checkConversations(b, got, func(c report.Conversation) bool {
				return (status == report.StatusAll || open(c)) && c.LastMessage.ID < d.cursor
			})
			if len(got) == 0 {
				b.Fatal("an empty deep page")
			}
			d.first = got[0].LastMessage.ID
			b.Logf("page %d", d.pages+1)
			return func() error { _, _, err := reader.Conversations(ctx, acct, si.userA, f, p); return err }, len(got)
		}})
	}
	cases = append(cases, sizeCase{"list-newer", func(b *testing.B) (func() error, int) {
		d := deep[report.StatusAll]
		if d.first == "" {
			b.Skip("needs list-all-page200 first")
		}
		f := report.ConversationFilter{Status: report.StatusAll, Newer: d.first}
		got, _, err := reader.Conversations(ctx, acct, si.userA, f, page)
		if err != nil {
			b.Fatal(err)
		}
		checkConversations(b, got, anyRow)
		if ids := lastIDs(got); !slices.Equal(ids, d.before) {
			b.Fatalf("the page before page %d: %v; want %v", d.pages+1, ids, d.before)
		}
		return func() error { _, _, err := reader.Conversations(ctx, acct, si.userA, f, page); return err }, len(got)
	}})
	cases = append(cases, sizeCase{"counts", func(b *testing.B) (func() error, int) {
		got, err := reader.Counts(ctx, acct, si.userA)
		if err != nil {
			b.Fatal(err)
		}
		lo, hi := w.gaveUpSince(time.Now().Add(-report.GaveUpWindow+time.Minute)), w.gaveUpSince(time.Now().Add(-report.GaveUpWindow-time.Minute))
		if got.Unread != w.unreadOpen || got.OpenAlerts != w.openAlerts ||
			got.GaveUp < min(lo, report.MaxGaveUpCount) || got.GaveUp > min(hi, report.MaxGaveUpCount) {
			b.Fatalf("counts %+v; want unread %d, open alerts %d, gave up %d to %d (at most %d)", *got, w.unreadOpen, w.openAlerts, lo, hi, report.MaxGaveUpCount)
		}
		return func() error { _, err := reader.Counts(ctx, acct, si.userA); return err }, 1
	}})
	for _, s := range sizeSearches {
		cases = append(cases, sizeCase{"contacts-" + s.name, func(b *testing.B) (func() error, int) {
			got, _, err := reader.Contacts(ctx, acct, s.q, page)
			if err != nil {
				b.Fatal(err)
			}
			if len(got) == 0 {
				b.Fatalf("%q found no contact", s.q)
			}
			for k, r := range got {
				if !s.match(r.Contact) || k > 0 && r.Contact.ID >= got[k-1].Contact.ID {
					b.Fatalf("%q found %+v at %d (not a match, or out of order)", s.q, *r.Contact, k)
				}
			}
			return func() error { _, _, err := reader.Contacts(ctx, acct, s.q, page); return err }, len(got)
		}})
	}
	for _, s := range sizeSearches {
		cases = append(cases, list("search-"+s.name, si.userA, openF(report.ConversationFilter{Query: s.q}), -1,
			func(c report.Conversation) bool { return open(c) && s.match(c.Contact) }))
	}
	var older string
	cases = append(cases, sizeCase{"conversation", func(b *testing.B) (func() error, int) {
		v, err := reader.ConversationFor(ctx, acct, si.longContact, "", 50)
		if err != nil {
			b.Fatal(err)
		}
		checkMessages(b, v.Messages, 50, "")
		if v.Older == "" || v.Older != v.Messages[0].ID {
			b.Fatalf("older %q, oldest shown %s", v.Older, v.Messages[0].ID)
		}
		older = v.Older
		return func() error { _, err := reader.ConversationFor(ctx, acct, si.longContact, "", 50); return err }, len(v.Messages)
	}}, sizeCase{"conversation-older", func(b *testing.B) (func() error, int) {
		if older == "" {
			b.Skip("needs conversation first")
		}
		v, err := reader.ConversationFor(ctx, acct, si.longContact, older, 50)
		if err != nil {
			b.Fatal(err)
		}
		checkMessages(b, v.Messages, 50, older)
		return func() error { _, err := reader.ConversationFor(ctx, acct, si.longContact, older, 50); return err }, len(v.Messages)
	}})
	cases = append(cases, sizeCase{"campaign-report", func(b *testing.B) (func() error, int) {
		got, err := reader.CampaignReport(ctx, acct, si.campaignID)
		if err != nil {
			b.Fatal(err)
		}
		c := w.campaign
		if got.Added != c.Added || got.Opened != c.Opened || got.Failed != c.Failed || got.Queued != c.Queued ||
			got.Suppressed != c.Suppressed || got.Replied != c.Replied || got.HandedOff != c.HandedOff || len(got.Variants) != 2 {
			b.Fatalf("report %+v\nwant %+v", *got, c)
		}
		return func() error { _, err := reader.CampaignReport(ctx, acct, si.campaignID); return err }, got.Added
	}})
	for _, d := range []struct {
		name, state string
		want        int
	}{{"deliveries", "", w.gaveUp + w.retrying}, {"deliveries-gave-up", report.DeliveryGaveUp, w.gaveUp}, {"deliveries-retrying", report.DeliveryRetrying, w.retrying}} {
		cases = append(cases, sizeCase{d.name, func(b *testing.B) (func() error, int) {
			got, _, err := reader.Deliveries(ctx, acct, d.state, page)
			if err != nil {
				b.Fatal(err)
			}
			if len(got) != min(d.want, 50) {
				b.Fatalf("%d deliveries; want %d", len(got), min(d.want, 50))
			}
			for k, m := range got {
				if m.Direction != models.DirectionOutgoing || m.Status != models.StatusFailed || k > 0 && m.ID >= got[k-1].ID ||
					d.state == report.DeliveryGaveUp && m.NextAttemptAt != nil || d.state == report.DeliveryRetrying && m.NextAttemptAt == nil {
					b.Fatalf("delivery %d: %s %s next %v (not %q, or out of order)", k, m.Direction, m.Status, m.NextAttemptAt, d.state)
				}
			}
			return func() error { _, _, err := reader.Deliveries(ctx, acct, d.state, page); return err }, len(got)
		}})
	}
	cases = append(cases, sizeCase{"delivery-counts", func(b *testing.B) (func() error, int) {
		got, err := reader.DeliveryCounts(ctx, acct)
		if err != nil {
			b.Fatal(err)
		}
		if capped := report.MaxDeliveryCount + 1; got.GaveUp != min(w.gaveUp, capped) || got.Retrying != min(w.retrying, capped) {
			b.Fatalf("delivery counts %+v; want %d and %d (at most %d)", *got, w.gaveUp, w.retrying, capped)
		}
		return func() error { _, err := reader.DeliveryCounts(ctx, acct); return err }, 2
	}})
	return cases
}

// gaveUpSince counts the deliveries that gave up at or after t.
func (w sizeWant) gaveUpSince(t time.Time) int {
	n := 0
	for _, at := range w.gaveUpAt {
		if !at.Before(t) {
			n++
		}
	}
	return n
}

// deepPage is the way to the 200th page of a list, followed once.
type deepPage struct {
	pages  int      // pages followed
	cursor string   // the cursor after them
	before []string // the last of them, as its rows' latest message ids
	first  string   // the deep page's first row's latest message id
}

func (d *deepPage) follow(b *testing.B, acct, readerID string, f report.ConversationFilter) {
	start := time.Now()
	for d.pages < 199 {
		got, next, err := reader.Conversations(context.Background(), acct, readerID, f, models.Page{Limit: 50, Cursor: d.cursor})
		if err != nil {
			b.Fatal(err)
		}
		if next == "" {
			break
		}
		d.pages++
		d.cursor, d.before = next, lastIDs(got)
	}
	if d.cursor == "" {
		b.Fatal("a list of one page")
	}
	b.Logf("followed %d pages in %s", d.pages, time.Since(start).Round(time.Millisecond))
}

func lastIDs(list []report.Conversation) []string {
	ids := make([]string, len(list))
	for k, c := range list {
		ids[k] = c.LastMessage.ID
	}
	return ids
}

// checkConversations fails unless every row passes ok and the rows are newest first.
func checkConversations(b *testing.B, list []report.Conversation, ok func(report.Conversation) bool) {
	b.Helper()
	for k, c := range list {
		if c.Contact == nil || !ok(c) {
			b.Fatalf("row %d: %+v does not belong in the list", k, c)
		}
		if k > 0 && c.LastMessage.ID >= list[k-1].LastMessage.ID {
			b.Fatalf("row %d: not newest first", k)
		}
	}
}

// checkMessages fails unless there are n messages, oldest first, all before the cursor (if any).
func checkMessages(b *testing.B, msgs []models.Message, n int, before string) {
	b.Helper()
	if len(msgs) != n {
		b.Fatalf("%d messages; want %d", len(msgs), n)
	}
	for k, m := range msgs {
		if k > 0 && m.ID <= msgs[k-1].ID || before != "" && m.ID >= before {
			b.Fatalf("message %d (%s) out of order or not before %q", k, m.ID, before)
		}
	}
}
