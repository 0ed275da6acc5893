package models_test

import (
	"context"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"funnelchat/models"
)

// sweepAccount creates an account on s (a fresh store: the sweeps read every account's rows, so other
// tests' alerts and paused bots must not be in their way, nor they in others').
func sweepAccount(t testing.TB, s *models.Store, settings models.BotSettingsInput) string {
	t.Helper()
	ctx := context.Background()
	acc, err := s.CreateAccount(ctx, models.NewAccount{Email: uniqueEmail("sweep"), Name: "Sweep"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateBotSettings(ctx, acc.Account.ID, settings); err != nil {
		t.Fatal(err)
	}
	return acc.Account.ID
}

// TestEscalationSkipsAnAlertResolvedMeanwhile: an alert resolved after the escalation sweep chose it,
// before its write, is not escalated: the write re-checks the alert. (PostgreSQL: the resolution is
// held open, the sweep's write waits for its row lock, then the resolution commits.)
func TestEscalationSkipsAnAlertResolvedMeanwhile(t *testing.T) {
	if !env.Postgres() {
		t.Skip("on SQLite the sweep is one statement no other write can enter")
	}
	t.Parallel()
	ctx := context.Background()
	s := env.FreshStore(t)
	five := 5
	accID := sweepAccount(t, s, models.BotSettingsInput{HandoffEscalationMinutes: &five})
	alert, err := s.Handoff(ctx, csIncoming(t, s, accID, csFrom("esc"), "web", "help"), "help")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(10 * time.Minute) // the alert has waited its 5 minutes

	// What ResolveAlert writes, held open before its commit.
	held := holdTx(t, s)
	if _, err := held.NewUpdate().TableExpr("alerts").Set("resolved_at = ?", time.Now()).Set("resolved_by = ?", "api").
		Where("id = ?", alert.ID).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var escalated []models.Alert
	var escErr error
	go func() {
		defer close(done)
		escalated, escErr = s.EscalateAlerts(ctx, at, 100)
	}()
	held.waitBlocked(t, 1, done)
	if err := held.Commit(); err != nil {
		t.Fatal(err)
	}
	<-done
	if escErr != nil {
		t.Fatal(escErr)
	}
	if len(escalated) != 0 {
		t.Fatalf("escalated %d alerts, want none: the alert was resolved", len(escalated))
	}
	got, err := s.AlertByID(ctx, alert.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ResolvedAt == nil || got.EscalatedAt != nil {
		t.Fatalf("alert resolved at %v, escalated at %v: want resolved, not escalated", got.ResolvedAt, got.EscalatedAt)
	}
}

// TestResumeSkipsABotTakenMeanwhile: a bot the resume sweep chose is not resumed when, before its
// write, a team reply paused it again (the team's silence starts over) or someone resumed it by hand:
// the write re-checks the contact. (PostgreSQL: both changes are held open, the sweep's write waits for
// their row locks, then they commit.)
func TestResumeSkipsABotTakenMeanwhile(t *testing.T) {
	if !env.Postgres() {
		t.Skip("on SQLite the sweep is one statement no other write can enter")
	}
	t.Parallel()
	ctx := context.Background()
	s := env.FreshStore(t)
	ten := 10
	accID := sweepAccount(t, s, models.BotSettingsInput{SetBotResume: true, BotResumeMinutes: &ten})
	var ids []string
	for _, name := range []string{"replied", "by-hand"} {
		m := csIncoming(t, s, accID, csFrom(name), "web", "help")
		if _, err := s.Handoff(ctx, m, "help"); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ContactID)
	}
	replied, byHand := ids[0], ids[1]
	// Paused 20 minutes ago: both are due.
	if _, err := s.DB().NewUpdate().TableExpr("contacts").Set("bot_paused_at = ?", time.Now().Add(-20*time.Minute)).
		Where("id IN (?)", bun.In(ids)).Exec(ctx); err != nil {
		t.Fatal(err)
	}

	held := holdTx(t, s)
	if err := models.SetBotPausedForTest(ctx, held.Tx, replied, true); err != nil { // a team reply
		t.Fatal(err)
	}
	if err := models.SetBotPausedForTest(ctx, held.Tx, byHand, false); err != nil { // the bot's switch
		t.Fatal(err)
	}
	done := make(chan struct{})
	var resumed []string
	var resumeErr error
	go func() {
		defer close(done)
		resumed, resumeErr = s.ResumeIdleBots(ctx, time.Now(), 100)
	}()
	held.waitBlocked(t, 1, done)
	if err := held.Commit(); err != nil {
		t.Fatal(err)
	}
	<-done
	if resumeErr != nil {
		t.Fatal(resumeErr)
	}
	if len(resumed) != 0 {
		t.Fatalf("resumed %v, want none (%s was answered by the team, %s resumed by hand)", resumed, replied, byHand)
	}
	c, err := s.ContactByID(ctx, accID, replied)
	if err != nil {
		t.Fatal(err)
	}
	if !c.BotPaused {
		t.Fatal("the bot resumed for a conversation the team answered a moment ago")
	}
}
