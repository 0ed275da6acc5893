package models

import (
	"io"
	"strings"
	"unicode/utf8"
)

// CSVPreview is what the inbox shows of a contact file before importing it: its header, the columns
// the API's import would read (Guess), its first rows and how many rows it has.
type CSVPreview struct {
	// Header is the header row's names, without surrounding space ("" for an unnamed column).
	Header []string
	// Guess is GuessCSVMapping of the header: the choice the import starts from.
	Guess CSVMapping
	// Rows are the first data rows, each with one field per header column (shorter rows padded with
	// "", longer ones cut), or the problem that makes the row invalid CSV.
	Rows []CSVRecord
	// RowCount is the number of data rows (blank lines are not rows), as the import counts them.
	RowCount int
}

// PreviewContactCSV reads a contact file as the import reads it (ScanContactCSV) and returns its
// header, the guessed columns, its first n rows and its row count. Fields that are not valid UTF-8 are
// shown with the replacement character. Errors: those of ParseContactCSV for a file that cannot be
// read at all (empty, not CSV text, UTF-16, a header that is not valid CSV, too many rows), and, since
// a person is to read the file's columns, a header that is not UTF-8 text and a NUL anywhere (the
// import itself would take such a file's valid rows): an image or an archive shows as what it is,
// not as a file of one odd column. A header whose columns cannot be guessed is no error here: the
// person chooses them.
func PreviewContactCSV(r io.Reader, n int) (*CSVPreview, error) {
	p := &CSVPreview{}
	err := ScanContactCSV(r, func(h CSVRecord) error {
		for _, cell := range h.Fields {
			if !utf8.ValidString(cell) {
				return Errorf(CodeValidation, "the file is not CSV text: its header row (line %d) is not UTF-8; export the spreadsheet as CSV UTF-8", h.Line)
			}
		}
		p.Header, _ = headerNames(h.Fields)
		for i := range p.Header {
			p.Header[i] = strings.Clone(p.Header[i])
		}
		p.Guess = GuessCSVMapping(h.Fields)
		return nil
	}, func(rec CSVRecord) error {
		for _, f := range rec.Fields {
			if strings.IndexByte(f, 0) >= 0 {
				return errBinaryCSV(rec.Line)
			}
		}
		if strings.IndexByte(rec.Raw, 0) >= 0 {
			return errBinaryCSV(rec.Line)
		}
		p.RowCount++
		if len(p.Rows) >= n {
			return nil
		}
		row := CSVRecord{Line: rec.Line, Problem: rec.Problem, Raw: strings.ToValidUTF8(rec.Raw, "\uFFFD")}
		if rec.Problem == "" {
			row.Fields = make([]string, len(p.Header))
			for i := range row.Fields {
				if i < len(rec.Fields) {
					row.Fields[i] = strings.ToValidUTF8(strings.Clone(rec.Fields[i]), "\uFFFD")
				}
			}
		}
		p.Rows = append(p.Rows, row)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}
