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

// cutPage ends a page read with Limit+1 rows (the extra row tells that there is a next page): it
// returns the page's rows and the cursor of the next page, key(i) of its last row i ("" when there is
// none).
func cutPage[T any](rows []T, page Page, key func(i int) string) ([]T, string) {
	if len(rows) <= page.Limit {
		return rows, ""
	}
	return rows[:page.Limit], key(page.Limit - 1)
}

// CutPage is cutPage for the read models outside this package (models/report), so that every listing
// ends its pages the same way.
func CutPage[T any](rows []T, page Page, key func(i int) string) ([]T, string) {
	return cutPage(rows, page, key)
}
