package models_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/uptrace/bun/driver/pgdriver"

	"funnelchat/models"
)

// TestConnectionLimitIsUnavailable: a PostgreSQL that refuses a connection because a limit is reached
// ("sorry, too many clients already", SQLSTATE 53300) is unavailable for a moment, not broken: the api
// answers 503 and the worker waits it out. A role with CONNECTION LIMIT 0 gets the same refusal from
// any server; a plain SQL error stays a failure.
func TestConnectionLimitIsUnavailable(t *testing.T) {
	if !env.Postgres() {
		t.Skip("a connection limit is PostgreSQL's; the PostgreSQL pass runs this test")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	role := fmt.Sprintf("limited_%d", time.Now().UnixNano())
	if _, err := env.Store.DB().ExecContext(ctx, "CREATE ROLE "+role+" LOGIN PASSWORD 'limited' CONNECTION LIMIT 0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = env.Store.DB().ExecContext(context.Background(), "DROP ROLE IF EXISTS "+role) })
	u, err := url.Parse(env.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(role, "limited")
	limited, err := models.OpenPostgres(u.String(), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer limited.Close()
	err = limited.DB().PingContext(ctx)
	var pgErr pgdriver.Error
	if !errors.As(err, &pgErr) || pgErr.Field('C') != "53300" {
		t.Fatalf("connecting over the role's limit: %v, want SQLSTATE 53300", err)
	}
	if !models.IsUnavailable(err) {
		t.Errorf("IsUnavailable(%v) = false: the api would answer 500 and the worker spend retries", err)
	}
	_, err = env.Store.DB().ExecContext(ctx, "SELEC 1")
	if err == nil || models.IsUnavailable(err) {
		t.Errorf("a syntax error: %v, IsUnavailable %v; want an error that is not unavailable", err, models.IsUnavailable(err))
	}
}
