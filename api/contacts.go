package api

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"funnelchat/models"
)

// contactRequest accepts both body forms of POST /v1/contacts (README, "API at a glance"): the API page's camelCase and the funnel
// page's snake_case.
type contactRequest struct {
	FirstName      *string `json:"firstName"`
	FirstNameSnake *string `json:"first_name"`
	LastName       *string `json:"lastName"`
	LastNameSnake  *string `json:"last_name"`
	Phone          *string `json:"phone"`
	PhoneNumber    *string `json:"phone_number"`
	Email          *string `json:"email"`
	TimeZone       *string `json:"timeZone"`
	// Consent is evidence that the person agreed to be messaged (README, "Compliance").
	Consent *consentRequest `json:"consent"`
}

func (r *contactRequest) input() (models.ContactInput, error) {
	var in models.ContactInput
	var err error
	if in.FirstName, err = oneOf("firstName", r.FirstName, "first_name", r.FirstNameSnake); err != nil {
		return in, err
	}
	if in.LastName, err = oneOf("lastName", r.LastName, "last_name", r.LastNameSnake); err != nil {
		return in, err
	}
	if in.Phone, err = oneOf("phone", r.Phone, "phone_number", r.PhoneNumber); err != nil {
		return in, err
	}
	if r.Email != nil {
		in.Email = *r.Email
	}
	if r.TimeZone != nil {
		in.TimeZone = *r.TimeZone
	}
	return in, nil
}

// createContact: POST /v1/contacts -> 201 with a new contact, 200 with the existing one. With
// "consent", the evidence is recorded on the contact (new or existing) as opted_in (or the status it
// gives) before the answer.
func (s *Server) createContact(c *fiber.Ctx) error {
	var req contactRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	in, err := req.input()
	if err != nil {
		return err
	}
	// The evidence is checked before anything is stored.
	var consent *models.ConsentInput
	if req.Consent != nil {
		ci, err := req.Consent.input(c, "consent.")
		if err != nil {
			return err
		}
		consent = &ci
	}
	ctx, acc := c.UserContext(), accountOf(c)
	contact, created, err := s.app.CreateContact(ctx, acc.ID, in, consent)
	if err != nil {
		return err
	}
	status := fiber.StatusOK
	if created {
		status = fiber.StatusCreated
	}
	return c.Status(status).JSON(contact)
}

// findContact: GET /v1/contacts?phoneNumber=|email=|q= (exactly one). phoneNumber and email look one
// contact up: 200 with it, or 404. q searches (the contact search, models/report): 200 with a page of
// the contacts it finds, newest first ({"data","nextCursor"}; a blank q: every contact).
func (s *Server) findContact(c *fiber.Ctx) error {
	args := c.Context().QueryArgs()
	given := 0
	for _, name := range []string{"phoneNumber", "email", "q"} {
		if args.Has(name) {
			given++
		}
	}
	if given != 1 {
		return models.Errorf(models.CodeValidation, "give exactly one of the query parameters phoneNumber, email and q")
	}
	if args.Has("q") {
		return s.searchContacts(c)
	}
	hasEmail := args.Has("email")
	acc := accountOf(c)
	if hasEmail {
		contact, err := s.store.ContactByEmail(c.UserContext(), acc.ID, c.Query("email"))
		if err != nil {
			return err
		}
		return c.JSON(contact)
	}
	phone := c.Query("phoneNumber")
	// An unencoded + in a query string arrives as a space; a phone never starts with a space.
	if strings.HasPrefix(phone, " ") {
		phone = "+" + strings.TrimLeft(phone, " ")
	}
	contact, err := s.store.ContactByPhone(c.UserContext(), acc.ID, phone)
	if err != nil {
		return err
	}
	return c.JSON(contact)
}

// getContact: GET /v1/contacts/{id}.
func (s *Server) getContact(c *fiber.Ctx) error {
	contact, err := s.store.ContactByID(c.UserContext(), accountOf(c).ID, c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(contact)
}

// searchContacts: GET /v1/contacts?q=[&limit=&cursor=] -> {"data":[contact...],"nextCursor"}.
func (s *Server) searchContacts(c *fiber.Ctx) error {
	page, err := pageOf(c)
	if err != nil {
		return err
	}
	rows, next, err := s.reports.Contacts(c.UserContext(), accountOf(c).ID, c.Query("q"), page)
	if err != nil {
		return err
	}
	contacts := make([]*models.Contact, len(rows))
	for i := range rows {
		contacts[i] = rows[i].Contact
	}
	return c.JSON(pageBody(contacts, next))
}
