package report_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"funnelchat/models"
	"funnelchat/models/testenv"
)

// BenchmarkContactSearch measures the contact search (Reader.Contacts, the first page of 50) over one
// account of CONTACT_SEARCH_SIZE contacts (200,000 by default) on PostgreSQL, for each kind of query,
// and reports each kind's p50 and p95 in milliseconds. It runs only when asked:
//
//	TEST_DATABASE_URL=... TEST_REDIS_URL=... go test ./models/report -run XXX -bench ContactSearch
//
// The contacts are made by the database itself (INSERT ... SELECT over generate_series), a third of
// them with a sender id, in one statement per table, then VACUUM ANALYZEd (as autovacuum leaves a table at rest); the log has the fill's time and
// each query's EXPLAIN ANALYZE (docs/performance.md, "Contact search").
func BenchmarkContactSearch(b *testing.B) {
	if !env.Postgres() {
		b.Skip("the contact search benchmark runs on PostgreSQL (TEST_DATABASE_URL)")
	}
	size := 200_000
	if v := os.Getenv("CONTACT_SEARCH_SIZE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1000 {
			b.Fatalf("CONTACT_SEARCH_SIZE=%q: want a number of at least 1000", v)
		}
		size = n
	}
	ctx := context.Background()
	db := env.Store.DB()
	accountID := testenv.NewAccount(b, env.Store, "").Account.ID
	start := time.Now()
	// In statements of 25,000 rows: one statement must end within the driver's read timeout.
	fill := func(account string, n int, idPrefix string) {
		b.Helper()
		for lo := 1; lo <= n; lo += 25_000 {
			fillRange(b, account, idPrefix, lo, min(n, lo+24_999), n)
		}
	}
	suffix := strings.ToLower(accountID[len(accountID)-8:])
	fill(accountID, size, "ct_bench_"+suffix+"_")
	// A few thousand contacts of another account, so that account_id is not the whole table.
	fill(testenv.NewAccount(b, env.Store, "").Account.ID, 5000, "ct_bother_"+suffix+"_")
	filled := time.Since(start)
	// What autovacuum does to a table at rest: statistics, and the visibility map that lets the
	// search read a page's ids from its indexes alone.
	testenv.Exec(b, env.Store, "VACUUM ANALYZE contacts")
	testenv.Exec(b, env.Store, "VACUUM ANALYZE contact_identities")
	b.Logf("filled %d contacts (a third with a sender id) in %s; VACUUM ANALYZE took %s", size, filled.Round(time.Millisecond), (time.Since(start) - filled).Round(time.Millisecond))

	// A sender id that exists (the account's first in order); the search gives its first 8 characters.
	var sender string
	if err := db.NewSelect().TableExpr("contact_identities").ColumnExpr("external_id").Where("account_id = ?", accountID).
		OrderExpr("external_id").Limit(1).Scan(ctx, &sender); err != nil {
		b.Fatal(err)
	}
	kinds := []struct{ name, q string }{
		{"blank", ""},
		{"one_letter", "m"},
		{"first_name", "sof"},
		{"full_name", "maria sil"},
		{"last_name", "tanak"},
		{"email", "user1234"},
		{"phone_e164", "+1415000"},
		{"phone_national", "(415) 000"},
		{"sender_id", sender[:8]},
		{"no_match", "zzzz"},
	}
	for _, k := range kinds {
		var plan []string
		if err := db.NewRaw("EXPLAIN (ANALYZE, BUFFERS) "+reader.ContactsSQL(accountID, k.q, 50)).Scan(ctx, &plan); err != nil {
			b.Fatal(err)
		}
		b.Logf("EXPLAIN ANALYZE, q=%q:\n%s", k.q, strings.Join(plan, "\n"))
	}
	for _, k := range kinds {
		b.Run(k.name, func(b *testing.B) {
			var took []time.Duration
			found := 0
			for b.Loop() {
				t0 := time.Now()
				rows, _, err := reader.Contacts(ctx, accountID, k.q, models.Page{Limit: 50})
				took = append(took, time.Since(t0))
				if err != nil {
					b.Fatal(err)
				}
				found = len(rows)
			}
			slices.Sort(took)
			pct := func(p float64) float64 {
				return float64(took[min(len(took)-1, int(p*float64(len(took))))].Microseconds()) / 1000
			}
			b.ReportMetric(pct(0.50), "p50-ms")
			b.ReportMetric(pct(0.95), "p95-ms")
			b.ReportMetric(float64(found), "rows")
		})
	}
}

// fillRange inserts the contacts lo..hi (of n) of a benchmark account, with a sender id for every
// third. Names come from 20 first and 20 last names, emails are userN@exampleK.com (none for every
// fourth), phones spread over 800 area codes (unique: the area code and the rest are i's remainder and
// quotient).
func fillRange(b *testing.B, account, idPrefix string, lo, hi, n int) {
	b.Helper()
	testenv.Exec(b, env.Store, `
INSERT INTO contacts (id, account_id, first_name, last_name, phone, email, origin, created_at, updated_at)
SELECT ? || lpad(i::text, 8, '0'), ?,
       (ARRAY['Maria','James','Ana','John','Sofia','Wei','Fatima','Lucas','Emma','Noah','Olivia','Liam','Aisha','Mateo','Yuki','Omar','Lena','Ivan','Chloe','Diego'])[1 + i % 20],
       (ARRAY['Silva','Smith','Garcia','Chen','Khan','Müller','Rossi','Dubois','Kim','Novak','Lopez','Brown','Ivanova','Tanaka','Haddad','Jones','Costa','Nguyen','Evans','Martin'])[1 + (i / 20) % 20],
       '+1' || (200 + i % 800)::text || lpad((i / 800)::text, 7, '0'),
       CASE WHEN i % 4 <> 0 THEN 'user' || i::text || '@example' || (i % 7)::text || '.com' END,
       CASE WHEN i % 3 = 0 THEN 'channel' ELSE 'api' END,
       now() - make_interval(secs => ? - i), now()
FROM generate_series(?, ?) AS i`, idPrefix, account, n, lo, hi)
	testenv.Exec(b, env.Store, `
INSERT INTO contact_identities (account_id, external_id, contact_id, created_at)
SELECT ?, 'web-' || substr(md5(i::text), 1, 12), ? || lpad(i::text, 8, '0'), now()
FROM generate_series(?, ?) AS i WHERE i % 3 = 0`, account, idPrefix, lo, hi)
}
