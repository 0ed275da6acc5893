package report_test

import (
	"context"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"funnelchat/models"
	"funnelchat/models/report"
	"funnelchat/models/testenv"
)

// readCounts counts a reader's routed reads by read and target, and its fallbacks.
type readCounts struct {
	mu        sync.Mutex
	reads     map[string]int // "read/target"
	fallbacks map[string]int
}

func newReadCounts() *readCounts {
	return &readCounts{reads: map[string]int{}, fallbacks: map[string]int{}}
}

func (c *readCounts) observer() report.Observer {
	return report.Observer{
		Read: func(read string, target report.Target) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.reads[read+"/"+string(target)]++
		},
		Fallback: func(read string) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.fallbacks[read]++
		},
	}
}

// take returns the counts so far and starts again from zero.
func (c *readCounts) take() (reads, fallbacks map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	reads, fallbacks = c.reads, c.fallbacks
	c.reads, c.fallbacks = map[string]int{}, map[string]int{}
	return reads, fallbacks
}

// waitFor waits until cond holds, failing the test after 20 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not after 20 s: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// replicaOf opens a replica of the pair for one test, closed when it ends.
func replicaOf(t *testing.T, pair *testenv.PostgresPair, maxLag, checkEvery time.Duration) *report.Replica {
	t.Helper()
	rep := report.OpenReplica(report.ReplicaConfig{PrimaryURL: pair.PrimaryURL, URL: pair.StandbyURL, PoolSize: 2, MaxLag: maxLag, CheckEvery: checkEvery})
	t.Cleanup(func() { _ = rep.Close() })
	return rep
}

// TestReplicaServesTheRoutedReadsWithinTheirLag runs a real primary and a pg_basebackup standby: the
// routed reads go to the standby while it is within REPLICA_MAX_LAG, also after the primary has been
// idle for longer than that, to the primary once replay is paused with WAL waiting, back to the standby
// when replay resumes, and to the primary, without an error, when the standby is stopped.
func TestReplicaServesTheRoutedReadsWithinTheirLag(t *testing.T) {
	if !env.Postgres() {
		t.Skip("a read replica is a PostgreSQL standby; the PostgreSQL pass runs this test")
	}
	ctx := context.Background()
	pair := testenv.StartPostgresPair(t)
	store, err := models.OpenPostgres(pair.PrimaryURL, 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	if err := store.Migrate(ctx); err != nil {
		t.Fatal(err)
	}

	// An account with a contact, a conversation, a campaign that added them, and consent events.
	accID := testenv.NewAccount(t, store, "Replica Co").Account.ID
	ann, _, err := store.CreateOrGetContact(ctx, accID, models.ContactInput{FirstName: "Ann", LastName: "Replica", Phone: "+14155550161"})
	if err != nil {
		t.Fatal(err)
	}
	talker := testenv.Receive(t, store, accID, testenv.UniqueFromID("replica"), "hello", testenv.Person{First: "Tom"}).ContactID
	l, err := store.CreateList(ctx, accID, "replica leads")
	if err != nil {
		t.Fatal(err)
	}
	name, ch, status, listID := "Replica campaign", "custom:web", models.CampaignLive, l.ID
	opening := []string{"Hi {{firstName}}", "Hello {{firstName}}"}
	campaign, err := store.CreateCampaign(ctx, accID, models.CampaignInput{Name: &name, Channel: &ch, Status: &status, OpeningMessages: &opening, ListID: &listID})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Queue(t, store, accID, l.ID, ann.ID, talker)
	in := models.ConsentInput{Channel: "sms", Status: models.ConsentOptedIn, Text: "form"}
	if err := in.Normalize("", "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.SetConsent(ctx, accID, ann.ID, in); err != nil {
		t.Fatal(err)
	}
	pair.WaitReplayed(t)

	const maxLag = 400 * time.Millisecond
	rep := replicaOf(t, pair, maxLag, 0)
	counts := newReadCounts()
	routed := report.New(store)
	routed.Route(rep, counts.observer())
	primary := report.New(store)
	search := func(r *report.Reader, q string) []string {
		t.Helper()
		rows, _, err := r.Contacts(ctx, accID, q, models.Page{Limit: 50})
		if err != nil {
			t.Fatalf("search %q: %v", q, err)
		}
		ids := []string{}
		for _, row := range rows {
			ids = append(ids, row.Contact.ID)
		}
		return ids
	}
	waitFor(t, "the replica in use", rep.InUse)

	t.Run("every routed read runs on the standby and reads what the primary has", func(t *testing.T) {
		all := func(r *report.Reader) []any {
			t.Helper()
			convs, _, err := r.Conversations(ctx, accID, models.ReaderAPI, report.ConversationFilter{}, models.Page{Limit: 50})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := r.CampaignReport(ctx, accID, campaign.ID)
			if err != nil {
				t.Fatal(err)
			}
			var csv, consent [][]string
			if err := r.CampaignReportCSV(ctx, accID, campaign.ID, func(row []string) error { csv = append(csv, row); return nil }); err != nil {
				t.Fatal(err)
			}
			err = r.ExportConsent(ctx, accID, time.Time{}, time.Now().Add(time.Hour), func(row *report.ConsentExportRow) error {
				consent = append(consent, row.Record())
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			return []any{len(convs), convs[0].Contact.ID, rep.Added, csv, consent, search(r, "ann")}
		}
		counts.take()
		got, want := all(routed), all(primary)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("on the standby: %v\non the primary: %v", got, want)
		}
		reads, fallbacks := counts.take()
		wantReads := map[string]int{"conversations/replica": 1, "campaign_report/replica": 1, "campaign_report_csv/replica": 1,
			"consent_export/replica": 1, "contact_search/replica": 1}
		if !reflect.DeepEqual(reads, wantReads) || len(fallbacks) > 0 {
			t.Errorf("reads %v, fallbacks %v; want %v and none", reads, fallbacks, wantReads)
		}
	})

	t.Run("an idle primary does not make the standby look behind", func(t *testing.T) {
		// The clock of the last replayed commit falls behind while nothing is written: the measure
		// that reads it would now call the standby lagging.
		waitFor(t, "no commit for three times REPLICA_MAX_LAG", func() bool {
			var idle float64
			pair.StandbyRow(t, "SELECT COALESCE(EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp()), 0)", &idle)
			return idle > 3*maxLag.Seconds()
		})
		lag, ok := rep.Lag()
		if !ok || lag > maxLag || !rep.InUse() {
			t.Fatalf("lag %s (known %v), in use %v; want at most %s", lag, ok, rep.InUse(), maxLag)
		}
		counts.take()
		if got := search(routed, "ann"); !slices.Equal(got, []string{ann.ID}) {
			t.Fatalf("search: %v", got)
		}
		if reads, _ := counts.take(); reads["contact_search/replica"] != 1 {
			t.Fatalf("reads %v, want the search on the replica", reads)
		}
	})

	// far is a replica with an hour's allowed lag: it stays in use while replay is paused, and so shows
	// what the standby itself holds.
	far := replicaOf(t, pair, time.Hour, 0)
	farReader := report.New(store)
	farReader.Route(far, report.Observer{})
	waitFor(t, "the hour-lag replica in use", far.InUse)

	var bob *models.Contact
	t.Run("a paused replay with WAL received is lag", func(t *testing.T) {
		pair.ExecStandby(t, "SELECT pg_wal_replay_pause()")
		waitFor(t, "replay paused", func() bool { return pair.ReplayPaused(t) })
		bob, _, err = store.CreateOrGetContact(ctx, accID, models.ContactInput{FirstName: "Bob", LastName: "Replica", Phone: "+14155550162"})
		if err != nil {
			t.Fatal(err)
		}
		pair.WaitReceived(t)
		// The standby has the WAL and has not replayed it: the hour-lag reader, on the standby, does
		// not find Bob yet.
		if got := search(farReader, "bob"); len(got) != 0 {
			t.Fatalf("the standby found %v with replay paused", got)
		}
		waitFor(t, "the replica out of use", func() bool { return !rep.InUse() })
		if lag, ok := rep.Lag(); !ok || lag <= maxLag {
			t.Fatalf("lag %s (known %v), want more than %s", lag, ok, maxLag)
		}
		counts.take()
		if got := search(routed, "bob"); !slices.Equal(got, []string{bob.ID}) {
			t.Fatalf("search with replay paused: %v, want Bob from the primary", got)
		}
		if reads, _ := counts.take(); !reflect.DeepEqual(reads, map[string]int{"contact_search/primary": 1}) {
			t.Fatalf("reads %v, want the search on the primary", reads)
		}
	})

	t.Run("resumed replay brings the standby back", func(t *testing.T) {
		pair.ExecStandby(t, "SELECT pg_wal_replay_resume()")
		waitFor(t, "the replica in use again", rep.InUse)
		counts.take()
		if got := search(routed, "bob"); !slices.Equal(got, []string{bob.ID}) {
			t.Fatalf("search: %v", got)
		}
		if reads, _ := counts.take(); !reflect.DeepEqual(reads, map[string]int{"contact_search/replica": 1}) {
			t.Fatalf("reads %v, want the search on the replica", reads)
		}
	})

	t.Run("a stopped standby's reads run on the primary without an error", func(t *testing.T) {
		// unchecked measures once, at its start: it still thinks the standby in use when it stops, so
		// its read meets the stopped standby and runs again on the primary.
		unchecked := replicaOf(t, pair, time.Hour, time.Hour)
		uncheckedCounts := newReadCounts()
		uncheckedReader := report.New(store)
		uncheckedReader.Route(unchecked, uncheckedCounts.observer())
		waitFor(t, "the unchecked replica in use", unchecked.InUse)
		if got := search(uncheckedReader, "bob"); !slices.Equal(got, []string{bob.ID}) { // a pooled connection to the standby
			t.Fatalf("search: %v", got)
		}
		uncheckedCounts.take()

		pair.StopStandby(t)
		if got := search(uncheckedReader, "bob"); !slices.Equal(got, []string{bob.ID}) {
			t.Fatalf("search with the standby stopped: %v", got)
		}
		reads, fallbacks := uncheckedCounts.take()
		if !reflect.DeepEqual(reads, map[string]int{"contact_search/primary": 1}) || fallbacks["contact_search"] != 1 {
			t.Fatalf("reads %v, fallbacks %v; want one fallback to the primary", reads, fallbacks)
		}
		if unchecked.InUse() {
			t.Fatal("the replica that failed a read is still in use")
		}

		// The checked replica finds the standby gone, and its reads go straight to the primary.
		waitFor(t, "the replica out of use with no known lag", func() bool { _, ok := rep.Lag(); return !ok })
		counts.take()
		if got := search(routed, "bob"); !slices.Equal(got, []string{bob.ID}) {
			t.Fatalf("search: %v", got)
		}
		if reads, fallbacks := counts.take(); !reflect.DeepEqual(reads, map[string]int{"contact_search/primary": 1}) || len(fallbacks) > 0 {
			t.Fatalf("reads %v, fallbacks %v; want the search on the primary", reads, fallbacks)
		}
	})
}

func TestParseLSN(t *testing.T) {
	for in, want := range map[string]uint64{"0/0": 0, "0/3016038": 0x3016038, "16/B374D848": 0x16B374D848, "FFFFFFFF/FFFFFFFF": 1<<64 - 1} {
		if got, err := report.ParseLSN(in); err != nil || got != want {
			t.Errorf("ParseLSN(%q) = %#x, %v; want %#x", in, got, err, want)
		}
	}
	for _, in := range []string{"", "3016038", "0/", "/1", "G/1", "1/100000000"} {
		if got, err := report.ParseLSN(in); err == nil {
			t.Errorf("ParseLSN(%q) = %#x, want an error", in, got)
		}
	}
}

// TestReplicaKeepsBoundedSamples: a replica that stays behind (or away) for a long time keeps at most
// 512 of the primary's positions, none older than 10 minutes (or twice REPLICA_MAX_LAG), always the
// newest, in order.
func TestReplicaKeepsBoundedSamples(t *testing.T) {
	const every = 250 * time.Millisecond
	var ages []time.Duration // 25 minutes of samples, oldest first
	for age := 25 * time.Minute; age >= 0; age -= every {
		ages = append(ages, age)
	}
	for _, tc := range []struct {
		maxLag, horizon time.Duration
	}{{5 * time.Second, 10 * time.Minute}, {time.Hour, 2 * time.Hour}} {
		kept := report.PruneSamples(tc.maxLag, ages)
		if len(kept) == 0 || len(kept) > 512 {
			t.Fatalf("max lag %s: %d samples kept, want 1 to 512", tc.maxLag, len(kept))
		}
		if kept[len(kept)-1] != 0 {
			t.Errorf("max lag %s: the newest sample kept is %s old, want the newest of all", tc.maxLag, kept[len(kept)-1])
		}
		if kept[0] > tc.horizon {
			t.Errorf("max lag %s: a sample %s old kept, want none older than %s", tc.maxLag, kept[0], tc.horizon)
		}
		if !slices.IsSortedFunc(kept, func(a, b time.Duration) int { return int(b - a) }) {
			t.Errorf("max lag %s: samples out of order: %v", tc.maxLag, kept)
		}
	}
}
