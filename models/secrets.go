package models

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Secrets at rest: the customers' provider credentials (channel_credentials.settings, a JSON document
// holding auth tokens, access tokens, app secrets and verify tokens) and their webhook signing secrets
// (accounts.webhook_secret) are stored encrypted with AES-256-GCM, so that a copy of the database does
// not give them away. A stored value reads
//
//	enc:v1:<key id>:<base64 of nonce and ciphertext>
//
// where the key id is derived from the key (not the key), so that a process can tell which key a row
// needs: SECRETS_KEY, or SECRETS_KEY_PREVIOUS while keys are being rotated. Values without the prefix
// are plain text: rows written before a key was configured, or by a deployment without one. Both are
// read; RotateSecrets rewrites all of them under the current key.
//
// Each ciphertext is bound to its row (the additional data names the column and the account, and for
// credentials the channel), so a ciphertext copied into another account's row does not decrypt.

const secretPrefix = "enc:v1:"

// secretKeyIDLen is the length of a key id in hex characters.
const secretKeyIDLen = 8

// ErrSecretKey is returned when a stored secret needs a key this process does not have, or does not
// decrypt under the key its id names.
var ErrSecretKey = errors.New("stored secret cannot be decrypted with SECRETS_KEY or SECRETS_KEY_PREVIOUS")

// Secrets holds the keys that seal and open stored secrets. The zero of *Secrets (nil) seals nothing
// and opens only plain text.
type Secrets struct {
	current  *secretKey
	previous *secretKey
}

type secretKey struct {
	id   string
	aead cipher.AEAD
}

// NewSecrets returns the keyring for current (SECRETS_KEY; nil: secrets are stored as they are) and
// previous (SECRETS_KEY_PREVIOUS; nil: none). Keys are 32 bytes.
func NewSecrets(current, previous []byte) (*Secrets, error) {
	if current == nil && previous != nil {
		return nil, errors.New("secrets: a previous key needs a current key")
	}
	s := &Secrets{}
	var err error
	if current != nil {
		if s.current, err = newSecretKey(current); err != nil {
			return nil, err
		}
	}
	if previous != nil {
		if s.previous, err = newSecretKey(previous); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func newSecretKey(key []byte) (*secretKey, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("secrets: a key is 32 bytes, got %d", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &secretKey{id: SecretKeyID(key), aead: aead}, nil
}

// SecretKeyID is the id stored with every value the key encrypts: the start of a SHA-256 of the key
// under a fixed label, which names the key without helping anyone find it.
func SecretKeyID(key []byte) string {
	sum := sha256.Sum256(append([]byte("funnelchat secrets key id\x00"), key...))
	return hex.EncodeToString(sum[:])[:secretKeyIDLen]
}

// Enabled reports whether new secrets are stored encrypted.
func (s *Secrets) Enabled() bool { return s != nil && s.current != nil }

// seal encrypts plain for the row named by aad; without a current key it returns plain.
func (s *Secrets) seal(plain, aad string) (string, error) {
	if !s.Enabled() {
		return plain, nil
	}
	nonce := make([]byte, s.current.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("secrets: %w", err)
	}
	sealed := s.current.aead.Seal(nonce, nonce, []byte(plain), []byte(aad))
	return secretPrefix + s.current.id + ":" + base64.RawStdEncoding.EncodeToString(sealed), nil
}

// open returns the plain text of a stored value: plain text as it is, ciphertext decrypted with the
// key its id names. Errors wrap ErrSecretKey.
func (s *Secrets) open(stored, aad string) (string, error) {
	if !strings.HasPrefix(stored, secretPrefix) {
		return stored, nil
	}
	id, body, ok := strings.Cut(stored[len(secretPrefix):], ":")
	if !ok {
		return "", fmt.Errorf("%w: malformed value", ErrSecretKey)
	}
	key := s.key(id)
	if key == nil {
		return "", fmt.Errorf("%w: it was encrypted under key %s, which is neither", ErrSecretKey, id)
	}
	sealed, err := base64.RawStdEncoding.DecodeString(body)
	if err != nil || len(sealed) < key.aead.NonceSize() {
		return "", fmt.Errorf("%w: malformed value", ErrSecretKey)
	}
	n := key.aead.NonceSize()
	plain, err := key.aead.Open(nil, sealed[:n], sealed[n:], []byte(aad))
	if err != nil {
		return "", fmt.Errorf("%w: it does not decrypt under key %s (altered, or copied from another row)", ErrSecretKey, id)
	}
	return string(plain), nil
}

func (s *Secrets) key(id string) *secretKey {
	switch {
	case s == nil:
		return nil
	case s.current != nil && s.current.id == id:
		return s.current
	case s.previous != nil && s.previous.id == id:
		return s.previous
	}
	return nil
}

// The additional data binding each ciphertext to its row.
func webhookSecretAAD(accountID string) string { return "accounts.webhook_secret:" + accountID }
func channelSettingsAAD(accountID, kind string) string {
	return "channel_credentials.settings:" + accountID + ":" + kind
}

// UseSecrets sets the keys that seal new secrets and open stored ones (see NewSecrets); without it
// secrets are stored as they are and only plain text can be read.
func (s *Store) UseSecrets(k *Secrets) { s.secrets = k }

// OpenWebhookSecret returns the plain signing secret of an account loaded from the database (nil when
// it has none). Errors wrap ErrSecretKey.
func (s *Store) OpenWebhookSecret(acc *Account) (*string, error) {
	if acc.WebhookSecret == nil {
		return nil, nil
	}
	plain, err := s.secrets.open(*acc.WebhookSecret, webhookSecretAAD(acc.ID))
	if err != nil {
		return nil, fmt.Errorf("account %s webhook signing secret: %w", acc.ID, err)
	}
	return &plain, nil
}

// storedSecretKeyIDs returns the ids of the keys that stored secrets are encrypted under, and whether
// any secret is stored in plain text.
func (s *Store) storedSecretKeyIDs(ctx context.Context) (ids []string, plain bool, err error) {
	var rows []struct {
		ID    string `bun:"id"`
		Plain bool   `bun:"plain"`
	}
	// "enc:v1:" is 7 characters, so a key id starts at the 8th.
	err = s.db.NewRaw(`
		SELECT DISTINCT CASE WHEN v LIKE 'enc:v1:%' THEN substr(v, 8, ?) ELSE '' END AS id,
		       v NOT LIKE 'enc:v1:%' AS plain
		FROM (SELECT webhook_secret AS v FROM accounts WHERE webhook_secret IS NOT NULL
		      UNION ALL SELECT settings FROM channel_credentials) AS stored`, secretKeyIDLen).Scan(ctx, &rows)
	if err != nil {
		return nil, false, fmt.Errorf("stored secrets: %w", err)
	}
	for _, r := range rows {
		if r.Plain {
			plain = true
		} else {
			ids = append(ids, r.ID)
		}
	}
	sort.Strings(ids)
	return ids, plain, nil
}

// SecretsStatus is what CheckSecrets found.
type SecretsStatus struct {
	// Plain is true when some secret is stored in plain text (written without a key, or before one).
	Plain bool
	// Previous is true when some secret still needs SECRETS_KEY_PREVIOUS.
	Previous bool
}

// CheckSecrets verifies, at start-up, that this process can read every stored secret: each one is
// plain text or encrypted under SECRETS_KEY or SECRETS_KEY_PREVIOUS. A wrong or missing key is an
// error naming the variable, so that a misconfigured process stops instead of sending ciphertext to
// a provider as a token.
func (s *Store) CheckSecrets(ctx context.Context) (SecretsStatus, error) {
	ids, plain, err := s.storedSecretKeyIDs(ctx)
	if err != nil {
		return SecretsStatus{}, err
	}
	status := SecretsStatus{Plain: plain}
	var unknown []string
	for _, id := range ids {
		switch k := s.secrets.key(id); {
		case k == nil:
			unknown = append(unknown, id)
		case k == s.secrets.previous:
			status.Previous = true
		}
	}
	switch {
	case len(unknown) > 0 && !s.secrets.Enabled():
		return status, fmt.Errorf("SECRETS_KEY is not set, but stored secrets are encrypted (under key %s): set SECRETS_KEY to the key they were encrypted with", strings.Join(unknown, ", "))
	case len(unknown) > 0:
		return status, fmt.Errorf("SECRETS_KEY (key %s) cannot decrypt stored secrets encrypted under key %s: set SECRETS_KEY to that key, or keep it as SECRETS_KEY_PREVIOUS beside the new one until `admin secrets rotate` has run", s.secrets.current.id, strings.Join(unknown, ", "))
	}
	return status, nil
}

// RotateSecrets re-encrypts every stored secret (plain text, under SECRETS_KEY_PREVIOUS, or already
// under the current key, which gets a fresh nonce) under the current key and returns how many values it
// rewrote. Each value is rewritten only if it has not changed since it was read, so a secret saved
// meanwhile is kept (it was sealed under the current key anyway) and not counted. Errors: VALIDATION_ERROR without SECRETS_KEY; ErrSecretKey for a value neither
// key opens (nothing after it is rewritten; running again after fixing the keys finishes the job).
func (s *Store) RotateSecrets(ctx context.Context) (int, error) {
	if !s.secrets.Enabled() {
		return 0, Errorf(CodeValidation, "SECRETS_KEY is not set: there is no key to encrypt under")
	}
	n := 0
	var accounts []struct {
		ID     string `bun:"id"`
		Secret string `bun:"webhook_secret"`
	}
	if err := s.db.NewSelect().Table("accounts").Column("id", "webhook_secret").
		Where("webhook_secret IS NOT NULL").Scan(ctx, &accounts); err != nil {
		return n, fmt.Errorf("rotate secrets: %w", err)
	}
	for _, a := range accounts {
		aad := webhookSecretAAD(a.ID)
		sealed, err := s.reseal(a.Secret, aad)
		if err != nil {
			return n, fmt.Errorf("account %s webhook signing secret: %w", a.ID, err)
		}
		res, err := s.db.NewUpdate().Table("accounts").Set("webhook_secret = ?", sealed).
			Where("id = ? AND webhook_secret = ?", a.ID, a.Secret).Exec(ctx)
		if err != nil {
			return n, fmt.Errorf("rotate secrets: %w", err)
		}
		n += rowsAffected(res)
	}

	var creds []channelCredentials
	if err := s.db.NewSelect().Model(&creds).Scan(ctx); err != nil {
		return n, fmt.Errorf("rotate secrets: %w", err)
	}
	for _, c := range creds {
		sealed, err := s.reseal(c.Settings, channelSettingsAAD(c.AccountID, c.Kind))
		if err != nil {
			return n, fmt.Errorf("account %s %s credentials: %w", c.AccountID, c.Kind, err)
		}
		res, err := s.db.NewUpdate().Model((*channelCredentials)(nil)).Set("settings = ?", sealed).
			Where("account_id = ? AND kind = ? AND settings = ?", c.AccountID, c.Kind, c.Settings).Exec(ctx)
		if err != nil {
			return n, fmt.Errorf("rotate secrets: %w", err)
		}
		n += rowsAffected(res)
	}
	return n, nil
}

func (s *Store) reseal(stored, aad string) (string, error) {
	plain, err := s.secrets.open(stored, aad)
	if err != nil {
		return "", err
	}
	return s.secrets.seal(plain, aad)
}

func rowsAffected(res sql.Result) int {
	n, _ := res.RowsAffected()
	return int(n)
}
