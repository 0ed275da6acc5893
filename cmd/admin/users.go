package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"golang.org/x/term"

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

// userSetPassword sets a user's inbox password, so that it never sits in the process list or the shell
// history, and ends every session of the user. When standard input is a terminal, the password is
// typed: asked for on prompt (the process's standard error) twice, without echo. Otherwise it is what
// standard input holds, less one trailing line end ("\n" or "\r\n"), so that both `echo PASSWORD |`
// and a file of one line work, with no prompt.
func userSetPassword(ctx context.Context, store *models.Store, args []string, in io.Reader, prompt, out io.Writer) error {
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
	// The user first, so that nobody types a password twice for an email that names no one.
	user, err := store.UserByEmail(ctx, *email)
	if models.ErrorCode(err) == models.CodeNotFound {
		return fmt.Errorf("no user with email %s", strings.ToLower(strings.TrimSpace(*email)))
	}
	if err != nil {
		return err
	}
	var password string
	if fd, ok := terminal(in); ok {
		password, err = typePassword(fd, prompt)
	} else {
		password, err = pipedPassword(in)
	}
	if err != nil {
		return err
	}
	if err := models.CheckPassword(password); err != nil {
		return cliError(err)
	}
	if err := store.SetPassword(ctx, user.ID, password); err != nil {
		return cliError(err)
	}
	return printJSON(out, map[string]any{"userId": user.ID})
}

// terminal returns the file descriptor of in when it is a terminal.
func terminal(in io.Reader) (int, bool) {
	f, ok := in.(interface{ Fd() uintptr })
	if !ok {
		return 0, false
	}
	fd := int(f.Fd())
	return fd, term.IsTerminal(fd)
}

// pipedPassword reads the password from standard input that is not a terminal: all of it, less one
// trailing line end.
func pipedPassword(in io.Reader) (string, error) {
	raw, err := io.ReadAll(io.LimitReader(in, maxPasswordInput))
	if err != nil {
		return "", fmt.Errorf("read the password from standard input: %w", err)
	}
	password := string(raw)
	if p, ok := strings.CutSuffix(password, "\r\n"); ok {
		return p, nil
	}
	return strings.TrimSuffix(password, "\n"), nil
}

// typePassword asks for the password at the terminal fd, on prompt, and reads it without echo; then
// asks for it again, and refuses it unless both match. A password CheckPassword refuses is refused
// before the second question. An interrupt (Ctrl-C) while echo is off turns echo back on before the
// process ends, so that the shell is not left typing blind.
func typePassword(fd int, prompt io.Writer) (string, error) {
	state, err := term.GetState(fd)
	if err != nil {
		return "", fmt.Errorf("read the password from the terminal: %w", err)
	}
	interrupted := make(chan os.Signal, 1)
	signal.Notify(interrupted, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	defer func() {
		signal.Stop(interrupted)
		close(done)
	}()
	go func() {
		select {
		case <-interrupted:
			_ = term.Restore(fd, state)
			fmt.Fprintln(prompt, "\nadmin: interrupted: the password was not changed")
			os.Exit(130)
		case <-done:
		}
	}()

	ask := func(question string) (string, error) {
		fmt.Fprint(prompt, question)
		typed, err := term.ReadPassword(fd)
		fmt.Fprintln(prompt) // the Enter key was not echoed either
		if err != nil {
			return "", fmt.Errorf("read the password from the terminal: %w", err)
		}
		return string(typed), nil
	}
	password, err := ask("New password: ")
	if err != nil {
		return "", err
	}
	if err := models.CheckPassword(password); err != nil {
		return "", cliError(err)
	}
	again, err := ask("Repeat it: ")
	if err != nil {
		return "", err
	}
	if again != password {
		return "", errors.New("the two passwords differ: the password was not changed")
	}
	return password, nil
}
