package models

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// CSVRowError reports a row that was not imported.
type CSVRowError struct {
	// Row is the 1-based line number in the file where the row starts, counting the header as row 1.
	Row int `json:"row"`
	// Error says why, for the client, e.g. "phone \"123\" has no country code".
	Error string `json:"error"`
}

// MaxImportRows bounds one import: a file with more data rows is refused as a whole.
const MaxImportRows = 50000

// ParseContactCSV reads a CSV file of contacts: a header row naming the columns phone, first_name,
// last_name and email (any order, case-insensitive, surrounding spaces and a UTF-8 BOM ignored;
// phone_number, firstName and lastName accepted as aliases; unknown columns ignored), then one contact
// per row. The delimiter is a comma or a semicolon, whichever the header line uses.
//
// Each row is validated the way CreateOrGetContact validates its input. Valid rows are returned
// normalized (phone in E.164, email lower-cased, names trimmed), in file order; a row repeating an
// earlier row's phone (or, for a row without a phone, email) is left out. Invalid rows, including rows
// with invalid UTF-8, are reported in the second result with their line number and skipped. Blank lines
// are skipped silently. A file with a header and no rows returns no contacts and no error.
//
// Errors: VALIDATION_ERROR for an empty file, a header naming neither a phone nor an email column (or a
// column twice), more than MaxImportRows data rows, or a file that is not CSV text; anything else (a
// failing reader) is internal. The file is streamed: besides the result, only a record at a time and
// the set of identities seen are held.
func ParseContactCSV(r io.Reader) ([]ContactInput, []CSVRowError, error) {
	br := bufio.NewReader(r)
	if err := skipByteOrderMark(br); err != nil {
		return nil, nil, err
	}
	head, err := readHead(br)
	if err != nil {
		return nil, nil, err
	}
	cr := csv.NewReader(io.MultiReader(bytes.NewReader(head), br))
	cr.Comma = sniffDelimiter(head)
	cr.FieldsPerRecord = -1
	cr.LazyQuotes = true
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true

	var (
		cols     *csvColumns
		contacts []ContactInput
		rowErrs  []CSVRowError
		seen     = make(map[string]struct{})
		rows     int
	)
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, nil, Errorf(CodeValidation, "the file is not valid CSV: line %d: %v", pe.Line, pe.Err)
			}
			return nil, nil, fmt.Errorf("read contact csv: %w", err)
		}
		if isBlankRecord(rec) {
			continue
		}
		line, _ := cr.FieldPos(0)
		if cols == nil {
			if cols, err = parseCSVHeader(rec, line); err != nil {
				return nil, nil, err
			}
			continue
		}
		if rows++; rows > MaxImportRows {
			return nil, nil, Errorf(CodeValidation, "the file has more than %d contact rows: split it into several imports", MaxImportRows)
		}
		in, identity, err := cols.contact(rec)
		if err != nil {
			rowErrs = append(rowErrs, CSVRowError{Row: line, Error: ErrorMessage(err)})
			continue
		}
		if _, dup := seen[identity]; dup {
			continue
		}
		seen[identity] = struct{}{}
		contacts = append(contacts, in)
	}
	if cols == nil {
		return nil, nil, Errorf(CodeValidation, "the file is empty: it needs a header row naming the columns phone, first_name, last_name, email")
	}
	return contacts, rowErrs, nil
}

// Byte order marks: UTF-8's is dropped; UTF-16's means a spreadsheet saved "Unicode text", which is
// not what the import reads.
var (
	utf8BOM    = []byte{0xEF, 0xBB, 0xBF}
	utf16LEBOM = []byte{0xFF, 0xFE}
	utf16BEBOM = []byte{0xFE, 0xFF}
)

func skipByteOrderMark(br *bufio.Reader) error {
	start, err := br.Peek(len(utf8BOM))
	if err != nil && err != io.EOF {
		return fmt.Errorf("read contact csv: %w", err)
	}
	switch {
	case bytes.HasPrefix(start, utf8BOM):
		_, _ = br.Discard(len(utf8BOM)) // cannot fail: the bytes are buffered
	case bytes.HasPrefix(start, utf16LEBOM), bytes.HasPrefix(start, utf16BEBOM):
		return Errorf(CodeValidation, "the file is UTF-16 text: save it as CSV UTF-8")
	}
	return nil
}

// maxHeadBytes bounds how much is read ahead to find the header line and its delimiter.
const maxHeadBytes = 64 << 10

// readHead reads up to and including the first line that is not blank (the header), or up to
// maxHeadBytes, or to the end of the file. The bytes are handed back to the CSV reader, so line
// numbers stay those of the file.
func readHead(br *bufio.Reader) ([]byte, error) {
	var head []byte
	lineStart := 0
	for len(head) < maxHeadBytes {
		chunk, err := br.ReadSlice('\n')
		head = append(head, chunk...)
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF:
			return head, nil
		case err != nil:
			return nil, fmt.Errorf("read contact csv: %w", err)
		}
		if !isBlankLine(head[lineStart:]) {
			return head, nil
		}
		lineStart = len(head)
	}
	return head, nil
}

// blankChars are what a blank line holds: spreadsheets export empty rows as a run of delimiters, maybe
// quoted. A line or record of nothing else is skipped, whichever delimiter the file uses, so the
// header is found on the same line by the delimiter sniffing and by the CSV reader.
const blankChars = " \t\r\n,;\""

func isBlankLine(line []byte) bool {
	return len(bytes.Trim(line, blankChars)) == 0
}

func isBlankRecord(rec []string) bool {
	for _, f := range rec {
		if strings.Trim(f, blankChars) != "" {
			return false
		}
	}
	return true
}

// sniffDelimiter returns ';' when the header line (the last line of head) separates more fields with
// semicolons than with commas, outside quotes, and ',' otherwise.
func sniffDelimiter(head []byte) rune {
	line := bytes.TrimRight(head, "\r\n")
	if i := bytes.LastIndexByte(line, '\n'); i >= 0 {
		line = line[i+1:]
	}
	commas, semicolons, quoted := 0, 0, false
	for _, b := range line {
		switch {
		case b == '"':
			quoted = !quoted
		case quoted:
		case b == ',':
			commas++
		case b == ';':
			semicolons++
		}
	}
	if semicolons > commas {
		return ';'
	}
	return ','
}

// The columns the import reads, and the header names that designate them (compared lower-cased).
const (
	colPhone = iota
	colFirstName
	colLastName
	colEmail
	numCSVColumns
)

var csvColumnNames = [numCSVColumns]string{"phone", "first_name", "last_name", "email"}

var csvHeaderNames = map[string]int{
	"phone":        colPhone,
	"phone_number": colPhone,
	"phonenumber":  colPhone, // the API's phoneNumber
	"first_name":   colFirstName,
	"firstname":    colFirstName,
	"last_name":    colLastName,
	"lastname":     colLastName,
	"email":        colEmail,
}

// csvColumns holds, for each column the import reads, its index in a record, or -1 when the file does
// not have it.
type csvColumns [numCSVColumns]int

func parseCSVHeader(rec []string, line int) (*csvColumns, error) {
	cols := &csvColumns{-1, -1, -1, -1}
	for i, name := range rec {
		// A NUL never appears in CSV text; it does in spreadsheets, archives and UTF-16 files.
		if strings.IndexByte(name, 0) >= 0 {
			return nil, Errorf(CodeValidation, "the file is not CSV text (line %d holds binary data): export the spreadsheet as CSV UTF-8", line)
		}
		name = strings.TrimFunc(name, func(r rune) bool { return unicode.IsSpace(r) || r == '\uFEFF' })
		col, ok := csvHeaderNames[strings.ToLower(name)]
		if !ok {
			continue
		}
		if prev := cols[col]; prev >= 0 {
			return nil, Errorf(CodeValidation, "the header row (line %d) names the %s column twice: %q and %q",
				line, csvColumnNames[col], strings.TrimSpace(rec[prev]), name)
		}
		cols[col] = i
	}
	if cols[colPhone] < 0 && cols[colEmail] < 0 {
		return nil, Errorf(CodeValidation, "the header row (line %d) names neither a phone nor an email column: expected columns phone, first_name, last_name, email", line)
	}
	return cols, nil
}

// contact validates a data row as CreateOrGetContact validates its input, and returns the normalized
// contact with the identity that makes two rows the same contact. Messages name the CSV columns.
func (cols *csvColumns) contact(rec []string) (ContactInput, string, error) {
	var raw [numCSVColumns]string
	for col, i := range cols {
		if i < 0 || i >= len(rec) {
			continue // short row: the missing columns are empty
		}
		if !utf8.ValidString(rec[i]) {
			return ContactInput{}, "", Errorf(CodeValidation, "%s is not valid UTF-8 text: save the file as CSV UTF-8", csvColumnNames[col])
		}
		raw[col] = rec[i]
	}
	phone, err := NormalizePhone(raw[colPhone])
	if err != nil {
		return ContactInput{}, "", err
	}
	email, err := NormalizeEmail(raw[colEmail])
	if err != nil {
		return ContactInput{}, "", err
	}
	if phone == "" && email == "" {
		return ContactInput{}, "", Errorf(CodeValidation, "a contact needs a phone or an email")
	}
	first, err := cleanName(csvColumnNames[colFirstName], raw[colFirstName])
	if err != nil {
		return ContactInput{}, "", err
	}
	last, err := cleanName(csvColumnNames[colLastName], raw[colLastName])
	if err != nil {
		return ContactInput{}, "", err
	}
	// The fields of a record share one allocation with its ignored columns: copy what is kept, so a
	// large file's notes are not held until the import ends.
	in := ContactInput{
		FirstName: strings.Clone(first),
		LastName:  strings.Clone(last),
		Phone:     phone,
		Email:     strings.Clone(email),
	}
	// The identity CreateOrGetContact deduplicates on: the phone, else the email.
	if phone != "" {
		return in, "phone:" + phone, nil
	}
	return in, "email:" + email, nil
}
