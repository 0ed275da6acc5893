package inbox

import (
	"context"
	"net/url"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"funnelchat/api/web"
	"funnelchat/models"
	"funnelchat/models/report"
)

// The lists (README, "The inbox"): every list with its member count, creating and renaming one, a
// list's members (paged, searched), adding a contact (picked from a search, or by id, phone or email)
// and removing one, the consent export for owners, and the CSV import in two steps (list_import.go).
// The writes are those of the JSON API (App.AddToList, App.RemoveFromList) or, for the names, the
// store's (CreateList, RenameList), so that both obey one rule.

// Page sizes of the list pages.
const (
	listsPageSize   = 50
	membersPageSize = 50
	// contactPicks is how many contacts the add form's search offers.
	contactPicks = 10
)

// listRoutes registers the list pages with page, Mount's helper (a session and the CSRF check on each).
func (h *Handler) listRoutes(page func(method, path string, handlers ...fiber.Handler)) {
	page(fiber.MethodGet, "/lists", h.listsPage)
	page(fiber.MethodPost, "/lists", h.createList)
	page(fiber.MethodGet, "/lists/:id", h.contactListPage)
	page(fiber.MethodPost, "/lists/:id/rename", h.renameList)
	page(fiber.MethodPost, "/lists/:id/members", h.addListMember)
	page(fiber.MethodPost, "/lists/:id/members/:contactId/remove", h.removeListMember)
	page(fiber.MethodPost, "/lists/:id/import", h.uploadImport)
	page(fiber.MethodGet, "/lists/:id/import/:token", h.importPreview)
	page(fiber.MethodPost, "/lists/:id/import/:token", h.runImport)
	page(fiber.MethodGet, "/lists/:id/import/:token/result", h.importResult)
	page(fiber.MethodGet, "/lists/:id/import/:token/invalid.csv", h.invalidRowsCSV)
	page(fiber.MethodGet, "/consent.csv", h.consentExport)
}

// nameForm is a form with a list's name: as typed, and every reason it was refused.
type nameForm struct {
	Name   string
	Errors []string
}

// listsView is the lists page's data.
type listsView struct {
	Lists  []report.ListSummary
	Next   string
	Cursor string
	// New is the New list form.
	New nameForm
}

func listPath(id string) string { return "/inbox/lists/" + url.PathEscape(id) }

// listsPage: GET /inbox/lists shows the account's lists, oldest first, with their member counts.
func (h *Handler) listsPage(c *fiber.Ctx) error {
	return h.renderLists(c, fiber.StatusOK, nameForm{})
}

func (h *Handler) renderLists(c *fiber.Ctx, status int, form nameForm) error {
	page, err := pageOf(c)
	if err != nil {
		return h.inboxNotFound(c)
	}
	page.Limit = listsPageSize
	v := listsView{Cursor: page.Cursor, New: form}
	if v.Lists, v.Next, err = h.reports.Lists(c.UserContext(), sessionOf(c).AccountID, page); err != nil {
		return h.inboxFailure(c, err)
	}
	return h.render(c, status, "lists", h.view(c, "Lists", "lists", v))
}

// listFields name a list's fields as the form does.
var listFields = []fieldLabel{{Field: "name", Label: "the name"}}

// createList: POST /inbox/lists {name} creates a list and goes to it (303). A refused name comes back
// in the form, as typed, with the reason (422).
func (h *Handler) createList(c *fiber.Ctx) error {
	name := c.FormValue("name")
	l, err := h.store.CreateList(c.UserContext(), sessionOf(c).AccountID, name)
	if err != nil {
		if models.ErrorCode(err) == models.CodeValidation {
			return h.renderLists(c, fiber.StatusUnprocessableEntity, nameForm{Name: name, Errors: []string{formMessage(err, listFields)}})
		}
		return h.inboxFailure(c, err)
	}
	return h.done(c, listPath(l.ID), true, "List “"+l.Name+"” created. Add contacts one by one or import a CSV file.")
}

// listPageView is a list's page data.
type listPageView struct {
	List *report.ListSummary
	Path string
	// Members is the page of members, searched by Q.
	Members        []memberRow
	Q, Cursor      string
	Next           string
	Find           string
	Picks          []pickRow
	SearchProblem  string
	Rename, Add    nameForm
	Upload         []string
	Owner          bool
	MaxUploadBytes int
}

// memberRow is a member with its name as the pages write it; pickRow a contact the add form found.
type (
	memberRow struct {
		report.ListMember
		Name string
	}
	pickRow struct {
		report.ContactPick
		Name string
	}
)

// MoreLink is the next page of members with the same search.
func (v listPageView) MoreLink() string {
	q := url.Values{"cursor": {v.Next}}
	if v.Q != "" {
		q.Set("q", v.Q)
	}
	return v.Path + "?" + q.Encode()
}

// MaxUpload is the largest file the import takes, in words ("10 MB").
func (v listPageView) MaxUpload() string { return megabytes(v.MaxUploadBytes) }

// contactListPage: GET /inbox/lists/{id} shows the list's members in the order added (?q= searches them,
// ?cursor= pages), the add form (?find= searches the account's contacts to pick one), the rename form
// and the import.
func (h *Handler) contactListPage(c *fiber.Ctx) error {
	return h.renderList(c, fiber.StatusOK, listPageView{})
}

// renderList shows the list's page with status, with the forms of v (as typed when refused).
func (h *Handler) renderList(c *fiber.Ctx, status int, v listPageView) error {
	sess := sessionOf(c)
	ctx := c.UserContext()
	page, err := pageOf(c)
	if err != nil {
		return h.inboxNotFound(c)
	}
	page.Limit = membersPageSize
	l, err := h.reports.List(ctx, sess.AccountID, c.Params("id"))
	if err != nil {
		return h.listMissing(c, err)
	}
	v.List, v.Path, v.Cursor, v.Owner, v.MaxUploadBytes = l, listPath(l.ID), page.Cursor, isOwner(sess), h.cfg.MaxBodyBytes
	v.Q, v.Find = strings.TrimSpace(c.Query("q")), strings.TrimSpace(c.Query("find"))
	if v.Rename.Name == "" && len(v.Rename.Errors) == 0 {
		v.Rename.Name = l.Name
	}
	members, next, err := h.reports.ListMembers(ctx, sess.AccountID, l.ID, v.Q, page)
	if err != nil {
		return h.searchFailed(c, &v, err)
	}
	picks, err := h.reports.FindContacts(ctx, sess.AccountID, l.ID, v.Find, contactPicks)
	if err != nil {
		return h.searchFailed(c, &v, err)
	}
	v.Next = next
	for i := range members {
		v.Members = append(v.Members, memberRow{ListMember: members[i], Name: contactName(&members[i].Contact, "")})
	}
	for i := range picks {
		v.Picks = append(v.Picks, pickRow{ContactPick: picks[i], Name: contactName(&picks[i].Contact, "")})
	}
	return h.render(c, status, "list", h.view(c, l.Name, "lists", v))
}

// searchFailed shows the list's page without results when a search cannot run (too long: 400).
func (h *Handler) searchFailed(c *fiber.Ctx, v *listPageView, err error) error {
	if models.ErrorCode(err) != models.CodeValidation {
		return h.inboxFailure(c, err)
	}
	v.Members, v.Picks, v.Next = nil, nil, ""
	v.SearchProblem = "The search is too long: " + sentence(strings.Replace(models.ErrorMessage(err), "q ", "it ", 1))
	return h.render(c, fiber.StatusBadRequest, "list", h.view(c, v.List.Name, "lists", *v))
}

// listMissing answers for a list that is not the account's: the 404 page.
func (h *Handler) listMissing(c *fiber.Ctx, err error) error {
	if models.ErrorCode(err) == models.CodeNotFound {
		return h.inboxNotFound(c)
	}
	return h.inboxFailure(c, err)
}

// renameList: POST /inbox/lists/{id}/rename {name} renames the list (303 to its page); a refused name
// comes back in the form as typed (422).
func (h *Handler) renameList(c *fiber.Ctx) error {
	name := c.FormValue("name")
	l, err := h.store.RenameList(c.UserContext(), sessionOf(c).AccountID, c.Params("id"), name)
	switch {
	case models.ErrorCode(err) == models.CodeValidation:
		return h.renderList(c, fiber.StatusUnprocessableEntity, listPageView{Rename: nameForm{Name: name, Errors: []string{formMessage(err, listFields)}}})
	case err != nil:
		return h.listMissing(c, err)
	}
	return h.done(c, listPath(l.ID)+"#rename", true, "Renamed to “"+l.Name+"”.")
}

// addListMember: POST /inbox/lists/{id}/members adds a contact to the list, as POST
// /v1/lists/{id}/contacts does (the list's live campaigns send it their opening): contactId from the
// search's Add, or contact, typed: a contact id, a phone number (read as the API reads one) or an
// email. A contact that cannot be found comes back in the form as typed, with why (422).
func (h *Handler) addListMember(c *fiber.Ctx) error {
	sess := sessionOf(c)
	ctx := c.UserContext()
	listID := strings.Clone(c.Params("id"))
	if _, err := h.store.ListByID(ctx, sess.AccountID, listID); err != nil {
		return h.listMissing(c, err)
	}
	typed := strings.TrimSpace(c.FormValue("contact"))
	id := strings.TrimSpace(c.FormValue("contactId"))
	if id == "" {
		var problem string
		id, problem = h.contactByTyped(ctx, sess.AccountID, typed)
		if problem != "" {
			return h.renderList(c, fiber.StatusUnprocessableEntity, listPageView{Add: nameForm{Name: typed, Errors: []string{problem}}})
		}
	}
	res, err := h.app.AddToList(ctx, sess.AccountID, listID, []string{id})
	if err != nil {
		return h.actionFailed(c, listPath(listID)+"#add", err)
	}
	if len(res.Members) == 0 {
		return h.renderList(c, fiber.StatusUnprocessableEntity, listPageView{Add: nameForm{Name: typed,
			Errors: []string{"That contact is not in this account."}}})
	}
	name := id
	if ct, err := h.store.ContactByID(ctx, sess.AccountID, id); err == nil {
		name = contactName(ct, "")
	}
	if len(res.Added) == 0 {
		return h.done(c, listPath(listID)+"#add", true, name+" is on the list already.")
	}
	return h.done(c, listPath(listID)+"#add", true, name+" added to the list.")
}

// contactByTyped finds the contact a person typed: its id, its phone or its email. It returns the
// contact's id, or why there is none, in the form's words.
func (h *Handler) contactByTyped(ctx context.Context, accountID, typed string) (id, problem string) {
	var (
		ct  *models.Contact
		err error
	)
	switch {
	case typed == "":
		return "", "Write the contact's phone number, email or id, or search for it and press Add."
	case strings.HasPrefix(typed, "ct_"):
		ct, err = h.store.ContactByID(ctx, accountID, typed)
	case strings.Contains(typed, "@"):
		ct, err = h.store.ContactByEmail(ctx, accountID, typed)
	default:
		ct, err = h.store.ContactByPhone(ctx, accountID, typed)
	}
	if err == nil {
		return ct.ID, ""
	}
	switch models.ErrorCode(err) {
	case models.CodeNotFound:
		return "", "No contact of this account has “" + typed + "” as its id, phone or email. Contacts come in through the API, a conversation or an import."
	case models.CodeValidation, models.CodeInvalidPhone:
		return "", sentence(models.ErrorMessage(err))
	}
	return "", "The contact could not be looked up just now; try again in a moment."
}

// removeListMember: POST /inbox/lists/{id}/members/{contactId}/remove takes the contact off the list,
// as DELETE /v1/lists/{id}/contacts/{contactId} does: the openings its campaigns had not written yet
// are skipped. Back to the list's page (303), with the search and page it was on.
func (h *Handler) removeListMember(c *fiber.Ctx) error {
	sess := sessionOf(c)
	ctx := c.UserContext()
	listID, contactID := strings.Clone(c.Params("id")), strings.Clone(c.Params("contactId"))
	back, q := listPath(listID), url.Values{}
	for _, name := range []string{"q", "cursor"} {
		if v := c.FormValue(name); v != "" {
			q.Set(name, v)
		}
	}
	if len(q) > 0 {
		back += "?" + q.Encode()
	}
	name := contactID
	if ct, err := h.store.ContactByID(ctx, sess.AccountID, contactID); err == nil {
		name = contactName(ct, "")
	}
	if err := h.app.RemoveFromList(ctx, sess.AccountID, listID, contactID); err != nil {
		if models.ErrorCode(err) == models.CodeNotFound {
			if _, listErr := h.store.ListByID(ctx, sess.AccountID, listID); listErr == nil {
				// The list is there: the contact was not on it (removed meanwhile, or never).
				return h.done(c, back+"#members", false, name+" is not on this list.")
			}
		}
		return h.actionFailed(c, back, err)
	}
	return h.done(c, back+"#members", true, name+" removed from the list. Openings its campaigns had not sent yet will not be sent.")
}

// consentExport: GET /inbox/consent.csv is GET /v1/consent/export for the inbox's owners: every
// consent event of the account as CSV (report.ConsentExportHeader), oldest first, streamed. The export
// covers the whole account: it has no filter by list.
func (h *Handler) consentExport(c *fiber.Ctx) error {
	sess := sessionOf(c)
	if !isOwner(sess) {
		return h.render(c, fiber.StatusForbidden, "problem", h.view(c, "Not allowed", "lists",
			problemView{Heading: "Not allowed", Text: "Only the account's owners can export the consent records."}))
	}
	// The whole ledger: GET /v1/consent/export's range when from and to are left out.
	accountID, from, to := sess.AccountID, time.Time{}, time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
	return web.StreamCSV(c, h.log.With("account_id", accountID), "consent export", "consent.csv", report.ConsentExportHeader,
		func(ctx context.Context, write func([]string) error) error {
			return h.reports.ExportConsent(ctx, accountID, from, to, func(r *report.ConsentExportRow) error { return write(r.Record()) })
		})
}
