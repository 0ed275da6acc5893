package models_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"funnelchat/models"
	"funnelchat/models/testenv"
)

// env is the package's database and Redis: PostgreSQL and Redis when TEST_DATABASE_URL and
// TEST_REDIS_URL are set, SQLite and miniredis otherwise.
var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, &env)) }

var emailSeq atomic.Int64

// The account and user helpers below are testenv's fixtures on env.Store, shared with models/report.

// uniqueEmail returns an email no other test uses (users' emails are unique across accounts).
func uniqueEmail(name string) string { return testenv.UniqueEmail(name) }

// newAccount creates an account with a unique email; its owner has no password.
func newAccount(t testing.TB) *models.CreatedAccount {
	t.Helper()
	return testenv.NewAccount(t, env.Store, "")
}

// addUser adds a user with the role to the account.
func addUser(t testing.TB, accountID, role string) *models.AddedUser {
	t.Helper()
	return testenv.AddUser(t, env.Store, accountID, role)
}

// wantCode fails the test unless err carries the domain error code.
func wantCode(t testing.TB, err error, code, what string) {
	t.Helper()
	testenv.WantCode(t, err, code, what)
}

// newSession signs the user in and returns the raw token.
func newSession(t testing.TB, u *models.User) string {
	t.Helper()
	token, _, err := env.Store.NewSession(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	return token
}

// wantSession fails the test unless token is a live session of the user.
func wantSession(t testing.TB, token string, u *models.User) {
	t.Helper()
	sess, err := env.Store.SessionByToken(context.Background(), token)
	if err != nil {
		t.Errorf("SessionByToken of %s's session: %v, want the session", u.Email, err)
		return
	}
	if sess.UserID != u.ID || sess.AccountID != u.AccountID || sess.User == nil || sess.User.ID != u.ID {
		t.Errorf("SessionByToken: session %+v, want user %s of account %s", sess, u.ID, u.AccountID)
	}
}

// wantNoSession fails the test unless token is refused as UNAUTHORIZED.
func wantNoSession(t testing.TB, token, what string) {
	t.Helper()
	sess, err := env.Store.SessionByToken(context.Background(), token)
	if err == nil {
		t.Errorf("%s: SessionByToken returned session of %s, want UNAUTHORIZED", what, sess.UserID)
		return
	}
	wantCode(t, err, models.CodeUnauthorized, what)
}

func TestAddUser(t *testing.T) {
	ctx := context.Background()
	acc := newAccount(t)

	t.Run("default role is member", func(t *testing.T) {
		email := uniqueEmail("Member")
		added, err := env.Store.AddUser(ctx, acc.Account.ID, "  "+strings.ToUpper(email)+" ", "")
		if err != nil {
			t.Fatal(err)
		}
		u := added.User
		if u.Role != models.RoleMember || u.AccountID != acc.Account.ID || u.Email != strings.ToLower(email) || !strings.HasPrefix(u.ID, "usr_") {
			t.Errorf("added user %+v: want a member of %s with the email %s in lower case", u, acc.Account.ID, strings.ToLower(email))
		}
		if len(added.Password) != 20 || models.CheckPassword(added.Password) != nil {
			t.Errorf("generated password %q: want 20 characters that pass CheckPassword", added.Password)
		}
		if u.PasswordHash == nil || !models.VerifyPassword(added.Password, *u.PasswordHash) {
			t.Error("the stored hash does not verify the generated password")
		}
		stored, err := env.Store.UserByEmail(ctx, email)
		if err != nil {
			t.Fatal(err)
		}
		if stored.ID != u.ID || stored.Role != models.RoleMember || stored.PasswordHash == nil || *stored.PasswordHash != *u.PasswordHash {
			t.Errorf("stored user %+v, want %+v", stored, u)
		}
		signedIn, err := env.Store.SignIn(ctx, email, added.Password)
		if err != nil || signedIn.ID != u.ID {
			t.Errorf("SignIn with the generated password: %v, %v; want the user", signedIn, err)
		}
	})

	t.Run("owner role", func(t *testing.T) {
		added := addUser(t, acc.Account.ID, models.RoleOwner)
		if added.User.Role != models.RoleOwner {
			t.Errorf("role %q, want owner", added.User.Role)
		}
		stored, err := env.Store.UserByEmail(ctx, added.User.Email)
		if err != nil || stored.Role != models.RoleOwner {
			t.Errorf("stored user %+v, %v: want role owner", stored, err)
		}
	})

	t.Run("bad role", func(t *testing.T) {
		for _, role := range []string{"admin", "Owner", "MEMBER", " member", "root"} {
			email := uniqueEmail("badrole")
			_, err := env.Store.AddUser(ctx, acc.Account.ID, email, role)
			wantCode(t, err, models.CodeValidation, fmt.Sprintf("AddUser with role %q", role))
			if _, err := env.Store.UserByEmail(ctx, email); models.ErrorCode(err) != models.CodeNotFound {
				t.Errorf("a user with role %q was stored: %v", role, err)
			}
		}
	})

	t.Run("bad email", func(t *testing.T) {
		for _, email := range []string{"", "   ", "not an email", "a@b@c", "Name <x@example.com>", "x@example.com\xff", strings.Repeat("a", 300) + "@example.com"} {
			_, err := env.Store.AddUser(ctx, acc.Account.ID, email, "")
			wantCode(t, err, models.CodeValidation, fmt.Sprintf("AddUser(%q)", email))
		}
	})

	t.Run("duplicate email", func(t *testing.T) {
		first := addUser(t, acc.Account.ID, "")
		_, err := env.Store.AddUser(ctx, acc.Account.ID, first.User.Email, "")
		wantCode(t, err, models.CodeConflict, "the same email again in the account")
		_, err = env.Store.AddUser(ctx, acc.Account.ID, strings.ToUpper(first.User.Email), models.RoleOwner)
		wantCode(t, err, models.CodeConflict, "the same email in upper case")

		other := newAccount(t)
		_, err = env.Store.AddUser(ctx, other.Account.ID, first.User.Email, "")
		wantCode(t, err, models.CodeConflict, "the email of another account's user")
		_, err = env.Store.AddUser(ctx, other.Account.ID, acc.User.Email, "")
		wantCode(t, err, models.CodeConflict, "the email of another account's owner")

		// The first user is untouched: still the account's, still signing in with its password.
		if u, err := env.Store.SignIn(ctx, first.User.Email, first.Password); err != nil || u.AccountID != acc.Account.ID {
			t.Errorf("SignIn of the first user after the conflicts: %+v, %v", u, err)
		}
	})

	t.Run("Users lists the account's users only", func(t *testing.T) {
		fresh := newAccount(t)
		a := addUser(t, fresh.Account.ID, "")
		b := addUser(t, fresh.Account.ID, models.RoleOwner)
		addUser(t, newAccount(t).Account.ID, "") // another account's
		users, err := env.Store.Users(ctx, fresh.Account.ID)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, u := range users {
			ids = append(ids, u.ID)
		}
		want := []string{fresh.User.ID, a.User.ID, b.User.ID}
		if strings.Join(ids, ",") != strings.Join(want, ",") {
			t.Errorf("Users = %v, want %v (oldest first)", ids, want)
		}
	})
}

func TestCreateAccountOwnerRole(t *testing.T) {
	acc := newAccount(t)
	if acc.User.Role != models.RoleOwner || acc.User.ID != acc.Account.OwnerUserID {
		t.Errorf("created user %+v: want the account's owner with role owner", acc.User)
	}
	stored, err := env.Store.UserByEmail(context.Background(), acc.User.Email)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Role != models.RoleOwner {
		t.Errorf("stored owner's role %q, want owner", stored.Role)
	}
	if stored.PasswordHash != nil {
		t.Errorf("a new account's owner has a password hash %q, want none until one is set", *stored.PasswordHash)
	}
}

func TestSignIn(t *testing.T) {
	ctx := context.Background()
	acc := newAccount(t)
	member := addUser(t, acc.Account.ID, "")

	u, err := env.Store.SignIn(ctx, member.User.Email, member.Password)
	if err != nil || u.ID != member.User.ID || u.AccountID != acc.Account.ID {
		t.Fatalf("SignIn with the right password: %+v, %v", u, err)
	}
	u, err = env.Store.SignIn(ctx, " "+strings.ToUpper(member.User.Email)+" ", member.Password)
	if err != nil || u.ID != member.User.ID {
		t.Errorf("SignIn with the email in upper case and spaces: %+v, %v", u, err)
	}

	refused := []struct{ name, email, password string }{
		{"wrong password", member.User.Email, member.Password + "x"},
		{"empty password", member.User.Email, ""},
		{"password of another case", member.User.Email, strings.ToUpper(member.Password)},
		{"unknown email", uniqueEmail("nobody"), member.Password},
		{"user without a password", acc.User.Email, member.Password},
		{"user without a password, empty password", acc.User.Email, ""},
		{"empty email", "", member.Password},
	}
	var message string
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			u, err := env.Store.SignIn(ctx, tt.email, tt.password)
			if err == nil {
				t.Fatalf("SignIn signed in %+v, want UNAUTHORIZED", u)
			}
			if u != nil {
				t.Errorf("SignIn returned user %+v with the error", u)
			}
			wantCode(t, err, models.CodeUnauthorized, "SignIn")
			msg := models.ErrorMessage(err)
			if message == "" {
				message = msg
			} else if msg != message {
				t.Errorf("message %q differs from %q: the answer must not tell which emails have users", msg, message)
			}
		})
	}
}

func TestSetPassword(t *testing.T) {
	ctx := context.Background()
	acc := newAccount(t)
	member := addUser(t, acc.Account.ID, "")
	other := addUser(t, acc.Account.ID, "")
	first, second := newSession(t, member.User), newSession(t, member.User)
	otherToken := newSession(t, other.User)

	t.Run("too short changes nothing", func(t *testing.T) {
		for _, pw := range []string{"", "short", "elevenchars", strings.Repeat("a", 257)} {
			wantCode(t, env.Store.SetPassword(ctx, member.User.ID, pw), models.CodeValidation, fmt.Sprintf("SetPassword(%d bytes)", len(pw)))
		}
		wantSession(t, first, member.User)
		wantSession(t, second, member.User)
		if _, err := env.Store.SignIn(ctx, member.User.Email, member.Password); err != nil {
			t.Errorf("SignIn with the old password after refused changes: %v", err)
		}
	})

	t.Run("sets the password and ends the user's sessions", func(t *testing.T) {
		const pw = "a brand new password"
		if err := env.Store.SetPassword(ctx, member.User.ID, pw); err != nil {
			t.Fatal(err)
		}
		wantNoSession(t, first, "first session after SetPassword")
		wantNoSession(t, second, "second session after SetPassword")
		wantSession(t, otherToken, other.User) // another user's sessions stay
		if _, err := env.Store.SignIn(ctx, member.User.Email, member.Password); models.ErrorCode(err) != models.CodeUnauthorized {
			t.Errorf("SignIn with the old password: %v, want UNAUTHORIZED", err)
		}
		u, err := env.Store.SignIn(ctx, member.User.Email, pw)
		if err != nil || u.ID != member.User.ID {
			t.Fatalf("SignIn with the new password: %+v, %v", u, err)
		}
		wantSession(t, newSession(t, u), member.User) // a new sign-in works
	})

	t.Run("gives a password to a user without one", func(t *testing.T) {
		const pw = "the owner's first password"
		if err := env.Store.SetPassword(ctx, acc.User.ID, pw); err != nil {
			t.Fatal(err)
		}
		u, err := env.Store.SignIn(ctx, acc.User.Email, pw)
		if err != nil || u.ID != acc.User.ID || u.Role != models.RoleOwner {
			t.Errorf("SignIn of the owner: %+v, %v", u, err)
		}
	})

	t.Run("unknown user", func(t *testing.T) {
		wantCode(t, env.Store.SetPassword(ctx, "usr_nobody", "long enough password"), models.CodeNotFound, "SetPassword of an unknown user")
	})
}

func TestRemoveUser(t *testing.T) {
	ctx := context.Background()
	acc := newAccount(t)
	member := addUser(t, acc.Account.ID, "")
	token := newSession(t, member.User)
	ownerToken := newSession(t, acc.User)

	other := newAccount(t)
	outsider := addUser(t, other.Account.ID, "")
	outsiderToken := newSession(t, outsider.User)

	t.Run("another account's user is not found and stays", func(t *testing.T) {
		wantCode(t, env.Store.RemoveUser(ctx, acc.Account.ID, outsider.User.ID), models.CodeNotFound, "RemoveUser of another account's user")
		if _, err := env.Store.UserByEmail(ctx, outsider.User.Email); err != nil {
			t.Errorf("the other account's user is gone: %v", err)
		}
		wantSession(t, outsiderToken, outsider.User)
		wantCode(t, env.Store.RemoveUser(ctx, acc.Account.ID, other.User.ID), models.CodeNotFound, "RemoveUser of another account's owner")
	})

	t.Run("unknown user", func(t *testing.T) {
		wantCode(t, env.Store.RemoveUser(ctx, acc.Account.ID, "usr_nobody"), models.CodeNotFound, "RemoveUser of an unknown id")
	})

	t.Run("the owner cannot be removed", func(t *testing.T) {
		wantCode(t, env.Store.RemoveUser(ctx, acc.Account.ID, acc.User.ID), models.CodeConflict, "RemoveUser of the owner")
		if _, err := env.Store.UserByEmail(ctx, acc.User.Email); err != nil {
			t.Errorf("the owner is gone: %v", err)
		}
		wantSession(t, ownerToken, acc.User)
	})

	t.Run("a member is removed and their sessions end", func(t *testing.T) {
		wantSession(t, token, member.User)
		if err := env.Store.RemoveUser(ctx, acc.Account.ID, member.User.ID); err != nil {
			t.Fatal(err)
		}
		wantNoSession(t, token, "the removed member's session")
		if _, err := env.Store.UserByEmail(ctx, member.User.Email); models.ErrorCode(err) != models.CodeNotFound {
			t.Errorf("UserByEmail of the removed member: %v, want NOT_FOUND", err)
		}
		if _, err := env.Store.SignIn(ctx, member.User.Email, member.Password); models.ErrorCode(err) != models.CodeUnauthorized {
			t.Errorf("SignIn of the removed member: %v, want UNAUTHORIZED", err)
		}
		wantCode(t, env.Store.RemoveUser(ctx, acc.Account.ID, member.User.ID), models.CodeNotFound, "removing the member again")
		wantSession(t, ownerToken, acc.User)
	})

	t.Run("an owner added later can be removed", func(t *testing.T) {
		second := addUser(t, acc.Account.ID, models.RoleOwner)
		if err := env.Store.RemoveUser(ctx, acc.Account.ID, second.User.ID); err != nil {
			t.Errorf("RemoveUser of an owner who is not the account's: %v", err)
		}
	})
}

func TestSessions(t *testing.T) {
	ctx := context.Background()
	acc := newAccount(t)
	member := addUser(t, acc.Account.ID, "")

	t.Run("NewSession then SessionByToken", func(t *testing.T) {
		token, sess, err := env.Store.NewSession(ctx, member.User)
		if err != nil {
			t.Fatal(err)
		}
		if len(token) < 40 || sess.ID == token || strings.Contains(sess.ID, token) {
			t.Errorf("token %q and session id %q: want a long random token stored only as its hash", token, sess.ID)
		}
		if sess.CSRFToken == "" || sess.CSRFToken == token {
			t.Errorf("CSRF token %q: want its own random value", sess.CSRFToken)
		}
		if d := sess.ExpiresAt.Sub(sess.CreatedAt); d != models.SessionIdle {
			t.Errorf("session lasts %v, want %v", d, models.SessionIdle)
		}
		got, err := env.Store.SessionByToken(ctx, token)
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != sess.ID || got.CSRFToken != sess.CSRFToken || got.User == nil || got.User.ID != member.User.ID ||
			got.User.Email != member.User.Email || got.User.Role != models.RoleMember || got.AccountID != acc.Account.ID {
			t.Errorf("SessionByToken = %+v (user %+v), want the session of %s", got, got.User, member.User.ID)
		}
		another := newSession(t, member.User)
		if another == token {
			t.Error("two sessions have one token")
		}
		wantSession(t, another, member.User)
	})

	t.Run("EndSession refuses the token afterwards", func(t *testing.T) {
		token := newSession(t, member.User)
		keep := newSession(t, member.User)
		if err := env.Store.EndSession(ctx, token); err != nil {
			t.Fatal(err)
		}
		wantNoSession(t, token, "an ended session")
		wantSession(t, keep, member.User) // only that browser is signed out
		if err := env.Store.EndSession(ctx, token); err != nil {
			t.Errorf("EndSession of an ended session: %v, want no error", err)
		}
		if err := env.Store.EndSession(ctx, "never issued"); err != nil {
			t.Errorf("EndSession of an unknown token: %v, want no error", err)
		}
	})

	t.Run("tokens that are not sessions", func(t *testing.T) {
		token := newSession(t, member.User)
		for name, bad := range map[string]string{
			"empty":        "",
			"garbage":      "garbage",
			"very long":    strings.Repeat("x", 100000),
			"129 bytes":    strings.Repeat("a", 129),
			"session id":   hashOf(t, token),
			"token + char": token + "x",
			"token - char": token[:len(token)-1],
			"NUL bytes":    "\x00\x00\x00",
			"SQL":          "' OR '1'='1",
		} {
			wantNoSession(t, bad, name)
		}
		wantSession(t, token, member.User)
	})

	t.Run("an expired session is refused and deleted", func(t *testing.T) {
		token, sess, err := env.Store.NewSession(ctx, member.User)
		if err != nil {
			t.Fatal(err)
		}
		live := newSession(t, member.User)
		past := time.Now().UTC().Add(-time.Minute).Truncate(time.Microsecond)
		if _, err := env.Store.DB().NewUpdate().Model((*models.Session)(nil)).Set("expires_at = ?", past).Where("id = ?", sess.ID).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		wantNoSession(t, token, "an expired session")
		n, err := env.Store.DeleteExpiredSessions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n < 1 {
			t.Errorf("DeleteExpiredSessions removed %d sessions, want the expired one", n)
		}
		count, err := env.Store.DB().NewSelect().Model((*models.Session)(nil)).Where("id = ?", sess.ID).Count(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if count != 0 {
			t.Error("the expired session is still stored")
		}
		wantSession(t, live, member.User) // a live session is not deleted
	})

	t.Run("use pushes the end back", func(t *testing.T) {
		token, sess, err := env.Store.NewSession(ctx, member.User)
		if err != nil {
			t.Fatal(err)
		}
		// Last seen two hours ago, ending in a minute: the next use must extend it.
		at := time.Now().UTC().Truncate(time.Microsecond)
		if _, err := env.Store.DB().NewUpdate().Model((*models.Session)(nil)).
			Set("last_seen_at = ?", at.Add(-2*time.Hour)).Set("expires_at = ?", at.Add(time.Minute)).
			Where("id = ?", sess.ID).Exec(ctx); err != nil {
			t.Fatal(err)
		}
		got, err := env.Store.SessionByToken(ctx, token)
		if err != nil {
			t.Fatal(err)
		}
		if got.ExpiresAt.Before(at.Add(models.SessionIdle - time.Minute)) {
			t.Errorf("expires at %v after use, want about %v", got.ExpiresAt, at.Add(models.SessionIdle))
		}
		stored := new(models.Session)
		if err := env.Store.DB().NewSelect().Model(stored).Where("id = ?", sess.ID).Scan(ctx); err != nil {
			t.Fatal(err)
		}
		if !stored.ExpiresAt.Equal(got.ExpiresAt) {
			t.Errorf("stored end %v, want the extended %v", stored.ExpiresAt, got.ExpiresAt)
		}
	})
}

// hashOf returns the stored id of a session token (what a copy of the sessions table would show).
func hashOf(t testing.TB, token string) string {
	t.Helper()
	sess, err := env.Store.SessionByToken(context.Background(), token)
	if err != nil {
		t.Fatal(err)
	}
	return sess.ID
}
