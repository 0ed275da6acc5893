package api_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"funnelchat/models"
)

// TestRacingWritesNeverAnswer500: requests that touch the same rows in different orders, many at once
// and for many rounds, are answered 2xx, 4xx or 503 (with Retry-After), never 500: batch adds of the
// same contacts in shuffled orders to a list with live campaigns, STOPs from those contacts racing
// their openings, hand-offs ("a person please") racing availability changes and assignments, and a
// member removed meanwhile.
func TestRacingWritesNeverAnswer500(t *testing.T) {
	rounds := 4
	if env.Postgres() {
		rounds = 10
	}
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true", "RATE_LIMIT_PER_MINUTE=1000000")
	startWorker(t)
	team := newTeamAccount(t, srv)
	key := team.key
	_, listID := liveCampaign(t, srv, key, map[string]any{"sendRatePerMinute": 6000})
	// A second live campaign on the same list: each add queues two sends per contact.
	r := do(t, "POST", srv.URL+"/v1/campaigns", key, map[string]any{"name": "Second", "type": "combined", "listId": listID,
		"channel": "custom:chat", "openingMessage": "Hello again {{firstName}}", "status": "live", "sendRatePerMinute": 6000})
	expect(t, r, http.StatusCreated, "")

	var (
		mu       sync.Mutex
		statuses = map[int]int{}
	)
	check := func(what string, r response) {
		mu.Lock()
		statuses[r.Status]++
		mu.Unlock()
		switch {
		case r.Status >= 200 && r.Status < 300, r.Status >= 400 && r.Status < 500:
		case r.Status == http.StatusServiceUnavailable:
			if r.Header.Get("Retry-After") == "" {
				t.Errorf("%s: 503 without Retry-After", what)
			}
		default:
			t.Errorf("%s: %d %s", what, r.Status, r.Body)
		}
	}

	for round := 0; round < rounds; round++ {
		const n = 8
		phones, contacts := make([]string, n), make([]string, n)
		for i := range contacts {
			phones[i] = fmt.Sprintf("+1415557%02d%02d", round, i)
			contacts[i] = namedContact(t, srv, key, phones[i], fmt.Sprintf("Race%d", i))
		}
		// A member to remove in the middle of the round's hand-offs.
		leaving, err := env.Store.AddUser(context.Background(), team.acc.ID, fmt.Sprintf("leaving-%d-%s@example.com", round, team.acc.ID), models.RoleMember)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		run := func(f func()) {
			wg.Add(1)
			go func() { defer wg.Done(); f() }()
		}
		for w := 0; w < 6; w++ {
			order := slices.Clone(contacts)
			rand.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			run(func() {
				check("add to list", do(t, "POST", srv.URL+"/v1/lists/"+listID+"/contacts", key, map[string]any{"contactIds": order}))
			})
		}
		for i := range contacts {
			run(func() {
				time.Sleep(time.Duration(rand.IntN(30)) * time.Millisecond)
				check("STOP", chatIncoming(t, srv, key, fmt.Sprintf("race-stop-%d-%d", round, i), phones[i], "chat", "STOP"))
			})
			from := fmt.Sprintf("race-human-%d-%d", round, i)
			run(func() {
				check("hand-off", chatIncoming(t, srv, key, from+"-1", from, "chat", "can I talk to a person please"))
			})
			run(func() {
				time.Sleep(time.Duration(rand.IntN(40)) * time.Millisecond)
				check("availability", do(t, "PATCH", srv.URL+"/v1/users/"+team.member.User.ID, key, map[string]any{"available": i%2 == 0}))
				check("assign", do(t, "PUT", srv.URL+"/v1/contacts/"+contacts[i]+"/assignee", key, map[string]any{"userId": leaving.User.ID}))
			})
		}
		run(func() {
			time.Sleep(time.Duration(10+rand.IntN(40)) * time.Millisecond)
			if err := env.Store.RemoveUser(context.Background(), team.acc.ID, leaving.User.ID); err != nil {
				t.Errorf("remove user: %v", err)
			}
		})
		wg.Wait()
	}
	t.Logf("%d rounds, answers by status: %v", rounds, statuses)
	// Nothing is left assigned to the removed members.
	var orphans int
	err := env.Store.DB().NewSelect().TableExpr("contacts AS c").ColumnExpr("count(*)").
		Where("c.account_id = ? AND c.assignee_id IS NOT NULL", team.acc.ID).
		Where("NOT EXISTS (SELECT 1 FROM users AS u WHERE u.id = c.assignee_id)").Scan(context.Background(), &orphans)
	if err != nil || orphans != 0 {
		t.Fatalf("%d conversations assigned to removed users (%v)", orphans, err)
	}
}
