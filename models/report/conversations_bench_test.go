package report_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"funnelchat/models"
	"funnelchat/models/report"
	"funnelchat/models/testenv"
)

// The conversation list by status at scale (docs/performance.md, "Conversation list by status"):
//
//	TEST_DATABASE_URL=... TEST_REDIS_URL=... go test ./models/report -run '^$' -bench ConversationList -benchtime 200x
//
// on PostgreSQL only. BENCH_SIZE sets the number of contacts (200,000 by default), each with a
// conversation of three messages (incoming, the bot's answer, incoming); BENCH_OPEN_PERCENT and
// BENCH_SNOOZED_PERCENT the shares of open and snoozed conversations (30 and 5 by default; the
// snoozes of odd-numbered contacts have ended, so those are open), the rest resolved, spread evenly over
// the conversations' recency. BENCH_EXPLAIN=1 logs EXPLAIN (ANALYZE, BUFFERS) of each list's queries.

// bigInbox is an account with a large inbox, filled once per run.
type bigInbox struct {
	accountID string
	contacts  int
	fill      time.Duration
	// want counts the conversations of each status now, as they were made.
	want map[string]int
}

var (
	bigOnce sync.Once
	big     *bigInbox
	bigErr  error
)

func benchInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func seedBigInbox(b *testing.B) *bigInbox {
	if !env.Postgres() {
		b.Skip("the conversation list benchmark runs on PostgreSQL (set TEST_DATABASE_URL)")
	}
	bigOnce.Do(func() { big, bigErr = fillBigInbox() })
	if bigErr != nil {
		b.Fatal(bigErr)
	}
	return big
}

func fillBigInbox() (*bigInbox, error) {
	ctx := context.Background()
	db := env.Store.DB()
	n, open, snoozed := benchInt("BENCH_SIZE", 200_000), benchInt("BENCH_OPEN_PERCENT", 30), benchInt("BENCH_SNOOZED_PERCENT", 5)
	if open+snoozed > 100 {
		return nil, fmt.Errorf("BENCH_OPEN_PERCENT %d and BENCH_SNOOZED_PERCENT %d: more than 100", open, snoozed)
	}
	acc, err := env.Store.CreateAccount(ctx, models.NewAccount{Email: testenv.UniqueEmail("big-inbox"), Name: "Big inbox"})
	if err != nil {
		return nil, err
	}
	id := acc.Account.ID
	now := time.Now().UTC()
	start := time.Now()
	// In slices of 20,000 contacts: one statement each stays within the connection's read timeout.
	// Statuses by i % 100: open below `open`, snoozed for the next `snoozed` (even i until tomorrow,
	// odd i until yesterday: open again), resolved above.
	const slice = 20_000
	for from := 0; from < n; from += slice {
		to := min(from+slice, n)
		if _, err := db.NewRaw(`
INSERT INTO contacts (id, account_id, first_name, last_name, phone, origin, created_at, updated_at,
    conversation_status, snoozed_until, conversation_status_at)
SELECT ? || lpad(i::text, 7, '0'), ?, 'Contact', i::text, '+1415' || lpad(i::text, 7, '0'), 'api', ?, ?,
    CASE WHEN i % 100 < ? THEN 'open' WHEN i % 100 < ? THEN 'snoozed' ELSE 'resolved' END,
    CASE WHEN i % 100 >= ? AND i % 100 < ? THEN ?::timestamptz + (CASE WHEN i % 2 = 0 THEN 1 ELSE -1 END) * interval '1 day' END,
    CASE WHEN i % 100 >= ? THEN ?::timestamptz END
FROM generate_series(?, ? - 1) AS i`,
			"ct_big_"+id+"_", id, now.Add(-40*24*time.Hour), now, open, open+snoozed, open, open+snoozed, now, open, now, from, to).Exec(ctx); err != nil {
			return nil, fmt.Errorf("fill contacts: %w", err)
		}
		// Three rounds of messages: each round writes to every contact once, in an order that 7919 (a
		// prime that divides no BENCH_SIZE one would choose) scatters, so recency has nothing to do with
		// status. Message ids grow with time, as ULIDs do.
		if _, err := db.NewRaw(`
INSERT INTO messages (id, account_id, contact_id, direction, channel, transport, message_type, body, from_id, to_id,
    author, status, created_at)
SELECT ? || lpad((r * ? + (i::bigint * 7919) % ?)::text, 9, '0'), ?, ? || lpad(i::text, 7, '0'),
    CASE WHEN r = 1 THEN 'outgoing' ELSE 'incoming' END, 'web', 'custom', 'text',
    CASE WHEN r = 1 THEN 'We ship across Europe in 3 to 5 business days.' ELSE 'Hello, is my order on its way' END,
    CASE WHEN r = 1 THEN '' ELSE 'web-' || i END, CASE WHEN r = 1 THEN 'web-' || i ELSE 'shop' END,
    CASE WHEN r = 1 THEN 'bot' ELSE '' END, CASE WHEN r = 1 THEN 'sent' ELSE 'received' END,
    ?::timestamptz + (r * ? + (i::bigint * 7919) % ?) * interval '10 milliseconds'
FROM generate_series(?, ? - 1) AS i, generate_series(0, 2) AS r`,
			testenv.IDPrefix("msg_", now)+"big_"+id+"_", n, n, id, "ct_big_"+id+"_", now.Add(-30*24*time.Hour), n, n, from, to).Exec(ctx); err != nil {
			return nil, fmt.Errorf("fill messages: %w", err)
		}
	}
	// As autovacuum would have by the time anyone reads an inbox this size.
	for _, table := range []string{"contacts", "messages"} {
		if _, err := db.ExecContext(ctx, "VACUUM ANALYZE "+table); err != nil {
			return nil, err
		}
	}
	bi := &bigInbox{accountID: id, contacts: n, fill: time.Since(start), want: map[string]int{}}
	for i := range n {
		switch m := i % 100; {
		case m < open, m < open+snoozed && i%2 == 1:
			bi.want[models.ConversationOpen]++
		case m < open+snoozed:
			bi.want[models.ConversationSnoozed]++
		default:
			bi.want[models.ConversationResolved]++
		}
	}
	return bi, nil
}

// queryLog keeps the statements the reader runs while on, for EXPLAIN, and the settings (SET LOCAL)
// it runs them with.
type queryLog struct {
	on       atomic.Bool
	mu       sync.Mutex
	queries  []string
	settings []string
}

func (l *queryLog) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context { return ctx }

func (l *queryLog) AfterQuery(_ context.Context, e *bun.QueryEvent) {
	q := strings.TrimSpace(e.Query)
	if !l.on.Load() {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case strings.HasPrefix(q, "SELECT") || strings.HasPrefix(q, "WITH"):
		l.queries = append(l.queries, e.Query)
	case strings.HasPrefix(q, "SET LOCAL"):
		l.settings = append(l.settings, e.Query)
	}
}

var (
	explainOnce sync.Once
	explainLog  = &queryLog{}
)

// explain logs EXPLAIN (ANALYZE, BUFFERS) of every query of one read of the list when BENCH_EXPLAIN
// is set.
func explain(b *testing.B, read func() error) { explainWhen(b, "BENCH_EXPLAIN", read) }

// explainWhen logs EXPLAIN (ANALYZE, BUFFERS) of every query (SELECT or WITH) of one read when the
// environment variable is set.
func explainWhen(b *testing.B, variable string, read func() error) {
	if os.Getenv(variable) == "" {
		return
	}
	explainOnce.Do(func() { env.Store.DB().AddQueryHook(explainLog) })
	explainLog.mu.Lock()
	explainLog.queries, explainLog.settings = nil, nil
	explainLog.mu.Unlock()
	explainLog.on.Store(true)
	err := read()
	explainLog.on.Store(false)
	if err != nil {
		b.Fatal(err)
	}
	for _, q := range explainLog.queries {
		var lines []string
		// As the reads run them: JIT off (report.Conversations), and the settings the read made
		// (report.CampaignReport's work_mem).
		err := env.Store.DB().RunInTx(context.Background(), nil, func(ctx context.Context, tx bun.Tx) error {
			for _, s := range append([]string{"SET LOCAL jit = off"}, explainLog.settings...) {
				if _, err := tx.ExecContext(ctx, s); err != nil {
					return err
				}
			}
			return tx.NewRaw("EXPLAIN (ANALYZE, BUFFERS) "+q).Scan(ctx, &lines)
		})
		if err != nil {
			b.Fatalf("explain %s: %v", q, err)
		}
		b.Logf("%s\n%s", q, strings.Join(lines, "\n"))
	}
}

// BenchmarkConversationList times the conversation list's first page (GET /v1/conversations, 50 a
// page) by status over the big inbox, and with every status (the list as it was before statuses),
// after checking what it lists, and reports the median and the 95th percentile of the reads.
func BenchmarkConversationList(b *testing.B) {
	bi := seedBigInbox(b)
	b.Logf("%d contacts with 3 messages each filled in %s; conversations by status now: %v", bi.contacts, bi.fill.Round(time.Millisecond), bi.want)
	ctx := context.Background()
	// all is the list as it was before statuses: the baseline of what the filter costs.
	for _, status := range []string{models.ConversationOpen, models.ConversationResolved, models.ConversationSnoozed, report.StatusAll} {
		b.Run(status, func(b *testing.B) {
			f := report.ConversationFilter{Status: status}
			page := models.Page{Limit: 50}
			list, next, err := reader.Conversations(ctx, bi.accountID, models.ReaderAPI, f, page)
			if err != nil {
				b.Fatal(err)
			}
			n := bi.want[status]
			if status == report.StatusAll {
				n = bi.contacts
			}
			if want := min(n, 50); len(list) != want || (next == "") != (n <= 50) {
				b.Fatalf("%d conversations, next %q; want %d", len(list), next, want)
			}
			for _, c := range list {
				if c.Status != status && status != report.StatusAll {
					b.Fatalf("a %s conversation in the %s list", c.Status, status)
				}
			}
			if !slices.IsSortedFunc(list, func(x, y report.Conversation) int { return strings.Compare(y.LastMessage.ID, x.LastMessage.ID) }) {
				b.Fatal("not newest first")
			}
			explain(b, func() error {
				_, _, err := reader.Conversations(ctx, bi.accountID, models.ReaderAPI, f, page)
				return err
			})
			var took []time.Duration
			b.ResetTimer()
			for b.Loop() {
				start := time.Now()
				if _, _, err := reader.Conversations(ctx, bi.accountID, models.ReaderAPI, f, page); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(start))
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(took[len(took)*95/100].Microseconds())/1000, "p95-ms")
		})
	}
}
