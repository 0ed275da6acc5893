// Command admin applies migrations and administers accounts (Procfile: release runs "admin migrate").
// Every command prints one JSON object on stdout; errors go to stderr with exit code 1.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"funnelchat/cmd/internal/boot"
	"funnelchat/config"
	"funnelchat/jobs"
	"funnelchat/models"
)

const usage = `usage:
  admin migrate
  admin account create --email E [--name N] [--agency] [--parent AGENCY_EMAIL] [--credits N] [--rate-limit N]
  admin account set-rate-limit --email E --limit N   (0: back to RATE_LIMIT_PER_MINUTE)
  admin key rotate --email E
  admin list import --account-email E --list LIST_ID --csv FILE
  admin user add --account-email E --email M [--role owner|member]   (prints the generated password once)
  admin user set-password --email M   (the new password on standard input, at least 12 characters;
                                       asked for, twice, when standard input is a terminal)
  admin secrets rotate   (re-encrypts every stored secret under SECRETS_KEY)`

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "admin:", err)
		os.Exit(1)
	}
}

// run runs one command; in is what a command that reads standard input (user set-password) reads.
func run(args []string, in io.Reader, out io.Writer) error {
	var command func(context.Context, *models.Store, []string, io.Writer) error
	var rest []string
	switch {
	case len(args) == 0:
		return errors.New("no command given\n" + usage)
	case args[0] == "migrate" && len(args) == 1:
		command = migrate
	case len(args) >= 2 && args[0] == "account" && args[1] == "create":
		command, rest = accountCreate, args[2:]
	case len(args) >= 2 && args[0] == "account" && args[1] == "set-rate-limit":
		command, rest = setRateLimit, args[2:]
	case len(args) >= 2 && args[0] == "key" && args[1] == "rotate":
		command, rest = keyRotate, args[2:]
	case len(args) >= 2 && args[0] == "list" && args[1] == "import":
		return listImport(args[2:], out)
	case len(args) >= 2 && args[0] == "user" && args[1] == "add":
		command, rest = userAdd, args[2:]
	case len(args) >= 2 && args[0] == "user" && args[1] == "set-password":
		command = func(ctx context.Context, store *models.Store, args []string, out io.Writer) error {
			return userSetPassword(ctx, store, args, in, os.Stderr, out)
		}
		rest = args[2:]
	case len(args) == 2 && args[0] == "secrets" && args[1] == "rotate":
		command = secretsRotate
	default:
		return fmt.Errorf("unknown command %q\n%s", strings.Join(args, " "), usage)
	}

	_, store, err := openStore()
	if err != nil {
		return err
	}
	defer store.Close()
	var ctx context.Context
	var cancel context.CancelFunc
	if args[0] == "migrate" {
		// No deadline: the conversion of a large messages table to partitions validates and copies
		// for as long as the table takes (README, "Partitioning"). An interrupted run is completed by
		// the next one.
		ctx, cancel = signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	} else {
		ctx, cancel = context.WithTimeout(context.Background(), 5*time.Minute)
	}
	defer cancel()
	return command(ctx, store, rest, out)
}

// openStore loads the configuration (after the command was recognised, so a typo opens nothing) and
// opens the database it names.
func openStore() (*config.Config, *models.Store, error) {
	cfg, err := config.Load(os.Getenv)
	if err != nil {
		return nil, nil, err
	}
	store, err := boot.OpenStore(cfg, 2)
	if err != nil {
		return nil, nil, err
	}
	// Commands that store a secret seal it like the api does. Stored secrets are not checked here:
	// secrets rotate checks each one it rewrites, and migrate must run before there are tables.
	secrets, err := boot.Secrets(cfg)
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	store.UseSecrets(secrets)
	if !cfg.Standalone {
		// A rotation must mark the old key revoked in the api processes' key cache. The client
		// connects on first use only, so commands that never touch keys never reach Redis; the CLI
		// exits right after its one command, which closes it.
		rdb, err := boot.OpenRedis(cfg)
		if err != nil {
			store.Close()
			return nil, nil, err
		}
		boot.UseKeyCache(cfg, store, rdb)
	}
	return cfg, store, nil
}

func migrate(ctx context.Context, store *models.Store, _ []string, out io.Writer) error {
	if err := store.Migrate(ctx); err != nil {
		return err
	}
	return printJSON(out, map[string]any{"migrated": true})
}

// secretsRotate re-encrypts every stored secret (plain text, under SECRETS_KEY_PREVIOUS or already under
// SECRETS_KEY) under SECRETS_KEY, and prints how many it rewrote ({"reencrypted": n}).
func secretsRotate(ctx context.Context, store *models.Store, _ []string, out io.Writer) error {
	n, err := store.RotateSecrets(ctx)
	if err != nil {
		return cliError(err)
	}
	return printJSON(out, map[string]any{"reencrypted": n})
}

func accountCreate(ctx context.Context, store *models.Store, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("account create", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	email := fs.String("email", "", "owner email, also the account's login")
	name := fs.String("name", "", "display name")
	agency := fs.Bool("agency", false, "the account is an agency that owns sub-accounts")
	parent := fs.String("parent", "", "email of the agency this account is a sub-account of")
	credits := fs.Float64("credits", 0, "initial credit balance")
	rateLimit := fs.Int("rate-limit", 0, "requests per minute per API key (default RATE_LIMIT_PER_MINUTE)")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w\n%s", err, usage)
	}
	if *email == "" {
		return errors.New("--email is required\n" + usage)
	}
	created, err := store.CreateAccount(ctx, models.NewAccount{
		Email: *email, Name: *name, Agency: *agency, ParentEmail: *parent, Credits: *credits, RateLimit: *rateLimit,
	})
	if err != nil {
		return cliError(err)
	}
	return printJSON(out, map[string]any{
		"accountId": created.Account.ID,
		"userId":    created.User.ID,
		"email":     created.Account.Email,
		"apiKey":    created.APIKey,
	})
}

func setRateLimit(ctx context.Context, store *models.Store, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("account set-rate-limit", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	email := fs.String("email", "", "the account's email")
	limit := fs.Int("limit", -1, "requests per minute per API key; 0 returns to the default")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w\n%s", err, usage)
	}
	if *email == "" || *limit < 0 {
		return errors.New("--email and --limit are required\n" + usage)
	}
	acc, err := store.SetRateLimit(ctx, *email, *limit)
	if err != nil {
		return cliError(err)
	}
	var perMinute any // null: the default
	if acc.RateLimitPerMinute != nil {
		perMinute = *acc.RateLimitPerMinute
	}
	return printJSON(out, map[string]any{"accountId": acc.ID, "email": acc.Email, "rateLimitPerMinute": perMinute})
}

func keyRotate(ctx context.Context, store *models.Store, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("key rotate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	email := fs.String("email", "", "the account's email")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w\n%s", err, usage)
	}
	if *email == "" {
		return errors.New("--email is required\n" + usage)
	}
	acc, err := store.AccountByEmail(ctx, *email)
	if err != nil {
		return cliError(err)
	}
	key, err := store.RotateAPIKey(ctx, acc.ID)
	if err != nil {
		return err
	}
	return printJSON(out, map[string]any{"apiKey": key})
}

// listImport imports a CSV of contacts into a list. It counts as adding the contacts to the list, so
// live campaigns of the list send their opening messages: enqueued here when Redis is configured, else
// (standalone mode) found by the api's sweep.
func listImport(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("list import", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	email := fs.String("account-email", "", "the account's email")
	listID := fs.String("list", "", "the list id")
	path := fs.String("csv", "", "CSV file with columns phone, first_name, last_name, email")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w\n%s", err, usage)
	}
	if *email == "" || *listID == "" || *path == "" {
		return errors.New("--account-email, --list and --csv are required\n" + usage)
	}
	f, err := os.Open(*path)
	if err != nil {
		return err
	}
	defer f.Close()

	cfg, store, err := openStore()
	if err != nil {
		return err
	}
	defer store.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	acc, err := store.AccountByEmail(ctx, *email)
	if err != nil {
		return cliError(err)
	}
	res, err := store.ImportContactCSV(ctx, acc.ID, *listID, f)
	if err != nil {
		return cliError(err)
	}
	if !cfg.Standalone && len(res.Sends) > 0 {
		rdb, err := boot.OpenRedis(cfg)
		if err != nil {
			return err
		}
		defer rdb.Close()
		queue := jobs.NewQueue(rdb.Asynq, cfg)
		defer queue.Close()
		if err := queue.Openings(ctx, res.Sends); err != nil {
			fmt.Fprintln(os.Stderr, "admin: opening messages stored but not all enqueued; the worker's sweep will send them:", err)
		}
	}
	for _, e := range res.Errors {
		fmt.Fprintf(os.Stderr, "row %d: %s\n", e.Row, e.Error)
	}
	return printJSON(out, map[string]any{"imported": res.Imported, "existing": res.Existing, "invalid": res.Invalid,
		"ignoredColumns": res.IgnoredColumns})
}

// cliError shows a domain error by its message alone; other errors keep their detail for the operator.
func cliError(err error) error {
	var de *models.Error
	if errors.As(err, &de) {
		return errors.New(de.Message)
	}
	return err
}

func printJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	return enc.Encode(v)
}
