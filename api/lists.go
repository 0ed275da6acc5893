package api

import (
	"github.com/gofiber/fiber/v2"

	"funnelchat/models"
)

// createList: POST /v1/lists {"name"} -> 201 list.
func (s *Server) createList(c *fiber.Ctx) error {
	var req struct {
		Name *string `json:"name"`
	}
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if req.Name == nil {
		return models.Errorf(models.CodeValidation, "name is required")
	}
	l, err := s.store.CreateList(c.UserContext(), accountOf(c).ID, *req.Name)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(l)
}

// listLists: GET /v1/lists -> {"data":[list...],"nextCursor"}.
func (s *Server) listLists(c *fiber.Ctx) error {
	page, err := pageOf(c)
	if err != nil {
		return err
	}
	lists, next, err := s.store.Lists(c.UserContext(), accountOf(c).ID, page)
	if err != nil {
		return err
	}
	return c.JSON(pageBody(lists, next))
}

// getList: GET /v1/lists/{id}.
func (s *Server) getList(c *fiber.Ctx) error {
	l, err := s.store.ListByID(c.UserContext(), accountOf(c).ID, c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(l)
}

// addToList: POST /v1/lists/{id}/contacts with {"contactId"} (or "contact_id") or {"contactIds":[...]}.
// Single: 201 with the membership when added, 200 when already a member, 404 for an unknown contact.
// Batch: {"added","existing","notFound"}, 201 when at least one was added, else 200.
func (s *Server) addToList(c *fiber.Ctx) error {
	var req struct {
		ContactID      *string   `json:"contactId"`
		ContactIDSnake *string   `json:"contact_id"`
		ContactIDs     *[]string `json:"contactIds"`
		// Consent (single form only) is evidence recorded before the contact is added, so that the
		// opening the addition triggers already sees it.
		Consent *consentRequest `json:"consent"`
	}
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	single, err := oneOf("contactId", req.ContactID, "contact_id", req.ContactIDSnake)
	if err != nil {
		return err
	}
	batch := req.ContactIDs != nil
	switch {
	case batch && single != "":
		return models.Errorf(models.CodeValidation, "send either contactId or contactIds, not both")
	case !batch && single == "":
		return models.Errorf(models.CodeValidation, "contactId is required")
	case batch && req.Consent != nil:
		return models.Errorf(models.CodeValidation, "consent goes with the single form (contactId), one person's evidence at a time")
	}
	ids := []string{single}
	if batch {
		ids = *req.ContactIDs
		for i, id := range ids {
			if id == "" {
				return models.Errorf(models.CodeValidation, "contactIds[%d] must not be empty", i)
			}
		}
	}

	var res *models.AddResult
	if req.Consent != nil {
		in, err := req.Consent.input(c, "consent.")
		if err != nil {
			return err
		}
		res, err = s.app.AddToListWithConsent(c.UserContext(), accountOf(c).ID, c.Params("id"), single, in)
		if err != nil {
			return err
		}
	} else if res, err = s.app.AddToList(c.UserContext(), accountOf(c).ID, c.Params("id"), ids); err != nil {
		return err
	}
	status := fiber.StatusOK
	if len(res.Added) > 0 {
		status = fiber.StatusCreated
	}
	if batch {
		return c.Status(status).JSON(fiber.Map{"added": res.Added, "existing": res.Existing, "notFound": res.NotFound})
	}
	if len(res.Members) == 0 {
		return models.Errorf(models.CodeNotFound, "contact not found")
	}
	return c.Status(status).JSON(res.Members[0])
}

// listContacts: GET /v1/lists/{id}/contacts -> {"data":[contact...],"nextCursor"}, in the order added.
func (s *Server) listContacts(c *fiber.Ctx) error {
	page, err := pageOf(c)
	if err != nil {
		return err
	}
	contacts, next, err := s.store.ListContacts(c.UserContext(), accountOf(c).ID, c.Params("id"), page)
	if err != nil {
		return err
	}
	return c.JSON(pageBody(contacts, next))
}

// removeFromList: DELETE /v1/lists/{id}/contacts/{contactId} -> 204: the contact is off the list, and
// the openings the list's campaigns had not written for it are skipped (models.Store.RemoveFromList).
// 404 for an unknown (or another account's) list or contact, or a contact not on the list.
func (s *Server) removeFromList(c *fiber.Ctx) error {
	if err := s.app.RemoveFromList(c.UserContext(), accountOf(c).ID, c.Params("id"), c.Params("contactId")); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

// importContacts: POST /v1/lists/{id}/import, a multipart form with a CSV file (columns phone,
// first_name, last_name, email, time_zone, or their aliases) -> 200 {"imported","existing","invalid",
// "errors":[{row,error}],"ignoredColumns"}. Valid rows are kept and invalid ones reported; each row
// lands in one count (models.ImportResult). The additions trigger the list's live campaigns.
func (s *Server) importContacts(c *fiber.Ctx) error {
	ctx, acc := c.UserContext(), accountOf(c)
	if _, err := s.store.ListByID(ctx, acc.ID, c.Params("id")); err != nil {
		return err
	}
	form, err := c.MultipartForm()
	if err != nil {
		return models.Errorf(models.CodeValidation, "send the CSV as a multipart/form-data file field named file")
	}
	files := form.File["file"]
	if len(files) != 1 {
		return models.Errorf(models.CodeValidation, "send exactly one CSV file in the form field named file")
	}
	f, err := files[0].Open()
	if err != nil {
		return err
	}
	defer f.Close()
	res, err := s.app.ImportContactCSV(ctx, acc.ID, c.Params("id"), f)
	if err != nil {
		return err
	}
	return c.JSON(res)
}
