package app

import (
	"context"

	"funnelchat/models"
)

// The team's side of conversations (README, "The inbox"): availability, assignment, private notes and
// canned replies. An API key acts as the account; the inbox, as the signed-in user.

// SetAvailable says whether the account's user takes hand-offs in turn. Errors: those of
// models.Store.SetAvailable.
func (a *App) SetAvailable(ctx context.Context, accountID, userID string, available bool) (*models.TeamMember, error) {
	return a.store.SetAvailable(ctx, accountID, userID, available)
}

// Assign gives the conversation with the contact to a user of the account (nil: unassigned) and
// returns the new assignee. Errors: those of models.Store.Assign.
func (a *App) Assign(ctx context.Context, accountID, contactID string, userID *string) (*models.Assignee, error) {
	return a.store.Assign(ctx, accountID, contactID, userID)
}

// AddNote leaves a private note on the conversation with the contact, written by the account's user
// authorID. Errors: those of models.Store.AddNote.
func (a *App) AddNote(ctx context.Context, accountID, contactID, authorID, body string) (*models.Note, error) {
	return a.store.AddNote(ctx, accountID, contactID, authorID, body)
}

// SaveCannedReply creates a canned reply (id "") or replaces one's shortcut and body. Errors: those of
// models.Store.SaveCannedReply.
func (a *App) SaveCannedReply(ctx context.Context, accountID, id, shortcut, body string) (*models.CannedReply, error) {
	return a.store.SaveCannedReply(ctx, accountID, id, shortcut, body)
}

// DeleteCannedReply deletes one of the account's canned replies. Errors: those of
// models.Store.DeleteCannedReply.
func (a *App) DeleteCannedReply(ctx context.Context, accountID, id string) error {
	return a.store.DeleteCannedReply(ctx, accountID, id)
}
