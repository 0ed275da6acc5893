package report_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"funnelchat/models"
	"funnelchat/models/report"
	"funnelchat/models/testenv"
)

// searchBook is an account whose contacts each stand for one field of the contact search, and another
// account with a contact that would match most queries.
type searchBook struct {
	accountID                                                   string
	ann, marta, zoe, rome, web, meta, eve, noname, otherAccount string
	// all are the account's contacts, newest first.
	all []string
	// talked are the contacts with a conversation (a message).
	talked map[string]bool
}

func newSearchBook(t *testing.T) *searchBook {
	t.Helper()
	ctx := context.Background()
	b := &searchBook{accountID: testenv.NewAccount(t, env.Store, "").Account.ID}
	create := func(accountID string, in models.ContactInput) string {
		c, created, err := env.Store.CreateOrGetContact(ctx, accountID, in)
		if err != nil || !created {
			t.Fatalf("create %+v: %v (created %v)", in, err, created)
		}
		return c.ID
	}
	b.ann = create(b.accountID, models.ContactInput{FirstName: "Ann", LastName: "Lee", Email: "ann.lee@example.com", Phone: "+14155550143"})
	b.marta = create(b.accountID, models.ContactInput{FirstName: "Marta", LastName: "Silva", Email: "m.silva@correo.pt", Phone: "+447700900123"})
	b.zoe = create(b.accountID, models.ContactInput{FirstName: "Zoë", LastName: "Ünal", Email: "zoe@example.org"})
	b.rome = create(b.accountID, models.ContactInput{FirstName: "Giulia", Phone: "+390612345678"})
	b.web = testenv.Receive(t, env.Store, b.accountID, "WebUser-42", "hi", testenv.Person{}).ContactID
	b.meta = testenv.ReceiveOn(t, env.Store, b.accountID, models.MetaSenderID("messenger", "98765"), "messenger", "hi").ContactID
	b.eve = create(b.accountID, models.ContactInput{FirstName: "Eve", LastName: "Under_score", Email: "eve@100percent.example"})
	b.noname = create(b.accountID, models.ContactInput{Email: "plain@example.net"})
	b.all = []string{b.noname, b.eve, b.meta, b.web, b.rome, b.zoe, b.marta, b.ann}
	// Conversations with ann and marta too (a team reply by SMS each), besides web's and meta's.
	for _, id := range []string{b.ann, b.marta} {
		if _, err := env.Store.HumanReply(ctx, b.accountID, id, "", "hello", "sms"); err != nil {
			t.Fatal(err)
		}
	}
	b.talked = map[string]bool{b.ann: true, b.marta: true, b.web: true, b.meta: true}
	other := testenv.NewAccount(t, env.Store, "").Account.ID
	b.otherAccount = create(other, models.ContactInput{FirstName: "Ann", LastName: "Lee", Email: "ann.lee@example.com", Phone: "+14155550143"})
	return b
}

func contactIDs(rows []report.ContactRow) []string {
	out := []string{}
	for _, r := range rows {
		out = append(out, r.Contact.ID)
	}
	return out
}

// TestContactSearch: the one search (README, "Contacts") field by field: a prefix in any case finds
// the contact, the same text further in does not; phones in the forms people type them; sender ids;
// LIKE's wildcards are literal; another account's contacts are never found.
func TestContactSearch(t *testing.T) {
	t.Parallel()
	b := newSearchBook(t)
	cases := []struct {
		name, q string
		want    []string
	}{
		{"first name", "ann", []string{b.ann}},
		{"first name, any case", "aNN", []string{b.ann}},
		{"first name, part", "an", []string{b.ann}},
		{"not a prefix of the first name", "nn", nil},
		{"last name", "lee", []string{b.ann}},
		{"last name, upper case", "SILV", []string{b.marta}},
		{"not a prefix of the last name", "ilva", nil},
		{"full name", "Ann Lee", []string{b.ann}},
		{"full name, part of the last", "marta s", []string{b.marta}},
		{"full name, spaces collapsed and trimmed", "  marta   silva ", []string{b.marta}},
		{"last name then first is not a prefix", "lee ann", nil},
		{"non-ASCII first name, any case", "ZOË", []string{b.zoe}},
		{"non-ASCII last name", "ünal", []string{b.zoe}},
		{"email", "ann.lee@", []string{b.ann}},
		{"email, upper case", "M.SILVA@CORREO", []string{b.marta}},
		{"email's domain is not a prefix", "example.com", nil},
		{"email of a contact without a name", "plain", []string{b.noname}},
		{"phone as stored", "+14155550143", []string{b.ann}},
		{"phone, international with spaces", "+1 415", []string{b.ann}},
		{"phone, national digits", "415555", []string{b.ann}},
		{"phone, national in brackets and dashes", "(415) 555-01", []string{b.ann}},
		{"phone, national with dashes", "415-555", []string{b.ann}},
		{"phone, international digits without +", "1415555", []string{b.ann}},
		{"phone, digits further in", "5550143", nil},
		{"phone with + is international only", "+415", nil},
		{"phone of another country, national with trunk 0", "07700 900", []string{b.marta}},
		{"phone of another country, national", "7700900", []string{b.marta}},
		{"phone of another country, international", "+44 7700", []string{b.marta}},
		{"phone with the 00 international prefix", "0044 7700", []string{b.marta}},
		{"phone whose national number keeps its 0", "06 1234", []string{b.rome}},
		{"phone, +39", "+39 06", []string{b.rome}},
		{"phone, too many digits", "+141555501430", nil},
		{"sender id", "webuser", []string{b.web}},
		{"sender id, any case and whole", "WEBUSER-42", []string{b.web}},
		{"not a prefix of the sender id", "user-42", nil},
		{"a Meta sender id", "messenger:987", []string{b.meta}},
		{"underscore is literal", "under_s", []string{b.eve}},
		{"underscore is not a wildcard", "u_der", nil},
		{"percent is not a wildcard", "under%", nil},
		{"percent alone", "%", nil},
		{"backslash", `\`, nil},
		{"nobody", "nobody", nil},
		{"blank finds all, newest first", "", b.all},
		{"spaces find all", "   ", b.all},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rows, next, err := reader.Contacts(context.Background(), b.accountID, tc.q, models.Page{Limit: 50})
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want
			if want == nil {
				want = []string{}
			}
			if got := contactIDs(rows); !slices.Equal(got, want) || next != "" {
				t.Errorf("q=%q: %v (next %q), want %v", tc.q, got, next, want)
			}
			// The conversation list's search is the same search: it finds the conversations of
			// the contacts found (README, "Contacts").
			convs := testenv.Conversations(t, reader, b.accountID, models.ReaderAPI, report.ConversationFilter{Query: tc.q})
			var inConvs, wantConvs []string
			for _, c := range convs {
				inConvs = append(inConvs, c.Contact.ID)
			}
			for _, id := range want {
				if b.talked[id] {
					wantConvs = append(wantConvs, id)
				}
			}
			slices.Sort(inConvs)
			slices.Sort(wantConvs)
			if !slices.Equal(inConvs, wantConvs) {
				t.Errorf("q=%q: the conversation list finds %v, want the found contacts' conversations %v", tc.q, inConvs, wantConvs)
			}
		})
	}
	t.Run("rows carry the first sender id and the last activity", func(t *testing.T) {
		rows, _, err := reader.Contacts(context.Background(), b.accountID, "webuser", models.Page{Limit: 50})
		if err != nil || len(rows) != 1 {
			t.Fatalf("%v %v", rows, err)
		}
		if rows[0].SenderID != "WebUser-42" || rows[0].LastActivityAt == nil {
			t.Errorf("row %+v: want sender id WebUser-42 and a last activity", rows[0])
		}
		rows, _, err = reader.Contacts(context.Background(), b.accountID, "giulia", models.Page{Limit: 50})
		if err != nil || len(rows) != 1 || rows[0].SenderID != "" || rows[0].LastActivityAt != nil {
			t.Errorf("giulia, with no sender id and no message: %+v %v", rows, err)
		}
	})
	t.Run("too long", func(t *testing.T) {
		_, _, err := reader.Contacts(context.Background(), b.accountID, strings.Repeat("é", 201), models.Page{Limit: 50})
		testenv.WantCode(t, err, models.CodeValidation, "a q of 201 characters")
		if _, _, err := reader.Contacts(context.Background(), b.accountID, strings.Repeat("é", 200), models.Page{Limit: 50}); err != nil {
			t.Errorf("a q of 200 characters: %v", err)
		}
	})
}

// TestContactSearchPaging: a search's pages hold every match once, newest first, whatever the page
// size; the cursor continues the same search.
func TestContactSearchPaging(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	accountID := testenv.NewAccount(t, env.Store, "").Account.ID
	var want []string
	for _, name := range []string{"Pat One", "Pat Two", "Patricia Three", "Paul Four", "Pat Five"} {
		first, last, _ := strings.Cut(name, " ")
		c, _, err := env.Store.CreateOrGetContact(ctx, accountID, models.ContactInput{FirstName: first, LastName: last, Email: strings.ToLower(last) + "@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(name, "Pat") {
			want = append([]string{c.ID}, want...)
		}
	}
	for _, limit := range []int{1, 2, 3, 4, 50} {
		var got []string
		cursor := ""
		for pages := 0; ; pages++ {
			if pages > 10 {
				t.Fatalf("limit %d: more pages than contacts", limit)
			}
			rows, next, err := reader.Contacts(ctx, accountID, "PAT", models.Page{Limit: limit, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) > limit {
				t.Fatalf("limit %d: a page of %d", limit, len(rows))
			}
			got = append(got, contactIDs(rows)...)
			if next == "" {
				break
			}
			cursor = next
		}
		if !slices.Equal(got, want) {
			t.Errorf("limit %d: %v, want %v", limit, got, want)
		}
	}
}
