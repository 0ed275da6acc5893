package api_test

import (
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"funnelchat/models"
)

// Small things a new user of the inbox ran into, each fixed and held here: a refused compliance form
// keeps what was typed and lists every error; the alerts name a contact as the conversation list
// does; an unknown inbox path or method answers the inbox's own page; Meta's channel forms say the
// webhook goes into the Meta app; the channels' errors name the field that is missing.

// formErrors are the items of the compliance section's list of what to fix.
var formErrors = regexp.MustCompile(`<li>([^<]*)</li>`)

func TestInboxComplianceFormKeepsWhatWasTyped(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	owner, acc, key := signedIn(t, srv)
	before, err := env.Store.ComplianceSettings(t.Context(), acc.ID)
	if err != nil {
		t.Fatal(err)
	}
	form := url.Values{
		"optOutKeywords": {"stopp, stop2"}, "optInKeywords": {"jaja"},
		"optOutConfirmation": {before.OptOutConfirmation}, "optInConfirmation": {before.OptInConfirmation},
		"helpText":   {"Northwind shoes: write to us here. Reply STOP to opt out."},
		"quietStart": {"25:00"}, "quietEnd": {"07:30"}, "timeZone": {"Mars/Olympus"}, "defaultCountry": {"pt"},
	}
	p := owner.post("/inbox/settings", "/inbox/settings/compliance", form)
	if p.Status != http.StatusUnprocessableEntity {
		t.Fatalf("a form with three bad fields: %d, want 422 with the form again", p.Status)
	}
	section := html.UnescapeString(sectionOf(t, p.Body, "compliance"))
	var listed []string
	for _, m := range formErrors.FindAllStringSubmatch(section, -1) {
		listed = append(listed, m[1])
	}
	want := []string{`Opt-out keywords: "stop2" must be 1-20 letters`, `Quiet hours start "25:00" is not a time of day`, "Time zone must be an IANA time zone"}
	if len(listed) != len(want) {
		t.Fatalf("the section lists %q, want one error for each of %q:\n%s", listed, want, section)
	}
	for i, w := range want {
		if !strings.HasPrefix(listed[i], w) {
			t.Fatalf("error %d reads %q, want it to start with %q", i, listed[i], w)
		}
	}
	if !strings.Contains(section, "Nothing was saved. Fix these 3 things and save again:") {
		t.Fatalf("the section does not say that nothing was saved:\n%s", section)
	}
	// What was typed, the good fields too, is in the form again.
	for _, typed := range []string{`name="optOutKeywords" value="stopp, stop2"`, `name="optInKeywords" value="jaja"`, `name="quietStart" value="25:00"`,
		`name="quietEnd" value="07:30"`, `name="timeZone" value="Mars/Olympus"`, `name="defaultCountry" value="pt"`,
		">Northwind shoes: write to us here. Reply STOP to opt out.</textarea>"} {
		if !strings.Contains(section, typed) {
			t.Fatalf("the refused form does not keep %s:\n%s", typed, section)
		}
	}
	after, err := env.Store.ComplianceSettings(t.Context(), acc.ID)
	if err != nil {
		t.Fatal(err)
	}
	if after.HelpText != before.HelpText || len(after.OptInKeywords) != 0 || after.DefaultCountry != nil || after.TimeZone != before.TimeZone {
		t.Fatalf("a refused form saved something: %+v", after)
	}
	// Empty quiet hours read as the form asks for them, among the other errors.
	form.Set("quietStart", "")
	form.Set("quietEnd", "")
	p = owner.post("/inbox/settings", "/inbox/settings/compliance", form)
	section = html.UnescapeString(sectionOf(t, p.Body, "compliance"))
	if p.Status != http.StatusUnprocessableEntity || !strings.Contains(section, "<li>Give the quiet hours' start and end (HH:MM, such as 21:00 and 08:00), or tick No quiet hours.</li>") ||
		len(formErrors.FindAllString(section, -1)) != 3 {
		t.Fatalf("empty quiet hours: %d\n%s", p.Status, section)
	}
	// The API answers its first error, as before.
	r := do(t, "PUT", srv.URL+"/v1/settings/compliance", key, map[string]any{"timeZone": "Mars/Olympus", "defaultCountry": "XX"})
	expect(t, r, http.StatusBadRequest, models.CodeValidation)
	if msg := r.JSON(t)["error"].(map[string]any)["message"].(string); msg != "timeZone must be an IANA time zone such as America/New_York" {
		t.Fatalf("the API's error: %q", msg)
	}
}

// alertWho is the name each alert's row shows, by contact id.
var alertWho = regexp.MustCompile(`data-contact="([^"]+)">\s*<div class="alertmain">\s*<p class="alerthead">\s*<a [^>]*class="alertwho"><strong>([^<]*)</strong>`)

// convWho is the name each conversation's row shows, by contact id.
var convWho = regexp.MustCompile(`data-contact="([^"]+)">\s*<a [^>]*>\s*<span class="avatar"[^>]*>[^<]*</span>\s*<span class="who"><strong>([^<]*)</strong>`)

func TestInboxAlertsNameTheContactAsTheList(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	f := newTeamFixture(t, "", "")
	owner := adminOwnerClient(t, srv, f.acc)
	// A visitor who gave only the chat's id; one with a name; one with only an email.
	visitor := f.ingest(t, "visitor-8841", "", "", "Can a person help me with my order?")
	named := f.ingest(t, "web-77", "Ana", "Souza", "I need a person")
	for _, in := range []*models.Message{visitor, named} {
		if _, err := env.Store.Handoff(t.Context(), in, "The contact asked for a person"); err != nil {
			t.Fatal(err)
		}
	}
	names := func(re *regexp.Regexp, body string) map[string]string {
		out := map[string]string{}
		for _, m := range re.FindAllStringSubmatch(body, -1) {
			out[m[1]] = html.UnescapeString(m[2])
		}
		return out
	}
	alerts := names(alertWho, owner.get("/inbox/alerts").Body)
	list := names(convWho, owner.get("/inbox/").Body)
	for _, c := range []struct{ contactID, want string }{{visitor.ContactID, "visitor-8841"}, {named.ContactID, "Ana Souza"}} {
		if alerts[c.contactID] != c.want || list[c.contactID] != c.want {
			t.Fatalf("contact %s: the alerts say %q, the list %q, want %q for both", c.contactID, alerts[c.contactID], list[c.contactID], c.want)
		}
	}
}

func TestInboxUnknownPathsAnswerTheInboxPage(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	owner, _, key := signedIn(t, srv)
	session := browserSessionCookie + "=" + owner.cookie(browserSessionCookie).Value
	for _, c := range []struct {
		what, method, path string
		signedIn           bool
		status             int
		says               string
	}{
		{"an unknown page", "GET", "/inbox/nope", true, http.StatusNotFound, "There is no such page in the inbox."},
		{"an unknown page deeper", "GET", "/inbox/conversations/x/nope", true, http.StatusNotFound, "There is no such page in the inbox."},
		{"an unknown page, signed out", "GET", "/inbox/nope", false, http.StatusNotFound, "There is no such page in the inbox."},
		{"a form to an unknown path", "POST", "/inbox/nope", true, http.StatusNotFound, "There is no such page in the inbox."},
		{"a wrong method on the list", "DELETE", "/inbox/", true, http.StatusMethodNotAllowed, "This page does not take DELETE requests."},
		{"a wrong method on a form", "PUT", "/inbox/settings/webhook", true, http.StatusMethodNotAllowed, "This page does not take PUT requests."},
		{"a wrong method, signed out", "DELETE", "/inbox/settings", false, http.StatusMethodNotAllowed, "This page does not take DELETE requests."},
		{"a method the server does not know", "BREW", "/inbox/", true, http.StatusMethodNotAllowed, "This page does not take such requests."},
	} {
		var cookies []string
		if c.signedIn {
			cookies = append(cookies, session)
		}
		res, body := inboxRequest(t, c.method, srv.URL+c.path, nil, cookies...)
		if res.StatusCode != c.status || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") || !strings.Contains(body, c.says) {
			t.Fatalf("%s (%s %s): %d %q\n%.600s", c.what, c.method, c.path, res.StatusCode, res.Header.Get("Content-Type"), body)
		}
		if !strings.Contains(res.Header.Get("Content-Security-Policy"), "script-src 'self'") || res.Header.Get("X-Request-Id") == "" {
			t.Fatalf("%s: the page lacks the inbox's headers: %v", c.what, res.Header)
		}
		if nav := strings.Contains(body, `<nav aria-label="Main">`); nav != c.signedIn {
			t.Fatalf("%s: the navigation shown: %v, want %v", c.what, nav, c.signedIn)
		}
		if c.status == http.StatusMethodNotAllowed && res.Header.Get("Allow") == "" {
			t.Fatalf("%s: 405 without Allow", c.what)
		}
	}
	if res, body := inboxRequest(t, "HEAD", srv.URL+"/inbox/nope", nil, session); res.StatusCode != http.StatusNotFound || body != "" {
		t.Fatalf("HEAD of an unknown page: %d %q", res.StatusCode, body)
	}
	// Outside the inbox, the API's JSON answers stay.
	expect(t, do(t, "GET", srv.URL+"/v1/nope", key, nil), http.StatusNotFound, models.CodeNotFound)
	for _, path := range []string{"/inboxes", "/inbox-old/page"} {
		res, body := inboxRequest(t, "GET", srv.URL+path, nil, session)
		if res.StatusCode != http.StatusNotFound || !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") || !strings.Contains(body, models.CodeNotFound) {
			t.Fatalf("GET %s: %d %q %s, want the API's JSON 404", path, res.StatusCode, res.Header.Get("Content-Type"), body)
		}
	}
}

// channelBlock is the HTML of a channel's block on the settings page.
func channelBlock(t *testing.T, body, kind string) string {
	t.Helper()
	start := strings.Index(body, `id="channel-`+kind+`"`)
	if start < 0 {
		t.Fatalf("no %s block", kind)
	}
	end := strings.Index(body[start:], "</details>")
	return html.UnescapeString(body[start : start+end])
}

func TestInboxMetaChannelsSayTheMetaApp(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	acc := adminAccount(t, "lara.vieira@northwind.example", "Northwind")
	owner := adminOwnerClient(t, srv, acc)
	body := owner.get("/inbox/settings").Body
	for _, c := range []struct{ kind, says, product string }{
		{"messenger", "(paste it into your Meta app, not the page: App Dashboard > Webhooks or Messenger settings)", "Messenger"},
		{"instagram", "(paste it into your Meta app, not the Instagram account: App Dashboard > Webhooks or Instagram settings)", "Instagram"},
		{"whatsapp", "(paste it into your Meta app: App Dashboard > WhatsApp > Configuration)", "WhatsApp"},
	} {
		block := channelBlock(t, body, c.kind)
		if !strings.Contains(block, c.says) || strings.Contains(block, "page’s settings") || strings.Contains(block, "account’s settings") {
			t.Fatalf("the %s block does not say where the address goes:\n%s", c.kind, block)
		}
		if c.kind != "whatsapp" && !strings.Contains(block, "In the Meta App Dashboard, open your app") {
			t.Fatalf("the %s block's steps:\n%s", c.kind, block)
		}
	}
	ids := adminChannelIDs()
	p := owner.post("/inbox/settings", "/inbox/settings/channels/messenger", url.Values{"pageId": {ids.PageID}, "pageAccessToken": {adminMessengerToken},
		"appSecret": {adminMessengerSecret}, "verifyToken": {adminMessengerVerify}})
	if p.Status != http.StatusSeeOther {
		t.Fatalf("connect Messenger: %d", p.Status)
	}
	block := channelBlock(t, owner.get(p.Header.Get("Location")).Body, "messenger")
	if !strings.Contains(block, "Messenger connected. Paste the webhook address below into your Meta app, not the page") {
		t.Fatalf("the Messenger block after connecting:\n%s", block)
	}
}

// channelError is a refused channel form's error.
var channelError = regexp.MustCompile(`<p class="flash bad" role="alert">([^<]*)</p>`)

func TestInboxChannelErrorsNameTheMissingField(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	acc := adminAccount(t, "bruno.lopes@northwind.example", "Northwind")
	owner := adminOwnerClient(t, srv, acc)
	ids := adminChannelIDs()
	for _, c := range []struct {
		kind        string
		form        url.Values
		says, never string
	}{
		{"whatsapp", url.Values{"phoneNumberId": {ids.PhoneNumberID}}, "Access token is required.", "Phone number ID"},
		{"whatsapp", url.Values{"accessToken": {adminWhatsAppToken}}, "Phone number ID is required.", "Access token"},
		{"whatsapp", url.Values{}, "Phone number ID and Access token are required.", "App secret"},
		{"sms", url.Values{"accountSid": {ids.SID}, "authToken": {adminSMSToken}}, "Sender number is required.", "Account SID"},
		{"messenger", url.Values{"pageId": {ids.PageID}, "pageAccessToken": {adminMessengerToken}}, "App secret and Verify token are required.", "Page"},
	} {
		p := owner.post("/inbox/settings", "/inbox/settings/channels/"+c.kind, c.form)
		m := channelError.FindStringSubmatch(channelBlock(t, p.Body, c.kind))
		if p.Status != http.StatusUnprocessableEntity || m == nil {
			t.Fatalf("%s %v: %d, no error shown", c.kind, c.form, p.Status)
		}
		msg := html.UnescapeString(m[1])
		if !strings.HasPrefix(msg, c.says) || strings.Contains(msg, c.never) {
			t.Fatalf("%s %v: the error reads %q, want %q and nothing of %q", c.kind, c.form, msg, c.says, c.never)
		}
		if c.kind == "whatsapp" && c.form.Get("accessToken") == "" && !strings.Contains(msg, "Every field not marked optional is needed the first time") {
			t.Fatalf("the WhatsApp error does not say its secrets are optional: %q", msg)
		}
	}
	// The API names the same fields.
	for _, c := range []struct {
		kind string
		body map[string]any
		says string
	}{
		{"whatsapp", map[string]any{"phoneNumberId": ids.PhoneNumberID}, "accessToken is required"},
		{"whatsapp", map[string]any{"accessToken": adminWhatsAppToken}, "phoneNumberId is required"},
		{"sms", map[string]any{"accountSid": ids.SID, "from": "+14155550143"}, "authToken is required"},
		{"sms", map[string]any{}, "accountSid, authToken and from are required"},
	} {
		r := do(t, "PUT", srv.URL+"/v1/settings/channels/"+c.kind, acc.key, c.body)
		expect(t, r, http.StatusBadRequest, models.CodeValidation)
		if msg := r.JSON(t)["error"].(map[string]any)["message"]; msg != c.says {
			t.Fatalf("PUT %s %v: %q, want %q", c.kind, c.body, msg, c.says)
		}
	}
}

// navGaveUp is the navigation's count of deliveries that gave up lately, as shown.
var navGaveUp = regexp.MustCompile(`data-count="gaveUp"[^>]*>(?:<span class="sr-only">: </span>([^<]*)<span class="sr-only"> gave up in the last 7 days</span>)?</span>`)

// TestInboxGaveUpCountStops: the navigation's count of deliveries that gave up reads at most
// report.MaxGaveUpCount of them on each page load, and says "99+" beyond; /inbox/counts says 100.
func TestInboxGaveUpCountStops(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	f := newTeamFixture(t, "", "")
	owner := adminOwnerClient(t, srv, f.acc)
	in := f.ingest(t, "web-99", "Ana", "Souza", "hello")
	shown := func() string {
		t.Helper()
		m := navGaveUp.FindStringSubmatch(owner.get("/inbox/settings").Body)
		if m == nil {
			t.Fatal("no count of deliveries that gave up in the navigation")
		}
		return html.UnescapeString(m[1])
	}
	if got := shown(); got != "" {
		t.Fatalf("with none: %q", got)
	}
	for i := range 100 {
		f.failedFor(t, in.ContactID, fmt.Sprintf("reply %d", i), false)
		if i == 98 {
			if got := shown(); got != "99" {
				t.Fatalf("with 99: %q", got)
			}
		}
	}
	if got := shown(); got != "99+" {
		t.Fatalf("with 100: %q, want 99+", got)
	}
	f.failedFor(t, in.ContactID, "one more", false)
	if got := shown(); got != "99+" {
		t.Fatalf("with 101: %q, want 99+", got)
	}
	if p := owner.do("GET", "/inbox/counts", nil, "X-Inbox-Live: counts"); !strings.Contains(p.Body, `"gaveUp":100`) {
		t.Fatalf("/inbox/counts: %s", p.Body)
	}
}
