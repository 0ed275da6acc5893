package main_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"funnelchat/models/testenv"
)

// TestReadReplicaServesTheLagTolerantReads runs the api and a worker on a PostgreSQL primary of their
// own with DATABASE_REPLICA_URL on its pg_basebackup standby (README, "Read replica"). With replay
// running, the conversation list, the contact search, the campaign report and its CSV and the consent
// export (API and inbox alike) are served by the standby; with replay paused, what was written through
// the API meanwhile (a contact, an incoming message, a campaign's sends, a consent change) shows on
// every one of them once the standby is REPLICA_MAX_LAG behind, and at once on the read-your-writes
// endpoints; with the standby stopped, they all still answer, from the primary.
func TestReadReplicaServesTheLagTolerantReads(t *testing.T) {
	t.Parallel()
	if !env.Postgres() {
		t.Skip("a read replica is for production mode (PostgreSQL and Redis); the PostgreSQL pass runs this test")
	}
	began := time.Now()
	pair := testenv.StartPostgresPair(t)
	t.Logf("primary and standby up in %s", time.Since(began).Round(time.Millisecond))
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) }))
	defer sink.Close()

	port := freePort(t)
	base := "http://127.0.0.1:" + port
	environ := baseEnv("DATABASE_URL="+pair.PrimaryURL, "DATABASE_REPLICA_URL="+pair.StandbyURL, "REPLICA_MAX_LAG=1s",
		"REDIS_URL="+claimRedisDB(t), "PORT="+port, "REQUIRE_HTTPS=false", "WEBHOOK_ALLOW_PRIVATE=true", "RATE_LIMIT_PER_MINUTE=100000")
	admin(t, environ, "migrate")
	key := admin(t, environ, "account", "create", "--email", "replica@example.com")["apiKey"].(string)
	password := admin(t, environ, "user", "add", "--account-email", "replica@example.com", "--email", "team@example.com", "--role", "owner")["password"].(string)
	api := start(t, environ, "api")
	start(t, environ, "worker")
	waitReady(t, base, api)
	inbox := signInInbox(t, base, "team@example.com", password)

	must := func(method, path string, body any, want int) map[string]any {
		t.Helper()
		status, m := call(t, method, base+path, key, body)
		if status != want {
			t.Fatalf("%s %s: %d %v, want %d", method, path, status, m, want)
		}
		return m
	}
	must("PUT", "/v1/settings/webhook", map[string]any{"url": sink.URL + "/hook"}, http.StatusOK)
	ann := must("POST", "/v1/contacts", map[string]any{"phone": "+14155550171", "firstName": "Ann", "lastName": "Standby"}, http.StatusCreated)["id"].(string)
	listID := must("POST", "/v1/lists", map[string]any{"name": "replica leads"}, http.StatusCreated)["id"].(string)
	campaignID := must("POST", "/v1/campaigns", map[string]any{
		"name": "replica", "listId": listID, "channel": "custom:chat", "status": "live", "openingMessage": "Hi {{firstName}}!", "sendRatePerMinute": 600,
	}, http.StatusCreated)["id"].(string)
	must("POST", "/v1/lists/"+listID+"/contacts", map[string]any{"contactIds": []string{ann}}, http.StatusCreated)
	must("PUT", "/v1/contacts/"+ann+"/consent", map[string]any{"channel": "sms", "status": "opted_in", "text": "web form"}, http.StatusOK)

	// The routed reads, each through the API and the inbox, with the read the metrics count it under.
	apiGet := func(path string) func() (int, string) {
		return func() (int, string) { return rawGet(t, base+path, key, nil) }
	}
	inboxGet := func(path string) func() (int, string) {
		return func() (int, string) { return rawGet(t, base+path, "", inbox) }
	}
	type routedRead struct {
		name, read string
		get        func() (int, string)
	}
	routed := []routedRead{
		{"GET /v1/conversations", "conversations", apiGet("/v1/conversations")},
		{"GET /inbox/", "conversations", inboxGet("/inbox/")},
		{"GET /v1/contacts?q=", "contact_search", apiGet("/v1/contacts?q=Standby")},
		{"GET /inbox/contacts?q=", "contact_search", inboxGet("/inbox/contacts?q=Standby")},
		{"GET /v1/campaigns/{id}/report", "campaign_report", apiGet("/v1/campaigns/" + campaignID + "/report")},
		{"GET /inbox/campaigns/{id}", "campaign_report", inboxGet("/inbox/campaigns/" + campaignID)},
		{"GET /v1/campaigns/{id}/report?format=csv", "campaign_report_csv", apiGet("/v1/campaigns/" + campaignID + "/report?format=csv")},
		{"GET /inbox/campaigns/{id}/report.csv", "campaign_report_csv", inboxGet("/inbox/campaigns/" + campaignID + "/report.csv")},
		{"GET /v1/consent/export", "consent_export", apiGet("/v1/consent/export")},
		{"GET /inbox/consent.csv", "consent_export", inboxGet("/inbox/consent.csv")},
	}
	get200 := func(r routedRead) string {
		t.Helper()
		status, body := r.get()
		if status != http.StatusOK {
			t.Fatalf("%s: %d %.500s", r.name, status, body)
		}
		return body
	}

	t.Run("with replay running the standby serves them", func(t *testing.T) {
		pair.WaitReplayed(t)
		for _, r := range routed {
			// Counted on the replica: a read may find it more than a second behind on a loaded machine
			// and go to the primary, so each is asked until the standby has answered it.
			waitUntil(t, 20*time.Second, r.name+" served by the replica", func() bool {
				before := routedReads(t, base)[r.read+"/replica"]
				get200(r)
				return routedReads(t, base)[r.read+"/replica"] > before
			})
		}
	})

	var zed, quinn string
	t.Run("with replay paused every one shows what was written, and the read-your-writes reads at once", func(t *testing.T) {
		pair.ExecStandby(t, "SELECT pg_wal_replay_pause()")
		waitUntil(t, 10*time.Second, "replay paused", func() bool { return pair.ReplayPaused(t) })

		// A contact, read back at once.
		zed = must("POST", "/v1/contacts", map[string]any{"phone": "+14155550172", "firstName": "Zed", "lastName": "Standby"}, http.StatusCreated)["id"].(string)
		if got := must("GET", "/v1/contacts/"+zed, nil, http.StatusOK); got["firstName"] != "Zed" {
			t.Fatalf("the new contact read back: %v", got)
		}
		if got := must("GET", "/v1/contacts?phoneNumber=%2B14155550172", nil, http.StatusOK); got["id"] != zed {
			t.Fatalf("the new contact by phone: %v", got)
		}
		// An incoming message, on its conversation page at once.
		must("POST", "/v1/incoming_custom_channel_message", map[string]any{"customData": map[string]any{
			"messageSid": "sid-replica-1", "fromId": "replica-fan", "toId": "biz", "body": "hello while replay is paused",
			"firstName": "Quinn", "lastName": "Standby", "email": "quinn@example.com",
		}}, http.StatusOK)
		quinn = must("GET", "/v1/contacts?email=quinn@example.com", nil, http.StatusOK)["id"].(string)
		if status, body := rawGet(t, base+"/inbox/conversations/"+quinn, "", inbox); status != http.StatusOK || !strings.Contains(body, "hello while replay is paused") {
			t.Fatalf("the conversation page right after the message: %d %.500s", status, body)
		}
		// A campaign's send (the worker sends its opening), and a consent change, read back at once.
		must("POST", "/v1/lists/"+listID+"/contacts", map[string]any{"contactIds": []string{zed}}, http.StatusCreated)
		must("PUT", "/v1/contacts/"+zed+"/consent", map[string]any{"channel": "sms", "status": "opted_out", "text": "stop"}, http.StatusOK)
		if got := must("GET", "/v1/contacts/"+zed+"/consent", nil, http.StatusOK); !strings.Contains(fmt.Sprint(got), "opted_out") {
			t.Fatalf("consent read back: %v", got)
		}
		// None of it is on the standby: what the routed reads show below comes from the primary.
		pair.WaitReceived(t)
		var onStandby int
		pair.StandbyRow(t, "SELECT count(*) FROM contacts WHERE id IN ('"+zed+"', '"+quinn+"')", &onStandby)
		if onStandby != 0 {
			t.Fatalf("%d of the new contacts on the standby with replay paused", onStandby)
		}

		shows := map[string]func(body string) bool{
			"GET /v1/conversations":                    func(b string) bool { return strings.Contains(b, quinn) && strings.Contains(b, zed) },
			"GET /inbox/":                              func(b string) bool { return strings.Contains(b, quinn) && strings.Contains(b, zed) },
			"GET /v1/contacts?q=":                      func(b string) bool { return strings.Contains(b, zed) && strings.Contains(b, quinn) },
			"GET /inbox/contacts?q=":                   func(b string) bool { return strings.Contains(b, zed) && strings.Contains(b, quinn) },
			"GET /v1/campaigns/{id}/report":            func(b string) bool { return reportCounts(b) == "added 2, opened 2" },
			"GET /inbox/campaigns/{id}":                func(b string) bool { return strings.Contains(b, "<dt>Added</dt><dd>2</dd>") },
			"GET /v1/campaigns/{id}/report?format=csv": func(b string) bool { return strings.Contains(b, zed) },
			"GET /inbox/campaigns/{id}/report.csv":     func(b string) bool { return strings.Contains(b, zed) },
			"GET /v1/consent/export":                   func(b string) bool { return strings.Contains(b, zed) && strings.Contains(b, "opted_out") },
			"GET /inbox/consent.csv":                   func(b string) bool { return strings.Contains(b, zed) && strings.Contains(b, "opted_out") },
		}
		for _, r := range routed {
			waitUntil(t, 20*time.Second, r.name+" shows the writes made with replay paused", func() bool {
				return shows[r.name](get200(r))
			})
		}
		if reads := routedReads(t, base); reads["in_use"] != 0 {
			t.Fatalf("the replica still in use with replay paused: %v", reads)
		}
	})

	t.Run("with the standby stopped they answer from the primary", func(t *testing.T) {
		pair.ExecStandby(t, "SELECT pg_wal_replay_resume()")
		waitUntil(t, 20*time.Second, "the replica in use again", func() bool { return routedReads(t, base)["in_use"] == 1 })
		pair.StopStandby(t)
		for _, r := range routed {
			if body := get200(r); r.read == "contact_search" && !strings.Contains(body, zed) {
				t.Fatalf("%s with the standby stopped: %.500s", r.name, body)
			}
		}
		if status, _ := rawGet(t, base+"/readyz", "", nil); status != http.StatusOK {
			t.Fatalf("/readyz with the standby stopped: %d, want 200 (the replica is not needed)", status)
		}
		waitUntil(t, 10*time.Second, "the replica out of use", func() bool { return routedReads(t, base)["in_use"] == 0 })
		reads := routedReads(t, base)
		t.Logf("routed reads by target and fallbacks: %v", reads)
		if strings.Contains(api.output(), `"status":500`) {
			t.Fatalf("the api answered 500:\n%s", api.output())
		}
	})
	t.Logf("whole test %s", time.Since(began).Round(time.Millisecond))
}

// signInInbox signs in to the inbox and returns a client that keeps the session's cookie.
func signInInbox(t *testing.T, base, email, password string) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	_, login := rawGet(t, base+"/inbox/login", "", client)
	m := regexp.MustCompile(`name="csrf_token" value="([^"]+)"`).FindStringSubmatch(login)
	if m == nil {
		t.Fatalf("no csrf_token on the sign-in page:\n%.1000s", login)
	}
	res, err := client.PostForm(base+"/inbox/login", url.Values{"email": {email}, "password": {password}, "csrf_token": {m[1]}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign in: %d", res.StatusCode)
	}
	return client
}

// rawGet GETs url with the API key (when not empty) or through client (an inbox session), and returns
// the status and the body.
func rawGet(t *testing.T, url, key string, client *http.Client) (int, string) {
	t.Helper()
	if client == nil {
		client = http.DefaultClient
	}
	req, _ := http.NewRequest("GET", url, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return res.StatusCode, string(body)
}

var routedReadLine = regexp.MustCompile(`^funnelchat_replica_routed_reads_total\{read="([a-z_]+)",target="([a-z]+)"\} (\S+)$`)

// routedReads reads the api's /metrics: the routed reads by "read/target", fallbacks by
// "fallback/read", and "in_use" (funnelchat_replica_in_use).
func routedReads(t *testing.T, base string) map[string]float64 {
	t.Helper()
	status, body := rawGet(t, base+"/metrics", "", nil)
	if status != http.StatusOK {
		t.Fatalf("/metrics: %d", status)
	}
	out := map[string]float64{}
	for _, line := range strings.Split(body, "\n") {
		if m := routedReadLine.FindStringSubmatch(line); m != nil {
			out[m[1]+"/"+m[2]], _ = strconv.ParseFloat(m[3], 64)
		}
		if v, ok := strings.CutPrefix(line, "funnelchat_replica_in_use "); ok {
			out["in_use"], _ = strconv.ParseFloat(v, 64)
		}
		if rest, ok := strings.CutPrefix(line, `funnelchat_replica_fallbacks_total{read="`); ok {
			read, v, _ := strings.Cut(rest, `"} `)
			out["fallback/"+read], _ = strconv.ParseFloat(v, 64)
		}
	}
	return out
}

// reportCounts is "added N, opened M" of a campaign report's JSON.
func reportCounts(body string) string {
	var r struct{ Added, Opened int }
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		return err.Error()
	}
	return fmt.Sprintf("added %d, opened %d", r.Added, r.Opened)
}
