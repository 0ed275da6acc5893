package main_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/uptrace/bun/driver/pgdriver"

	"funnelchat/models"
)

// Secrets at rest, as an operator lives with them (models/secrets.go, cmd/internal/boot's UseSecrets,
// `admin secrets rotate`): provider credentials (channel_credentials.settings) and webhook signing
// secrets (accounts.webhook_secret) are stored as enc:v1:<key id>:<ciphertext> under SECRETS_KEY. These
// tests run the real binaries against fake providers and check, after every key change, that each
// channel still decrypts what it needs: the signing secret (the reply webhook's signature), the auth
// token and access tokens (what reaches the providers), the app secrets (inbound signatures) and the
// verify tokens (Meta's subscription check).
//
// Each PostgreSQL test has a database and a Redis database number of its own (backends_test.go), as
// every process test here does: the other tests' processes run without SECRETS_KEY and would refuse to
// start on rows encrypted here.

// TestSecretsRotationKeepsEveryChannelWorking rotates SECRETS_KEY from A to B the documented way:
// processes with SECRETS_KEY=B and SECRETS_KEY_PREVIOUS=A, `admin secrets rotate`, then processes with
// B alone. Every channel of the account (the custom channel's signed webhook, SMS, WhatsApp, Messenger,
// Instagram) is exercised in each phase, and the stored rows are read raw to see which key they are under.
func TestSecretsRotationKeepsEveryChannelWorking(t *testing.T) {
	t.Parallel()
	if !env.Postgres() {
		t.Skip(skipSecretsOnEmbedded)
	}
	began := time.Now()
	a, b := newSecretsKey(t), newSecretsKey(t)
	d := newSecretsDeployment(t)
	acct := d.createAccount("rotation@example.com", 1)

	// Written under A by the api itself.
	d.start("SECRETS_KEY=" + a.b64)
	d.configure(acct)
	d.exercise(acct, "under A")
	d.expectStoredUnder(a, acct)
	d.stop()

	// A rotation run without the old key cannot read the rows: it is refused and rewrites nothing.
	if out := adminFails(t, d.environ("SECRETS_KEY="+b.b64), "secrets", "rotate"); !strings.Contains(out, "SECRETS_KEY") {
		t.Errorf("admin secrets rotate with B only: the error does not name SECRETS_KEY: %s", out)
	}
	d.expectStoredUnder(a, acct)

	// The new key beside the old one: rows under A are read, nothing is rewritten yet.
	d.start("SECRETS_KEY="+b.b64, "SECRETS_KEY_PREVIOUS="+a.b64)
	for name, p := range map[string]*process{"api": d.api, "worker": d.worker} {
		waitOutput(t, p, name, "under SECRETS_KEY_PREVIOUS; run admin secrets rotate")
	}
	d.exercise(acct, "B with A previous")
	d.expectStoredUnder(a, acct)

	environ := d.environ("SECRETS_KEY="+b.b64, "SECRETS_KEY_PREVIOUS="+a.b64)
	d.rotateAll(environ, b, acct)
	// The running processes read the rows rewritten beneath them.
	d.exercise(acct, "rotated, B with A previous")
	d.stop()

	// The old key retired.
	d.start("SECRETS_KEY=" + b.b64)
	d.exercise(acct, "B only")
	d.expectNoSecretsWarning("after the rotation finished", "SECRETS_KEY_PREVIOUS; run admin secrets rotate", "SECRETS_KEY is not set")
	d.stop()
	d.expectNothingElseSent()
	t.Logf("key A %s -> B %s: 3 process generations, %d exchanges on each of 5 channels, every one answered; rotate 5, and 5 again; %s",
		a.id, b.id, d.exchanges, time.Since(began).Round(100*time.Millisecond))
}

// TestWrongSecretsKeyStopsStartUp starts the api and the worker with keys that cannot read the stored
// secrets: each must exit 1 at once with an error naming SECRETS_KEY, before it could send ciphertext
// to a provider as a token (boot.UseSecrets). On PostgreSQL work is owed on every channel meanwhile
// (inbound messages whose replies are queued), so a process that started anyway would have reached the
// fake providers. The standalone part runs in both passes.
func TestWrongSecretsKeyStopsStartUp(t *testing.T) {
	t.Parallel()
	t.Run("PostgreSQL", wrongSecretsKeyOnPostgres)
	t.Run("standalone", wrongSecretsKeyStandalone)
}

func wrongSecretsKeyOnPostgres(t *testing.T) {
	if !env.Postgres() {
		t.Skip(skipSecretsOnEmbedded)
	}
	a, c := newSecretsKey(t), newSecretsKey(t)
	d := newSecretsDeployment(t)
	acct := d.createAccount("wrong-key@example.com", 1)

	// Only the api runs: the replies to these inbound messages are queued for a worker.
	d.startAPI("SECRETS_KEY=" + a.b64)
	d.configure(acct)
	owed := d.sendInbound(acct, "owed")
	d.stop()
	d.expectStoredUnder(a, acct)

	cases := []struct {
		name string
		keys []string
	}{
		{"another key", []string{"SECRETS_KEY=" + c.b64}},
		{"no key", nil},
		{"another key with another previous", []string{"SECRETS_KEY=" + c.b64, "SECRETS_KEY_PREVIOUS=" + newSecretsKey(t).b64}},
		{"only the previous key", []string{"SECRETS_KEY_PREVIOUS=" + a.b64}},
	}
	var slowest time.Duration
	for _, tc := range cases {
		for _, bin := range []string{"api", "worker"} {
			out, took := exitsAtStart(t, d.environ(tc.keys...), bin)
			slowest = max(slowest, took)
			t.Logf("%s with %s: exit 1 after %s: %s", bin, tc.name, took.Round(time.Millisecond), lastLine(out))
			if !strings.Contains(out, "SECRETS_KEY") {
				t.Errorf("%s with %s: the error does not name SECRETS_KEY:\n%s", bin, tc.name, out)
			}
			// The error names keys by their ids, never the keys.
			for _, k := range []secretsKey{a, c} {
				if strings.Contains(out, k.b64) {
					t.Errorf("%s with %s printed a key:\n%s", bin, tc.name, out)
				}
			}
			if tc.name == "another key" && !strings.Contains(out, a.id) {
				t.Errorf("%s with another key: the error does not name the key the secrets need (%s):\n%s", bin, a.id, out)
			}
		}
	}
	if n := d.providerCalls(); n != 0 {
		t.Fatalf("%d requests reached the fake providers and the webhook sink while no process had the key", n)
	}

	// The new key beside the one the secrets are under: both start, and the owed replies go out with
	// the right credentials and the unchanged signing secret.
	d.start("SECRETS_KEY="+c.b64, "SECRETS_KEY_PREVIOUS="+a.b64)
	d.awaitReplies(owed)
	d.stop()
	d.expectNothingElseSent()
	t.Logf("%d refused starts (api and worker, %d key settings), slowest exit %s; then all 5 owed replies delivered",
		2*len(cases), len(cases), slowest.Round(10*time.Millisecond))
}

// wrongSecretsKeyStandalone: in standalone mode SECRETS_KEY, when set, replaces the key in
// DATA_DIR/secrets.key, so a wrong one stops the api like on PostgreSQL; with the file's key as
// SECRETS_KEY_PREVIOUS it starts, and `admin secrets rotate` moves the secrets under SECRETS_KEY.
func wrongSecretsKeyStandalone(t *testing.T) {
	dataDir := t.TempDir()
	port := freePort(t)
	base := "http://127.0.0.1:" + port
	environ := baseEnv("DATA_DIR="+dataDir, "PORT="+port)
	signingSecret := func(api *process, key string) string {
		t.Helper()
		waitReady(t, base, api)
		status, settings := call(t, "GET", base+"/v1/settings/webhook", key, nil)
		secret, _ := settings["signingSecret"].(string)
		if status != http.StatusOK || !strings.HasPrefix(secret, "whsec_") {
			t.Fatalf("GET /v1/settings/webhook: %d %v", status, settings)
		}
		return secret
	}

	api := start(t, environ, "api")
	waitReady(t, base, api)
	key := demoKey(t, api.output())
	secret := signingSecret(api, key)
	api.stop(t)
	fileKey := readStandaloneKey(t, filepath.Join(dataDir, "secrets.key"))
	fileID := models.SecretKeyID(fileKey)

	c := newSecretsKey(t)
	out, took := exitsAtStart(t, withVars(environ, "SECRETS_KEY="+c.b64), "api")
	t.Logf("standalone api with another SECRETS_KEY: exit 1 after %s: %s", took.Round(time.Millisecond), lastLine(out))
	if !strings.Contains(out, "SECRETS_KEY") || !strings.Contains(out, fileID) {
		t.Errorf("the error does not name SECRETS_KEY and the key of secrets.key (%s):\n%s", fileID, out)
	}

	rotating := withVars(environ, "SECRETS_KEY="+c.b64, "SECRETS_KEY_PREVIOUS="+base64.StdEncoding.EncodeToString(fileKey))
	api = start(t, rotating, "api")
	if got := signingSecret(api, key); got != secret {
		t.Fatalf("signing secret with the file's key as the previous one: %s, want %s", got, secret)
	}
	if got := admin(t, rotating, "secrets", "rotate"); got["reencrypted"] != float64(1) {
		t.Fatalf("admin secrets rotate printed %v, want 1 (the demo account's signing secret)", got)
	}
	api.stop(t)
	if stored := standaloneWebhookSecret(t, dataDir); !strings.HasPrefix(stored, "enc:v1:"+c.id+":") {
		t.Fatalf("after the rotation the signing secret is stored as %.40s..., want it under %s", stored, c.id)
	}
	api = start(t, withVars(environ, "SECRETS_KEY="+c.b64), "api")
	if got := signingSecret(api, key); got != secret {
		t.Fatalf("signing secret under SECRETS_KEY alone: %s, want %s", got, secret)
	}
	api.stop(t)
}

// TestMissingSecretsKeyWarns covers deployments without SECRETS_KEY: on PostgreSQL they start, store
// secrets in plain text and warn once per process, and `admin secrets rotate` encrypts what they stored
// once a key is set; in standalone mode the api makes a key of its own in DATA_DIR/secrets.key and uses
// it again on the next start.
func TestMissingSecretsKeyWarns(t *testing.T) {
	t.Parallel()
	t.Run("PostgreSQL", func(t *testing.T) {
		if !env.Postgres() {
			t.Skip("in standalone mode a key is always made in DATA_DIR; the PostgreSQL pass runs this part")
		}
		a := newSecretsKey(t)
		d := newSecretsDeployment(t)
		acct := d.createAccount("no-key@example.com", 1)

		d.start()
		waitOutput(t, d.worker, "worker", "worker started")
		d.configure(acct)
		d.exercise(acct, "plain")
		for name, p := range map[string]*process{"api": d.api, "worker": d.worker} {
			if n := strings.Count(p.output(), "SECRETS_KEY is not set"); n != 1 {
				t.Errorf("%s logged the missing-key warning %d times, want once:\n%s", name, n, p.output())
			}
		}
		stored := d.storedSecrets()
		if len(stored) != 5 {
			t.Fatalf("%d stored secrets, want 5: %v", len(stored), stored)
		}
		for row, v := range stored {
			if strings.HasPrefix(v, "enc:") {
				t.Errorf("%s is encrypted though no process had a key: %.40s...", row, v)
			}
		}
		if stored["webhook_secret"] != acct.secret || !strings.Contains(stored["sms"], acct.smsToken) {
			t.Errorf("rows written without a key are not the plain values: %v", stored)
		}
		if out := adminFails(t, d.environ(), "secrets", "rotate"); !strings.Contains(out, "SECRETS_KEY") {
			t.Errorf("admin secrets rotate without a key: the error does not name SECRETS_KEY: %s", out)
		}
		d.stop()

		// The key set on every process (plain rows are still read), then the rotation encrypts them.
		d.start("SECRETS_KEY=" + a.b64)
		for name, p := range map[string]*process{"api": d.api, "worker": d.worker} {
			waitOutput(t, p, name, "some stored secrets are in plain text")
		}
		d.exercise(acct, "plain, read with A")
		environ := d.environ("SECRETS_KEY=" + a.b64)
		d.rotateAll(environ, a, acct)
		d.exercise(acct, "encrypted under A")
		d.stop()

		d.start("SECRETS_KEY=" + a.b64)
		d.exercise(acct, "A after a restart")
		d.expectNoSecretsWarning("once every secret is under SECRETS_KEY", "SECRETS_KEY is not set", "run admin secrets rotate")
		d.stop()
		d.expectNothingElseSent()
	})

	t.Run("standalone creates DATA_DIR/secrets.key and keeps it", func(t *testing.T) {
		dataDir := t.TempDir()
		port := freePort(t)
		base := "http://127.0.0.1:" + port
		environ := baseEnv("DATA_DIR="+dataDir, "PORT="+port)
		keyPath := filepath.Join(dataDir, "secrets.key")

		api := start(t, environ, "api")
		waitReady(t, base, api)
		key := demoKey(t, api.output())
		first := readStandaloneKey(t, keyPath)
		status, settings := call(t, "GET", base+"/v1/settings/webhook", key, nil)
		secret, _ := settings["signingSecret"].(string)
		if status != http.StatusOK || !strings.HasPrefix(secret, "whsec_") {
			t.Fatalf("GET /v1/settings/webhook: %d %v", status, settings)
		}
		if strings.Contains(api.output(), "SECRETS_KEY is not set") {
			t.Errorf("standalone mode warns about SECRETS_KEY though it made a key:\n%s", api.output())
		}
		api.stop(t)
		stored := standaloneWebhookSecret(t, dataDir)
		if want := "enc:v1:" + models.SecretKeyID(first) + ":"; !strings.HasPrefix(stored, want) {
			t.Fatalf("the signing secret is stored as %.40s..., want it under the key in secrets.key (%s)", stored, want)
		}

		api = start(t, environ, "api")
		waitReady(t, base, api)
		if strings.Contains(api.output(), "demo API key:") {
			t.Fatalf("demo key printed again:\n%s", api.output())
		}
		if again := readStandaloneKey(t, keyPath); !bytes.Equal(again, first) {
			t.Fatal("the second start replaced DATA_DIR/secrets.key")
		}
		status, settings = call(t, "GET", base+"/v1/settings/webhook", key, nil)
		if status != http.StatusOK || settings["signingSecret"] != secret {
			t.Fatalf("signing secret after a restart: %d %v, want %s", status, settings, secret)
		}
		api.stop(t)
	})
}

// skipSecretsOnEmbedded says why the PostgreSQL tests skip in the embedded pass.
const skipSecretsOnEmbedded = "in standalone mode the api is the worker and there is no worker process to start with other keys; " +
	"the PostgreSQL pass runs this test (its own database on TEST_DATABASE_URL)"

// secretsKey is a SECRETS_KEY value and the id its ciphertexts carry.
type secretsKey struct {
	raw []byte
	b64 string
	id  string
}

func newSecretsKey(t *testing.T) secretsKey {
	t.Helper()
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		t.Fatal(err)
	}
	return secretsKey{raw: raw, b64: base64.StdEncoding.EncodeToString(raw), id: models.SecretKeyID(raw)}
}

// secretsDeployment is an api and a worker on a database and a Redis database of their own, with a
// fake provider for every channel: a Standard Webhooks sink for the custom channel, a Twilio-compatible
// SMS API, and Graph APIs for WhatsApp, Messenger and Instagram.
type secretsDeployment struct {
	t           *testing.T
	base        string
	db          *sql.DB
	common      []string
	api, worker *process
	hook, sms   *fakeProvider
	whatsapp    *fakeProvider
	messenger   *fakeProvider
	instagram   *fakeProvider
	seq         int // numbers each exchange's senders
	exchanges   int // exchanges answered, per channel
	answered    int // provider calls awaitReplies has matched
}

func newSecretsDeployment(t *testing.T) *secretsDeployment {
	t.Helper()
	dbURL := freshDatabase(t)
	raw := sql.OpenDB(pgdriver.NewConnector(pgdriver.WithDSN(dbURL)))
	t.Cleanup(func() { _ = raw.Close() })
	port := freePort(t)
	d := &secretsDeployment{t: t, base: "http://127.0.0.1:" + port, db: raw}
	d.hook = newFakeProvider(t, func(http.ResponseWriter, *http.Request, []byte) {})
	d.sms = newFakeProvider(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"sid":"SM` + strings.Repeat("0", 32) + `"}`))
	})
	d.whatsapp = newFakeProvider(t, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"messaging_product":"whatsapp","messages":[{"id":"wamid.OUT"}]}`))
	})
	graph := func(w http.ResponseWriter, _ *http.Request, body []byte) {
		var m struct {
			Recipient struct{ ID string } `json:"recipient"`
		}
		_ = json.Unmarshal(body, &m)
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"recipient_id":%q,"message_id":"m_out"}`, m.Recipient.ID)
	}
	d.messenger, d.instagram = newFakeProvider(t, graph), newFakeProvider(t, graph)
	d.common = baseEnv("DATABASE_URL="+dbURL, "REDIS_URL="+claimRedisDB(t), "PORT="+port,
		"REQUIRE_HTTPS=false", "WEBHOOK_ALLOW_PRIVATE=true", "WEBHOOK_RETRY_SCHEDULE=1s,1s,1s,1s",
		"RATE_LIMIT_PER_MINUTE=100000",
		"SMS_API_BASE_URL="+d.sms.URL, "WHATSAPP_API_BASE_URL="+d.whatsapp.URL,
		"MESSENGER_API_BASE_URL="+d.messenger.URL, "INSTAGRAM_API_BASE_URL="+d.instagram.URL)
	if got := admin(t, d.common, "migrate"); got["migrated"] != true {
		t.Fatalf("migrate printed %v", got)
	}
	return d
}

// environ is the processes' environment with the given SECRETS_KEY and SECRETS_KEY_PREVIOUS settings.
func (d *secretsDeployment) environ(keys ...string) []string { return withVars(d.common, keys...) }

// withVars is environ and vars in a new slice, so that environments built from one never share an array.
func withVars(environ []string, vars ...string) []string {
	return append(append([]string(nil), environ...), vars...)
}

func (d *secretsDeployment) startAPI(keys ...string) {
	d.t.Helper()
	d.api = start(d.t, d.environ(keys...), "api")
	waitReady(d.t, d.base, d.api)
}

func (d *secretsDeployment) start(keys ...string) {
	d.t.Helper()
	d.worker = start(d.t, d.environ(keys...), "worker")
	d.startAPI(keys...)
}

// stop stops the processes with SIGTERM; each must exit 0 (README, "Deployment").
// expectNoSecretsWarning fails the test when the running api or worker logged any of warnings; when
// says at what point none is expected.
func (d *secretsDeployment) expectNoSecretsWarning(when string, warnings ...string) {
	d.t.Helper()
	for name, p := range map[string]*process{"api": d.api, "worker": d.worker} {
		for _, w := range warnings {
			if strings.Contains(p.output(), w) {
				d.t.Errorf("%s warns about secrets %s (%q):\n%s", name, when, w, p.output())
			}
		}
	}
}

func (d *secretsDeployment) stop() {
	d.t.Helper()
	for _, p := range []*process{d.api, d.worker} {
		if p != nil {
			p.stop(d.t)
		}
	}
	d.api, d.worker = nil, nil
}

// channelAccount is an account and the credentials it saves for every channel, n keeping its provider
// ids apart from other accounts'.
type channelAccount struct {
	email, id, key string
	secret         string // the webhook signing secret GET /v1/settings/webhook showed first

	smsSID, smsToken, smsFrom                    string
	waPhoneID, waToken, waAppSecret, waVerify    string
	pageID, pageToken, pageAppSecret, pageVerify string
	igID, igToken, igAppSecret, igVerify         string
	hookPath                                     string // where its replies arrive at the sink
}

func (d *secretsDeployment) createAccount(email string, n int) *channelAccount {
	d.t.Helper()
	created := admin(d.t, d.common, "account", "create", "--email", email)
	a := &channelAccount{email: email}
	a.id, _ = created["accountId"].(string)
	a.key, _ = created["apiKey"].(string)
	if a.id == "" || a.key == "" {
		d.t.Fatalf("account create printed %v", created)
	}
	a.smsSID, a.smsToken, a.smsFrom = fmt.Sprintf("AC%032d", n), "sms-auth-token-"+randomText(), fmt.Sprintf("+1415555900%d", n)
	a.waPhoneID, a.waToken, a.waAppSecret, a.waVerify = fmt.Sprintf("10987650%d", n), "wa-access-token-"+randomText(), "wa-app-secret-"+randomText(), "wa-verify-"+randomText()
	a.pageID, a.pageToken, a.pageAppSecret, a.pageVerify = fmt.Sprintf("10485760000%d", n), "page-access-token-"+randomText(), "page-app-secret-"+randomText(), "page-verify-"+randomText()
	a.igID, a.igToken, a.igAppSecret, a.igVerify = fmt.Sprintf("1784140000000%d", n), "ig-access-token-"+randomText(), "ig-app-secret-"+randomText(), "ig-verify-"+randomText()
	a.hookPath = "/hook/" + a.id
	return a
}

// configure saves the account's webhook and every channel's credentials through the public API, and
// records the signing secret.
func (d *secretsDeployment) configure(a *channelAccount) {
	t := d.t
	t.Helper()
	status, hook := call(t, "PUT", d.base+"/v1/settings/webhook", a.key, map[string]any{"url": d.hook.URL + a.hookPath})
	a.secret, _ = hook["signingSecret"].(string)
	if status != http.StatusOK || !strings.HasPrefix(a.secret, "whsec_") {
		t.Fatalf("PUT /v1/settings/webhook: %d %v", status, hook)
	}
	for path, body := range map[string]map[string]any{
		"sms":       {"accountSid": a.smsSID, "authToken": a.smsToken, "from": a.smsFrom},
		"whatsapp":  {"phoneNumberId": a.waPhoneID, "accessToken": a.waToken, "appSecret": a.waAppSecret, "verifyToken": a.waVerify},
		"messenger": {"pageId": a.pageID, "pageAccessToken": a.pageToken, "appSecret": a.pageAppSecret, "verifyToken": a.pageVerify},
		"instagram": {"accountId": a.igID, "accessToken": a.igToken, "appSecret": a.igAppSecret, "verifyToken": a.igVerify},
	} {
		if status, res := call(t, "PUT", d.base+"/v1/settings/channels/"+path, a.key, body); status != http.StatusOK {
			t.Fatalf("PUT /v1/settings/channels/%s: %d %v", path, status, res)
		}
	}
}

// tokens are the account's provider credentials, none of which may appear in a stored row in clear
// once it is encrypted.
func (a *channelAccount) tokens() []string {
	return []string{a.smsToken, a.waToken, a.waAppSecret, a.waVerify, a.pageToken, a.pageAppSecret, a.pageVerify,
		a.igToken, a.igAppSecret, a.igVerify, strings.TrimPrefix(a.secret, "whsec_")}
}

// exchange is one inbound message on every channel, whose replies are awaited at the fake providers:
// the senders' ids are the replies' recipients.
type exchange struct {
	acct                               *channelAccount
	round                              string
	fromID, phone, waFrom, psid, igsid string
}

// exercise shows that every channel works with the keys the processes have now.
func (d *secretsDeployment) exercise(a *channelAccount, round string) {
	d.t.Helper()
	d.awaitReplies(d.sendInbound(a, round))
}

// sendInbound checks what the api decrypts: the signing secret shown by GET /v1/settings/webhook is
// the one first shown, each Meta channel's verify token answers the subscription check (and another
// token does not), and each channel's inbound webhook is accepted when signed with its secret (auth
// token or app secret) and refused when signed with another. The accepted messages' replies are queued.
func (d *secretsDeployment) sendInbound(a *channelAccount, round string) *exchange {
	t := d.t
	t.Helper()
	d.seq++
	x := &exchange{
		acct: a, round: round,
		fromID: fmt.Sprintf("visitor-%d", d.seq),
		phone:  fmt.Sprintf("+14155552%03d", d.seq),
		waFrom: fmt.Sprintf("14155553%03d", d.seq),
		psid:   fmt.Sprintf("2600000000%06d", d.seq),
		igsid:  fmt.Sprintf("1780000000%06d", d.seq),
	}
	text := "Hello, could you tell me more? (" + round + ")"

	status, hook := call(t, "GET", d.base+"/v1/settings/webhook", a.key, nil)
	if status != http.StatusOK || hook["signingSecret"] != a.secret {
		t.Fatalf("%s: GET /v1/settings/webhook: %d, signing secret %v, want the one first shown (%s)", round, status, hook["signingSecret"], a.secret)
	}

	// The custom channel.
	status, res := call(t, "POST", d.base+"/v1/incoming_custom_channel_message", a.key, map[string]any{
		"customData": map[string]any{"messageSid": "sid-" + x.fromID, "fromId": x.fromID, "toId": "shop", "body": text}})
	if status != http.StatusOK {
		t.Fatalf("%s: incoming custom-channel message: %d %v", round, status, res)
	}

	// SMS: Twilio signs with the auth token over the URL and the sorted form fields.
	smsURL := d.base + "/v1/channels/sms/inbound"
	form := url.Values{"MessageSid": {"SM-in-" + x.fromID}, "AccountSid": {a.smsSID}, "From": {x.phone}, "To": {a.smsFrom}, "Body": {text}}
	formType := "Content-Type: application/x-www-form-urlencoded"
	if status, body := rawRequest(t, "POST", smsURL, form.Encode(), formType, "X-Twilio-Signature: "+twilioSignature("not-the-token", smsURL, form)); status != http.StatusForbidden {
		t.Fatalf("%s: SMS inbound signed with another token: %d %s, want 403", round, status, body)
	}
	if status, body := rawRequest(t, "POST", smsURL, form.Encode(), formType, "X-Twilio-Signature: "+twilioSignature(a.smsToken, smsURL, form)); status != http.StatusOK {
		t.Fatalf("%s: SMS inbound signed with the auth token: %d %s", round, status, body)
	}

	// WhatsApp, Messenger and Instagram: Meta's subscription check, then a batch signed with the app secret.
	for channel, verify := range map[string]string{"whatsapp": a.waVerify, "messenger": a.pageVerify, "instagram": a.igVerify} {
		check := d.base + "/v1/channels/" + channel + "/inbound?hub.mode=subscribe&hub.challenge=ch-" + x.fromID + "&hub.verify_token="
		if status, body := rawRequest(t, "GET", check+url.QueryEscape(verify), ""); status != http.StatusOK || body != "ch-"+x.fromID {
			t.Fatalf("%s: %s subscription check with the verify token: %d %q", round, channel, status, body)
		}
		if status, body := rawRequest(t, "GET", check+"another-token", ""); status != http.StatusForbidden {
			t.Fatalf("%s: %s subscription check with another token: %d %s, want 403", round, channel, status, body)
		}
	}
	waBody, _ := json.Marshal(map[string]any{"object": "whatsapp_business_account", "entry": []any{map[string]any{"changes": []any{map[string]any{
		"value": map[string]any{
			"metadata": map[string]any{"phone_number_id": a.waPhoneID},
			"contacts": []any{map[string]any{"wa_id": x.waFrom, "profile": map[string]any{"name": "Wes"}}},
			"messages": []any{map[string]any{"from": x.waFrom, "id": "wamid.in-" + x.fromID, "type": "text", "text": map[string]any{"body": text}}},
		}}}}}})
	metaBatch := func(object, pageID, sender string) string {
		raw, _ := json.Marshal(map[string]any{"object": object, "entry": []any{map[string]any{
			"id": pageID, "time": time.Now().UnixMilli(), "messaging": []any{map[string]any{
				"sender": map[string]any{"id": sender}, "recipient": map[string]any{"id": pageID}, "timestamp": time.Now().UnixMilli(),
				"message": map[string]any{"mid": "mid-" + object + "-" + x.fromID, "text": text},
			}},
		}}})
		return string(raw)
	}
	for _, in := range []struct {
		channel, body, secret string
		refused               int
	}{
		{"whatsapp", string(waBody), a.waAppSecret, http.StatusForbidden},
		{"messenger", metaBatch("page", a.pageID, x.psid), a.pageAppSecret, http.StatusUnauthorized},
		{"instagram", metaBatch("instagram", a.igID, x.igsid), a.igAppSecret, http.StatusUnauthorized},
	} {
		hookURL := d.base + "/v1/channels/" + in.channel + "/inbound"
		if status, body := rawRequest(t, "POST", hookURL, in.body, "X-Hub-Signature-256: "+metaSignature("another-secret", in.body)); status != in.refused {
			t.Fatalf("%s: %s inbound signed with another secret: %d %s, want %d", round, in.channel, status, body, in.refused)
		}
		if status, body := rawRequest(t, "POST", hookURL, in.body, "X-Hub-Signature-256: "+metaSignature(in.secret, in.body)); status != http.StatusOK {
			t.Fatalf("%s: %s inbound signed with the app secret: %d %s", round, in.channel, status, body)
		}
	}
	return x
}

// awaitReplies waits for the bot's reply to each of the exchange's messages at its provider, and checks
// what the worker decrypted: the reply webhook's signature verifies with the signing secret first shown,
// SMS goes with basic auth accountSid:authToken, and the Graph APIs get the access token as Bearer.
func (d *secretsDeployment) awaitReplies(x *exchange) {
	t := d.t
	t.Helper()
	a := x.acct

	c := d.hook.await(t, x.round+": the custom-channel reply at the webhook", func(c providerCall) bool {
		var p struct{ ToID string }
		return json.Unmarshal(c.Body, &p) == nil && p.ToID == x.fromID
	})
	wh, err := standardwebhooks.NewWebhook(a.secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(c.Body, c.Header); err != nil || c.Path != a.hookPath {
		t.Fatalf("%s: the reply at %s does not verify with the signing secret: %v (headers %v)", x.round, c.Path, err, c.Header)
	}

	c = d.sms.await(t, x.round+": the SMS reply at the provider", func(c providerCall) bool {
		form, _ := url.ParseQuery(string(c.Body))
		return form.Get("To") == x.phone
	})
	form, _ := url.ParseQuery(string(c.Body))
	user, pass, _ := (&http.Request{Header: c.Header}).BasicAuth()
	if c.Path != "/2010-04-01/Accounts/"+a.smsSID+"/Messages.json" || user != a.smsSID || pass != a.smsToken || form.Get("From") != a.smsFrom {
		t.Fatalf("%s: SMS request to %s from %s with basic auth %q:%q, want accountSid:authToken", x.round, c.Path, form.Get("From"), user, pass)
	}

	c = d.whatsapp.await(t, x.round+": the WhatsApp reply at the Graph API", func(c providerCall) bool {
		var m struct{ To string }
		return json.Unmarshal(c.Body, &m) == nil && m.To == x.waFrom
	})
	if c.Path != "/v21.0/"+a.waPhoneID+"/messages" || c.Header.Get("Authorization") != "Bearer "+a.waToken {
		t.Fatalf("%s: WhatsApp request to %s with %q, want the access token", x.round, c.Path, c.Header.Get("Authorization"))
	}

	for _, meta := range []struct {
		name               string
		api                *fakeProvider
		recipient, id, tok string
	}{
		{"Messenger", d.messenger, x.psid, a.pageID, a.pageToken},
		{"Instagram", d.instagram, x.igsid, a.igID, a.igToken},
	} {
		c = meta.api.await(t, x.round+": the "+meta.name+" reply at the Send API", func(c providerCall) bool {
			var m struct {
				Recipient struct{ ID string } `json:"recipient"`
			}
			return json.Unmarshal(c.Body, &m) == nil && m.Recipient.ID == meta.recipient
		})
		if c.Path != "/"+meta.id+"/messages" || c.Header.Get("Authorization") != "Bearer "+meta.tok {
			t.Fatalf("%s: %s request to %s with %q, want the access token", x.round, meta.name, c.Path, c.Header.Get("Authorization"))
		}
	}
	d.exchanges++
	d.answered += 5
}

// providerCalls counts every request the fake providers and the webhook sink received.
func (d *secretsDeployment) providerCalls() int {
	n := 0
	for _, p := range []*fakeProvider{d.hook, d.sms, d.whatsapp, d.messenger, d.instagram} {
		n += len(p.calls())
	}
	return n
}

// expectNothingElseSent checks that the fake providers received only the awaited replies, each once.
func (d *secretsDeployment) expectNothingElseSent() {
	d.t.Helper()
	if n := d.providerCalls(); n != d.answered {
		d.t.Errorf("the fake providers received %d requests, want the %d replies awaited", n, d.answered)
	}
}

// storedSecrets reads the stored secrets raw from PostgreSQL: the webhook signing secret
// ("webhook_secret") and each channel's settings (by kind).
func (d *secretsDeployment) storedSecrets() map[string]string {
	d.t.Helper()
	rows, err := d.db.QueryContext(context.Background(), `
		SELECT 'webhook_secret', webhook_secret FROM accounts WHERE webhook_secret IS NOT NULL
		UNION ALL SELECT kind, settings FROM channel_credentials`)
	if err != nil {
		d.t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			d.t.Fatal(err)
		}
		out[k] = v
	}
	if err := rows.Err(); err != nil {
		d.t.Fatal(err)
	}
	return out
}

// rotateAll runs admin secrets rotate, which must rewrite the account's 5 stored secrets (the webhook
// signing secret and 4 channel rows) under k, twice: repeating it is harmless.
func (d *secretsDeployment) rotateAll(environ []string, k secretsKey, a *channelAccount) {
	d.t.Helper()
	if got := admin(d.t, environ, "secrets", "rotate"); got["reencrypted"] != float64(5) {
		d.t.Fatalf("admin secrets rotate printed %v, want 5 (the webhook signing secret and 4 channel rows)", got)
	}
	d.expectStoredUnder(k, a)
	// Run again, it re-encrypts every stored secret once more, still under k.
	if got := admin(d.t, environ, "secrets", "rotate"); got["reencrypted"] != float64(5) {
		d.t.Fatalf("admin secrets rotate, run again, printed %v, want 5", got)
	}
	d.expectStoredUnder(k, a)
}

// expectStoredUnder checks that the account's five secrets are stored encrypted under k, none readable.
func (d *secretsDeployment) expectStoredUnder(k secretsKey, a *channelAccount) {
	d.t.Helper()
	stored := d.storedSecrets()
	var kinds []string
	for kind, v := range stored {
		kinds = append(kinds, kind)
		if !strings.HasPrefix(v, "enc:v1:"+k.id+":") {
			d.t.Errorf("%s is stored as %.40s..., want it under key %s", kind, v, k.id)
		}
		for _, secret := range a.tokens() {
			if strings.Contains(v, secret) {
				d.t.Errorf("%s stored with a secret in clear: %s", kind, v)
			}
		}
	}
	sort.Strings(kinds)
	if want := "instagram messenger sms webhook_secret whatsapp"; strings.Join(kinds, " ") != want {
		d.t.Errorf("stored secrets %v, want %s", kinds, want)
	}
}

// fakeProvider is a real HTTP server that records every request and answers with answer.
type fakeProvider struct {
	*httptest.Server
	mu       sync.Mutex
	received []providerCall
}

type providerCall struct {
	Path   string
	Header http.Header
	Body   []byte
}

func newFakeProvider(t *testing.T, answer func(w http.ResponseWriter, r *http.Request, body []byte)) *fakeProvider {
	f := &fakeProvider{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.received = append(f.received, providerCall{Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
		f.mu.Unlock()
		answer(w, r, body)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeProvider) calls() []providerCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]providerCall(nil), f.received...)
}

// await waits up to 30 s for the one request match accepts, and fails on a second one.
func (f *fakeProvider) await(t *testing.T, what string, match func(providerCall) bool) providerCall {
	t.Helper()
	var found []providerCall
	waitUntil(t, 30*time.Second, what, func() bool {
		found = found[:0]
		for _, c := range f.calls() {
			if match(c) {
				found = append(found, c)
			}
		}
		return len(found) > 0
	})
	if len(found) > 1 {
		t.Fatalf("%s: %d requests, want 1", what, len(found))
	}
	return found[0]
}

// exitsAtStart runs bin, which must exit with status 1 within 15 s, and returns its output and how
// long it ran.
func exitsAtStart(t *testing.T, environ []string, bin string) (string, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, bin))
	cmd.Env = environ
	began := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(began)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("%s: %v after %s, want exit status 1\n%s", bin, err, took.Round(time.Millisecond), out)
	}
	if took > 15*time.Second {
		t.Errorf("%s took %s to refuse to start", bin, took.Round(time.Millisecond))
	}
	return string(out), took
}

// adminFails runs the admin binary, which must exit 1, and returns its standard error.
func adminFails(t *testing.T, environ []string, args ...string) string {
	t.Helper()
	out, stderr, err := runAdmin(environ, args...)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("admin %v: %v, want exit status 1\nstdout %s\nstderr %s", args, err, out, stderr)
	}
	return stderr
}

// waitOutput waits up to 30 s for text in the process's output.
func waitOutput(t *testing.T, p *process, name, text string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(p.output(), text) {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not log %q within 30 s:\n%s", name, text, p.output())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// rawRequest sends body with the given headers ("Name: value") and returns the status and body.
func rawRequest(t *testing.T, method, target, body string, headers ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, target, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	if req.Header.Get("Content-Type") == "" && body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(raw)
}

// twilioSignature signs a webhook as Twilio does: base64 HMAC-SHA1 under the auth token of the URL
// followed by the form's fields, sorted by name, each name then value.
func twilioSignature(token, fullURL string, form url.Values) string {
	names := make([]string, 0, len(form))
	for k := range form {
		names = append(names, k)
	}
	sort.Strings(names)
	data := fullURL
	for _, k := range names {
		data += k + form.Get(k)
	}
	mac := hmac.New(sha1.New, []byte(token))
	mac.Write([]byte(data))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// metaSignature is X-Hub-Signature-256: "sha256=" and the hex HMAC-SHA256 of the body under the app secret.
func metaSignature(secret, body string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(body))
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// lastLine is the last non-empty line of out.
func lastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[len(lines)-1]
}

func randomText() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// readStandaloneKey reads DATA_DIR/secrets.key, which must be readable by its owner only and hold 32
// bytes in base64.
func readStandaloneKey(t *testing.T, path string) []byte {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatalf("standalone mode made no key: %v", err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Errorf("%s has mode %o, want 600", path, perm)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(raw)))
	if err != nil || len(key) != 32 {
		t.Fatalf("%s holds %q, want 32 bytes in base64", path, raw)
	}
	return key
}

// standaloneWebhookSecret reads the demo account's stored signing secret from the SQLite file.
func standaloneWebhookSecret(t *testing.T, dataDir string) string {
	t.Helper()
	store, err := models.OpenSQLite(filepath.Join(dataDir, "funnelchat.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var v string
	if err := store.DB().QueryRowContext(context.Background(),
		"SELECT webhook_secret FROM accounts WHERE webhook_secret IS NOT NULL").Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}
