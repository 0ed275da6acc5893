package report_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"funnelchat/models"
	"funnelchat/models/report"
	"funnelchat/models/testenv"
)

func reply(t testing.TB, s *models.Store, accountID, contactID, body string) *models.Message {
	t.Helper()
	m, err := s.HumanReply(context.Background(), accountID, contactID, "", body, "")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func failDelivery(t testing.TB, s *models.Store, messageID string) {
	t.Helper()
	next := time.Now().Add(time.Minute)
	if err := s.RecordAttempt(context.Background(), messageID, models.AttemptOutcome{StatusCode: 500, Error: "webhook answered 500", NextAttemptAt: &next}); err != nil {
		t.Fatal(err)
	}
}

func setBot(t testing.TB, accountID, contactID string, active bool) {
	t.Helper()
	if _, err := env.Store.SetBotActive(context.Background(), accountID, contactID, active); err != nil {
		t.Fatal(err)
	}
}

// inbox is an account with one conversation in each state the list shows.
type inbox struct {
	acc, other *models.CreatedAccount
	reader     string // a user of acc
	// ada: an incoming message only. bob: an incoming message and a human reply (so the bot is paused).
	// carol: an outgoing message only, whose delivery failed. dan: handed off to the team (an open
	// alert). eve: a name with LIKE's wildcards in it. silent: a contact without messages.
	ada, bob, carol, dan, eve, silent *models.Contact
	danAlert                          *models.Alert
	carolMsg                          *models.Message
	// last is each contact's latest message.
	last map[string]*models.Message
	// order is the expected list: newest activity first.
	order []string
}

func newInbox(t *testing.T) *inbox {
	t.Helper()
	ctx := context.Background()
	s := env.Store
	in := &inbox{acc: testenv.NewAccount(t, env.Store, ""), other: testenv.NewAccount(t, env.Store, ""), last: map[string]*models.Message{}}
	id := in.acc.Account.ID
	in.reader = testenv.AddUser(t, env.Store, id, "").User.ID

	contact := func(m *models.Message) *models.Contact {
		c, err := s.ContactByID(ctx, id, m.ContactID)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	m := testenv.Receive(t, s, id, "+14155550123", "hello from ada", testenv.Person{First: "Ada", Last: "Lovelace"})
	in.ada = contact(m)

	m = testenv.Receive(t, s, id, "bob-7", "bob here", testenv.Person{First: "Bob", Last: "Stone", Email: "Bob.Stone@Example.com"})
	in.bob = contact(m)

	in.carolMsg, in.carol = testenv.SendCustom(t, s, id, "carol-9", "your order shipped")
	failDelivery(t, s, in.carolMsg.ID)

	m = testenv.Receive(t, s, id, "dan-3", "I want a human", testenv.Person{First: "Dan", Last: "Brown"})
	in.dan = contact(m)
	alert, err := s.Handoff(ctx, m, "asked for a person")
	if err != nil {
		t.Fatal(err)
	}
	in.danAlert = alert

	m = testenv.Receive(t, s, id, "eve-5", "discount?", testenv.Person{First: "Eve", Last: "Under_score 100%"})
	in.eve = contact(m)

	// Bob's reply comes last: his conversation moves to the top.
	reply(t, s, id, in.bob.ID, "hi Bob, a person here")

	silent, _, err := s.CreateOrGetContact(ctx, id, models.ContactInput{FirstName: "Sil", LastName: "Ent", Phone: "+14155559876"})
	if err != nil {
		t.Fatal(err)
	}
	in.silent = silent

	// The other account has a conversation with the same names and sender ids.
	testenv.Receive(t, s, in.other.Account.ID, "+14155550123", "hello from the other ada", testenv.Person{First: "Ada", Last: "Lovelace"})
	testenv.Receive(t, s, in.other.Account.ID, "bob-7", "other bob", testenv.Person{First: "Bob", Last: "Stone", Email: "bob.stone@example.com"})

	in.refresh(t)
	return in
}

// refresh reads each contact's latest message and the expected order from the stored messages.
func (in *inbox) refresh(t *testing.T) {
	t.Helper()
	in.last = map[string]*models.Message{}
	for _, c := range []*models.Contact{in.ada, in.bob, in.carol, in.dan, in.eve} {
		msgs, _, err := env.Store.ContactMessages(context.Background(), in.acc.Account.ID, c.ID, models.Page{Limit: models.MaxPageLimit})
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) == 0 {
			t.Fatalf("contact %s has no messages", c.ID)
		}
		in.last[c.ID] = &msgs[len(msgs)-1]
	}
	in.order = in.order[:0]
	for cid := range in.last {
		in.order = append(in.order, cid)
	}
	slices.SortFunc(in.order, func(a, b string) int { return strings.Compare(in.last[b].ID, in.last[a].ID) })
}

func TestConversations(t *testing.T) {
	ctx := context.Background()
	in := newInbox(t)
	id := in.acc.Account.ID

	t.Run("newest activity first, one row per contact with its latest message", func(t *testing.T) {
		convs := testenv.Conversations(t, reader, id, in.reader, report.ConversationFilter{})
		want := []string{in.bob.ID, in.eve.ID, in.dan.ID, in.carol.ID, in.ada.ID}
		if got := testenv.ContactIDs(convs); !slices.Equal(got, want) || !slices.Equal(in.order, want) {
			t.Fatalf("order %v, want %v (by latest message %v)", got, want, in.order)
		}
		for _, c := range convs {
			last := in.last[c.Contact.ID]
			if c.LastMessage == nil || c.LastMessage.ID != last.ID || c.LastMessage.Body != last.Body || c.LastMessage.ContactID != c.Contact.ID {
				t.Errorf("contact %s: lastMessage %+v, want %s %q", c.Contact.ID, c.LastMessage, last.ID, last.Body)
			}
		}
		bob := testenv.FindConversation(t, convs, in.bob.ID)
		if bob.LastMessage.Direction != models.DirectionOutgoing || bob.LastMessage.Author != models.AuthorHuman {
			t.Errorf("bob's last message %+v: want the human reply", bob.LastMessage)
		}
		if bob.Contact.FirstName != "Bob" || bob.Contact.LastName != "Stone" || bob.Contact.Email == nil || *bob.Contact.Email != "bob.stone@example.com" {
			t.Errorf("bob's contact %+v", bob.Contact)
		}
		if slices.Contains(testenv.ContactIDs(convs), in.silent.ID) {
			t.Error("a contact without messages is listed")
		}
	})

	t.Run("markers", func(t *testing.T) {
		convs := testenv.Conversations(t, reader, id, in.reader, report.ConversationFilter{})
		want := map[string][3]bool{ // unread, needsHuman, failed
			in.ada.ID:   {true, false, false},
			in.bob.ID:   {true, true, false}, // the human reply paused the bot
			in.carol.ID: {false, false, true},
			in.dan.ID:   {true, true, false},
			in.eve.ID:   {true, false, false},
		}
		for _, c := range convs {
			got := [3]bool{c.Unread, c.NeedsHuman, c.Failed}
			if got != want[c.Contact.ID] {
				t.Errorf("contact %s %s: unread, needsHuman, failed = %v, want %v", c.Contact.ID, c.Contact.FirstName, got, want[c.Contact.ID])
			}
		}
	})

	t.Run("unread per reader", func(t *testing.T) {
		testenv.MarkRead(t, env.Store, id, in.reader, in.ada.ID)
		if testenv.FindConversation(t, testenv.Conversations(t, reader, id, in.reader, report.ConversationFilter{}), in.ada.ID).Unread {
			t.Error("ada unread for the reader after MarkRead")
		}
		if !testenv.FindConversation(t, testenv.Conversations(t, reader, id, models.ReaderAPI, report.ConversationFilter{}), in.ada.ID).Unread {
			t.Error("ada read for the api reader after another reader's MarkRead")
		}
		second := testenv.AddUser(t, env.Store, id, "").User.ID
		if !testenv.FindConversation(t, testenv.Conversations(t, reader, id, second, report.ConversationFilter{}), in.ada.ID).Unread {
			t.Error("ada read for a second user after the first user's MarkRead")
		}
		testenv.MarkRead(t, env.Store, id, models.ReaderAPI, in.ada.ID)
		if testenv.FindConversation(t, testenv.Conversations(t, reader, id, models.ReaderAPI, report.ConversationFilter{}), in.ada.ID).Unread {
			t.Error("ada unread for the api reader after its MarkRead")
		}

		// A newer incoming message makes it unread again, for every reader.
		testenv.Receive(t, env.Store, id, "+14155550123", "are you there?", testenv.Person{})
		in.refresh(t)
		for _, r := range []string{in.reader, models.ReaderAPI} {
			convs := testenv.Conversations(t, reader, id, r, report.ConversationFilter{})
			if !testenv.FindConversation(t, convs, in.ada.ID).Unread {
				t.Errorf("ada read for %s after a newer incoming message", r)
			}
			if convs[0].Contact.ID != in.ada.ID {
				t.Errorf("the conversation with the newest message is not first: %v", testenv.ContactIDs(convs))
			}
		}

		// A reply of our own after reading does not make it unread.
		testenv.MarkRead(t, env.Store, id, in.reader, in.ada.ID)
		reply(t, env.Store, id, in.ada.ID, "yes, here")
		in.refresh(t)
		if testenv.FindConversation(t, testenv.Conversations(t, reader, id, in.reader, report.ConversationFilter{}), in.ada.ID).Unread {
			t.Error("ada unread after an outgoing message")
		}
		// Nor does marking read again go back.
		testenv.MarkRead(t, env.Store, id, in.reader, in.ada.ID)
		if testenv.FindConversation(t, testenv.Conversations(t, reader, id, in.reader, report.ConversationFilter{}), in.ada.ID).Unread {
			t.Error("ada unread after marking read twice")
		}
		// Bob's conversation ends with our reply but his message was never read.
		if !testenv.FindConversation(t, testenv.Conversations(t, reader, id, in.reader, report.ConversationFilter{}), in.bob.ID).Unread {
			t.Error("bob read for a reader who never read it")
		}
		// MarkRead of a contact without messages changes nothing and is no error.
		testenv.MarkRead(t, env.Store, id, in.reader, in.silent.ID)
	})

	t.Run("needsHuman", func(t *testing.T) {
		needs := func(contactID string) bool {
			return testenv.FindConversation(t, testenv.Conversations(t, reader, id, in.reader, report.ConversationFilter{}), contactID).NeedsHuman
		}
		// Ada's bot was paused by the reply above; resuming clears the marker.
		setBot(t, id, in.ada.ID, true)
		if needs(in.ada.ID) {
			t.Error("ada needs a human with the bot active and no alert")
		}
		setBot(t, id, in.ada.ID, false)
		if !needs(in.ada.ID) {
			t.Error("ada does not need a human with the bot paused")
		}
		setBot(t, id, in.ada.ID, true)
		if needs(in.ada.ID) {
			t.Error("ada needs a human after the bot resumed")
		}

		// Dan: the alert and the paused bot each keep the marker.
		if _, err := env.Store.ResolveAlert(ctx, id, in.danAlert.ID, in.reader); err != nil {
			t.Fatal(err)
		}
		if !needs(in.dan.ID) {
			t.Error("dan does not need a human with the alert resolved but the bot still paused by the handoff")
		}
		setBot(t, id, in.dan.ID, true)
		if needs(in.dan.ID) {
			t.Error("dan needs a human after the alert was resolved and the bot resumed")
		}
		// A new alert with the bot active sets it again.
		last := in.last[in.dan.ID]
		alert, err := env.Store.BotFailed(ctx, last, "the model timed out")
		if err != nil {
			t.Fatal(err)
		}
		if !needs(in.dan.ID) {
			t.Error("dan does not need a human with an open alert and the bot active")
		}
		if _, err := env.Store.ResolveAlert(ctx, id, alert.ID, models.ReaderAPI); err != nil {
			t.Fatal(err)
		}
		if needs(in.dan.ID) {
			t.Error("dan needs a human after the second alert was resolved")
		}
	})

	t.Run("failed", func(t *testing.T) {
		if !testenv.FindConversation(t, testenv.Conversations(t, reader, id, in.reader, report.ConversationFilter{}), in.carol.ID).Failed {
			t.Fatal("carol's failed delivery is not marked")
		}
		// A later successful attempt clears it.
		if err := env.Store.RecordAttempt(ctx, in.carolMsg.ID, models.AttemptOutcome{StatusCode: 200}); err != nil {
			t.Fatal(err)
		}
		if testenv.FindConversation(t, testenv.Conversations(t, reader, id, in.reader, report.ConversationFilter{}), in.carol.ID).Failed {
			t.Error("carol still failed after the message was sent")
		}
		// A failed message that is not the latest still marks the conversation.
		m, _ := testenv.SendCustom(t, env.Store, id, "carol-9", "second try")
		failDelivery(t, env.Store, m.ID)
		testenv.SendCustom(t, env.Store, id, "carol-9", "third message, pending")
		in.refresh(t)
		c := testenv.FindConversation(t, testenv.Conversations(t, reader, id, in.reader, report.ConversationFilter{}), in.carol.ID)
		if !c.Failed || c.LastMessage.Body != "third message, pending" {
			t.Errorf("carol: failed %v, last message %q; want failed and the pending third message", c.Failed, c.LastMessage.Body)
		}
	})

	t.Run("each filter", func(t *testing.T) {
		all := testenv.Conversations(t, reader, id, in.reader, report.ConversationFilter{})
		markers := []struct {
			name string
			get  func(report.Conversation) bool
			set  func(*report.ConversationFilter, *bool)
		}{
			{"unread", func(c report.Conversation) bool { return c.Unread }, func(f *report.ConversationFilter, v *bool) { f.Unread = v }},
			{"needsHuman", func(c report.Conversation) bool { return c.NeedsHuman }, func(f *report.ConversationFilter, v *bool) { f.NeedsHuman = v }},
			{"failed", func(c report.Conversation) bool { return c.Failed }, func(f *report.ConversationFilter, v *bool) { f.Failed = v }},
		}
		for _, m := range markers {
			for _, want := range []bool{true, false} {
				t.Run(fmt.Sprintf("%s=%v", m.name, want), func(t *testing.T) {
					var expected []string
					for _, c := range all {
						if m.get(c) == want {
							expected = append(expected, c.Contact.ID)
						}
					}
					if len(expected) == 0 || len(expected) == len(all) {
						t.Fatalf("the inbox does not exercise %s=%v: %d of %d conversations", m.name, want, len(expected), len(all))
					}
					var f report.ConversationFilter
					m.set(&f, testenv.Ptr(want))
					got := testenv.Conversations(t, reader, id, in.reader, f)
					if !slices.Equal(testenv.ContactIDs(got), expected) {
						t.Errorf("%s=%v: %v, want %v", m.name, want, testenv.ContactIDs(got), expected)
					}
					for _, c := range got {
						if m.get(c) != want {
							t.Errorf("%s=%v lists %s with the marker %v", m.name, want, c.Contact.ID, m.get(c))
						}
					}
				})
			}
		}
		t.Run("filters combine", func(t *testing.T) {
			var expected []string
			for _, c := range all {
				if c.Unread && !c.Failed {
					expected = append(expected, c.Contact.ID)
				}
			}
			got := testenv.Conversations(t, reader, id, in.reader, report.ConversationFilter{Unread: testenv.Ptr(true), Failed: testenv.Ptr(false)})
			if !slices.Equal(testenv.ContactIDs(got), expected) {
				t.Errorf("unread and not failed: %v, want %v", testenv.ContactIDs(got), expected)
			}
		})
		t.Run("unread is the reader's", func(t *testing.T) {
			fresh := testenv.AddUser(t, env.Store, id, "").User.ID
			var expected []string
			for _, c := range all {
				if c.LastMessage != nil && hasIncoming(t, id, c.Contact.ID) {
					expected = append(expected, c.Contact.ID)
				}
			}
			got := testenv.Conversations(t, reader, id, fresh, report.ConversationFilter{Unread: testenv.Ptr(true)})
			if !slices.Equal(testenv.ContactIDs(got), expected) {
				t.Errorf("unread for a reader who read nothing: %v, want every conversation with an incoming message %v", testenv.ContactIDs(got), expected)
			}
		})
	})

	t.Run("search", func(t *testing.T) {
		cases := []struct {
			q    string
			want []string
		}{
			// The contact search's rule (contact_search.go; TestContactSearch has every field): a
			// prefix of a name, the email, the phone or a sender id, in any case.
			{"ada", []string{in.ada.ID}},
			{"LOVELACE", []string{in.ada.ID}},
			{"lOvElAcE", []string{in.ada.ID}},
			{"Ada Love", []string{in.ada.ID}},
			{"  ada  ", []string{in.ada.ID}},
			{"stone", []string{in.bob.ID}},
			{"bob.stone@example", []string{in.bob.ID}},
			{"BOB.STONE@EXAMPLE.COM", []string{in.bob.ID}},
			{"@example.com", nil}, // not a prefix
			{"ovelace", nil},      // not a prefix
			{"+14155550123", []string{in.ada.ID}},
			{"4155550123", []string{in.ada.ID}},
			{"(415) 555", []string{in.ada.ID}},
			{"(415) 555-0123", []string{in.ada.ID}},
			{"415-555-0123", []string{in.ada.ID}},
			{"+1 415 555 0123", []string{in.ada.ID}},
			{"5550123", nil}, // digits further in
			{"9876", nil},    // the silent contact's phone: no conversation
			{"Under_score", []string{in.eve.ID}},
			{"Under_score 1", []string{in.eve.ID}},
			{"eve under_score 100%", []string{in.eve.ID}},
			{"under%", nil}, // as a wildcard this would find "Under_score"
			{"%", nil},      // literal, and no name starts with it
			{"e%e", nil},    // as a wildcard this would find eve's "Eve Under_score", bob's "example"...
			{"a_a", nil},    // as a wildcard this would find "Ada"
			{`\`, nil},      // LIKE's escape character is literal too
			{"o%_", nil},    // "o" then any character, as wildcards
			{"nobody", nil},
			{"carol-", []string{in.carol.ID}}, // carol's contact has no name, only its sender id
			{"arol", nil},
		}
		for _, tt := range cases {
			got := testenv.Conversations(t, reader, id, in.reader, report.ConversationFilter{Query: tt.q})
			if ids := testenv.ContactIDs(got); !slices.Equal(ids, tt.want) {
				t.Errorf("q=%q: %v, want %v", tt.q, ids, tt.want)
			}
		}
		// Search combines with a filter.
		if got := testenv.Conversations(t, reader, id, in.reader, report.ConversationFilter{Query: "ada", Failed: testenv.Ptr(true)}); len(got) != 0 {
			t.Errorf("q=ada and failed: %v, want none", testenv.ContactIDs(got))
		}
	})

	t.Run("query length", func(t *testing.T) {
		_, _, err := reader.Conversations(ctx, id, in.reader, report.ConversationFilter{Query: strings.Repeat("a", 201)}, models.Page{Limit: 10})
		testenv.WantCode(t, err, models.CodeValidation, "a 201-character q")
		_, _, err = reader.Conversations(ctx, id, in.reader, report.ConversationFilter{Query: strings.Repeat("z", 200)}, models.Page{Limit: 10})
		if err != nil {
			t.Errorf("a 200-character q: %v", err)
		}
		// Characters, not bytes.
		_, _, err = reader.Conversations(ctx, id, in.reader, report.ConversationFilter{Query: strings.Repeat("é", 200)}, models.Page{Limit: 10})
		if err != nil {
			t.Errorf("a q of 200 two-byte characters: %v", err)
		}
		_, _, err = reader.Conversations(ctx, id, in.reader, report.ConversationFilter{Query: strings.Repeat("é", 201)}, models.Page{Limit: 10})
		testenv.WantCode(t, err, models.CodeValidation, "a q of 201 two-byte characters")
	})

	t.Run("paging walks every conversation once", func(t *testing.T) {
		in.refresh(t)
		for _, f := range []report.ConversationFilter{{}, {Unread: testenv.Ptr(true)}, {NeedsHuman: testenv.Ptr(false)}} {
			all := testenv.Conversations(t, reader, id, in.reader, f)
			var walked []string
			cursor := ""
			for page := 0; ; page++ {
				if page > len(all)+1 {
					t.Fatalf("filter %+v: paging does not end", f)
				}
				convs, next, err := reader.Conversations(ctx, id, in.reader, f, models.Page{Limit: 2, Cursor: cursor})
				if err != nil {
					t.Fatal(err)
				}
				if len(convs) > 2 {
					t.Fatalf("page of %d conversations, want at most 2", len(convs))
				}
				walked = append(walked, testenv.ContactIDs(convs)...)
				if next == "" {
					break
				}
				if len(convs) == 0 || next != convs[len(convs)-1].LastMessage.ID {
					t.Fatalf("cursor %q: want the last message id of the page's last conversation", next)
				}
				cursor = next
			}
			if !slices.Equal(walked, testenv.ContactIDs(all)) {
				t.Errorf("filter %+v: pages of 2 walked %v, want %v", f, walked, testenv.ContactIDs(all))
			}
		}
		if got := testenv.Conversations(t, reader, id, in.reader, report.ConversationFilter{}); len(got) != 5 {
			t.Errorf("%d conversations, want 5", len(got))
		}
	})

	t.Run("tenant isolation", func(t *testing.T) {
		mine := map[string]bool{}
		for _, c := range []*models.Contact{in.ada, in.bob, in.carol, in.dan, in.eve} {
			mine[c.ID] = true
		}
		for _, f := range []report.ConversationFilter{{}, {Query: "ada"}, {Query: "bob"}, {Query: "415"}, {Unread: testenv.Ptr(true)}} {
			for _, c := range testenv.Conversations(t, reader, id, in.reader, f) {
				if !mine[c.Contact.ID] {
					t.Errorf("filter %+v lists another account's contact %s", f, c.Contact.ID)
				}
			}
			for _, c := range testenv.Conversations(t, reader, in.other.Account.ID, models.ReaderAPI, f) {
				if mine[c.Contact.ID] {
					t.Errorf("the other account's list (filter %+v) shows %s", f, c.Contact.ID)
				}
			}
		}
		theirs := testenv.Conversations(t, reader, in.other.Account.ID, models.ReaderAPI, report.ConversationFilter{})
		if len(theirs) != 2 {
			t.Fatalf("the other account has %d conversations, want 2", len(theirs))
		}
		testenv.WantCode(t, env.Store.MarkRead(ctx, id, in.reader, theirs[0].Contact.ID), models.CodeNotFound, "MarkRead of another account's contact")
		testenv.WantCode(t, env.Store.MarkRead(ctx, id, in.reader, "ct_nobody"), models.CodeNotFound, "MarkRead of an unknown contact")
		testenv.WantCode(t, env.Store.MarkRead(ctx, id, in.reader, strings.Repeat("x", 100)), models.CodeNotFound, "MarkRead of a long id")
		if !testenv.Conversations(t, reader, in.other.Account.ID, in.reader, report.ConversationFilter{})[0].Unread {
			t.Error("the refused MarkRead marked the other account's conversation read")
		}
		// An unknown account lists nothing.
		if got := testenv.Conversations(t, reader, "acc_nobody", models.ReaderAPI, report.ConversationFilter{}); len(got) != 0 {
			t.Errorf("an unknown account lists %v", testenv.ContactIDs(got))
		}
	})
}

func hasIncoming(t testing.TB, accountID, contactID string) bool {
	t.Helper()
	msgs, _, err := env.Store.ContactMessages(context.Background(), accountID, contactID, models.Page{Limit: models.MaxPageLimit})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if m.Direction == models.DirectionIncoming {
			return true
		}
	}
	return false
}

// TestConversationsSearchNonASCIINames: case folds over all of Unicode on both backends (SQLite's own
// LOWER folds A-Z only; the store replaces it); the search is a prefix.
func TestConversationsSearchNonASCIINames(t *testing.T) {
	acc := testenv.NewAccount(t, env.Store, "")
	m := testenv.Receive(t, env.Store, acc.Account.ID, "elodie-1", "bonjour", testenv.Person{First: "Élodie", Last: "Ünal"})
	for _, q := range []string{"Élodie", "élodie", "ÉLODIE", "ünal", "ÜNAL", "élodie ünal", "ÉLODIE Ü"} {
		got := testenv.Conversations(t, reader, acc.Account.ID, models.ReaderAPI, report.ConversationFilter{Query: q})
		if ids := testenv.ContactIDs(got); !slices.Equal(ids, []string{m.ContactID}) {
			t.Errorf("q=%q: %v, want the contact Élodie Ünal %s", q, ids, m.ContactID)
		}
	}
}

func TestConversationsFilterByAssignee(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	accID := testenv.NewAccount(t, env.Store, "Assignee filter").Account.ID
	me := testenv.AccountOwner(t, env.Store, accID)
	a := testenv.ReceiveOn(t, env.Store, accID, testenv.UniqueFromID("fa"), "web", "hi").ContactID
	b := testenv.ReceiveOn(t, env.Store, accID, testenv.UniqueFromID("fb"), "web", "hi").ContactID
	if _, err := env.Store.Assign(ctx, accID, a, &me); err != nil {
		t.Fatal(err)
	}
	list := func(f report.ConversationFilter) []string {
		convs, _, err := reader.Conversations(ctx, accID, models.ReaderAPI, f, models.Page{Limit: 50})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, c := range convs {
			ids = append(ids, c.Contact.ID)
			if c.Contact.ID == a && (c.Assignee == nil || c.Assignee.UserID != me) {
				t.Errorf("conversation %s carries assignee %+v", a, c.Assignee)
			}
			if c.Contact.ID == b && c.Assignee != nil {
				t.Errorf("conversation %s carries assignee %+v", b, c.Assignee)
			}
		}
		return ids
	}
	yes := true
	for _, tc := range []struct {
		f    report.ConversationFilter
		want string
	}{
		{report.ConversationFilter{}, b + "," + a},
		{report.ConversationFilter{Assignee: me}, a},
		{report.ConversationFilter{Assignee: report.AssigneeNone}, b},
		{report.ConversationFilter{Assignee: report.AssigneeNone, Unread: &yes}, b},
		{report.ConversationFilter{Assignee: "usr_nobody"}, ""},
	} {
		if got := strings.Join(list(tc.f), ","); got != tc.want {
			t.Errorf("filter %+v: %s, want %s", tc.f, got, tc.want)
		}
	}
}
