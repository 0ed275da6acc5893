package api_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"funnelchat/models"
)

// Creating and editing a campaign in the inbox, in a real browser: the form with its variants, the
// store's reasons for a refused form with what was typed kept, the campaigns list's New campaign and
// Edit, at laptop and phone size and without script.

// adminChoose selects value in the <select> matching selector.
func (b *inboxTab) adminChoose(selector, value string) {
	b.t.Helper()
	if !evalJS[bool](b, `(s => (s.value = '`+value+`', s.value === '`+value+`'))(document.querySelector('`+selector+`'))`) {
		b.fatalf("%s offers no %q", selector, value)
	}
}

// adminCheck ticks (or unticks) the checkbox matching selector.
func (b *inboxTab) adminCheck(selector string, on bool) {
	b.t.Helper()
	evalJS[bool](b, `document.querySelector('`+selector+`').checked = `+map[bool]string{true: "true", false: "false"}[on]+`, true`)
}

// adminCampaignNamed returns the account's campaign called name (nil when none).
func adminCampaignNamed(t *testing.T, accountID, name string) *models.Campaign {
	t.Helper()
	cs, _, err := env.Store.Campaigns(t.Context(), accountID, models.Page{Limit: models.MaxPageLimit})
	if err != nil {
		t.Fatal(err)
	}
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}

// The texts of the campaign the tests write.
const (
	cfName     = "Spring collection welcome"
	cfVariantA = "Hi {{firstName}}, thanks for signing up! Our spring collection is out today: shall we save you a free fitting this week?"
	cfVariantB = "{{firstName}}, the spring collection just landed. Reply FIT and we will book you a free fitting at your nearest store."
	cfVariantC = "New season, new shoes, {{firstName}}! Want us to keep your size aside for a free fitting?"
	cfGoal     = "Book a free fitting at your nearest store"
	cfBot      = "You answer for Northwind, a shoe shop in Lisbon and Porto. Be brief and friendly; offer a fitting."
)

// adminFillCampaign fills the campaign form as a person setting up the spring campaign would.
func (b *inboxTab) adminFillCampaign(listID string) {
	b.t.Helper()
	b.fill(`input[name=name]`, cfName)
	b.adminChoose(`select[name=type]`, models.CampaignCombined)
	b.adminChoose(`select[name=listId]`, listID)
	b.fill(`input[name=language]`, "pt-BR")
	b.adminChoose(`select[name=channel]`, "custom")
	b.fill(`input[name=customLabel]`, "live-chat")
	b.adminOpen(`details.variantbox`)
	b.fill(`textarea[name=variant0]`, cfVariantA)
	b.fill(`textarea[name=variant1]`, cfVariantB)
	b.fill(`input[name=goal]`, cfGoal)
	b.fill(`textarea[name=botInstructions]`, cfBot)
	b.adminCheck(`input[name=followUpsEnabled]`, true)
	b.fill(`input[name=followUpDelaysHours]`, "2, 24.5")
	b.fill(`input[name=openingDelayMinutes]`, "15")
	b.fill(`input[name=sendRatePerMinute]`, "30")
}

func TestInboxAdminCampaignForm(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	srv := startServer(t)
	acc := adminAccount(t, "lucia.martins@northwind.example", "Northwind")
	list, err := env.Store.CreateList(t.Context(), acc.ID, "Spring newsletter sign-ups")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Store.CreateList(t.Context(), acc.ID, "Walk-in customers"); err != nil {
		t.Fatal(err)
	}
	b := acc.signedIn(t, srv)
	b.use(laptopSize)
	var id string

	t.Run("a campaign with two variants is created through the form", func(t *testing.T) {
		b.open("/inbox/campaigns")
		if !strings.Contains(b.text(), "Create one with New campaign") {
			b.fatalf("the empty campaigns page does not point at New campaign")
		}
		if status := b.click(`a[href="/inbox/campaigns/new"]`); status != http.StatusOK || b.path() != "/inbox/campaigns/new" {
			b.fatalf("New campaign: %d %s", status, b.path())
		}
		if got := evalJS[[]string](b, `[...document.querySelectorAll('select[name=listId] option')].map(o => o.textContent)`); !slices.Equal(got, []string{"No list yet", "Spring newsletter sign-ups", "Walk-in customers"}) {
			b.fatalf("the list choices: %q", got)
		}
		if got := evalJS[string](b, `document.querySelector('select[name=channel] option[value=sms]').textContent`); got != "SMS (not connected yet)" {
			b.fatalf("the SMS choice reads %q", got)
		}
		b.adminFillCampaign(list.ID)
		if status := b.click(`form.campaignform button[type=submit]`); status != http.StatusOK {
			b.fatalf("create: %d", status)
		}
		if p := b.path(); p != "/inbox/campaigns" {
			b.fatalf("create went to %s", p)
		}
		if flash := evalJS[string](b, `document.querySelector('main .flash.ok').textContent`); flash != "Campaign “"+cfName+"” created (draft)." {
			b.fatalf("the page says %q", flash)
		}
		cp := adminCampaignNamed(t, acc.ID, cfName)
		if cp == nil {
			t.Fatal("the campaign is not stored")
		}
		id = cp.ID
		if !slices.Equal(cp.OpeningMessages, []string{cfVariantA, cfVariantB}) || cp.OpeningMessage != "" || cp.Type != models.CampaignCombined ||
			cp.Language != "pt-BR" || cp.Channel != "custom:live-chat" || cp.ListID == nil || *cp.ListID != list.ID || cp.Goal != cfGoal ||
			cp.BotInstructions != cfBot || !cp.FollowUpsEnabled || !slices.Equal(cp.FollowUpDelaysHours, []float64{2, 24.5}) || !cp.TriggerOnListAdd ||
			cp.OpeningDelayMinutes != 15 || cp.SendRatePerMinute == nil || *cp.SendRatePerMinute != 30 || cp.Status != models.CampaignDraft ||
			cp.WhatsAppTemplate != nil {
			t.Fatalf("stored: %+v", cp)
		}
		// The list has its Edit link, and keeps Go live.
		row := `.campaigns tbody tr:first-child`
		if !evalJS[bool](b, `!!document.querySelector('`+row+` a[href="/inbox/campaigns/`+id+`/edit"]') && document.querySelector('`+row+` .actions button').textContent === 'Go live'`) {
			b.fatalf("the row has no Edit link or no Go live")
		}
		if name := evalJS[string](b, `document.querySelector('`+row+` a[href$="/edit"]').textContent`); name != "Edit "+cfName {
			b.fatalf("the Edit link's text (for a screen reader) is %q", name)
		}
	})

	t.Run("edited through the form: a third variant, a new name, live", func(t *testing.T) {
		if status := b.click(`a[href="/inbox/campaigns/` + id + `/edit"]`); status != http.StatusOK {
			b.fatalf("Edit: %d", status)
		}
		shown := evalJS[[]string](b, `['input[name=name]', 'textarea[name=variant0]', 'textarea[name=variant1]', 'textarea[name=variant2]', 'select[name=listId]',
			'select[name=channel]', 'input[name=customLabel]', 'input[name=followUpDelaysHours]', 'input[name=openingDelayMinutes]', 'input[name=sendRatePerMinute]',
			'input[name=language]', 'select[name=status]'].map(s => document.querySelector(s).value)`)
		want := []string{cfName, cfVariantA, cfVariantB, "", list.ID, "custom", "live-chat", "2, 24.5", "15", "30", "pt-BR", "draft"}
		if !slices.Equal(shown, want) {
			b.fatalf("the edit form shows %q, want %q", shown, want)
		}
		if !evalJS[bool](b, `document.querySelector('details.variantbox').open && document.querySelector('input[name=followUpsEnabled]').checked`) {
			b.fatalf("the variants are not open, or follow-ups are not ticked")
		}
		b.fill(`input[name=name]`, cfName+" 2026")
		b.fill(`textarea[name=variant2]`, cfVariantC)
		b.adminChoose(`select[name=status]`, models.CampaignLive)
		if status := b.click(`form.campaignform button[type=submit]`); status != http.StatusOK || b.path() != "/inbox/campaigns" {
			b.fatalf("save: %d %s", status, b.path())
		}
		cp, err := env.Store.CampaignByID(t.Context(), acc.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		if cp.Name != cfName+" 2026" || !slices.Equal(cp.OpeningMessages, []string{cfVariantA, cfVariantB, cfVariantC}) || cp.Status != models.CampaignLive ||
			cp.ListID == nil || *cp.ListID != list.ID || cp.Channel != "custom:live-chat" {
			t.Fatalf("stored after the edit: %+v", cp)
		}
		if !evalJS[bool](b, `document.querySelector('.campaigns tbody tr:first-child .actions button').textContent === 'Pause'`) {
			b.fatalf("the live campaign has no Pause")
		}
	})

	t.Run("a refused form shows the store's reason and keeps what was typed", func(t *testing.T) {
		before, err := env.Store.CampaignByID(t.Context(), acc.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		edit := "/inbox/campaigns/" + id + "/edit"
		for _, c := range []struct {
			what string
			set  func()
			want string
		}{
			{"live without a list", func() { b.adminChoose(`select[name=listId]`, "") }, "A live campaign needs a list. Nothing was saved."},
			{"an opening message and variants", func() { b.fill(`textarea[name=openingMessage]`, "Hi {{firstName}}!") },
				"Give opening message or variants, not both. Nothing was saved."},
			{"one variant", func() {
				b.fill(`textarea[name=variant1]`, "")
				b.fill(`textarea[name=variant2]`, "")
			}, "Variants must hold 2 to 5 texts. Nothing was saved."},
			{"delays that are not numbers", func() { b.fill(`input[name=followUpDelaysHours]`, "24, soon") },
				"Follow-up delays: “soon” is not a number of hours. Write them separated by commas, such as 24, 72. Nothing was saved."},
			{"delays that go down", func() { b.fill(`input[name=followUpDelaysHours]`, "72, 24") },
				"Follow-up delays must increase: each delay counts from the opening message. Nothing was saved."},
			{"a bad language", func() { b.fill(`input[name=language]`, "not a language!") },
				"Language must be a BCP 47 tag such as en or pt-BR. Nothing was saved."},
		} {
			if status := b.open(edit); status != http.StatusOK {
				b.fatalf("edit: %d", status)
			}
			b.fill(`input[name=name]`, "Typed but refused")
			c.set()
			typed := evalJS[[]string](b, `[...document.querySelectorAll('form.campaignform input:not([type=hidden]), form.campaignform textarea, form.campaignform select')].map(e => e.name + '=' + (e.type === 'checkbox' ? e.checked : e.value))`)
			if status := b.click(`form.campaignform button[type=submit]`); status != http.StatusUnprocessableEntity {
				b.fatalf("%s: %d, want 422", c.what, status)
			}
			if got := evalJS[string](b, `(document.getElementById('form-error') || {}).textContent || ''`); got != c.want {
				b.fatalf("%s: the form says %q, want %q", c.what, got, c.want)
			}
			kept := evalJS[[]string](b, `[...document.querySelectorAll('form.campaignform input:not([type=hidden]), form.campaignform textarea, form.campaignform select')].map(e => e.name + '=' + (e.type === 'checkbox' ? e.checked : e.value))`)
			if !slices.Equal(kept, typed) {
				b.fatalf("%s: the form kept\n%q\nof what was typed:\n%q", c.what, kept, typed)
			}
			if after, _ := env.Store.CampaignByID(t.Context(), acc.ID, id); after.Name != before.Name || !slices.Equal(after.OpeningMessages, before.OpeningMessages) ||
				*after.ListID != *before.ListID || after.Language != before.Language {
				t.Fatalf("%s: a refused form changed the campaign: %+v", c.what, after)
			}
		}
		// A new campaign's refused form keeps its input too.
		b.open("/inbox/campaigns/new")
		b.fill(`input[name=name]`, "")
		b.fill(`textarea[name=openingMessage]`, "Hello there")
		evalJS[bool](b, `document.querySelector('input[name=name]').required = false, true`) // as a browser without validation
		if status := b.click(`form.campaignform button[type=submit]`); status != http.StatusUnprocessableEntity ||
			evalJS[string](b, `document.getElementById('form-error').textContent`) != "Name is required. Nothing was saved." ||
			b.adminValue(`textarea[name=openingMessage]`) != "Hello there" || b.path() != "/inbox/campaigns/new" {
			b.fatalf("a new campaign without a name: %d %q %q", status, evalJS[string](b, `document.getElementById('form-error').textContent`), b.adminValue(`textarea[name=openingMessage]`))
		}
	})

	t.Run("another account's campaign cannot be edited", func(t *testing.T) {
		other := adminAccount(t, "owner@other-shop.example", "Other shop")
		name, channel := "Other shop's secret promo", "custom:web"
		theirs, err := env.Store.CreateCampaign(t.Context(), other.ID, models.CampaignInput{Name: &name, Channel: &channel})
		if err != nil {
			t.Fatal(err)
		}
		if status := b.open("/inbox/campaigns/" + theirs.ID + "/edit"); status != http.StatusNotFound || strings.Contains(b.text(), name) {
			b.fatalf("GET another account's edit form: %d", status)
		}
		owner := adminOwnerClient(t, srv, acc)
		p := owner.post("/inbox/campaigns", "/inbox/campaigns/"+theirs.ID+"/edit", url.Values{"name": {"Taken over"}, "type": {"combined"}, "status": {"draft"}, "language": {"en"}})
		if p.Status != http.StatusNotFound {
			t.Fatalf("POST to another account's campaign: %d, want 404", p.Status)
		}
		if got, _ := env.Store.CampaignByID(t.Context(), other.ID, theirs.ID); got.Name != name {
			t.Fatalf("another account's campaign renamed to %q", got.Name)
		}
	})
}

// TestInboxAdminCampaignFormLayout looks at the campaign form at laptop and phone size and uses it
// without script. With INBOX_SCREENSHOTS set to a directory it saves campaign-form-laptop.png there.
func TestInboxAdminCampaignFormLayout(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	srv := startServer(t)
	acc := adminAccount(t, "lucia.martins@northwind.example", "Northwind")
	list, err := env.Store.CreateList(t.Context(), acc.ID, "Spring newsletter sign-ups")
	if err != nil {
		t.Fatal(err)
	}
	ids := adminChannelIDs()
	if err := env.Store.SetMetaSettings(t.Context(), acc.ID, models.ChannelMessenger, models.MetaSettings{ID: ids.PageID, AccessToken: adminMessengerToken,
		AppSecret: adminMessengerSecret, VerifyToken: adminMessengerVerify}); err != nil {
		t.Fatal(err)
	}
	name, channel, opening := "Winter boots clearance", "messenger", "Hi {{firstName}}, winter boots are 30% off this week."
	if _, err := env.Store.CreateCampaign(t.Context(), acc.ID, models.CampaignInput{Name: &name, Channel: &channel, OpeningMessage: &opening}); err != nil {
		t.Fatal(err)
	}
	browser := startChromium(t)
	b := openInbox(t, browser, srv)
	b.use(laptopSize)
	b.signIn(acc.Email, inboxPassword)
	for _, v := range []screenSize{laptopSize, phoneSize} {
		b.use(v)
		b.open("/inbox/campaigns/new")
		b.adminFillCampaign(list.ID)
		b.nothingWider("the new campaign form on a " + v.name)
		if size := evalJS[float64](b, `Math.min(...[...document.querySelectorAll('.campaignform label, .campaignform .hint, .campaignform summary')].map(e => parseFloat(getComputedStyle(e).fontSize)))`); size < 12 {
			b.fatalf("text of %v px on a %s", size, v.name)
		}
		if !v.mobile {
			evalJS[bool](b, `document.activeElement.blur(), true`) // a focused field's caret and ring
			b.saveScreenshot("campaign-form-laptop.png", true, 3000)
		}
		b.open("/inbox/campaigns")
		b.nothingWider("the campaigns list on a " + v.name)
		edit := evalJS[[]float64](b, `(r => [r.left, r.right, r.width])(document.querySelector('.campaigns a[href$="/edit"]').getBoundingClientRect())`)
		if edit[2] == 0 || edit[1] > float64(v.width) {
			b.fatalf("the Edit link on a %s: %v", v.name, edit)
		}
	}

	t.Run("without JavaScript", func(t *testing.T) {
		noJS := openInbox(t, browser, srv)
		noJS.use(phoneSize)
		if _, err := chromedp.Call(noJS.ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
			t.Fatal(err)
		}
		noJS.open("/inbox/campaigns/new")
		noJS.fill(`input[name=name]`, "Porto store opening")
		noJS.fill(`textarea[name=openingMessage]`, "Hi {{firstName}}, our Porto store opens on Saturday!")
		noJS.adminChoose(`select[name=channel]`, "messenger")
		if status := noJS.click(`form.campaignform button[type=submit]`); status != http.StatusOK {
			noJS.fatalf("create without script: %d", status)
		}
		cp := adminCampaignNamed(t, acc.ID, "Porto store opening")
		if cp == nil || cp.OpeningMessage != "Hi {{firstName}}, our Porto store opens on Saturday!" || cp.Channel != "messenger" || len(cp.OpeningMessages) != 0 {
			t.Fatalf("stored without script: %+v", cp)
		}
		// The variants' part opens without script, too.
		noJS.open("/inbox/campaigns/" + cp.ID + "/edit")
		if err := chromedp.Do(noJS.ctx, chromedp.Click(chromedp.CSS(`details.variantbox summary`))); err != nil {
			t.Fatal(err)
		}
		noJS.fill(`textarea[name=openingMessage]`, "")
		noJS.fill(`textarea[name=variant0]`, "Porto, we are here! Come by on Saturday, {{firstName}}.")
		noJS.fill(`textarea[name=variant3]`, "{{firstName}}, our Porto store opens on Saturday with 20% off.")
		if status := noJS.click(`form.campaignform button[type=submit]`); status != http.StatusOK {
			noJS.fatalf("edit without script: %d", status)
		}
		if cp, _ = env.Store.CampaignByID(t.Context(), acc.ID, cp.ID); len(cp.OpeningMessages) != 2 || cp.OpeningMessage != "" {
			t.Fatalf("stored after the edit without script: %+v", cp)
		}
		noJS.nothingWider("the campaigns without script on a phone")
	})
}
