package models_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"funnelchat/models"
	"funnelchat/models/report"
	"funnelchat/models/testenv"
)

// TestHandoffsAreAssignedInTurn: hand-offs of unassigned conversations go to the available users in
// turn, owner included, never to an unavailable one, and never take a conversation from its assignee.
func TestHandoffsAreAssignedInTurn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acc := csAccount(t, "Team turns")
	accID := acc.Account.ID
	ann, err := env.Store.AddUser(ctx, accID, uniqueEmail("ann"), models.RoleMember)
	if err != nil {
		t.Fatal(err)
	}
	bob, err := env.Store.AddUser(ctx, accID, uniqueEmail("bob"), models.RoleMember)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Store.SetAvailable(ctx, accID, bob.User.ID, false); err != nil {
		t.Fatal(err)
	}
	handoff := func(name string) (contactID string, assignee string) {
		m := csIncoming(t, env.Store, accID, csFrom(name), "web", "a person please")
		if _, err := env.Store.Handoff(ctx, m, "asked for a person"); err != nil {
			t.Fatal(err)
		}
		c := csContact(t, accID, m.ContactID)
		if c.AssigneeID == nil {
			t.Fatalf("%s: hand-off left the conversation unassigned", name)
		}
		return m.ContactID, *c.AssigneeID
	}
	owner := acc.Account.OwnerUserID
	var got []string
	for _, name := range []string{"h1", "h2", "h3", "h4"} {
		_, a := handoff(name)
		got = append(got, a)
	}
	want := []string{owner, ann.User.ID, owner, ann.User.ID}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("assigned %v, want %v (owner, ann in turn; bob unavailable)", got, want)
	}

	// A conversation assigned by hand keeps its assignee through a hand-off, even to an unavailable user.
	m := csIncoming(t, env.Store, accID, csFrom("kept"), "web", "hi")
	if a, err := env.Store.Assign(ctx, accID, m.ContactID, &bob.User.ID); err != nil || a.UserID != bob.User.ID || a.Email != bob.User.Email {
		t.Fatalf("assign by hand: %+v, %v", a, err)
	}
	if _, err := env.Store.Handoff(ctx, m, "again"); err != nil {
		t.Fatal(err)
	}
	if c := csContact(t, accID, m.ContactID); c.AssigneeID == nil || *c.AssigneeID != bob.User.ID {
		t.Fatalf("hand-off changed the assignee: %v", c.AssigneeID)
	}

	// Nobody available: the conversation stays unassigned.
	for _, id := range []string{owner, ann.User.ID} {
		if _, err := env.Store.SetAvailable(ctx, accID, id, false); err != nil {
			t.Fatal(err)
		}
	}
	m = csIncoming(t, env.Store, accID, csFrom("nobody"), "web", "hi")
	if _, err := env.Store.Handoff(ctx, m, "nobody home"); err != nil {
		t.Fatal(err)
	}
	if c := csContact(t, accID, m.ContactID); c.AssigneeID != nil {
		t.Fatalf("assigned to %s while nobody was available", *c.AssigneeID)
	}

	// A removed member's conversations go back to the team.
	if err := env.Store.RemoveUser(ctx, accID, bob.User.ID); err != nil {
		t.Fatal(err)
	}
	if c := csContact(t, accID, csIncoming(t, env.Store, accID, csFrom("x"), "web", "x").ContactID); c.AssigneeID != nil {
		t.Fatal("a new contact is assigned")
	}
}

// TestHandoffsAtOnceTakeTurns: twenty hand-offs at once spread evenly over four available users.
func TestHandoffsAtOnceTakeTurns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acc := csAccount(t, "Team rush")
	accID := acc.Account.ID
	for i := 0; i < 3; i++ {
		if _, err := env.Store.AddUser(ctx, accID, uniqueEmail("rush"), models.RoleMember); err != nil {
			t.Fatal(err)
		}
	}
	var msgs []*models.Message
	for i := 0; i < 20; i++ {
		msgs = append(msgs, csIncoming(t, env.Store, accID, csFrom("rush"), "web", "help"))
	}
	var wg sync.WaitGroup
	for _, m := range msgs {
		wg.Add(1)
		go func(m *models.Message) {
			defer wg.Done()
			if _, err := env.Store.Handoff(ctx, m, "help"); err != nil {
				t.Error(err)
			}
		}(m)
	}
	wg.Wait()
	per := map[string]int{}
	for _, m := range msgs {
		c := csContact(t, accID, m.ContactID)
		if c.AssigneeID == nil {
			t.Fatalf("contact %s unassigned", c.ID)
		}
		per[*c.AssigneeID]++
	}
	if len(per) != 4 {
		t.Fatalf("hand-offs went to %d users, want 4: %v", len(per), per)
	}
	for id, n := range per {
		if n != 5 {
			t.Fatalf("user %s got %d of 20 hand-offs, want 5 each: %v", id, n, per)
		}
	}
}

func TestAssignRefusesOthers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	accID := csAccount(t, "Assign A").Account.ID
	other := csAccount(t, "Assign B")
	mine := csIncoming(t, env.Store, accID, csFrom("as"), "web", "hi").ContactID
	theirs := csIncoming(t, env.Store, other.Account.ID, csFrom("as"), "web", "hi").ContactID
	unknown := "usr_unknown"
	if _, err := env.Store.Assign(ctx, accID, mine, &other.Account.OwnerUserID); models.ErrorCode(err) != models.CodeValidation {
		t.Errorf("another account's user: %v", err)
	}
	if _, err := env.Store.Assign(ctx, accID, mine, &unknown); models.ErrorCode(err) != models.CodeValidation {
		t.Errorf("an unknown user: %v", err)
	}
	me := csAccountOwner(t, accID)
	if _, err := env.Store.Assign(ctx, accID, theirs, &me); models.ErrorCode(err) != models.CodeNotFound {
		t.Errorf("another account's contact: %v", err)
	}
	if c := csContact(t, other.Account.ID, theirs); c.AssigneeID != nil {
		t.Fatal("another account's contact was assigned")
	}
	if a, err := env.Store.Assign(ctx, accID, mine, &me); err != nil || a == nil {
		t.Fatal(err)
	}
	if a, err := env.Store.Assign(ctx, accID, mine, nil); err != nil || a != nil {
		t.Fatalf("unassign: %+v, %v", a, err)
	}
	if _, err := env.Store.SetAvailable(ctx, accID, other.Account.OwnerUserID, false); models.ErrorCode(err) != models.CodeNotFound {
		t.Errorf("availability of another account's user: %v", err)
	}
}

func csAccountOwner(t testing.TB, accountID string) string {
	t.Helper()
	return testenv.AccountOwner(t, env.Store, accountID)
}

func TestNotesAndCannedReplies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	accID := csAccount(t, "Notes").Account.ID
	otherID := csAccount(t, "Notes B").Account.ID
	me := csAccountOwner(t, accID)
	contactID := csIncoming(t, env.Store, accID, csFrom("n"), "web", "hi").ContactID
	for _, body := range []string{"", "   \n", strings.Repeat("x", 4001), "bad\x00"} {
		if _, err := env.Store.AddNote(ctx, accID, contactID, me, body); models.ErrorCode(err) != models.CodeValidation {
			t.Errorf("note %q: %v", body[:min(len(body), 10)], err)
		}
	}
	if _, err := env.Store.AddNote(ctx, otherID, contactID, me, "hi"); models.ErrorCode(err) != models.CodeNotFound {
		t.Errorf("note on another account's contact: %v", err)
	}
	n, err := env.Store.AddNote(ctx, accID, contactID, me, " <script>alert(1)</script> call back Tuesday ")
	if err != nil || n.Body != "<script>alert(1)</script> call back Tuesday" || n.Author == nil || n.Author.UserID != me {
		t.Fatalf("note: %+v, %v", n, err)
	}
	if _, err := env.Store.AddNote(ctx, accID, contactID, me, strings.Repeat("é", 4000)); err != nil {
		t.Fatalf("a 4,000-character note: %v", err)
	}
	notes, err := env.Store.Notes(ctx, accID, contactID)
	if err != nil || len(notes) != 2 || notes[0].ID != n.ID || notes[0].Author.Email == "" {
		t.Fatalf("notes: %+v, %v", notes, err)
	}
	// Notes are not messages: the conversation and the bot's history do not hold them.
	msgs, err := env.Store.RecentConversation(ctx, contactID, 20)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("conversation holds %d messages, want the 1 incoming: %v", len(msgs), err)
	}

	r, err := env.Store.SaveCannedReply(ctx, accID, "", "/hours", "Hi {{firstName}}, we open at 9.")
	if err != nil || r.Shortcut != "hours" {
		t.Fatalf("canned reply: %+v, %v", r, err)
	}
	if _, err := env.Store.SaveCannedReply(ctx, accID, "", "HOURS", "dup"); models.ErrorCode(err) != models.CodeConflict {
		t.Errorf("duplicate shortcut in another case: %v", err)
	}
	if _, err := env.Store.SaveCannedReply(ctx, otherID, "", "hours", "theirs"); err != nil {
		t.Errorf("the same shortcut in another account: %v", err)
	}
	for _, tc := range []struct{ shortcut, body string }{
		{"", "x"}, {"two words", "x"}, {strings.Repeat("s", 33), "x"}, {"a/b", "x"}, {"ok", ""}, {"ok", " "}, {"ok", strings.Repeat("b", 4001)},
	} {
		if _, err := env.Store.SaveCannedReply(ctx, accID, "", tc.shortcut, tc.body); models.ErrorCode(err) != models.CodeValidation {
			t.Errorf("shortcut %q body %d chars: %v", tc.shortcut, len(tc.body), err)
		}
	}
	second, err := env.Store.SaveCannedReply(ctx, accID, "", "price", "It costs $10.")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Store.SaveCannedReply(ctx, accID, second.ID, "Hours", "x"); models.ErrorCode(err) != models.CodeConflict {
		t.Errorf("renaming onto a taken shortcut: %v", err)
	}
	updated, err := env.Store.SaveCannedReply(ctx, accID, r.ID, "opening-hours", "We open at {{firstName}} 9.")
	if err != nil || updated.Shortcut != "opening-hours" || !updated.CreatedAt.Equal(r.CreatedAt) {
		t.Fatalf("update: %+v, %v", updated, err)
	}
	if _, err := env.Store.SaveCannedReply(ctx, otherID, r.ID, "x", "y"); models.ErrorCode(err) != models.CodeNotFound {
		t.Errorf("updating another account's reply: %v", err)
	}
	if err := env.Store.DeleteCannedReply(ctx, otherID, r.ID); models.ErrorCode(err) != models.CodeNotFound {
		t.Errorf("deleting another account's reply: %v", err)
	}
	list, err := env.Store.CannedReplies(ctx, accID)
	if err != nil || len(list) != 2 || list[0].Shortcut != "opening-hours" || list[1].Shortcut != "price" {
		t.Fatalf("list: %+v, %v", list, err)
	}
	if got := models.FillCannedReply(&list[0], &models.Contact{}); got != "We open at 9." {
		t.Errorf("filled without a name: %q", got)
	}
	if err := env.Store.DeleteCannedReply(ctx, accID, r.ID); err != nil {
		t.Fatal(err)
	}
	if list, _ := env.Store.CannedReplies(ctx, accID); len(list) != 1 {
		t.Fatalf("after delete: %+v", list)
	}
}

// TestHandoffMessageOncePerHandoff: the bot's hand-off writes the account's message once, in answer
// to the message handed off, where it came from; an account without one writes nothing.
func TestHandoffMessageOncePerHandoff(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	accID := csAccount(t, "Handoff msg").Account.ID
	m := csIncoming(t, env.Store, accID, csFrom("hm"), "web", "a person please")
	a, err := env.Store.Handoff(ctx, m, "asked")
	if err != nil {
		t.Fatal(err)
	}
	r := a.HandoffReply
	if r == nil || r.Body != models.DefaultHandoffMessage || r.ReplyToID == nil || *r.ReplyToID != m.ID || r.ToID != m.FromID ||
		r.Channel != "web" || r.Author != models.AuthorBot || r.Status != models.StatusPending {
		t.Fatalf("hand-off message %+v", r)
	}
	// The same hand-off again (a retried task) writes no second message.
	again, err := env.Store.Handoff(ctx, m, "asked")
	if err != nil || again.HandoffReply != nil {
		t.Fatalf("second hand-off of one message wrote %+v, %v", again.HandoffReply, err)
	}
	custom, none := "  One moment, Ana will answer.  ", ""
	if _, err := env.Store.UpdateBotSettings(ctx, accID, models.BotSettingsInput{HandoffMessage: &custom}); err != nil {
		t.Fatal(err)
	}
	m2 := csIncoming(t, env.Store, accID, m.FromID, "web", "hello?")
	if a, err := env.Store.Handoff(ctx, m2, "asked"); err != nil || a.HandoffReply == nil || a.HandoffReply.Body != "One moment, Ana will answer." {
		t.Fatalf("custom hand-off message: %+v, %v", a, err)
	}
	if _, err := env.Store.UpdateBotSettings(ctx, accID, models.BotSettingsInput{HandoffMessage: &none}); err != nil {
		t.Fatal(err)
	}
	m3 := csIncoming(t, env.Store, accID, m.FromID, "web", "anyone?")
	if a, err := env.Store.Handoff(ctx, m3, "asked"); err != nil || a.HandoffReply != nil {
		t.Fatalf("hand-off with no message wrote %+v, %v", a.HandoffReply, err)
	}
	// An opted-out contact is told nothing.
	out := csIncoming(t, env.Store, accID, csFrom("hm-out"), "web", "hi")
	if _, err := env.Store.SetConsent(ctx, accID, out.ContactID, models.ConsentInput{Channel: models.ConsentAllChannels, Status: models.ConsentOptedOut, Source: "api", At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Store.UpdateBotSettings(ctx, accID, models.BotSettingsInput{HandoffMessage: &custom}); err != nil {
		t.Fatal(err)
	}
	if a, err := env.Store.Handoff(ctx, out, "asked"); err != nil || a.HandoffReply != nil {
		t.Fatalf("hand-off message to an opted-out contact: %+v, %v", a.HandoffReply, err)
	}
}

func TestHandoffSettingsValidation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	accID := csAccount(t, "Handoff rules").Account.ID
	long, neg, big, zero, week := strings.Repeat("m", 1001), -1, 10081, 0, 10080
	for _, in := range []models.BotSettingsInput{
		{HandoffMessage: &long},
		{HandoffEscalationMinutes: &neg}, {HandoffEscalationMinutes: &big},
		{SetBotResume: true, BotResumeMinutes: &zero}, {SetBotResume: true, BotResumeMinutes: &big},
	} {
		if _, err := env.Store.UpdateBotSettings(ctx, accID, in); models.ErrorCode(err) != models.CodeValidation {
			t.Errorf("%+v: %v", in, err)
		}
	}
	got, err := env.Store.BotSettings(ctx, accID)
	if err != nil || got.HandoffMessage != models.DefaultHandoffMessage || got.HandoffEscalationMinutes != 15 || got.BotResumeMinutes != nil {
		t.Fatalf("defaults: %+v, %v", got, err)
	}
	got, err = env.Store.UpdateBotSettings(ctx, accID, models.BotSettingsInput{HandoffEscalationMinutes: &zero, SetBotResume: true, BotResumeMinutes: &week})
	if err != nil || got.HandoffEscalationMinutes != 0 || got.BotResumeMinutes == nil || *got.BotResumeMinutes != week {
		t.Fatalf("update: %+v, %v", got, err)
	}
	got, err = env.Store.UpdateBotSettings(ctx, accID, models.BotSettingsInput{SetBotResume: true})
	if err != nil || got.BotResumeMinutes != nil {
		t.Fatalf("botResumeMinutes back to never: %+v, %v", got, err)
	}
}

// TestEscalationAndResume: an alert without a team reply is escalated once after the account's
// minutes (never with 0, never after a team reply); a paused bot resumes after botResumeMinutes of
// team silence, a team reply restarting the count.
func TestEscalationAndResume(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	accID := csAccount(t, "Escalation").Account.ID
	five, ten := 5, 10
	if _, err := env.Store.UpdateBotSettings(ctx, accID, models.BotSettingsInput{HandoffEscalationMinutes: &five, SetBotResume: true, BotResumeMinutes: &ten}); err != nil {
		t.Fatal(err)
	}
	waiting := csIncoming(t, env.Store, accID, csFrom("esc"), "web", "help")
	answered := csIncoming(t, env.Store, accID, csFrom("esc-ok"), "web", "help")
	a1, err := env.Store.Handoff(ctx, waiting, "help")
	if err != nil {
		t.Fatal(err)
	}
	a2, err := env.Store.Handoff(ctx, answered, "help")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Store.HumanReply(ctx, accID, answered.ContactID, "", "I'm here", ""); err != nil {
		t.Fatal(err)
	}
	mine := func(alerts []models.Alert) []string {
		var ids []string
		for _, a := range alerts {
			if a.AccountID == accID {
				ids = append(ids, a.ID)
			}
		}
		return ids
	}
	// Four minutes on: nothing yet. Six: the unanswered one, once.
	if got := mine(mustEscalate(t, time.Now().Add(4*time.Minute))); len(got) != 0 {
		t.Fatalf("escalated after 4 of 5 minutes: %v", got)
	}
	got := mustEscalate(t, time.Now().Add(6*time.Minute))
	if ids := mine(got); len(ids) != 1 || ids[0] != a1.ID {
		t.Fatalf("escalated %v, want only %s (%s had a team reply)", ids, a1.ID, a2.ID)
	}
	for _, a := range got {
		if a.ID == a1.ID && (a.EscalatedAt == nil || a.EscalationWebhookStatus == nil || *a.EscalationWebhookStatus != models.AlertWebhookPending) {
			t.Fatalf("escalated alert %+v", a)
		}
	}
	if again := mine(mustEscalate(t, time.Now().Add(60*time.Minute))); len(again) != 0 {
		t.Fatalf("escalated twice: %v", again)
	}

	// Resume: the hand-off paused the bot for both; the team's reply to one restarted its count.
	resumed := func(at time.Time) []string {
		ids, err := env.Store.ResumeIdleBots(ctx, at, 1000)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, id := range ids {
			if id == waiting.ContactID || id == answered.ContactID {
				out = append(out, id)
			}
		}
		return out
	}
	if ids := resumed(time.Now().Add(9 * time.Minute)); len(ids) != 0 {
		t.Fatalf("resumed after 9 of 10 minutes: %v", ids)
	}
	if ids := resumed(time.Now().Add(11 * time.Minute)); len(ids) != 2 {
		t.Fatalf("resumed %v after 11 minutes, want both", ids)
	}
	if c := csContact(t, accID, waiting.ContactID); c.BotPaused {
		t.Fatal("bot still paused")
	}

	// Without botResumeMinutes the bot stays paused; with 0 escalation minutes nothing escalates.
	zero := 0
	if _, err := env.Store.UpdateBotSettings(ctx, accID, models.BotSettingsInput{HandoffEscalationMinutes: &zero, SetBotResume: true}); err != nil {
		t.Fatal(err)
	}
	later := csIncoming(t, env.Store, accID, csFrom("esc-never"), "web", "help")
	if _, err := env.Store.Handoff(ctx, later, "help"); err != nil {
		t.Fatal(err)
	}
	if ids := mine(mustEscalate(t, time.Now().Add(24*time.Hour))); len(ids) != 0 {
		t.Fatalf("escalated with escalation off: %v", ids)
	}
	if ids := resumed(time.Now().Add(24 * time.Hour)); len(ids) != 0 {
		t.Fatalf("resumed with botResumeMinutes never: %v", ids)
	}
}

func mustEscalate(t testing.TB, at time.Time) []models.Alert {
	t.Helper()
	out, err := env.Store.EscalateAlerts(context.Background(), at, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTeamRepliesRecordTheirAuthor: a team reply records who wrote it (the owner for an API key), as
// read back; a user of another account cannot be its author.
func TestTeamRepliesRecordTheirAuthor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acc := csAccount(t, "Authors")
	accID := acc.Account.ID
	other := csAccount(t, "Authors B")
	ann, err := env.Store.AddUser(ctx, accID, uniqueEmail("ann"), models.RoleMember)
	if err != nil {
		t.Fatal(err)
	}
	in := csIncoming(t, env.Store, accID, csFrom("au"), "web", "hi")
	byAnn, err := env.Store.HumanReply(ctx, accID, in.ContactID, ann.User.ID, "Ann here", "")
	if err != nil || byAnn.By == nil || byAnn.By.UserID != ann.User.ID || byAnn.By.Email != ann.User.Email {
		t.Fatalf("reply by Ann: %+v, %v", byAnn, err)
	}
	byKey, err := env.Store.HumanReply(ctx, accID, in.ContactID, "", "the integration", "")
	if err != nil || byKey.By == nil || byKey.By.UserID != acc.Account.OwnerUserID {
		t.Fatalf("reply by the API key: %+v, %v", byKey, err)
	}
	if _, err := env.Store.HumanReply(ctx, accID, in.ContactID, other.Account.OwnerUserID, "intruder", ""); models.ErrorCode(err) != models.CodeValidation {
		t.Fatalf("reply by another account's user: %v", err)
	}
	read, err := env.Store.MessageByID(ctx, accID, byAnn.ID)
	if err != nil || read.By == nil || read.By.UserID != ann.User.ID || read.By.Email != ann.User.Email {
		t.Fatalf("read back: %+v, %v", read, err)
	}
	if read, _ := env.Store.MessageByID(ctx, accID, in.ID); read.By != nil {
		t.Fatalf("the contact's message has an author: %+v", read.By)
	}
}

// rpSet runs a fixture update (times the store takes from the clock) and fails the test on error.
func rpSet(t testing.TB, query string, args ...any) {
	t.Helper()
	testenv.Exec(t, env.Store, query, args...)
}

// TestRetryAllFailedMovesEachOnce: "Retry all failed" pressed by two users at once queues each failed
// message once; the list shows failed messages newest first; the counts follow reads and alerts.
func TestRetryAllFailedMovesEachOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acc := csAccount(t, "Retry all")
	accID := acc.Account.ID
	in := csIncoming(t, env.Store, accID, csFrom("ra"), "web", "hi")
	var ids []string
	for i := 0; i < 30; i++ {
		m, err := env.Store.HumanReply(ctx, accID, in.ContactID, "", "reply", "")
		if err != nil {
			t.Fatal(err)
		}
		rpSet(t, "UPDATE messages SET status = 'failed', error = 'webhook answered 500' WHERE id = ?", m.ID)
		ids = append(ids, m.ID)
	}
	page, next, err := report.New(env.Store).FailedDeliveries(ctx, accID, models.Page{Limit: 20})
	if err != nil || len(page) != 20 || next == "" || page[0].ID != ids[29] {
		t.Fatalf("first page: %d, next %q, %v", len(page), next, err)
	}
	rest, next, err := report.New(env.Store).FailedDeliveries(ctx, accID, models.Page{Limit: 20, Cursor: next})
	if err != nil || len(rest) != 10 || next != "" || rest[9].ID != ids[0] {
		t.Fatalf("second page: %d, next %q, %v", len(rest), next, err)
	}
	var wg sync.WaitGroup
	moved := make([]int, 2)
	for i := range moved {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			got, err := env.Store.RetryAllFailed(ctx, accID)
			if err != nil {
				t.Error(err)
			}
			moved[i] = len(got)
		}(i)
	}
	wg.Wait()
	if moved[0]+moved[1] != 30 {
		t.Fatalf("two presses moved %v, want 30 in all", moved)
	}
	for _, id := range ids {
		m, err := env.Store.MessageByID(ctx, accID, id)
		if err != nil || m.Status != models.StatusPending || m.DeliveryRound != 1 {
			t.Fatalf("message %s: %s round %d, %v", id, m.Status, m.DeliveryRound, err)
		}
	}
	if again, err := env.Store.RetryAllFailed(ctx, accID); err != nil || len(again) != 0 {
		t.Fatalf("a third press moved %d: %v", len(again), err)
	}

	counts, err := report.New(env.Store).Counts(ctx, accID, acc.Account.OwnerUserID)
	if err != nil || counts.Unread != 1 || counts.OpenAlerts != 0 {
		t.Fatalf("counts %+v, %v, want 1 unread and no alerts", counts, err)
	}
	if _, err := env.Store.Handoff(ctx, in, "help"); err != nil {
		t.Fatal(err)
	}
	if err := env.Store.MarkRead(ctx, accID, acc.Account.OwnerUserID, in.ContactID); err != nil {
		t.Fatal(err)
	}
	counts, err = report.New(env.Store).Counts(ctx, accID, acc.Account.OwnerUserID)
	if err != nil || counts.Unread != 0 || counts.OpenAlerts != 1 {
		t.Fatalf("counts %+v, %v, want none unread and one alert", counts, err)
	}
}

// orphanAssignments counts the account's conversations assigned to a user who does not exist.
func orphanAssignments(t testing.TB, accountID string) int {
	t.Helper()
	var n int
	err := env.Store.DB().QueryRowContext(context.Background(), `SELECT count(*) FROM contacts AS c
		WHERE c.account_id = ? AND c.assignee_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM users AS u WHERE u.id = c.assignee_id)`,
		accountID).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// removeBeforeAssign is a query hook that removes a user, through another store, just before the
// hooked store's first write of an assignee: the removal lands between Assign's look-up of the user and
// its write.
type removeBeforeAssign struct {
	once              sync.Once
	accountID, userID string
	err               error
}

func (h *removeBeforeAssign) BeforeQuery(ctx context.Context, e *bun.QueryEvent) context.Context {
	if strings.HasPrefix(e.Query, "UPDATE") && strings.Contains(e.Query, "assignee_id") {
		h.once.Do(func() { h.err = env.Store.RemoveUser(ctx, h.accountID, h.userID) })
	}
	return ctx
}
func (h *removeBeforeAssign) AfterQuery(context.Context, *bun.QueryEvent) {}

// TestAssignToAUserRemovedMeanwhile: a user removed after Assign has looked them up is not assigned:
// the write itself checks that the user exists, and Assign answers VALIDATION_ERROR.
func TestAssignToAUserRemovedMeanwhile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	accID := csAccount(t, "Assign removed").Account.ID
	member := addUser(t, accID, models.RoleMember)
	contactID := csIncoming(t, env.Store, accID, csFrom("rm"), "web", "hi").ContactID
	s := csStore(t)
	hook := &removeBeforeAssign{accountID: accID, userID: member.User.ID}
	s.DB().AddQueryHook(hook)
	_, err := s.Assign(ctx, accID, contactID, &member.User.ID)
	if hook.err != nil {
		t.Fatalf("RemoveUser: %v", hook.err)
	}
	wantCode(t, err, models.CodeValidation, "Assign to a user removed meanwhile")
	if c := csContact(t, accID, contactID); c.AssigneeID != nil {
		t.Fatalf("the conversation is assigned to %s, a removed user", *c.AssigneeID)
	}
}

// TestRemoveUserAfterAHeldAssignInTurn: a hand-off's assignment in turn that is still to commit when
// the user is removed does not leave the conversation with the removed user (PostgreSQL: the removal
// waits for the assignment's lock on the user, then the foreign key unassigns what it committed).
func TestRemoveUserAfterAHeldAssignInTurn(t *testing.T) {
	if !env.Postgres() {
		t.Skip("SQLite runs one transaction at a time: an assignment cannot be held open beside a removal")
	}
	t.Parallel()
	ctx := context.Background()
	acc := csAccount(t, "Held turn")
	accID := acc.Account.ID
	member := addUser(t, accID, models.RoleMember)
	if _, err := env.Store.SetAvailable(ctx, accID, acc.Account.OwnerUserID, false); err != nil {
		t.Fatal(err)
	}
	contactID := csIncoming(t, env.Store, accID, csFrom("turn"), "web", "help").ContactID

	held := holdTx(t, env.Store)
	a, err := models.AssignInTurnForTest(ctx, held.Tx, accID, contactID)
	if err != nil || a == nil || a.UserID != member.User.ID {
		t.Fatalf("assign in turn: %+v, %v; want the member", a, err)
	}
	done := make(chan struct{})
	var removeErr error
	go func() {
		defer close(done)
		removeErr = env.Store.RemoveUser(ctx, accID, member.User.ID)
	}()
	held.waitBlocked(t, 1, done) // the removal waits for the assignment's lock on the user
	if err := held.Commit(); err != nil {
		t.Fatal(err)
	}
	<-done
	if removeErr != nil {
		t.Fatalf("RemoveUser: %v", removeErr)
	}
	if c := csContact(t, accID, contactID); c.AssigneeID != nil {
		t.Fatalf("the conversation is assigned to %s, a removed user", *c.AssigneeID)
	}
}

// TestAssignWhileARemovalIsHeld: an assignment to a user whose removal is still to commit waits for it
// and is then refused (PostgreSQL: the foreign key's check of the user waits for the deleted row).
func TestAssignWhileARemovalIsHeld(t *testing.T) {
	if !env.Postgres() {
		t.Skip("SQLite runs one transaction at a time: a removal cannot be held open beside an assignment")
	}
	t.Parallel()
	ctx := context.Background()
	accID := csAccount(t, "Held removal").Account.ID
	member := addUser(t, accID, models.RoleMember)
	contactID := csIncoming(t, env.Store, accID, csFrom("held"), "web", "hi").ContactID

	// What RemoveUser writes, held open before its commit.
	held := holdTx(t, env.Store)
	if _, err := held.NewDelete().TableExpr("users").Where("id = ? AND account_id = ?", member.User.ID, accID).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var assignErr error
	go func() {
		defer close(done)
		_, assignErr = env.Store.Assign(ctx, accID, contactID, &member.User.ID)
	}()
	held.waitBlocked(t, 1, done)
	if err := held.Commit(); err != nil {
		t.Fatal(err)
	}
	<-done
	if orphanAssignments(t, accID) != 0 {
		t.Fatalf("the conversation is assigned to a removed user (Assign: %v)", assignErr)
	}
	wantCode(t, assignErr, models.CodeValidation, "Assign to a user whose removal committed meanwhile")
}

// TestRemoveUserRacingAssignments: users removed while conversations are assigned to them, by hand and
// in turn, at once: no conversation is left with a removed user, and every refusal is a domain error.
func TestRemoveUserRacingAssignments(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acc := csAccount(t, "Remove race")
	accID := acc.Account.ID
	if _, err := env.Store.SetAvailable(ctx, accID, acc.Account.OwnerUserID, false); err != nil {
		t.Fatal(err)
	}
	rounds := 30
	if !env.Postgres() {
		rounds = 10 // SQLite runs one statement at a time: the rounds only interleave the calls
	}
	for round := range rounds {
		member := addUser(t, accID, models.RoleMember)
		var byHand []string
		var handoffs []*models.Message
		for range 3 {
			byHand = append(byHand, csIncoming(t, env.Store, accID, csFrom("hand"), "web", "hi").ContactID)
			handoffs = append(handoffs, csIncoming(t, env.Store, accID, csFrom("turn"), "web", "help"))
		}
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		start := make(chan struct{})
		wg.Go(func() {
			<-start
			errs <- env.Store.RemoveUser(ctx, accID, member.User.ID)
		})
		for _, id := range byHand {
			wg.Go(func() {
				<-start
				_, err := env.Store.Assign(ctx, accID, id, &member.User.ID)
				errs <- err
			})
		}
		for _, m := range handoffs {
			wg.Go(func() {
				<-start
				_, err := env.Store.Handoff(ctx, m, "help")
				errs <- err
			})
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil && models.ErrorCode(err) == models.CodeInternal {
				t.Errorf("round %d: %v", round, err)
			}
		}
		if n := orphanAssignments(t, accID); n != 0 {
			t.Fatalf("round %d: %d conversations assigned to a removed user", round, n)
		}
	}
}
