package main_test

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/uptrace/bun/driver/pgdriver"

	"funnelchat/models"
	"funnelchat/models/testenv"
)

// The process tests spend most of their time waiting: for a killed worker's task lease to run out,
// for Sentinel to fail over, for a retry schedule. So they run side by side (t.Parallel), and a test
// that runs beside others has backends of its own: a deployment's worker sweeps the whole database and
// takes tasks from the whole Redis database, and would otherwise do another test's work, hiding whether
// the test's own processes recovered it.

// defaultParallel is how many process tests run at once unless -test.parallel is given: more than the
// two cores, since the tests mostly wait.
const defaultParallel = 4

// raiseParallel sets -test.parallel to defaultParallel when the command line did not set it.
func raiseParallel() {
	if !flag.Parsed() {
		flag.Parse()
	}
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", fmt.Sprint(defaultParallel))
	}
}

// ownBackends gives a PostgreSQL test a database and a Redis database of its own: the DATABASE_URL and
// REDIS_URL variables of its processes, and a store on the (migrated) database for the test's own reads.
func ownBackends(t *testing.T) ([]string, *models.Store) {
	t.Helper()
	dbURL, store := ownDatabase(t)
	return []string{"DATABASE_URL=" + dbURL, "REDIS_URL=" + claimRedisDB(t)}, store
}

// ownDatabase is a new, migrated PostgreSQL database for one test, with a store on it; both go when the
// test ends.
func ownDatabase(t *testing.T) (string, *models.Store) {
	t.Helper()
	dbURL := freshDatabase(t)
	store, err := models.OpenPostgres(dbURL, 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := store.Migrate(ctx); err != nil {
		t.Fatalf("migrate %s: %v", dbURL, err)
	}
	return dbURL, store
}

// freshDatabase creates a PostgreSQL database for one test on TEST_DATABASE_URL's server, dropped when
// the test ends, and returns its URL (migrated by the caller with admin migrate).
func freshDatabase(t *testing.T) string {
	t.Helper()
	adminURL := os.Getenv("TEST_DATABASE_URL")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(adminURL)))
	defer conn.Close()
	name := "funnelchat_secrets_" + randomText()
	if _, err := conn.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(adminURL)))
		defer conn.Close()
		if _, err := conn.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Logf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(adminURL)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// claimRedisDB claims a free Redis database number on TEST_REDIS_URL's server for one test, as
// models/testenv claims the package's (testenv.ClaimRedisDB), and empties it when the test ends: queued
// tasks of these processes, which use a database of their own, must not reach the package's other
// workers, nor theirs these.
func claimRedisDB(t *testing.T) string {
	t.Helper()
	_, dbURL, release, err := testenv.ClaimRedisDB(context.Background(), os.Getenv("TEST_REDIS_URL"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release)
	return dbURL
}
