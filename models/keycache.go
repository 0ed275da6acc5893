package models

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// keyCache keeps, in Redis, what an API key authenticates as, so that a request costs one Redis read
// instead of a database query (the api reads the entry inside its per-request script, see KeyCheck).
// Every api process shares it, and a rotation marks the old key revoked there before the database
// revokes it, so the old key stops working everywhere at once:
//
//   - A request reads apikey:<hash>. An account entry answers; a missing entry, a revoked mark or a
//     Redis error falls back to the database, which stays the authority.
//   - After a database hit, the entry is written with SET NX: it never overwrites a revoked mark, so a
//     request that read the key as valid just before a rotation cannot bring it back.
//   - RotateAPIKey writes the revoked mark first and refuses with UNAVAILABLE when it cannot, so no
//     rotation returns while an entry for the old key can still answer.
//
// Only fields that never change, or may lag by keyCacheTTL (the per-account rate limit), are cached.
// It is off in standalone mode, where the admin CLI cannot reach the api's in-process Redis.
type keyCache struct {
	rdb redis.UniversalClient
	// replicaWait, when set, is how long a revocation waits for a Redis replica to confirm it (see
	// KeyRevocationsWaitForAReplica).
	replicaWait time.Duration
}

const (
	// keyCacheTimeout bounds a lookup: when Redis is slow or down the database answers instead, and a
	// request should not wait out go-redis's dial retries first.
	keyCacheTimeout = 250 * time.Millisecond
	keyCacheTTL     = 5 * time.Minute
	keyRevokedTTL   = 24 * time.Hour
	keyRevoked      = "revoked"
)

// KeyCacheRevoked is the value of a revoked key's entry, for a caller that reads entries in a script of
// its own (see KeyCheck).
const KeyCacheRevoked = keyRevoked

// cachedAccount is what the cache keeps of an account, as JSON. The api's per-request script
// (api/checks.go) reads two members of it in Redis, "id" and "rateLimitPerMinute": keep those names.
type cachedAccount struct {
	ID                 string    `json:"id"`
	KeyID              string    `json:"keyId"`
	Name               string    `json:"name"`
	Email              string    `json:"email"`
	IsAgency           bool      `json:"isAgency"`
	ParentID           *string   `json:"parentId"`
	OwnerUserID        string    `json:"ownerUserId"`
	RateLimitPerMinute *int      `json:"rateLimitPerMinute"`
	CreatedAt          time.Time `json:"createdAt"`
}

// UseKeyCache makes Authenticate consult Redis before the database and RotateAPIKey mark revoked keys
// there. Every process that authenticates or rotates keys on the same database must use the same Redis.
func (s *Store) UseKeyCache(rdb redis.UniversalClient) { s.keys = &keyCache{rdb: rdb} }

// KeyRevocationsWaitForAReplica makes a key rotation wait up to wait for a Redis replica to hold the
// revoked mark, and refuse with UNAVAILABLE (nothing changed) when none confirms. Redis replicates
// asynchronously: without it, a mark that only the master held when it failed would be missing on the
// promoted replica, which still caches the old key, and the old key would work again for up to
// keyCacheTTL. For deployments with replicas (Redis Sentinel); call after UseKeyCache.
func (s *Store) KeyRevocationsWaitForAReplica(wait time.Duration) {
	if s.keys != nil {
		s.keys.replicaWait = wait
	}
}

func keyCacheKey(hash string) string { return "apikey:" + hash }

// lookup returns the cached account for hash; fill reports whether a database answer may be cached
// (false after a revoked mark or a Redis error).
func (k *keyCache) lookup(ctx context.Context, hash string) (acc *Account, fill bool) {
	ctx, cancel := context.WithTimeout(ctx, keyCacheTimeout)
	defer cancel()
	raw, err := k.rdb.Get(ctx, keyCacheKey(hash)).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return nil, true
	case err != nil, raw == keyRevoked:
		return nil, false
	}
	acc, _ = CachedAccount(raw)
	return acc, false
}

// CachedAccount decodes a key cache entry. ok is false when raw is not an account (the revoked mark, or
// an entry that cannot be read): the database must answer then, and its answer not be cached.
func CachedAccount(raw string) (acc *Account, ok bool) {
	if raw == keyRevoked {
		return nil, false
	}
	var c cachedAccount
	if json.Unmarshal([]byte(raw), &c) != nil || c.ID == "" {
		return nil, false
	}
	return &Account{
		ID: c.ID, KeyID: c.KeyID, Name: c.Name, Email: c.Email, IsAgency: c.IsAgency, ParentID: c.ParentID,
		OwnerUserID: c.OwnerUserID, RateLimitPerMinute: c.RateLimitPerMinute, CreatedAt: c.CreatedAt,
	}, true
}

// KeyCheck is an API key ready to be checked by a caller that reads the key cache in a Redis call of its
// own, together with other per-request state (the api reads the entry in the same script as the key's
// rate limit, see api/checks.go). The caller reads CacheKey; an entry that CachedAccount accepts
// authenticates the request; a missing entry, the revoked mark, an unreadable entry or a Redis error
// goes to AuthenticateInDatabase, exactly as Authenticate does by itself. The guarantees listed on
// keyCache hold as long as the caller does not write the entry itself.
type KeyCheck struct {
	hash     string
	cacheKey string
}

// CheckKey prepares rawKey. Errors: UNAUTHORIZED for a key that cannot be valid (empty or too long).
func (s *Store) CheckKey(rawKey string) (KeyCheck, error) {
	if rawKey == "" || len(rawKey) > 256 {
		return KeyCheck{}, Errorf(CodeUnauthorized, "invalid API key")
	}
	k := KeyCheck{hash: hashKey(rawKey)}
	if s.keys != nil {
		k.cacheKey = keyCacheKey(k.hash)
	}
	return k, nil
}

// Hash is the key's SHA-256 (hex). Per-key state named by it (the rate limit) starts afresh with each
// new key, as a rotation makes one.
func (k KeyCheck) Hash() string { return k.hash }

// CacheKey is the Redis key of the key's cache entry, "" when the store does not use the key cache
// (standalone mode).
func (k KeyCheck) CacheKey() string { return k.cacheKey }

func (k *keyCache) fill(ctx context.Context, hash string, a *Account) {
	raw, err := json.Marshal(cachedAccount{
		ID: a.ID, KeyID: a.KeyID, Name: a.Name, Email: a.Email, IsAgency: a.IsAgency, ParentID: a.ParentID,
		OwnerUserID: a.OwnerUserID, RateLimitPerMinute: a.RateLimitPerMinute, CreatedAt: a.CreatedAt,
	})
	if err != nil {
		return
	}
	// Best effort: without the entry the next request asks the database again.
	ctx, cancel := context.WithTimeout(ctx, keyCacheTimeout)
	defer cancel()
	_ = k.rdb.SetNX(ctx, keyCacheKey(hash), raw, keyCacheTTL).Err()
}

// revoke marks hash revoked. Errors: UNAVAILABLE when Redis does not answer, or no replica confirms
// the mark in time when revocations wait for one.
func (k *keyCache) revoke(ctx context.Context, hash string) error {
	if k.replicaWait == 0 {
		if err := k.rdb.Set(ctx, keyCacheKey(hash), keyRevoked, keyRevokedTTL).Err(); err != nil {
			return Errorf(CodeUnavailable, "the key could not be rotated because Redis is unavailable; nothing changed, try again")
		}
		return nil
	}
	// WAIT counts the replicas that have the writes of its own connection: both commands go in one
	// pipeline, on one connection.
	var wait *redis.Cmd
	_, err := k.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, keyCacheKey(hash), keyRevoked, keyRevokedTTL)
		wait = p.Do(ctx, "WAIT", 1, k.replicaWait.Milliseconds())
		return nil
	})
	if err != nil {
		return Errorf(CodeUnavailable, "the key could not be rotated because Redis is unavailable; nothing changed, try again")
	}
	if acked, _ := wait.Int64(); acked < 1 {
		return Errorf(CodeUnavailable, "the key could not be rotated because no Redis replica confirmed the revocation (a failover could undo it); nothing changed, try again once a replica is connected")
	}
	return nil
}

// forget drops hash's entry so that the next request reads the account afresh (after a settings
// change); the entry expires within keyCacheTTL anyway.
func (k *keyCache) forget(ctx context.Context, hash string) {
	_ = k.rdb.Del(ctx, keyCacheKey(hash)).Err()
}

// activeKeyHash returns the hash of the account's active key, or "" when it has none.
func (s *Store) activeKeyHash(ctx context.Context, accountID string) (string, error) {
	var hashes []string
	err := s.db.NewSelect().Model((*APIKey)(nil)).Column("key_hash").
		Where("account_id = ? AND revoked_at IS NULL", accountID).Scan(ctx, &hashes)
	if err != nil {
		return "", fmt.Errorf("active key: %w", err)
	}
	if len(hashes) == 0 {
		return "", nil
	}
	return hashes[0], nil
}
