package app

import (
	"context"

	"funnelchat/models"
)

// CreateContact creates a contact, or finds the existing one (created tells which), and records the
// consent evidence on it when given (consent must have passed Normalize): the evidence is recorded
// on an existing contact too, as the contact comes in again. Errors: those of
// models.Store.CreateOrGetContact, and of SetConsent (nothing is undone: the contact stays).
func (a *App) CreateContact(ctx context.Context, accountID string, in models.ContactInput, consent *models.ConsentInput) (contact *models.Contact, created bool, err error) {
	contact, created, err = a.store.CreateOrGetContact(ctx, accountID, in)
	if err != nil {
		return nil, false, err
	}
	if consent != nil {
		if contact, err = a.SetConsent(ctx, accountID, contact.ID, *consent); err != nil {
			return nil, false, err
		}
	}
	return contact, created, nil
}

// EditContact sets a contact's names, email and time zone, as the team types them (the inbox's contact
// page). Errors: those of models.Store.EditContact.
func (a *App) EditContact(ctx context.Context, accountID, contactID string, in models.ContactEdit) (*models.Contact, error) {
	return a.store.EditContact(ctx, accountID, contactID, in)
}
