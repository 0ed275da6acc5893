package report

import (
	"time"

	"funnelchat/models"
)

// ContactsSQL is the statement Contacts runs for the first page of q, for the benchmark's EXPLAIN.
func (r *Reader) ContactsSQL(accountID, q string, limit int) string {
	var rows []models.Contact
	return r.contactsQuery(r.db, accountID, q, models.Page{Limit: limit}).Model(&rows).String()
}

// ParseLSN is parseLSN, for its table test.
var ParseLSN = parseLSN

// PruneSamples runs pruneSamples over samples taken ages ago (oldest first) on a replica allowed
// maxLag, and returns the ages of those kept, oldest first.
func PruneSamples(maxLag time.Duration, ages []time.Duration) []time.Duration {
	p := &Replica{maxLag: maxLag, epoch: time.Now().Add(-24 * time.Hour)}
	now := p.now()
	for i, age := range ages {
		p.samples = append(p.samples, walSample{at: now - age, lsn: uint64(i)})
	}
	p.pruneSamples()
	now = p.now()
	kept := make([]time.Duration, len(p.samples))
	for i, s := range p.samples {
		// Rounded to the sampling's 250 ms, so that the clock's progress meanwhile does not show.
		kept[i] = (now - s.at).Round(250 * time.Millisecond)
	}
	return kept
}
