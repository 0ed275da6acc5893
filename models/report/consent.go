package report

import (
	"context"
	"fmt"
	"time"

	"funnelchat/models"
)

// ConsentExportRow is one line of the consent export.
type ConsentExportRow struct {
	models.ConsentEvent
	Phone *string `bun:"phone"`
	Email *string `bun:"email"`
}

// ConsentExportHeader is the export's header row. New columns go last, so that readers of the older
// columns by position keep working.
var ConsentExportHeader = []string{"at", "contact_id", "phone", "email", "channel", "status", "source", "text", "ip", "message_id",
	"recorded_by"}

// Record is the row as the export writes it, in ConsentExportHeader's order. recorded_by is the user's
// email or api_key:<last 4> (models.ConsentRecorder.Label), empty for a change the service made itself.
func (r *ConsentExportRow) Record() []string {
	return []string{r.At.UTC().Format(time.RFC3339Nano), r.ContactID, orEmpty(r.Phone), orEmpty(r.Email), r.Channel, r.Status,
		r.Source, r.Text, orEmpty(r.IP), orEmpty(r.MessageID), r.RecordedBy.Label()}
}

// consentExportBatch is how many events the export reads per query: it keeps memory flat however many
// events the period holds, each batch starting after the last one's (at, id).
const consentExportBatch = 1000

// ExportConsent calls emit for each of the account's consent events whose time is in [from, to), in
// order of time, reading them in batches so that memory stays flat for any number of events. It stops
// at emit's first error. Each batch may be read on the read replica (replica.go).
func (r *Reader) ExportConsent(ctx context.Context, accountID string, from, to time.Time, emit func(*ConsentExportRow) error) error {
	var (
		afterAt time.Time
		afterID string
	)
	for {
		var rows []ConsentExportRow
		err := r.routed(ctx, ReadConsentExport, func(ctx context.Context, on source) error {
			rows = nil
			q := on.db.NewSelect().TableExpr("consent_events AS e").
				ColumnExpr(r.store.ColumnsOf((*models.ConsentEvent)(nil), "e")+", c.phone, c.email").
				Join("JOIN contacts AS c ON c.id = e.contact_id").
				Where("e.account_id = ? AND e.at >= ? AND e.at < ?", accountID, from.UTC(), to.UTC()).
				OrderExpr("e.at, e.id").Limit(consentExportBatch)
			if afterID != "" {
				q = q.Where("(e.at > ? OR (e.at = ? AND e.id > ?))", afterAt, afterAt, afterID)
			}
			return q.Scan(ctx, &rows)
		})
		if err != nil {
			return fmt.Errorf("consent export: %w", err)
		}
		for i := range rows {
			if err := emit(&rows[i]); err != nil {
				return err
			}
		}
		if len(rows) < consentExportBatch {
			return nil
		}
		afterAt, afterID = rows[len(rows)-1].At, rows[len(rows)-1].ID
	}
}
