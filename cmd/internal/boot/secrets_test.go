package boot

import (
	"context"
	"encoding/base64"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"funnelchat/config"
	"funnelchat/models"
)

func standaloneConfig(t *testing.T, dataDir string) *config.Config {
	t.Helper()
	cfg, err := config.Load(func(k string) string {
		if k == "DATA_DIR" {
			return dataDir
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestStandaloneSecretsKeyFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := standaloneConfig(t, dir)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	keyFile := filepath.Join(dir, secretsKeyFile)

	// Processes starting at once (the api and an admin command) end up with one key.
	var wg sync.WaitGroup
	keys := make([]string, 8)
	for i := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := loadSecrets(cfg); err != nil {
				t.Error(err)
				return
			}
			keys[i] = models.SecretKeyID(mustKeyFile(t, keyFile))
		}()
	}
	wg.Wait()
	info, err := os.Stat(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", keyFile, info.Mode().Perm())
	}

	store := openStandalone(t)
	if err := UseSecrets(ctx, cfg, store, log); err != nil {
		t.Fatal(err)
	}
	if _, err := store.SetWebhookURL(ctx, createAccount(t, store), "https://example.com/hook", "whsec_c2VjcmV0"); err != nil {
		t.Fatal(err)
	}

	// Lost key file: the start-up check says which file to restore, and leaves no new key in its place.
	original, _ := os.ReadFile(keyFile)
	if err := os.Remove(keyFile); err != nil {
		t.Fatal(err)
	}
	err = UseSecrets(ctx, cfg, store, log)
	if err == nil || !strings.Contains(err.Error(), keyFile+" is missing") {
		t.Fatalf("start without the key file: %v, want an error naming %s", err, keyFile)
	}
	if _, statErr := os.Stat(keyFile); !os.IsNotExist(statErr) {
		t.Errorf("a new key file was left in place of the missing one (%v)", statErr)
	}

	// Another key in the file: the error names the file, not only SECRETS_KEY.
	other := make([]byte, 32)
	if err := os.WriteFile(keyFile, []byte(base64.StdEncoding.EncodeToString(other)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := UseSecrets(ctx, cfg, store, log); err == nil || !strings.Contains(err.Error(), "the key in "+keyFile) {
		t.Errorf("start with another key in the file: %v", err)
	}

	// Restored, it starts again.
	if err := os.WriteFile(keyFile, original, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := UseSecrets(ctx, cfg, store, log); err != nil {
		t.Errorf("start with the restored key file: %v", err)
	}
	for _, k := range keys {
		if k != keys[0] {
			t.Errorf("concurrent starts saw keys %q", keys)
			break
		}
	}
}

func mustKeyFile(t *testing.T, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Error(err)
		return nil
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(raw)))
	if err != nil || len(key) != 32 {
		t.Errorf("%s holds %q", path, raw)
	}
	return key
}

func createAccount(t *testing.T, store *models.Store) string {
	t.Helper()
	created, err := store.CreateAccount(context.Background(), models.NewAccount{Email: "secrets@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	return created.Account.ID
}
