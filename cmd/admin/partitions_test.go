package main

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"funnelchat/config"
	"funnelchat/jobs"
	"funnelchat/models"
	"funnelchat/models/testenv"
)

// partitionRE reads a monthly partition's bounds as PostgreSQL prints them.
var partitionRE = regexp.MustCompile(`^FOR VALUES FROM \((MINVALUE|'[^']*')\) TO \((MAXVALUE|'[^']*')\)$`)

// monthsCovered fails the test unless every month from now's through models.PartitionMonthsAhead
// months later has exactly one partition of table that holds it whole.
func monthsCovered(t *testing.T, store *models.Store, table string, now time.Time) {
	t.Helper()
	var parts []struct {
		Name  string `bun:"name"`
		Bound string `bun:"bound"`
	}
	if err := store.DB().NewRaw(`SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
		FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid WHERE i.inhparent = to_regclass(?)`, table).
		Scan(context.Background(), &parts); err != nil {
		t.Fatal(err)
	}
	prefix := map[string]string{"messages": "msg_", "consent_events": "cns_"}[table]
	first := time.Date(now.UTC().Year(), now.UTC().Month(), 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i <= models.PartitionMonthsAhead; i++ {
		month := first.AddDate(0, i, 0)
		lo, hi := testenv.IDPrefix(prefix, month), testenv.IDPrefix(prefix, month.AddDate(0, 1, 0))
		var holding []string
		for _, p := range parts {
			m := partitionRE.FindStringSubmatch(p.Bound)
			if m == nil {
				t.Fatalf("partition %s: bounds %q", p.Name, p.Bound)
			}
			plo, phi := m[1], m[2]
			if (plo == "MINVALUE" || plo <= "'"+lo+"'") && (phi == "MAXVALUE" || phi >= "'"+hi+"'") {
				holding = append(holding, p.Name)
			}
		}
		if len(holding) != 1 {
			t.Errorf("%s of %s: held by partitions %v, want one", table, month.Format("2006-01"), holding)
		}
	}
}

// admin migrate and the worker's partition task make the partitions of the current month and the
// three months after it, and two of each running at once (twice) all succeed, with one partition for
// each month.
func TestMigrateAndTheWorkerMakePartitionsAheadAtOnce(t *testing.T) {
	if !env.Postgres() {
		t.Skip("the partitions are PostgreSQL's")
	}
	store := useBackend(t)
	ctx := context.Background()
	cfg, err := config.Load(env.Getenv())
	if err != nil {
		t.Fatal(err)
	}
	queue := jobs.NewQueue(env.Asynq, cfg)
	t.Cleanup(func() { _ = queue.Close() })
	mux := asynq.NewServeMux()
	jobs.NewHandler(store, cfg, slog.New(slog.DiscardHandler), queue, env.Redis).Register(mux)
	now := time.Now()

	// The months ahead lose their (empty) partitions, as if the service had stopped for months.
	var ahead []string
	if err := store.DB().NewRaw(`SELECT c.relname FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid
		WHERE i.inhparent IN (to_regclass('messages'), to_regclass('consent_events')) AND c.relname ~ '_p[0-9]{6}$'`).Scan(ctx, &ahead); err != nil {
		t.Fatal(err)
	}
	if len(ahead) == 0 {
		t.Fatal("no monthly partition made ahead by the package's migration")
	}
	for _, p := range ahead {
		parent := regexp.MustCompile(`_p[0-9]{6}$`).ReplaceAllString(p, "")
		if _, err := store.DB().ExecContext(ctx, fmt.Sprintf("ALTER TABLE %s DETACH PARTITION %s; DROP TABLE %s", parent, p, p)); err != nil {
			t.Fatal(err)
		}
	}

	for round := range 2 {
		start := make(chan struct{})
		errs := make(chan error, 4)
		for i := range 4 {
			go func() {
				<-start
				if i%2 == 0 {
					_, err := runAdmin(t, "migrate")
					errs <- err
					return
				}
				errs <- mux.ProcessTask(ctx, asynq.NewTask(jobs.TypePartitions, nil))
			}()
		}
		close(start)
		for range 4 {
			if err := <-errs; err != nil {
				t.Errorf("round %d: %v", round, err)
			}
		}
		monthsCovered(t, store, "messages", now)
		monthsCovered(t, store, "consent_events", now)
	}
}
