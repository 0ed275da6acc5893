package main_test

import (
	"bufio"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"funnelchat/models"
	"funnelchat/models/testenv"
)

// TestConsentExportStreamsInFlatMemory exports 10,000 and then 100,000 consent events from the api
// process and samples its resident memory while each streams: the export reads and writes in
// batches, so the larger export must not need more memory than the smaller one (within a margin for
// the runtime's own growth). It logs each export's time and the api's peak RSS.
func TestConsentExportStreamsInFlatMemory(t *testing.T) {
	t.Parallel()
	if !env.Postgres() {
		t.Skip("the events are written straight into the api's PostgreSQL database; the PostgreSQL pass runs this test")
	}
	const total, small = 100_000, 10_000
	backends, store := ownBackends(t)
	port := freePort(t)
	base := "http://127.0.0.1:" + port
	environ := baseEnv(append(backends, "PORT="+port, "REQUIRE_HTTPS=false", "RATE_LIMIT_PER_MINUTE=100000")...)
	key := admin(t, environ, "account", "create", "--email", "ledger@example.com")["apiKey"].(string)
	api := start(t, environ, "api")
	waitReady(t, base, api)
	status, contact := call(t, "POST", base+"/v1/contacts", key, map[string]any{"phone": "+14155550188", "email": "ledger@example.com"})
	if status != http.StatusCreated {
		t.Fatalf("contact: %d %v", status, contact)
	}
	contactID := contact["id"].(string)
	accountID := accountOfKey(t, store, contactID)

	// The events, one second apart from a day in the past, written in batches as the service writes them.
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	began := time.Now()
	ctx := context.Background()
	batch := make([]models.ConsentEvent, 0, 1000)
	// Ids of the clock's time (the ids' time, not the events' at, places them in a partition).
	idPrefix := testenv.IDPrefix("cns_", began)
	for i := range total {
		batch = append(batch, models.ConsentEvent{
			ID: fmt.Sprintf("%sexport%07d", idPrefix, i), AccountID: accountID, ContactID: contactID, Channel: "sms",
			Status: []string{models.ConsentOptedIn, models.ConsentOptedOut}[i%2], Source: "import",
			Text: "I agree to receive texts from Acme Dental about my appointments", IP: strPtr("203.0.113.7"),
			At: t0.Add(time.Duration(i) * time.Second),
		})
		if len(batch) == cap(batch) {
			if _, err := store.DB().NewInsert().Model(&batch).Exec(ctx); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	t.Logf("%d events written in %s", total, time.Since(began).Round(time.Millisecond))

	pid := api.cmd.Process.Pid
	baseline := rssKiB(t, pid)
	export := func(to time.Time) (rows int, took time.Duration, peakKiB int64) {
		var peak atomic.Int64
		peak.Store(rssKiB(t, pid))
		done := make(chan struct{})
		defer close(done) // also when the export fails: the sampler must not outlive the test
		go func() {
			for {
				select {
				case <-done:
					return
				case <-time.After(5 * time.Millisecond):
					if v := rssKiB(t, pid); v > peak.Load() {
						peak.Store(v)
					}
				}
			}
		}()
		start := time.Now()
		req, _ := http.NewRequest("GET", base+"/v1/consent/export?to="+to.Format(time.RFC3339), nil)
		req.Header.Set("x-api-key", key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(res.Body)
			t.Fatalf("export: %d %s", res.StatusCode, b)
		}
		r := csv.NewReader(bufio.NewReader(res.Body))
		header, err := r.Read()
		if err != nil || strings.Join(header, ",") != "at,contact_id,phone,email,channel,status,source,text,ip,message_id,recorded_by" {
			t.Fatalf("header %v (%v)", header, err)
		}
		var last time.Time
		for {
			rec, err := r.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("row %d: %v", rows, err)
			}
			at, err := time.Parse(time.RFC3339Nano, rec[0])
			if err != nil || at.Before(last) || rec[1] != contactID || rec[2] != "+14155550188" {
				t.Fatalf("row %d out of order or wrong: %v (%v)", rows, rec, err)
			}
			last = at
			rows++
		}
		took = time.Since(start)
		return rows, took, peak.Load()
	}
	smallRows, smallTook, smallPeak := export(t0.Add(small * time.Second))
	bigRows, bigTook, bigPeak := export(t0.Add(total * time.Second))
	if smallRows != small || bigRows != total {
		t.Fatalf("exports of %d and %d rows, want %d and %d", smallRows, bigRows, small, total)
	}
	t.Logf("api RSS before: %d MiB; %d events in %s (peak %d MiB), %d events in %s (peak %d MiB)",
		baseline/1024, small, smallTook.Round(time.Millisecond), smallPeak/1024, total, bigTook.Round(time.Millisecond), bigPeak/1024)
	// Ten times the rows: the peak may not grow by more than what the runtime's heap sizing allows
	// for a stream (24 MiB), where holding the rows would take 40 MiB and more (90,000 more rows of
	// eleven fields, about 300 bytes each, in a slice that doubles). The margin was 16 MiB until a
	// run on a loaded machine, under the race detector, grew by 16.7 MiB while streaming 10 times
	// slower than usual: the collector lags behind a slow stream.
	if bigPeak > smallPeak+24*1024 {
		t.Errorf("the api's peak RSS grew from %d KiB (10,000 events) to %d KiB (100,000 events): the export holds rows", smallPeak, bigPeak)
	}
}

// rssKiB is the resident memory of process pid, in KiB.
func rssKiB(t *testing.T, pid int) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Errorf("read RSS: %v", err)
		return 0
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// accountOfKey is the account of the contact, read from the database.
func accountOfKey(t *testing.T, store *models.Store, contactID string) string {
	t.Helper()
	var ids []string
	if err := store.DB().NewSelect().TableExpr("contacts").Column("account_id").Where("id = ?", contactID).Scan(context.Background(), &ids); err != nil || len(ids) != 1 {
		t.Fatalf("account of %s: %v %v", contactID, ids, err)
	}
	return ids[0]
}

func strPtr(s string) *string { return &s }
