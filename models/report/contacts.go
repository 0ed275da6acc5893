package report

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"

	"funnelchat/models"
)

// ContactRow is one line of the contacts list: the contact, its first sender id and when it last
// wrote or was written to.
type ContactRow struct {
	Contact *models.Contact
	// SenderID is the contact's first sender id on a channel ("" for a contact made through the API).
	SenderID string
	// LastActivityAt is the time of the contact's newest message; nil when it has none.
	LastActivityAt *time.Time
}

// Contacts lists the account's contacts that q finds (the contact search, contact_search.go; a blank
// q: all of them), newest first. The cursor is the id of the previous page's last contact. Errors:
// VALIDATION_ERROR for a search that is too long. It may be read on the read replica (replica.go).
func (r *Reader) Contacts(ctx context.Context, accountID, q string, page models.Page) ([]ContactRow, string, error) {
	if err := checkContactQuery(q); err != nil {
		return nil, "", err
	}
	var rows []ContactRow
	var next string
	err := r.routed(ctx, ReadContactSearch, func(ctx context.Context, on source) error {
		return r.snapshot(ctx, on, func(ctx context.Context, db bun.IDB) error {
			var err error
			rows, next, err = r.contacts(ctx, db, accountID, q, page)
			return err
		})
	})
	if err != nil {
		return nil, "", err
	}
	return rows, next, nil
}

// contacts reads Contacts' page in db's snapshot.
func (r *Reader) contacts(ctx context.Context, db bun.IDB, accountID, q string, page models.Page) ([]ContactRow, string, error) {
	var contacts []models.Contact
	if err := r.contactsQuery(db, accountID, q, page).Model(&contacts).Scan(ctx); err != nil {
		return nil, "", fmt.Errorf("contacts: %w", err)
	}
	contacts, next := models.CutPage(contacts, page, func(i int) string { return contacts[i].ID })
	rows := make([]ContactRow, len(contacts))
	if len(contacts) == 0 {
		return rows, next, nil
	}
	ids := make([]string, len(contacts))
	at := make(map[string]int, len(contacts))
	for i := range contacts {
		rows[i].Contact = &contacts[i]
		ids[i] = contacts[i].ID
		at[ids[i]] = i
	}
	// The page's sender ids and last activity, in one more query over the page's ids
	// (contact_identities_contact_idx, messages_contact_idx).
	var extra []struct {
		ID       string     `bun:"id"`
		SenderID string     `bun:"sender_id"`
		Last     *time.Time `bun:"last_at"`
	}
	err := db.NewSelect().TableExpr("contacts AS c").ColumnExpr("c.id").
		ColumnExpr("COALESCE((SELECT MIN(ci.external_id) FROM contact_identities AS ci WHERE ci.contact_id = c.id), '') AS sender_id").
		ColumnExpr("(SELECT m.created_at FROM messages AS m WHERE m.contact_id = c.id ORDER BY m.id DESC LIMIT 1) AS last_at").
		Where("c.id IN (?)", bun.In(ids)).Scan(ctx, &extra)
	if err != nil {
		return nil, "", fmt.Errorf("contacts: %w", err)
	}
	for _, e := range extra {
		rows[at[e.ID]].SenderID, rows[at[e.ID]].LastActivityAt = e.SenderID, e.Last
	}
	return rows, next, nil
}

// contactsQuery selects a page of the account's contacts that q finds (with one row more, which tells
// that there is a next page).
func (r *Reader) contactsQuery(db bun.IDB, accountID, q string, page models.Page) *bun.SelectQuery {
	sel := db.NewSelect().ModelTableExpr("contacts AS c").ColumnExpr(r.store.ColumnsOf((*models.Contact)(nil), "c")).
		Where("c.account_id = ?", accountID).OrderExpr("c.id DESC").Limit(int64(page.Limit) + 1)
	if match, args := contactMatches(db, accountID, q, &page); match != "" {
		sel = sel.Where("c.id IN ("+match+")", args...)
	}
	if page.Cursor != "" {
		sel = sel.Where("c.id < ?", page.Cursor)
	}
	return sel
}

// Identity is one of a contact's sender ids, with the channel it wrote on from there.
type Identity struct {
	SenderID string
	// Channel is the channel of the first message from the sender id ("" when none is stored).
	Channel   string
	CreatedAt time.Time
}

// ListMembership is a list the contact is on.
type ListMembership struct {
	ListID, Name string
	AddedAt      time.Time
}

// ContactSend is what a campaign did with the contact: its send's status (and reason), the opening
// variant it got, and when.
type ContactSend struct {
	CampaignID, CampaignName string
	Status                   string
	// Detail is the send's reason (a code such as OPTED_OUT, or a delivery's error); "" when none.
	Detail string
	// Variant is the opening variant's letter ("A"), "" for a campaign with one opening message.
	Variant   string
	CreatedAt time.Time
	// StatusAt is when the send reached its status.
	StatusAt *time.Time
}

// ContactProfile is what the contact page shows besides the contact's own fields, its consent and
// its goals (which the store reads for the conversation page too).
type ContactProfile struct {
	Contact    *models.Contact
	Identities []Identity
	Lists      []ListMembership
	Sends      []ContactSend
	// LastActivityAt is the time of the contact's newest message; nil when it has none.
	LastActivityAt *time.Time
}

// ContactProfileFor reads the account's contact with its sender ids, lists and campaign sends.
// Errors: NOT_FOUND (another account's contact too).
func (r *Reader) ContactProfileFor(ctx context.Context, accountID, contactID string) (*ContactProfile, error) {
	contact, err := r.store.ContactByID(ctx, accountID, contactID)
	if err != nil {
		return nil, err
	}
	p := &ContactProfile{Contact: contact}
	id := contact.ID
	// One snapshot for the rest (on SQLite it holds the one connection: nothing else reads inside).
	err = r.store.ReadSnapshot(ctx, func(ctx context.Context, db bun.IDB) error {
		err := db.NewSelect().TableExpr("contact_identities AS ci").ColumnExpr("ci.external_id AS sender_id, ci.created_at").
			ColumnExpr(`COALESCE((SELECT m.channel FROM messages AS m WHERE m.contact_id = ci.contact_id AND m.from_id = ci.external_id
				AND m.direction = 'incoming' ORDER BY m.id LIMIT 1), '') AS channel`).
			Where("ci.contact_id = ?", id).OrderExpr("ci.created_at, ci.external_id").Scan(ctx, &p.Identities)
		if err != nil {
			return fmt.Errorf("contact profile: identities: %w", err)
		}
		err = db.NewSelect().TableExpr("list_members AS lm").Join("JOIN lists AS l ON l.id = lm.list_id").
			ColumnExpr("l.id AS list_id, l.name, lm.added_at").
			Where("lm.contact_id = ? AND l.account_id = ?", id, accountID).OrderExpr("lm.id").Scan(ctx, &p.Lists)
		if err != nil {
			return fmt.Errorf("contact profile: lists: %w", err)
		}
		var sends []models.CampaignSend
		if err := db.NewSelect().Model(&sends).Where("contact_id = ? AND account_id = ?", id, accountID).Order("id").Scan(ctx); err != nil {
			return fmt.Errorf("contact profile: sends: %w", err)
		}
		campaigns := map[string]*models.Campaign{}
		if len(sends) > 0 {
			ids := make([]string, len(sends))
			for i, s := range sends {
				ids[i] = s.CampaignID
			}
			var list []models.Campaign
			if err := db.NewSelect().Model(&list).Where("id IN (?)", bun.In(ids)).Scan(ctx); err != nil {
				return fmt.Errorf("contact profile: campaigns: %w", err)
			}
			for i := range list {
				campaigns[list[i].ID] = &list[i]
			}
		}
		p.Sends = make([]ContactSend, len(sends))
		for i, s := range sends {
			cs := ContactSend{CampaignID: s.CampaignID, Status: s.Status, Detail: orEmpty(s.Detail), CreatedAt: s.CreatedAt, StatusAt: s.StatusAt}
			if cp := campaigns[s.CampaignID]; cp != nil {
				cs.CampaignName = cp.Name
				if len(cp.Variants()) > 1 {
					cs.Variant = models.VariantLetter(s.Variant)
				}
			}
			p.Sends[i] = cs
		}
		var last []time.Time
		if err := db.NewSelect().TableExpr("messages AS m").ColumnExpr("m.created_at").Where("m.contact_id = ?", id).
			OrderExpr("m.id DESC").Limit(1).Scan(ctx, &last); err != nil {
			return fmt.Errorf("contact profile: last activity: %w", err)
		}
		if len(last) > 0 {
			p.LastActivityAt = &last[0]
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}
