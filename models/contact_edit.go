package models

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// ContactEdit is what the team sets on a contact by hand (the inbox's contact page): its names, email
// and time zone, each as given ("" clears it). The phone and the sender ids are the contact's identity
// and are not edited.
type ContactEdit struct {
	FirstName, LastName, Email, TimeZone string
}

// check validates every field and returns the contact's new values, or every problem at once (each
// a VALIDATION_ERROR naming its field), so that a form can list them all.
func (in ContactEdit) check() (*Contact, []error) {
	c := &Contact{}
	var problems []error
	var err error
	if c.FirstName, err = cleanName("firstName", in.FirstName); err != nil {
		problems = append(problems, err)
	}
	if c.LastName, err = cleanName("lastName", in.LastName); err != nil {
		problems = append(problems, err)
	}
	if email, err := NormalizeEmail(in.Email); err != nil {
		problems = append(problems, err)
	} else if email != "" {
		c.Email = &email
	}
	if tz := strings.TrimSpace(in.TimeZone); tz != "" {
		if err := ValidTimeZone(tz); err != nil {
			problems = append(problems, Errorf(CodeValidation, "timeZone %q is not an IANA time zone such as America/New_York", tz))
		} else {
			c.TimeZone = &tz
		}
	}
	return c, problems
}

// EditContact sets the account's contact's names, email and time zone (quiet hours follow the new
// zone from the next send on). A contact made through the API without a phone is known by its email,
// so it keeps one: the condition is in the write. Errors: VALIDATION_ERROR with every problem
// (ErrorMessages lists them), CONFLICT when another contact without a phone has the email, NOT_FOUND.
func (s *Store) EditContact(ctx context.Context, accountID, contactID string, in ContactEdit) (*Contact, error) {
	next, problems := in.check()
	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	if contactID == "" || len(contactID) > maxIDLength {
		return nil, notFound("contact")
	}
	q := s.db.NewUpdate().Model((*Contact)(nil)).
		Set("first_name = ?", next.FirstName).Set("last_name = ?", next.LastName).
		Set("email = ?", next.Email).Set("time_zone = ?", next.TimeZone).Set("updated_at = ?", now()).
		Where("account_id = ? AND id = ?", accountID, contactID)
	if next.Email == nil {
		q = q.Where("(phone IS NOT NULL OR origin <> ?)", originAPI)
	}
	res, err := q.Exec(ctx)
	if isUniqueViolation(err) {
		return nil, Errorf(CodeConflict, "another contact without a phone has the email %s", *next.Email)
	}
	if err != nil {
		return nil, fmt.Errorf("edit contact: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return nil, fmt.Errorf("edit contact: %w", err)
	} else if n == 0 {
		if _, err := s.ContactByID(ctx, accountID, contactID); err != nil {
			return nil, err
		}
		return nil, Errorf(CodeValidation, "email is required: the contact has no phone, and its email is how it is known")
	}
	return s.ContactByID(ctx, accountID, contactID)
}
