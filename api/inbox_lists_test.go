package api_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"html"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"funnelchat/models"
)

// The inbox's lists through HTTP: the lists page and its forms, a list's members (search, add,
// remove), the consent export, and the CSV import's two steps. What a person sees in a browser is
// in inbox_lists_browser_test.go.

// listContact creates a contact through the API with the fields given and returns its id.
func listContact(t *testing.T, srv *server, key string, fields map[string]any) string {
	t.Helper()
	r := do(t, "POST", srv.URL+"/v1/contacts", key, fields)
	expect(t, r, http.StatusCreated, "")
	return r.JSON(t)["id"].(string)
}

// postFile posts a multipart form with the file (as field "file", named name) and the page's CSRF
// token, from the page at from ("": without a token).
func (b *browserClient) postFile(from, action, name string, content []byte) page {
	b.t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	if from != "" {
		_ = w.WriteField("csrf_token", b.csrf(from))
	}
	fw, err := w.CreateFormFile("file", name)
	if err != nil {
		b.t.Fatal(err)
	}
	_, _ = fw.Write(content)
	_ = w.Close()
	req, err := http.NewRequest("POST", b.srv.URL+action, &buf)
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Content-Type", w.FormDataContentType())
	res, err := b.client.Do(req)
	if err != nil {
		b.t.Fatalf("POST %s: %v", action, err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return page{Status: res.StatusCode, Header: res.Header, Body: string(raw)}
}

// follow follows a form's 303 and returns the page it lands on.
func (b *browserClient) follow(p page) page {
	b.t.Helper()
	if p.Status != http.StatusSeeOther {
		b.t.Errorf("want 303, got %d\n%.2000s", p.Status, text(p))
		return p
	}
	return b.get(p.Header.Get("Location"))
}

// text is a page's HTML with its tags removed and entities decoded, its white space collapsed.
func text(p page) string {
	s := regexp.MustCompile(`(?s)<[^>]*>`).ReplaceAllString(p.Body, " ")
	return strings.Join(strings.Fields(html.UnescapeString(s)), " ")
}

// wantText fails unless the page's text holds each of want.
func wantText(t *testing.T, p page, want ...string) {
	t.Helper()
	got := text(p)
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Fatalf("the page (%d) does not say %q:\n%.3000s", p.Status, w, got)
		}
	}
}

// fieldValue returns the value of the first input named name on the page.
func fieldValue(t *testing.T, p page, name string) string {
	t.Helper()
	m := regexp.MustCompile(`name="` + name + `" value="([^"]*)"`).FindStringSubmatch(p.Body)
	if m == nil {
		t.Fatalf("no field %s with a value on the page", name)
	}
	return html.UnescapeString(m[1])
}

// selected returns the value of each select named col0, col1, ... of the page, in order.
func selected(t *testing.T, p page) []string {
	t.Helper()
	var out []string
	for i := 0; ; i++ {
		m := regexp.MustCompile(`(?s)<select id="col\d+" name="col` + fmt.Sprint(i) + `">(.*?)</select>`).FindStringSubmatch(p.Body)
		if m == nil {
			return out
		}
		v := regexp.MustCompile(`<option value="([^"]*)" selected>`).FindStringSubmatch(m[1])
		if v == nil {
			t.Fatalf("select col%d has nothing selected", i)
		}
		out = append(out, v[1])
	}
}

// newListIn creates a list through the inbox's form and returns its id (from the page it lands on).
func newListIn(t *testing.T, b *browserClient, name string) string {
	t.Helper()
	p := b.post("/inbox/lists", "/inbox/lists", url.Values{"name": {name}})
	loc := p.Header.Get("Location")
	if p.Status != http.StatusSeeOther || !strings.HasPrefix(loc, "/inbox/lists/lst_") {
		t.Fatalf("create list: %d %q\n%.1000s", p.Status, loc, p.Body)
	}
	return strings.TrimPrefix(loc, "/inbox/lists/")
}

func TestInboxListsCreateAndRename(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	b, acc, key := signedIn(t, srv)

	p := b.get("/inbox/lists")
	if p.Status != http.StatusOK {
		t.Fatalf("/inbox/lists: %d", p.Status)
	}
	wantText(t, p, "No lists yet")
	if !strings.Contains(p.Body, `href="/inbox/lists" aria-current="page"`) {
		t.Fatal("the navigation does not mark Lists")
	}

	t.Run("a refused name keeps what was typed and says why", func(t *testing.T) {
		long := strings.Repeat("ü", 201)
		for _, tc := range []struct{ typed, why string }{
			{"   ", "The name is required."},
			{long, "The name must be at most 200 characters."},
		} {
			p := b.post("/inbox/lists", "/inbox/lists", url.Values{"name": {tc.typed}})
			if p.Status != http.StatusUnprocessableEntity {
				t.Fatalf("%q: %d, want 422", tc.typed, p.Status)
			}
			wantText(t, p, tc.why)
			if got := fieldValue(t, p, "name"); got != tc.typed {
				t.Fatalf("%q was not kept in the form: it holds %q", tc.typed, got)
			}
		}
		if lists, _, _ := env.Store.Lists(t.Context(), acc.ID, models.Page{Limit: 10}); len(lists) != 0 {
			t.Fatalf("a refused form created %d lists", len(lists))
		}
	})

	id := newListIn(t, b, "  Webinar <leads> ")
	p = b.get("/inbox/lists/" + id)
	wantText(t, p, "List “Webinar <leads>” created.", "Webinar <leads>", "0 members")
	if strings.Contains(p.Body, "<leads>") {
		t.Fatal("the name is not escaped")
	}

	// Two members, counted on the lists page.
	for i := range 2 {
		c := listContact(t, srv, key, map[string]any{"phone": fmt.Sprintf("+1415555%04d", 6300+i)})
		expect(t, do(t, "POST", srv.URL+"/v1/lists/"+id+"/contacts", key, map[string]any{"contactId": c}), http.StatusCreated, "")
	}
	p = b.get("/inbox/lists")
	wantText(t, p, "Webinar <leads> 2 members")

	t.Run("rename", func(t *testing.T) {
		p := b.post("/inbox/lists/"+id, "/inbox/lists/"+id+"/rename", url.Values{"name": {""}})
		if p.Status != http.StatusUnprocessableEntity {
			t.Fatalf("empty name: %d", p.Status)
		}
		wantText(t, p, "The name is required.")
		p = b.follow(b.post("/inbox/lists/"+id, "/inbox/lists/"+id+"/rename", url.Values{"name": {"Spring webinar"}}))
		wantText(t, p, "Renamed to “Spring webinar”.")
		l, err := env.Store.ListByID(t.Context(), acc.ID, id)
		if err != nil || l.Name != "Spring webinar" {
			t.Fatalf("stored: %+v %v", l, err)
		}
	})

	t.Run("another account's list is 404 for every page and form", func(t *testing.T) {
		_, otherKey := newAccount(t)
		other := newList(t, srv, otherKey, "Not yours")
		for _, path := range []string{"/inbox/lists/" + other, "/inbox/lists/lst_nope"} {
			if p := b.get(path); p.Status != http.StatusNotFound || strings.Contains(p.Body, "Not yours") {
				t.Fatalf("GET %s: %d", path, p.Status)
			}
			for _, action := range []string{"/rename", "/members", "/import"} {
				if p := b.post("/inbox/lists", path+action, url.Values{"name": {"Taken"}, "contact": {"+14155556300"}}); p.Status != http.StatusNotFound {
					t.Fatalf("POST %s%s: %d", path, action, p.Status)
				}
			}
		}
		if l, _ := env.Store.ListByID(t.Context(), "", other); l != nil {
			t.Fatal("unreachable")
		}
		r := do(t, "GET", srv.URL+"/v1/lists/"+other, otherKey, nil)
		if r.JSON(t)["name"] != "Not yours" {
			t.Fatalf("the other account's list changed: %s", r.Body)
		}
	})

	t.Run("a form without its token changes nothing", func(t *testing.T) {
		p := b.do("POST", "/inbox/lists/"+id+"/rename", url.Values{"name": {"Hijacked"}})
		if p.Status != http.StatusForbidden {
			t.Fatalf("%d, want 403", p.Status)
		}
	})
}

func TestInboxListMembers(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	b, acc, key := signedIn(t, srv)
	id := newListIn(t, b, "Leads")
	path := "/inbox/lists/" + id
	ann := listContact(t, srv, key, map[string]any{"firstName": "Ann", "lastName": "Lee", "phone": "+14155556401", "email": "ann@example.com"})
	bob := listContact(t, srv, key, map[string]any{"firstName": "Bob", "lastName": "Annan", "phone": "+447700900123", "email": "bob@shop.example"})
	cyd := listContact(t, srv, key, map[string]any{"firstName": "Cyd", "phone": "+14155556403", "email": "cyd@example.com"})
	dee := listContact(t, srv, key, map[string]any{"firstName": "Dee", "email": "dee@example.com"})
	_, otherKey := newAccount(t)
	stranger := listContact(t, srv, otherKey, map[string]any{"firstName": "Stranger", "phone": "+14155556499"})
	expect(t, do(t, "PUT", srv.URL+"/v1/settings/compliance", key, map[string]any{"defaultCountry": "US"}), http.StatusOK, "")

	t.Run("add by phone, email, id and pick", func(t *testing.T) {
		for _, tc := range []struct{ form url.Values }{
			{url.Values{"contact": {"(415) 555-6401"}}}, // the account reads it in the US, its default country
			{url.Values{"contact": {"BOB@shop.example"}}},
			{url.Values{"contact": {cyd}}},
			{url.Values{"contactId": {dee}}},
		} {
			p := b.follow(b.post(path, path+"/members", tc.form))
			wantText(t, p, "added to the list.")
		}
		p := b.follow(b.post(path, path+"/members", url.Values{"contact": {"+14155556401"}}))
		wantText(t, p, "Ann Lee is on the list already.")
		if got := listMemberIDs(t, srv, key, id); !slices.Equal(got, []string{ann, bob, cyd, dee}) {
			t.Fatalf("members %v", got)
		}
	})

	t.Run("a contact that cannot be found keeps what was typed", func(t *testing.T) {
		for _, tc := range []struct{ typed, why string }{
			{"+14155550000", "No contact of this account has “+14155550000”"},
			{stranger, "No contact of this account has"},
			{"nobody@example.com", "No contact of this account has"},
			{"12", "phone"},
			{"", "Write the contact's phone number, email or id"},
		} {
			p := b.post(path, path+"/members", url.Values{"contact": {tc.typed}})
			if p.Status != http.StatusUnprocessableEntity {
				t.Fatalf("%q: %d, want 422\n%.1500s", tc.typed, p.Status, text(p))
			}
			wantText(t, p, tc.why)
			if got := fieldValue(t, p, "contact"); got != tc.typed {
				t.Fatalf("%q was not kept: the field holds %q", tc.typed, got)
			}
		}
		if p := b.post(path, path+"/members", url.Values{"contactId": {stranger}}); p.Status != http.StatusUnprocessableEntity {
			t.Fatalf("another account's contact id: %d", p.Status)
		}
		if got := listMemberIDs(t, srv, key, id); len(got) != 4 {
			t.Fatalf("members %v", got)
		}
	})

	t.Run("search the members: case-insensitive prefix of a name, email or phone", func(t *testing.T) {
		for _, tc := range []struct {
			q    string
			want []string
		}{
			{"ann", []string{"Ann Lee", "Bob Annan"}}, // first name, last name
			{"ANN L", []string{"Ann Lee"}},            // full name
			{"bob@", []string{"Bob Annan"}},
			{"+44", []string{"Bob Annan"}},
			{"1 415", []string{"Ann Lee", "Cyd"}}, // a phone's start, written as people do
			{"lee", []string{"Ann Lee"}},
			{"nn", nil}, // inside a name is not a prefix
			{"%", nil},  // LIKE's wildcard is a character
			{"example.com", nil},
		} {
			p := b.get(path + "?q=" + url.QueryEscape(tc.q))
			var got []string
			for _, m := range regexp.MustCompile(`class="memberwho"[^>]*><strong>([^<]*)</strong>`).FindAllStringSubmatch(p.Body, -1) {
				got = append(got, html.UnescapeString(m[1]))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("q=%q: %v, want %v", tc.q, got, tc.want)
			}
		}
		if p := b.get(path + "?q=" + strings.Repeat("a", 201)); p.Status != http.StatusBadRequest {
			t.Fatalf("a search too long: %d", p.Status)
		} else {
			wantText(t, p, "The search is too long")
		}
	})

	t.Run("the add form's search offers the account's contacts", func(t *testing.T) {
		deb := listContact(t, srv, key, map[string]any{"firstName": "Deb", "phone": "+14155556405"})
		p := b.get(path + "?find=DE")
		wantText(t, p, "Dee", "On the list", "Deb") // Dee is on the list; Deb is not
		if !strings.Contains(p.Body, `name="contactId" value="`+deb+`"`) || strings.Contains(p.Body, `name="contactId" value="`+dee+`"`) {
			t.Fatalf("the picks:\n%.3000s", text(p))
		}
		if strings.Contains(p.Body, "Stranger") {
			t.Fatal("another account's contact is offered")
		}
		wantText(t, b.get(path+"?find=zzz"), "No contact’s name, email or phone starts with “zzz”")
	})

	t.Run("pages of members", func(t *testing.T) {
		var ids []string
		for i := range 55 {
			ids = append(ids, listContact(t, srv, key, map[string]any{"firstName": fmt.Sprintf("Many%02d", i), "phone": fmt.Sprintf("+1415555%04d", 6500+i)}))
		}
		expect(t, do(t, "POST", srv.URL+"/v1/lists/"+id+"/contacts", key, map[string]any{"contactIds": ids}), http.StatusCreated, "")
		p := b.get(path + "?q=many")
		if n := strings.Count(p.Body, `class="memberwho"`); n != 50 {
			t.Fatalf("first page: %d members", n)
		}
		more := regexp.MustCompile(`href="(/inbox/lists/[^"]+)#members">More members`).FindStringSubmatch(p.Body)
		if more == nil {
			t.Fatal("no More members link")
		}
		p = b.get(html.UnescapeString(more[1]))
		if n := strings.Count(p.Body, `class="memberwho"`); n != 5 || !strings.Contains(p.Body, "Many54") {
			t.Fatalf("second page: %d members", n)
		}
		if p := b.get(path + "?cursor=%27or%201=1"); p.Status != http.StatusNotFound {
			t.Fatalf("a cursor the inbox did not make: %d", p.Status)
		}
	})

	t.Run("remove", func(t *testing.T) {
		p := b.follow(b.post(path, path+"/members/"+bob+"/remove", url.Values{"q": {"b"}}))
		wantText(t, p, "Bob Annan removed from the list.")
		if loc := b.post(path, path+"/members/"+cyd+"/remove", url.Values{"q": {"c"}}).Header.Get("Location"); loc != path+"?q=c#members" {
			t.Fatalf("back to %q, want the same search", loc)
		}
		if got := listMemberIDs(t, srv, key, id); slices.Contains(got, bob) || slices.Contains(got, cyd) || !slices.Contains(got, ann) {
			t.Fatalf("members after removing Bob and Cyd: %v", got)
		}
		p = b.follow(b.post(path, path+"/members/"+bob+"/remove", nil))
		wantText(t, p, "Bob Annan is not on this list.")
		if p := b.post(path, path+"/members/"+stranger+"/remove", nil); p.Status != http.StatusSeeOther {
			t.Fatalf("another account's contact: %d", p.Status)
		} else if p := b.follow(p); !strings.Contains(text(p), "is not on this list") || strings.Contains(text(p), "Stranger") {
			t.Fatalf("another account's contact: %.500s", text(p))
		}
		if p := b.post(path, "/inbox/lists/lst_nope/members/"+ann+"/remove", nil); p.Status != http.StatusNotFound {
			t.Fatalf("an unknown list: %d", p.Status)
		}
	})
	_ = acc
}

func TestInboxListConsentExport(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	f := newTeamFixture(t, "", "")
	owner := newBrowserClient(t, srv)
	if p := owner.signIn(f.ownerEmail, inboxPassword); p.Status != http.StatusSeeOther {
		t.Fatalf("owner sign-in: %d", p.Status)
	}
	id := newListIn(t, owner, "Consent")
	c := listContact(t, srv, f.acc.key, map[string]any{"phone": "+14155556601", "consent": map[string]any{"status": "opted_in", "source": "web form", "text": "Yes, text me"}})
	expect(t, do(t, "POST", srv.URL+"/v1/lists/"+id+"/contacts", f.acc.key, map[string]any{"contactId": c}), http.StatusCreated, "")

	p := owner.get("/inbox/lists/" + id)
	if !strings.Contains(p.Body, `href="/inbox/consent.csv"`) {
		t.Fatal("the owner sees no consent export")
	}
	p = owner.get("/inbox/consent.csv")
	if p.Status != http.StatusOK || !strings.HasPrefix(p.Header.Get("Content-Type"), "text/csv") {
		t.Fatalf("export: %d %s", p.Status, p.Header.Get("Content-Type"))
	}
	rows, err := csv.NewReader(strings.NewReader(p.Body)).ReadAll()
	if err != nil || len(rows) != 2 || rows[0][0] != "at" || rows[1][1] != c || rows[1][5] != "opted_in" {
		t.Fatalf("export rows %v (%v)", rows, err)
	}

	member := newBrowserClient(t, srv)
	if err := env.Store.SetPassword(t.Context(), f.member, inboxPassword); err != nil {
		t.Fatal(err)
	}
	if p := member.signIn(f.memberEmail, inboxPassword); p.Status != http.StatusSeeOther {
		t.Fatalf("member sign-in: %d", p.Status)
	}
	if p := member.get("/inbox/lists/" + id); p.Status != http.StatusOK || strings.Contains(p.Body, "/inbox/consent.csv") {
		t.Fatalf("a member's list page: %d, shows the export: %v", p.Status, strings.Contains(p.Body, "/inbox/consent.csv"))
	}
	if p := member.get("/inbox/consent.csv"); p.Status != http.StatusForbidden || strings.Contains(p.Body, c) {
		t.Fatalf("a member's export: %d", p.Status)
	}
}

// listImportFile is the CSV the import tests upload: its columns' names are the aliases the API's import
// reads (Mobile, Given Name, Surname, E-mail Address, TZ), one it does not (Company), and one it cannot
// guess (Contact person), whose values are the real first names.
const listImportFile = "Mobile,Given Name,Surname,E-mail Address,Company,Contact person,TZ\n" +
	"+14155556701,Ann,Lee,ann@example.com,Acme,Annie,America/New_York\n" + // Ann's contact exists, in Chicago
	"(415) 555-6702,Bob,Ray,,Acme,Bobby,\n" +
	"12,Cyd,,,Acme,Cyd,\n" + // line 4: not a phone
	"\n" +
	",Dee,,dee@example.com,\"Dee \"\"D\"\" Co\",Dee,\n" +
	",Eve,,,Acme,Eve,\n" + // line 7: neither phone nor email
	"+14155556701,Ann again,,,Acme,Ann,\n" // line 8: Ann's phone again

func TestInboxListImportTwoSteps(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "MAX_BODY_BYTES=65536")
	b, acc, key := signedIn(t, srv)
	id := newListIn(t, b, "Imported")
	path := "/inbox/lists/" + id
	expect(t, do(t, "PUT", srv.URL+"/v1/settings/compliance", key, map[string]any{"defaultCountry": "GB"}), http.StatusOK, "")
	// Ann is a contact already, in another time zone than the file gives her.
	ann := listContact(t, srv, key, map[string]any{"phone": "+14155556701", "firstName": "Ann", "timeZone": "America/Chicago"})

	upload := b.postFile(path, path+"/import", "leads.csv", []byte(listImportFile))
	preview := upload.Header.Get("Location")
	if upload.Status != http.StatusSeeOther || !strings.HasPrefix(preview, path+"/import/") {
		t.Fatalf("upload: %d %q\n%.1500s", upload.Status, preview, text(upload))
	}

	t.Run("step 1: the first rows and the columns the API's import would read", func(t *testing.T) {
		p := b.get(preview)
		if p.Status != http.StatusOK {
			t.Fatalf("preview: %d", p.Status)
		}
		wantText(t, p, "leads.csv", "6 rows", "Step 1 of 2", "+14155556701", "(415) 555-6702", `Dee "D" Co`, "Import 6 rows")
		header := strings.Split(strings.SplitN(listImportFile, "\n", 2)[0], ",")
		guess := models.GuessCSVMapping(header)
		if got := selected(t, p); !slices.Equal(got, []string(guess)) || !slices.Equal(got, []string{"phone", "first_name", "last_name", "email", "", "", "time_zone"}) {
			t.Fatalf("the selects show %q, want the API's guess %q", got, guess)
		}
		// The country select starts at the account's default country.
		if !strings.Contains(p.Body, `<option value="GB" selected>`) {
			t.Fatal("the country is not the account's")
		}
		// The first rows are shown, five of them.
		if n := strings.Count(p.Body, "<tr>") - 1; n != 5 {
			t.Fatalf("%d rows shown, want 5", n)
		}
	})

	t.Run("a refused step 2 keeps the choice and lists every reason", func(t *testing.T) {
		form := url.Values{"col0": {"phone"}, "col1": {"phone"}, "col2": {"last_name"}, "col3": {"last_name"}, "col4": {""}, "col5": {"nonsense"}, "col6": {""}, "country": {"ZZ"}}
		p := b.post(preview, preview, form)
		if p.Status != http.StatusUnprocessableEntity {
			t.Fatalf("%d, want 422", p.Status)
		}
		wantText(t, p, `Column 6: "nonsense" is not a field`, "Choose the country from the list")
		form.Set("col5", "")
		p = b.post(preview, preview, form)
		wantText(t, p, `Phone is chosen for two columns, "Mobile" and "Given Name"`, `Last name is chosen for two columns, "Surname" and "E-mail Address"`,
			"Choose the country from the list")
		if got := selected(t, p); !slices.Equal(got, []string{"phone", "phone", "last_name", "last_name", "", "", ""}) {
			t.Fatalf("the refused form shows %q, not what was chosen", got)
		}
		p = b.post(preview, preview, url.Values{"col0": {""}, "col1": {"first_name"}, "col3": {""}, "country": {""}})
		wantText(t, p, "Choose the column that holds the phone or the email")
		if n, _ := env.Store.DB().NewSelect().TableExpr("list_members").Where("list_id = ?", id).Count(t.Context()); n != 0 {
			t.Fatalf("a refused import added %d members", n)
		}
		// The file is still kept: the preview shows again.
		if p := b.get(preview); p.Status != http.StatusOK {
			t.Fatalf("after the refusals: %d", p.Status)
		}
	})

	// Step 2 with a changed choice: the first names from "Contact person", Given Name not read.
	form := url.Values{"col0": {"phone"}, "col1": {""}, "col2": {"last_name"}, "col3": {"email"}, "col4": {""}, "col5": {"first_name"}, "col6": {"time_zone"}, "country": {"US"}}

	t.Run("a press while another import of the file runs imports nothing", func(t *testing.T) {
		claim := env.Redis.Get(t.Context(), "inbox:import:{"+acc.OwnerUserID+"}:latest").Val() + ":claim"
		if err := env.Redis.Set(t.Context(), claim, "another press", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		p := b.post(preview, preview, form)
		if p.Status != http.StatusConflict {
			t.Fatalf("%d, want 409", p.Status)
		}
		wantText(t, p, "This file is being imported already.")
		if got := selected(t, p); got[5] != "first_name" {
			t.Fatalf("the choice was not kept: %q", got)
		}
		if n, _ := env.Store.DB().NewSelect().TableExpr("list_members").Where("list_id = ?", id).Count(t.Context()); n != 0 {
			t.Fatalf("%d members", n)
		}
		env.Redis.Del(t.Context(), claim)
	})
	done := b.post(preview, preview, form)
	result := done.Header.Get("Location")
	if done.Status != http.StatusSeeOther || result != preview+"/result" {
		t.Fatalf("import: %d %q\n%.2000s", done.Status, result, text(done))
	}

	t.Run("step 2: totals, and each invalid row's line and reason", func(t *testing.T) {
		p := b.get(result)
		totals := map[string]string{}
		for _, m := range regexp.MustCompile(`data-total="(\w+)">([^<]*)<`).FindAllStringSubmatch(p.Body, -1) {
			totals[m[1]] = m[2]
		}
		// Rows: Ann (existing contact, her time zone changed, added), Bob (new), 12 (invalid), Dee (new),
		// Eve (invalid), Ann again (on the list by then).
		want := map[string]string{"imported": "3", "existing": "1", "invalid": "2", "created": "2", "updated": "1"}
		if fmt.Sprint(totals) != fmt.Sprint(want) {
			t.Fatalf("totals %v, want %v", totals, want)
		}
		wantText(t, p, "Step 2 of 2", "Line Reason", "4 ", "7 a contact needs a phone or an email", "Not imported: Given Name, Company.",
			"Download invalid rows (CSV)")
		if !regexp.MustCompile(`<td class="num">4</td><td>[^<]*phone[^<]*</td>`).MatchString(p.Body) {
			t.Fatalf("line 4's reason:\n%.3000s", text(p))
		}
		// The chosen columns were used: Bob's first name is "Bobby", from Contact person.
		bob, err := env.Store.ContactByPhone(t.Context(), acc.ID, "+14155556702")
		if err != nil || bob.FirstName != "Bobby" || bob.LastName != "Ray" {
			t.Fatalf("Bob as imported: %+v %v", bob, err)
		}
		// The phone without a country code was read in the country chosen (US).
		if got := listMemberIDs(t, srv, key, id); len(got) != 3 || got[0] != ann {
			t.Fatalf("members %v", got)
		}
	})

	t.Run("the invalid rows as CSV", func(t *testing.T) {
		p := b.get(result)
		link := regexp.MustCompile(`href="([^"]+/invalid\.csv)"`).FindStringSubmatch(p.Body)
		if link == nil {
			t.Fatal("no download link")
		}
		csvPage := b.get(html.UnescapeString(link[1]))
		if csvPage.Status != http.StatusOK || !strings.HasPrefix(csvPage.Header.Get("Content-Type"), "text/csv") ||
			!strings.Contains(csvPage.Header.Get("Content-Disposition"), `filename="leads-invalid-rows.csv"`) {
			t.Fatalf("download: %d %v", csvPage.Status, csvPage.Header)
		}
		rows, err := csv.NewReader(strings.NewReader(csvPage.Body)).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		want := [][]string{
			{"Mobile", "Given Name", "Surname", "E-mail Address", "Company", "Contact person", "TZ", "line", "error"},
			{"12", "Cyd", "", "", "Acme", "Cyd", "", "4", rows[1][8]},
			{"", "Eve", "", "", "Acme", "Eve", "", "7", "a contact needs a phone or an email"},
		}
		if fmt.Sprint(rows) != fmt.Sprint(want) || !strings.Contains(rows[1][8], "phone") {
			t.Fatalf("invalid rows:\n%q\nwant\n%q", rows, want)
		}
	})

	t.Run("a second press imports nothing again", func(t *testing.T) {
		p := b.post(preview, preview, form)
		if p.Status != http.StatusSeeOther || p.Header.Get("Location") != result {
			t.Fatalf("second press: %d %q", p.Status, p.Header.Get("Location"))
		}
		if got := listMemberIDs(t, srv, key, id); len(got) != 3 {
			t.Fatalf("members %v", got)
		}
	})

	t.Run("the upload is kept for a bounded time, one per user", func(t *testing.T) {
		userKey := "inbox:import:{" + acc.OwnerUserID + "}:latest"
		fileKey, err := env.Redis.Get(t.Context(), userKey).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{userKey, fileKey} {
			if ttl := env.Redis.PTTL(t.Context(), k).Val(); ttl <= 0 || ttl > 30*time.Minute {
				t.Fatalf("%s lives %v, want at most 30 minutes", k, ttl)
			}
		}
		// A new upload drops the previous one.
		again := b.postFile(path, path+"/import", "again.csv", []byte("phone\n+14155556790\n"))
		if again.Status != http.StatusSeeOther {
			t.Fatalf("second upload: %d", again.Status)
		}
		if n := env.Redis.Exists(t.Context(), fileKey).Val(); n != 0 {
			t.Fatal("the first upload is still kept after the second")
		}
		p := b.get(preview)
		if p.Status != http.StatusGone {
			t.Fatalf("the replaced upload: %d, want 410", p.Status)
		}
		wantText(t, p, "That upload is no longer kept", "Upload the file again")
	})

	t.Run("an expired or unknown token", func(t *testing.T) {
		again := b.postFile(path, path+"/import", "later.csv", []byte("phone\n+14155556791\n"))
		later := again.Header.Get("Location")
		// Expiry, as Redis does it when the time is up: the keys are gone.
		kept, _ := env.Redis.Get(t.Context(), "inbox:import:{"+acc.OwnerUserID+"}:latest").Result()
		if err := env.Redis.Del(context.Background(), kept).Err(); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct{ method, path string }{
			{"GET", later}, {"POST", later}, {"GET", later + "/result"}, {"GET", later + "/invalid.csv"},
			{"GET", path + "/import/unknowntoken"}, {"POST", path + "/import/" + strings.Repeat("x", 65)},
		} {
			var p page
			if tc.method == "POST" {
				p = b.post(path, tc.path, url.Values{"col0": {"phone"}})
			} else {
				p = b.get(tc.path)
			}
			if p.Status != http.StatusGone {
				t.Fatalf("%s %s: %d, want 410", tc.method, tc.path, p.Status)
			}
			wantText(t, p, "That upload is no longer kept", "Upload the file again", "Upload and preview")
		}
		if got := listMemberIDs(t, srv, key, id); len(got) != 3 {
			t.Fatalf("members %v", got)
		}
	})

	t.Run("another user's or another list's token", func(t *testing.T) {
		again := b.postFile(path, path+"/import", "mine.csv", []byte("phone\n+14155556792\n"))
		mine := again.Header.Get("Location")
		other, _, _ := signedIn(t, srv)
		if p := other.get(mine); p.Status != http.StatusNotFound {
			t.Fatalf("another account on my list's upload: %d, want 404 (the list is not theirs)", p.Status)
		}
		second := newListIn(t, b, "Second")
		if p := b.get("/inbox/lists/" + second + "/import/" + strings.TrimPrefix(mine, path+"/import/")); p.Status != http.StatusGone {
			t.Fatalf("my upload under another list: %d, want 410", p.Status)
		}
	})

	t.Run("files the import cannot read", func(t *testing.T) {
		png := append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), bytes.Repeat([]byte{0}, 64)...)
		for _, tc := range []struct {
			name    string
			content []byte
			status  int
			why     string
		}{
			{"photo.png", png, http.StatusUnprocessableEntity, "is not CSV text"},
			{"archive.zip", []byte("phone,name\n+14155556795,A\x00nn\n"), http.StatusUnprocessableEntity, "line 2 holds binary data"},
			{"empty.csv", nil, http.StatusUnprocessableEntity, "empty.csv is empty"},
			{"utf16.csv", []byte("\xff\xfep\x00h\x00"), http.StatusUnprocessableEntity, "UTF-16"},
			{"quote.csv", []byte("\"phone\n+14155556793\n"), http.StatusUnprocessableEntity, "is not valid CSV"},
			{"big.csv", bytes.Repeat([]byte("+14155556794,Ann\n"), 5000), http.StatusRequestEntityTooLarge, "larger than the 64 KB"},
		} {
			p := b.postFile(path, path+"/import", tc.name, tc.content)
			if p.Status != tc.status {
				t.Fatalf("%s: %d, want %d\n%.1000s", tc.name, p.Status, tc.status, text(p))
			}
			wantText(t, p, tc.why)
			if !strings.HasPrefix(p.Header.Get("Content-Type"), "text/html") || p.Header.Get("Content-Security-Policy") == "" {
				t.Fatalf("%s: answered %s without the inbox's policy", tc.name, p.Header.Get("Content-Type"))
			}
		}
		// Without the form's token: refused before anything is read or kept.
		before := env.Redis.Get(t.Context(), "inbox:import:{"+acc.OwnerUserID+"}:latest").Val()
		if p := b.postFile("", path+"/import", "leads.csv", []byte(listImportFile)); p.Status != http.StatusForbidden {
			t.Fatalf("an upload without the CSRF token: %d, want 403", p.Status)
		}
		if after := env.Redis.Get(t.Context(), "inbox:import:{"+acc.OwnerUserID+"}:latest").Val(); after != before {
			t.Fatal("an upload without the token was kept")
		}
		// No file at all: the form without its file field.
		if p := b.post(path, path+"/import", nil); p.Status != http.StatusUnprocessableEntity {
			t.Fatalf("no file: %d", p.Status)
		} else {
			wantText(t, p, "Choose a CSV file to upload.")
		}
	})
}
