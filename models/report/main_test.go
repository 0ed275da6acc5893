package report_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"funnelchat/models"
	"funnelchat/models/report"
	"funnelchat/models/testenv"
)

// env is the package's own database and Redis, as in package models' tests: PostgreSQL and Redis
// when TEST_DATABASE_URL and TEST_REDIS_URL are set, SQLite and miniredis otherwise.
var env *testenv.Env

// reader runs the package's reads over env.Store.
var reader *report.Reader

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, &env, func() error {
		reader = report.New(env.Store)
		return nil
	}))
}

var emailSeq, seq atomic.Int64

// uniqueEmail returns an email no other test uses (users' emails are unique across accounts).
func uniqueEmail(name string) string {
	return fmt.Sprintf("%s-%d-%d@example.com", name, time.Now().UnixNano(), emailSeq.Add(1))
}

// newAccount creates an account with a unique email; its owner has no password.
func newAccount(t testing.TB) *models.CreatedAccount {
	t.Helper()
	created, err := env.Store.CreateAccount(context.Background(), models.NewAccount{Email: uniqueEmail("owner")})
	if err != nil {
		t.Fatal(err)
	}
	return created
}

// csAccount creates a named account with a unique email.
func csAccount(t testing.TB, name string) *models.CreatedAccount {
	t.Helper()
	created, err := env.Store.CreateAccount(context.Background(), models.NewAccount{Email: uniqueEmail("report"), Name: name})
	if err != nil {
		t.Fatal(err)
	}
	return created
}

// addUser adds a user with the role to the account.
func addUser(t testing.TB, accountID, role string) *models.AddedUser {
	t.Helper()
	added, err := env.Store.AddUser(context.Background(), accountID, uniqueEmail(role), role)
	if err != nil {
		t.Fatalf("AddUser(%s): %v", role, err)
	}
	return added
}

// wantCode fails the test unless err carries the domain error code.
func wantCode(t testing.TB, err error, code, what string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error, want %s", what, code)
		return
	}
	if got := models.ErrorCode(err); got != code {
		t.Errorf("%s: %v (code %s), want %s", what, err, got, code)
	}
}

// csFrom returns a sender id (not a phone number) no other test uses.
func csFrom(name string) string {
	return fmt.Sprintf("%s-%d-%d", name, time.Now().UnixNano(), seq.Add(1))
}

// csIncoming stores an incoming custom-channel text message from fromID on channel, through the
// store's own API (what POST /v1/incoming_custom_channel_message does).
func csIncoming(t testing.TB, s *models.Store, accountID, fromID, channel, body string) *models.Message {
	t.Helper()
	in := models.IncomingInput{
		ExternalID: fmt.Sprintf("rp-sid-%d-%d", time.Now().UnixNano(), seq.Add(1)),
		FromID:     fromID, ToID: "business", Body: body, Channel: channel,
	}
	if err := in.Validate(1 << 20); err != nil {
		t.Fatal(err)
	}
	m, dup, err := s.IngestIncoming(context.Background(), accountID, in)
	if err != nil {
		t.Fatal(err)
	}
	if dup {
		t.Fatalf("message %s stored as a duplicate", in.ExternalID)
	}
	return m
}

// rpSet runs a fixture update (times the store takes from the clock) and fails the test on error.
func rpSet(t testing.TB, query string, args ...any) {
	t.Helper()
	if _, err := env.Store.DB().NewRaw(query, args...).Exec(context.Background()); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// csContact reads the account's contact.
func csContact(t testing.TB, accountID, id string) *models.Contact {
	t.Helper()
	c, err := env.Store.ContactByID(context.Background(), accountID, id)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// csQueue adds the contacts to the list and returns the campaign sends it queued, by contact id.
func csQueue(t testing.TB, accountID, listID string, contactIDs ...string) map[string]string {
	t.Helper()
	res, err := env.Store.AddToList(context.Background(), accountID, listID, contactIDs)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Sends) != len(contactIDs) {
		t.Fatalf("AddToList queued %d sends, want %d", len(res.Sends), len(contactIDs))
	}
	out := map[string]string{}
	for _, d := range res.Sends {
		send, err := env.Store.CampaignSend(context.Background(), d.SendID)
		if err != nil {
			t.Fatal(err)
		}
		out[send.ContactID] = send.ID
	}
	return out
}

// csStr is *p, or "<nil>".
func csStr(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

// csAccountOwner is the id of the account's first team member, its owner.
func csAccountOwner(t testing.TB, accountID string) string {
	t.Helper()
	members, err := env.Store.TeamMembers(context.Background(), accountID)
	if err != nil || len(members) == 0 {
		t.Fatalf("team: %v", err)
	}
	return members[0].ID
}
