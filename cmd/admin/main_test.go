package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"funnelchat/models"
	"funnelchat/models/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, &env)) }

// useBackend points the environment that boot.LoadConfig reads at the package's backend and returns a
// store on the same database, for checking what the commands did. On PostgreSQL that is the package's
// migrated database; on SQLite it is a fresh DATA_DIR, migrated here with the migrate command, because
// the admin command opens DATA_DIR/funnelchat.db rather than the package's file.
func useBackend(t *testing.T) *models.Store {
	t.Helper()
	if env.Postgres() {
		t.Setenv("DATABASE_URL", env.DatabaseURL)
		t.Setenv("REDIS_URL", env.RedisURL)
		t.Setenv("DATA_DIR", t.TempDir())
		return env.Store
	}
	dir := t.TempDir()
	t.Setenv("DATABASE_URL", "")
	t.Setenv("REDIS_URL", "")
	t.Setenv("DATA_DIR", dir)
	mustRun(t, "migrate")
	store, err := models.OpenSQLite(filepath.Join(dir, "funnelchat.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	return store
}

// runAdmin runs the admin command in-process, with nothing on standard input, and returns what it
// printed on stdout.
func runAdmin(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return runAdminInput(t, "", args...)
}

// runAdminInput runs the admin command in-process with input on standard input.
func runAdminInput(t *testing.T, input string, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	err := run(args, strings.NewReader(input), &out)
	return out.String(), err
}

// mustRun runs the admin command and fails the test on error.
func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, err := runAdmin(t, args...)
	if err != nil {
		t.Fatalf("admin %s: %v\nstdout: %s", strings.Join(args, " "), err, out)
	}
	return out
}

// mustRunInput runs the admin command with input on standard input and fails the test on error.
func mustRunInput(t *testing.T, input string, args ...string) string {
	t.Helper()
	out, err := runAdminInput(t, input, args...)
	if err != nil {
		t.Fatalf("admin %s: %v\nstdout: %s", strings.Join(args, " "), err, out)
	}
	return out
}

// runFails runs the admin command, requires an error whose text contains want, and nothing on stdout.
func runFails(t *testing.T, want string, args ...string) {
	t.Helper()
	out, err := runAdmin(t, args...)
	if err == nil {
		t.Fatalf("admin %s succeeded with %q, want an error containing %q", strings.Join(args, " "), out, want)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("admin %s: error %q, want it to contain %q", strings.Join(args, " "), err, want)
	}
	if out != "" {
		t.Errorf("admin %s failed but printed %q on stdout", strings.Join(args, " "), out)
	}
}

// decodeOne decodes stdout as exactly one JSON object on one line.
func decodeOne(t *testing.T, out string, v any) {
	t.Helper()
	if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
		t.Fatalf("stdout %q: want one JSON object on one line", out)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("stdout %q: %v", out, err)
	}
}

type createdAccount struct {
	AccountID string `json:"accountId"`
	UserID    string `json:"userId"`
	Email     string `json:"email"`
	APIKey    string `json:"apiKey"`
}

func createAccount(t *testing.T, args ...string) createdAccount {
	t.Helper()
	var got createdAccount
	decodeOne(t, mustRun(t, append([]string{"account", "create"}, args...)...), &got)
	return got
}

// uniqueEmail returns an address no other test uses, since on PostgreSQL the tests share a database.
func uniqueEmail(local string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return local + "-" + hex.EncodeToString(b) + "@example.com"
}

func accountByEmail(t *testing.T, store *models.Store, email string) *models.Account {
	t.Helper()
	acc, err := store.AccountByEmail(context.Background(), email)
	if err != nil {
		t.Fatalf("account %s: %v", email, err)
	}
	return acc
}

// requireNoAccount checks that a failed create left nothing behind.
func requireNoAccount(t *testing.T, store *models.Store, email string) {
	t.Helper()
	acc, err := store.AccountByEmail(context.Background(), email)
	if models.ErrorCode(err) != models.CodeNotFound {
		t.Errorf("account %s after a failed create: %+v, %v; want NOT_FOUND", email, acc, err)
	}
}

func TestMigrate(t *testing.T) {
	useBackend(t) // on SQLite this already ran migrate once on a fresh database
	for i := range 2 {
		var got map[string]any
		decodeOne(t, mustRun(t, "migrate"), &got)
		if len(got) != 1 || got["migrated"] != true {
			t.Errorf("run %d: stdout %v, want {\"migrated\":true}", i+1, got)
		}
	}
}

func TestAccountCreate(t *testing.T) {
	store := useBackend(t)
	ctx := context.Background()

	email := strings.Replace(uniqueEmail("Owner"), "example.com", "Example.COM", 1)
	got := createAccount(t, "--email", email, "--name", "Acme")

	if got.Email != strings.ToLower(email) {
		t.Errorf("email = %q, want %q", got.Email, strings.ToLower(email))
	}
	if !strings.HasPrefix(got.AccountID, "acc_") || !strings.HasPrefix(got.UserID, "usr_") {
		t.Errorf("accountId %q, userId %q: want acc_ and usr_ ids", got.AccountID, got.UserID)
	}
	if !strings.HasPrefix(got.APIKey, "sk_") || len(got.APIKey) < 40 {
		t.Errorf("apiKey %q: want a long sk_ key", got.APIKey)
	}

	acc, err := store.Authenticate(ctx, got.APIKey)
	if err != nil {
		t.Fatalf("the printed key does not authenticate: %v", err)
	}
	if acc.ID != got.AccountID || acc.Email != got.Email || acc.Name != "Acme" || acc.OwnerUserID != got.UserID {
		t.Errorf("authenticated account %+v, want id %s, email %s, name Acme, owner %s", acc, got.AccountID, got.Email, got.UserID)
	}
	if acc.IsAgency || acc.ParentID != nil || acc.CreditMilli != 0 {
		t.Errorf("account %+v: want a plain account with no parent and no credits", acc)
	}

	t.Run("duplicate email is refused whatever its case", func(t *testing.T) {
		runFails(t, "already exists", "account", "create", "--email", strings.ToUpper(email))
	})
	t.Run("missing email is refused", func(t *testing.T) {
		runFails(t, "--email is required", "account", "create", "--name", "Nobody")
	})
	t.Run("invalid email is refused", func(t *testing.T) {
		runFails(t, "not a valid email", "account", "create", "--email", "Alice <alice@example.com>")
	})
	t.Run("negative credits are refused", func(t *testing.T) {
		e := uniqueEmail("negative")
		runFails(t, "credits", "account", "create", "--email", e, "--credits", "-1")
		requireNoAccount(t, store, e)
	})
	t.Run("unknown flag is refused", func(t *testing.T) {
		runFails(t, "flag provided but not defined", "account", "create", "--email", uniqueEmail("flag"), "--bogus")
	})
}

func TestSubAccount(t *testing.T) {
	store := useBackend(t)

	agencyEmail := uniqueEmail("agency")
	agency := createAccount(t, "--email", agencyEmail, "--agency")
	if acc := accountByEmail(t, store, agencyEmail); !acc.IsAgency || acc.ParentID != nil {
		t.Fatalf("agency %+v: want IsAgency and no parent", acc)
	}

	t.Run("sub-account of an agency gets its parent and credits", func(t *testing.T) {
		subEmail := uniqueEmail("sub")
		sub := createAccount(t, "--email", subEmail, "--parent", strings.ToUpper(agencyEmail), "--credits", "5")
		acc := accountByEmail(t, store, subEmail)
		if acc.ID != sub.AccountID {
			t.Errorf("account id %s, printed %s", acc.ID, sub.AccountID)
		}
		if acc.ParentID == nil || *acc.ParentID != agency.AccountID {
			t.Errorf("ParentID = %v, want the agency %s", acc.ParentID, agency.AccountID)
		}
		if acc.Credits() != 5 || acc.IsAgency {
			t.Errorf("Credits() = %v, IsAgency = %v; want 5 and false", acc.Credits(), acc.IsAgency)
		}
	})

	t.Run("fractional credits are kept to the thousandth", func(t *testing.T) {
		e := uniqueEmail("fraction")
		createAccount(t, "--email", e, "--parent", agencyEmail, "--credits", "2.125")
		if got := accountByEmail(t, store, e).CreditMilli; got != 2125 {
			t.Errorf("CreditMilli = %d, want 2125", got)
		}
	})

	t.Run("parent that is not an agency is refused", func(t *testing.T) {
		plainEmail := uniqueEmail("plain")
		createAccount(t, "--email", plainEmail)
		e := uniqueEmail("child")
		runFails(t, "not an agency", "account", "create", "--email", e, "--parent", plainEmail)
		requireNoAccount(t, store, e)
	})

	t.Run("unknown parent is refused", func(t *testing.T) {
		e := uniqueEmail("orphan")
		runFails(t, "no account with email", "account", "create", "--email", e, "--parent", uniqueEmail("nobody"))
		requireNoAccount(t, store, e)
	})

	t.Run("agency cannot have a parent", func(t *testing.T) {
		e := uniqueEmail("subagency")
		runFails(t, "agency", "account", "create", "--email", e, "--agency", "--parent", agencyEmail)
		requireNoAccount(t, store, e)
	})
}

func TestKeyRotate(t *testing.T) {
	store := useBackend(t)
	ctx := context.Background()

	email := uniqueEmail("rotate")
	created := createAccount(t, "--email", email)

	var rotated struct {
		APIKey string `json:"apiKey"`
	}
	decodeOne(t, mustRun(t, "key", "rotate", "--email", strings.ToUpper(email)), &rotated)
	if !strings.HasPrefix(rotated.APIKey, "sk_") || rotated.APIKey == created.APIKey {
		t.Fatalf("rotated key %q: want a new sk_ key (old %q)", rotated.APIKey, created.APIKey)
	}

	_, err := store.Authenticate(ctx, created.APIKey)
	if models.ErrorCode(err) != models.CodeUnauthorized {
		t.Errorf("old key after rotation: %v, want UNAUTHORIZED", err)
	}
	acc, err := store.Authenticate(ctx, rotated.APIKey)
	if err != nil {
		t.Fatalf("new key: %v", err)
	}
	if acc.ID != created.AccountID {
		t.Errorf("new key authenticates account %s, want %s", acc.ID, created.AccountID)
	}

	t.Run("unknown email is refused", func(t *testing.T) {
		runFails(t, "no account with email", "key", "rotate", "--email", uniqueEmail("nobody"))
	})
	t.Run("missing email is refused", func(t *testing.T) {
		runFails(t, "--email is required", "key", "rotate")
	})
}

type addedUser struct {
	UserID   string `json:"userId"`
	Email    string `json:"email"`
	Role     string `json:"role"`
	Password string `json:"password"`
}

func addUser(t *testing.T, args ...string) addedUser {
	t.Helper()
	var got addedUser
	decodeOne(t, mustRun(t, append([]string{"user", "add"}, args...)...), &got)
	return got
}

func userByEmail(t *testing.T, store *models.Store, email string) *models.User {
	t.Helper()
	u, err := store.UserByEmail(context.Background(), email)
	if err != nil {
		t.Fatalf("user %s: %v", email, err)
	}
	return u
}

// passwordHash returns the user's stored hash, failing the test when there is none.
func passwordHash(t *testing.T, store *models.Store, email string) string {
	t.Helper()
	u := userByEmail(t, store, email)
	if u.PasswordHash == nil {
		t.Fatalf("user %s has no password hash", email)
	}
	return *u.PasswordHash
}

// requireNoUser checks that a failed add left nothing behind.
func requireNoUser(t *testing.T, store *models.Store, email string) {
	t.Helper()
	u, err := store.UserByEmail(context.Background(), email)
	if models.ErrorCode(err) != models.CodeNotFound {
		t.Errorf("user %s after a failed add: %+v, %v; want NOT_FOUND", email, u, err)
	}
}

func TestUserAdd(t *testing.T) {
	store := useBackend(t)
	ctx := context.Background()

	accountEmail := uniqueEmail("team")
	acc := createAccount(t, "--email", accountEmail)

	check := func(t *testing.T, got addedUser, email, role string) {
		t.Helper()
		if !strings.HasPrefix(got.UserID, "usr_") || got.UserID == acc.UserID {
			t.Errorf("userId %q: want a new usr_ id", got.UserID)
		}
		if got.Email != strings.ToLower(email) || got.Role != role {
			t.Errorf("email %q, role %q; want %q, %q", got.Email, got.Role, strings.ToLower(email), role)
		}
		if len(got.Password) < models.MinPasswordLength {
			t.Errorf("password %q: want a generated one of at least %d characters", got.Password, models.MinPasswordLength)
		}
		u := userByEmail(t, store, email)
		if u.ID != got.UserID || u.AccountID != acc.AccountID || u.Role != role {
			t.Errorf("stored user %+v: want id %s in account %s with role %s", u, got.UserID, acc.AccountID, role)
		}
		if u.PasswordHash == nil || !models.VerifyPassword(got.Password, *u.PasswordHash) {
			t.Errorf("the printed password does not verify against the stored hash %v", u.PasswordHash)
		}
		signedIn, err := store.SignIn(ctx, email, got.Password)
		if err != nil || signedIn.ID != got.UserID {
			t.Errorf("sign in with the printed password: %+v, %v; want user %s", signedIn, err, got.UserID)
		}
	}

	t.Run("a member by default", func(t *testing.T) {
		email := strings.Replace(uniqueEmail("Member"), "example.com", "Example.COM", 1)
		check(t, addUser(t, "--account-email", strings.ToUpper(accountEmail), "--email", email), email, models.RoleMember)
	})
	t.Run("an owner with --role owner", func(t *testing.T) {
		email := uniqueEmail("owner")
		check(t, addUser(t, "--account-email", accountEmail, "--email", email, "--role", "owner"), email, models.RoleOwner)
	})
	t.Run("each user gets a password of their own", func(t *testing.T) {
		a := addUser(t, "--account-email", accountEmail, "--email", uniqueEmail("first"))
		b := addUser(t, "--account-email", accountEmail, "--email", uniqueEmail("second"))
		if a.Password == b.Password {
			t.Errorf("two users got the same password %q", a.Password)
		}
	})

	t.Run("duplicate email is refused whatever its case", func(t *testing.T) {
		email := uniqueEmail("twice")
		first := addUser(t, "--account-email", accountEmail, "--email", email)
		runFails(t, "already exists", "user", "add", "--account-email", accountEmail, "--email", strings.ToUpper(email))
		if got := passwordHash(t, store, email); !models.VerifyPassword(first.Password, got) {
			t.Errorf("the refused add changed the first user's password")
		}
	})
	t.Run("the email of another account's owner is refused", func(t *testing.T) {
		other := uniqueEmail("other")
		createAccount(t, "--email", other)
		runFails(t, "already exists", "user", "add", "--account-email", accountEmail, "--email", other)
	})
	t.Run("unknown account is refused", func(t *testing.T) {
		email := uniqueEmail("stray")
		runFails(t, "no account with email", "user", "add", "--account-email", uniqueEmail("nobody"), "--email", email)
		requireNoUser(t, store, email)
	})
	t.Run("bad role is refused", func(t *testing.T) {
		for _, role := range []string{"admin", "Owner", ""} {
			email := uniqueEmail("role")
			runFails(t, "--role must be owner or member", "user", "add", "--account-email", accountEmail, "--email", email, "--role", role)
			requireNoUser(t, store, email)
		}
	})
	t.Run("invalid email is refused", func(t *testing.T) {
		runFails(t, "not a valid email", "user", "add", "--account-email", accountEmail, "--email", "Bob <bob@example.com>")
	})
	t.Run("missing flags are refused", func(t *testing.T) {
		runFails(t, "--account-email and --email are required", "user", "add", "--email", uniqueEmail("alone"))
		runFails(t, "--account-email and --email are required", "user", "add", "--account-email", accountEmail)
		runFails(t, "--account-email and --email are required", "user", "add")
	})
	t.Run("unknown flag is refused", func(t *testing.T) {
		runFails(t, "flag provided but not defined", "user", "add", "--account-email", accountEmail, "--email", uniqueEmail("flag"), "--admin")
	})
}

func TestUserSetPassword(t *testing.T) {
	store := useBackend(t)
	ctx := context.Background()

	accountEmail := uniqueEmail("team")
	createAccount(t, "--email", accountEmail)
	email := uniqueEmail("member")
	added := addUser(t, "--account-email", accountEmail, "--email", email)
	bystander := addUser(t, "--account-email", accountEmail, "--email", uniqueEmail("bystander"))

	signIn := func(t *testing.T, email string) string {
		t.Helper()
		token, _, err := store.NewSession(ctx, userByEmail(t, store, email))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.SessionByToken(ctx, token); err != nil {
			t.Fatalf("the new session: %v", err)
		}
		return token
	}
	session := signIn(t, email)
	otherSession := signIn(t, bystander.Email)

	const newPassword = "correct horse battery staple"
	var got struct {
		UserID string `json:"userId"`
	}
	decodeOne(t, mustRunInput(t, newPassword+"\n", "user", "set-password", "--email", strings.ToUpper(email)), &got)
	if got.UserID != added.UserID {
		t.Errorf("userId %q, want %q", got.UserID, added.UserID)
	}
	hash := passwordHash(t, store, email)
	if !models.VerifyPassword(newPassword, hash) {
		t.Errorf("the new password does not verify against the stored hash")
	}
	if models.VerifyPassword(added.Password, hash) {
		t.Errorf("the old password still verifies")
	}
	if _, err := store.SignIn(ctx, email, added.Password); models.ErrorCode(err) != models.CodeUnauthorized {
		t.Errorf("sign in with the old password: %v, want UNAUTHORIZED", err)
	}
	if _, err := store.SessionByToken(ctx, session); models.ErrorCode(err) != models.CodeUnauthorized {
		t.Errorf("a session from before the change: %v, want UNAUTHORIZED", err)
	}
	if _, err := store.SessionByToken(ctx, otherSession); err != nil {
		t.Errorf("another user's session after the change: %v, want it to live on", err)
	}
	if !models.VerifyPassword(bystander.Password, passwordHash(t, store, bystander.Email)) {
		t.Errorf("another user's password changed")
	}

	t.Run("one trailing line end is stripped and nothing else", func(t *testing.T) {
		for _, tt := range []struct{ input, want string }{
			{"  spaced out pass  \r\n", "  spaced out pass  "},
			{"two line ends here\n\n", "two line ends here\n"},
			{"no line end at all", "no line end at all"},
			{"ends with a return\r", "ends with a return\r"},
		} {
			mustRunInput(t, tt.input, "user", "set-password", "--email", email)
			hash := passwordHash(t, store, email)
			if !models.VerifyPassword(tt.want, hash) {
				t.Errorf("input %q: the stored hash does not verify %q", tt.input, tt.want)
			}
			if models.VerifyPassword(tt.input, hash) && tt.input != tt.want {
				t.Errorf("input %q: the line end was kept", tt.input)
			}
		}
	})

	t.Run("short password is refused and changes nothing", func(t *testing.T) {
		before := passwordHash(t, store, email)
		live := signIn(t, email)
		for _, input := range []string{"", "\n", "eleven char", "eleven char\r\n", "short\n\n"} {
			out, err := runAdminInput(t, input, "user", "set-password", "--email", email)
			if err == nil || !strings.Contains(err.Error(), "at least 12 characters") || out != "" {
				t.Errorf("input %q: stdout %q, error %v; want an error naming the 12-character minimum", input, out, err)
			}
		}
		if after := passwordHash(t, store, email); after != before {
			t.Errorf("a refused password changed the stored hash")
		}
		if _, err := store.SessionByToken(ctx, live); err != nil {
			t.Errorf("a refused password ended the user's session: %v", err)
		}
	})
	t.Run("unknown email is refused", func(t *testing.T) {
		out, err := runAdminInput(t, newPassword+"\n", "user", "set-password", "--email", uniqueEmail("nobody"))
		if err == nil || !strings.Contains(err.Error(), "no user with email") || out != "" {
			t.Errorf("stdout %q, error %v; want an error naming the unknown user", out, err)
		}
	})
	t.Run("missing email is refused", func(t *testing.T) {
		runFails(t, "--email is required", "user", "set-password")
	})
	t.Run("a password given as an argument is refused", func(t *testing.T) {
		runFails(t, "standard input", "user", "set-password", "--email", email, newPassword)
	})
}

func TestUnknownCommand(t *testing.T) {
	useBackend(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no command", nil, "no command given"},
		{"unknown word", []string{"frobnicate"}, "unknown command"},
		{"group without verb", []string{"account"}, "unknown command"},
		{"unknown verb", []string{"key", "delete", "--email", "a@example.com"}, "unknown command"},
		{"user without verb", []string{"user"}, "unknown command"},
		{"unknown user verb", []string{"user", "remove", "--email", "a@example.com"}, "unknown command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runFails(t, tt.want, tt.args...)
			// The usage goes with the error so that the operator sees what would have worked.
			if _, err := runAdmin(t, tt.args...); err == nil || !strings.Contains(err.Error(), "admin account create") {
				t.Errorf("error %v: want the usage", err)
			}
		})
	}
}

// buildAdmin builds the admin command into a temporary directory and returns the binary's path.
func buildAdmin(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go tool is needed to build the binary: %v", err)
	}
	gomod, err := exec.Command(goTool, "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(gomod)))
	bin := filepath.Join(t.TempDir(), "admin")
	build := exec.Command(goTool, "build", "-o", bin, "./cmd/admin")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestBinary builds the real command and checks the contract of the README's "Admin CLI" at the process
// boundary: JSON on stdout and exit 0 on success; a message on stderr and exit 1 on error.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	store := useBackend(t)
	bin := buildAdmin(t)

	adminInput := func(input string, args ...string) (stdout, stderr string, code int) {
		t.Helper()
		var out, errOut bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Dir = t.TempDir()
		cmd.Stdin = strings.NewReader(input)
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit):
			code = exit.ExitCode()
		case err != nil:
			t.Fatalf("admin %v: %v", args, err)
		}
		return out.String(), errOut.String(), code
	}
	admin := func(args ...string) (stdout, stderr string, code int) {
		t.Helper()
		return adminInput("", args...)
	}

	t.Run("bad command exits 1 with a message on stderr", func(t *testing.T) {
		stdout, stderr, code := admin("frobnicate")
		if code != 1 {
			t.Errorf("exit code %d, want 1", code)
		}
		if !strings.Contains(stderr, "unknown command") {
			t.Errorf("stderr %q, want the error", stderr)
		}
		if stdout != "" {
			t.Errorf("stdout %q, want nothing", stdout)
		}
	})
	t.Run("migrate exits 0 with JSON on stdout", func(t *testing.T) {
		stdout, stderr, code := admin("migrate")
		if code != 0 {
			t.Fatalf("exit code %d, stderr %q; want 0", code, stderr)
		}
		var got map[string]any
		decodeOne(t, stdout, &got)
		if len(got) != 1 || got["migrated"] != true {
			t.Errorf("stdout %v, want {\"migrated\":true}", got)
		}
	})
	t.Run("user set-password reads the password from standard input", func(t *testing.T) {
		accountEmail := uniqueEmail("binary")
		createAccount(t, "--email", accountEmail)
		user := addUser(t, "--account-email", accountEmail, "--email", uniqueEmail("binary-user"))
		stdout, stderr, code := adminInput("piped in password\r\n", "user", "set-password", "--email", user.Email)
		if code != 0 {
			t.Fatalf("exit code %d, stderr %q; want 0", code, stderr)
		}
		if stderr != "" {
			t.Errorf("stderr %q, want nothing: no prompt when standard input is not a terminal", stderr)
		}
		var got struct {
			UserID string `json:"userId"`
		}
		decodeOne(t, stdout, &got)
		if got.UserID != user.UserID {
			t.Errorf("userId %q, want %q", got.UserID, user.UserID)
		}
		if !models.VerifyPassword("piped in password", passwordHash(t, store, user.Email)) {
			t.Errorf("the piped password does not verify against the stored hash")
		}

		stdout, stderr, code = adminInput("too short\n", "user", "set-password", "--email", user.Email)
		if code != 1 || !strings.Contains(stderr, "at least 12 characters") || stdout != "" {
			t.Errorf("short password: exit %d, stdout %q, stderr %q; want 1, nothing, the minimum", code, stdout, stderr)
		}
	})
	t.Run("invalid configuration exits 1 naming the variable", func(t *testing.T) {
		t.Setenv("PORT", "not-a-port")
		stdout, stderr, code := admin("migrate")
		if code != 1 || !strings.Contains(stderr, "PORT") || stdout != "" {
			t.Errorf("exit %d, stdout %q, stderr %q; want 1, nothing, a message naming PORT", code, stdout, stderr)
		}
	})
}
