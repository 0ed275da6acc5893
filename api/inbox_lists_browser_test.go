package api_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/chromedp/chromedp"

	"funnelchat/models"
)

// The lists in a real browser, at laptop and phone size: the lists page, creating and renaming a list,
// its members, adding (picked from a search, and by phone) and removing one, and the CSV import's two
// steps with a column changed by hand.

// listsCSV is the file the browser uploads: a spreadsheet's export, one column the import cannot guess
// (Name), and one invalid row.
const listsCSV = "Mobile,Name,Surname,E-mail Address,Company\n" +
	"+351912000001,Sofia,Almeida,sofia@example.pt,Northwind\n" +
	"+351912000002,Lucas,Pereira,,Northwind\n" +
	"912 000 003,Marta,Costa,,\n" + // read in Portugal, the country chosen
	"12,Rui,,,Northwind\n" // line 5: not a phone

// listsScreenshotRun numbers the runs of TestInboxBrowserLists in this process: the first signs in as
// the owner the screenshots show, later ones (-count) with an address of their own.
var listsScreenshotRun atomic.Int64

func TestInboxBrowserLists(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	email := "joana.silva@northwind.example"
	if n := listsScreenshotRun.Add(1); n > 1 {
		email = fmt.Sprintf("joana.silva+%d@northwind.example", n)
	}
	created, err := env.Store.CreateAccount(t.Context(), models.NewAccount{Email: email})
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Store.SetPassword(t.Context(), created.Account.OwnerUserID, inboxPassword); err != nil {
		t.Fatal(err)
	}
	acc := browserAccount{Account: created.Account, key: created.APIKey}
	for _, who := range []struct{ first, last, phone, email string }{
		{"Ana", "Lima", "+351913000001", "ana.lima@example.pt"},
		{"Anabela", "Rocha", "+351913000002", ""},
		{"Bruno", "Dias", "+351913000003", "bruno@example.pt"},
	} {
		fields := map[string]any{"firstName": who.first, "lastName": who.last, "phone": who.phone}
		if who.email != "" {
			fields["email"] = who.email
		}
		listContact(t, srv, acc.key, fields)
	}
	file := filepath.Join(t.TempDir(), "northwind-leads.csv")
	if err := os.WriteFile(file, []byte(listsCSV), 0o644); err != nil {
		t.Fatal(err)
	}
	b := acc.signedIn(t, srv)
	dialogs := b.acceptDialogs()

	for i, size := range []screenSize{laptopSize, phoneSize} {
		b.use(size)
		shot := func(name string, full bool) {
			b.noHorizontalOverflow(name + " on a " + size.name)
			b.saveScreenshot(name+"-"+size.name+".png", full, 2400)
		}
		listName := []string{"Spring webinar", "Lisbon open day"}[i]

		// The lists page; a refused name, then a list created.
		if status := b.open("/inbox/lists"); status != http.StatusOK {
			b.fatalf("GET /inbox/lists: %d", status)
		}
		if !evalJS[bool](b, `document.querySelector('nav a[href="/inbox/lists"]').getAttribute('aria-current') === 'page'`) {
			b.fatalf("the navigation does not show Lists as the current page")
		}
		b.fill(`.newlist input[name=name]`, "   ") // not empty to the browser; no name to the server
		if status := b.click(`.newlist button[type=submit]`); status != http.StatusUnprocessableEntity {
			b.fatalf("an empty name: %d, want 422", status)
		}
		if got := b.text(); !strings.Contains(got, "The name is required.") {
			b.fatalf("the refusal does not say why")
		}
		b.fill(`.newlist input[name=name]`, listName)
		if status := b.click(`.newlist button[type=submit]`); status != http.StatusOK || !strings.HasPrefix(b.path(), "/inbox/lists/lst_") {
			b.fatalf("create: %d on %s", status, b.path())
		}
		listPath := b.path()
		if !strings.Contains(b.text(), "List “"+listName+"” created.") {
			b.fatalf("no word that the list was created")
		}
		shot("list-empty", true)

		// Add from the search: "ana" finds Ana and Anabela.
		b.fill(`.findform input[name=find]`, "ana")
		b.click(`.findform button[type=submit]`)
		if n := evalJS[int](b, `document.querySelectorAll('.picks li').length`); n != 2 {
			b.fatalf("the search for ana offers %d contacts, want 2", n)
		}
		shot("list-find", false)
		b.click(`.picks li:first-child button[type=submit]`)
		if !strings.Contains(b.text(), "Ana Lima added to the list.") {
			b.fatalf("no word that Ana was added")
		}
		// Add by phone, as people write it.
		b.fill(`#add input[name=contact]`, "+351 913 000 003")
		b.click(`#add .nameform button[type=submit]`)
		if !strings.Contains(b.text(), "Bruno Dias added to the list.") {
			b.fatalf("no word that Bruno was added")
		}
		b.fill(`#add input[name=contact]`, "+351 999 999 999")
		if status := b.click(`#add .nameform button[type=submit]`); status != http.StatusUnprocessableEntity {
			b.fatalf("an unknown phone: %d", status)
		}
		if v := evalJS[string](b, `document.querySelector('#add input[name=contact]').value`); v != "+351 999 999 999" {
			b.fatalf("the refused phone was not kept: %q", v)
		}

		// The import, step 1: the preview with the guessed columns.
		b.open(listPath)
		if err := chromedp.Do(b.ctx, chromedp.SetUploadFiles(`.uploadform input[type=file]`, []string{file})); err != nil {
			b.fatalf("choose the file: %v", err)
		}
		if status := b.click(`.uploadform button[type=submit]`); status != http.StatusOK || !strings.Contains(b.path(), "/import/") {
			b.fatalf("upload: %d on %s", status, b.path())
		}
		guessed := evalJS[[]string](b, `[...document.querySelectorAll('.mapping select')].map(s => s.value)`)
		if fmt.Sprint(guessed) != "[phone  last_name email ]" {
			b.fatalf("guessed columns %q", guessed)
		}
		if !strings.Contains(b.text(), "Step 1 of 2") || !strings.Contains(b.text(), "Sofia") {
			b.fatalf("the preview does not show the file's rows")
		}
		// Step 2 with changes: Name is the first name; Portugal for phones without a country code.
		b.adminChoose(`select[name=col1]`, "first_name")
		b.adminChoose(`select[name=country]`, "PT")
		shot("list-import-preview", true)
		if status := b.click(`.importform button[type=submit]`); status != http.StatusOK || !strings.HasSuffix(b.path(), "/result") {
			b.fatalf("import: %d on %s", status, b.path())
		}
		totals := evalJS[map[string]string](b, `Object.fromEntries([...document.querySelectorAll('[data-total]')].map(d => [d.dataset.total, d.textContent]))`)
		// The second time round, the file's contacts exist already: none is created.
		if created := []int{3, 0}[i]; fmt.Sprint(totals) != fmt.Sprintf("map[created:%d existing:0 imported:3 invalid:1 updated:0]", created) {
			b.fatalf("totals %v", totals)
		}
		if row := evalJS[string](b, `document.querySelector('.invalidrows tbody tr').innerText`); !strings.HasPrefix(row, "5") || !strings.Contains(row, "phone") {
			b.fatalf("the invalid row: %q", row)
		}
		if href := evalJS[string](b, `document.querySelector('a[href$="/invalid.csv"]').getAttribute('href')`); !strings.HasSuffix(href, "/invalid.csv") {
			b.fatalf("no download of the invalid rows")
		}
		shot("list-import-result", true)

		// The members: five now; remove Bruno.
		b.click(`.formactions a.button`)
		if n := evalJS[int](b, `document.querySelectorAll('.members li').length`); n != 5 {
			b.fatalf("%d members, want 5", n)
		}
		shot("list-members", true)
		b.click(`.members li:nth-child(2) .memberremove button`)
		if !strings.Contains(b.text(), "Bruno Dias removed from the list.") {
			b.fatalf("no word that Bruno was removed")
		}
		if d := dialogs(); len(d) == 0 || !strings.Contains(d[len(d)-1], "Remove Bruno Dias from "+listName) {
			b.fatalf("no confirmation before removing: %q", d)
		}
		// Search the members.
		b.fill(`#members input[name=q]`, "SOF")
		b.click(`#members .memberfind button[type=submit]`)
		if got := evalJS[[]string](b, `[...document.querySelectorAll('.memberwho')].map(a => a.textContent)`); fmt.Sprint(got) != "[Sofia Almeida]" {
			b.fatalf("search SOF: %q", got)
		}

		// Rename.
		b.open(listPath)
		b.fill(`#rename input[name=name]`, listName+" 2027")
		b.click(`#rename button[type=submit]`)
		if !strings.Contains(b.text(), "Renamed to “"+listName+" 2027”.") {
			b.fatalf("no word that the list was renamed")
		}

		b.open("/inbox/lists")
		shot("lists", false)
	}
}
