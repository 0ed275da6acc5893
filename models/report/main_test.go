package report_test

import (
	"os"
	"testing"

	"funnelchat/models/report"
	"funnelchat/models/testenv"
)

// env is the package's own database and Redis, as in package models' tests: PostgreSQL and Redis
// when TEST_DATABASE_URL and TEST_REDIS_URL are set, SQLite and miniredis otherwise.
var env *testenv.Env

// reader runs the package's reads over env.Store.
var reader *report.Reader

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, &env, func() error {
		reader = report.New(env.Store)
		return nil
	}))
}
