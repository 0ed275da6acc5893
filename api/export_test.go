package api

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"funnelchat/models"
)

// CheckAnswer is checksScript's answer, for api/gcra_test.go.
type CheckAnswer struct {
	// Status is 1 (checked), 0 (no cache entry) or -1 (revoked or unreadable entry).
	Status      int64
	Account     *models.Account
	Limit       int
	Allowed     bool
	Remaining   int
	RetryAfter  time.Duration
	ResetAfter  time.Duration
	DuplicateOf string
}

// RunChecks runs the per-request script as the server does: keys are the count's key and, for the
// fast path, the key cache entry's.
func RunChecks(ctx context.Context, rdb redis.Scripter, keys []string, limit int, sid, accountID string) (CheckAnswer, error) {
	v, err := checksScript.Run(ctx, rdb, keys, limit, sid, accountID, dedupePrefix).Slice()
	if err != nil {
		return CheckAnswer{}, err
	}
	chk, read, err := parseChecks(v, sid)
	if err != nil {
		return CheckAnswer{}, err
	}
	if chk == nil {
		return CheckAnswer{Status: read.Status}, nil
	}
	status := read.Status
	var acc *models.Account
	if read.Entry != "" {
		// An entry the script read and Go cannot: the database answers (models.Store.AuthenticateRead).
		var ok bool
		if acc, ok = models.CachedAccount(read.Entry); !ok {
			status = models.KeyCacheUnusable
		}
	}
	r := chk.rate
	return CheckAnswer{Status: status, Account: acc, Limit: r.Limit, Allowed: r.Allowed, Remaining: r.Remaining,
		RetryAfter: r.RetryAfter, ResetAfter: r.ResetAfter, DuplicateOf: chk.duplicateOf}, nil
}
