package models

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/uptrace/bun"
)

// List is a named group of contacts; campaigns are linked to lists.
type List struct {
	bun.BaseModel `bun:"table:lists"`

	ID        string    `bun:"id,pk" json:"id"`
	AccountID string    `bun:"account_id" json:"-"`
	Name      string    `bun:"name" json:"name"`
	CreatedAt time.Time `bun:"created_at" json:"createdAt"`
}

// ListMember records that a contact is on a list since AddedAt.
type ListMember struct {
	bun.BaseModel `bun:"table:list_members"`

	ID        string    `bun:"id,pk" json:"-"`
	ListID    string    `bun:"list_id" json:"listId"`
	ContactID string    `bun:"contact_id" json:"contactId"`
	AddedAt   time.Time `bun:"added_at" json:"addedAt"`
}

// Batch limits for adding contacts to a list in one call.
const MaxBatchContacts = 1000

const maxListNameLength = 200

// listName is a list's name as stored: trimmed, required, text, at most maxListNameLength characters.
// Creating and renaming a list both check it here. Errors: VALIDATION_ERROR.
func listName(name string) (string, error) {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return "", Errorf(CodeValidation, "name is required")
	case !utf8.ValidString(name) || strings.ContainsRune(name, 0):
		return "", Errorf(CodeValidation, "name must be valid UTF-8 text")
	case utf8.RuneCountInString(name) > maxListNameLength:
		return "", Errorf(CodeValidation, "name must be at most %d characters", maxListNameLength)
	}
	return name, nil
}

// CreateList creates a list named name. Errors: VALIDATION_ERROR.
func (s *Store) CreateList(ctx context.Context, accountID, name string) (*List, error) {
	name, err := listName(name)
	if err != nil {
		return nil, err
	}
	l := &List{ID: newID(prefixList), AccountID: accountID, Name: name, CreatedAt: now()}
	if _, err := s.db.NewInsert().Model(l).Exec(ctx); err != nil {
		return nil, fmt.Errorf("create list: %w", err)
	}
	return l, nil
}

// RenameList gives the account's list a new name. Errors: VALIDATION_ERROR, NOT_FOUND (also for
// another account's list).
func (s *Store) RenameList(ctx context.Context, accountID, id, name string) (*List, error) {
	name, err := listName(name)
	if err != nil {
		return nil, err
	}
	if id == "" || len(id) > maxIDLength {
		return nil, notFound("list")
	}
	l := new(List)
	err = s.db.NewUpdate().Model(l).Set("name = ?", name).Where("account_id = ? AND id = ?", accountID, id).
		Returning(s.columnsOf((*List)(nil), "")).Scan(ctx)
	if isNoRows(err) {
		return nil, notFound("list")
	}
	if err != nil {
		return nil, fmt.Errorf("rename list: %w", err)
	}
	return l, nil
}

// ListByID returns the account's list with id, or NOT_FOUND (also for another account's list).
func (s *Store) ListByID(ctx context.Context, accountID, id string) (*List, error) {
	return listByID(ctx, s.db, accountID, id)
}

func listByID(ctx context.Context, db bun.IDB, accountID, id string) (*List, error) {
	if id == "" || len(id) > maxIDLength {
		return nil, notFound("list")
	}
	l := new(List)
	err := db.NewSelect().Model(l).Where("account_id = ? AND id = ?", accountID, id).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound("list")
	}
	if err != nil {
		return nil, fmt.Errorf("list by id: %w", err)
	}
	return l, nil
}

// Lists returns one page of the account's lists, oldest first.
func (s *Store) Lists(ctx context.Context, accountID string, page Page) ([]List, string, error) {
	var lists []List
	q := s.db.NewSelect().Model(&lists).Where("account_id = ?", accountID).Order("id").Limit(int64(page.Limit) + 1)
	if page.Cursor != "" {
		q = q.Where("id > ?", page.Cursor)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, "", fmt.Errorf("lists: %w", err)
	}
	lists, next := cutPage(lists, page, func(i int) string { return lists[i].ID })
	return lists, next, nil
}

// AddResult tells, for a batch add, which contacts were added, were already members, or do not exist in
// the account. Members holds the membership of every added or existing contact, in input order.
type AddResult struct {
	Added    []string
	Existing []string
	NotFound []string
	Members  []ListMember
	// Sends are the campaign opening messages the added contacts are now owed, for the caller to
	// enqueue after the commit (the sweep enqueues them if it cannot).
	Sends []DueSend
}

// AddToList adds contacts to a list. A contact already on the list is reported as existing and
// triggers nothing; ids that are not the account's contacts are reported in NotFound. Errors: NOT_FOUND
// for the list, VALIDATION_ERROR for an empty or oversized batch.
func (s *Store) AddToList(ctx context.Context, accountID, listID string, contactIDs []string) (*AddResult, error) {
	ids := dedupe(contactIDs)
	if len(ids) == 0 {
		return nil, Errorf(CodeValidation, "contactIds must name at least one contact")
	}
	if len(ids) > MaxBatchContacts {
		return nil, Errorf(CodeValidation, "contactIds may name at most %d contacts", MaxBatchContacts)
	}
	res := &AddResult{Added: []string{}, Existing: []string{}, NotFound: []string{}}
	err := s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		*res = AddResult{Added: []string{}, Existing: []string{}, NotFound: []string{}} // a retried tx starts over
		if _, err := listByID(ctx, tx, accountID, listID); err != nil {
			return err
		}
		known, err := accountContactIDs(ctx, tx, accountID, ids)
		if err != nil {
			return err
		}
		// Members are inserted in id order (the lock order in tx.go): two batches of the same
		// contacts in different orders would otherwise each wait for the other's uncommitted rows.
		// The answer lists them in the caller's order.
		added, members := map[string]bool{}, map[string]ListMember{}
		for _, id := range slices.Sorted(slices.Values(ids)) {
			if !known[id] {
				continue
			}
			m := &ListMember{ID: newID(prefixMember), ListID: listID, ContactID: id, AddedAt: now()}
			r, err := tx.NewInsert().Model(m).On("CONFLICT DO NOTHING").Exec(ctx)
			if err != nil {
				return err
			}
			if n, _ := r.RowsAffected(); n == 1 {
				added[id], members[id] = true, *m
				continue
			}
			if err := tx.NewSelect().Model(m).Where("list_id = ? AND contact_id = ?", listID, id).Scan(ctx); err != nil {
				return err
			}
			members[id] = *m
		}
		for _, id := range ids {
			switch m, ok := members[id]; {
			case !ok:
				res.NotFound = append(res.NotFound, id)
			case added[id]:
				res.Added = append(res.Added, id)
				res.Members = append(res.Members, m)
			default:
				res.Existing = append(res.Existing, id)
				res.Members = append(res.Members, m)
			}
		}
		if len(res.Added) == 0 {
			return nil
		}
		res.Sends, err = triggerCampaigns(ctx, tx, accountID, listID, res.Added)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("add to list: %w", err)
	}
	return res, nil
}

// ListContacts returns one page of a list's contacts in the order they were added. Errors: NOT_FOUND.
func (s *Store) ListContacts(ctx context.Context, accountID, listID string, page Page) ([]Contact, string, error) {
	if _, err := s.ListByID(ctx, accountID, listID); err != nil {
		return nil, "", err
	}
	var rows []struct {
		MemberID string `bun:"member_id"`
		Contact  `bun:",extend"`
	}
	q := s.db.NewSelect().
		TableExpr("list_members AS m").
		Join("JOIN contacts AS c ON c.id = m.contact_id").
		ColumnExpr("m.id AS member_id, "+s.columnsOf((*Contact)(nil), "c")).
		Where("m.list_id = ?", listID).
		Order("m.id").
		Limit(int64(page.Limit) + 1)
	if page.Cursor != "" {
		q = q.Where("m.id > ?", page.Cursor)
	}
	if err := q.Scan(ctx, &rows); err != nil {
		return nil, "", fmt.Errorf("list contacts: %w", err)
	}
	rows, next := cutPage(rows, page, func(i int) string { return rows[i].MemberID })
	contacts := make([]Contact, len(rows))
	for i := range rows {
		contacts[i] = rows[i].Contact
	}
	return contacts, next, nil
}

func accountContactIDs(ctx context.Context, db bun.IDB, accountID string, ids []string) (map[string]bool, error) {
	var found []string
	err := db.NewSelect().Model((*Contact)(nil)).Column("id").
		Where("account_id = ? AND id IN (?)", accountID, bun.In(ids)).
		Scan(ctx, &found)
	if err != nil {
		return nil, err
	}
	known := make(map[string]bool, len(found))
	for _, id := range found {
		known[id] = true
	}
	return known, nil
}

func dedupe(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}
