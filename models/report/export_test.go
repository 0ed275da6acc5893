package report

import "funnelchat/models"

// ContactsSQL is the statement Contacts runs for the first page of q, for the benchmark's EXPLAIN.
func (r *Reader) ContactsSQL(accountID, q string, limit int) string {
	var rows []models.Contact
	return r.contactsQuery(r.db, accountID, q, models.Page{Limit: limit}).Model(&rows).String()
}
