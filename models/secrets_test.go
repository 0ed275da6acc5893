package models_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"funnelchat/models"
)

// Secrets at rest (models/secrets.go): what the database holds of credentials and signing secrets.

func newKey(t testing.TB) []byte {
	t.Helper()
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	return key
}

func keyring(t testing.TB, current, previous []byte) *models.Secrets {
	t.Helper()
	k, err := models.NewSecrets(current, previous)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// dumpDatabase returns every row of every table of the store's database as text, one line per row.
func dumpDatabase(t *testing.T, store *models.Store) string {
	t.Helper()
	ctx := context.Background()
	db := store.DB()
	q := "SELECT name FROM sqlite_master WHERE type = 'table'"
	if env.Postgres() {
		q = "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
	}
	var tables []string
	if err := db.NewRaw(q).Scan(ctx, &tables); err != nil {
		t.Fatal(err)
	}
	if len(tables) < 10 {
		t.Fatalf("found only the tables %q", tables)
	}
	var out strings.Builder
	for _, table := range tables {
		rows, err := db.QueryContext(ctx, `SELECT * FROM "`+table+`"`)
		if err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			values := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range values {
				ptrs[i] = &values[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatalf("%s: %v", table, err)
			}
			out.WriteString(table)
			for _, v := range values {
				if b, ok := v.([]byte); ok {
					v = string(b)
				}
				fmt.Fprintf(&out, "\t%v", v)
			}
			out.WriteString("\n")
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return out.String()
}

// storeEverySecret saves, for a new account, the reply webhook's signing secret and the credentials of
// every built-in channel, each secret unique to this call, and returns the secrets and some non-secret
// identifiers that are stored as they are.
func storeEverySecret(t *testing.T, store *models.Store) (accountID string, secrets, public []string) {
	t.Helper()
	ctx := context.Background()
	created, err := store.CreateAccount(ctx, models.NewAccount{Email: uniqueEmail("secrets")})
	if err != nil {
		t.Fatal(err)
	}
	id := created.Account.ID
	tag := strings.ToLower(strings.ReplaceAll(id, "-", ""))
	secret := func(name string) string {
		s := name + "-" + tag + "-plaintext"
		secrets = append(secrets, s)
		return s
	}
	// Unique digits for the ids that must be unique across accounts.
	digits := fmt.Sprintf("%d", 100000+emailSeq.Add(1))
	if _, err := store.SetWebhookURL(ctx, id, "https://hooks.example.com/replies", secret("whsec_signing")); err != nil {
		t.Fatal(err)
	}
	if err := store.SetSMSSettings(ctx, id, models.SMSSettings{AccountSID: "AC" + tag, AuthToken: secret("sms-auth-token"), From: "+1415555" + digits[len(digits)-4:]}); err != nil {
		t.Fatal(err)
	}
	if err := store.SetWhatsAppSettings(ctx, id, models.WhatsAppSettings{PhoneNumberID: "9" + digits, AccessToken: secret("wa-access-token"), AppSecret: secret("wa-app-secret"), VerifyToken: secret("wa-verify-token")}); err != nil {
		t.Fatal(err)
	}
	for _, channel := range []string{models.ChannelMessenger, models.ChannelInstagram} {
		if err := store.SetMetaSettings(ctx, id, channel, models.MetaSettings{ID: "7" + digits, AccessToken: secret(channel + "-access-token"), AppSecret: secret(channel + "-app-secret"), VerifyToken: secret(channel + "-verify-token")}); err != nil {
			t.Fatal(err)
		}
	}
	return id, secrets, []string{"AC" + tag, "9" + digits, "7" + digits, "hooks.example.com"}
}

// readEverySecret reads back what storeEverySecret saved, through the store.
func readEverySecret(t *testing.T, store *models.Store, accountID string) []string {
	t.Helper()
	ctx := context.Background()
	hook, err := store.WebhookSettings(ctx, accountID, "whsec_unused")
	if err != nil {
		t.Fatalf("webhook settings: %v", err)
	}
	sms, err := store.SMSSettings(ctx, accountID)
	if err != nil {
		t.Fatalf("sms settings: %v", err)
	}
	wa, err := store.WhatsAppSettings(ctx, accountID)
	if err != nil {
		t.Fatalf("whatsapp settings: %v", err)
	}
	got := []string{hook.SigningSecret, sms.AuthToken, wa.AccessToken, wa.AppSecret, wa.VerifyToken}
	for _, channel := range []string{models.ChannelMessenger, models.ChannelInstagram} {
		meta, err := store.MetaSettings(ctx, accountID, channel)
		if err != nil {
			t.Fatalf("%s settings: %v", channel, err)
		}
		got = append(got, meta.AccessToken, meta.AppSecret, meta.VerifyToken)
	}
	return got
}

func TestNoSecretIsStoredInPlainText(t *testing.T) {
	accountID, secrets, public := storeEverySecret(t, env.Store)
	if got := readEverySecret(t, env.Store, accountID); strings.Join(got, ",") != strings.Join(secrets, ",") {
		t.Fatalf("read back %q, want %q", got, secrets)
	}
	dump := dumpDatabase(t, env.Store)
	for _, s := range secrets {
		if strings.Contains(dump, s) {
			t.Errorf("the database holds %q in plain text", s)
		}
	}
	// The dump does read the rows: the identifiers stored as they are show.
	for _, p := range public {
		if !strings.Contains(dump, p) {
			t.Errorf("the dump lacks %q: it does not cover every row", p)
		}
	}
	if !strings.Contains(dump, "enc:v1:") {
		t.Error("no encrypted value in the dump")
	}
	tokens, err := env.Store.VerifyTokens(context.Background(), models.ChannelWhatsApp)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tok := range tokens {
		found = found || tok == secrets[4]
	}
	if !found {
		t.Errorf("VerifyTokens lacks the account's decrypted token %q", secrets[4])
	}
}

// storedValues returns the raw stored form of the account's webhook secret and channel settings.
func storedValues(t *testing.T, store *models.Store, accountID string) []string {
	t.Helper()
	ctx := context.Background()
	var values []string
	if err := store.DB().NewRaw("SELECT webhook_secret FROM accounts WHERE id = ?", accountID).Scan(ctx, &values); err != nil {
		t.Fatal(err)
	}
	var settings []string
	if err := store.DB().NewRaw("SELECT settings FROM channel_credentials WHERE account_id = ? ORDER BY kind", accountID).Scan(ctx, &settings); err != nil {
		t.Fatal(err)
	}
	return append(values, settings...)
}

func wantStoredUnder(t *testing.T, values []string, key []byte) {
	t.Helper()
	prefix := "enc:v1:" + models.SecretKeyID(key) + ":"
	for _, v := range values {
		if !strings.HasPrefix(v, prefix) {
			t.Errorf("stored %.40q..., want it under key %s", v, models.SecretKeyID(key))
		}
	}
}

func TestSecretsRotation(t *testing.T) {
	ctx := context.Background()
	store := env.FreshStore(t)
	keyA, keyB := newKey(t), newKey(t)

	// Without a key (a deployment before SECRETS_KEY), secrets are stored as they are.
	plainAcc, plainSecrets, _ := storeEverySecret(t, store)
	for _, v := range storedValues(t, store, plainAcc) {
		if strings.HasPrefix(v, "enc:") {
			t.Fatalf("stored %q without a key", v)
		}
	}
	if status, err := store.CheckSecrets(ctx); err != nil || !status.Plain {
		t.Fatalf("CheckSecrets = %+v, %v; want plain and no error", status, err)
	}
	_, err := store.RotateSecrets(ctx)
	wantCode(t, err, models.CodeValidation, "rotate without a key")

	// With key A, rotate encrypts the plain rows (1 webhook secret, 4 channels).
	store.UseSecrets(keyring(t, keyA, nil))
	if n, err := store.RotateSecrets(ctx); err != nil || n != 5 {
		t.Fatalf("rotate to A = %d, %v; want 5", n, err)
	}
	wantStoredUnder(t, storedValues(t, store, plainAcc), keyA)
	// Run again, it re-encrypts every value once more (fresh nonces), still under A.
	before := storedValues(t, store, plainAcc)
	if n, err := store.RotateSecrets(ctx); err != nil || n != 5 {
		t.Fatalf("second rotate = %d, %v; want 5", n, err)
	}
	after := storedValues(t, store, plainAcc)
	wantStoredUnder(t, after, keyA)
	for i := range before {
		if before[i] == after[i] {
			t.Errorf("value %d was not re-encrypted by the second rotation", i)
		}
	}
	if got := readEverySecret(t, store, plainAcc); strings.Join(got, ",") != strings.Join(plainSecrets, ",") {
		t.Fatalf("after rotation read %q, want %q", got, plainSecrets)
	}
	if status, err := store.CheckSecrets(ctx); err != nil || status.Plain || status.Previous {
		t.Fatalf("CheckSecrets = %+v, %v; want all under the current key", status, err)
	}
	acc2, secrets2, _ := storeEverySecret(t, store)
	wantStoredUnder(t, storedValues(t, store, acc2), keyA)

	// Key B alone cannot read what A encrypted: the start-up check names the variable and the key.
	store.UseSecrets(keyring(t, keyB, nil))
	_, err = store.CheckSecrets(ctx)
	if err == nil || !strings.Contains(err.Error(), "SECRETS_KEY") || !strings.Contains(err.Error(), models.SecretKeyID(keyA)) {
		t.Fatalf("CheckSecrets with the wrong key: %v; want an error naming SECRETS_KEY and key %s", err, models.SecretKeyID(keyA))
	}
	if _, err := store.SMSSettings(ctx, acc2); !errors.Is(err, models.ErrSecretKey) {
		t.Errorf("SMS settings under the wrong key: %v, want ErrSecretKey", err)
	}
	if _, err := store.RotateSecrets(ctx); !errors.Is(err, models.ErrSecretKey) {
		t.Errorf("rotate with the wrong key: %v, want ErrSecretKey", err)
	}
	store.UseSecrets(keyring(t, nil, nil))
	if _, err := store.CheckSecrets(ctx); err == nil || !strings.Contains(err.Error(), "SECRETS_KEY is not set") {
		t.Errorf("CheckSecrets without a key over encrypted rows: %v", err)
	}

	// B with A as the previous key reads everything; rotate moves all 10 values to B.
	store.UseSecrets(keyring(t, keyB, keyA))
	if status, err := store.CheckSecrets(ctx); err != nil || !status.Previous {
		t.Fatalf("CheckSecrets = %+v, %v; want previous-key rows and no error", status, err)
	}
	if got := readEverySecret(t, store, acc2); strings.Join(got, ",") != strings.Join(secrets2, ",") {
		t.Fatalf("read with the previous key %q, want %q", got, secrets2)
	}
	if n, err := store.RotateSecrets(ctx); err != nil || n != 10 {
		t.Fatalf("rotate to B = %d, %v; want 10", n, err)
	}
	store.UseSecrets(keyring(t, keyB, nil))
	wantStoredUnder(t, append(storedValues(t, store, plainAcc), storedValues(t, store, acc2)...), keyB)
	if got := readEverySecret(t, store, plainAcc); strings.Join(got, ",") != strings.Join(plainSecrets, ",") {
		t.Fatalf("after the second rotation read %q, want %q", got, plainSecrets)
	}
	if status, err := store.CheckSecrets(ctx); err != nil || status.Previous || status.Plain {
		t.Fatalf("CheckSecrets = %+v, %v", status, err)
	}
}

func TestSecretsAreBoundToTheirRow(t *testing.T) {
	ctx := context.Background()
	store := env.FreshStore(t)
	store.UseSecrets(keyring(t, newKey(t), nil))
	acc1, _, _ := storeEverySecret(t, store)
	acc2, _, _ := storeEverySecret(t, store)

	// A database writer who copies one account's ciphertext into another's row gets an error, not the
	// first account's secret signing the second one's webhooks.
	db := store.DB()
	if _, err := db.NewRaw("UPDATE accounts SET webhook_secret = (SELECT webhook_secret FROM accounts WHERE id = ?) WHERE id = ?", acc1, acc2).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := store.WebhookSettings(ctx, acc2, "whsec_unused"); !errors.Is(err, models.ErrSecretKey) {
		t.Errorf("copied webhook secret: %v, want ErrSecretKey", err)
	}
	// The same for a channel's credentials moved to another channel of the same account.
	if _, err := db.NewRaw("UPDATE channel_credentials SET settings = (SELECT settings FROM channel_credentials WHERE account_id = ? AND kind = 'messenger') WHERE account_id = ? AND kind = 'instagram'", acc1, acc1).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := store.MetaSettings(ctx, acc1, models.ChannelInstagram); !errors.Is(err, models.ErrSecretKey) {
		t.Errorf("moved credentials: %v, want ErrSecretKey", err)
	}
	// An altered ciphertext does not decrypt.
	var stored string
	if err := db.NewRaw("SELECT settings FROM channel_credentials WHERE account_id = ? AND kind = 'whatsapp'", acc1).Scan(ctx, &stored); err != nil {
		t.Fatal(err)
	}
	altered := []byte(stored)
	if altered[len(altered)-2] == 'A' {
		altered[len(altered)-2] = 'B'
	} else {
		altered[len(altered)-2] = 'A'
	}
	if _, err := db.NewRaw("UPDATE channel_credentials SET settings = ? WHERE account_id = ? AND kind = 'whatsapp'", string(altered), acc1).Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := store.WhatsAppSettings(ctx, acc1); !errors.Is(err, models.ErrSecretKey) {
		t.Errorf("altered ciphertext: %v, want ErrSecretKey", err)
	}
}

func TestRotationKeepsSecretsSavedMeanwhile(t *testing.T) {
	ctx := context.Background()
	store := env.FreshStore(t)
	keyA, keyB := newKey(t), newKey(t)
	store.UseSecrets(keyring(t, keyA, nil))
	const accounts = 20
	ids := make([]string, accounts)
	for i := range ids {
		ids[i], _, _ = storeEverySecret(t, store)
	}
	// New processes run with B and A; the rotation runs while they save new SMS tokens.
	store.UseSecrets(keyring(t, keyB, keyA))
	var wg sync.WaitGroup
	tokens := make([]string, accounts)
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tokens[i] = fmt.Sprintf("token-%d-%x", i, newKey(t)[:4])
			if err := store.SetSMSSettings(ctx, id, models.SMSSettings{AccountSID: "ACsid" + id, AuthToken: tokens[i], From: fmt.Sprintf("+1415556%04d", i)}); err != nil {
				t.Error(err)
			}
		}()
	}
	if _, err := store.RotateSecrets(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if _, err := store.RotateSecrets(ctx); err != nil {
		t.Fatal(err)
	}
	store.UseSecrets(keyring(t, keyB, nil))
	for i, id := range ids {
		sms, err := store.SMSSettings(ctx, id)
		if err != nil {
			t.Fatalf("account %d: %v", i, err)
		}
		if sms.AuthToken != tokens[i] {
			t.Errorf("account %d: token %q, want the one saved during the rotation %q", i, sms.AuthToken, tokens[i])
		}
		wantStoredUnder(t, storedValues(t, store, id), keyB)
	}
}

func TestNewSecretsRejectsBadKeys(t *testing.T) {
	if _, err := models.NewSecrets(bytes.Repeat([]byte{1}, 16), nil); err == nil {
		t.Error("a 16-byte key was accepted")
	}
	if _, err := models.NewSecrets(newKey(t), bytes.Repeat([]byte{1}, 31)); err == nil {
		t.Error("a 31-byte previous key was accepted")
	}
	if _, err := models.NewSecrets(nil, newKey(t)); err == nil {
		t.Error("a previous key without a current one was accepted")
	}
	a := newKey(t)
	if models.SecretKeyID(a) == models.SecretKeyID(newKey(t)) || models.SecretKeyID(a) != models.SecretKeyID(append([]byte(nil), a...)) {
		t.Error("key ids do not tell keys apart")
	}
}
