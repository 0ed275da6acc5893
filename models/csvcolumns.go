package models

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// The columns the import reads, and the header names that designate them. A header name is matched by
// its key (csvHeaderKey): case, spaces, dashes and underscores do not count, so "First Name",
// "first_name", "FirstName" and "first-name" all name the first name. The names are those that
// spreadsheets, CRMs and address books export; docs/contacts.md ("Importing contacts") lists them.
const (
	colPhone = iota
	colFirstName
	colLastName
	colEmail
	colTimeZone
	numCSVColumns
)

// csvColumnNames are the columns' names in messages about the header.
var csvColumnNames = [numCSVColumns]string{"phone", "first_name", "last_name", "email", "time_zone"}

var csvHeaderNames = map[string]int{
	"phone":        colPhone,
	"phonenumber":  colPhone, // also the API's phoneNumber
	"mobile":       colPhone,
	"mobilephone":  colPhone,
	"cell":         colPhone,
	"telephone":    colPhone,
	"tel":          colPhone,
	"firstname":    colFirstName,
	"givenname":    colFirstName,
	"lastname":     colLastName,
	"surname":      colLastName,
	"familyname":   colLastName,
	"email":        colEmail,
	"emailaddress": colEmail,    // and "E-mail Address"
	"timezone":     colTimeZone, // the contact's IANA zone, for quiet hours
	"tz":           colTimeZone,
}

// csvHeaderKey is the key a header name is matched by: lower case, without white space, dashes and
// underscores.
func csvHeaderKey(name string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) || r == '-' || r == '_' {
			return -1
		}
		return unicode.ToLower(r)
	}, name)
}

// csvColumns says where the columns the import reads are in a record (-1: the file does not have it)
// and how the header writes them, for messages.
type csvColumns struct {
	index [numCSVColumns]int
	name  [numCSVColumns]string
	// region is the country a phone without a country code is read in ("": none, such a phone is
	// invalid).
	region string
}

// parseCSVHeader reads the header row: the columns it names, and those it names that the import does
// not read (ignored: their names as written, without surrounding space; unnamed columns are left out).
func parseCSVHeader(rec []string, line int, region string) (cols *csvColumns, ignored []string, err error) {
	cols = &csvColumns{region: region}
	for col := range cols.index {
		cols.index[col] = -1
	}
	ignored = []string{}
	for i, name := range rec {
		// A NUL never appears in CSV text; it does in spreadsheets, archives and UTF-16 files.
		if strings.IndexByte(name, 0) >= 0 {
			return nil, nil, errBinaryCSV(line)
		}
		name = strings.TrimFunc(name, func(r rune) bool { return unicode.IsSpace(r) || r == '\uFEFF' })
		col, ok := csvHeaderNames[csvHeaderKey(name)]
		if !ok {
			if name != "" {
				ignored = append(ignored, strings.Clone(name))
			}
			continue
		}
		if cols.index[col] >= 0 {
			return nil, nil, Errorf(CodeValidation, "the header row (line %d) names the %s column twice: %q and %q; rename or remove one of them",
				line, csvColumnNames[col], cols.name[col], name)
		}
		cols.index[col], cols.name[col] = i, strings.Clone(name)
	}
	if cols.index[colPhone] < 0 && cols.index[colEmail] < 0 {
		return nil, nil, Errorf(CodeValidation, "the header row (line %d) names neither a phone nor an email column: expected columns phone, first_name, last_name, email", line)
	}
	return cols, ignored, nil
}

// contact validates a data row as CreateOrGetContact validates its input, and returns the normalized
// contact. Messages name the columns as the header writes them.
func (cols *csvColumns) contact(rec []string) (ContactInput, error) {
	var raw [numCSVColumns]string
	for col, i := range cols.index {
		if i < 0 || i >= len(rec) {
			continue // short row: the missing columns are empty
		}
		if !utf8.ValidString(rec[i]) {
			return ContactInput{}, Errorf(CodeValidation, "%s is not valid UTF-8 text: save the file as CSV UTF-8", cols.name[col])
		}
		raw[col] = rec[i]
	}
	phone, err := NormalizePhoneIn(raw[colPhone], cols.region)
	if err != nil {
		return ContactInput{}, err
	}
	email, err := NormalizeEmail(raw[colEmail])
	if err != nil {
		return ContactInput{}, err
	}
	if phone == "" && email == "" {
		return ContactInput{}, Errorf(CodeValidation, "a contact needs a phone or an email")
	}
	first, err := cleanName(cols.name[colFirstName], raw[colFirstName])
	if err != nil {
		return ContactInput{}, err
	}
	last, err := cleanName(cols.name[colLastName], raw[colLastName])
	if err != nil {
		return ContactInput{}, err
	}
	zone := strings.TrimSpace(raw[colTimeZone])
	if zone != "" && ValidTimeZone(zone) != nil {
		return ContactInput{}, Errorf(CodeValidation, "%s must be an IANA time zone such as America/New_York", cols.name[colTimeZone])
	}
	// The fields of a record share one allocation with its ignored columns: copy what is kept, so a
	// large file's notes are not held until the import ends.
	return ContactInput{
		FirstName: strings.Clone(first),
		LastName:  strings.Clone(last),
		Phone:     phone,
		Email:     strings.Clone(email),
		TimeZone:  strings.Clone(zone),
	}, nil
}
