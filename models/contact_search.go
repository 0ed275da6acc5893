package models

import (
	"context"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/migrate"
)

// The contact search (models/report, ContactSearch; README, "Contacts") matches a prefix of a
// contact's name, email, phone and sender ids. Each field it reads has an index made for a prefix:
// on PostgreSQL a btree with text_pattern_ops, which answers LIKE 'abc%' whatever the database's
// collation (a default btree does so only under the C collation); on SQLite a plain index, which the
// search reads with a range (x >= 'abc' AND x < 'abc' || U+10FFFF), since SQLite's LIKE never uses
// an index on an expression. The expressions below are the ones the search writes, character for
// character: an index serves a query only when its expression is the query's.

// col is column name of the row aliased as alias ("": unqualified, as an index names it).
func col(alias, name string) string {
	if alias == "" {
		return name
	}
	return alias + "." + name
}

// ContactFullNameSQL is a contact's full name, "first last", lower-cased: its prefixes are the first
// name's and the full name's.
func ContactFullNameSQL(alias string) string {
	return "lower(" + col(alias, "first_name") + " || ' ' || " + col(alias, "last_name") + ")"
}

// ContactLastNameSQL is the last name, lower-cased.
func ContactLastNameSQL(alias string) string { return "lower(" + col(alias, "last_name") + ")" }

// ContactEmailSQL is the email, lower-cased (stored emails are lower-cased already; lower() makes the
// search fold the stored text and the typed text with one function).
func ContactEmailSQL(alias string) string { return "lower(" + col(alias, "email") + ")" }

// IdentitySQL is a contact identity's sender id (external_id), lower-cased.
func IdentitySQL(alias string) string { return "lower(" + col(alias, "external_id") + ")" }

// callingCodes1 and callingCodes2 are the country calling codes of one and two digits; every other
// code has three. E.164 codes are prefix-free (no code begins another), so the first digits of a
// stored phone say how long its code is (TestPhoneNationalSQLMatchesLibrary checks these lists against
// the phone number library's codes).
const (
	callingCodes1 = `'1', '7'`
	callingCodes2 = `'20', '27', '30', '31', '32', '33', '34', '36', '39', '40', '41', '43', '44', '45', '46', '47', '48', '49', ` +
		`'51', '52', '53', '54', '55', '56', '57', '58', '60', '61', '62', '63', '64', '65', '66', '81', '82', '84', '86', ` +
		`'90', '91', '92', '93', '94', '95', '98'`
)

// PhoneNationalSQL is the national significant number of a stored E.164 phone (alias.phone): its
// digits after the "+" and the country calling code ("+14155550143" -> "4155550143"), so that a
// search for "415 555" finds it whatever the contact's country. NULL for a contact without a phone.
func PhoneNationalSQL(alias string) string {
	p := col(alias, "phone")
	return "(CASE WHEN substr(" + p + ", 2, 1) IN (" + callingCodes1 + ") THEN substr(" + p + ", 3)" +
		" WHEN substr(" + p + ", 2, 2) IN (" + callingCodes2 + ") THEN substr(" + p + ", 4)" +
		" ELSE substr(" + p + ", 5) END)"
}

// contactSearchIndex is one index of the search: its table, the expression it orders by after
// account_id (with a PostgreSQL operator class when the search matches it with LIKE), and the rows it
// holds.
type contactSearchIndex struct {
	name, table, expr string
	// pattern: the search reads the expression with LIKE on PostgreSQL (text_pattern_ops), not with =.
	pattern bool
	where   string
	// id is the contact's id column, last in the index: a search reads the ids of a page from the
	// index alone (an index-only scan on PostgreSQL), without the rows.
	id string
	// include are the columns the expression reads, carried in the index on PostgreSQL: its planner
	// takes an index-only scan only when every column a query names is in the index, even those it
	// names only inside the indexed expression.
	include string
}

// contactSearchIndexes are the search's indexes. contacts_account_page_idx pages the whole list (an
// empty search), newest first; contact_identities_contact_idx finds a contact's sender ids (the
// list shows the first, the contact page all of them) without reading the account's others. The
// phone's own prefix is the pattern index on phone (the unique contacts_phone_key serves = only on
// PostgreSQL, and on SQLite serves the range as it is).
func contactSearchIndexes(sqlite bool) []contactSearchIndex {
	idx := []contactSearchIndex{
		{name: "contacts_account_page_idx", table: "contacts", expr: "id"},
		{name: "contacts_search_name_idx", table: "contacts", expr: ContactFullNameSQL(""), pattern: true, id: "id", include: "first_name, last_name"},
		{name: "contacts_search_last_name_idx", table: "contacts", expr: ContactLastNameSQL(""), pattern: true, id: "id", include: "last_name"},
		{name: "contacts_search_email_idx", table: "contacts", expr: ContactEmailSQL(""), pattern: true, where: "email IS NOT NULL", id: "id", include: "email"},
		{name: "contacts_search_national_idx", table: "contacts", expr: PhoneNationalSQL(""), pattern: true, where: "phone IS NOT NULL", id: "id", include: "phone"},
		{name: "contact_identities_search_idx", table: "contact_identities", expr: IdentitySQL(""), pattern: true, id: "contact_id", include: "external_id"},
	}
	if !sqlite {
		idx = append(idx, contactSearchIndex{name: "contacts_search_phone_idx", table: "contacts", expr: "phone", pattern: true, where: "phone IS NOT NULL", id: "id"})
	}
	return idx
}

// contactSearchMigration creates the search's indexes (one statement each; IF NOT EXISTS, so that a
// run that stopped half way completes) and the index of a contact's sender ids.
func contactSearchMigration(db *bun.DB) migrate.Migration {
	sqlite := db.Dialect().Name() == dialect.SQLite
	return migrate.Migration{
		Name: "20261203200001", Comment: "contact_search_indexes",
		Up: func(ctx context.Context, _ *migrate.Migrator, _ *migrate.Migration) error {
			stmts := []string{"CREATE INDEX IF NOT EXISTS contact_identities_contact_idx ON contact_identities (contact_id, external_id)"}
			for _, ix := range contactSearchIndexes(sqlite) {
				expr := ix.expr
				if ix.pattern && !sqlite {
					expr += " text_pattern_ops"
				}
				if ix.id != "" {
					expr += ", " + ix.id
				}
				s := "CREATE INDEX IF NOT EXISTS " + ix.name + " ON " + ix.table + " (account_id, " + expr + ")"
				if ix.include != "" && !sqlite {
					s += " INCLUDE (" + ix.include + ")"
				}
				if ix.where != "" {
					s += " WHERE " + ix.where
				}
				stmts = append(stmts, s)
			}
			for _, s := range stmts {
				if _, err := db.ExecContext(ctx, s); err != nil {
					return err
				}
			}
			return nil
		},
		Down: func(ctx context.Context, _ *migrate.Migrator, _ *migrate.Migration) error {
			names := []string{"contact_identities_contact_idx"}
			for _, ix := range contactSearchIndexes(sqlite) {
				names = append(names, ix.name)
			}
			// One name a statement: SQLite's DROP INDEX takes one.
			for _, n := range names {
				if _, err := db.ExecContext(ctx, "DROP INDEX IF EXISTS "+n); err != nil {
					return err
				}
			}
			return nil
		},
	}
}
