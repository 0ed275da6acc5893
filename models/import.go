package models

import (
	"context"
	"fmt"
	"io"
)

// ImportResult counts what an import did, one count for each data row of the file, so that
// Imported + Existing + Invalid is the number of rows (blank lines are not rows): Imported are the rows
// whose contact was added to the list, Existing the rows whose contact was on it already (before the
// import, or by an earlier row of the same import that named the same contact), Invalid the rows that
// were not valid. IgnoredColumns are the header's names of the columns the import did not read. Sends
// are the campaign openings the additions triggered. Created and Updated count contacts, not rows:
// the contacts the import created, and the existing ones whose time zone a row changed (an existing
// contact's names are kept).
type ImportResult struct {
	Imported       int           `json:"imported"`
	Existing       int           `json:"existing"`
	Invalid        int           `json:"invalid"`
	Created        int           `json:"created"`
	Updated        int           `json:"updated"`
	Errors         []CSVRowError `json:"errors"`
	IgnoredColumns []string      `json:"ignoredColumns"`
	Sends          []DueSend     `json:"-"`
}

// ImportContactCSV reads a CSV file of contacts (ParseContactCSV), a phone without a country code in
// the account's PhoneRegion, and imports its rows into the list (ImportContacts). Errors: NOT_FOUND for
// the list (before the file is read), those of ParseContactCSV.
func (s *Store) ImportContactCSV(ctx context.Context, accountID, listID string, r io.Reader) (*ImportResult, error) {
	if _, err := s.ListByID(ctx, accountID, listID); err != nil {
		return nil, err
	}
	region, err := s.PhoneRegion(ctx, accountID)
	if err != nil {
		return nil, fmt.Errorf("import contacts: %w", err)
	}
	file, err := ParseContactCSV(r, region)
	if err != nil {
		return nil, err
	}
	return s.importRows(ctx, accountID, listID, file)
}

// ImportContacts creates (or finds) the contact of each row of file and adds them to the list, which
// counts as adding them by hand: live campaigns of the list are triggered. file.Contacts holds one
// entry per valid row, repeats included (as ParseContactCSV returns them), and file.Errors one per
// invalid row: each lands in exactly one count of the result. A row naming a contact that an earlier
// row named (the same phone, or without a phone the same email) counts as Existing; the first row's
// names are kept, as CreateOrGetContact keeps a contact's. Errors: NOT_FOUND for the list.
func (s *Store) ImportContacts(ctx context.Context, accountID, listID string, file *ContactCSV) (*ImportResult, error) {
	if _, err := s.ListByID(ctx, accountID, listID); err != nil {
		return nil, err
	}
	return s.importRows(ctx, accountID, listID, file)
}

// importRows is ImportContacts once the list is known to be the account's.
func (s *Store) importRows(ctx context.Context, accountID, listID string, file *ContactCSV) (*ImportResult, error) {
	res := &ImportResult{Invalid: len(file.Errors), Errors: file.Errors, IgnoredColumns: file.IgnoredColumns}
	if res.Errors == nil {
		res.Errors = []CSVRowError{}
	}
	if res.IgnoredColumns == nil {
		res.IgnoredColumns = []string{}
	}
	var (
		ids = make([]string, 0, MaxBatchContacts)
		// byIdentity spares a repeated row the database; named holds every contact a row named, which
		// also catches rows that name one contact differently (an input not yet normalized).
		byIdentity = make(map[string]string)
		named      = make(map[string]bool)
	)
	flush := func() error {
		if len(ids) == 0 {
			return nil
		}
		added, err := s.AddToList(ctx, accountID, listID, ids)
		if err != nil {
			return err
		}
		if len(added.NotFound) > 0 {
			// Contacts are never deleted, so this cannot happen; were it to, the counts would not add up.
			return fmt.Errorf("contacts %v vanished while being added", added.NotFound)
		}
		res.Imported += len(added.Added)
		res.Existing += len(added.Existing)
		res.Sends = append(res.Sends, added.Sends...)
		ids = ids[:0]
		return nil
	}
	for _, in := range file.Contacts {
		identity := "phone:" + in.Phone
		if in.Phone == "" {
			identity = "email:" + in.Email
		}
		id, ok := byIdentity[identity]
		if !ok {
			c, outcome, err := s.createOrGetContact(ctx, accountID, in)
			if err != nil {
				return nil, fmt.Errorf("import contacts: %w", err)
			}
			switch outcome {
			case contactCreated:
				res.Created++
			case contactUpdated:
				res.Updated++
			}
			id = c.ID
			byIdentity[identity] = id
		}
		if named[id] {
			res.Existing++ // on the list by now, through the earlier row
			continue
		}
		named[id] = true
		if ids = append(ids, id); len(ids) == MaxBatchContacts {
			if err := flush(); err != nil {
				return nil, fmt.Errorf("import contacts: %w", err)
			}
		}
	}
	if err := flush(); err != nil {
		return nil, fmt.Errorf("import contacts: %w", err)
	}
	return res, nil
}
