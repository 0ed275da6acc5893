package report

import "funnelchat/models"

// ContactsSQL is the statement Contacts runs for the first page of q, for the benchmark's EXPLAIN.
func (r *Reader) ContactsSQL(accountID, q string, limit int) string {
	var rows []models.Contact
	return r.contactsQuery(r.db, accountID, q, models.Page{Limit: limit}).Model(&rows).String()
}

// SetFewStatusForTest sets how many conversations of a status are few enough for the list to find
// them through their index rather than by walking the messages (walkForStatus), until restore.
func SetFewStatusForTest(n int) (restore func()) {
	was := fewStatus
	fewStatus = n
	return func() { fewStatus = was }
}
