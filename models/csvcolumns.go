package models

import (
	"fmt"
	"slices"
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

// CSVFields are the fields a contact file's columns can be read as, by the names the API's import
// and the inbox's column choice use.
var CSVFields = csvColumnNames[:]

// CSVMapping says which field (one of CSVFields) each column of a file is read as, by position; "" for
// a column that is not read.
type CSVMapping []string

// headerName is a header cell as the import names it: without surrounding white space and BOM.
func headerName(cell string) string {
	return strings.TrimFunc(cell, func(r rune) bool { return unicode.IsSpace(r) || r == '\uFEFF' })
}

// guessColumns is the field each header cell designates (csvHeaderNames), -1 for the others: the one
// guess behind the API's import (parseCSVHeader) and the inbox's preview (GuessCSVMapping).
func guessColumns(rec []string) []int {
	guess := make([]int, len(rec))
	for i, cell := range rec {
		col, ok := csvHeaderNames[csvHeaderKey(headerName(cell))]
		if !ok {
			col = -1
		}
		guess[i] = col
	}
	return guess
}

// GuessCSVMapping is the mapping the API's import reads a file with header by: each column whose name
// is one of the fields' names or aliases (docs/contacts.md) is read as that field. A field named twice
// is guessed for both columns, which CSVMapping.Problems then reports.
func GuessCSVMapping(header []string) CSVMapping {
	m := make(CSVMapping, len(header))
	for i, col := range guessColumns(header) {
		if col >= 0 {
			m[i] = csvColumnNames[col]
		}
	}
	return m
}

// csvMappingProblem is what makes a choice of columns unusable: a field read from two columns (field,
// with the two columns' names), or no phone and no email column (field -1).
type csvMappingProblem struct {
	field        int
	first, again string
}

// columnsOf checks the choice of a field (or -1) for each column named names and returns where the
// columns are, with the names of the columns it does not read (unnamed ones left out), or every
// problem it has, in column order, the missing phone and email last. One rule for the guessed columns
// of the API's import and the columns chosen in the inbox.
func columnsOf(fields []int, names []string, region string) (*csvColumns, []string, []csvMappingProblem) {
	cols := &csvColumns{region: region}
	for col := range cols.index {
		cols.index[col] = -1
	}
	ignored := []string{}
	var problems []csvMappingProblem
	for i, col := range fields {
		name := names[i]
		if col < 0 {
			if name != "" {
				ignored = append(ignored, strings.Clone(name))
			}
			continue
		}
		if cols.index[col] >= 0 {
			problems = append(problems, csvMappingProblem{field: col, first: cols.name[col], again: name})
			continue
		}
		cols.index[col], cols.name[col] = i, strings.Clone(name)
	}
	if cols.index[colPhone] < 0 && cols.index[colEmail] < 0 {
		problems = append(problems, csvMappingProblem{field: -1})
	}
	if len(problems) > 0 {
		return nil, nil, problems
	}
	return cols, ignored, nil
}

// headerNames are the header cells as names (headerName); a column without one is called by its
// position in messages ("column 3").
func headerNames(rec []string) (names, labels []string) {
	names, labels = make([]string, len(rec)), make([]string, len(rec))
	for i, cell := range rec {
		names[i] = headerName(cell)
		labels[i] = names[i]
		if labels[i] == "" {
			labels[i] = fmt.Sprintf("column %d", i+1)
		}
	}
	return names, labels
}

// parseCSVHeader reads the header row: the columns it names (guessColumns), and those it names that
// the import does not read (ignored: their names as written, without surrounding space; unnamed
// columns are left out).
func parseCSVHeader(rec []string, line int, region string) (cols *csvColumns, ignored []string, err error) {
	names, _ := headerNames(rec)
	cols, ignored, problems := columnsOf(guessColumns(rec), names, region)
	if len(problems) == 0 {
		return cols, ignored, nil
	}
	if p := problems[0]; p.field >= 0 {
		return nil, nil, Errorf(CodeValidation, "the header row (line %d) names the %s column twice: %q and %q; rename or remove one of them",
			line, csvColumnNames[p.field], p.first, p.again)
	}
	return nil, nil, Errorf(CodeValidation, "the header row (line %d) names neither a phone nor an email column: expected columns phone, first_name, last_name, email", line)
}

// fields turns a mapping for a header of width columns into a field index (or -1) per column, or
// says why it cannot.
func (m CSVMapping) fields(width int) ([]int, error) {
	if len(m) != width {
		return nil, Errorf(CodeValidation, "the columns chosen are for a file of %d columns, and this file has %d: upload it again", len(m), width)
	}
	out := make([]int, len(m))
	for i, f := range m {
		out[i] = -1
		if f == "" {
			continue
		}
		col := slices.Index(csvColumnNames[:], f)
		if col < 0 {
			return nil, Errorf(CodeValidation, "column %d: %q is not a field the import reads (%s, or none)", i+1, f, strings.Join(csvColumnNames[:], ", "))
		}
		out[i] = col
	}
	return out, nil
}

// Problems lists every reason the mapping cannot read a file with header (its header row's cells), for
// the person choosing the columns: a mapping of another width or naming an unknown field, a field
// chosen for two columns, no phone and no email column. None: the mapping can be imported with
// ParseContactCSVMapped.
func (m CSVMapping) Problems(header []string) []string {
	fields, err := m.fields(len(header))
	if err != nil {
		return []string{ErrorMessage(err)}
	}
	_, labels := headerNames(header)
	_, _, problems := columnsOf(fields, labels, "")
	out := make([]string, len(problems))
	for i, p := range problems {
		out[i] = p.String()
	}
	return out
}

// csvFieldWords are the fields as the messages to the person choosing the columns name them.
var csvFieldWords = [numCSVColumns]string{"phone", "first name", "last name", "email", "time zone"}

func (p csvMappingProblem) String() string {
	if p.field < 0 {
		return "choose the column that holds the phone or the email: each contact needs one"
	}
	return fmt.Sprintf("%s is chosen for two columns, %q and %q: choose it for one of them", csvFieldWords[p.field], p.first, p.again)
}

// mappedHeader reads the header row with the columns the mapping chose. Errors: VALIDATION_ERROR
// with the mapping's first problem.
func (m CSVMapping) mappedHeader(rec []string, region string) (*csvColumns, []string, error) {
	fields, err := m.fields(len(rec))
	if err != nil {
		return nil, nil, err
	}
	names, labels := headerNames(rec)
	cols, ignored, problems := columnsOf(fields, labels, region)
	if len(problems) > 0 {
		return nil, nil, Errorf(CodeValidation, "%s", problems[0].String())
	}
	// Ignored columns are listed by the names the header gives them, as the API's import lists them.
	ignored = ignored[:0]
	for i, f := range fields {
		if f < 0 && names[i] != "" {
			ignored = append(ignored, strings.Clone(names[i]))
		}
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
