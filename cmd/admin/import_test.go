package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"funnelchat/models"
)

func TestListImport(t *testing.T) {
	store := useBackend(t)
	email := uniqueEmail("importer")
	acc := createAccount(t, "--email", email)
	ctx := context.Background()
	list, err := store.CreateList(ctx, acc.AccountID, "imported leads")
	if err != nil {
		t.Fatal(err)
	}
	status, listID, opening := models.CampaignLive, list.ID, "Hi {{firstName}}"
	channel := "custom:chat"
	if _, err := store.CreateCampaign(ctx, acc.AccountID, models.CampaignInput{
		Name: &email, Status: &status, ListID: &listID, OpeningMessage: &opening, Channel: &channel,
	}); err != nil {
		t.Fatal(err)
	}
	csv := filepath.Join(t.TempDir(), "leads.csv")
	content := "phone,first_name,last_name,email\n+14155558001,Ana,,\n+14155558002,Ben,,\nnot-a-phone,Bad,,\n"
	if err := os.WriteFile(csv, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}

	var got struct {
		Imported, Existing, Invalid int
		IgnoredColumns              []string
	}
	decodeOne(t, mustRun(t, "list", "import", "--account-email", email, "--list", listID, "--csv", csv), &got)
	if got.Imported != 2 || got.Existing != 0 || got.Invalid != 1 || got.IgnoredColumns == nil || len(got.IgnoredColumns) != 0 {
		t.Fatalf("first import: %+v", got)
	}
	decodeOne(t, mustRun(t, "list", "import", "--account-email", email, "--list", listID, "--csv", csv), &got)
	if got.Imported != 0 || got.Existing != 2 || got.Invalid != 1 {
		t.Fatalf("second import: %+v", got)
	}
	// The import counts as adding to the list: the live campaign owes each new contact one opening.
	n, err := store.DB().NewSelect().TableExpr("campaign_sends").Where("account_id = ?", acc.AccountID).Count(ctx)
	if err != nil || n != 2 {
		t.Fatalf("%d campaign sends (err %v), want 2", n, err)
	}

	// An export's headers, and a national number read in the account's time zone's country, as the API
	// reads them.
	zone := "America/New_York"
	if _, err := store.UpdateComplianceSettings(ctx, acc.AccountID, models.ComplianceInput{TimeZone: &zone}); err != nil {
		t.Fatal(err)
	}
	export := filepath.Join(t.TempDir(), "export.csv")
	if err := os.WriteFile(export, []byte("Mobile,Given Name,Company\n(415) 555-8003,Cy,Acme\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	decodeOne(t, mustRun(t, "list", "import", "--account-email", email, "--list", listID, "--csv", export), &got)
	if got.Imported != 1 || got.Invalid != 0 || len(got.IgnoredColumns) != 1 || got.IgnoredColumns[0] != "Company" {
		t.Fatalf("the export's import: %+v", got)
	}
	if cy, err := store.ContactByPhone(ctx, acc.AccountID, "+14155558003"); err != nil || cy.FirstName != "Cy" {
		t.Fatalf("the export's contact: %+v, %v", cy, err)
	}

	runFails(t, "list", "list", "import", "--account-email", email, "--list", "lst_nope", "--csv", csv)
	runFails(t, "account", "list", "import", "--account-email", uniqueEmail("nobody"), "--list", listID, "--csv", csv)
	runFails(t, "no such file", "list", "import", "--account-email", email, "--list", listID, "--csv", csv+".missing")
	runFails(t, "required", "list", "import", "--list", listID)
}

func TestRateLimitCommands(t *testing.T) {
	store := useBackend(t)
	email := uniqueEmail("limited")
	createAccount(t, "--email", email, "--rate-limit", "30")
	if acc := accountByEmail(t, store, email); acc.RateLimitPerMinute == nil || *acc.RateLimitPerMinute != 30 {
		t.Fatalf("rate limit after create: %v", acc.RateLimitPerMinute)
	}
	var got struct {
		AccountID          string `json:"accountId"`
		Email              string `json:"email"`
		RateLimitPerMinute *int   `json:"rateLimitPerMinute"`
	}
	decodeOne(t, mustRun(t, "account", "set-rate-limit", "--email", email, "--limit", "90"), &got)
	if got.RateLimitPerMinute == nil || *got.RateLimitPerMinute != 90 || *accountByEmail(t, store, email).RateLimitPerMinute != 90 {
		t.Fatalf("set-rate-limit printed %+v", got)
	}
	decodeOne(t, mustRun(t, "account", "set-rate-limit", "--email", email, "--limit", "0"), &got)
	if got.RateLimitPerMinute != nil || accountByEmail(t, store, email).RateLimitPerMinute != nil {
		t.Fatalf("limit 0 should return to the default: %+v", got)
	}
	runFails(t, "required", "account", "set-rate-limit", "--email", email)
	runFails(t, "account", "account", "set-rate-limit", "--email", uniqueEmail("nobody"), "--limit", "5")
	runFails(t, "rate limit", "account", "create", "--email", uniqueEmail("neg"), "--rate-limit", "-3")
}
