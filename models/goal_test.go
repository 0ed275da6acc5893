package models_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"funnelchat/models"
)

// TestReachGoalOncePerContactAndCampaign: the first goal is kept however many record it at once; the
// campaign is the one named, else the conversation's, else none (the account's own bot).
func TestReachGoalOncePerContactAndCampaign(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acc := csAccount(t, "Goals")
	accID := acc.Account.ID
	c, l := csCampaign(t, accID, "web")
	contactID := csIncoming(t, env.Store, accID, csFrom("goal"), "web", "hi").ContactID

	// Before any opening the conversation has no campaign: the account's own bot's goal.
	own, created, err := env.Store.ReachGoal(ctx, accID, contactID, models.GoalInput{Source: models.GoalSourceAPI, Note: " called us "})
	if err != nil || !created || own.CampaignID != nil || own.Note != "called us" || own.Source != models.GoalSourceAPI {
		t.Fatalf("account goal %+v created %v: %v", own, created, err)
	}

	sends := csQueue(t, accID, l.ID, contactID)
	send, err := env.Store.CampaignSend(ctx, sends[contactID])
	if err != nil {
		t.Fatal(err)
	}
	contact := csContact(t, accID, contactID)
	if _, err := env.Store.WriteOpening(ctx, send, models.OutgoingMessage{Campaign: c, Contact: contact, Body: "Hi", ToID: "x"}); err != nil {
		t.Fatal(err)
	}

	// Twenty at once, by the bot and the team: one record, the same for all.
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		got   []*models.Goal
		fresh int
	)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			in := models.GoalInput{Source: models.GoalSourceBot, Summary: "booked"}
			if i%2 == 1 {
				in = models.GoalInput{Source: models.GoalSourceInbox, CampaignID: &c.ID}
			}
			g, created, err := env.Store.ReachGoal(ctx, accID, contactID, in)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			got = append(got, g)
			if created {
				fresh++
			}
		}(i)
	}
	wg.Wait()
	if fresh != 1 || len(got) != 20 {
		t.Fatalf("%d created of %d answers, want 1 of 20", fresh, len(got))
	}
	for _, g := range got {
		if g.CampaignID == nil || *g.CampaignID != c.ID || !g.At.Equal(got[0].At) || g.Source != got[0].Source {
			t.Fatalf("answers differ: %+v and %+v", g, got[0])
		}
	}
	goals, err := env.Store.GoalsOf(ctx, accID, contactID)
	if err != nil || len(goals) != 2 {
		t.Fatalf("goals %+v: %v, want the account's and the campaign's", goals, err)
	}

	// After the goal, the opening's delivery schedules no follow-up.
	due, err := env.Store.SettleOpening(ctx, *csSendMessage(t, sends[contactID]), true, time.Now(), "")
	if err != nil || due != nil {
		t.Fatalf("follow-up due after the goal: %+v, %v", due, err)
	}
	csWantSend(t, sends[contactID], models.SendSent, "", true, "opening delivered after the goal")
}

// TestReachGoalEndsFollowUps: a goal recorded while follow-ups are due ends them.
func TestReachGoalEndsFollowUps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	accID := csAccount(t, "Goals FU").Account.ID
	c, l := csCampaign(t, accID, "web")
	delays, on := []float64{24, 48}, true
	c, _, err := env.Store.UpdateCampaign(ctx, accID, c.ID, models.CampaignInput{FollowUpsEnabled: &on, FollowUpDelaysHours: &delays})
	if err != nil {
		t.Fatal(err)
	}
	contactID := csIncoming(t, env.Store, accID, csFrom("goal-fu"), "web", "hi").ContactID
	sends := csQueue(t, accID, l.ID, contactID)
	send, _ := env.Store.CampaignSend(ctx, sends[contactID])
	if _, err := env.Store.WriteOpening(ctx, send, models.OutgoingMessage{Campaign: c, Contact: csContact(t, accID, contactID), Body: "Hi", ToID: "x"}); err != nil {
		t.Fatal(err)
	}
	due, err := env.Store.SettleOpening(ctx, *csSendMessage(t, send.ID), true, time.Now(), "")
	if err != nil || due == nil {
		t.Fatalf("no follow-up due after the delivery: %v", err)
	}
	csWantSend(t, send.ID, models.SendSent, "", false, "delivered")
	if _, _, err := env.Store.ReachGoal(ctx, accID, contactID, models.GoalInput{Source: models.GoalSourceAPI}); err != nil {
		t.Fatal(err)
	}
	csWantSend(t, send.ID, models.SendSent, "", true, "goal reached")
	send, _ = env.Store.CampaignSend(ctx, send.ID)
	m, err := env.Store.WriteFollowUp(ctx, send, 1, models.OutgoingMessage{Campaign: c, Contact: csContact(t, accID, contactID), Body: "Still there?", ToID: "x"})
	if err != nil || m != nil {
		t.Fatalf("follow-up written after the goal: %+v, %v", m, err)
	}
}

// TestReachGoalRefusesOthersAndBadInput: another account's contact or campaign, an unknown campaign
// and an over-long note are refused; a long model summary is cut, not refused.
func TestReachGoalRefusesOthersAndBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	accID := csAccount(t, "Goals A").Account.ID
	otherID := csAccount(t, "Goals B").Account.ID
	mine := csIncoming(t, env.Store, accID, csFrom("goal-a"), "web", "hi").ContactID
	theirs := csIncoming(t, env.Store, otherID, csFrom("goal-b"), "web", "hi").ContactID
	theirCampaign, _ := csCampaign(t, otherID, "web")
	unknown := "cmp_unknown"
	for _, tc := range []struct {
		what      string
		contactID string
		in        models.GoalInput
		code      string
	}{
		{"another account's contact", theirs, models.GoalInput{Source: models.GoalSourceAPI}, models.CodeNotFound},
		{"another account's campaign", mine, models.GoalInput{Source: models.GoalSourceAPI, CampaignID: &theirCampaign.ID}, models.CodeNotFound},
		{"an unknown campaign", mine, models.GoalInput{Source: models.GoalSourceAPI, CampaignID: &unknown}, models.CodeNotFound},
		{"an unknown contact", "ct_unknown", models.GoalInput{Source: models.GoalSourceAPI}, models.CodeNotFound},
		{"a note over 2000 characters", mine, models.GoalInput{Source: models.GoalSourceAPI, Note: strings.Repeat("n", 2001)}, models.CodeValidation},
	} {
		if _, _, err := env.Store.ReachGoal(ctx, accID, tc.contactID, tc.in); models.ErrorCode(err) != tc.code {
			t.Errorf("%s: %v, want %s", tc.what, err, tc.code)
		}
	}
	if goals, _ := env.Store.GoalsOf(ctx, accID, mine); len(goals) != 0 {
		t.Fatalf("refused goals were recorded: %+v", goals)
	}
	g, _, err := env.Store.ReachGoal(ctx, accID, mine, models.GoalInput{Source: models.GoalSourceBot, Summary: strings.Repeat("é", 2500)})
	if err != nil || len([]rune(g.Summary)) != 2000 {
		t.Fatalf("long summary: %d runes, %v", len([]rune(g.Summary)), err)
	}
}

// csSendMessage returns the id of a send's written opening.
func csSendMessage(t testing.TB, sendID string) *string {
	t.Helper()
	send, err := env.Store.CampaignSend(context.Background(), sendID)
	if err != nil || send.MessageID == nil {
		t.Fatalf("send %s has no opening: %v", sendID, err)
	}
	return send.MessageID
}
