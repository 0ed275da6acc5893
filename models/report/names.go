package report

import (
	"context"
	"fmt"
	"strings"

	"github.com/uptrace/bun"

	"funnelchat/models"
)

// How the inbox names a contact, on every page that lists contacts (the conversation list, a
// conversation, the alerts, the deliveries): one rule, here.

// ContactName is a contact's display name: its name, else its phone, its email, its sender id (a
// contact that wrote on a channel and gave nothing else; SenderIDs), and its id only when it has none
// of these. A missing contact is "unknown contact".
func ContactName(c *models.Contact, senderID string) string {
	if c == nil {
		return "unknown contact"
	}
	if n := strings.TrimSpace(c.FirstName + " " + c.LastName); n != "" {
		return n
	}
	if c.Phone != nil && *c.Phone != "" {
		return *c.Phone
	}
	if c.Email != nil && *c.Email != "" {
		return *c.Email
	}
	if senderID != "" {
		return senderID
	}
	return c.ID
}

// senderIDSQL is the SQL of the sender id a contact is named by: its first identity on a channel (the
// smallest), "" when it has none (a contact made through the API). accountCol and contactCol name
// the contact's account and id in the statement it goes in.
func senderIDSQL(accountCol, contactCol string) string {
	return "COALESCE((SELECT MIN(ci.external_id) FROM contact_identities AS ci WHERE ci.account_id = " + accountCol +
		" AND ci.contact_id = " + contactCol + "), '')"
}

// SenderIDs returns the sender id (senderIDSQL) of each of the account's contacts ids, by contact id,
// for ContactName; a contact of another account is left out.
func (r *Reader) SenderIDs(ctx context.Context, accountID string, ids []string) (map[string]string, error) {
	out := make(map[string]string, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var rows []struct {
		ID       string `bun:"id"`
		SenderID string `bun:"sender_id"`
	}
	err := r.db.NewSelect().TableExpr("contacts AS c").ColumnExpr("c.id").ColumnExpr(senderIDSQL("c.account_id", "c.id")+" AS sender_id").
		Where("c.account_id = ? AND c.id IN (?)", accountID, bun.In(ids)).Scan(ctx, &rows)
	if err != nil {
		return nil, fmt.Errorf("sender ids: %w", err)
	}
	for _, row := range rows {
		out[row.ID] = row.SenderID
	}
	return out, nil
}
