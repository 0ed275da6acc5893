package models

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// ReaderAPI is the reader whose reads POST /v1/contacts/{id}/read records and GET /v1/conversations
// reports: the account's integration, apart from each inbox user's own.
const ReaderAPI = "api"

// conversationRead is how far one reader has read one conversation.
type conversationRead struct {
	bun.BaseModel `bun:"table:conversation_reads"`

	AccountID  string    `bun:"account_id,pk"`
	ReaderID   string    `bun:"reader_id,pk"`
	ContactID  string    `bun:"contact_id,pk"`
	LastReadID string    `bun:"last_read_id"`
	ReadAt     time.Time `bun:"read_at"`
}

// MarkRead records that the reader has read the account's conversation with the contact up to its
// newest message. Errors: NOT_FOUND (another account's contact too).
func (s *Store) MarkRead(ctx context.Context, accountID, readerID, contactID string) error {
	if _, err := s.ContactByID(ctx, accountID, contactID); err != nil {
		return err
	}
	var last sql.NullString
	if err := s.db.NewSelect().Model((*Message)(nil)).ColumnExpr("MAX(id)").Where("contact_id = ?", contactID).Scan(ctx, &last); err != nil {
		return fmt.Errorf("mark read: %w", err)
	}
	if !last.Valid {
		return nil // nothing to read yet
	}
	r := &conversationRead{AccountID: accountID, ReaderID: readerID, ContactID: contactID, LastReadID: last.String, ReadAt: now()}
	// Two tabs marking at once keep the newer mark.
	_, err := s.db.NewInsert().Model(r).
		On("CONFLICT (account_id, reader_id, contact_id) DO UPDATE").
		Set("last_read_id = EXCLUDED.last_read_id, read_at = EXCLUDED.read_at").
		Where("conversation_read.last_read_id < EXCLUDED.last_read_id").
		Exec(ctx)
	if err != nil {
		return fmt.Errorf("mark read: %w", err)
	}
	return nil
}
