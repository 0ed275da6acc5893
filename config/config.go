// Package config loads the service's configuration from the environment once, validates it, and
// hands it down as one struct. No other package reads the environment.
package config

import (
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"funnelchat/models"
)

// Config holds every setting of the README's "Configuration" table.
type Config struct {
	Port        int
	DatabaseURL string
	RedisURL    string
	DataDir     string

	// DatabaseReplicaURL is a streaming standby of DATABASE_URL's database that serves the api's
	// lag-tolerant reads (models/report, Replica); empty: every read goes to DATABASE_URL. Production
	// mode only.
	DatabaseReplicaURL string
	// ReplicaMaxLag is how far behind the primary the replica may be for those reads to go to it;
	// further behind, or unreachable, they go to the primary.
	ReplicaMaxLag time.Duration

	// RedisSentinelAddrs (host:port each) and RedisSentinelMaster, set together, make every Redis
	// client connect through Redis Sentinel to the named master; RedisURL then only supplies the
	// password and database number.
	RedisSentinelAddrs  []string
	RedisSentinelMaster string
	// RedisSentinelPassword is the sentinels' own password (their requirepass), if they have one.
	RedisSentinelPassword string
	// RedisClusterAddrs (host:port each) makes every Redis client a Redis Cluster client that starts
	// from these nodes; RedisURL then only supplies the credentials and TLS (its database must be 0).
	RedisClusterAddrs []string

	// SecretsKey encrypts provider credentials and webhook signing secrets at rest (32 bytes, given
	// base64-encoded); nil stores them as they are. SecretsKeyPrevious still reads what an earlier key
	// encrypted, until `admin secrets rotate` has re-encrypted it.
	SecretsKey         []byte
	SecretsKeyPrevious []byte

	// Standalone is true when neither DATABASE_URL nor REDIS_URL is set: the api then runs SQLite, an
	// in-process Redis and the worker in one process.
	Standalone bool

	RequireHTTPS bool
	TrustProxy   bool
	TLSCertFile  string
	TLSKeyFile   string

	RateLimitPerMinute int
	MaxBodyBytes       int
	MaxMediaBytes      int

	WebhookTimeout       time.Duration
	WebhookRetrySchedule []time.Duration
	WebhookAllowPrivate  bool

	CampaignSendsPerMinute int
	// DefaultQuietHours are the quiet hours of accounts that have not chosen their own (nil: none).
	DefaultQuietHours *models.QuietHours

	BotLLMBaseURL   string
	BotLLMAPIKey    string
	BotLLMModel     string
	BotReplyCredits float64

	WorkerConcurrency int
	// DatabasePoolSize is DATABASE_POOL_SIZE: PostgreSQL connections per process, 0 for each process's
	// default (see APIDatabasePool and WorkerDatabasePool).
	DatabasePoolSize int
	SweepInterval    time.Duration
	// MessageRetentionMonths is MESSAGE_RETENTION_MONTHS: the worker drops the messages (PostgreSQL:
	// whole monthly partitions) older than that many whole months before the current one; 0, the
	// default, keeps every message. Consent events are never dropped (models/partitions.go).
	MessageRetentionMonths int
	// MetricsPort is where a separate worker process serves /metrics (0: not served). The api serves
	// /metrics on PORT.
	MetricsPort int

	AdminUser     string
	AdminPassword string
	LogLevel      slog.Level

	SMSAPIBaseURL      string
	WhatsAppAPIBaseURL string
	// The Send API of Messenger and Instagram, version segment included; empty: Meta's own
	// (https://graph.facebook.com/v23.0, https://graph.instagram.com/v23.0).
	MessengerAPIBaseURL string
	InstagramAPIBaseURL string
}

// Load reads the configuration through getenv (os.Getenv in the binaries, a map in tests). The error
// names the first variable whose value is invalid.
func Load(getenv func(string) string) (*Config, error) {
	r := reader{getenv: getenv}
	c := &Config{
		DatabaseURL:        strings.TrimSpace(getenv("DATABASE_URL")),
		RedisURL:           strings.TrimSpace(getenv("REDIS_URL")),
		DatabaseReplicaURL: strings.TrimSpace(getenv("DATABASE_REPLICA_URL")),
	}
	if c.DatabaseReplicaURL != "" && c.DatabaseURL == "" {
		return nil, errors.New("config: DATABASE_REPLICA_URL is set but DATABASE_URL is not: a read replica is for production mode (PostgreSQL), beside its primary")
	}
	if err := c.loadSentinel(getenv); err != nil {
		return nil, err
	}
	if err := c.loadCluster(getenv); err != nil {
		return nil, err
	}
	sentinel := len(c.RedisSentinelAddrs) > 0
	cluster := len(c.RedisClusterAddrs) > 0
	switch {
	case sentinel && cluster:
		return nil, errors.New("config: REDIS_CLUSTER_ADDRS and REDIS_SENTINEL_ADDRS: set one or the other, not both (a Redis Cluster fails over by itself)")
	case c.DatabaseURL == "" && c.RedisURL == "" && !sentinel && !cluster:
		c.Standalone = true
	case c.DatabaseURL == "" && sentinel:
		return nil, errors.New("config: REDIS_SENTINEL_ADDRS is set but DATABASE_URL is not: Sentinel is for production mode")
	case c.DatabaseURL == "" && cluster:
		return nil, errors.New("config: REDIS_CLUSTER_ADDRS is set but DATABASE_URL is not: Redis Cluster is for production mode")
	case c.DatabaseURL == "":
		return nil, errors.New("config: REDIS_URL is set but DATABASE_URL is not: set both (production) or neither (standalone mode)")
	case c.RedisURL == "" && (sentinel || cluster):
		// Sentinel names the master, the cluster its nodes; the URL would only add credentials (and,
		// with Sentinel, a database number).
		c.RedisURL = "redis://"
	case c.RedisURL == "":
		return nil, errors.New("config: DATABASE_URL is set but REDIS_URL is not: set both (production) or neither (standalone mode)")
	}
	if !c.Standalone {
		u, err := url.Parse(c.DatabaseURL)
		if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			return nil, errors.New("config: DATABASE_URL: must be a postgres:// or postgresql:// URL")
		}
		u, err = url.Parse(c.RedisURL)
		if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") {
			return nil, errors.New("config: REDIS_URL: must be a redis:// or rediss:// URL")
		}
		if c.DatabaseReplicaURL != "" {
			u, err = url.Parse(c.DatabaseReplicaURL)
			if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
				return nil, errors.New("config: DATABASE_REPLICA_URL: must be a postgres:// or postgresql:// URL with a host")
			}
			if c.DatabaseReplicaURL == c.DatabaseURL {
				return nil, errors.New("config: DATABASE_REPLICA_URL: is DATABASE_URL itself; set it to a streaming standby of that database, or leave it unset")
			}
		}
		if cluster {
			opt, err := redis.ParseURL(c.RedisURL)
			if err != nil {
				return nil, fmt.Errorf("config: REDIS_URL: %v", err)
			}
			if opt.DB != 0 {
				return nil, fmt.Errorf("config: REDIS_CLUSTER_ADDRS: a Redis Cluster has only database 0 (it refuses SELECT), but REDIS_URL names database %d; "+
					"beside REDIS_CLUSTER_ADDRS, REDIS_URL gives only the credentials and TLS (rediss://)", opt.DB)
			}
		}
	}

	c.Port = r.intRange("PORT", 8080, 1, 65535)
	c.DataDir = r.str("DATA_DIR", "./data")
	c.RequireHTTPS = r.boolean("REQUIRE_HTTPS", !c.Standalone)
	c.TrustProxy = r.boolean("TRUST_PROXY", false)
	c.TLSCertFile = r.str("TLS_CERT_FILE", "")
	c.TLSKeyFile = r.str("TLS_KEY_FILE", "")
	c.RateLimitPerMinute = r.intRange("RATE_LIMIT_PER_MINUTE", 600, 1, 1_000_000)
	c.MaxBodyBytes = r.intRange("MAX_BODY_BYTES", 10<<20, 1024, 1<<30)
	c.MaxMediaBytes = r.intRange("MAX_MEDIA_BYTES", 5<<20, 1, 1<<30)
	c.WebhookTimeout = r.duration("WEBHOOK_TIMEOUT", 10*time.Second)
	c.WebhookRetrySchedule = r.durations("WEBHOOK_RETRY_SCHEDULE", []time.Duration{5 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute})
	c.WebhookAllowPrivate = r.boolean("WEBHOOK_ALLOW_PRIVATE", c.Standalone)
	c.CampaignSendsPerMinute = r.intRange("CAMPAIGN_SENDS_PER_MINUTE", 20, 1, 100_000)
	c.DefaultQuietHours = r.quietHours("DEFAULT_QUIET_HOURS")
	c.BotLLMBaseURL = r.httpURL("BOT_LLM_BASE_URL")
	c.BotLLMAPIKey = r.str("BOT_LLM_API_KEY", "")
	c.BotLLMModel = r.str("BOT_LLM_MODEL", "")
	c.BotReplyCredits = r.nonNegativeFloat("BOT_REPLY_CREDITS", 1)
	c.WorkerConcurrency = r.intRange("WORKER_CONCURRENCY", 20, 1, 10_000)
	c.DatabasePoolSize = r.intRange("DATABASE_POOL_SIZE", 0, 1, 10_000)
	c.SweepInterval = r.duration("SWEEP_INTERVAL", time.Minute)
	c.ReplicaMaxLag = r.duration("REPLICA_MAX_LAG", 5*time.Second)
	c.MessageRetentionMonths = r.intRange("MESSAGE_RETENTION_MONTHS", 0, 0, 1200)
	c.MetricsPort = r.intRange("METRICS_PORT", 0, 0, 65535)
	c.AdminUser = r.str("ADMIN_USER", "")
	c.AdminPassword = r.str("ADMIN_PASSWORD", "")
	c.LogLevel = r.level("LOG_LEVEL", slog.LevelInfo)
	c.SMSAPIBaseURL = r.httpURL("SMS_API_BASE_URL")
	c.WhatsAppAPIBaseURL = r.httpURL("WHATSAPP_API_BASE_URL")
	c.MessengerAPIBaseURL = r.httpURL("MESSENGER_API_BASE_URL")
	c.InstagramAPIBaseURL = r.httpURL("INSTAGRAM_API_BASE_URL")
	c.SecretsKey = r.secretsKey("SECRETS_KEY")
	c.SecretsKeyPrevious = r.secretsKey("SECRETS_KEY_PREVIOUS")
	if r.err != nil {
		return nil, r.err
	}

	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		return nil, errors.New("config: TLS_CERT_FILE and TLS_KEY_FILE: set both or neither")
	}
	if (c.AdminUser == "") != (c.AdminPassword == "") {
		return nil, errors.New("config: ADMIN_USER and ADMIN_PASSWORD: set both or neither")
	}
	if c.SecretsKeyPrevious != nil && c.SecretsKey == nil {
		return nil, errors.New("config: SECRETS_KEY_PREVIOUS: set only beside SECRETS_KEY (the new key), while rotating")
	}
	if c.DatabasePoolSize > 0 && c.DatabasePoolSize < c.WorkerConcurrency+workerPoolHeadroom {
		return nil, fmt.Errorf("config: DATABASE_POOL_SIZE: must be at least WORKER_CONCURRENCY + %d (%d), got %d: "+
			"a worker's task may hold one connection while it writes on another; lower WORKER_CONCURRENCY to use fewer",
			workerPoolHeadroom, c.WorkerConcurrency+workerPoolHeadroom, c.DatabasePoolSize)
	}
	if c.BotLLMBaseURL != "" && c.BotLLMModel == "" {
		return nil, errors.New("config: BOT_LLM_MODEL: required when BOT_LLM_BASE_URL is set")
	}
	return c, nil
}

// loadSentinel reads REDIS_SENTINEL_ADDRS and REDIS_SENTINEL_MASTER, which go together.
func (c *Config) loadSentinel(getenv func(string) string) error {
	addrs := strings.TrimSpace(getenv("REDIS_SENTINEL_ADDRS"))
	c.RedisSentinelMaster = strings.TrimSpace(getenv("REDIS_SENTINEL_MASTER"))
	c.RedisSentinelPassword = strings.TrimSpace(getenv("REDIS_SENTINEL_PASSWORD"))
	if (addrs == "") != (c.RedisSentinelMaster == "") {
		return errors.New("config: REDIS_SENTINEL_ADDRS and REDIS_SENTINEL_MASTER: set both or neither")
	}
	if addrs == "" && c.RedisSentinelPassword != "" {
		return errors.New("config: REDIS_SENTINEL_PASSWORD: set only with REDIS_SENTINEL_ADDRS and REDIS_SENTINEL_MASTER")
	}
	if addrs == "" {
		return nil
	}
	var err error
	c.RedisSentinelAddrs, err = hostPorts("REDIS_SENTINEL_ADDRS", addrs)
	return err
}

// loadCluster reads REDIS_CLUSTER_ADDRS: some of the cluster's nodes (any, masters or replicas), from
// which the client learns the whole cluster.
func (c *Config) loadCluster(getenv func(string) string) error {
	addrs := strings.TrimSpace(getenv("REDIS_CLUSTER_ADDRS"))
	if addrs == "" {
		return nil
	}
	var err error
	c.RedisClusterAddrs, err = hostPorts("REDIS_CLUSTER_ADDRS", addrs)
	return err
}

// hostPorts reads the comma-separated host:port list addrs of the variable name.
func hostPorts(name, addrs string) ([]string, error) {
	var out []string
	for _, a := range strings.Split(addrs, ",") {
		a = strings.TrimSpace(a)
		host, port, err := net.SplitHostPort(a)
		if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("config: %s: must be a comma-separated list of host:port, got %q", name, addrs)
		}
		out = append(out, a)
	}
	return out, nil
}

// apiDatabasePool is an api process's default PostgreSQL pool. database/sql keeps only two idle
// connections by default, so under concurrent requests it would open and close a connection (a
// PostgreSQL backend process) for nearly every request; the pool is kept open instead. Incoming
// messages share batched writes and keys are checked in Redis, so a small pool serves thousands of
// requests a second; it is small so that a few api and worker processes fit in PostgreSQL's default 100
// connections.
const apiDatabasePool = 16

// workerPoolHeadroom is how many connections a worker keeps beyond one per task: a campaign send holds
// its contact's consent (a transaction) while it records the attempt on a second connection, so a pool
// of exactly WORKER_CONCURRENCY could leave every task waiting for a connection another one holds.
const workerPoolHeadroom = 2

// APIDatabasePool is an api process's PostgreSQL pool size: DATABASE_POOL_SIZE, else 16.
func (c *Config) APIDatabasePool() int {
	if c.DatabasePoolSize > 0 {
		return c.DatabasePoolSize
	}
	return apiDatabasePool
}

// WorkerDatabasePool is a worker process's PostgreSQL pool size: DATABASE_POOL_SIZE (at least
// WORKER_CONCURRENCY + 2, checked by Load), else WORKER_CONCURRENCY + 5.
func (c *Config) WorkerDatabasePool() int {
	if c.DatabasePoolSize > 0 {
		return c.DatabasePoolSize
	}
	return c.WorkerConcurrency + 5
}

// TLSEnabled reports whether the api terminates TLS itself.
func (c *Config) TLSEnabled() bool { return c.TLSCertFile != "" }

// LLMEnabled reports whether the bot calls an OpenAI-compatible model instead of the offline bot.
func (c *Config) LLMEnabled() bool { return c.BotLLMBaseURL != "" }

// reader collects the first error so that Load reads like a list of settings.
type reader struct {
	getenv func(string) string
	err    error
}

func (r *reader) fail(name, format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("config: %s: %s", name, fmt.Sprintf(format, args...))
	}
}

func (r *reader) raw(name string) (string, bool) {
	v := strings.TrimSpace(r.getenv(name))
	return v, v != ""
}

func (r *reader) str(name, def string) string {
	if v, ok := r.raw(name); ok {
		return v
	}
	return def
}

func (r *reader) intRange(name string, def, lo, hi int) int {
	v, ok := r.raw(name)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		r.fail(name, "must be a whole number from %d to %d, got %q", lo, hi, v)
		return def
	}
	return n
}

func (r *reader) boolean(name string, def bool) bool {
	v, ok := r.raw(name)
	if !ok {
		return def
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		r.fail(name, "must be true or false, got %q", v)
		return def
	}
	return b
}

func (r *reader) duration(name string, def time.Duration) time.Duration {
	v, ok := r.raw(name)
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		r.fail(name, "must be a positive Go duration such as 10s or 2m, got %q", v)
		return def
	}
	return d
}

func (r *reader) durations(name string, def []time.Duration) []time.Duration {
	v, ok := r.raw(name)
	if !ok {
		return def
	}
	var out []time.Duration
	for _, part := range strings.Split(v, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(part))
		if err != nil || d <= 0 {
			r.fail(name, "must be a comma-separated list of positive Go durations such as 5s,30s,2m, got %q", v)
			return def
		}
		out = append(out, d)
	}
	return out
}

func (r *reader) nonNegativeFloat(name string, def float64) float64 {
	v, ok := r.raw(name)
	if !ok {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	_, frac, _ := strings.Cut(strconv.FormatFloat(f, 'f', -1, 64), ".")
	if err != nil || f < 0 || f > 1e9 || f != f || len(frac) > 3 {
		r.fail(name, "must be a number from 0 to 1e9 with at most three decimal places, got %q", v)
		return def
	}
	return f
}

func (r *reader) httpURL(name string) string {
	v, ok := r.raw(name)
	if !ok {
		return ""
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		r.fail(name, "must be an http:// or https:// URL, got %q", v)
		return ""
	}
	return strings.TrimRight(v, "/")
}

// secretsKey reads a 32-byte AES-256 key given in base64 (standard or URL alphabet, padded or not).
func (r *reader) secretsKey(name string) []byte {
	v, ok := r.raw(name)
	if !ok {
		return nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if key, err := enc.DecodeString(v); err == nil && len(key) == 32 {
			return key
		}
	}
	r.fail(name, "must be 32 random bytes in base64 (openssl rand -base64 32); the value given is not")
	return nil
}

// quietHours reads HH:MM-HH:MM or "off"; absent, models.DefaultQuietHours (21:00-08:00).
func (r *reader) quietHours(name string) *models.QuietHours {
	v, ok := r.raw(name)
	if !ok {
		q := models.DefaultQuietHours
		return &q
	}
	q, err := models.ParseQuietHours(v)
	if err != nil {
		r.fail(name, "must be HH:MM-HH:MM (e.g. 21:00-08:00) or off: %s", models.ErrorMessage(err))
		return nil
	}
	return q
}

func (r *reader) level(name string, def slog.Level) slog.Level {
	v, ok := r.raw(name)
	if !ok {
		return def
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(v)); err != nil {
		r.fail(name, "must be debug, info, warn or error, got %q", v)
		return def
	}
	return l
}
