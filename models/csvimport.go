package models

import (
	"bufio"
	"bytes"
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

// ContactCSV is a contact file as ParseContactCSV read it: the contacts of its valid rows, the rows it
// did not take, and the header's names of the columns it did not read.
type ContactCSV struct {
	Contacts       []ContactInput
	Errors         []CSVRowError
	IgnoredColumns []string
}

// ParseContactCSV reads a CSV file of contacts: a header row naming the columns phone, first_name,
// last_name, email and time_zone (any order; case, spaces, dashes, underscores, surrounding spaces and
// a UTF-8 BOM ignored; aliases in csvcolumns.go, such as "Mobile Phone", "Given Name", "Surname",
// "E-mail Address"), then one contact per row. Other columns are not read; their names are returned as
// IgnoredColumns. The delimiter is a comma or a semicolon, whichever the header line uses. A phone
// without a country code is read in region (NormalizePhoneIn; the account's is Store.PhoneRegion).
//
// Quoting is strict RFC 4180, as encoding/csv reads it without LazyQuotes (space before a field is
// ignored): a field holding the delimiter, a quote or a line break is enclosed in double quotes, with
// each quote inside it doubled; such a quoted field may span lines. A row that breaks this rule is
// reported as that row's error and the import goes on: a quote in a field that does not start with
// one ("bare quote"), text after a field's closing quote, or a quoted field still open at the end of
// the file (or after maxRecordBytes: "unclosed quote"). When such a row spans several lines, reading
// resumes at the line after the row's first line, so the rows that an unclosed quote swallowed are
// read on their own. A header row that breaks the rule makes the whole file invalid.
//
// Each row is validated the way CreateOrGetContact validates its input. Valid rows are returned
// normalized (phone in E.164, email lower-cased, names trimmed), in file order, one per row: a row
// repeating an earlier row's phone (or, for a row without a phone, email) is returned too, so that
// ImportContacts counts every row. Invalid rows, including rows with invalid UTF-8 or bad quoting, are
// reported in Errors with the line number the row starts on (the header's line counts) and skipped.
// Blank lines are skipped silently. A file with a header and no rows returns no contacts and no error.
//
// Errors: VALIDATION_ERROR for an empty file, a header naming neither a phone nor an email column (or a
// column twice) or with bad quoting, more than MaxImportRows data rows, or a file that is not CSV
// text; anything else (a failing reader) is internal. The file is streamed: besides the result, only a
// record at a time is held.
func ParseContactCSV(r io.Reader, region string) (*ContactCSV, error) {
	return parseContactCSV(r, region, nil)
}

// ParseContactCSVMapped reads a CSV file of contacts as ParseContactCSV does, with the columns read as
// m says (the inbox's import, where the user chose them) instead of as their names suggest: the
// header row is only counted, and the columns m leaves out are IgnoredColumns. Errors: those of
// ParseContactCSV, and VALIDATION_ERROR for a mapping that does not fit the file (CSVMapping.Problems).
func ParseContactCSVMapped(r io.Reader, region string, m CSVMapping) (*ContactCSV, error) {
	if m == nil {
		m = CSVMapping{}
	}
	return parseContactCSV(r, region, m)
}

// parseContactCSV is ParseContactCSV with the columns guessed from the header (m nil) or as m chose.
func parseContactCSV(r io.Reader, region string, m CSVMapping) (*ContactCSV, error) {
	var (
		cols *csvColumns
		file = &ContactCSV{}
	)
	err := scanContactCSV(r, func(h CSVRecord) error {
		var err error
		if m == nil {
			cols, file.IgnoredColumns, err = parseCSVHeader(h.Fields, h.Line, region)
		} else {
			cols, file.IgnoredColumns, err = m.mappedHeader(h.Fields, region)
		}
		return err
	}, func(rec CSVRecord) error {
		if rec.Problem != "" {
			file.Errors = append(file.Errors, CSVRowError{Row: rec.Line, Error: rec.Problem})
			return nil
		}
		in, err := cols.contact(rec.Fields)
		if err != nil {
			file.Errors = append(file.Errors, CSVRowError{Row: rec.Line, Error: ErrorMessage(err)})
			return nil
		}
		file.Contacts = append(file.Contacts, in)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return file, nil
}

// CSVRecord is one record of a contact file as every import reads it (ScanContactCSV): the line it
// starts on, its fields (valid until the next record is read), or the problem that made it invalid CSV
// with Raw, its first line as written.
type CSVRecord struct {
	Line    int
	Fields  []string
	Problem string
	Raw     string
}

// ScanContactCSV reads a contact file's records the way ParseContactCSV reads them (byte order mark,
// delimiter, quoting, blank lines, the row limit, and the errors for a file that cannot be read at
// all) and hands header the header row and row each data row, in file order. It stops at the first
// error either returns.
func ScanContactCSV(r io.Reader, header, row func(CSVRecord) error) error {
	return scanContactCSV(r, header, row)
}

func scanContactCSV(r io.Reader, header, row func(CSVRecord) error) error {
	br := bufio.NewReader(r)
	if err := skipByteOrderMark(br); err != nil {
		return err
	}
	head, err := readHead(br)
	if err != nil {
		return err
	}
	recs := &csvRecords{src: bufio.NewReader(io.MultiReader(bytes.NewReader(head), br)), comma: byte(sniffDelimiter(head))}

	seenHeader, rows := false, 0
	for {
		// Before the header, blank lines are skipped as readHead skips them, so that the header is the
		// line the delimiter was sniffed on.
		line, rec, problem, err := recs.next(!seenHeader)
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if !seenHeader {
			if problem != "" {
				if bytes.IndexByte(recs.raw, 0) >= 0 {
					return errBinaryCSV(line)
				}
				return Errorf(CodeValidation, "the header row (line %d) is not valid CSV: %s", line, problem)
			}
			// A NUL never appears in CSV text; it does in spreadsheets, archives and UTF-16 files.
			for _, name := range rec {
				if strings.IndexByte(name, 0) >= 0 {
					return errBinaryCSV(line)
				}
			}
			if err := header(CSVRecord{Line: line, Fields: rec}); err != nil {
				return err
			}
			seenHeader = true
			continue
		}
		if problem == "" && isBlankRecord(rec) {
			continue
		}
		if rows++; rows > MaxImportRows {
			return Errorf(CodeValidation, "the file has more than %d contact rows: split it into several imports", MaxImportRows)
		}
		out := CSVRecord{Line: line, Fields: rec, Problem: problem}
		if problem != "" {
			first, _, _ := bytes.Cut(recs.raw, []byte("\n"))
			out.Raw = string(bytes.TrimSuffix(first, []byte("\r")))
		}
		if err := row(out); err != nil {
			return err
		}
	}
	if !seenHeader {
		return Errorf(CodeValidation, "the file is empty: it needs a header row naming the columns phone, first_name, last_name, email")
	}
	return nil
}

// maxRecordBytes bounds a row whose quoted field spans lines: a quote still open beyond it is taken as
// never closed, so a stray quote cannot make one row of the rest of a large file.
const maxRecordBytes = 1 << 20

// csvRecords splits CSV text into records and their fields with the strict quoting rules of
// encoding/csv (LazyQuotes off, TrimLeadingSpace on, any number of fields), but reports a record that
// breaks them as a problem of that record, and then goes on with the next line.
type csvRecords struct {
	src   *bufio.Reader
	comma byte
	// pending is read before src: the lines after the first of a record that was not valid CSV.
	pending []byte
	line    int    // lines read so far
	raw     []byte // the current record's lines, as read
	buf     []byte // its fields, unquoted, one after another
	ends    []int  // where each field ends in buf
	fields  []string
}

// Problems a record can have; %d is the 1-based field.
const (
	csvUnclosedAtEOF  = "unclosed quote: a quoted field of this row is still open at the end of the file; write a quote inside a quoted field as \"\""
	csvUnclosedTooBig = "unclosed quote: a quoted field of this row is still open after 1 MiB; write a quote inside a quoted field as \"\""
	csvBareQuote      = "bare quote in field %d: a field holding a quote must be enclosed in quotes, with the quote doubled (\"\")"
	csvAfterQuote     = "unexpected text after the closing quote of field %d: write a quote inside a quoted field as \"\""
	// A quoted field that spans lines and then fails is most likely a quote that was never closed.
	csvRunsOn = "unclosed quote in field %d: the quoted field runs on to line %d, where a quote is followed by text; write a quote inside a quoted field as \"\""
)

// next reads the next record and returns the number of its first line with its fields, or with the
// problem that makes it invalid (then the lines after its first are read again as records of their
// own). The fields are valid until the next call. At the end of the text it returns io.EOF; a failing
// reader is an internal error. With skipBlank, blank lines (isBlankLine) are skipped first.
func (r *csvRecords) next(skipBlank bool) (line int, fields []string, problem string, err error) {
	for {
		r.raw, r.buf, r.ends = r.raw[:0], r.buf[:0], r.ends[:0]
		if err := r.readLine(); err != nil {
			return 0, nil, "", err
		}
		if !skipBlank || !isBlankLine(r.raw) {
			break
		}
	}
	line = r.line
	firstEnd := len(r.raw)
	problem, err = r.parse()
	if err != nil {
		return 0, nil, "", err
	}
	if problem != "" {
		if len(r.raw) > firstEnd {
			rest := make([]byte, 0, len(r.raw)-firstEnd+len(r.pending))
			rest = append(rest, r.raw[firstEnd:]...)
			r.pending = append(rest, r.pending...)
			r.line = line
		}
		return line, nil, problem, nil
	}
	// One string for the record, as encoding/csv does; ParseContactCSV copies what it keeps.
	all := string(r.buf)
	r.fields = r.fields[:0]
	start := 0
	for _, end := range r.ends {
		r.fields = append(r.fields, all[start:end])
		start = end
	}
	return line, r.fields, "", nil
}

// parse reads the fields of the record whose first line is in r.raw, reading more lines while a
// quoted field is open.
func (r *csvRecords) parse() (problem string, err error) {
	pos := 0
	end, newline := lineEnd(r.raw, 0)
	for field := 1; ; field++ {
		for pos < end {
			c, size := utf8.DecodeRune(r.raw[pos:end])
			if !unicode.IsSpace(c) {
				break
			}
			pos += size
		}
		if pos == end || r.raw[pos] != '"' {
			i := bytes.IndexByte(r.raw[pos:end], r.comma)
			if i < 0 {
				i = end - pos
			}
			if bytes.IndexByte(r.raw[pos:pos+i], '"') >= 0 {
				return fmt.Sprintf(csvBareQuote, field), nil
			}
			r.buf = append(r.buf, r.raw[pos:pos+i]...)
			r.ends = append(r.ends, len(r.buf))
			if pos += i; pos == end {
				return "", nil
			}
			pos++ // the delimiter
			continue
		}
		pos++ // the opening quote
		opened := r.line
		for {
			i := bytes.IndexByte(r.raw[pos:end], '"')
			if i < 0 {
				// The field goes on on the next line.
				r.buf = append(r.buf, r.raw[pos:end]...)
				if !newline {
					return csvUnclosedAtEOF, nil
				}
				if len(r.raw) > maxRecordBytes {
					return csvUnclosedTooBig, nil
				}
				r.buf = append(r.buf, '\n')
				pos = len(r.raw)
				if err := r.readLine(); err == io.EOF {
					return csvUnclosedAtEOF, nil
				} else if err != nil {
					return "", err
				}
				end, newline = lineEnd(r.raw, pos)
				continue
			}
			r.buf = append(r.buf, r.raw[pos:pos+i]...)
			pos += i + 1
			switch {
			case pos < end && r.raw[pos] == '"': // a doubled quote
				r.buf = append(r.buf, '"')
				pos++
				continue
			case pos == end:
				r.ends = append(r.ends, len(r.buf))
				return "", nil
			case r.raw[pos] == r.comma:
				r.ends = append(r.ends, len(r.buf))
				pos++
			case r.line > opened:
				return fmt.Sprintf(csvRunsOn, field, r.line), nil
			default:
				return fmt.Sprintf(csvAfterQuote, field), nil
			}
			break
		}
	}
}

// lineEnd returns where the content of the line starting at start in b ends, without its "\n" or
// "\r\n" (or, on the last line, a trailing "\r", as encoding/csv drops it), and whether it had a newline.
func lineEnd(b []byte, start int) (end int, newline bool) {
	end = len(b)
	if end > start && b[end-1] == '\n' {
		end--
		newline = true
	}
	if end > start && b[end-1] == '\r' {
		end--
	}
	return end, newline
}

// readLine appends the next line, with its newline when it has one, to r.raw. It returns io.EOF at
// the end of the text.
func (r *csvRecords) readLine() error {
	if len(r.pending) > 0 {
		n := bytes.IndexByte(r.pending, '\n') + 1
		if n == 0 {
			n = len(r.pending)
		}
		r.raw = append(r.raw, r.pending[:n]...)
		r.pending = r.pending[n:]
		r.line++
		return nil
	}
	start := len(r.raw)
	for {
		chunk, err := r.src.ReadSlice('\n')
		r.raw = append(r.raw, chunk...)
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF:
			if len(r.raw) == start {
				return io.EOF
			}
		case err != nil:
			return fmt.Errorf("read contact csv: %w", err)
		}
		r.line++
		return nil
	}
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

func errBinaryCSV(line int) error {
	return Errorf(CodeValidation, "the file is not CSV text (line %d holds binary data): export the spreadsheet as CSV UTF-8", line)
}
