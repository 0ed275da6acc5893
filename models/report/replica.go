package report

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/uptrace/bun"

	"funnelchat/models"
)

// The read replica (README, "Read replica"). A PostgreSQL streaming standby of the primary serves the
// reads that may be a few seconds behind: the campaign report and its CSV, the consent export, the
// contact search and the conversation list. Each of them runs on the replica while it is no more than
// REPLICA_MAX_LAG behind the primary, else on the primary; a query that fails on the replica runs again
// on the primary. Every other read stays on the primary: what a user reads back right after writing it
// (a contact just created, a conversation page after a reply, settings, keys), and everything inside a
// write transaction or taking row locks. The routing is by hand, read by read (Reader.routed), not
// bun's read/write resolver, which would send every SELECT to the replica, FOR SHARE included.
//
// How far behind is measured against the primary's WAL, not against the clock of the last commit the
// replica replayed: now() - pg_last_xact_replay_timestamp() grows while the primary is idle, with
// nothing to replay, and would send reads away from a replica that has everything. Instead, every
// check (a few times a second, in the background) reads the primary's pg_current_wal_lsn() and keeps it
// with the time it was asked for, then reads the replica's pg_last_wal_replay_lsn(). Every transaction
// the primary had acknowledged when a sample was taken ended at or before the sample's position (a
// commit is acknowledged once its WAL is written, synchronous_commit being on), so a replica whose replay
// has reached that position holds all of them: the replica is at most now - (that sample's time)
// behind. An idle primary's position does not move, the replica reaches it, and the lag stays at about
// one check's interval; a replica that receives WAL but does not replay it (paused, or replay waiting
// for a long query on the standby) stays at an older sample and its lag grows with the clock; one that
// does not answer, or is not in recovery (promoted, or not a standby at all), is not used. Only this
// process's monotonic clock is read, so neither server's clock matters.

// Target is the database that served a routed read.
type Target string

const (
	TargetPrimary Target = "primary"
	TargetReplica Target = "replica"
)

// The routed reads, named as the metrics label them.
const (
	ReadConversations     = "conversations"
	ReadContactSearch     = "contact_search"
	ReadCampaignReport    = "campaign_report"
	ReadCampaignReportCSV = "campaign_report_csv"
	ReadConsentExport     = "consent_export"
)

// ReplicaConfig is what OpenReplica needs.
type ReplicaConfig struct {
	// PrimaryURL is DATABASE_URL: the check reads the primary's WAL position on a connection of its own.
	PrimaryURL string
	// URL is DATABASE_REPLICA_URL, a streaming standby of the primary.
	URL string
	// PoolSize is the replica's pool (the api's DATABASE_POOL_SIZE, as the primary's); the check has
	// one more connection of its own.
	PoolSize int
	// MaxLag is REPLICA_MAX_LAG: further behind than this, the routed reads go to the primary.
	MaxLag time.Duration
	// CheckEvery is how often the lag is measured; 0: a quarter of MaxLag, from 50 ms to 250 ms.
	CheckEvery time.Duration
	Logger     *slog.Logger
}

// replicaDialTimeout bounds a connection attempt to the replica (unless its URL sets connect_timeout):
// a read routed to a replica that went away waits this long at most before it runs on the primary.
const replicaDialTimeout = 2 * time.Second

// replicaCheckTimeout bounds one check: a replica (or primary) that does not answer within it counts
// as unreachable for this check.
const replicaCheckTimeout = 2 * time.Second

// maxSamples bounds the primary's positions a Replica keeps: beyond it, every other one is dropped,
// which can only make the measured lag larger (a coarser sample is older), never smaller.
const maxSamples = 512

// sampleHorizon is how long a sample is kept (twice REPLICA_MAX_LAG when that is longer): long enough
// for funnelchat_replica_lag_seconds to tell how far behind a replica out of use is, up to about this.
const sampleHorizon = 10 * time.Minute

// Replica is a PostgreSQL streaming standby that serves a Reader's lag-tolerant reads (see Reader.Route),
// with the check that measures how far behind the primary it is.
type Replica struct {
	db *bun.DB
	// checkPrimary and checkReplica are the check's own connections (one each), so that a check does not
	// wait behind requests for a pooled connection, nor the requests behind it.
	checkPrimary, checkReplica *bun.DB
	maxLag, every              time.Duration
	log                        *slog.Logger

	// epoch is the origin of the monotonic times below.
	epoch time.Time
	// fresh is 1 + the time (since epoch) of the newest primary sample that the replica has replayed:
	// the replica holds every transaction the primary had acknowledged by then. 0: no such bound (not
	// measured yet, unreachable, not a standby, or a read just failed there).
	fresh atomic.Int64
	// samples are the primary's WAL positions, oldest first; only the check's goroutine uses them.
	samples []walSample
	// state is the last state logged (the check's goroutine only).
	state string

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// walSample is the primary's WAL position (pg_current_wal_lsn) read at a time (since the epoch), taken
// just before the question was sent.
type walSample struct {
	at  time.Duration
	lsn uint64
}

// OpenReplica opens the replica's pool and starts measuring its lag in the background; the routed reads
// go to the primary until the first check has found the replica close enough. It does not connect
// before returning: a replica that is down at start-up is simply not used.
func OpenReplica(cfg ReplicaConfig) *Replica {
	every := cfg.CheckEvery
	if every <= 0 {
		every = min(max(cfg.MaxLag/4, 50*time.Millisecond), 250*time.Millisecond)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	p := &Replica{
		db:           models.OpenPostgresDB(cfg.URL, cfg.PoolSize, replicaDialTimeout),
		checkPrimary: models.OpenPostgresDB(cfg.PrimaryURL, 1, replicaDialTimeout),
		checkReplica: models.OpenPostgresDB(cfg.URL, 1, replicaDialTimeout),
		maxLag:       cfg.MaxLag,
		every:        every,
		log:          log.With("component", "replica"),
		epoch:        time.Now(),
		stop:         make(chan struct{}),
		done:         make(chan struct{}),
	}
	go p.run()
	return p
}

// Close stops the checks and closes the replica's connections.
func (p *Replica) Close() error {
	p.closeOnce.Do(func() {
		close(p.stop)
		<-p.done
		_ = p.checkPrimary.Close()
		_ = p.checkReplica.Close()
		_ = p.db.Close()
	})
	return nil
}

// DB is the replica's pool (for tests that read from it directly).
func (p *Replica) DB() *bun.DB { return p.db }

// MaxLag is REPLICA_MAX_LAG.
func (p *Replica) MaxLag() time.Duration { return p.maxLag }

// Lag is how far behind the primary the replica may be now: it holds every transaction the primary
// had acknowledged Lag ago. ok is false when nothing bounds it (not measured yet, unreachable, not a
// standby, or a read just failed there).
func (p *Replica) Lag() (lag time.Duration, ok bool) {
	f := p.fresh.Load()
	if f == 0 {
		return 0, false
	}
	return p.now() - time.Duration(f-1), true
}

// InUse reports whether the routed reads go to the replica now: it answers and is no more than
// REPLICA_MAX_LAG behind.
func (p *Replica) InUse() bool {
	lag, ok := p.Lag()
	return ok && lag <= p.maxLag
}

func (p *Replica) now() time.Duration { return time.Since(p.epoch) }

// failed takes the replica out of use after a routed read failed there, until the next check finds it
// answering and close enough again.
func (p *Replica) failed(read string, err error) {
	p.fresh.Store(0)
	p.log.Warn("read replica failed a read; it runs on the primary", "read", read, "error", err.Error())
}

func (p *Replica) run() {
	defer close(p.done)
	tick := time.NewTicker(p.every)
	defer tick.Stop()
	for {
		p.check()
		select {
		case <-p.stop:
			return
		case <-tick.C:
		}
	}
}

// check samples the primary's WAL position, then asks the replica how far it has replayed, and moves
// fresh to the newest sample the replica has reached.
func (p *Replica) check() {
	ctx, cancel := context.WithTimeout(context.Background(), replicaCheckTimeout)
	defer cancel()
	at := p.now()
	var current string
	if err := p.checkPrimary.QueryRowContext(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&current); err == nil {
		if lsn, err := parseLSN(current); err == nil {
			p.samples = append(p.samples, walSample{at: at, lsn: lsn})
		}
	}
	// A primary that does not answer adds no sample: the replica's bound then only ages, and past
	// REPLICA_MAX_LAG the reads go to the primary, which answers them as it answers every other.
	p.pruneSamples()

	var recovering bool
	var replayed sql.NullString
	err := p.checkReplica.QueryRowContext(ctx, "SELECT pg_is_in_recovery(), pg_last_wal_replay_lsn()::text").Scan(&recovering, &replayed)
	switch {
	case err != nil:
		p.fresh.Store(0)
		p.setState("unreachable", "read replica does not answer; its reads go to the primary", "error", err.Error())
		return
	case !recovering || !replayed.Valid:
		p.fresh.Store(0)
		p.setState("not a standby", "DATABASE_REPLICA_URL is not a standby in recovery (promoted, or not a replica); its reads go to the primary")
		return
	}
	replay, err := parseLSN(replayed.String)
	if err != nil {
		p.fresh.Store(0)
		p.setState("unreadable", "read replica's replay position is unreadable; its reads go to the primary", "lsn", replayed.String)
		return
	}
	// The newest sample the replica has replayed. The replay position only moves forward, so the older
	// samples tell nothing more and go.
	for i := len(p.samples) - 1; i >= 0; i-- {
		if p.samples[i].lsn <= replay {
			p.fresh.Store(int64(p.samples[i].at) + 1)
			p.samples = p.samples[i:]
			break
		}
	}
	if lag, ok := p.Lag(); ok && lag <= p.maxLag {
		p.setState("in use", "read replica in use", "lag", lag.String())
	} else {
		p.setState("behind", "read replica is more than REPLICA_MAX_LAG behind; its reads go to the primary",
			"max_lag", p.maxLag.String(), "lag", lagText(lag, ok))
	}
}

// pruneSamples bounds the samples kept, whether or not the replica answers. Samples older than
// sampleHorizon go: they could only bound a replica that is out of use anyway, and one that has not
// reached the ones kept keeps the bound it had, which keeps ageing. Beyond maxSamples, every other one
// goes (the newest stays), so that older samples are ever sparser.
func (p *Replica) pruneSamples() {
	horizon := max(2*p.maxLag, sampleHorizon)
	for len(p.samples) > 1 && p.now()-p.samples[0].at > horizon {
		p.samples = p.samples[1:]
	}
	for len(p.samples) > maxSamples {
		thin := make([]walSample, 0, len(p.samples)/2+1)
		for i := len(p.samples) - 1; i >= 0; i -= 2 {
			thin = append(thin, p.samples[i])
		}
		slices.Reverse(thin)
		p.samples = thin
	}
}

// setState logs a change of the replica's state (only changes, so that an outage logs once).
func (p *Replica) setState(state, msg string, args ...any) {
	if state == p.state {
		return
	}
	p.state = state
	if state == "in use" {
		p.log.Info(msg, args...)
		return
	}
	p.log.Warn(msg, args...)
}

func lagText(lag time.Duration, ok bool) string {
	if !ok {
		return "unknown"
	}
	return lag.Round(time.Millisecond).String()
}

// parseLSN reads a pg_lsn's text form (16/B374D848) as the 64-bit WAL position it stands for.
func parseLSN(s string) (uint64, error) {
	hi, lo, ok := strings.Cut(s, "/")
	if !ok {
		return 0, fmt.Errorf("lsn %q: no slash", s)
	}
	h, err := strconv.ParseUint(hi, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("lsn %q: %w", s, err)
	}
	l, err := strconv.ParseUint(lo, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("lsn %q: %w", s, err)
	}
	return h<<32 | l, nil
}

// Observer learns where the routed reads ran, for the api's metrics (api/metrics.go). Either function
// may be nil.
type Observer struct {
	// Read is called once for each query of a routed read, with the database that answered it (a
	// report's CSV and the consent export query in batches of 1,000 rows: one call per batch).
	Read func(read string, target Target)
	// Fallback is called for each query that failed on the replica and ran again on the primary.
	Fallback func(read string)
}

// Route sends the reader's lag-tolerant reads to rep while it is in use (nil: every read on the
// store's database) and tells obs where each ran. Call it before the reader serves.
func (r *Reader) Route(rep *Replica, obs Observer) {
	r.replica, r.observer = rep, obs
}

// source is the database one query of a routed read runs on.
type source struct {
	db      *bun.DB
	replica bool
}

// routed runs one query of a lag-tolerant read (read names it, for the metrics): on the replica when it
// is in use, else on the primary; a query that fails on the replica runs again on the primary (unless
// the request itself ended), so that a replica's failure costs a retry, not an error. query may run
// twice: it must set, not add to, what it reads.
func (r *Reader) routed(ctx context.Context, read string, query func(ctx context.Context, on source) error) error {
	if rep := r.replica; rep != nil && rep.InUse() {
		err := query(ctx, source{db: rep.db, replica: true})
		if err == nil || ctx.Err() != nil {
			r.observed(read, TargetReplica)
			return err
		}
		rep.failed(read, err)
		if r.observer.Fallback != nil {
			r.observer.Fallback(read)
		}
	}
	r.observed(read, TargetPrimary)
	return query(ctx, source{db: r.db})
}

func (r *Reader) observed(read string, target Target) {
	if r.observer.Read != nil {
		r.observer.Read(read, target)
	}
}

// snapshot runs fn's reads against one snapshot of on: the store's read snapshot on the primary, a
// read-only REPEATABLE READ transaction on the replica (which a hot standby allows).
func (r *Reader) snapshot(ctx context.Context, on source, fn func(ctx context.Context, db bun.IDB) error) error {
	if !on.replica {
		return r.store.ReadSnapshot(ctx, fn)
	}
	return on.db.RunInTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true},
		func(ctx context.Context, tx bun.Tx) error { return fn(ctx, tx) })
}

// inTx runs fn in a transaction on on: the store's (retried on a conflict) on the primary, a read-only
// one on the replica.
func (r *Reader) inTx(ctx context.Context, on source, fn func(ctx context.Context, tx bun.Tx) error) error {
	if !on.replica {
		return r.store.InTx(ctx, fn)
	}
	return on.db.RunInTx(ctx, &sql.TxOptions{ReadOnly: true}, fn)
}
