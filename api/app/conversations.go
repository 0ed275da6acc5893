package app

import (
	"context"

	"funnelchat/models"
)

// A conversation's state as the team handles it: read, its status (open, resolved, snoozed), the bot
// paused or resumed, alerts resolved, goals reached.

// MarkRead records that the reader (a user's id, or models.ReaderAPI) has read the account's
// conversation with the contact up to its newest message. Errors: those of models.Store.MarkRead.
func (a *App) MarkRead(ctx context.Context, accountID, readerID, contactID string) error {
	return a.store.MarkRead(ctx, accountID, readerID, contactID)
}

// SetBotActive pauses or resumes the bot for a contact and returns the contact; it queues nothing.
// Errors: those of models.Store.SetBotActive.
func (a *App) SetBotActive(ctx context.Context, accountID, contactID string, active bool) (*models.Contact, error) {
	return a.store.SetBotActive(ctx, accountID, contactID, active)
}

// ResolveAlert marks the account's alert dealt with, by a user's id or models.ReaderAPI; resolving it
// again changes nothing. Errors: those of models.Store.ResolveAlert.
func (a *App) ResolveAlert(ctx context.Context, accountID, alertID, by string) (*models.Alert, error) {
	return a.store.ResolveAlert(ctx, accountID, alertID, by)
}

// ReachGoal records, once, that the contact reached the goal of a campaign (created false: it was
// recorded before, and that record is returned); a new goal ends the contact's follow-ups of that
// campaign. Errors: those of models.Store.ReachGoal.
func (a *App) ReachGoal(ctx context.Context, accountID, contactID string, in models.GoalInput) (g *models.Goal, created bool, err error) {
	return a.store.ReachGoal(ctx, accountID, contactID, in)
}

// SetConversationStatus gives the account's conversation with the contact a status: open, resolved, or
// snoozed until a time; changed says whether it was not that already. Errors: those of
// models.Store.SetConversationStatus.
func (a *App) SetConversationStatus(ctx context.Context, accountID, contactID string, in models.ConversationStatusInput) (st *models.ConversationStatus, changed bool, err error) {
	return a.store.SetConversationStatus(ctx, accountID, contactID, in)
}
