package models

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// keyCache keeps, in Redis, what an API key authenticates as, so that a request costs one Redis read
// instead of a database query. Every api process shares it, and a rotation marks the old key revoked
// there before the database revokes it, so the old key stops working everywhere at once. The rule is
// defined here, once:
//
//   - An entry apikey:{<hash>} is read by KeyCacheLua, inside a Redis script (the api's per-request
//     script reads it together with the key's rate limit, api/checks.go; Authenticate runs it alone).
//     An account entry answers (KeyCacheHit); a missing entry (KeyCacheMiss), a revoked mark or an
//     entry that is not an account (KeyCacheUnusable), or a Redis error go to the database, which stays
//     the authority (AuthenticateRead).
//   - After a database hit that followed a miss, the entry is written with SET NX: it never overwrites
//     a revoked mark, so a request that read the key as valid just before a rotation cannot bring it
//     back. After a revoked mark, an unusable entry or a Redis error nothing is written.
//   - RotateAPIKey writes the revoked mark first and refuses with UNAVAILABLE when it cannot, so no
//     rotation returns while an entry for the old key can still answer.
//
// Only fields that never change, or may lag by keyCacheTTL (the per-account rate limit), are cached.
// There is no negative caching: an unknown key asks the database every time. It is off in standalone
// mode, where the admin CLI cannot reach the api's in-process Redis.
type keyCache struct {
	rdb redis.UniversalClient
	// replicaWait, when set, is how long a revocation waits for a Redis replica to confirm it (see
	// KeyRevocationsWaitForAReplica).
	replicaWait time.Duration
	// legacy: a revocation also marks, and forget also drops, the entry's name of the earlier release
	// (legacyKeyCacheKey). Not on Redis Cluster, where no earlier release ran.
	legacy bool
}

const (
	// keyCacheTimeout bounds a read or a fill: when Redis is slow or down the database answers instead,
	// and a request should not wait out go-redis's dial retries first.
	keyCacheTimeout = 250 * time.Millisecond
	keyCacheTTL     = 5 * time.Minute
	keyRevokedTTL   = 24 * time.Hour
	keyRevoked      = "revoked"
)

// cachedAccount is what the cache keeps of an account, as JSON. KeyCacheLua reads two members of it
// in Redis, "id" and "rateLimitPerMinute": TestKeyCacheLuaReadsWhatGoWrites holds the two to each other.
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

// What KeyCacheLua's read_key_cache finds for a key, the first value of its answer.
const (
	// KeyCacheHit: the entry is an account.
	KeyCacheHit = 1
	// KeyCacheMiss: no entry. The database answers, and its answer is cached.
	KeyCacheMiss = 0
	// KeyCacheUnusable: the revoked mark of a rotated key, or an entry that is not an account. The
	// database answers, and nothing is cached.
	KeyCacheUnusable = -1
)

// KeyCacheLua defines the Lua function read_key_cache(entry_key, limit) for a Redis script that reads
// an API key's cache entry in the same call as other per-request state (the api's, api/checks.go).
// entry_key is KeyCheck.CacheKey; limit is the default requests per minute. It returns KeyCacheMiss or
// KeyCacheUnusable alone, or KeyCacheHit, the entry, the account id and the account's limit (its
// rateLimitPerMinute, else limit). Hand the first two to ParseKeyCacheRead and AuthenticateRead.
//
// Go expresses the same reading twice more, because the script must act on the entry inside Redis and
// Go must then build the account: CachedAccount decides which entries are accounts, and
// Account.RateLimit which limit applies. TestKeyCacheLuaReadsWhatGoWrites holds the three together.
var KeyCacheLua = `
local function read_key_cache(entry_key, limit)
  local entry = redis.call("GET", entry_key)
  if not entry then
    return ` + strconv.Itoa(KeyCacheMiss) + `
  end
  if entry == ` + strconv.Quote(keyRevoked) + ` then
    return ` + strconv.Itoa(KeyCacheUnusable) + `
  end
  -- An account is an object with a non-empty string id (as CachedAccount decides).
  local ok, acc = pcall(cjson.decode, entry)
  if not ok or type(acc) ~= "table" or type(acc.id) ~= "string" or acc.id == "" then
    return ` + strconv.Itoa(KeyCacheUnusable) + `
  end
  -- Its own limit overrides the default (as Account.RateLimit does).
  if type(acc.rateLimitPerMinute) == "number" then
    limit = acc.rateLimitPerMinute
  end
  return ` + strconv.Itoa(KeyCacheHit) + `, entry, acc.id, limit
end
`

// keyReadScript is KeyCacheLua alone, for Authenticate: KEYS[1] the entry.
var keyReadScript = redis.NewScript(KeyCacheLua + `
local status, entry = read_key_cache(KEYS[1], 0)
return {status, entry}
`)

// KeyCacheRead is what a script found in the key cache for a key: Status is KeyCacheHit, KeyCacheMiss
// or KeyCacheUnusable, and Entry the entry with KeyCacheHit.
type KeyCacheRead struct {
	Status int64
	Entry  string
}

// ParseKeyCacheRead reads the head of a script's answer that begins with read_key_cache's status and,
// with KeyCacheHit, its entry (KeyCacheLua).
func ParseKeyCacheRead(v []any) (*KeyCacheRead, error) {
	if len(v) == 0 {
		return nil, errors.New("key cache: empty answer")
	}
	status, _ := v[0].(int64)
	switch status {
	case KeyCacheHit:
		read := &KeyCacheRead{Status: status}
		if len(v) > 1 {
			read.Entry, _ = v[1].(string)
		}
		return read, nil
	case KeyCacheMiss, KeyCacheUnusable:
		return &KeyCacheRead{Status: status}, nil
	}
	return nil, fmt.Errorf("key cache: answer %v", v[0])
}

// RateLimit is the account's requests per minute per key: its own, else defaultPerMinute
// (RATE_LIMIT_PER_MINUTE). KeyCacheLua applies the same rule to a cached entry, inside Redis.
func (a *Account) RateLimit(defaultPerMinute int) int {
	if a.RateLimitPerMinute != nil {
		return *a.RateLimitPerMinute
	}
	return defaultPerMinute
}

// AuthenticateRead finishes authenticating k after read, what a script found in the key cache for it
// (nil when nothing was read: the store does not use the cache, or Redis failed). It returns the
// account, with cached true when it is the entry's. Otherwise the database answers, and its answer is
// cached only after a miss (see keyCache); an entry the script took for an account and CachedAccount
// does not is answered by the database too. Errors: UNAUTHORIZED; a failing database.
func (s *Store) AuthenticateRead(ctx context.Context, k KeyCheck, read *KeyCacheRead) (acc *Account, cached bool, err error) {
	fill := false
	if read != nil && s.keys != nil {
		switch read.Status {
		case KeyCacheHit:
			if acc, ok := CachedAccount(read.Entry); ok {
				return acc, true, nil
			}
		case KeyCacheMiss:
			fill = true
		}
	}
	acc, err = s.authenticateInDatabase(ctx, k, fill)
	return acc, false, err
}

// read runs keyReadScript for k within keyCacheTimeout; nil when Redis did not answer.
func (k *keyCache) read(ctx context.Context, key KeyCheck) *KeyCacheRead {
	ctx, cancel := context.WithTimeout(ctx, keyCacheTimeout)
	defer cancel()
	v, err := keyReadScript.Run(ctx, k.rdb, []string{key.cacheKey}).Slice()
	if err != nil {
		return nil
	}
	read, err := ParseKeyCacheRead(v)
	if err != nil {
		return nil
	}
	return read
}

// UseKeyCache makes Authenticate consult Redis before the database and RotateAPIKey mark revoked keys
// there. Every process that authenticates or rotates keys on the same database must use the same Redis.
func (s *Store) UseKeyCache(rdb redis.UniversalClient) {
	_, cluster := rdb.(*redis.ClusterClient)
	s.keys = &keyCache{rdb: rdb, legacy: !cluster}
}

// KeyRevocationsWaitForAReplica makes a key rotation wait up to wait for a Redis replica to hold the
// revoked mark, and refuse with UNAVAILABLE (nothing changed) when none confirms. Redis replicates
// asynchronously: without it, a mark that only the master held when it failed would be missing on the
// promoted replica, which still caches the old key, and the old key would work again for up to
// keyCacheTTL. For deployments with replicas (Redis Sentinel, Redis Cluster); call after UseKeyCache.
func (s *Store) KeyRevocationsWaitForAReplica(wait time.Duration) {
	if s.keys != nil {
		s.keys.replicaWait = wait
	}
}

// keyCacheKey is the key cache's entry for a key: apikey:{<hash>}. The hash tag is the key's, like the
// rate limit's count (api/ratelimit.go), so that the api's per-request script finds both in one slot
// on Redis Cluster, and keys spread over the cluster.
func keyCacheKey(hash string) string { return "apikey:{" + hash + "}" }

// legacyKeyCacheKey is the entry's name before it carried a hash tag, which api processes of the
// earlier release still read during the deploy that renamed it: a revocation marks it too, so that
// those processes refuse a rotated key at once as well (revoke). (Remove after a release.)
func legacyKeyCacheKey(hash string) string { return "apikey:" + hash }

// names are the names a revocation marks and forget drops: the entry's, and its legacy one.
func (k *keyCache) names(hash string) []string {
	if k.legacy {
		return []string{keyCacheKey(hash), legacyKeyCacheKey(hash)}
	}
	return []string{keyCacheKey(hash)}
}

// CachedAccount decodes a key cache entry. ok is false when raw is not an account (the revoked mark, or
// an entry that cannot be read): the database must answer then, and its answer not be cached.
// KeyCacheLua decides the same in Redis, from the entry's id.
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

// KeyCheck is an API key ready to be checked: by Authenticate, or by a caller that reads its cache
// entry (CacheKey) in a script of its own with KeyCacheLua, together with other per-request state
// (the api reads it in the same script as the key's rate limit, see api/checks.go), and then hands
// what the script found to AuthenticateRead. The guarantees listed on keyCache hold as long as the
// caller does not write the entry itself.
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

// revoke marks hash revoked, under the entry's name and its legacy name (names). Errors:
// UNAVAILABLE when Redis does not answer, or no replica confirms the mark in time when revocations
// wait for one.
func (k *keyCache) revoke(ctx context.Context, hash string) error {
	keys := k.names(hash)
	if k.replicaWait == 0 {
		_, err := k.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, key := range keys {
				p.Set(ctx, key, keyRevoked, keyRevokedTTL)
			}
			return nil
		})
		if err != nil {
			return Errorf(CodeUnavailable, "the key could not be rotated because Redis is unavailable; nothing changed, try again")
		}
		return nil
	}
	for _, key := range keys {
		if err := k.markAndWait(ctx, key); err != nil {
			return err
		}
	}
	return nil
}

// markAndWait writes the revoked mark at key on the master that holds it, followed by a WAIT there
// for a replica.
func (k *keyCache) markAndWait(ctx context.Context, key string) error {
	// WAIT counts the replicas that have the writes of its own connection: both commands go in one
	// pipeline, on one connection, to the master of the key's slot. (A cluster client would send a
	// WAIT, which names no key, to any node; MasterForKey is the node the cluster's map says holds
	// the key. Should the map be out of date, the SET is refused with MOVED, and so is the rotation.)
	node, err := masterFor(ctx, k.rdb, key)
	var wait *redis.Cmd
	if err == nil {
		_, err = node.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, key, keyRevoked, keyRevokedTTL)
			wait = p.Do(ctx, "WAIT", 1, k.replicaWait.Milliseconds())
			return nil
		})
	}
	if err != nil {
		return Errorf(CodeUnavailable, "the key could not be rotated because Redis is unavailable; nothing changed, try again")
	}
	if acked, _ := wait.Int64(); acked < 1 {
		return Errorf(CodeUnavailable, "the key could not be rotated because no Redis replica confirmed the revocation (a failover could undo it); nothing changed, try again once a replica is connected")
	}
	return nil
}

// masterFor is the client that reaches the master holding key: on Redis Cluster that master's own
// client, else rdb itself (one master, or Sentinel's current one).
func masterFor(ctx context.Context, rdb redis.UniversalClient, key string) (redis.Cmdable, error) {
	if c, ok := rdb.(*redis.ClusterClient); ok {
		return c.MasterForKey(ctx, key)
	}
	return rdb, nil
}

// forget drops hash's entry (names) so that the next request reads the account afresh (after a
// settings change); the entry expires within keyCacheTTL anyway.
func (k *keyCache) forget(ctx context.Context, hash string) {
	for _, key := range k.names(hash) {
		_ = k.rdb.Del(ctx, key).Err()
	}
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
