package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"funnelchat/models"
)

// maxPasswordInput bounds what user set-password reads from standard input. Anything this long is far
// over the password's own limit, so CheckPassword refuses it whether or not it was cut.
const maxPasswordInput = 64 << 10

// userAdd adds an inbox user to an account with a generated password, printed this once.
func userAdd(ctx context.Context, store *models.Store, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("user add", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	accountEmail := fs.String("account-email", "", "the account's email")
	email := fs.String("email", "", "the new user's email, their sign-in")
	role := fs.String("role", models.RoleMember, "owner or member")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w\n%s", err, usage)
	}
	if *accountEmail == "" || *email == "" {
		return errors.New("--account-email and --email are required\n" + usage)
	}
	if *role != models.RoleOwner && *role != models.RoleMember {
		return fmt.Errorf("--role must be %s or %s, not %q", models.RoleOwner, models.RoleMember, *role)
	}
	acc, err := store.AccountByEmail(ctx, *accountEmail)
	if err != nil {
		return cliError(err)
	}
	added, err := store.AddUser(ctx, acc.ID, *email, *role)
	if err != nil {
		return cliError(err)
	}
	return printJSON(out, map[string]any{
		"userId":   added.User.ID,
		"email":    added.User.Email,
		"role":     added.User.Role,
		"password": added.Password,
	})
}

// userSetPassword sets a user's inbox password to what standard input holds, less one trailing line
// end ("\n" or "\r\n"), so that both `echo PASSWORD |` and a file of one line work and a password
// never sits in the process list or the shell history. Every session of the user ends.
func userSetPassword(ctx context.Context, store *models.Store, args []string, in io.Reader, out io.Writer) error {
	fs := flag.NewFlagSet("user set-password", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	email := fs.String("email", "", "the user's email")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w\n%s", err, usage)
	}
	if *email == "" {
		return errors.New("--email is required\n" + usage)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q: the password is read from standard input\n%s", fs.Arg(0), usage)
	}
	raw, err := io.ReadAll(io.LimitReader(in, maxPasswordInput))
	if err != nil {
		return fmt.Errorf("read the password from standard input: %w", err)
	}
	password := string(raw)
	if p, ok := strings.CutSuffix(password, "\r\n"); ok {
		password = p
	} else {
		password = strings.TrimSuffix(password, "\n")
	}
	if err := models.CheckPassword(password); err != nil {
		return cliError(err)
	}
	user, err := store.UserByEmail(ctx, *email)
	if models.ErrorCode(err) == models.CodeNotFound {
		return fmt.Errorf("no user with email %s", strings.ToLower(strings.TrimSpace(*email)))
	}
	if err != nil {
		return err
	}
	if err := store.SetPassword(ctx, user.ID, password); err != nil {
		return cliError(err)
	}
	return printJSON(out, map[string]any{"userId": user.ID})
}
