package models_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"funnelchat/models"
)

// TestListAddsInAnyOrderDoNotConflict: batch adds of the same contacts in different orders, many at
// once, to a list with two live campaigns, all succeed: each contact is added once and owed one
// opening per campaign (the members and sends are written in id order, so no two adds wait for each
// other in a circle; on PostgreSQL they deadlocked before).
func TestListAddsInAnyOrderDoNotConflict(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	accID := csAccount(t, "Lock order").Account.ID
	_, l := csCampaign(t, accID, "web")
	second, listID, status, name, ch, opening := true, l.ID, models.CampaignLive, "second", "custom:web", "Hello"
	if _, err := env.Store.CreateCampaign(ctx, accID, models.CampaignInput{Name: &name, Channel: &ch, Status: &status,
		OpeningMessage: &opening, ListID: &listID, TriggerOnListAdd: &second}); err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 5; round++ {
		var ids []string
		for i := 0; i < 10; i++ {
			ids = append(ids, csIncoming(t, env.Store, accID, csFrom(fmt.Sprintf("lock-%d-%d", round, i)), "web", "hi").ContactID)
		}
		var (
			wg    sync.WaitGroup
			mu    sync.Mutex
			added = map[string]int{}
			sends int
		)
		for w := 0; w < 8; w++ {
			order := slices.Clone(ids)
			rand.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := env.Store.AddToList(ctx, accID, listID, order)
				if err != nil {
					t.Errorf("round %d: add %v: %v", round, order, err)
					return
				}
				if !slices.Equal(memberIDs(res.Members), order) {
					t.Errorf("round %d: members %v, want the caller's order %v", round, memberIDs(res.Members), order)
				}
				mu.Lock()
				defer mu.Unlock()
				for _, id := range res.Added {
					added[id]++
				}
				sends += len(res.Sends)
			}()
		}
		wg.Wait()
		if len(added) != len(ids) || sends != 2*len(ids) {
			t.Fatalf("round %d: %d contacts added, %d sends queued; want %d and %d", round, len(added), sends, len(ids), 2*len(ids))
		}
		for id, n := range added {
			if n != 1 {
				t.Fatalf("round %d: contact %s added %d times", round, id, n)
			}
		}
	}
}

func memberIDs(ms []models.ListMember) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ContactID
	}
	return out
}
