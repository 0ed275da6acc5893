package models

import (
	"context"
	"database/sql"
	"fmt"
	"sync"

	"github.com/uptrace/bun"
)

// Prepared statements for the hot queries on PostgreSQL (the worker's, and the api's ingest). bun
// writes every argument into the SQL text, so PostgreSQL parses and plans each query anew, and for
// these queries planning costs more than running them: MessageForWork's three-table join runs 3,300
// times a second unprepared and 16,700 prepared (pgbench -M simple vs -M prepared, 4 clients, on the
// 2-core machine of README "Performance"), and planning was the largest part of PostgreSQL's CPU in
// an end-to-end load run.
// SQLite keeps bun's plain queries.

// statements holds a Store's prepared statements by name. database/sql prepares each on every pooled
// connection the first time it runs there, and again on a replacement after an outage.
type statements struct {
	mu     sync.Mutex
	byName map[string]*sql.Stmt
}

// prepared returns the statement called name, preparing text (with $1.. placeholders) on first use. A
// failure is not remembered, so a statement that could not be prepared during an outage is prepared
// again once the database is back.
func (s *Store) prepared(ctx context.Context, name string, text func() string) (*sql.Stmt, error) {
	s.stmts.mu.Lock()
	defer s.stmts.mu.Unlock()
	if stmt, ok := s.stmts.byName[name]; ok {
		return stmt, nil
	}
	stmt, err := s.db.DB.PrepareContext(ctx, text())
	if err != nil {
		return nil, fmt.Errorf("prepare %s: %w", name, err)
	}
	if s.stmts.byName == nil {
		s.stmts.byName = map[string]*sql.Stmt{}
	}
	s.stmts.byName[name] = stmt
	return stmt, nil
}

// closeStatements releases the prepared statements (Close).
func (s *Store) closeStatements() {
	s.stmts.mu.Lock()
	defer s.stmts.mu.Unlock()
	for _, stmt := range s.stmts.byName {
		stmt.Close()
	}
	s.stmts.byName = nil
}

// preparedConnFor is the connection a hot bun query runs on: on PostgreSQL the statement called name,
// prepared from text (the same query with $n placeholders) and run with args; on SQLite the database.
func (s *Store) preparedConnFor(ctx context.Context, name string, text func() string, args ...any) (bun.IConn, error) {
	if s.IsSQLite() {
		return s.db, nil
	}
	stmt, err := s.prepared(ctx, name, text)
	if err != nil {
		return nil, err
	}
	return preparedConn{stmt: stmt, args: args}, nil
}

// preparedConn lets a bun query run as a prepared statement while bun still scans the rows (including
// joined relations) into its model: bun hands its formatted SQL to this connection, which runs stmt
// with args instead. stmt must be prepared from the same bun query with $n placeholders in place of
// the arguments, so that its columns are exactly those bun expects.
type preparedConn struct {
	stmt *sql.Stmt
	args []any
}

func (c preparedConn) QueryContext(ctx context.Context, _ string, _ ...any) (*sql.Rows, error) {
	return c.stmt.QueryContext(ctx, c.args...)
}

func (c preparedConn) ExecContext(ctx context.Context, _ string, _ ...any) (sql.Result, error) {
	return c.stmt.ExecContext(ctx, c.args...)
}

func (c preparedConn) QueryRowContext(ctx context.Context, _ string, _ ...any) *sql.Row {
	return c.stmt.QueryRowContext(ctx, c.args...)
}
