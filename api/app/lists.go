package app

import (
	"context"
	"io"

	"funnelchat/models"
)

// AddToList adds contacts to a list and queues the opening messages of the list's live campaigns that
// the additions trigger. Errors: those of AddToList.
func (a *App) AddToList(ctx context.Context, accountID, listID string, contactIDs []string) (*models.AddResult, error) {
	res, err := a.store.AddToList(ctx, accountID, listID, contactIDs)
	if err != nil {
		return nil, err
	}
	a.queueOpenings(ctx, res.Sends)
	return res, nil
}

// AddToListWithConsent records one contact's consent evidence (consent must have passed Normalize)
// and then adds the contact to the list as AddToList does: the evidence is recorded only when the
// list is the account's, and before the addition triggers anything. Errors: those of
// models.Store.ListByID (NOT_FOUND, nothing recorded), of SetConsent (nothing added) and of AddToList.
func (a *App) AddToListWithConsent(ctx context.Context, accountID, listID, contactID string, consent models.ConsentInput) (*models.AddResult, error) {
	if _, err := a.store.ListByID(ctx, accountID, listID); err != nil {
		return nil, err
	}
	if _, err := a.SetConsent(ctx, accountID, contactID, consent); err != nil {
		return nil, err
	}
	return a.AddToList(ctx, accountID, listID, []string{contactID})
}

// ImportContactCSV imports a CSV file of contacts into a list and queues the openings the additions
// trigger. Errors: those of models.Store.ImportContactCSV.
func (a *App) ImportContactCSV(ctx context.Context, accountID, listID string, file io.Reader) (*models.ImportResult, error) {
	res, err := a.store.ImportContactCSV(ctx, accountID, listID, file)
	if err != nil {
		return nil, err
	}
	a.queueOpenings(ctx, res.Sends)
	return res, nil
}

// ImportContacts imports the contacts of a CSV file already read (models.ParseContactCSVMapped, the
// inbox's import with the columns the user chose) into a list and queues the openings the additions
// trigger. Errors: those of models.Store.ImportContacts.
func (a *App) ImportContacts(ctx context.Context, accountID, listID string, file *models.ContactCSV) (*models.ImportResult, error) {
	res, err := a.store.ImportContacts(ctx, accountID, listID, file)
	if err != nil {
		return nil, err
	}
	a.queueOpenings(ctx, res.Sends)
	return res, nil
}

// RemoveFromList takes a contact off a list; the openings the list's campaigns had not written for it
// yet are skipped (models.Store.RemoveFromList). Errors: NOT_FOUND.
func (a *App) RemoveFromList(ctx context.Context, accountID, listID, contactID string) error {
	return a.store.RemoveFromList(ctx, accountID, listID, contactID)
}

// queueOpenings queues campaign opening messages owed after a commit. They are stored already, so a
// Redis failure only delays them until the sweep.
func (a *App) queueOpenings(ctx context.Context, sends []models.DueSend) {
	if len(sends) == 0 {
		return
	}
	enqCtx, cancel := context.WithTimeout(ctx, EnqueueTimeout)
	defer cancel()
	if err := a.queue.Openings(enqCtx, sends); err != nil {
		a.log.WarnContext(ctx, "opening messages stored, not all enqueued; the sweep will send them", "count", len(sends),
			"error", err.Error())
	}
}
