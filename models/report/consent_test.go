package report_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"funnelchat/models"
	"funnelchat/models/report"
	"funnelchat/models/testenv"
)

// TestConsentExport: the export lists each event of the account in [from, to) exactly once, in (at,
// id) order, across several batches, with ties of at across a batch boundary.
func TestConsentExport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acc := testenv.NewAccount(t, env.Store, "Acme")
	accID := acc.Account.ID
	other := testenv.NewAccount(t, env.Store, "Other")
	phone := "+14155550177"
	withPhone, _, err := env.Store.CreateOrGetContact(ctx, accID, models.ContactInput{Phone: phone, Email: "p@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	chatID := testenv.ReceiveOn(t, env.Store, accID, testenv.UniqueFromID("exp"), "live-chat", "hi").ContactID
	otherContact := testenv.ReceiveOn(t, env.Store, other.Account.ID, testenv.UniqueFromID("exp-other"), "sms", "hi").ContactID

	// 2,600 events, seven at each instant (so that the 1000th and 1001st share one), 250 ms apart
	// (whole seconds and fractions, which SQLite compares as text), inserted in shuffled order under
	// ids that do not follow the time.
	const n = 2600
	t0 := time.Now().UTC().Add(-48 * time.Hour).Truncate(time.Second)
	atOf := func(i int) time.Time { return t0.Add(time.Duration(i/7) * 250 * time.Millisecond) }
	perm := rand.Perm(n)
	events := make([]models.ConsentEvent, n)
	for i := range events {
		contact := withPhone.ID
		if i%2 == 1 {
			contact = chatID
		}
		status := models.ConsentOptedIn
		if i%3 == 0 {
			status = models.ConsentOptedOut
		}
		events[i] = models.ConsentEvent{
			ID: fmt.Sprintf("%st%s_%06d", testenv.IDPrefix("cns_", t0), strings.ToLower(accID[len(accID)-8:]), perm[i]), AccountID: accID, ContactID: contact,
			Channel: "sms", Status: status, Source: "import", Text: fmt.Sprintf("event %d", i), At: atOf(i),
		}
	}
	shuffled := slices.Clone(events)
	rand.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	err = env.Store.DB().RunInTx(ctx, nil, func(ctx context.Context, tx bun.Tx) error {
		for chunk := range slices.Chunk(shuffled, 500) {
			if _, err := tx.NewInsert().Model(&chunk).Exec(ctx); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Events recorded the ordinary way, inside the period: one of the account, one of another.
	mid := atOf(1500).Add(100 * time.Millisecond)
	in := models.ConsentInput{Channel: "live-chat", Status: models.ConsentOptedOut, IP: "198.51.100.9", Text: "by phone", At: mid,
		RecordedBy: models.RecordedByUser(acc.User.ID, acc.User.Email)}
	if err := in.Normalize("", models.ConsentSourceInbox); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Store.SetConsent(ctx, accID, withPhone.ID, in); err != nil {
		t.Fatal(err)
	}
	in.RecordedBy = models.RecordedByAPIKey(other.APIKey)
	if _, err := env.Store.SetConsent(ctx, other.Account.ID, otherContact, in); err != nil {
		t.Fatal(err)
	}
	// Read from the table: the contact has more events than GET .../consent lists (the newest 1000
	// by id, and these test ids do not follow the time).
	ledgerEvent := new(models.ConsentEvent)
	if err := env.Store.DB().NewSelect().Model(ledgerEvent).
		Where("contact_id = ? AND source = ?", withPhone.ID, models.ConsentSourceInbox).Scan(ctx); err != nil {
		t.Fatalf("the recorded event is not in the ledger: %v", err)
	}

	type key struct {
		at time.Time
		id string
	}
	export := func(from, to time.Time) ([]key, []*report.ConsentExportRow) {
		t.Helper()
		var keys []key
		var rows []*report.ConsentExportRow
		err := reader.ExportConsent(ctx, accID, from, to, func(r *report.ConsentExportRow) error {
			keys = append(keys, key{r.At.UTC(), r.ID})
			cp := *r
			rows = append(rows, &cp)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return keys, rows
	}
	expect := func(from, to time.Time) []key {
		var want []key
		for _, e := range events {
			if !e.At.Before(from) && e.At.Before(to) {
				want = append(want, key{e.At, e.ID})
			}
		}
		if !ledgerEvent.At.Before(from) && ledgerEvent.At.Before(to) {
			want = append(want, key{ledgerEvent.At.UTC(), ledgerEvent.ID})
		}
		slices.SortFunc(want, func(a, b key) int {
			if c := a.at.Compare(b.at); c != 0 {
				return c
			}
			return strings.Compare(a.id, b.id)
		})
		return want
	}
	check := func(what string, got, want []key) {
		t.Helper()
		seen := map[string]int{}
		for _, k := range got {
			seen[k.id]++
		}
		for id, c := range seen {
			if c != 1 {
				t.Errorf("%s: event %s exported %d times", what, id, c)
			}
		}
		if len(got) != len(want) {
			t.Errorf("%s: %d rows, want %d", what, len(got), len(want))
		}
		for i := range min(len(got), len(want)) {
			if !got[i].at.Equal(want[i].at) || got[i].id != want[i].id {
				t.Errorf("%s: row %d is %v %s, want %v %s", what, i, got[i].at, got[i].id, want[i].at, want[i].id)
				break
			}
		}
	}

	// Everything: 2,601 rows, three batches and a bit.
	all, rows := export(t0.Add(-time.Hour), time.Now().Add(time.Minute))
	check("everything", all, expect(t0.Add(-time.Hour), time.Now().Add(time.Minute)))
	if len(all) != n+1 {
		t.Errorf("everything: %d rows, want %d", len(all), n+1)
	}
	for _, r := range rows {
		if r.AccountID != accID {
			t.Fatalf("row %s of account %s", r.ID, r.AccountID)
		}
		if r.ID == ledgerEvent.ID {
			rec := r.Record()
			want := []string{ledgerEvent.At.UTC().Format(time.RFC3339Nano), withPhone.ID, phone, "p@example.com", "live-chat", "opted_out", "inbox", "by phone", "198.51.100.9", "", acc.User.Email}
			if !slices.Equal(rec, want) {
				t.Errorf("record:\n got %q\nwant %q", rec, want)
			}
			if len(rec) != len(report.ConsentExportHeader) {
				t.Errorf("record has %d fields, header %d", len(rec), len(report.ConsentExportHeader))
			}
		}
		if r.ContactID == chatID && (r.Phone != nil || r.Email != nil) {
			t.Errorf("row %s of a contact without phone or email: %s %s", r.ID, testenv.Str(r.Phone), testenv.Str(r.Email))
		}
	}

	// [from, to) with both ends on events' instants: from's events in, to's out; 2,100 rows.
	from, to := atOf(300), atOf(2400)
	got, _ := export(from, to)
	want := expect(from, to)
	check("[atOf(300), atOf(2400))", got, want)
	// Events 294..2393 (instants 42..341) and the recorded one.
	if len(got) != 2101 {
		t.Errorf("[atOf(300), atOf(2400)): %d rows, want 2101", len(got))
	}
	if len(got) > 0 && (!got[0].at.Equal(from) || got[len(got)-1].at.Compare(to) >= 0) {
		t.Errorf("bounds: first at %v (want %v), last at %v (want before %v)", got[0].at, from, got[len(got)-1].at, to)
	}

	// One batch and one row (events 0..1000, the last two sharing an instant), and an empty period.
	from, to = atOf(0), atOf(1001)
	got, _ = export(from, to)
	check("one batch and one row", got, expect(from, to))
	if len(got) != 1001 {
		t.Errorf("one batch and one row: %d rows, want 1001", len(got))
	}
	got, _ = export(t0.Add(-2*time.Hour), t0.Add(-time.Hour))
	if len(got) != 0 {
		t.Errorf("an empty period exported %d rows", len(got))
	}

	// The other account sees its own event only.
	var otherRows []string
	err = reader.ExportConsent(ctx, other.Account.ID, t0.Add(-time.Hour), time.Now().Add(time.Minute), func(r *report.ConsentExportRow) error {
		otherRows = append(otherRows, r.ContactID)
		return nil
	})
	if err != nil || !slices.Equal(otherRows, []string{otherContact}) {
		t.Errorf("other account's export: %v, %v; want its one event", otherRows, err)
	}

	// emit's error stops the export.
	stop := errors.New("client went away")
	calls := 0
	err = reader.ExportConsent(ctx, accID, t0.Add(-time.Hour), time.Now().Add(time.Minute), func(*report.ConsentExportRow) error {
		calls++
		if calls == 5 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || calls != 5 {
		t.Errorf("export with a failing emit: %v after %d calls, want the emit's error after 5", err, calls)
	}
}
