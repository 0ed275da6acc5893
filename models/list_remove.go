package models

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
)

// ReasonRemovedFromList is the detail (GET /v1/campaigns/{id}/sends' reason) of a send skipped because
// its contact was taken off the campaign's list before the opening was written (RemoveFromList); a
// code alone, as OPTED_OUT is for a suppressed send, since the status says the rest.
const ReasonRemovedFromList = "REMOVED_FROM_LIST"

// RemoveFromList takes the contact off the list (DELETE /v1/lists/{id}/contacts/{contactId}, the
// inbox's Remove) and ends what the list's campaigns still owe it (docs/campaigns.md, "Removing a
// contact from a list"):
//
//   - an opening not written yet (queued, held by a pause, or deferred by quiet hours) is skipped with
//     ReasonRemovedFromList, so it is never sent;
//   - an opening already written (pending: it is being delivered) goes, as it was handed over before
//     the removal; its send, and a sent one, get no more follow-ups.
//
// Both conditions are in the writes: the send's UPDATE changes it only while it is still unwritten, and
// WriteOpening changes a send only while it is queued or deferred. Each transaction locks the contact
// first (tx.go), so on PostgreSQL they run one after the other: an opening the worker is writing
// while the contact is removed is either written before (and goes) or finds its send skipped (and is
// not written), never both. Re-adding the contact later owes nothing again: a contact gets a
// campaign's opening at most once.
//
// Errors: NOT_FOUND for a list or contact that is not the account's, and for a contact that is not on
// the list, each with its own message.
func (s *Store) RemoveFromList(ctx context.Context, accountID, listID, contactID string) error {
	err := s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if _, err := listByID(ctx, tx, accountID, listID); err != nil {
			return err
		}
		if err := s.lockAccountContact(ctx, tx, accountID, contactID); err != nil {
			return err
		}
		res, err := tx.NewDelete().Model((*ListMember)(nil)).Where("list_id = ? AND contact_id = ?", listID, contactID).Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return Errorf(CodeNotFound, "the contact is not on this list")
		}
		return endListSends(ctx, tx, listID, contactID)
	})
	if err != nil {
		return fmt.Errorf("remove from list: %w", err)
	}
	return nil
}

// lockAccountContact locks the account's contact first in tx (tx.go's lock order; the lock
// lockContactFirst takes), or answers NOT_FOUND when the contact is not the account's.
func (s *Store) lockAccountContact(ctx context.Context, tx bun.IDB, accountID, contactID string) error {
	if contactID == "" || len(contactID) > maxIDLength {
		return notFound("contact")
	}
	q := tx.NewSelect().Model((*Contact)(nil)).Column("id").Where("account_id = ? AND id = ?", accountID, contactID)
	if !s.IsSQLite() {
		q = q.For("NO KEY UPDATE")
	}
	var id string
	if err := q.Scan(ctx, &id); err != nil {
		if isNoRows(err) {
			return notFound("contact")
		}
		return err
	}
	return nil
}

// endListSends ends what the campaigns of the list owe the contact, in tx, which holds the contact's
// lock: unwritten openings are skipped, and no send of theirs gets a follow-up any more.
func endListSends(ctx context.Context, tx bun.IDB, listID, contactID string) error {
	campaigns := tx.NewSelect().TableExpr("campaigns").Column("id").Where("list_id = ?", listID)
	_, err := tx.NewUpdate().Model((*CampaignSend)(nil)).
		Set("status = ?", SendSkipped).Set("detail = ?", ReasonRemovedFromList).Set("status_at = ?", now()).
		Set("follow_ups_done = ?", true).Set("next_follow_up_at = NULL").
		Where("contact_id = ? AND status IN (?)", contactID, bun.In(unwrittenSendStatuses)).
		Where("campaign_id IN (?)", campaigns).Exec(ctx)
	if err != nil {
		return fmt.Errorf("skip openings: %w", err)
	}
	_, err = tx.NewUpdate().Model((*CampaignSend)(nil)).
		Set("follow_ups_done = ?", true).Set("next_follow_up_at = NULL").
		Where("contact_id = ? AND follow_ups_done = ?", contactID, false).
		Where("campaign_id IN (?)", campaigns).Exec(ctx)
	if err != nil {
		return fmt.Errorf("end follow-ups: %w", err)
	}
	return nil
}
