package models_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"funnelchat/models"
)

// importCSV imports the CSV into the list, as POST /v1/lists/{id}/import does.
func importCSV(t *testing.T, accountID, listID, csv string) *models.ImportResult {
	t.Helper()
	res, err := env.Store.ImportContactCSV(context.Background(), accountID, listID, strings.NewReader(csv))
	if err != nil {
		t.Fatalf("ImportContactCSV: %v", err)
	}
	return res
}

// listMembers returns the list's contacts by phone (or, without one, email).
func listMembers(t *testing.T, accountID, listID string) map[string]models.Contact {
	t.Helper()
	contacts, _, err := env.Store.ListContacts(context.Background(), accountID, listID, models.Page{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	members := make(map[string]models.Contact, len(contacts))
	for _, c := range contacts {
		key := ""
		if c.Phone != nil {
			key = *c.Phone
		} else if c.Email != nil {
			key = *c.Email
		}
		if _, dup := members[key]; dup {
			t.Errorf("%s is on the list twice", key)
		}
		members[key] = c
	}
	return members
}

// Every data row of an import lands in exactly one count: a row repeating an earlier row's contact
// counts as existing (the earlier row put the contact on the list), and triggers no second opening.
func TestImportContactsCountsEveryRow(t *testing.T) {
	ctx := context.Background()
	newListWithContact := func(t *testing.T, phone string) (accountID, listID string) {
		t.Helper()
		acc := newAccount(t)
		list, err := env.Store.CreateList(ctx, acc.Account.ID, "leads")
		if err != nil {
			t.Fatal(err)
		}
		c, _, err := env.Store.CreateOrGetContact(ctx, acc.Account.ID, models.ContactInput{FirstName: "Old", Phone: phone})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := env.Store.AddToList(ctx, acc.Account.ID, list.ID, []string{c.ID}); err != nil {
			t.Fatal(err)
		}
		return acc.Account.ID, list.ID
	}
	wantCounts := func(t *testing.T, res *models.ImportResult, imported, existing, invalid int) {
		t.Helper()
		if res.Imported != imported || res.Existing != existing || res.Invalid != invalid || len(res.Errors) != invalid {
			t.Errorf("imported %d, existing %d, invalid %d (%d errors); want %d, %d, %d",
				res.Imported, res.Existing, res.Invalid, len(res.Errors), imported, existing, invalid)
		}
	}

	t.Run("a phone twice in the file", func(t *testing.T) {
		accountID, listID := newListWithContact(t, "+14155550301")
		res := importCSV(t, accountID, listID, "phone,first_name\n"+
			"+14155550301,Old\n"+ // on the list already
			"+14155550302,Ann\n"+
			"+1 (415) 555-0302,Bob\n") // Ann's phone again
		wantCounts(t, res, 1, 2, 0)
		members := listMembers(t, accountID, listID)
		if len(members) != 2 || members["+14155550302"].FirstName != "Ann" {
			t.Errorf("list members %v, want the old contact and Ann (the first row's name)", members)
		}
	})

	t.Run("every kind of row", func(t *testing.T) {
		accountID, listID := newListWithContact(t, "+14155550311")
		_, err := env.Store.CreateCampaign(ctx, accountID, models.CampaignInput{
			Name: ptr("spring"), ListID: &listID, OpeningMessage: ptr("Hi"), Channel: ptr("custom:chat"),
			Status: ptr(models.CampaignLive), TriggerOnListAdd: ptr(true),
		})
		if err != nil {
			t.Fatal(err)
		}
		res := importCSV(t, accountID, listID, "phone,first_name,email\n"+
			"+14155550311,Old,\n"+ // 2: on the list already
			"+14155550312,Ann,\n"+ // 3: new
			"4155550313,NoCountry,\n"+ // 4: invalid
			",Vic,vic@example.com\n"+ // 5: new, by email
			"\n"+ // 6: blank, not a row
			",Victor,VIC@example.com\n"+ // 7: row 5's contact again
			"0014155550312,Annie,\n"+ // 8: row 3's contact again
			"+14155550311,Old again,\n"+ // 9: the old contact again
			"4155550313,NoCountry,\n") // 10: invalid again
		wantCounts(t, res, 2, 4, 2)
		if got := res.Imported + res.Existing + res.Invalid; got != 8 {
			t.Errorf("the counts add up to %d, want the file's 8 rows", got)
		}
		if len(res.Sends) != 2 {
			t.Errorf("%d openings owed, want 2: one for each contact the import added", len(res.Sends))
		}
		if members := listMembers(t, accountID, listID); len(members) != 3 {
			t.Errorf("%d list members, want 3: %v", len(members), members)
		}
	})

	// ImportContacts is given rows as they are: two notations of one phone are one contact.
	t.Run("rows naming one contact differently", func(t *testing.T) {
		accountID, listID := newListWithContact(t, "+14155550321")
		res, err := env.Store.ImportContacts(ctx, accountID, listID, &models.ContactCSV{Contacts: []models.ContactInput{
			{FirstName: "Cy", Phone: "+14155550322"},
			{FirstName: "Cy", Phone: "+1 415 555 0322"},
			{FirstName: "Old", Phone: "+1-415-555-0321"},
		}})
		if err != nil {
			t.Fatal(err)
		}
		wantCounts(t, res, 1, 2, 0)
	})

	// A repeat in a later batch than its first row's still counts once.
	t.Run("more rows than one batch", func(t *testing.T) {
		accountID, listID := newListWithContact(t, "+14155550331")
		var csv strings.Builder
		csv.WriteString("phone\n")
		n := models.MaxBatchContacts + 10
		for i := range n {
			fmt.Fprintf(&csv, "+1415666%04d\n", i%(models.MaxBatchContacts+5))
		}
		res := importCSV(t, accountID, listID, csv.String())
		wantCounts(t, res, models.MaxBatchContacts+5, 5, 0)
	})
}
