package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// accountRateLimit is the per-key rate limit given to the account the tool creates: the largest the
// admin CLI accepts (models.MaxRateLimit), so that the load test measures the service, not its limiter.
const accountRateLimit = 1_000_000

// createdAccount is what "admin account create" prints.
type createdAccount struct {
	AccountID string `json:"accountId"`
	UserID    string `json:"userId"`
	Email     string `json:"email"`
	APIKey    string `json:"apiKey"`
}

// createAccount runs the admin CLI (adminCmd is a command line split on spaces: a binary path, or
// "go run ./cmd/admin") to create an account with email and accountRateLimit, passing the environment
// through (the CLI needs DATABASE_URL). Its stderr goes to ours.
func createAccount(ctx context.Context, adminCmd, email string) (*createdAccount, error) {
	argv := strings.Fields(adminCmd)
	if len(argv) == 0 {
		return nil, errors.New("create account: no admin command")
	}
	argv = append(argv, "account", "create", "--email", email, "--rate-limit", strconv.Itoa(accountRateLimit))
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = os.Environ()
	cmd.Stderr = os.Stderr
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("create account: %s: %w", strings.Join(argv, " "), err)
	}
	var acc createdAccount
	if err := json.Unmarshal(lastLine(out.Bytes()), &acc); err != nil || acc.APIKey == "" {
		return nil, fmt.Errorf("create account: %s printed %q, not {\"apiKey\",...}", strings.Join(argv, " "), out.String())
	}
	return &acc, nil
}

// lastLine is the last non-empty line of out (go run may print build output first).
func lastLine(out []byte) []byte {
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	return lines[len(lines)-1]
}
