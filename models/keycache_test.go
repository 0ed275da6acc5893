package models_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"funnelchat/models"
)

// cachingStore is a store of its own on the package's database that uses the key cache on the
// package's Redis, as the api processes do.
func cachingStore(t *testing.T) *models.Store {
	t.Helper()
	var s *models.Store
	var err error
	if env.Postgres() {
		s, err = models.OpenPostgres(env.DatabaseURL, 2)
	} else {
		s, err = models.OpenSQLite(env.SQLitePath)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	s.UseKeyCache(env.Redis)
	return s
}

// readScript runs read_key_cache alone and answers all it returns.
var readScript = redis.NewScript(models.KeyCacheLua + `
return {read_key_cache(KEYS[1], tonumber(ARGV[1]))}
`)

// luaRead is what read_key_cache returned for the entry under cacheKey.
type luaRead struct {
	status  int64
	entry   string
	account string
	limit   int64
}

func readInLua(t *testing.T, cacheKey string, defaultLimit int) luaRead {
	t.Helper()
	v, err := readScript.Run(context.Background(), env.Redis, []string{cacheKey}, defaultLimit).Slice()
	if err != nil {
		t.Fatalf("read_key_cache: %v", err)
	}
	var r luaRead
	r.status, _ = v[0].(int64)
	if len(v) == 4 {
		r.entry, _ = v[1].(string)
		r.account, _ = v[2].(string)
		r.limit, _ = v[3].(int64)
	} else if len(v) != 1 {
		t.Fatalf("read_key_cache answered %v", v)
	}
	return r
}

func cacheKeyOf(t *testing.T, s *models.Store, rawKey string) string {
	t.Helper()
	k, err := s.CheckKey(rawKey)
	if err != nil || k.CacheKey() == "" {
		t.Fatalf("CheckKey: %v, cache key %q", err, k.CacheKey())
	}
	return k.CacheKey()
}

// The key cache's entry is read by Lua inside Redis (models.KeyCacheLua) and by Go (CachedAccount,
// Account.RateLimit): this holds the two readings to each other, on entries Go writes and on entries
// it does not.
func TestKeyCacheLuaReadsWhatGoWrites(t *testing.T) {
	ctx := context.Background()
	s := cachingStore(t)
	const defaultLimit = 600

	t.Run("entries Go writes", func(t *testing.T) {
		plain := newAccount(t)
		limited := newAccount(t)
		if _, err := s.SetRateLimit(ctx, limited.Account.Email, 7); err != nil {
			t.Fatal(err)
		}
		for _, created := range []*models.CreatedAccount{plain, limited} {
			acc, err := s.Authenticate(ctx, created.APIKey) // a miss: the database answers and fills the entry
			if err != nil {
				t.Fatal(err)
			}
			cacheKey := cacheKeyOf(t, s, created.APIKey)
			lua := readInLua(t, cacheKey, defaultLimit)
			if lua.status != models.KeyCacheHit || lua.account != acc.ID || lua.limit != int64(acc.RateLimit(defaultLimit)) {
				t.Errorf("Lua read %+v, want a hit on %s with the limit %d", lua, acc.ID, acc.RateLimit(defaultLimit))
			}
			goAcc, ok := models.CachedAccount(lua.entry)
			if !ok || goAcc.ID != acc.ID || goAcc.RateLimit(defaultLimit) != acc.RateLimit(defaultLimit) || goAcc.KeyID != acc.KeyID {
				t.Errorf("CachedAccount(%s) = %+v, %v; want account %s", lua.entry, goAcc, ok, acc.ID)
			}
		}
		if acc, _ := models.CachedAccount(readInLua(t, cacheKeyOf(t, s, limited.APIKey), defaultLimit).entry); acc == nil || acc.RateLimit(defaultLimit) != 7 {
			t.Errorf("the limited account's entry: %+v, want its limit of 7", acc)
		}
	})

	t.Run("the revoked mark", func(t *testing.T) {
		created := newAccount(t)
		if _, err := s.Authenticate(ctx, created.APIKey); err != nil {
			t.Fatal(err)
		}
		if _, err := s.RotateAPIKey(ctx, created.Account.ID); err != nil {
			t.Fatal(err)
		}
		cacheKey := cacheKeyOf(t, s, created.APIKey)
		if lua := readInLua(t, cacheKey, defaultLimit); lua.status != models.KeyCacheUnusable {
			t.Errorf("Lua read of the revoked mark: %+v, want unusable", lua)
		}
		raw, err := env.Redis.Get(ctx, cacheKey).Result()
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := models.CachedAccount(raw); ok {
			t.Errorf("CachedAccount took the revoked mark %q for an account", raw)
		}
	})

	t.Run("entries Go does not write", func(t *testing.T) {
		for _, tt := range []struct {
			entry string
			// luaOnly: the script reads an account (and counts the request with its id and limit) where
			// Go reads none; the database then answers (AuthenticateRead). The other way round must
			// never happen: Go would take an entry for an account that the script refused.
			luaOnly bool
		}{
			{entry: `{"id":"acc_x"}`},
			{entry: `{"id":"acc_x","rateLimitPerMinute":null}`},
			{entry: `{"id":"acc_x","rateLimitPerMinute":9}`},
			{entry: `{"id":"acc_x","rateLimitPerMinute":9,"unknown":[1,2]}`},
			{entry: `{"id":""}`},
			{entry: `{"id":5}`},
			{entry: `{"id":null}`},
			{entry: `{}`},
			{entry: `[]`},
			{entry: `null`},
			{entry: `"acc_x"`},
			{entry: `{not json`},
			{entry: `{"rateLimitPerMinute":5}`},
			{entry: `{"id":"acc_x","rateLimitPerMinute":"9"}`, luaOnly: true},
			{entry: `{"id":"acc_x","isAgency":"yes"}`, luaOnly: true},
		} {
			cacheKey := "apikey:lua-go-" + uniqueEmail("entry")
			if err := env.Redis.Set(ctx, cacheKey, tt.entry, time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			lua := readInLua(t, cacheKey, defaultLimit)
			goAcc, goOK := models.CachedAccount(tt.entry)
			luaOK := lua.status == models.KeyCacheHit
			switch {
			case lua.status != models.KeyCacheHit && lua.status != models.KeyCacheUnusable:
				t.Errorf("entry %s: Lua status %d, want hit or unusable", tt.entry, lua.status)
			case goOK && !luaOK:
				t.Errorf("entry %s: Go reads account %+v, Lua none", tt.entry, goAcc)
			case luaOK && !goOK && !tt.luaOnly:
				t.Errorf("entry %s: Lua reads account %s, Go none", tt.entry, lua.account)
			case !luaOK && tt.luaOnly:
				t.Errorf("entry %s: Lua reads no account", tt.entry)
			case goOK && (goAcc.ID != lua.account || int64(goAcc.RateLimit(defaultLimit)) != lua.limit || lua.entry != tt.entry):
				t.Errorf("entry %s: Go reads %s with the limit %d, Lua %+v", tt.entry, goAcc.ID, goAcc.RateLimit(defaultLimit), lua)
			}
		}
	})

	t.Run("no entry", func(t *testing.T) {
		if lua := readInLua(t, "apikey:lua-go-none-"+uniqueEmail("none"), defaultLimit); lua.status != models.KeyCacheMiss {
			t.Errorf("Lua read of no entry: %+v, want a miss", lua)
		}
	})
}

// Authenticate follows the key cache's rule (models/keycache.go): an account entry answers; a miss
// asks the database and fills the entry; a revoked mark or an unusable entry asks the database and
// is left as it is.
func TestAuthenticateThroughTheKeyCache(t *testing.T) {
	ctx := context.Background()
	s := cachingStore(t)

	t.Run("a miss fills, then the entry answers", func(t *testing.T) {
		created := newAccount(t)
		cacheKey := cacheKeyOf(t, s, created.APIKey)
		if _, err := s.Authenticate(ctx, created.APIKey); err != nil {
			t.Fatal(err)
		}
		raw, err := env.Redis.Get(ctx, cacheKey).Result()
		if err != nil {
			t.Fatalf("no entry after a miss: %v", err)
		}
		if ttl := env.Redis.TTL(ctx, cacheKey).Val(); ttl <= 0 || ttl > 5*time.Minute {
			t.Errorf("entry TTL %s, want at most 5 minutes", ttl)
		}
		// An entry that differs from the database shows which one answered.
		marked := `{"id":"` + created.Account.ID + `","name":"From the cache"}`
		if err := env.Redis.Set(ctx, cacheKey, marked, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		acc, err := s.Authenticate(ctx, created.APIKey)
		if err != nil || acc.Name != "From the cache" {
			t.Errorf("Authenticate: %+v, %v; want the cached entry (raw was %s)", acc, err, raw)
		}
	})

	t.Run("an unusable entry asks the database and stays", func(t *testing.T) {
		created := newAccount(t)
		cacheKey := cacheKeyOf(t, s, created.APIKey)
		for _, entry := range []string{`{not json`, `{"id":"` + created.Account.ID + `","isAgency":"yes"}`} {
			if err := env.Redis.Set(ctx, cacheKey, entry, time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			acc, err := s.Authenticate(ctx, created.APIKey)
			if err != nil || acc.ID != created.Account.ID {
				t.Errorf("entry %s: Authenticate %+v, %v; want the database's account", entry, acc, err)
			}
			if got := env.Redis.Get(ctx, cacheKey).Val(); got != entry {
				t.Errorf("entry %s became %s", entry, got)
			}
		}
	})

	t.Run("a rotated key is refused and its mark stays", func(t *testing.T) {
		created := newAccount(t)
		if _, err := s.Authenticate(ctx, created.APIKey); err != nil {
			t.Fatal(err)
		}
		if _, err := s.RotateAPIKey(ctx, created.Account.ID); err != nil {
			t.Fatal(err)
		}
		_, err := s.Authenticate(ctx, created.APIKey)
		wantCode(t, err, models.CodeUnauthorized, "the rotated key")
		entry := cacheKeyOf(t, s, created.APIKey)
		if got := env.Redis.Get(ctx, entry).Val(); got != "revoked" {
			t.Errorf("the rotated key's entry %q, want the revoked mark", got)
		}
		// An api of the release before the entry's name took its hash tag (apikey:<hash>, not
		// apikey:{<hash>}) reads the other name during the deploy: the mark is there too, over the
		// account such a process may have cached.
		legacy := strings.NewReplacer("{", "", "}", "").Replace(entry)
		if legacy == entry || !strings.HasPrefix(entry, "apikey:{") {
			t.Fatalf("the entry %q carries no hash tag", entry)
		}
		if got := env.Redis.Get(ctx, legacy).Val(); got != "revoked" {
			t.Errorf("the rotated key's entry under its earlier name %q: %q, want the revoked mark", legacy, got)
		}
	})

	t.Run("an unknown key is not cached", func(t *testing.T) {
		const unknown = "sk_unknown_key_for_the_cache_test"
		_, err := s.Authenticate(ctx, unknown)
		wantCode(t, err, models.CodeUnauthorized, "an unknown key")
		if n := env.Redis.Exists(ctx, cacheKeyOf(t, s, unknown)).Val(); n != 0 {
			t.Errorf("an unknown key left an entry")
		}
	})
}
