package models_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"funnelchat/models"
)

// TestTimedOutStatementLeavesNoAnswerBehind: a prepared statement that times out (here the ingest of an
// incoming message, waiting for its sender's contact row, which the test holds) fails its own caller
// and nothing else. PostgreSQL still runs it once the row is free and sends its answer; left on the
// pooled connection, that answer would be read by the next query there instead of its own: the next
// ingest would answer with the previous message's id, and a plain query would fail with "unexpected
// message" (which the api answers 500).
func TestTimedOutStatementLeavesNoAnswerBehind(t *testing.T) {
	if !env.Postgres() {
		t.Skip("prepared statements are PostgreSQL's (SQLite runs bun's plain queries)")
	}
	ctx := context.Background()
	// One connection, so that the queries after the timeout run where it happened.
	store, err := models.OpenPostgres(env.DatabaseURL, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	acc := newAccount(t).Account
	msg := func(sid string) []models.IncomingInput {
		in := models.IncomingInput{ExternalID: sid, FromID: "held-visitor", ToID: "business", Body: "hello"}
		if err := in.Validate(1 << 20); err != nil {
			t.Fatal(err)
		}
		return []models.IncomingInput{in}
	}
	first, err := store.IngestForTest(ctx, acc.ID, msg("held-1"), true)
	if err != nil {
		t.Fatal(err)
	}

	// The test holds the sender's contact row: the next message's insert waits for it (its foreign key).
	tx, err := env.Store.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "SELECT id FROM contacts WHERE id = ? FOR UPDATE", first[0].ContactID); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = store.IngestForTest(short, acc.ID, msg("held-2"), true)
	cancel()
	if !models.IsUnavailable(err) {
		t.Fatalf("ingest while the sender's contact is held: %v, want a timeout (unavailable)", err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	// Once the row is free the server stores held-2 after all, and its answer goes out on the wire.
	for deadline := time.Now().Add(10 * time.Second); ; {
		n, err := env.Store.DB().NewSelect().Table("messages").Where("account_id = ? AND external_id = ?", acc.ID, "held-2").Count(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("held-2 was not stored after the contact was released")
		}
		time.Sleep(20 * time.Millisecond)
	}

	got, err := store.IngestForTest(ctx, acc.ID, msg("held-3"), true)
	if err != nil {
		t.Fatalf("the ingest after the timeout: %v", err)
	}
	m, err := env.Store.MessageByID(ctx, acc.ID, got[0].MessageID)
	if err != nil {
		t.Fatal(err)
	}
	if m.ExternalID == nil || *m.ExternalID != "held-3" || got[0].Duplicate {
		t.Fatalf("the ingest of held-3 answered message %s (messageSid %v, duplicate %v): the answer of another statement",
			m.ID, derefString(m.ExternalID), got[0].Duplicate)
	}
	if _, err := store.ComplianceSettings(ctx, acc.ID); err != nil {
		t.Fatalf("a plain query after the timeout: %v", err)
	}
}

func derefString(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

// MessageForWork's prepared statement looks up the message's contact and account by their primary
// keys whatever the tables' sizes when its connection first runs it: on a new database (every table
// empty and never analyzed), bun's plain joins were planned as a hash join over every contact and every
// account, and the connection kept that plan as the tables grew.
func TestMessageForWorkProbesByKeyOnANewDatabase(t *testing.T) {
	if !env.Postgres() {
		t.Skip("prepared statements are PostgreSQL's (SQLite runs bun's plain queries)")
	}
	store := env.FreshStore(t)
	for _, tc := range []struct {
		name, params, text, execute string
		want                        []string
	}{
		// (The message itself is found by its partition's key: its id prunes the others.)
		{"MessageForWork", "text", store.MessageForWorkSQLForTest(), "'msg_x'", nil},
		{"MessagesForWork", "jsonb", store.MessagesForWorkSQLForTest(), `'["msg_x", "msg_y"]'`, []string{"Index Scan using messages_legacy_pkey"}},
	} {
		text := genericPlan(t, store, tc.params, tc.text, tc.execute)
		for _, want := range append(tc.want, "Index Scan using contacts_pkey", "Index Scan using accounts_pkey") {
			if !strings.Contains(text, want) {
				t.Errorf("%s: the plan does not use %q:\n%s", tc.name, want, text)
			}
		}
		if strings.Contains(text, "Hash Join") || strings.Contains(text, "Seq Scan") {
			t.Errorf("%s: the plan hashes or scans a table:\n%s", tc.name, text)
		}
	}
}

// genericPlan prepares text, whose parameters are of the types params, on a connection of store that
// keeps generic plans (as the Store's own do), and returns the plan of its execution with the
// arguments execute.
func genericPlan(t *testing.T, store *models.Store, params, text, execute string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := store.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SET plan_cache_mode = force_generic_plan"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "PREPARE plan_under_test("+params+") AS "+text); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(ctx, "DEALLOCATE plan_under_test")
	rows, err := conn.QueryContext(ctx, "EXPLAIN EXECUTE plan_under_test("+execute+")")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, line)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, "\n")
}
