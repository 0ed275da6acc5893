package main_test

import (
	"net/url"
	"testing"
)

// TestPostgresOutageUnderLoadLosesNothing cuts the api's and the worker's PostgreSQL for 10 s while
// clients keep posting incoming messages: a proxy between them and the database drops every session
// and refuses new ones, as a restarting server does, then lets them through again. The incoming
// endpoint answers 503 meanwhile (it cannot store), the worker's tasks wait the outage out without
// spending their retries (with WEBHOOK_RETRY_SCHEDULE at four 1 s retries, a delivery that counted its
// failures would be archived long before the database came back), and every message retried to a 200
// ends with exactly one reply.
func TestPostgresOutageUnderLoadLosesNothing(t *testing.T) {
	t.Parallel()
	if !env.Postgres() {
		t.Skip("in standalone mode the database is SQLite in-process; the PostgreSQL pass runs this test")
	}
	dbURL, store := ownDatabase(t)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newCutProxy(t, u.Host)
	u.Host = proxy.Addr()
	outageUnderLoad(t, "pg-outage@example.com",
		[]string{"DATABASE_URL=" + u.String(), "REDIS_URL=" + claimRedisDB(t)}, store,
		fault{down: func(*deployment) { proxy.Cut() }, up: func(*deployment) { proxy.Restore() }, answers503: true})
}
