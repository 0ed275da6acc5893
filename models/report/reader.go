// Package report holds the read side that serves pages and exports: the campaign report and its CSV,
// the conversation list and one conversation, the failed deliveries and the inbox's counts, the
// consent export, and the lists with their members. These reads change with what a page or an export shows, never with what the
// service records, so they live apart from the store's writes (package models) and reach the database
// through the store's handle; they write nothing (README, "Layout").
package report

import (
	"github.com/uptrace/bun"

	"funnelchat/models"
)

// Reader runs the read-side queries over a store's database, and its lag-tolerant reads on a read
// replica when one is in use (see Route, replica.go).
type Reader struct {
	store *models.Store
	db    *bun.DB
	// replica serves the routed reads while it is close enough behind the primary; nil: none.
	replica  *Replica
	observer Observer
}

// New returns the reader over store, whose database and pool it shares.
func New(store *models.Store) *Reader {
	return &Reader{store: store, db: store.DB()}
}

// isSQLite reports whether the store runs on SQLite.
func (r *Reader) isSQLite() bool { return r.store.IsSQLite() }

// orEmpty is *p, or "" when p is nil.
func orEmpty(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// DB is the database the reader reads (for the tests' checks of what the triggers keep).
func (r *Reader) DB() *bun.DB { return r.db }
