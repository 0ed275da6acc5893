package api_test

import (
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestInboxContactsPages: the contacts page lists and searches with the contact search, pages, and
// links each contact to its page; the contact page shows the sender ids, lists, campaigns, consent
// and a link to the conversation; owners and members alike; another account's contact is not found.
func TestInboxContactsPages(t *testing.T) {
	srv := startServer(t)
	owner, acc, key := signedIn(t, srv)
	member, _ := adminMember(t, srv, browserAccount{Account: acc, key: key}, "contacts.member@northwind.example")
	ann := newContactWith(t, srv, key, map[string]any{"firstName": "Ann", "lastName": "Lee", "phone": "+14155550143", "email": "ann.lee@example.com"})
	_, web := chat(t, srv, key, "ic-1", "WebVisitor-7", "hello", map[string]any{"firstName": "Wen"})
	list := newList(t, srv, key, "Spring leads")
	// A live campaign with two openings owes ann one of them once she is on its list (no worker runs:
	// the send stays queued).
	campaign := variantCampaign(t, srv, key, list, []string{"Hi A", "Hi B"}, nil)
	expect(t, do(t, "POST", srv.URL+"/v1/lists/"+list+"/contacts", key, map[string]any{"contactId": ann}), http.StatusCreated, "")
	expect(t, do(t, "PUT", srv.URL+"/v1/contacts/"+ann+"/consent", key, map[string]any{"channel": "sms", "status": "opted_out", "text": "asked by phone"}), http.StatusOK, "")

	letter := string(rune('A' + int(sendsOf(t, srv, key, campaign)[ann]["variant"].(float64))))
	for name, b := range map[string]*browserClient{"owner": owner, "member": member} {
		t.Run(name, func(t *testing.T) {
			p := b.get("/inbox/contacts")
			if p.Status != http.StatusOK || !strings.Contains(p.Body, `href="/inbox/contacts/`+ann+`"`) || !strings.Contains(p.Body, `href="/inbox/contacts/`+web+`"`) {
				t.Fatalf("contacts: %d\n%.3000s", p.Status, p.Body)
			}
			if !strings.Contains(p.Body, `aria-current="page">Contacts</a>`) {
				t.Errorf("the navigation does not mark Contacts")
			}
			for q, want := range map[string][]string{"+1 415": {ann}, "webvis": {web}, "ann.lee@": {ann}, "lee": {ann}, "nn": nil} {
				p := b.get("/inbox/contacts?q=" + url.QueryEscape(q))
				for _, id := range []string{ann, web} {
					shown := strings.Contains(p.Body, `href="/inbox/contacts/`+id+`"`)
					if shown != (len(want) > 0 && want[0] == id) {
						t.Errorf("q=%q: contact %s shown %v\n%.2000s", q, id, shown, p.Body)
					}
				}
				if want == nil && !strings.Contains(html.UnescapeString(p.Body), "No contact starts with “nn”") {
					t.Errorf("q=%q: no empty message", q)
				}
			}
			c := b.get("/inbox/contacts/" + ann)
			body := html.UnescapeString(c.Body)
			for _, want := range []string{"Ann Lee", "+14155550143", "ann.lee@example.com", "Spring leads", `href="/inbox/lists/` + list + `"`, `href="/inbox/conversations/` + ann + `"`,
				`href="/inbox/campaigns/` + campaign + `"`, `<span class="pill s-queued">queued</span>`, "variant " + letter,
				"asked by phone", "Opted out", `value="Ann"`, `name="csrf_token"`} {
				if !strings.Contains(body, want) {
					t.Errorf("contact page lacks %q\n%.4000s", want, body)
				}
			}
			w := html.UnescapeString(b.get("/inbox/contacts/" + web).Body)
			if !strings.Contains(w, "WebVisitor-7") || !strings.Contains(w, "live-chat") {
				t.Errorf("the sender id and its channel are not on the page:\n%.3000s", w)
			}
		})
	}
	t.Run("paging", func(t *testing.T) {
		for i := 0; i < 52; i++ {
			newContactWith(t, srv, key, map[string]any{"firstName": "Pat", "email": "pat" + strings.Repeat("x", i%3) + itoa3(i) + "@example.com"})
		}
		first := owner.get("/inbox/contacts?q=pat")
		if n := strings.Count(first.Body, `<td class="who">`); n != 50 || !strings.Contains(first.Body, "More contacts") {
			t.Fatalf("first page: %d rows", n)
		}
		more := html.UnescapeString(first.Body[strings.Index(first.Body, `<p class="more"><a href="`)+len(`<p class="more"><a href="`):])
		more = more[:strings.Index(more, `"`)]
		second := owner.get(more)
		if n := strings.Count(second.Body, `<td class="who">`); n != 2 || strings.Contains(second.Body, "More contacts") || !strings.Contains(second.Body, "First contacts") {
			t.Fatalf("second page (%s): %d rows\n%.2000s", more, n, second.Body)
		}
	})
	t.Run("bad requests", func(t *testing.T) {
		if p := owner.get("/inbox/contacts?q=" + strings.Repeat("a", 201)); p.Status != http.StatusBadRequest || !strings.Contains(p.Body, "at most 200") {
			t.Errorf("a 201-character search: %d", p.Status)
		}
		if p := owner.get("/inbox/contacts?cursor=" + url.QueryEscape("not a cursor!")); p.Status != http.StatusNotFound {
			t.Errorf("a cursor the inbox did not make: %d", p.Status)
		}
		_, otherKey := newAccount(t)
		other := newContactWith(t, srv, otherKey, map[string]any{"firstName": "Other", "phone": "+14155550199"})
		if p := owner.get("/inbox/contacts/" + other); p.Status != http.StatusNotFound {
			t.Errorf("another account's contact: %d", p.Status)
		}
		if p := owner.post("/inbox/contacts/"+ann, "/inbox/contacts/"+other, url.Values{"firstName": {"Mine"}}); p.Status != http.StatusNotFound {
			t.Errorf("editing another account's contact: %d", p.Status)
		}
		if p := owner.get("/inbox/contacts/" + strings.Repeat("x", 100)); p.Status != http.StatusNotFound {
			t.Errorf("a long id: %d", p.Status)
		}
	})
}

// TestInboxContactEditForm: the contact page's form saves the names, email and time zone; a refused
// form (an invalid email, an unknown time zone, a name too long, an email-only contact without its
// email, an email another email-only contact has) is shown again with what was typed and every
// problem, and saves nothing; without the CSRF token it is 403.
func TestInboxContactEditForm(t *testing.T) {
	srv := startServer(t)
	b, _, key := signedIn(t, srv)
	ann := newContactWith(t, srv, key, map[string]any{"firstName": "Ann", "lastName": "Lee", "phone": "+14155550143", "email": "ann.lee@example.com"})
	path := "/inbox/contacts/" + ann
	contact := func(id string) map[string]any {
		t.Helper()
		r := do(t, "GET", srv.URL+"/v1/contacts/"+id, key, nil)
		expect(t, r, http.StatusOK, "")
		return r.JSON(t)
	}

	p := b.post(path, path, url.Values{"firstName": {" Anna "}, "lastName": {"Lee-Park"}, "email": {"Anna@Example.com"}, "timeZone": {"Europe/Lisbon"}})
	if p.Status != http.StatusSeeOther || p.Header.Get("Location") != path+"#details" {
		t.Fatalf("save: %d %q\n%.2000s", p.Status, p.Header.Get("Location"), p.Body)
	}
	if c := contact(ann); c["firstName"] != "Anna" || c["lastName"] != "Lee-Park" || c["email"] != "anna@example.com" || c["timeZone"] != "Europe/Lisbon" || c["phone"] != "+14155550143" {
		t.Fatalf("after saving: %v", c)
	}
	if page := html.UnescapeString(b.get(path).Body); !strings.Contains(page, "Saved.") || !strings.Contains(page, `value="Anna"`) {
		t.Errorf("the page after saving:\n%.3000s", page)
	}

	refused := []struct {
		name string
		form url.Values
		want []string
	}{
		{"an invalid email and an unknown time zone, both listed",
			url.Values{"firstName": {"Zed"}, "lastName": {"Lee"}, "email": {"not an email"}, "timeZone": {"Mars/Olympus"}},
			[]string{`Email "not an email" is not a valid email address.`, `Time zone "Mars/Olympus" is not an IANA time zone such as America/New_York.`}},
		{"a name too long", url.Values{"firstName": {strings.Repeat("n", 201)}, "email": {"anna@example.com"}},
			[]string{"First name must be at most 200 characters."}},
		{"Local is no time zone", url.Values{"firstName": {"Zed"}, "timeZone": {"Local"}},
			[]string{`Time zone "Local" is not an IANA time zone`}},
		{"a last name too long and a NUL in the first name, both listed", url.Values{"firstName": {"Ze\x00d"}, "lastName": {strings.Repeat("l", 201)}},
			[]string{"First name must be valid UTF-8 text.", "Last name must be at most 200 characters."}},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			p := b.post(path, path, tc.form)
			body := html.UnescapeString(p.Body)
			if p.Status != http.StatusUnprocessableEntity || !strings.Contains(body, "Nothing was saved") {
				t.Fatalf("%d\n%.3000s", p.Status, body)
			}
			for _, want := range tc.want {
				if !strings.Contains(body, want) {
					t.Errorf("the page does not say %q:\n%s", want, sectionOf(t, body, "details"))
				}
			}
			for field, v := range tc.form {
				// html/template writes a NUL as U+FFFD.
				if !strings.Contains(body, `name="`+field+`" value="`+strings.ReplaceAll(v[0], "\x00", "\uFFFD")+`"`) {
					t.Errorf("%s: what was typed (%q) is not kept", field, v[0])
				}
			}
			if c := contact(ann); c["firstName"] != "Anna" || c["timeZone"] != "Europe/Lisbon" || c["email"] != "anna@example.com" {
				t.Errorf("a refused form changed the contact: %v", c)
			}
		})
	}

	t.Run("an email-only contact keeps an email that is its own", func(t *testing.T) {
		bo := newContactWith(t, srv, key, map[string]any{"firstName": "Bo", "email": "bo@example.com"})
		newContactWith(t, srv, key, map[string]any{"firstName": "Cy", "email": "cy@example.com"})
		bp := "/inbox/contacts/" + bo
		for email, want := range map[string]string{"": "Email is required", "cy@example.com": "Another contact without a phone has the email cy@example.com"} {
			p := b.post(bp, bp, url.Values{"firstName": {"Bo"}, "email": {email}})
			if body := html.UnescapeString(p.Body); p.Status != http.StatusUnprocessableEntity || !strings.Contains(body, want) {
				t.Errorf("email %q: %d\n%s", email, p.Status, sectionOf(t, body, "details"))
			}
		}
		if c := contact(bo); c["email"] != "bo@example.com" {
			t.Errorf("after refused edits: %v", c)
		}
		// A contact with a phone may have none.
		if p := b.post(path, path, url.Values{"firstName": {"Anna"}, "email": {""}}); p.Status != http.StatusSeeOther {
			t.Fatalf("clearing the email of a contact with a phone: %d", p.Status)
		}
		if c := contact(ann); c["email"] != nil || c["timeZone"] != nil || c["lastName"] != "" {
			t.Errorf("cleared fields: %v", c)
		}
	})

	t.Run("without the CSRF token", func(t *testing.T) {
		if p := b.do("POST", path, url.Values{"firstName": {"Forged"}}); p.Status != http.StatusForbidden {
			t.Errorf("%d", p.Status)
		}
		if c := contact(ann); c["firstName"] != "Anna" {
			t.Errorf("a forged form changed the contact: %v", c)
		}
	})
}

// newContactWith creates a contact through the API and returns its id.
func newContactWith(t *testing.T, srv *server, key string, body map[string]any) string {
	t.Helper()
	r := do(t, "POST", srv.URL+"/v1/contacts", key, body)
	expect(t, r, http.StatusCreated, "")
	return r.JSON(t)["id"].(string)
}

func itoa3(i int) string { return string(rune('a'+i/26)) + string(rune('a'+i%26)) }
