package models

// Page asks for one page of a keyset-paginated listing: at most Limit rows after the opaque Cursor
// (the nextCursor of the previous page; empty for the first page).
type Page struct {
	Limit  int
	Cursor string
}

// Paging bounds (README, "Rate limits", where paged listings are described).
const (
	DefaultPageLimit = 50
	MaxPageLimit     = 200
)
