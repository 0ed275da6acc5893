package report_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"funnelchat/models"
	"funnelchat/models/report"
	"funnelchat/models/testenv"
)

// largeCampaign is a campaign with 100,000 added contacts and the report it must give, counted in Go
// as the rows were made.
type largeCampaign struct {
	accountID, campaignID string
	want                  report.CampaignReport
}

var (
	largeOnce sync.Once
	large     *largeCampaign
	largeErr  error
)

const largeAdded = 100_000

// seedLargeCampaign inserts, in batches, a campaign's 100,000 sends and what followed them: 70% opened
// (delivered) over two days, each with its opening message, a third of those replied, every 20th handed off, every 7th reached the
// goal, every 50th opted out; the rest failed, queued or suppressed.
func seedLargeCampaign(tb testing.TB) *largeCampaign {
	largeOnce.Do(func() { large, largeErr = seedLarge() })
	if largeErr != nil {
		tb.Fatal(largeErr)
	}
	return large
}

func seedLarge() (*largeCampaign, error) {
	ctx := context.Background()
	db := env.Store.DB()
	acc, err := env.Store.CreateAccount(ctx, models.NewAccount{Email: testenv.UniqueEmail("large"), Name: "Large"})
	if err != nil {
		return nil, err
	}
	accID := acc.Account.ID
	l, err := env.Store.CreateList(ctx, accID, "large")
	if err != nil {
		return nil, err
	}
	name, ch, listID := "large", "custom:web", l.ID
	c, err := env.Store.CreateCampaign(ctx, accID, models.CampaignInput{Name: &name, Channel: &ch, ListID: &listID,
		OpeningMessages: &[]string{"Hi A", "Hi B"}})
	if err != nil {
		return nil, err
	}
	lc := &largeCampaign{accountID: accID, campaignID: c.ID}
	w := &lc.want
	base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	const batch = 2000
	for start := 0; start < largeAdded; start += batch {
		var (
			contacts []models.Contact
			sends    []models.CampaignSend
			messages []models.Message
			alerts   []models.Alert
			goals    []models.Goal
			events   []models.ConsentEvent
		)
		for i := start; i < start+batch; i++ {
			id := fmt.Sprintf("ct_large_%s_%06d", accID, i)
			created := base.Add(-time.Hour)
			contacts = append(contacts, models.Contact{ID: id, AccountID: accID, Origin: "api", Consent: models.ConsentMap{}, CreatedAt: created, UpdatedAt: created})
			send := models.CampaignSend{ID: fmt.Sprintf("snd_large_%s_%06d", accID, i), AccountID: accID, CampaignID: c.ID, ContactID: id,
				DueAt: created, CreatedAt: created, StatusAt: &created, Variant: i % 2}
			w.Added++
			switch i % 10 {
			case 7:
				send.Status = models.SendFailed
				w.Failed++
			case 8:
				send.Status = models.SendQueued
				w.Queued++
			case 9:
				send.Status = models.SendSuppressed
				w.Suppressed++
			default:
				sent := base.Add(time.Duration(i) * 1700 * time.Millisecond) // 100,000 over two days
				// The opening, written a second before its delivery: the report counts what followed
				// it from when it was written (the send's message_id).
				opening := fmt.Sprintf("%slarge_%s_%06do", testenv.IDPrefix("msg_", base), accID, i)
				messages = append(messages, models.Message{ID: opening, AccountID: accID, ContactID: id, CampaignID: &c.ID,
					Direction: models.DirectionOutgoing, Channel: "web", Transport: models.TransportCustom, MessageType: models.MessageTypeText,
					Body: "Hi", Author: models.AuthorCampaign, Status: models.StatusSent, CreatedAt: sent.Add(-time.Second), SentAt: &sent})
				send.Status, send.SentAt, send.FollowUpsDone, send.MessageID = models.SendSent, &sent, true, &opening
				w.Opened++
				if i%3 == 0 {
					done := models.BotDone // as the bot leaves a message it answered
					messages = append(messages, models.Message{ID: fmt.Sprintf("%slarge_%s_%06d", testenv.IDPrefix("msg_", base), accID, i), AccountID: accID, ContactID: id,
						Direction: models.DirectionIncoming, Channel: "web", Transport: models.TransportCustom, MessageType: models.MessageTypeText,
						Body: "yes", Status: "received", BotStatus: &done, CreatedAt: sent.Add(time.Duration(1+i%50) * time.Minute)})
					w.Replied++
				}
				if i%20 == 1 {
					alerts = append(alerts, models.Alert{ID: fmt.Sprintf("alr_large_%s_%06d", accID, i), AccountID: accID, ContactID: id,
						Reason: "wants a person", WebhookStatus: "none", CreatedAt: sent.Add(time.Hour)})
					w.HandedOff++
				}
				if i%7 == 0 {
					goals = append(goals, models.Goal{ID: fmt.Sprintf("gol_large_%s_%06d", accID, i), AccountID: accID, ContactID: id,
						CampaignID: &c.ID, Source: models.GoalSourceAPI, At: sent.Add(2 * time.Hour)})
					w.GoalReached++
				}
				if i%50 == 2 {
					events = append(events, models.ConsentEvent{ID: fmt.Sprintf("%slarge_%s_%06d", testenv.IDPrefix("cns_", base), accID, i), AccountID: accID, ContactID: id,
						Channel: "web", Status: models.ConsentOptedOut, Source: "api", At: sent.Add(3 * time.Hour)})
					w.OptedOut++
				}
			}
			sends = append(sends, send)
		}
		for _, rows := range []any{&contacts, &sends, &messages, &alerts, &goals, &events} {
			if _, err := db.NewInsert().Model(rows).Exec(ctx); err != nil && !isEmptyInsert(rows) {
				return nil, fmt.Errorf("seed: %w", err)
			}
		}
	}
	if !env.Store.IsSQLite() {
		// As autovacuum would have by the time anyone reads a report of this size.
		if _, err := db.ExecContext(ctx, "ANALYZE"); err != nil {
			return nil, err
		}
	}
	return lc, nil
}

// isEmptyInsert reports whether a batch had no rows of a kind (bun refuses an empty insert).
func isEmptyInsert(rows any) bool {
	switch r := rows.(type) {
	case *[]models.Message:
		return len(*r) == 0
	case *[]models.Alert:
		return len(*r) == 0
	case *[]models.Goal:
		return len(*r) == 0
	case *[]models.ConsentEvent:
		return len(*r) == 0
	}
	return false
}

// BenchmarkCampaignReport100k times GET /v1/campaigns/{id}/report's query over 100,000 added
// contacts, after checking that its numbers are the ones seeded:
//
//	TEST_DATABASE_URL=... TEST_REDIS_URL=... go test -run '^$' -bench CampaignReport100k -benchtime 10x ./models/report/
func BenchmarkCampaignReport100k(b *testing.B) {
	lc := seedLargeCampaign(b)
	ctx := context.Background()
	got, err := reader.CampaignReport(ctx, lc.accountID, lc.campaignID)
	if err != nil {
		b.Fatal(err)
	}
	w := lc.want
	if got.Added != w.Added || got.Opened != w.Opened || got.Failed != w.Failed || got.Queued != w.Queued || got.Suppressed != w.Suppressed ||
		got.Replied != w.Replied || got.HandedOff != w.HandedOff || got.GoalReached != w.GoalReached || got.OptedOut != w.OptedOut {
		b.Fatalf("report %+v\nwant %+v", got, w)
	}
	if len(got.Variants) != 2 || got.Variants[0].Opened+got.Variants[1].Opened != w.Opened || len(got.Days) != 3 {
		b.Fatalf("variants %+v days %+v", got.Variants, got.Days)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := reader.CampaignReport(ctx, lc.accountID, lc.campaignID); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCampaignReportCSV100k times the report's CSV over the same 100,000 contacts.
func BenchmarkCampaignReportCSV100k(b *testing.B) {
	lc := seedLargeCampaign(b)
	ctx := context.Background()
	for b.Loop() {
		n := 0
		err := reader.CampaignReportCSV(ctx, lc.accountID, lc.campaignID, func([]string) error { n++; return nil })
		if err != nil || n != largeAdded {
			b.Fatalf("%d rows, %v", n, err)
		}
	}
}
