package testenv

import (
	"context"
	"os"
	"sync"
	"testing"

	"github.com/alicebob/miniredis/v2"
)

// TestClaimRedisDBGivesEachClaimantItsOwn: claimants racing for database numbers (test packages and
// the process tests of cmd/api do, at once) never get the same one, and a released number is free
// again. On TEST_REDIS_URL's server; without one (the embedded pass), on a miniredis, which runs the
// claim's script the same way, one script at a time.
func TestClaimRedisDBGivesEachClaimantItsOwn(t *testing.T) {
	base := os.Getenv("TEST_REDIS_URL")
	if base == "" {
		mini := miniredis.RunT(t)
		base = "redis://" + mini.Addr()
	}
	ctx := context.Background()
	const claimants = 5 // of 15 numbers: other test packages may hold some meanwhile
	for round := 0; round < 20; round++ {
		var wg sync.WaitGroup
		urls := make([]string, claimants)
		releases := make([]func(), claimants)
		errs := make([]error, claimants)
		for i := range claimants {
			wg.Go(func() { _, urls[i], releases[i], errs[i] = ClaimRedisDB(ctx, base) })
		}
		wg.Wait()
		// Released even when the test fails: a claim left behind holds its number for an hour.
		release := func() {
			for _, r := range releases {
				if r != nil {
					r()
				}
			}
		}
		t.Cleanup(release)
		seen := map[string]int{}
		for i, u := range urls {
			if errs[i] != nil {
				t.Fatalf("round %d, claimant %d: %v", round, i, errs[i])
			}
			if j, dup := seen[u]; dup {
				t.Fatalf("round %d: claimants %d and %d both got %s", round, j, i, u)
			}
			seen[u] = i
		}
		release()
		clear(releases)
	}
}
