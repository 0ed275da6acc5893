package api_test

import (
	"net/http"
	"strings"
	"testing"

	"funnelchat/models"
)

// The contacts pages in a real browser, on a laptop and a phone: the list, a search typed in its box,
// the contact's page reached by its link, and the edit form refused (every problem listed, what was
// typed kept) and then saved.
func TestInboxBrowserContacts(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	srv := startServer(t)
	acc := newBrowserAccount(t)
	acc.botOff(t, srv)
	people := []map[string]any{
		{"firstName": "Ana", "lastName": "Lima", "phone": "+14155550143", "email": "ana.lima@northwind.example", "timeZone": "America/Los_Angeles"},
		{"firstName": "Bruno", "lastName": "Carvalho-Esteves", "phone": "+351912345678", "email": "bruno.carvalho.esteves.compras@fornecedores-do-norte.example"},
		{"firstName": "Chen", "lastName": "Wei", "email": "chen.wei@example.com"},
		{"phone": "+447700900123"},
	}
	var ids []string
	for _, p := range people {
		ids = append(ids, newContactWith(t, srv, acc.key, p))
	}
	ana := ids[0]
	_, visitor := acc.say(t, srv, "cb-1", "web-visitor-8842", "Dora", "Santos", "Do you ship to Porto?")
	// Ana: on a list whose live campaign has two openings, a goal reached, consent given then withdrawn.
	list := newList(t, srv, acc.key, "Spring collection leads")
	campaign := variantCampaign(t, srv, acc.key, list, []string{"Hi {{firstName}}, the spring collection is in!", "Hi {{firstName}}, 20% off this week"}, map[string]any{"name": "Spring welcome"})
	expect(t, do(t, "POST", srv.URL+"/v1/lists/"+list+"/contacts", acc.key, map[string]any{"contactId": ana}), http.StatusCreated, "")
	expect(t, do(t, "POST", srv.URL+"/v1/contacts/"+ana+"/goal", acc.key, map[string]any{"campaignId": campaign, "note": "Booked a fitting for Saturday"}), http.StatusOK, "")
	setConsent(t, acc, ana, models.ConsentInput{Channel: "sms", Status: models.ConsentOptedIn, Source: "landing-page form",
		Text: "Ticked “Send me offers by text”", RecordedBy: models.RecordedByAPIKey(acc.key)})
	setConsent(t, acc, ana, models.ConsentInput{Channel: "sms", Status: models.ConsentOptedOut, Source: models.ConsentSourceInbox,
		Text: "Asked by phone to get no more texts", RecordedBy: models.RecordedByUser(acc.OwnerUserID, acc.Email)})

	b := acc.signedIn(t, srv)
	anaName, anaZone := "Ana Lima", "America/Los_Angeles" // as the laptop's pass leaves them for the phone's
	for _, v := range []screenSize{laptopSize, phoneSize} {
		b.use(v)
		if status := b.open("/inbox/contacts"); status != http.StatusOK {
			b.fatalf("contacts page: %d", status)
		}
		b.noHorizontalOverflow("the contacts on a " + v.name)
		if n := evalJS[int](b, `document.querySelectorAll('table.contacts tbody tr').length`); n != len(ids)+1 {
			b.fatalf("%d rows, want %d", n, len(ids)+1)
		}
		if !evalJS[bool](b, `!!document.querySelector('nav a[href="/inbox/contacts"][aria-current="page"]')`) {
			b.fatalf("Contacts is not the current navigation entry")
		}
		// Every navigation entry is on screen (the row scrolls sideways when they do not fit).
		if w := evalJS[[]float64](b, `(n => [n.scrollWidth, n.clientWidth])(document.querySelector('header.top nav'))`); w[0] > w[1]+1 {
			b.fatalf("the navigation is %v px wide in %v px on a %s: an entry is off screen", w[0], w[1], v.name)
		}
		b.saveScreenshot("contacts-"+v.name+".png", true, 1600)

		// A search typed as people type a phone number.
		b.fill(`input[name="q"]`, "(415) 555")
		if status := b.click(`form[role="search"] button[type="submit"]`); status != http.StatusOK {
			b.fatalf("search: %d", status)
		}
		if got := evalJS[[]string](b, `Array.from(document.querySelectorAll('table.contacts td.who a')).map(a => a.textContent)`); len(got) != 1 || got[0] != anaName {
			b.fatalf("search (415) 555 found %q, want %s", got, anaName)
		}
		if q := evalJS[string](b, `document.querySelector('input[name="q"]').value`); q != "(415) 555" {
			b.fatalf("the search box shows %q after the search", q)
		}
		b.saveScreenshot("contacts-search-"+v.name+".png", false, 0)
		b.fill(`input[name="q"]`, "web-vis")
		b.click(`form[role="search"] button[type="submit"]`)
		if got := evalJS[string](b, `document.querySelector('table.contacts td.sender').textContent`); got != "web-visitor-8842" {
			b.fatalf("search web-vis: sender id cell %q", got)
		}
		b.fill(`input[name="q"]`, "ima")
		b.click(`form[role="search"] button[type="submit"]`)
		if !strings.Contains(b.text(), "No contact starts with “ima”") {
			b.fatalf("search ima (not a prefix): %s", b.text())
		}

		// The contact's page, by its link.
		b.fill(`input[name="q"]`, "ana")
		b.click(`form[role="search"] button[type="submit"]`)
		if status := b.click(`table.contacts td.who a`); status != http.StatusOK || b.path() != "/inbox/contacts/"+ana {
			b.fatalf("the link took the browser to %s (%d)", b.path(), status)
		}
		b.noHorizontalOverflow("a contact on a " + v.name)
		text := b.text()
		for _, want := range []string{anaName, "Spring collection leads", "Spring welcome", "queued", "Booked a fitting for Saturday",
			"Asked by phone to get no more texts", "Opted out", "Open conversation"} {
			if !strings.Contains(text, want) {
				b.fatalf("the contact page does not show %q:\n%s", want, text)
			}
		}
		if !evalJS[bool](b, `/^variant [AB]$/.test(document.querySelector('.contactsends .sendvariant').textContent)`) {
			b.fatalf("the campaign's send has no variant letter")
		}
		b.saveScreenshot("contact-"+v.name+".png", true, 2600)

		// The edit form refused: both problems listed, what was typed kept, nothing saved.
		b.fill(`input[name="email"]`, "ana at northwind")
		b.fill(`input[name="timeZone"]`, "Europe/Atlantis")
		if status := b.click(`form.contactform button[type="submit"]`); status != http.StatusUnprocessableEntity {
			b.fatalf("a refused form answered %d", status)
		}
		errs := evalJS[[]string](b, `Array.from(document.querySelectorAll('#form-errors li')).map(li => li.textContent)`)
		if len(errs) != 2 || !strings.Contains(errs[0], "Email") || !strings.Contains(errs[1], "Time zone \"Europe/Atlantis\"") {
			b.fatalf("the form's errors: %q", errs)
		}
		if got := evalJS[[]string](b, `['email', 'timeZone', 'firstName'].map(n => document.querySelector('form.contactform [name="' + n + '"]').value)`); got[0] != "ana at northwind" || got[1] != "Europe/Atlantis" || got[2] != strings.TrimSuffix(anaName, " Lima") {
			b.fatalf("the form does not keep what was typed: %q", got)
		}
		b.noHorizontalOverflow("the refused form on a " + v.name)
		b.saveScreenshot("contact-form-errors-"+v.name+".png", false, 0)
		if c := do(t, "GET", srv.URL+"/v1/contacts/"+ana, acc.key, nil).JSON(t); c["email"] != "ana.lima@northwind.example" || c["timeZone"] != anaZone {
			t.Fatalf("a refused form changed the contact: %v", c)
		}

		// Then saved.
		name := "Ana Beatriz"
		if v.mobile {
			name = "Ana B."
		}
		b.fill(`input[name="firstName"]`, name)
		b.fill(`input[name="email"]`, "ana.lima@northwind.example")
		b.fill(`input[name="timeZone"]`, "Europe/Lisbon")
		if status := b.click(`form.contactform button[type="submit"]`); status != http.StatusOK || b.path() != "/inbox/contacts/"+ana {
			b.fatalf("saving: %d at %s", status, b.path())
		}
		if !strings.Contains(evalJS[string](b, `document.querySelector('#details').innerText`), "Saved.") {
			b.fatalf("no Saved. in the details section: %s", b.text())
		}
		if c := do(t, "GET", srv.URL+"/v1/contacts/"+ana, acc.key, nil).JSON(t); c["firstName"] != name || c["timeZone"] != "Europe/Lisbon" {
			t.Fatalf("after saving: %v", c)
		}
		anaName, anaZone = name+" Lima", "Europe/Lisbon"
		if href := evalJS[string](b, `document.querySelector('a.button.primary').getAttribute('href')`); href != "/inbox/conversations/"+ana {
			b.fatalf("Open conversation links to %q", href)
		}
	}
	// The visitor's page names its sender id and channel.
	b.use(laptopSize)
	b.open("/inbox/contacts/" + visitor)
	if text := b.text(); !strings.Contains(text, "web-visitor-8842") || !strings.Contains(text, "live-chat") {
		b.fatalf("the visitor's page: %s", text)
	}
}
