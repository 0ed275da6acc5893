package models_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"funnelchat/models"
)

// Helpers for the tests that provoke a race deterministically on PostgreSQL: the test holds a
// transaction open, lets the code under test run into its locks, then ends it.

// heldTx is a transaction the test holds open, its backend's pid, and its database.
type heldTx struct {
	bun.Tx
	pid int
	db  *bun.DB
}

// holdTx begins a transaction on the store's PostgreSQL database; it is rolled back when the test ends
// unless the test ended it.
func holdTx(t testing.TB, s *models.Store) *heldTx {
	t.Helper()
	ctx := context.Background()
	tx, err := s.DB().BeginTx(ctx, &sql.TxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback() })
	h := &heldTx{Tx: tx, db: s.DB()}
	if err := tx.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&h.pid); err != nil {
		t.Fatal(err)
	}
	return h
}

// waitBlocked waits until n backends wait for a lock the held transaction holds, and reports true; or
// until done is closed first (the code under test did not wait for the lock), and reports false.
func (h *heldTx) waitBlocked(t testing.TB, n int, done <-chan struct{}) bool {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var blocked int
		err := h.db.QueryRowContext(context.Background(),
			"SELECT count(*) FROM pg_stat_activity WHERE ? = ANY(pg_blocking_pids(pid))", h.pid).Scan(&blocked)
		if err != nil {
			t.Fatal(err)
		}
		if blocked >= n {
			return true
		}
		select {
		case <-done:
			return false
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d backends wait for the held transaction's locks after 20 s", blocked, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
