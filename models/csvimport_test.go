package models

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParseContactCSV(t *testing.T) {
	ada := ContactInput{FirstName: "Ada", LastName: "Lovelace", Phone: "+14155550123", Email: "ada@example.com"}
	longName := strings.Repeat("é", maxNameLength+1)
	tests := []struct {
		name        string
		in          string
		region      string
		want        []ContactInput
		wantErrs    []CSVRowError
		wantIgnored []string
	}{
		{
			name: "canonical header, values normalized",
			in:   "phone,first_name,last_name,email\n+1 (415) 555-0123,  Ada \t, Lovelace ,ADA@Example.COM \n",
			want: []ContactInput{ada},
		},
		{
			name: "header in another order, any case, padded",
			in:   " EMAIL ,Last_Name\t, PHONE,First_Name \nada@example.com,Lovelace,+14155550123,Ada\n",
			want: []ContactInput{ada},
		},
		{
			name: "phone_number, firstName and lastName aliases",
			in:   "phone_number,firstName,lastName\n+14155550123,Ada,Lovelace\n",
			want: []ContactInput{{FirstName: "Ada", LastName: "Lovelace", Phone: "+14155550123"}},
		},
		{
			name:     "time_zone column, for quiet hours",
			in:       "phone,first_name,time_zone\n+14155550123,Ada, America/Los_Angeles \n+14155550124,Bo,\n+14155550125,Cy,Mars/Base\n",
			want:     []ContactInput{{FirstName: "Ada", Phone: "+14155550123", TimeZone: "America/Los_Angeles"}, {FirstName: "Bo", Phone: "+14155550124"}},
			wantErrs: []CSVRowError{{Row: 4, Error: "time_zone must be an IANA time zone such as America/New_York"}},
		},
		{
			name: "phoneNumber alias as the API spells it",
			in:   "phoneNumber,FIRSTNAME\n+14155550123,Ada\n",
			want: []ContactInput{{FirstName: "Ada", Phone: "+14155550123"}},
		},
		{
			name: "UTF-8 BOM before the header",
			in:   "\uFEFFphone,first_name\n+14155550123,Ada\n",
			want: []ContactInput{{FirstName: "Ada", Phone: "+14155550123"}},
		},
		{
			name: "UTF-8 BOM before a quoted header",
			in:   "\uFEFF\"phone\",\"first_name\"\n\"+14155550123\",\"Ada\"\n",
			want: []ContactInput{{FirstName: "Ada", Phone: "+14155550123"}},
		},
		{
			name: "semicolon delimiter keeps commas as data",
			in:   "phone;first_name;last_name;email\n+44 20 7946 0958;Jean;Dupont, Jr.;jean@example.fr\n",
			want: []ContactInput{{FirstName: "Jean", LastName: "Dupont, Jr.", Phone: "+442079460958", Email: "jean@example.fr"}},
		},
		{
			name:        "semicolon delimiter with a quoted header holding a comma",
			in:          "\"phone\";\"first_name\";\"notes, free text\"\n+14155550123;Ada;\"a, b\"\n",
			want:        []ContactInput{{FirstName: "Ada", Phone: "+14155550123"}},
			wantIgnored: []string{"notes, free text"},
		},
		{
			name: "comma delimiter keeps semicolons as data",
			in:   "phone,first_name\n+14155550123,Ann;Marie\n",
			want: []ContactInput{{FirstName: "Ann;Marie", Phone: "+14155550123"}},
		},
		{
			name: "quoted fields with commas, quotes and newlines; rows numbered by line",
			in: "phone,first_name,last_name,notes\n" +
				"\"+1 415 555 0123\",\"Smith, Jr.\",\"O\"\"Brien\",\"line one\nline two\"\n" + // lines 2-3
				"+14155550124,Bo,\"two\nlines\",x\n" + // lines 4-5
				"123,x,y,z\n", // line 6
			want: []ContactInput{
				{FirstName: "Smith, Jr.", LastName: "O\"Brien", Phone: "+14155550123"},
				{FirstName: "Bo", LastName: "two\nlines", Phone: "+14155550124"},
			},
			wantIgnored: []string{"notes"},
			wantErrs:    []CSVRowError{{Row: 6, Error: `phone "123" has no country code: write it in international form, such as +14155550123, or set the account's defaultCountry`}},
		},
		{
			name: "CRLF line endings",
			in:   "phone,first_name,last_name\r\n+14155550123,Ada,\"Love\r\nlace\"\r\n\r\n+14155550124,Bob,Smith\r\nnope,x,y\r\n",
			want: []ContactInput{
				{FirstName: "Ada", LastName: "Love\nlace", Phone: "+14155550123"},
				{FirstName: "Bob", LastName: "Smith", Phone: "+14155550124"},
			},
			wantErrs: []CSVRowError{{Row: 6, Error: `phone "nope" may contain only digits, a leading +, spaces, dashes, dots and brackets`}},
		},
		{
			name:     "only an email column",
			in:       "email,first_name\nAda@Example.com,Ada\n,Nobody\n",
			want:     []ContactInput{{FirstName: "Ada", Email: "ada@example.com"}},
			wantErrs: []CSVRowError{{Row: 3, Error: "a contact needs a phone or an email"}},
		},
		{
			name: "short rows leave the missing columns empty",
			in:   "phone,first_name,last_name,email\n+14155550123\n+14155550124,Bob\n,,\n",
			want: []ContactInput{{Phone: "+14155550123"}, {FirstName: "Bob", Phone: "+14155550124"}},
		},
		{
			name:     "short row missing the phone column",
			in:       "first_name,phone\nAda\n",
			wantErrs: []CSVRowError{{Row: 2, Error: "a contact needs a phone or an email"}},
		},
		{
			name:        "unknown and extra columns are ignored",
			in:          "id,phone,company,first_name\n7,+14155550123,Acme,Ada,surplus,\"more, fields\"\n",
			want:        []ContactInput{{FirstName: "Ada", Phone: "+14155550123"}},
			wantIgnored: []string{"id", "company"},
		},
		{
			name: "invalid rows are reported with their line numbers",
			in: "phone,first_name,email\n" +
				"4155550123,NoCountryCode,\n" + // 2
				"+14155550123,Ada,\n" + // 3
				",NoContact,\n" + // 4
				"+14155550124,BadEmail,not-an-email\n" + // 5
				"+999 1234567,UnknownCountry,\n" + // 6
				"+14155550125," + longName + ",\n" + // 7
				"+14155550126,Bob,\n", // 8
			want: []ContactInput{{FirstName: "Ada", Phone: "+14155550123"}, {FirstName: "Bob", Phone: "+14155550126"}},
			wantErrs: []CSVRowError{
				{Row: 2, Error: `phone "4155550123" has no country code: write it in international form, such as +14155550123, or set the account's defaultCountry`},
				{Row: 4, Error: "a contact needs a phone or an email"},
				{Row: 5, Error: `email "not-an-email" is not a valid email address`},
				{Row: 6, Error: `phone "+999 1234567" is not a valid phone number with a country code`},
				{Row: 7, Error: "first_name must be at most 200 characters"},
			},
		},
		{
			name: "a name of exactly the maximum length is accepted",
			in:   "phone,first_name\n+14155550123," + strings.Repeat("é", maxNameLength) + "\n",
			want: []ContactInput{{FirstName: strings.Repeat("é", maxNameLength), Phone: "+14155550123"}},
		},
		{
			// ImportContacts counts a repeated row (as existing), so each row is returned.
			name: "a repeated phone is returned for each row",
			in:   "phone,first_name\n+14155550123,First\n+1 (415) 555-0123,Second\n0014155550123,Third\n+14155550124,Other\n",
			want: []ContactInput{
				{FirstName: "First", Phone: "+14155550123"}, {FirstName: "Second", Phone: "+14155550123"},
				{FirstName: "Third", Phone: "+14155550123"}, {FirstName: "Other", Phone: "+14155550124"},
			},
		},
		{
			name: "without a phone, a repeated email is returned for each row",
			in:   "phone,email,first_name\n,ada@example.com,First\n,ADA@example.com ,Second\n+14155550123,ada@example.com,WithPhone\n",
			want: []ContactInput{
				{FirstName: "First", Email: "ada@example.com"},
				{FirstName: "Second", Email: "ada@example.com"},
				{FirstName: "WithPhone", Phone: "+14155550123", Email: "ada@example.com"},
			},
		},
		{
			name: "a row repeating an invalid row is reported too",
			in:   "phone\n123\n123\n",
			wantErrs: []CSVRowError{
				{Row: 2, Error: `phone "123" has no country code: write it in international form, such as +14155550123, or set the account's defaultCountry`},
				{Row: 3, Error: `phone "123" has no country code: write it in international form, such as +14155550123, or set the account's defaultCountry`},
			},
		},
		{
			name:     "blank lines are skipped silently and still counted as lines",
			in:       "\n\n  \nphone,first_name\n\n   \n,\n \"\",\"\"\n+14155550123,Ada\n\n\n123,Bad\n",
			want:     []ContactInput{{FirstName: "Ada", Phone: "+14155550123"}},
			wantErrs: []CSVRowError{{Row: 12, Error: `phone "123" has no country code: write it in international form, such as +14155550123, or set the account's defaultCountry`}},
		},
		{
			name: "blank lines before a semicolon header do not decide the delimiter",
			in:   ",,,\n\nphone;first_name\n+14155550123;Ada, Jr.\n",
			want: []ContactInput{{FirstName: "Ada, Jr.", Phone: "+14155550123"}},
		},
		{
			name: "no trailing newline",
			in:   "phone,first_name\n+14155550123,Ada",
			want: []ContactInput{{FirstName: "Ada", Phone: "+14155550123"}},
		},
		{
			name: "header only: no rows, no error",
			in:   "phone,first_name,last_name,email\n",
		},
		{
			name: "header only followed by blank lines",
			in:   "phone,email\r\n\r\n,\r\n",
		},
		{
			name: "invalid UTF-8 in a row is a row error",
			in:   "phone,first_name,email\n+14155550123,Ren\xe9,\n+14155550124,Ana,\n+14155550125,x,a\xff@example.com\n\xff+14155550126,y,\n",
			want: []ContactInput{{FirstName: "Ana", Phone: "+14155550124"}},
			wantErrs: []CSVRowError{
				{Row: 2, Error: "first_name is not valid UTF-8 text: save the file as CSV UTF-8"},
				{Row: 4, Error: "email is not valid UTF-8 text: save the file as CSV UTF-8"},
				{Row: 5, Error: "phone is not valid UTF-8 text: save the file as CSV UTF-8"},
			},
		},
		{
			name:        "invalid UTF-8 in an ignored column does not matter",
			in:          "phone,company\n+14155550123,Soci\xe9t\xe9\n",
			want:        []ContactInput{{Phone: "+14155550123"}},
			wantIgnored: []string{"company"},
		},
		{
			name: "an unclosed quote in a middle row is that row's error; the rows it swallowed are read",
			in: "phone,first_name\n" +
				"+14155550123,\"Ada\n" + // 2: the quote is never closed
				"+14155550124,Bob\n" + // 3
				"+14155550125,Cy\n", // 4
			want:     []ContactInput{{FirstName: "Bob", Phone: "+14155550124"}, {FirstName: "Cy", Phone: "+14155550125"}},
			wantErrs: []CSVRowError{{Row: 2, Error: csvUnclosedAtEOF}},
		},
		{
			name: "a stray quote closed by a later row's quote is the first row's error",
			in: "phone,first_name\n" +
				"+14155550123,\"Ada\n" + // 2: the next quote, on line 4, is followed by text
				"+14155550124,Bob\n" + // 3
				"+14155550125,\"Cy\"\n", // 4
			want:     []ContactInput{{FirstName: "Bob", Phone: "+14155550124"}, {FirstName: "Cy", Phone: "+14155550125"}},
			wantErrs: []CSVRowError{{Row: 2, Error: fmt.Sprintf(csvRunsOn, 2, 4)}},
		},
		{
			name: "text after a closing quote in a row spanning lines",
			in:   "phone,first_name,last_name\n\"+14155550123\",\"Ada\nLove\",\"lace\"x\n+14155550124,Bob\n\"x\ny\"z\n",
			want: []ContactInput{{FirstName: "Bob", Phone: "+14155550124"}},
			wantErrs: []CSVRowError{
				{Row: 2, Error: fmt.Sprintf(csvAfterQuote, 3)}, // field 3 starts on line 3, the line of the error
				{Row: 3, Error: fmt.Sprintf(csvBareQuote, 1)},  // read again on its own after row 2 failed
				{Row: 5, Error: fmt.Sprintf(csvRunsOn, 1, 6)},
				{Row: 6, Error: fmt.Sprintf(csvBareQuote, 1)},
			},
		},
		{
			name: "a bare quote in an unquoted field",
			in: "phone,first_name,last_name\n" +
				"+14155550123,Ada \"The Countess\",Lovelace\n" + // 2
				"+14155550124,Bob,O\"Brien\n" + // 3
				"+14155550125,Cy,Young\n", // 4
			want: []ContactInput{{FirstName: "Cy", LastName: "Young", Phone: "+14155550125"}},
			wantErrs: []CSVRowError{
				{Row: 2, Error: fmt.Sprintf(csvBareQuote, 2)},
				{Row: 3, Error: fmt.Sprintf(csvBareQuote, 3)},
			},
		},
		{
			name:     "a bare quote with the semicolon delimiter",
			in:       "phone;first_name\n+14155550123;5\" tall\n+14155550124;Bob\n",
			want:     []ContactInput{{FirstName: "Bob", Phone: "+14155550124"}},
			wantErrs: []CSVRowError{{Row: 2, Error: fmt.Sprintf(csvBareQuote, 2)}},
		},
		{
			name: "text after a closing quote",
			in:   "phone,first_name\n\"+14155550123\"x,Ada\n+14155550124,\"Bob\" ,\n+14155550125,Cy\n",
			want: []ContactInput{{FirstName: "Cy", Phone: "+14155550125"}},
			wantErrs: []CSVRowError{
				{Row: 2, Error: fmt.Sprintf(csvAfterQuote, 1)},
				{Row: 3, Error: fmt.Sprintf(csvAfterQuote, 2)},
			},
		},
		{
			name: "a valid quoted field with a line break and doubled quotes still imports",
			in: "phone,first_name,last_name\n" +
				"+14155550123,\"Ada \"\"The\"\"\nCountess\",\"\"\"Lovelace\"\"\"\n" + // 2-3
				"  \"+14155550124\",  \"Bob\",\"\"\n" + // 4: space before a quoted field is ignored
				"123,x,y\n", // 5
			want: []ContactInput{
				{FirstName: "Ada \"The\"\nCountess", LastName: "\"Lovelace\"", Phone: "+14155550123"},
				{FirstName: "Bob", Phone: "+14155550124"},
			},
			wantErrs: []CSVRowError{{Row: 5, Error: `phone "123" has no country code: write it in international form, such as +14155550123, or set the account's defaultCountry`}},
		},
		{
			name:     "an unclosed quote on the last row",
			in:       "phone,first_name\n+14155550123,Ada\n+14155550124,\"Bob\n",
			want:     []ContactInput{{FirstName: "Ada", Phone: "+14155550123"}},
			wantErrs: []CSVRowError{{Row: 3, Error: csvUnclosedAtEOF}},
		},
		{
			name:     "an unclosed quote on the last row without a newline",
			in:       "phone,first_name\r\n+14155550123,Ada\r\n+14155550124,\"Bob",
			want:     []ContactInput{{FirstName: "Ada", Phone: "+14155550123"}},
			wantErrs: []CSVRowError{{Row: 3, Error: csvUnclosedAtEOF}},
		},
		{
			name:     "a lone quote on a line after the header is a row, not a blank line",
			in:       "phone,first_name\n\"\n+14155550123,Ada\n",
			want:     []ContactInput{{FirstName: "Ada", Phone: "+14155550123"}},
			wantErrs: []CSVRowError{{Row: 2, Error: csvUnclosedAtEOF}},
		},
		{
			name:     "NUL in a name is a row error",
			in:       "phone,first_name\n+14155550123,A\x00da\n",
			wantErrs: []CSVRowError{{Row: 2, Error: "first_name must be valid UTF-8 text"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file, err := ParseContactCSV(strings.NewReader(tt.in), tt.region)
			if err != nil {
				t.Fatalf("ParseContactCSV: %v", err)
			}
			if diff := cmp.Diff(tt.want, file.Contacts, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("contacts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantErrs, file.Errors, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("row errors (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantIgnored, file.IgnoredColumns, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("ignored columns (-want +got):\n%s", diff)
			}
		})
	}
}

// Each column is found under each of its names, in the spellings exports use: case, spaces, dashes and
// underscores do not count.
func TestParseContactCSVHeaderAliases(t *testing.T) {
	ada := ContactInput{FirstName: "Ada", LastName: "Lovelace", Phone: "+14155550123", Email: "ada@example.com", TimeZone: "America/Chicago"}
	columns := []struct {
		value string
		names []string
		// want keeps the column's field of ada, with the companion column's (email, or phone for an
		// email alias).
		want ContactInput
	}{
		{"+14155550123", []string{"phone", "Phone Number", "phone_number", "PhoneNumber", "Mobile", "mobile phone", "Mobile-Phone", "Cell", "Telephone", "TEL"},
			ContactInput{Phone: ada.Phone, Email: ada.Email}},
		{"Ada", []string{"first_name", "First Name", "firstname", "FirstName", "first-name", "Given Name", "given_name"},
			ContactInput{FirstName: ada.FirstName, Email: ada.Email}},
		{"Lovelace", []string{"last_name", "Last Name", "LastName", "Surname", "Family Name", "family-name"},
			ContactInput{LastName: ada.LastName, Email: ada.Email}},
		{"ada@example.com", []string{"email", "E-mail", "Email Address", "E-mail Address", "email_address", "EMAIL"},
			ContactInput{Email: ada.Email, Phone: ada.Phone}},
		{"America/Chicago", []string{"time_zone", "Time Zone", "timezone", "TimeZone", "TZ", "tz"},
			ContactInput{TimeZone: ada.TimeZone, Email: ada.Email}},
	}
	for _, col := range columns {
		for _, name := range col.names {
			t.Run(name, func(t *testing.T) {
				companion, value := "email", ada.Email
				if col.want.Phone != "" && col.value == ada.Email {
					companion, value = "phone", ada.Phone
				}
				in := fmt.Sprintf("%s,%s\n%s,%s\n", name, companion, col.value, value)
				file, err := ParseContactCSV(strings.NewReader(in), "")
				if err != nil {
					t.Fatalf("ParseContactCSV(%q): %v", in, err)
				}
				if diff := cmp.Diff([]ContactInput{col.want}, file.Contacts); diff != "" {
					t.Errorf("contacts (-want +got):\n%s", diff)
				}
				if len(file.Errors) != 0 || len(file.IgnoredColumns) != 0 {
					t.Errorf("row errors %v, ignored columns %q: want none", file.Errors, file.IgnoredColumns)
				}
			})
		}
	}
}

// An export as a user's spreadsheet writes it: names under "First Name" and "Last Name", a national
// phone number, columns the import does not read.
func TestParseContactCSVRealExport(t *testing.T) {
	in := "First Name,Last Name,Phone,Company,Phone 2,,Notes\n" +
		"Ada,Lovelace,(415) 555-0105,Acme,,,met at the fair\n" +
		"Jean,Dupont,+33 1 23 45 67 89,,,,\n"
	file, err := ParseContactCSV(strings.NewReader(in), "US")
	if err != nil {
		t.Fatalf("ParseContactCSV: %v", err)
	}
	want := []ContactInput{
		{FirstName: "Ada", LastName: "Lovelace", Phone: "+14155550105"},
		{FirstName: "Jean", LastName: "Dupont", Phone: "+33123456789"},
	}
	if diff := cmp.Diff(want, file.Contacts); diff != "" {
		t.Errorf("contacts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"Company", "Phone 2", "Notes"}, file.IgnoredColumns); diff != "" {
		t.Errorf("ignored columns (-want +got):\n%s", diff)
	}
	if len(file.Errors) != 0 {
		t.Errorf("row errors: %v", file.Errors)
	}
}

// A phone without a country code is read in the region given, and is the row's error without one.
func TestParseContactCSVRegion(t *testing.T) {
	tests := []struct {
		region   string
		in       string
		want     []ContactInput
		wantErrs []CSVRowError
	}{
		{
			region: "US",
			in:     "phone,first_name\n(415) 555-0105,Ada\n+44 20 7946 0958,Jean\n1 415 555 0106,Cy\n415 555 010,Short\n",
			want: []ContactInput{
				{FirstName: "Ada", Phone: "+14155550105"}, {FirstName: "Jean", Phone: "+442079460958"}, {FirstName: "Cy", Phone: "+14155550106"},
			},
			wantErrs: []CSVRowError{{Row: 5, Error: `phone "415 555 010" has the wrong number of digits for US`}},
		},
		{
			region: "GB",
			in:     "phone,first_name\n07700 900123,Bo\n020 7946 0958,Di\n+1 415 555 0105,Ada\n",
			want: []ContactInput{
				{FirstName: "Bo", Phone: "+447700900123"}, {FirstName: "Di", Phone: "+442079460958"}, {FirstName: "Ada", Phone: "+14155550105"},
			},
		},
		{
			region: "",
			in:     "phone,first_name\n(415) 555-0105,Ada\n+44 20 7946 0958,Jean\n",
			want:   []ContactInput{{FirstName: "Jean", Phone: "+442079460958"}},
			wantErrs: []CSVRowError{
				{Row: 2, Error: `phone "(415) 555-0105" has no country code: write it in international form, such as +14155550123, or set the account's defaultCountry`},
			},
		},
	}
	for _, tt := range tests {
		t.Run("region "+tt.region, func(t *testing.T) {
			file, err := ParseContactCSV(strings.NewReader(tt.in), tt.region)
			if err != nil {
				t.Fatalf("ParseContactCSV: %v", err)
			}
			if diff := cmp.Diff(tt.want, file.Contacts); diff != "" {
				t.Errorf("contacts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantErrs, file.Errors, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("row errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseContactCSVFileErrors(t *testing.T) {
	tests := []struct {
		name        string
		in          string
		wantMessage string
	}{
		{"empty file", "", "the file is empty"},
		{"only a BOM", "\uFEFF", "the file is empty"},
		{"only blank lines", "\n\r\n   \n,,\n", "the file is empty"},
		{"no phone and no email column", "first_name,last_name\nAda,Lovelace\n", "names neither a phone nor an email column"},
		{"no header: data on the first line", "+14155550123,Ada\n+14155550124,Bob\n", "header row (line 1) names neither a phone nor an email column"},
		{"header after blank lines is reported on its line", "\n\nname\n", "header row (line 3)"},
		{"a column named twice", "Phone,phone_number\n+14155550123,+14155550124\n", `names the phone column twice: "Phone" and "phone_number"`},
		{"a column named twice under two aliases", "Phone, Mobile ,First Name\n+14155550123,+14155550124,Ada\n", `names the phone column twice: "Phone" and "Mobile"`},
		{"a column named twice in two spellings", "email,First Name,first-name\nada@example.com,Ada,Ada\n", `names the first_name column twice: "First Name" and "first-name"`},
		{"a spreadsheet instead of CSV", "PK\x03\x04\x14\x00\x06\x00\x08\x00\x00\x00!\x00phone\n", "the file is not CSV text (line 1 holds binary data)"},
		{"a header with an unclosed quote", "phone,\"first_name\n+14155550123,Ada\n", `the header row (line 1) is not valid CSV: unclosed quote`},
		{"a header with a bare quote", "\n\nphone,first\"name\n+14155550123,Ada\n", `the header row (line 3) is not valid CSV: bare quote in field 2`},
		{"binary data with quotes", "PK\x03\x04\"\x00phone\n", "the file is not CSV text (line 1 holds binary data)"},
		{"UTF-16 little endian", "\xff\xfep\x00h\x00o\x00n\x00e\x00\n\x00", "the file is UTF-16 text"},
		{"UTF-16 big endian", "\xfe\xff\x00p\x00h\x00o\x00n\x00e\x00\n", "the file is UTF-16 text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file, err := ParseContactCSV(strings.NewReader(tt.in), "")
			assertValidationError(t, err, tt.wantMessage)
			if file != nil {
				t.Errorf("got %d contacts and %d row errors with the error, want none", len(file.Contacts), len(file.Errors))
			}
		})
	}
}

func TestParseContactCSVRowLimit(t *testing.T) {
	skipUnderRace(t)
	const header = "phone,first_name\n"
	t.Run("exactly MaxImportRows rows", func(t *testing.T) {
		rows := &repeatedLines{line: "+14155550123,Ada\n", n: MaxImportRows}
		file, err := ParseContactCSV(io.MultiReader(strings.NewReader(header), rows), "")
		if err != nil {
			t.Fatalf("ParseContactCSV: %v", err)
		}
		if len(file.Contacts) != MaxImportRows || len(file.Errors) != 0 {
			t.Errorf("got %d contacts and %d row errors, want %d (one per row, though they repeat one phone) and 0", len(file.Contacts), len(file.Errors), MaxImportRows)
		}
	})
	t.Run("blank lines do not count", func(t *testing.T) {
		rows := &repeatedLines{line: "+14155550123,Ada\n\n,\n", n: MaxImportRows}
		if _, err := ParseContactCSV(io.MultiReader(strings.NewReader(header), rows), ""); err != nil {
			t.Fatalf("ParseContactCSV: %v", err)
		}
	})
	t.Run("one row too many", func(t *testing.T) {
		rows := &repeatedLines{line: "+14155550123,Ada\n", n: MaxImportRows + 1}
		_, err := ParseContactCSV(io.MultiReader(strings.NewReader(header), rows), "")
		assertValidationError(t, err, "more than 50000 contact rows")
	})
	t.Run("invalid rows count and reading stops at the limit", func(t *testing.T) {
		rows := &repeatedLines{line: "123,Bad\n", n: 2 * MaxImportRows}
		file, err := ParseContactCSV(io.MultiReader(strings.NewReader(header), rows), "")
		assertValidationError(t, err, "more than 50000 contact rows")
		if file != nil {
			t.Errorf("got %d row errors with the error, want none", len(file.Errors))
		}
		if rows.n < MaxImportRows/2 {
			t.Errorf("%d lines were left unread, want the rest of the file left unread", rows.n)
		}
	})
}

// A quoted field that is still open after maxRecordBytes is taken as unclosed: the rows after the
// quote are read on their own rather than becoming one contact's name.
func TestParseContactCSVLongQuotedField(t *testing.T) {
	row := "+14155550124,Bob," + strings.Repeat("x", 80) + "\n"
	n := maxRecordBytes/len(row) + 100
	in := io.MultiReader(
		strings.NewReader("phone,first_name,notes\n+14155550123,\"Ada\n"), // line 2 opens a quote
		&repeatedLines{line: row, n: n},                                   // lines 3 .. n+2
		strings.NewReader("end\",,\n+14155550125,Cy,\n"),                  // line n+3 would close it
	)
	file, err := ParseContactCSV(in, "")
	if err != nil {
		t.Fatalf("ParseContactCSV: %v", err)
	}
	got, rowErrs := file.Contacts, file.Errors
	// Each of Bob's n rows, then Cy's.
	want := slices.Repeat([]ContactInput{{FirstName: "Bob", Phone: "+14155550124"}}, n)
	want = append(want, ContactInput{FirstName: "Cy", Phone: "+14155550125"})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("contacts (-want +got):\n%s", diff)
	}
	wantErrs := []CSVRowError{{Row: 2, Error: csvUnclosedTooBig}, {Row: n + 3, Error: fmt.Sprintf(csvBareQuote, 1)}}
	if diff := cmp.Diff(wantErrs, rowErrs); diff != "" {
		t.Errorf("row errors (-want +got):\n%s", diff)
	}
}

// FuzzCSVRecordsMatchEncodingCSV checks csvRecords against encoding/csv with the same strict settings:
// the same records on the same lines, and a problem on the record where encoding/csv first fails.
func FuzzCSVRecordsMatchEncodingCSV(f *testing.F) {
	for _, seed := range []string{
		"a,b\n\"c\nd\",e\r\n\n  \"f\"\"g\",h\r",
		"a;\"b;c\";d\n\"\"\n \n\"x\"\"\"",
		"a,\"b\n\nc\"\"\"\r\n\r\r\n\"d",
		"a,b\"c\nd",
		"\"a\" ,b\n",
		"\xc2\x85\"a\",\u00a0b\r\r\n",
		"\"a\r\r\nb\"\r\rc",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, comma := range []byte{',', ';'} {
			cr := csv.NewReader(bytes.NewReader(data))
			cr.Comma = rune(comma)
			cr.FieldsPerRecord = -1
			cr.TrimLeadingSpace = true
			recs := &csvRecords{src: bufio.NewReader(bytes.NewReader(data)), comma: comma}
			// encoding/csv skips empty lines, csvRecords returns them as one empty field: compare
			// records that are not a single empty field.
			nextOurs := func() (int, []string, string, error) {
				for {
					line, fields, problem, err := recs.next(false)
					if err != nil || problem != "" || len(fields) != 1 || fields[0] != "" {
						return line, fields, problem, err
					}
				}
			}
			for {
				want, werr := cr.Read()
				if werr == nil && len(want) == 1 && want[0] == "" {
					continue
				}
				line, got, problem, err := nextOurs()
				if werr == io.EOF {
					if err != io.EOF {
						t.Fatalf("comma %q: encoding/csv ends, csvRecords reads line %d: %q, %q, %v", comma, line, got, problem, err)
					}
					break
				}
				var pe *csv.ParseError
				if errors.As(werr, &pe) {
					if err != nil || problem == "" || line != pe.StartLine {
						t.Fatalf("comma %q: encoding/csv fails on the record of line %d (%v), csvRecords reads line %d: %q, %q, %v",
							comma, pe.StartLine, werr, line, got, problem, err)
					}
					break
				}
				if werr != nil {
					t.Fatalf("encoding/csv: %v", werr)
				}
				wantLine, _ := cr.FieldPos(0)
				if err != nil || problem != "" || line != wantLine || !slices.Equal(got, want) {
					t.Fatalf("comma %q: encoding/csv reads line %d: %q; csvRecords reads line %d: %q, %q, %v",
						comma, wantLine, want, line, got, problem, err)
				}
			}
		}
	})
}

func TestParseContactCSVReadError(t *testing.T) {
	errDisk := errors.New("disk on fire")
	for name, r := range map[string]io.Reader{
		"before the header": iotest.ErrReader(errDisk),
		"after some rows":   io.MultiReader(strings.NewReader("phone\n+14155550123\n+1415"), iotest.ErrReader(errDisk)),
	} {
		t.Run(name, func(t *testing.T) {
			file, err := ParseContactCSV(r, "")
			if !errors.Is(err, errDisk) {
				t.Fatalf("err = %v, want the reader's error", err)
			}
			if code := ErrorCode(err); code != CodeInternal {
				t.Errorf("ErrorCode = %s, want %s: a failing reader is not the client's fault", code, CodeInternal)
			}
			if file != nil {
				t.Errorf("got %d contacts and %d row errors with the error, want none", len(file.Contacts), len(file.Errors))
			}
		})
	}
}

// FuzzParseContactCSV checks the promises that hold for any input, without a region and with one.
// Seeds are in testdata/fuzz/FuzzParseContactCSV.
func FuzzParseContactCSV(f *testing.F) {
	f.Add([]byte("phone,first_name,last_name,email\n+14155550123,Ada,Lovelace,ada@example.com\n"))
	f.Add([]byte("Mobile Phone,First Name,Surname,E-mail Address,Notes\n(415) 555-0105,Ada,Lovelace,ada@example.com,x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, region := range []string{"", "US"} {
			checkParsedCSV(t, data, region)
		}
	})
}

func checkParsedCSV(t *testing.T, data []byte, region string) {
	t.Helper()
	file, err := ParseContactCSV(bytes.NewReader(data), region)
	if err != nil {
		if code := ErrorCode(err); code != CodeValidation {
			t.Fatalf("region %q: error code %s (%v), want %s: the input is in memory", region, code, err, CodeValidation)
		}
		if file != nil {
			t.Fatalf("region %q: got %d contacts and %d row errors with the error %v", region, len(file.Contacts), len(file.Errors), err)
		}
		return
	}
	contacts, rowErrs := file.Contacts, file.Errors
	if n := len(contacts) + len(rowErrs); n > MaxImportRows {
		t.Fatalf("%d rows accepted or reported, more than MaxImportRows", n)
	}
	for _, c := range contacts {
		if c.Phone == "" && c.Email == "" {
			t.Fatalf("contact %+v has neither phone nor email", c)
		}
		if c.Phone != "" {
			if !strings.HasPrefix(c.Phone, "+") {
				t.Fatalf("phone %q does not start with +", c.Phone)
			}
			if norm, err := NormalizePhone(c.Phone); err != nil || norm != c.Phone {
				t.Fatalf("phone %q is not normalized: NormalizePhone gives %q, %v", c.Phone, norm, err)
			}
		}
		if norm, err := NormalizeEmail(c.Email); err != nil || norm != c.Email {
			t.Fatalf("email %q is not normalized: NormalizeEmail gives %q, %v", c.Email, norm, err)
		}
		for _, name := range []string{c.FirstName, c.LastName} {
			if !utf8.ValidString(name) || strings.TrimSpace(name) != name || utf8.RuneCountInString(name) > maxNameLength {
				t.Fatalf("name %q is not clean", name)
			}
		}
	}
	for _, name := range file.IgnoredColumns {
		if _, read := csvHeaderNames[csvHeaderKey(name)]; read || name == "" || strings.TrimSpace(name) != name {
			t.Fatalf("ignored column %q is a column the import reads, or blank, or not trimmed", name)
		}
	}
	lines := bytes.Count(data, []byte("\n")) + 1
	prev := 1 // the header's line at the earliest
	for _, e := range rowErrs {
		if e.Row <= prev || e.Row > lines {
			t.Fatalf("row error on line %d, want after line %d and within the file's %d lines", e.Row, prev, lines)
		}
		if e.Error == "" {
			t.Fatalf("row error on line %d has no message", e.Row)
		}
		prev = e.Row
	}
}

func assertValidationError(t *testing.T, err error, wantMessage string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Code != CodeValidation {
		t.Fatalf("err = %v, want a %s error", err, CodeValidation)
	}
	if !strings.Contains(e.Message, wantMessage) {
		t.Errorf("message %q, want it to contain %q", e.Message, wantMessage)
	}
}

// repeatedLines reads as line repeated n times, without holding the whole text; n counts down as the
// lines are read.
type repeatedLines struct {
	line string
	n    int
	rest string // the part of the current line not read yet
}

func (r *repeatedLines) Read(p []byte) (int, error) {
	total := 0
	for total < len(p) {
		if r.rest == "" {
			if r.n == 0 {
				break
			}
			r.n--
			r.rest = r.line
		}
		n := copy(p[total:], r.rest)
		r.rest = r.rest[n:]
		total += n
	}
	if total == 0 {
		return 0, io.EOF
	}
	return total, nil
}
