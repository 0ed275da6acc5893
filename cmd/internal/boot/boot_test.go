package boot

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"funnelchat/models"
)

// openStandalone opens a fresh SQLite database as standalone mode does, migrated.
func openStandalone(t *testing.T) *models.Store {
	t.Helper()
	store, err := models.OpenSQLite(filepath.Join(t.TempDir(), "funnelchat.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	if err := store.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return store
}

// prepare runs PrepareStandalone and returns what it printed and what it logged.
func prepare(t *testing.T, store *models.Store) (printed, logged string) {
	t.Helper()
	var out, logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	if err := PrepareStandalone(context.Background(), store, &out, log); err != nil {
		t.Fatalf("PrepareStandalone: %v", err)
	}
	return out.String(), logs.String()
}

// printedValue returns the value of the one printed line that starts with prefix, failing the test when
// there is not exactly one.
func printedValue(t *testing.T, printed, prefix string) string {
	t.Helper()
	var values []string
	for line := range strings.Lines(printed) {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			values = append(values, strings.TrimSuffix(v, "\n"))
		}
	}
	if len(values) != 1 || values[0] == "" {
		t.Fatalf("printed %q: want one line %q<value>", printed, prefix)
	}
	return values[0]
}

func requireSignIn(t *testing.T, store *models.Store, password string) *models.User {
	t.Helper()
	u, err := store.SignIn(context.Background(), DemoEmail, password)
	if err != nil {
		t.Fatalf("sign in as %s with the printed password: %v", DemoEmail, err)
	}
	return u
}

func TestPrepareStandaloneDemoPassword(t *testing.T) {
	ctx := context.Background()
	store := openStandalone(t)

	printed, _ := prepare(t, store)
	lines := strings.Split(strings.TrimSuffix(printed, "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "demo API key: ") || !strings.HasPrefix(lines[1], "demo inbox password: ") {
		t.Fatalf("first start printed %q: want the key line, then the password line", printed)
	}
	key := printedValue(t, printed, "demo API key: ")
	password := printedValue(t, printed, "demo inbox password: ")
	if len(password) < models.MinPasswordLength {
		t.Errorf("password %q: want at least %d characters", password, models.MinPasswordLength)
	}
	acc, err := store.Authenticate(ctx, key)
	if err != nil {
		t.Fatalf("the printed key: %v", err)
	}
	u := requireSignIn(t, store, password)
	if u.ID != acc.OwnerUserID || u.Role != models.RoleOwner {
		t.Errorf("signed in as %+v: want the demo account's owner %s", u, acc.OwnerUserID)
	}

	t.Run("a second start prints nothing and tells how to reset the password", func(t *testing.T) {
		printed, logged := prepare(t, store)
		if printed != "" {
			t.Errorf("second start printed %q, want nothing", printed)
		}
		for _, want := range []string{"using the existing database", "key rotate --email demo@example.com", "go run ./cmd/admin user set-password --email demo@example.com"} {
			if !strings.Contains(logged, want) {
				t.Errorf("log %q: want it to contain %q", logged, want)
			}
		}
		requireSignIn(t, store, password) // unchanged
		if n, err := store.CountAccounts(ctx); err != nil || n != 1 {
			t.Errorf("accounts: %d, %v; want the one demo account", n, err)
		}
	})
}

// A database from before inbox passwords has a demo owner without one: the next start sets one and
// prints it once, and not the key, which it cannot recover.
func TestPrepareStandaloneDemoOwnerWithoutPassword(t *testing.T) {
	ctx := context.Background()
	store := openStandalone(t)
	created, err := store.CreateAccount(ctx, models.NewAccount{Email: DemoEmail, Name: "Demo"})
	if err != nil {
		t.Fatal(err)
	}
	if u, err := store.UserByEmail(ctx, DemoEmail); err != nil || u.PasswordHash != nil {
		t.Fatalf("demo owner %+v, %v: want one without a password to start from", u, err)
	}

	printed, logged := prepare(t, store)
	if strings.Contains(printed, "demo API key") {
		t.Errorf("printed %q: want no key line for an existing account", printed)
	}
	password := printedValue(t, printed, "demo inbox password: ")
	if printed != "demo inbox password: "+password+"\n" {
		t.Errorf("printed %q: want the password line alone", printed)
	}
	if !strings.Contains(logged, `"level":"INFO"`) || !strings.Contains(logged, "no inbox password") {
		t.Errorf("log %q: want an info line about the new password", logged)
	}
	if u := requireSignIn(t, store, password); u.ID != created.User.ID {
		t.Errorf("signed in as %s, want the demo owner %s", u.ID, created.User.ID)
	}
	if _, err := store.Authenticate(ctx, created.APIKey); err != nil {
		t.Errorf("the demo key after the password was set: %v", err)
	}

	printed, _ = prepare(t, store)
	if printed != "" {
		t.Errorf("the start after printed %q, want nothing", printed)
	}
	requireSignIn(t, store, password)
}

// A database whose accounts do not include the demo account is left alone.
func TestPrepareStandaloneWithoutDemoAccount(t *testing.T) {
	ctx := context.Background()
	store := openStandalone(t)
	if _, err := store.CreateAccount(ctx, models.NewAccount{Email: "someone@example.com"}); err != nil {
		t.Fatal(err)
	}
	printed, logged := prepare(t, store)
	if printed != "" || !strings.Contains(logged, "using the existing database") {
		t.Errorf("printed %q, logged %q: want nothing printed and the existing-database line", printed, logged)
	}
	if _, err := store.UserByEmail(ctx, DemoEmail); models.ErrorCode(err) != models.CodeNotFound {
		t.Errorf("demo owner: %v, want NOT_FOUND (no demo account created)", err)
	}
}
