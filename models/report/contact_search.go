package report

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"

	"funnelchat/models"
)

// The contact search, one rule for every place that finds contacts by what was typed: GET
// /v1/contacts?q=, the inbox's contacts page, and the conversation list's search (GET
// /v1/conversations?q=, the inbox's list). README, "Contacts":
//
//   - case-insensitive prefix of the first name, the last name, the full name ("first last"), the
//     email, and any of the contact's sender ids (contact_identities.external_id);
//   - a query that is a phone number as people type it (digits, with or without "+", spaces, dashes,
//     dots, brackets, slashes) also matches a prefix of the stored E.164 phone's digits: with "+" its
//     international form ("+1 415" finds +14155550143); without, the international form or the
//     national number after the country code ("415555" finds it too), and after a leading 0 (a trunk
//     prefix, "07700 900" finds +447700900123) or 00 (an international prefix) is dropped;
//   - a blank query finds every contact; one of more than 200 characters is VALIDATION_ERROR.
//
// Each field has an index made for a prefix (models/contact_search.go): the matching ids are a union
// of index range scans, whatever the account's size.

// maxQueryLength bounds a search.
const maxQueryLength = 200

// checkContactQuery refuses a search that is too long. Errors: VALIDATION_ERROR.
func checkContactQuery(q string) error {
	if utf8.RuneCountInString(q) > maxQueryLength {
		return models.Errorf(models.CodeValidation, "q must be at most %d characters", maxQueryLength)
	}
	return nil
}

// phoneTyping are the characters people type between a number's digits.
var phoneTyping = strings.NewReplacer(" ", "", "-", "", ".", "", "(", "", ")", "", "/", "")

// phoneQuery reads q as a phone number as typed: its digits and whether it starts with "+" (ok false
// when q holds anything else).
func phoneQuery(q string) (digits string, plus, ok bool) {
	s := phoneTyping.Replace(q)
	s, plus = strings.CutPrefix(s, "+")
	if s == "" {
		return "", false, false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return "", false, false
		}
	}
	return s, plus, true
}

// contactMatches returns the SQL (with its arguments) of the ids of the account's contacts that q
// finds, for an "id IN (...)"; "" for a blank query, which finds every contact. q must have passed
// checkContactQuery. With top, only the page's ids: the page.Limit+1 greatest ids below page.Cursor,
// which each field's index gives without reading its other matches' rows (the ids are in the index),
// so that a broad search ("m") costs a scan of index entries, not a sort of every match.
func contactMatches(db bun.IDB, accountID, q string, top *models.Page) (string, []any) {
	term := strings.Join(strings.Fields(q), " ")
	if term == "" {
		return "", nil
	}
	sqlite := db.Dialect().Name() == dialect.SQLite
	var parts []string
	var args []any
	// prefix adds the contacts (or, from identities, their contact ids) whose expr starts with p.
	// PostgreSQL: LIKE with the wildcards escaped (backslash is its default escape character), which
	// the text_pattern_ops index answers as a range; folding with lower() on both sides, so that the
	// typed text and the stored text fold alike. SQLite: the range itself, with the text folded by the
	// same lower() the store installs (Go's strings.ToLower) that its index holds. cond is the
	// condition of a partial index that the match does not imply by itself.
	prefix := func(from, id, expr, p string, fold bool, cond string) {
		sel := "SELECT " + id + " AS id FROM " + from + " WHERE s.account_id = ? AND " + cond
		if sqlite {
			if fold {
				p = strings.ToLower(p)
			}
			sel += expr + " >= ? AND " + expr + " < ?"
			args = append(args, accountID, p, p+"\U0010FFFF")
		} else {
			pattern := "?"
			if fold {
				pattern = "lower(?)"
			}
			sel += expr + " LIKE (" + pattern + " || '%')"
			args = append(args, accountID, likeEscaper.Replace(p))
		}
		if top != nil {
			if top.Cursor != "" {
				sel += " AND " + id + " < ?"
				args = append(args, top.Cursor)
			}
			// Ordered by an expression, not the column: ordered by the column, PostgreSQL may walk
			// the primary key newest first and test each row, hoping to meet a page of matches soon,
			// which reads every contact of the account when few or none match. Ordered so, it reads the
			// field's index range and keeps the greatest ids.
			order := " ORDER BY " + id + " || '' DESC LIMIT " + strconv.Itoa(top.Limit+1)
			if id != "s.id" {
				// A contact's several sender ids count once.
				order = " GROUP BY " + id + order
			}
			sel = "SELECT id FROM (" + sel + order + ") AS b" + strconv.Itoa(len(parts))
		}
		parts = append(parts, sel)
	}
	contacts := func(expr, p string, fold bool, cond string) { prefix("contacts AS s", "s.id", expr, p, fold, cond) }
	contacts(models.ContactFullNameSQL("s"), term, true, "")
	contacts(models.ContactLastNameSQL("s"), term, true, "")
	// The email's index holds the contacts with an email, which SQLite does not infer from lower().
	contacts(models.ContactEmailSQL("s"), term, true, "s.email IS NOT NULL AND ")
	prefix("contact_identities AS s", "s.contact_id", models.IdentitySQL("s"), term, true, "")
	if digits, plus, ok := phoneQuery(term); ok {
		intl := []string{digits}
		var national []string
		if !plus {
			national = append(national, digits)
			switch {
			case strings.HasPrefix(digits, "00") && len(digits) > 2:
				intl = append(intl, digits[2:])
			case strings.HasPrefix(digits, "0") && len(digits) > 1:
				national = append(national, digits[1:])
			}
		}
		for _, d := range intl {
			contacts("s.phone", "+"+d, false, "")
		}
		for _, d := range national {
			// The national number's index holds the contacts with a phone, which its CASE does not
			// tell the planner.
			contacts(models.PhoneNationalSQL("s"), d, false, "s.phone IS NOT NULL AND ")
		}
	}
	union := strings.Join(parts, " UNION ")
	if top != nil {
		union = "SELECT u.id FROM (" + union + ") AS u ORDER BY u.id DESC LIMIT " + strconv.Itoa(top.Limit+1)
	}
	return union, args
}

// likeEscaper escapes LIKE's wildcards (and its escape character) in a search term.
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
