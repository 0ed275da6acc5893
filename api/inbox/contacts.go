package inbox

import (
	"net/url"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"funnelchat/models"
	"funnelchat/models/report"
)

// The contacts pages (README, "The inbox"): every contact of the account, searched with the contact
// search the API and the conversation list use (models/report, contact_search.go), and one contact's
// page: its sender ids, lists, campaigns, goals and consent, a link to its conversation, and a form
// to correct its names, email and time zone. Owners and members alike.

// contactsPageSize is how many contacts the list shows at once.
const contactsPageSize = 50

// contactListRow is one line of the contacts list.
type contactListRow struct {
	report.ContactRow
	Name string
	// Last is the time of the contact's newest message (zero when it has none).
	Last time.Time
	// PhoneIsName: the contact has no name and its phone names it (a phone shows it once).
	PhoneIsName bool
}

// contactsView is the contacts page's data.
type contactsView struct {
	Rows []contactListRow
	Q    string
	// Next is the cursor of the next page; Paged that this is not the first page.
	Next  string
	Paged bool
}

// MoreLink is the next page of the same search.
func (v contactsView) MoreLink() string {
	q := url.Values{"cursor": {v.Next}}
	if v.Q != "" {
		q.Set("q", v.Q)
	}
	return "/inbox/contacts?" + q.Encode()
}

// FirstLink is the first page of the same search.
func (v contactsView) FirstLink() string {
	if v.Q == "" {
		return "/inbox/contacts"
	}
	return "/inbox/contacts?" + url.Values{"q": {v.Q}}.Encode()
}

// contactsPage: GET /inbox/contacts[?q=&cursor=] lists the contacts the search finds (all of them
// without one), newest first.
func (h *Handler) contactsPage(c *fiber.Ctx) error {
	page, err := pageOf(c)
	if err != nil {
		return h.inboxNotFound(c)
	}
	page.Limit = contactsPageSize
	v := contactsView{Q: strings.TrimSpace(c.Query("q")), Paged: page.Cursor != ""}
	rows, next, err := h.reports.Contacts(c.UserContext(), sessionOf(c).AccountID, v.Q, page)
	if err != nil {
		if models.ErrorCode(err) == models.CodeValidation {
			return h.render(c, fiber.StatusBadRequest, "problem", h.view(c, "Search", "contacts",
				problemView{Heading: "Search too long", Text: models.ErrorMessage(err)}))
		}
		return h.inboxFailure(c, err)
	}
	v.Next = next
	v.Rows = make([]contactListRow, len(rows))
	for i, r := range rows {
		v.Rows[i] = contactListRow{ContactRow: r, Name: contactName(r.Contact, r.SenderID)}
		v.Rows[i].PhoneIsName = r.Contact.Phone != nil && v.Rows[i].Name == *r.Contact.Phone
		if r.LastActivityAt != nil {
			v.Rows[i].Last = *r.LastActivityAt
		}
	}
	return h.render(c, fiber.StatusOK, "contacts", h.view(c, "Contacts", "contacts", v))
}

// contactForm is the contact page's edit form: what it shows, or what was typed when the store refused
// it, with every problem.
type contactForm struct {
	FirstName, LastName, Email, TimeZone string
	Errors                               []string
}

// contactView is the contact page's data.
type contactView struct {
	*report.ContactProfile
	Name string
	Path string
	// Conversation is the contact's conversation page.
	Conversation string
	// Last is the time of the contact's newest message (zero when it has none).
	Last time.Time
	// Consent and ConsentHistory are what the "consentstate" template shows (_consent.html), read as
	// the conversation page reads them (consent.go).
	Consent        []consentRow
	ConsentHistory consentHistory
	Goals          goalsView
	Form           contactForm
	TimeZones      []string
}

// contactPath is a contact's page.
func contactPath(id string) string { return "/inbox/contacts/" + url.PathEscape(id) }

// contactFields name the edit's fields as the form labels them.
var contactFields = []fieldLabel{{Field: "firstName", Label: "first name"}, {Field: "lastName", Label: "last name"},
	{Field: "email", Label: "email"}, {Field: "timeZone", Label: "time zone"}}

// contactPage: GET /inbox/contacts/{id}.
func (h *Handler) contactPage(c *fiber.Ctx) error {
	return h.renderContact(c, fiber.StatusOK, nil)
}

// renderContact shows the contact page with status; form is what was typed when an edit was refused
// (nil: the contact's own values).
func (h *Handler) renderContact(c *fiber.Ctx, status int, form *contactForm) error {
	sess := sessionOf(c)
	p, err := h.reports.ContactProfileFor(c.UserContext(), sess.AccountID, c.Params("id"))
	if err != nil {
		if models.ErrorCode(err) == models.CodeNotFound {
			return h.inboxNotFound(c)
		}
		return h.inboxFailure(c, err)
	}
	ct := p.Contact
	sender := ""
	if len(p.Identities) > 0 {
		sender = p.Identities[0].SenderID
	}
	v := contactView{ContactProfile: p, Name: contactName(ct, sender), Path: contactPath(ct.ID),
		Conversation: "/inbox/conversations/" + url.PathEscape(ct.ID), TimeZones: commonTimeZones}
	if p.LastActivityAt != nil {
		v.Last = *p.LastActivityAt
	}
	if form != nil {
		v.Form = *form
	} else {
		v.Form = contactForm{FirstName: ct.FirstName, LastName: ct.LastName, Email: deref(ct.Email), TimeZone: deref(ct.TimeZone)}
	}
	cc, err := h.store.ConsentOf(c.UserContext(), sess.AccountID, ct.ID)
	if err != nil {
		return h.inboxFailure(c, err)
	}
	v.Consent, v.ConsentHistory = consentRows(cc), historyOf(cc)
	if v.Goals, err = h.goalsOf(c, ct); err != nil {
		return h.inboxFailure(c, err)
	}
	return h.render(c, status, "contact", h.view(c, v.Name, "contacts", v))
}

// editContact: POST /inbox/contacts/{id} {firstName, lastName, email, timeZone} saves the contact's
// fields and goes back to its page (303). A refused form is shown again (422) with what was typed and
// every problem.
func (h *Handler) editContact(c *fiber.Ctx) error {
	sess := sessionOf(c)
	form := contactForm{FirstName: strings.Clone(c.FormValue("firstName")), LastName: strings.Clone(c.FormValue("lastName")),
		Email: strings.Clone(c.FormValue("email")), TimeZone: strings.Clone(c.FormValue("timeZone"))}
	_, err := h.app.EditContact(c.UserContext(), sess.AccountID, c.Params("id"), models.ContactEdit{
		FirstName: form.FirstName, LastName: form.LastName, Email: form.Email, TimeZone: form.TimeZone})
	if err == nil {
		return h.done(c, contactPath(c.Params("id"))+"#details", true, "Saved.")
	}
	if code := models.ErrorCode(err); code == models.CodeValidation || code == models.CodeConflict {
		for _, msg := range models.ErrorMessages(err) {
			form.Errors = append(form.Errors, formMessage(models.Errorf(models.CodeValidation, "%s", msg), contactFields))
		}
		return h.renderContact(c, fiber.StatusUnprocessableEntity, &form)
	}
	return h.actionFailed(c, contactPath(c.Params("id")), err)
}
