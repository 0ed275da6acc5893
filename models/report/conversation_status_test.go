package report_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"funnelchat/models"
	"funnelchat/models/report"
	"funnelchat/models/testenv"
)

// The list by status finds the conversations of that status, in order and page by page, alone and with
// every other filter (the same as the list of every status, kept to that status); each row shows the
// status it was filtered by; and a snooze whose time has passed is open.
func TestConversationsByStatus(t *testing.T) {
	ctx := context.Background()
	in := newInbox(t)
	id := in.acc.Account.ID
	set := func(c *models.Contact, status string, until *time.Time) {
		t.Helper()
		if _, _, err := env.Store.SetConversationStatus(ctx, id, c.ID, models.ConversationStatusInput{Status: status, SnoozedUntil: until}); err != nil {
			t.Fatal(err)
		}
	}
	tomorrow := time.Now().Add(24 * time.Hour)
	set(in.ada, models.ConversationResolved, nil)
	set(in.carol, models.ConversationResolved, nil)
	set(in.dan, models.ConversationSnoozed, &tomorrow)
	set(in.eve, models.ConversationSnoozed, &tomorrow)
	// Eve's snooze ends (its time moved into the past): she is open, with no job run.
	if _, err := env.Store.DB().NewRaw("UPDATE contacts SET snoozed_until = ? WHERE id = ?", time.Now().Add(-time.Second).UTC(), in.eve.ID).Exec(ctx); err != nil {
		t.Fatal(err)
	}

	// pages reads the whole list one conversation a page, checking each row's status.
	pages := func(t *testing.T, f report.ConversationFilter) []string {
		t.Helper()
		got := []string{}
		page := models.Page{Limit: 1}
		for range 20 {
			list, next, err := reader.Conversations(ctx, id, in.reader, f, page)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range list {
				if f.Status != report.StatusAll && c.Status != f.Status {
					t.Errorf("%+v: %s is %s", f, c.Contact.FirstName, c.Status)
				}
				if (c.Status == models.ConversationSnoozed) != (c.SnoozedUntil != nil) {
					t.Errorf("%s: %s until %v", c.Contact.FirstName, c.Status, c.SnoozedUntil)
				}
				got = append(got, c.Contact.ID)
			}
			if next == "" {
				return got
			}
			page.Cursor = next
		}
		t.Fatalf("%+v: paging does not end", f)
		return nil
	}
	yes, no := true, false
	filters := []report.ConversationFilter{
		{}, {Unread: &yes}, {Unread: &no}, {NeedsHuman: &yes}, {NeedsHuman: &no}, {Failed: &yes}, {Failed: &no},
		{Assignee: report.AssigneeNone}, {Assignee: in.reader}, {Query: "o"}, {Unread: &yes, NeedsHuman: &no},
	}
	want := map[string][]string{
		models.ConversationOpen:     {in.bob.ID, in.eve.ID},
		models.ConversationResolved: {in.carol.ID, in.ada.ID},
		models.ConversationSnoozed:  {in.dan.ID},
	}
	for status, ids := range want {
		if got := pages(t, report.ConversationFilter{Status: status}); !slices.Equal(got, ids) {
			t.Errorf("%s: %v, want %v", status, got, ids)
		}
	}
	for _, f := range filters {
		all := f
		all.Status = report.StatusAll
		every := pages(t, all)
		for status := range want {
			f.Status = status
			var expected []string
			for _, c := range testenv.Conversations(t, reader, id, in.reader, all) {
				if c.Status == status && slices.Contains(every, c.Contact.ID) {
					expected = append(expected, c.Contact.ID)
				}
			}
			if expected == nil {
				expected = []string{}
			}
			if got := pages(t, f); !slices.Equal(got, expected) {
				t.Errorf("%+v: %v, want %v", f, got, expected)
			}
		}
	}
}
