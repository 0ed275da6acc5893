package models

import (
	"context"
	"database/sql/driver"
	"errors"

	"github.com/uptrace/bun/driver/pgdriver"
)

// pgdriver closes a connection whose plain query failed in a way that leaves the protocol out of step
// (a read that timed out, a broken read), but not one whose prepared statement did. Such a connection
// went back to the pool with the statement's answer still to come: PostgreSQL runs a statement whose
// client gave up (a lock it waited for is released, say) and sends the answer anyway. The next query
// on that connection read it instead of its own, so the connection stayed one answer behind: a
// prepared ingest answered with the previous message's id, and a plain query failed with "pgdriver:
// newRows: unexpected message '2'", which the api answered 500 (a hello right after an ingest that
// timed out, models/prepared_test.go). The prepared statements (prepared.go) are the hot paths of the
// api and the worker, so every PostgreSQL connection goes through pgConn, which closes its connection
// as pgdriver does for plain queries; database/sql then drops it (driver.Validator).

// pgConnector makes the pool's connections pgConns.
type pgConnector struct{ driver.Connector }

func (c pgConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	cn, ok := conn.(*pgdriver.Conn)
	if !ok {
		return conn, nil
	}
	return &pgConn{Conn: cn}, nil
}

// pgConn is a pgdriver connection whose prepared statements close it on a failure that is not
// PostgreSQL's answer.
type pgConn struct{ *pgdriver.Conn }

func (c *pgConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *pgConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	stmt, err := c.Conn.PrepareContext(ctx, query)
	if err != nil {
		return nil, c.closeOnLostStep(err)
	}
	return &pgStmt{Stmt: stmt, conn: c}, nil
}

// closeOnLostStep closes the connection unless err is an error PostgreSQL answered: pgdriver reads
// such an answer through to the end (ReadyForQuery), so the connection is still in step.
func (c *pgConn) closeOnLostStep(err error) error {
	var pgErr pgdriver.Error
	if err != nil && !errors.As(err, &pgErr) {
		_ = c.Conn.Close()
	}
	return err
}

// pgStmt is a prepared statement of a pgConn.
type pgStmt struct {
	driver.Stmt
	conn *pgConn
}

func (s *pgStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	res, err := s.Stmt.(driver.StmtExecContext).ExecContext(ctx, args)
	return res, s.conn.closeOnLostStep(err)
}

func (s *pgStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	rows, err := s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
	return rows, s.conn.closeOnLostStep(err)
}

// Close releases the statement on the server; a closed connection took it with it (pgdriver would
// write to the closed connection and log the failure).
func (s *pgStmt) Close() error {
	if !s.conn.IsValid() {
		return nil
	}
	return s.Stmt.Close()
}
