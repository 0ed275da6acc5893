package report

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"funnelchat/models"
)

// The inbox's list pages: the lists with their member counts, a list's members (paged, searchable),
// and the account's contacts to pick one to add.

// ListSummary is a list with how many contacts are on it.
type ListSummary struct {
	models.List `bun:",extend"`
	Members     int `bun:"members"`
}

// listSummaries selects the account's lists with their member counts.
func (r *Reader) listSummaries(accountID string) *bun.SelectQuery {
	return r.db.NewSelect().TableExpr("lists AS l").
		ColumnExpr(r.store.ColumnsOf((*models.List)(nil), "l")).
		ColumnExpr("(SELECT count(*) FROM list_members AS m WHERE m.list_id = l.id) AS members").
		Where("l.account_id = ?", accountID)
}

// Lists returns one page of the account's lists, oldest first, with their member counts.
func (r *Reader) Lists(ctx context.Context, accountID string, page models.Page) ([]ListSummary, string, error) {
	var lists []ListSummary
	q := r.listSummaries(accountID).Order("l.id").Limit(int64(page.Limit) + 1)
	if page.Cursor != "" {
		q = q.Where("l.id > ?", page.Cursor)
	}
	if err := q.Scan(ctx, &lists); err != nil {
		return nil, "", fmt.Errorf("lists: %w", err)
	}
	lists, next := models.CutPage(lists, page, func(i int) string { return lists[i].ID })
	return lists, next, nil
}

// List returns the account's list with its member count. Errors: NOT_FOUND (another account's too).
func (r *Reader) List(ctx context.Context, accountID, listID string) (*ListSummary, error) {
	if _, err := r.store.ListByID(ctx, accountID, listID); err != nil {
		return nil, err
	}
	l := new(ListSummary)
	if err := r.listSummaries(accountID).Where("l.id = ?", listID).Scan(ctx, l); err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	return l, nil
}

// ListMember is a contact on a list, with when it was added.
type ListMember struct {
	MemberID       string    `bun:"member_id"`
	AddedAt        time.Time `bun:"added_at"`
	models.Contact `bun:",extend"`
}

// ListMembers returns one page of the list's contacts in the order they were added, only those the
// contact search q finds when it is not empty (contact_search.go). Errors: NOT_FOUND for the list,
// VALIDATION_ERROR for a search that is too long.
func (r *Reader) ListMembers(ctx context.Context, accountID, listID, q string, page models.Page) ([]ListMember, string, error) {
	if err := checkContactQuery(q); err != nil {
		return nil, "", err
	}
	if _, err := r.store.ListByID(ctx, accountID, listID); err != nil {
		return nil, "", err
	}
	var rows []ListMember
	sel := r.db.NewSelect().TableExpr("list_members AS m").
		Join("JOIN contacts AS c ON c.id = m.contact_id").
		ColumnExpr("m.id AS member_id, m.added_at, "+r.store.ColumnsOf((*models.Contact)(nil), "c")).
		Where("m.list_id = ?", listID).
		Order("m.id").Limit(int64(page.Limit) + 1)
	if page.Cursor != "" {
		sel = sel.Where("m.id > ?", page.Cursor)
	}
	if match, args := contactMatches(r.db, accountID, q, nil); match != "" {
		sel = sel.Where("c.id IN ("+match+")", args...)
	}
	if err := sel.Scan(ctx, &rows); err != nil {
		return nil, "", fmt.Errorf("list members: %w", err)
	}
	rows, next := models.CutPage(rows, page, func(i int) string { return rows[i].MemberID })
	return rows, next, nil
}

// ContactPick is a contact the search found, and whether it is on the list already.
type ContactPick struct {
	models.Contact `bun:",extend"`
	OnList         bool `bun:"on_list"`
}

// FindContacts returns up to limit of the account's contacts that the contact search q
// finds (contact_search.go), oldest first, each saying whether it is on the list: the choices for adding one.
// An empty q finds nothing. Errors: VALIDATION_ERROR for a search that is too long.
func (r *Reader) FindContacts(ctx context.Context, accountID, listID, q string, limit int) ([]ContactPick, error) {
	if err := checkContactQuery(q); err != nil {
		return nil, err
	}
	match, args := contactMatches(r.db, accountID, q, nil)
	if match == "" {
		return nil, nil
	}
	var picks []ContactPick
	err := r.db.NewSelect().TableExpr("contacts AS c").
		ColumnExpr(r.store.ColumnsOf((*models.Contact)(nil), "c")).
		ColumnExpr("EXISTS (SELECT 1 FROM list_members AS m WHERE m.list_id = ? AND m.contact_id = c.id) AS on_list", listID).
		Where("c.account_id = ?", accountID).Where("c.id IN ("+match+")", args...).
		Order("c.id").Limit(int64(limit)).Scan(ctx, &picks)
	if err != nil {
		return nil, fmt.Errorf("find contacts: %w", err)
	}
	return picks, nil
}
