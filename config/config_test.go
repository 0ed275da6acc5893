package config_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"funnelchat/config"

	"funnelchat/models"
)

// env is a getenv backed by a map, so that tests never see the process environment.
func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// production is an environment with both backend URLs set.
func production(extra map[string]string) map[string]string {
	vars := map[string]string{
		"DATABASE_URL": "postgres://u:p@db.internal:5432/app?sslmode=disable",
		"REDIS_URL":    "redis://cache.internal:6379/0",
	}
	for k, v := range extra {
		vars[k] = v
	}
	return vars
}

// defaults is the configuration of the README's "Configuration" table with nothing set (standalone mode).
func defaults() *config.Config {
	return &config.Config{
		Port:                   8080,
		DataDir:                "./data",
		Standalone:             true,
		RequireHTTPS:           false,
		TrustProxy:             false,
		RateLimitPerMinute:     600,
		MaxBodyBytes:           10485760,
		MaxMediaBytes:          5242880,
		WebhookTimeout:         10 * time.Second,
		WebhookRetrySchedule:   []time.Duration{5 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute},
		WebhookAllowPrivate:    true,
		CampaignSendsPerMinute: 20,
		DefaultQuietHours:      &models.QuietHours{Start: "21:00", End: "08:00"},
		BotReplyCredits:        1,
		WorkerConcurrency:      20,
		SweepInterval:          time.Minute,
		ReplicaMaxLag:          5 * time.Second,
		LogLevel:               slog.LevelInfo,
	}
}

func TestLoadDefaults(t *testing.T) {
	t.Run("empty environment gives the documented defaults in standalone mode", func(t *testing.T) {
		got, err := config.Load(env(nil))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(defaults(), got); diff != "" {
			t.Errorf("config (-want +got):\n%s", diff)
		}
		if got.TLSEnabled() || got.LLMEnabled() {
			t.Errorf("TLSEnabled=%v LLMEnabled=%v, want both false", got.TLSEnabled(), got.LLMEnabled())
		}
	})

	t.Run("blank values count as unset", func(t *testing.T) {
		got, err := config.Load(env(map[string]string{
			"DATABASE_URL": "  ", "REDIS_URL": "", "PORT": " ", "LOG_LEVEL": "\t", "WEBHOOK_RETRY_SCHEDULE": " ",
		}))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(defaults(), got); diff != "" {
			t.Errorf("config (-want +got):\n%s", diff)
		}
	})

	t.Run("both URLs give production mode with production defaults", func(t *testing.T) {
		got, err := config.Load(env(production(nil)))
		if err != nil {
			t.Fatal(err)
		}
		want := defaults()
		want.Standalone = false
		want.RequireHTTPS = true
		want.WebhookAllowPrivate = false
		want.DatabaseURL = "postgres://u:p@db.internal:5432/app?sslmode=disable"
		want.RedisURL = "redis://cache.internal:6379/0"
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("config (-want +got):\n%s", diff)
		}
	})
}

func TestLoadModeOverrides(t *testing.T) {
	tests := []struct {
		name                string
		vars                map[string]string
		standalone          bool
		requireHTTPS        bool
		webhookAllowPrivate bool
	}{
		{
			name:       "standalone can require HTTPS and forbid private webhooks",
			vars:       map[string]string{"REQUIRE_HTTPS": "true", "WEBHOOK_ALLOW_PRIVATE": "false"},
			standalone: true, requireHTTPS: true, webhookAllowPrivate: false,
		},
		{
			name:       "production can drop HTTPS and allow private webhooks",
			vars:       production(map[string]string{"REQUIRE_HTTPS": "false", "WEBHOOK_ALLOW_PRIVATE": "true"}),
			standalone: false, requireHTTPS: false, webhookAllowPrivate: true,
		},
		{
			name:       "booleans accept strconv forms",
			vars:       production(map[string]string{"REQUIRE_HTTPS": "0", "WEBHOOK_ALLOW_PRIVATE": "TRUE"}),
			standalone: false, requireHTTPS: false, webhookAllowPrivate: true,
		},
		{
			name:       "postgresql scheme and rediss are accepted",
			vars:       map[string]string{"DATABASE_URL": "postgresql://db/app", "REDIS_URL": "rediss://cache:6380"},
			standalone: false, requireHTTPS: true, webhookAllowPrivate: false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := config.Load(env(tt.vars))
			if err != nil {
				t.Fatal(err)
			}
			if got.Standalone != tt.standalone || got.RequireHTTPS != tt.requireHTTPS || got.WebhookAllowPrivate != tt.webhookAllowPrivate {
				t.Errorf("Standalone=%v RequireHTTPS=%v WebhookAllowPrivate=%v, want %v %v %v",
					got.Standalone, got.RequireHTTPS, got.WebhookAllowPrivate,
					tt.standalone, tt.requireHTTPS, tt.webhookAllowPrivate)
			}
		})
	}
}

func TestLoadValues(t *testing.T) {
	got, err := config.Load(env(production(map[string]string{
		"PORT":                      " 3000 ",
		"DATA_DIR":                  "/var/lib/funnelchat",
		"TRUST_PROXY":               "true",
		"TLS_CERT_FILE":             "/tls/cert.pem",
		"TLS_KEY_FILE":              "/tls/key.pem",
		"RATE_LIMIT_PER_MINUTE":     "60",
		"MAX_BODY_BYTES":            "2048",
		"MAX_MEDIA_BYTES":           "1",
		"WEBHOOK_TIMEOUT":           "1500ms",
		"WEBHOOK_RETRY_SCHEDULE":    "1s, 2m30s ,1h",
		"CAMPAIGN_SENDS_PER_MINUTE": "100000",
		"DEFAULT_QUIET_HOURS":       " 20:30 - 07:45 ",
		"BOT_LLM_BASE_URL":          "https://api.openai.com/v1/",
		"BOT_LLM_API_KEY":           "sk-test",
		"BOT_LLM_MODEL":             "gpt-4o-mini",
		"BOT_REPLY_CREDITS":         "0.5",
		"WORKER_CONCURRENCY":        "3",
		"DATABASE_POOL_SIZE":        "5",
		"SWEEP_INTERVAL":            "30s",
		"DATABASE_REPLICA_URL":      "postgres://u:p@replica.internal:5432/app?sslmode=disable",
		"REPLICA_MAX_LAG":           "2s",
		"MESSAGE_RETENTION_MONTHS":  "13",
		"METRICS_PORT":              "9090",
		"ADMIN_USER":                "ops",
		"ADMIN_PASSWORD":            "secret",
		"LOG_LEVEL":                 "DEBUG",
		"SMS_API_BASE_URL":          "http://127.0.0.1:9000",
		"WHATSAPP_API_BASE_URL":     "https://graph.facebook.com/v19.0",
		"MESSENGER_API_BASE_URL":    "http://127.0.0.1:9001/v23.0",
		"INSTAGRAM_API_BASE_URL":    "http://127.0.0.1:9002/v23.0",
	})))
	if err != nil {
		t.Fatal(err)
	}
	want := &config.Config{
		Port:                   3000,
		DatabaseURL:            "postgres://u:p@db.internal:5432/app?sslmode=disable",
		RedisURL:               "redis://cache.internal:6379/0",
		DataDir:                "/var/lib/funnelchat",
		DatabaseReplicaURL:     "postgres://u:p@replica.internal:5432/app?sslmode=disable",
		ReplicaMaxLag:          2 * time.Second,
		RequireHTTPS:           true,
		TrustProxy:             true,
		TLSCertFile:            "/tls/cert.pem",
		TLSKeyFile:             "/tls/key.pem",
		RateLimitPerMinute:     60,
		MaxBodyBytes:           2048,
		MaxMediaBytes:          1,
		WebhookTimeout:         1500 * time.Millisecond,
		WebhookRetrySchedule:   []time.Duration{time.Second, 150 * time.Second, time.Hour},
		CampaignSendsPerMinute: 100000,
		DefaultQuietHours:      &models.QuietHours{Start: "20:30", End: "07:45"},
		BotLLMBaseURL:          "https://api.openai.com/v1",
		BotLLMAPIKey:           "sk-test",
		BotLLMModel:            "gpt-4o-mini",
		BotReplyCredits:        0.5,
		WorkerConcurrency:      3,
		DatabasePoolSize:       5,
		SweepInterval:          30 * time.Second,
		MessageRetentionMonths: 13,
		MetricsPort:            9090,
		AdminUser:              "ops",
		AdminPassword:          "secret",
		LogLevel:               slog.LevelDebug,
		SMSAPIBaseURL:          "http://127.0.0.1:9000",
		WhatsAppAPIBaseURL:     "https://graph.facebook.com/v19.0",
		MessengerAPIBaseURL:    "http://127.0.0.1:9001/v23.0",
		InstagramAPIBaseURL:    "http://127.0.0.1:9002/v23.0",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	if !got.TLSEnabled() || !got.LLMEnabled() {
		t.Errorf("TLSEnabled=%v LLMEnabled=%v, want both true", got.TLSEnabled(), got.LLMEnabled())
	}

	for _, level := range []struct {
		in   string
		want slog.Level
	}{{"debug", slog.LevelDebug}, {"info", slog.LevelInfo}, {"warn", slog.LevelWarn}, {"error", slog.LevelError}} {
		t.Run("LOG_LEVEL "+level.in, func(t *testing.T) {
			got, err := config.Load(env(map[string]string{"LOG_LEVEL": level.in}))
			if err != nil {
				t.Fatal(err)
			}
			if got.LogLevel != level.want {
				t.Errorf("LogLevel = %v, want %v", got.LogLevel, level.want)
			}
		})
	}
	t.Run("DATABASE_POOL_SIZE sizes the api's and the worker's pools", func(t *testing.T) {
		if api, worker := got.APIDatabasePool(), got.WorkerDatabasePool(); api != 5 || worker != 5 {
			t.Errorf("pools with DATABASE_POOL_SIZE=5: api %d, worker %d; want 5 and 5", api, worker)
		}
		unset, err := config.Load(env(map[string]string{"WORKER_CONCURRENCY": "8"}))
		if err != nil {
			t.Fatal(err)
		}
		if api, worker := unset.APIDatabasePool(), unset.WorkerDatabasePool(); api != 16 || worker != 13 {
			t.Errorf("pools unset, WORKER_CONCURRENCY=8: api %d, worker %d; want 16 and 13 (WORKER_CONCURRENCY + 5)", api, worker)
		}
	})
	t.Run("zero bot reply credits are allowed", func(t *testing.T) {
		got, err := config.Load(env(map[string]string{"BOT_REPLY_CREDITS": "0"}))
		if err != nil {
			t.Fatal(err)
		}
		if got.BotReplyCredits != 0 {
			t.Errorf("BotReplyCredits = %v, want 0", got.BotReplyCredits)
		}
	})
}

func TestLoadReplica(t *testing.T) {
	t.Run("DATABASE_REPLICA_URL and REPLICA_MAX_LAG in production mode", func(t *testing.T) {
		got, err := config.Load(env(production(map[string]string{
			"DATABASE_REPLICA_URL": " postgresql://u:p@replica.internal:5432/app?sslmode=require ", "REPLICA_MAX_LAG": "750ms",
		})))
		if err != nil {
			t.Fatal(err)
		}
		if got.DatabaseReplicaURL != "postgresql://u:p@replica.internal:5432/app?sslmode=require" || got.ReplicaMaxLag != 750*time.Millisecond {
			t.Errorf("replica %q, max lag %s", got.DatabaseReplicaURL, got.ReplicaMaxLag)
		}
	})
	t.Run("no replica by default, REPLICA_MAX_LAG 5s", func(t *testing.T) {
		got, err := config.Load(env(production(nil)))
		if err != nil {
			t.Fatal(err)
		}
		if got.DatabaseReplicaURL != "" || got.ReplicaMaxLag != 5*time.Second {
			t.Errorf("replica %q, max lag %s", got.DatabaseReplicaURL, got.ReplicaMaxLag)
		}
	})
}

func TestLoadOneURLOnly(t *testing.T) {
	tests := []struct {
		name    string
		vars    map[string]string
		missing string
	}{
		{"only DATABASE_URL names REDIS_URL as missing", map[string]string{"DATABASE_URL": "postgres://db/app"}, "REDIS_URL"},
		{"only REDIS_URL names DATABASE_URL as missing", map[string]string{"REDIS_URL": "redis://cache:6379"}, "DATABASE_URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := config.Load(env(tt.vars))
			if err == nil {
				t.Fatalf("Load succeeded with %+v, want an error", got)
			}
			if !strings.Contains(err.Error(), tt.missing+" is not") {
				t.Errorf("error %q does not say that %s is not set", err, tt.missing)
			}
		})
	}
}

// testKey is a valid SECRETS_KEY: 32 bytes, base64.
const testKey = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

// sentinel is REDIS_SENTINEL_ADDRS set to addrs, with a master name.
func sentinel(addrs string) map[string]string {
	return map[string]string{"REDIS_SENTINEL_ADDRS": addrs, "REDIS_SENTINEL_MASTER": "mymaster"}
}

func TestLoadSentinelAndSecretsKey(t *testing.T) {
	t.Run("Sentinel without REDIS_URL is production mode", func(t *testing.T) {
		vars := sentinel(" s1.internal:26379, 10.0.0.2:26380 ,[::1]:26381")
		vars["DATABASE_URL"] = "postgres://u:p@db.internal:5432/app"
		vars["REDIS_SENTINEL_PASSWORD"] = " sentinels-own "
		got, err := config.Load(env(vars))
		if err != nil {
			t.Fatal(err)
		}
		if got.RedisSentinelPassword != "sentinels-own" {
			t.Errorf("sentinel password %q", got.RedisSentinelPassword)
		}
		want := []string{"s1.internal:26379", "10.0.0.2:26380", "[::1]:26381"}
		if got.Standalone || got.RedisSentinelMaster != "mymaster" || !cmp.Equal(got.RedisSentinelAddrs, want) || got.RedisURL != "redis://" {
			t.Errorf("standalone=%v master=%q addrs=%q url=%q", got.Standalone, got.RedisSentinelMaster, got.RedisSentinelAddrs, got.RedisURL)
		}
	})
	t.Run("REDIS_URL beside Sentinel is kept for its password and database", func(t *testing.T) {
		got, err := config.Load(env(production(sentinel("s1:26379"))))
		if err != nil {
			t.Fatal(err)
		}
		if got.RedisURL != "redis://cache.internal:6379/0" || len(got.RedisSentinelAddrs) != 1 {
			t.Errorf("url=%q addrs=%q", got.RedisURL, got.RedisSentinelAddrs)
		}
	})
	t.Run("keys in any base64 alphabet", func(t *testing.T) {
		for _, k := range []string{testKey, strings.TrimRight(testKey, "="), "_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-8="} {
			got, err := config.Load(env(map[string]string{"SECRETS_KEY": k, "SECRETS_KEY_PREVIOUS": testKey}))
			if err != nil {
				t.Fatalf("%q: %v", k, err)
			}
			if len(got.SecretsKey) != 32 || string(got.SecretsKeyPrevious) != "0123456789abcdef0123456789abcdef" {
				t.Errorf("%q: key %d bytes, previous %q", k, len(got.SecretsKey), got.SecretsKeyPrevious)
			}
		}
	})
	t.Run("an invalid key is not echoed", func(t *testing.T) {
		_, err := config.Load(env(map[string]string{"SECRETS_KEY": "hunter2-hunter2"}))
		if err == nil || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("error %v, want one that does not repeat the value", err)
		}
	})
}

// cluster is REDIS_CLUSTER_ADDRS set to addrs.
func cluster(addrs string) map[string]string {
	return map[string]string{"REDIS_CLUSTER_ADDRS": addrs}
}

func TestLoadCluster(t *testing.T) {
	t.Run("a cluster without REDIS_URL is production mode", func(t *testing.T) {
		vars := cluster(" r1.internal:7000, 10.0.0.2:7001 ,[::1]:7002")
		vars["DATABASE_URL"] = "postgres://u:p@db.internal:5432/app"
		got, err := config.Load(env(vars))
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"r1.internal:7000", "10.0.0.2:7001", "[::1]:7002"}
		if got.Standalone || !cmp.Equal(got.RedisClusterAddrs, want) || got.RedisURL != "redis://" || len(got.RedisSentinelAddrs) != 0 {
			t.Errorf("standalone=%v addrs=%q url=%q sentinels=%q", got.Standalone, got.RedisClusterAddrs, got.RedisURL, got.RedisSentinelAddrs)
		}
	})
	t.Run("REDIS_URL beside a cluster is kept for its credentials and TLS", func(t *testing.T) {
		for _, url := range []string{"redis://cache.internal:6379/0", "rediss://:pw@cache.internal:6380", "redis://u:pw@cache.internal"} {
			got, err := config.Load(env(production(map[string]string{"REDIS_URL": url, "REDIS_CLUSTER_ADDRS": "r1:7000"})))
			if err != nil {
				t.Fatalf("%s: %v", url, err)
			}
			if got.RedisURL != url || len(got.RedisClusterAddrs) != 1 {
				t.Errorf("url=%q addrs=%q", got.RedisURL, got.RedisClusterAddrs)
			}
		}
	})
}

func TestLoadInvalid(t *testing.T) {
	tests := []struct {
		name    string
		vars    map[string]string
		wantVar string // the variable the error must name
	}{
		{"PORT not a number", map[string]string{"PORT": "http"}, "PORT"},
		{"PORT zero", map[string]string{"PORT": "0"}, "PORT"},
		{"PORT above 65535", map[string]string{"PORT": "65536"}, "PORT"},
		{"PORT negative", map[string]string{"PORT": "-80"}, "PORT"},
		{"DATABASE_URL not postgres", production(map[string]string{"DATABASE_URL": "mysql://db/app"}), "DATABASE_URL"},
		{"DATABASE_URL without scheme", production(map[string]string{"DATABASE_URL": "db.internal:5432/app"}), "DATABASE_URL"},
		{"REDIS_URL not redis", production(map[string]string{"REDIS_URL": "http://cache:6379"}), "REDIS_URL"},
		{"REDIS_URL unparsable", production(map[string]string{"REDIS_URL": "redis://cache:port"}), "REDIS_URL"},
		{"REQUIRE_HTTPS not a bool", map[string]string{"REQUIRE_HTTPS": "yes"}, "REQUIRE_HTTPS"},
		{"TRUST_PROXY not a bool", map[string]string{"TRUST_PROXY": "maybe"}, "TRUST_PROXY"},
		{"WEBHOOK_ALLOW_PRIVATE not a bool", map[string]string{"WEBHOOK_ALLOW_PRIVATE": "2"}, "WEBHOOK_ALLOW_PRIVATE"},
		{"TLS_CERT_FILE without key", map[string]string{"TLS_CERT_FILE": "/tls/cert.pem"}, "TLS_KEY_FILE"},
		{"TLS_KEY_FILE without cert", map[string]string{"TLS_KEY_FILE": "/tls/key.pem"}, "TLS_CERT_FILE"},
		{"RATE_LIMIT_PER_MINUTE zero", map[string]string{"RATE_LIMIT_PER_MINUTE": "0"}, "RATE_LIMIT_PER_MINUTE"},
		{"RATE_LIMIT_PER_MINUTE fractional", map[string]string{"RATE_LIMIT_PER_MINUTE": "1.5"}, "RATE_LIMIT_PER_MINUTE"},
		{"MAX_BODY_BYTES below 1 KiB", map[string]string{"MAX_BODY_BYTES": "100"}, "MAX_BODY_BYTES"},
		{"MAX_BODY_BYTES with unit", map[string]string{"MAX_BODY_BYTES": "10MB"}, "MAX_BODY_BYTES"},
		{"MAX_MEDIA_BYTES negative", map[string]string{"MAX_MEDIA_BYTES": "-1"}, "MAX_MEDIA_BYTES"},
		{"WEBHOOK_TIMEOUT zero", map[string]string{"WEBHOOK_TIMEOUT": "0s"}, "WEBHOOK_TIMEOUT"},
		{"WEBHOOK_TIMEOUT negative", map[string]string{"WEBHOOK_TIMEOUT": "-5s"}, "WEBHOOK_TIMEOUT"},
		{"WEBHOOK_TIMEOUT without unit", map[string]string{"WEBHOOK_TIMEOUT": "10"}, "WEBHOOK_TIMEOUT"},
		{"WEBHOOK_RETRY_SCHEDULE not durations", map[string]string{"WEBHOOK_RETRY_SCHEDULE": "soon"}, "WEBHOOK_RETRY_SCHEDULE"},
		{"WEBHOOK_RETRY_SCHEDULE empty element", map[string]string{"WEBHOOK_RETRY_SCHEDULE": "5s,,30s"}, "WEBHOOK_RETRY_SCHEDULE"},
		{"WEBHOOK_RETRY_SCHEDULE negative element", map[string]string{"WEBHOOK_RETRY_SCHEDULE": "5s,-1s"}, "WEBHOOK_RETRY_SCHEDULE"},
		{"WEBHOOK_RETRY_SCHEDULE zero element", map[string]string{"WEBHOOK_RETRY_SCHEDULE": "0s,30s"}, "WEBHOOK_RETRY_SCHEDULE"},
		{"WEBHOOK_RETRY_SCHEDULE element without unit", map[string]string{"WEBHOOK_RETRY_SCHEDULE": "5s,30"}, "WEBHOOK_RETRY_SCHEDULE"},
		{"CAMPAIGN_SENDS_PER_MINUTE zero", map[string]string{"CAMPAIGN_SENDS_PER_MINUTE": "0"}, "CAMPAIGN_SENDS_PER_MINUTE"},
		{"DEFAULT_QUIET_HOURS not a window", map[string]string{"DEFAULT_QUIET_HOURS": "21:00"}, "DEFAULT_QUIET_HOURS"},
		{"DEFAULT_QUIET_HOURS out of range", map[string]string{"DEFAULT_QUIET_HOURS": "21:00-24:00"}, "DEFAULT_QUIET_HOURS"},
		{"DEFAULT_QUIET_HOURS empty window", map[string]string{"DEFAULT_QUIET_HOURS": "08:00-08:00"}, "DEFAULT_QUIET_HOURS"},
		{"BOT_LLM_BASE_URL not http", map[string]string{"BOT_LLM_BASE_URL": "ftp://llm.internal/v1", "BOT_LLM_MODEL": "m"}, "BOT_LLM_BASE_URL"},
		{"BOT_LLM_BASE_URL without scheme", map[string]string{"BOT_LLM_BASE_URL": "api.openai.com/v1", "BOT_LLM_MODEL": "m"}, "BOT_LLM_BASE_URL"},
		{"BOT_LLM_BASE_URL without model", map[string]string{"BOT_LLM_BASE_URL": "https://api.openai.com/v1"}, "BOT_LLM_MODEL"},
		{"BOT_REPLY_CREDITS negative", map[string]string{"BOT_REPLY_CREDITS": "-1"}, "BOT_REPLY_CREDITS"},
		{"BOT_REPLY_CREDITS NaN", map[string]string{"BOT_REPLY_CREDITS": "NaN"}, "BOT_REPLY_CREDITS"},
		{"BOT_REPLY_CREDITS infinite", map[string]string{"BOT_REPLY_CREDITS": "+Inf"}, "BOT_REPLY_CREDITS"},
		{"BOT_REPLY_CREDITS not a number", map[string]string{"BOT_REPLY_CREDITS": "one"}, "BOT_REPLY_CREDITS"},
		{"WORKER_CONCURRENCY zero", map[string]string{"WORKER_CONCURRENCY": "0"}, "WORKER_CONCURRENCY"},
		{"DATABASE_POOL_SIZE zero", map[string]string{"DATABASE_POOL_SIZE": "0"}, "DATABASE_POOL_SIZE"},
		{"DATABASE_POOL_SIZE not a number", map[string]string{"DATABASE_POOL_SIZE": "many"}, "DATABASE_POOL_SIZE"},
		{"DATABASE_POOL_SIZE below WORKER_CONCURRENCY + 2", map[string]string{"DATABASE_POOL_SIZE": "21"}, "DATABASE_POOL_SIZE"},
		{"DATABASE_POOL_SIZE below a lowered WORKER_CONCURRENCY + 2", map[string]string{"DATABASE_POOL_SIZE": "6", "WORKER_CONCURRENCY": "5"}, "DATABASE_POOL_SIZE"},
		{"METRICS_PORT out of range", map[string]string{"METRICS_PORT": "70000"}, "METRICS_PORT"},
		{"METRICS_PORT not a number", map[string]string{"METRICS_PORT": "metrics"}, "METRICS_PORT"},
		{"SWEEP_INTERVAL zero", map[string]string{"SWEEP_INTERVAL": "0"}, "SWEEP_INTERVAL"},
		{"SWEEP_INTERVAL negative", map[string]string{"SWEEP_INTERVAL": "-1m"}, "SWEEP_INTERVAL"},
		{"MESSAGE_RETENTION_MONTHS negative", map[string]string{"MESSAGE_RETENTION_MONTHS": "-1"}, "MESSAGE_RETENTION_MONTHS"},
		{"MESSAGE_RETENTION_MONTHS not a number", map[string]string{"MESSAGE_RETENTION_MONTHS": "a year"}, "MESSAGE_RETENTION_MONTHS"},
		{"MESSAGE_RETENTION_MONTHS fractional", map[string]string{"MESSAGE_RETENTION_MONTHS": "1.5"}, "MESSAGE_RETENTION_MONTHS"},
		{"MESSAGE_RETENTION_MONTHS beyond a century", map[string]string{"MESSAGE_RETENTION_MONTHS": "1201"}, "MESSAGE_RETENTION_MONTHS"},
		{"ADMIN_USER without password", map[string]string{"ADMIN_USER": "ops"}, "ADMIN_PASSWORD"},
		{"ADMIN_PASSWORD without user", map[string]string{"ADMIN_PASSWORD": "secret"}, "ADMIN_USER"},
		{"LOG_LEVEL unknown", map[string]string{"LOG_LEVEL": "verbose"}, "LOG_LEVEL"},
		{"SMS_API_BASE_URL without scheme", map[string]string{"SMS_API_BASE_URL": "localhost:9000"}, "SMS_API_BASE_URL"},
		{"WHATSAPP_API_BASE_URL without host", map[string]string{"WHATSAPP_API_BASE_URL": "https://"}, "WHATSAPP_API_BASE_URL"},
		{"MESSENGER_API_BASE_URL not http", map[string]string{"MESSENGER_API_BASE_URL": "ftp://graph.example.com"}, "MESSENGER_API_BASE_URL"},
		{"INSTAGRAM_API_BASE_URL without host", map[string]string{"INSTAGRAM_API_BASE_URL": "https://"}, "INSTAGRAM_API_BASE_URL"},
		{"REDIS_SENTINEL_ADDRS without master", production(map[string]string{"REDIS_SENTINEL_ADDRS": "s1:26379"}), "REDIS_SENTINEL_MASTER"},
		{"REDIS_SENTINEL_MASTER without addresses", production(map[string]string{"REDIS_SENTINEL_MASTER": "mymaster"}), "REDIS_SENTINEL_ADDRS"},
		{"REDIS_SENTINEL_ADDRS without port", production(sentinel("s1:26379,s2")), "REDIS_SENTINEL_ADDRS"},
		{"REDIS_SENTINEL_ADDRS port zero", production(sentinel("s1:0")), "REDIS_SENTINEL_ADDRS"},
		{"REDIS_SENTINEL_ADDRS port not a number", production(sentinel("s1:redis")), "REDIS_SENTINEL_ADDRS"},
		{"REDIS_SENTINEL_ADDRS empty element", production(sentinel("s1:26379,,s2:26379")), "REDIS_SENTINEL_ADDRS"},
		{"REDIS_SENTINEL_ADDRS without host", production(sentinel(":26379")), "REDIS_SENTINEL_ADDRS"},
		{"REDIS_SENTINEL_ADDRS in standalone mode", sentinel("s1:26379"), "DATABASE_URL"},
		{"REDIS_SENTINEL_PASSWORD without Sentinel", production(map[string]string{"REDIS_SENTINEL_PASSWORD": "pw"}), "REDIS_SENTINEL_PASSWORD"},
		{"REDIS_URL beside Sentinel not redis", production(map[string]string{"REDIS_URL": "http://x", "REDIS_SENTINEL_ADDRS": "s1:26379", "REDIS_SENTINEL_MASTER": "m"}), "REDIS_URL"},
		{"DATABASE_REPLICA_URL in standalone mode", map[string]string{"DATABASE_REPLICA_URL": "postgres://replica/app"}, "DATABASE_REPLICA_URL"},
		{"DATABASE_REPLICA_URL with only REDIS_URL", map[string]string{"REDIS_URL": "redis://cache:6379", "DATABASE_REPLICA_URL": "postgres://replica/app"}, "DATABASE_REPLICA_URL"},
		{"DATABASE_REPLICA_URL not postgres", production(map[string]string{"DATABASE_REPLICA_URL": "mysql://replica/app"}), "DATABASE_REPLICA_URL"},
		{"DATABASE_REPLICA_URL without host", production(map[string]string{"DATABASE_REPLICA_URL": "postgres:///app"}), "DATABASE_REPLICA_URL"},
		{"DATABASE_REPLICA_URL unparsable", production(map[string]string{"DATABASE_REPLICA_URL": "postgres://replica:port/app"}), "DATABASE_REPLICA_URL"},
		{"DATABASE_REPLICA_URL the primary itself", production(map[string]string{"DATABASE_REPLICA_URL": "postgres://u:p@db.internal:5432/app?sslmode=disable"}), "DATABASE_REPLICA_URL"},
		{"REPLICA_MAX_LAG zero", production(map[string]string{"DATABASE_REPLICA_URL": "postgres://replica/app", "REPLICA_MAX_LAG": "0s"}), "REPLICA_MAX_LAG"},
		{"REPLICA_MAX_LAG negative", production(map[string]string{"DATABASE_REPLICA_URL": "postgres://replica/app", "REPLICA_MAX_LAG": "-1s"}), "REPLICA_MAX_LAG"},
		{"REPLICA_MAX_LAG without unit", production(map[string]string{"DATABASE_REPLICA_URL": "postgres://replica/app", "REPLICA_MAX_LAG": "5"}), "REPLICA_MAX_LAG"},
		{"REDIS_CLUSTER_ADDRS without port", production(cluster("r1:7000,r2")), "REDIS_CLUSTER_ADDRS"},
		{"REDIS_CLUSTER_ADDRS port zero", production(cluster("r1:0")), "REDIS_CLUSTER_ADDRS"},
		{"REDIS_CLUSTER_ADDRS port not a number", production(cluster("r1:redis")), "REDIS_CLUSTER_ADDRS"},
		{"REDIS_CLUSTER_ADDRS empty element", production(cluster("r1:7000,,r2:7000")), "REDIS_CLUSTER_ADDRS"},
		{"REDIS_CLUSTER_ADDRS without host", production(cluster(":7000")), "REDIS_CLUSTER_ADDRS"},
		{"REDIS_CLUSTER_ADDRS a URL", production(cluster("redis://r1:7000")), "REDIS_CLUSTER_ADDRS"},
		{"REDIS_CLUSTER_ADDRS in standalone mode", cluster("r1:7000"), "DATABASE_URL"},
		{"REDIS_CLUSTER_ADDRS beside Sentinel", production(map[string]string{"REDIS_CLUSTER_ADDRS": "r1:7000", "REDIS_SENTINEL_ADDRS": "s1:26379", "REDIS_SENTINEL_MASTER": "m"}), "REDIS_CLUSTER_ADDRS"},
		{"REDIS_CLUSTER_ADDRS with a database in REDIS_URL", production(map[string]string{"REDIS_CLUSTER_ADDRS": "r1:7000", "REDIS_URL": "redis://cache.internal:6379/3"}), "REDIS_CLUSTER_ADDRS"},
		{"REDIS_CLUSTER_ADDRS with a database in REDIS_URL's query", production(map[string]string{"REDIS_CLUSTER_ADDRS": "r1:7000", "REDIS_URL": "redis://cache.internal:6379?db=2"}), "REDIS_CLUSTER_ADDRS"},
		{"REDIS_URL beside a cluster not redis", production(map[string]string{"REDIS_URL": "http://x", "REDIS_CLUSTER_ADDRS": "r1:7000"}), "REDIS_URL"},
		{"REDIS_SENTINEL_PASSWORD beside a cluster", production(map[string]string{"REDIS_SENTINEL_PASSWORD": "pw", "REDIS_CLUSTER_ADDRS": "r1:7000"}), "REDIS_SENTINEL_PASSWORD"},
		{"SECRETS_KEY not base64", map[string]string{"SECRETS_KEY": "not a key!"}, "SECRETS_KEY"},
		{"SECRETS_KEY 16 bytes", map[string]string{"SECRETS_KEY": "AAAAAAAAAAAAAAAAAAAAAA=="}, "SECRETS_KEY"},
		{"SECRETS_KEY 33 bytes", map[string]string{"SECRETS_KEY": strings.Repeat("A", 44)}, "SECRETS_KEY"},
		{"SECRETS_KEY_PREVIOUS not a key", map[string]string{"SECRETS_KEY": testKey, "SECRETS_KEY_PREVIOUS": "old"}, "SECRETS_KEY_PREVIOUS"},
		{"SECRETS_KEY_PREVIOUS without SECRETS_KEY", map[string]string{"SECRETS_KEY_PREVIOUS": testKey}, "SECRETS_KEY_PREVIOUS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := config.Load(env(tt.vars))
			if err == nil {
				t.Fatalf("Load succeeded with %+v, want an error naming %s", got, tt.wantVar)
			}
			if got != nil {
				t.Errorf("Load returned a config along with error %q", err)
			}
			if !strings.Contains(err.Error(), tt.wantVar) {
				t.Errorf("error %q does not name %s", err, tt.wantVar)
			}
		})
	}
}
