package models

import (
	"bytes"
	"errors"
	"io"
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
		name     string
		in       string
		want     []ContactInput
		wantErrs []CSVRowError
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
			name: "semicolon delimiter with a quoted header holding a comma",
			in:   "\"phone\";\"first_name\";\"notes, free text\"\n+14155550123;Ada;\"a, b\"\n",
			want: []ContactInput{{FirstName: "Ada", Phone: "+14155550123"}},
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
			wantErrs: []CSVRowError{{Row: 6, Error: `phone "123" has no country code: write it in international form, such as +14155550123`}},
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
			name: "unknown and extra columns are ignored",
			in:   "id,phone,company,first_name\n7,+14155550123,Acme,Ada,surplus,\"more, fields\"\n",
			want: []ContactInput{{FirstName: "Ada", Phone: "+14155550123"}},
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
				{Row: 2, Error: `phone "4155550123" has no country code: write it in international form, such as +14155550123`},
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
			name: "a repeated phone is returned once, the first",
			in:   "phone,first_name\n+14155550123,First\n+1 (415) 555-0123,Second\n0014155550123,Third\n+14155550124,Other\n",
			want: []ContactInput{{FirstName: "First", Phone: "+14155550123"}, {FirstName: "Other", Phone: "+14155550124"}},
		},
		{
			name: "without a phone, a repeated email is returned once",
			in:   "phone,email,first_name\n,ada@example.com,First\n,ADA@example.com ,Second\n+14155550123,ada@example.com,WithPhone\n",
			want: []ContactInput{
				{FirstName: "First", Email: "ada@example.com"},
				// CreateOrGetContact identifies a contact with a phone by its phone alone.
				{FirstName: "WithPhone", Phone: "+14155550123", Email: "ada@example.com"},
			},
		},
		{
			name: "a row repeating an invalid row is reported too",
			in:   "phone\n123\n123\n",
			wantErrs: []CSVRowError{
				{Row: 2, Error: `phone "123" has no country code: write it in international form, such as +14155550123`},
				{Row: 3, Error: `phone "123" has no country code: write it in international form, such as +14155550123`},
			},
		},
		{
			name:     "blank lines are skipped silently and still counted as lines",
			in:       "\n\n  \nphone,first_name\n\n   \n,\n \"\",\"\"\n+14155550123,Ada\n\n\n123,Bad\n",
			want:     []ContactInput{{FirstName: "Ada", Phone: "+14155550123"}},
			wantErrs: []CSVRowError{{Row: 12, Error: `phone "123" has no country code: write it in international form, such as +14155550123`}},
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
			name: "invalid UTF-8 in an ignored column does not matter",
			in:   "phone,company\n+14155550123,Soci\xe9t\xe9\n",
			want: []ContactInput{{Phone: "+14155550123"}},
		},
		{
			name:     "NUL in a name is a row error",
			in:       "phone,first_name\n+14155550123,A\x00da\n",
			wantErrs: []CSVRowError{{Row: 2, Error: "first_name must be valid UTF-8 text"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, rowErrs, err := ParseContactCSV(strings.NewReader(tt.in))
			if err != nil {
				t.Fatalf("ParseContactCSV: %v", err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("contacts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantErrs, rowErrs, cmpopts.EquateEmpty()); diff != "" {
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
		{"a spreadsheet instead of CSV", "PK\x03\x04\x14\x00\x06\x00\x08\x00\x00\x00!\x00phone\n", "the file is not CSV text (line 1 holds binary data)"},
		{"UTF-16 little endian", "\xff\xfep\x00h\x00o\x00n\x00e\x00\n\x00", "the file is UTF-16 text"},
		{"UTF-16 big endian", "\xfe\xff\x00p\x00h\x00o\x00n\x00e\x00\n", "the file is UTF-16 text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, rowErrs, err := ParseContactCSV(strings.NewReader(tt.in))
			assertValidationError(t, err, tt.wantMessage)
			if got != nil || rowErrs != nil {
				t.Errorf("got %d contacts and %d row errors with the error, want none", len(got), len(rowErrs))
			}
		})
	}
}

func TestParseContactCSVRowLimit(t *testing.T) {
	const header = "phone,first_name\n"
	t.Run("exactly MaxImportRows rows", func(t *testing.T) {
		rows := &repeatedLines{line: "+14155550123,Ada\n", n: MaxImportRows}
		got, rowErrs, err := ParseContactCSV(io.MultiReader(strings.NewReader(header), rows))
		if err != nil {
			t.Fatalf("ParseContactCSV: %v", err)
		}
		if len(got) != 1 || len(rowErrs) != 0 {
			t.Errorf("got %d contacts and %d row errors, want 1 (the rows repeat one phone) and 0", len(got), len(rowErrs))
		}
	})
	t.Run("blank lines do not count", func(t *testing.T) {
		rows := &repeatedLines{line: "+14155550123,Ada\n\n,\n", n: MaxImportRows}
		if _, _, err := ParseContactCSV(io.MultiReader(strings.NewReader(header), rows)); err != nil {
			t.Fatalf("ParseContactCSV: %v", err)
		}
	})
	t.Run("one row too many", func(t *testing.T) {
		rows := &repeatedLines{line: "+14155550123,Ada\n", n: MaxImportRows + 1}
		_, _, err := ParseContactCSV(io.MultiReader(strings.NewReader(header), rows))
		assertValidationError(t, err, "more than 50000 contact rows")
	})
	t.Run("invalid rows count and reading stops at the limit", func(t *testing.T) {
		rows := &repeatedLines{line: "123,Bad\n", n: 2 * MaxImportRows}
		_, rowErrs, err := ParseContactCSV(io.MultiReader(strings.NewReader(header), rows))
		assertValidationError(t, err, "more than 50000 contact rows")
		if rowErrs != nil {
			t.Errorf("got %d row errors with the error, want none", len(rowErrs))
		}
		if rows.n < MaxImportRows/2 {
			t.Errorf("%d lines were left unread, want the rest of the file left unread", rows.n)
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
			got, rowErrs, err := ParseContactCSV(r)
			if !errors.Is(err, errDisk) {
				t.Fatalf("err = %v, want the reader's error", err)
			}
			if code := ErrorCode(err); code != CodeInternal {
				t.Errorf("ErrorCode = %s, want %s: a failing reader is not the client's fault", code, CodeInternal)
			}
			if got != nil || rowErrs != nil {
				t.Errorf("got %d contacts and %d row errors with the error, want none", len(got), len(rowErrs))
			}
		})
	}
}

// FuzzParseContactCSV checks the promises that hold for any input. Seeds are in
// testdata/fuzz/FuzzParseContactCSV.
func FuzzParseContactCSV(f *testing.F) {
	f.Add([]byte("phone,first_name,last_name,email\n+14155550123,Ada,Lovelace,ada@example.com\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		contacts, rowErrs, err := ParseContactCSV(bytes.NewReader(data))
		if err != nil {
			if code := ErrorCode(err); code != CodeValidation {
				t.Fatalf("error code %s (%v), want %s: the input is in memory", code, err, CodeValidation)
			}
			if contacts != nil || rowErrs != nil {
				t.Fatalf("got %d contacts and %d row errors with the error %v", len(contacts), len(rowErrs), err)
			}
			return
		}
		if n := len(contacts) + len(rowErrs); n > MaxImportRows {
			t.Fatalf("%d rows accepted or reported, more than MaxImportRows", n)
		}
		identities := make(map[string]bool)
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
			identity := "phone:" + c.Phone
			if c.Phone == "" {
				identity = "email:" + c.Email
			}
			if identities[identity] {
				t.Fatalf("contact %s returned twice", identity)
			}
			identities[identity] = true
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
	})
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
