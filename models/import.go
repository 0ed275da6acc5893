package models

import (
	"context"
	"fmt"
)

// ImportResult counts what an import did: contacts added to the list, contacts that were on it
// already, and rows that were not valid; Sends are the campaign openings the additions triggered.
type ImportResult struct {
	Imported int           `json:"imported"`
	Existing int           `json:"existing"`
	Invalid  int           `json:"invalid"`
	Errors   []CSVRowError `json:"errors"`
	Sends    []DueSend     `json:"-"`
}

// ImportContacts creates (or finds) each contact and adds them to the list, which counts as adding
// them by hand: live campaigns of the list are triggered. Errors: NOT_FOUND for the list.
func (s *Store) ImportContacts(ctx context.Context, accountID, listID string, contacts []ContactInput, rowErrors []CSVRowError) (*ImportResult, error) {
	if _, err := s.ListByID(ctx, accountID, listID); err != nil {
		return nil, err
	}
	res := &ImportResult{Invalid: len(rowErrors), Errors: rowErrors}
	if res.Errors == nil {
		res.Errors = []CSVRowError{}
	}
	ids := make([]string, 0, MaxBatchContacts)
	flush := func() error {
		if len(ids) == 0 {
			return nil
		}
		added, err := s.AddToList(ctx, accountID, listID, ids)
		if err != nil {
			return err
		}
		res.Imported += len(added.Added)
		res.Existing += len(added.Existing)
		res.Sends = append(res.Sends, added.Sends...)
		ids = ids[:0]
		return nil
	}
	for _, in := range contacts {
		c, _, err := s.CreateOrGetContact(ctx, accountID, in)
		if err != nil {
			return nil, fmt.Errorf("import contacts: %w", err)
		}
		if ids = append(ids, c.ID); len(ids) == MaxBatchContacts {
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
