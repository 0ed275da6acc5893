package app

import (
	"context"

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

// ImportContacts adds parsed CSV rows to a list and queues the openings they trigger. Errors: those of
// ImportContacts.
func (a *App) ImportContacts(ctx context.Context, accountID, listID string, contacts []models.ContactInput, rowErrors []models.CSVRowError) (*models.ImportResult, error) {
	res, err := a.store.ImportContacts(ctx, accountID, listID, contacts, rowErrors)
	if err != nil {
		return nil, err
	}
	a.queueOpenings(ctx, res.Sends)
	return res, nil
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
