package models

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"
	"github.com/uptrace/bun/driver/pgdriver"
)

// IsUnavailable reports whether err means the database or Redis could not be reached in time (down,
// restarting, or too slow), or a domain error UNAVAILABLE says so (a closing store's ingest), as
// opposed to a bug or a refusal: the same request or task may simply be tried again. The api answers
// such errors with 503 UNAVAILABLE; the worker retries such tasks without spending their retry budget.
func IsUnavailable(err error) bool {
	var netErr net.Error
	var pgErr pgdriver.Error
	switch {
	case ErrorCode(err) == CodeUnavailable,
		errors.As(err, &netErr),
		errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, driver.ErrBadConn),
		errors.Is(err, sql.ErrConnDone),
		errors.Is(err, redis.ErrClosed),
		errors.Is(err, redis.ErrPoolTimeout),
		// Redis failing over: a Redis Cluster that lost a master answers CLUSTERDOWN until a replica
		// takes over, a node whose slots moved MOVED or ASK (which go-redis follows, up to a point),
		// TRYAGAIN while a slot migrates; a replica answers MASTERDOWN or READONLY, and a restarted
		// node LOADING.
		redis.IsClusterDownError(err),
		redis.IsTryAgainError(err),
		redis.IsMasterDownError(err),
		redis.IsReadOnlyError(err),
		redis.IsLoadingError(err),
		isRedirect(err):
		return true
	case errors.As(err, &pgErr):
		// Class 08 is "connection exception"; 57P0x is a server shutting down or starting up; class 53
		// is "insufficient resources", above all 53300, a server (or role, or database) at its
		// connection limit: the processes' pools together asked for more than max_connections, and a
		// connection freed elsewhere lets the retry in.
		// 40P01 and 40001 are a deadlock or a serialization failure that outlasted inTx's runs: the
		// same request a moment later succeeds.
		// A row with no partition to go to (23514 "no partition of relation ... found for row"): the
		// partitions ahead were not made (README, "Partitioning"); the worker's hourly task or the next
		// admin migrate makes them, and the client's retry then stores the message.
		state := pgErr.Field('C')
		return strings.HasPrefix(state, "08") || strings.HasPrefix(state, "57P") || strings.HasPrefix(state, "53") ||
			state == "40P01" || state == "40001" ||
			(state == "23514" && strings.HasPrefix(pgErr.Field('M'), "no partition of relation"))
	}
	return false
}

func isRedirect(err error) bool {
	_, moved := redis.IsMovedError(err)
	_, ask := redis.IsAskError(err)
	return moved || ask
}
