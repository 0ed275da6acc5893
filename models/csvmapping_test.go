package models_test

import (
	"slices"
	"strings"
	"testing"

	"funnelchat/models"
)

// The columns of a contact file: the API's import reads them as GuessCSVMapping guesses them from the
// header; the inbox lets the person choose (CSVMapping.Problems, ParseContactCSVMapped), from the same
// guess, and shows the file first (PreviewContactCSV).

func TestGuessCSVMapping(t *testing.T) {
	header := []string{"\uFEFF Mobile Phone", "Given-Name", "SURNAME", "E-mail Address", "TZ", "Company", "", "phone"}
	got := models.GuessCSVMapping(header)
	want := models.CSVMapping{"phone", "first_name", "last_name", "email", "time_zone", "", "", "phone"}
	if !slices.Equal(got, want) {
		t.Fatalf("guess %q, want %q", got, want)
	}
	// The API's import reads by the same guess: a field named twice is its 400.
	_, err := models.ParseContactCSV(strings.NewReader(strings.Join(header, ",")+"\n"), "")
	if models.ErrorCode(err) != models.CodeValidation || !strings.Contains(models.ErrorMessage(err), `names the phone column twice: "Mobile Phone" and "phone"`) {
		t.Fatalf("the API's import of the same header: %v", err)
	}
}

func TestCSVMappingProblems(t *testing.T) {
	header := []string{"Mobile", "Name", "", "Mail"}
	for _, tc := range []struct {
		name string
		m    models.CSVMapping
		want []string
	}{
		{"usable", models.CSVMapping{"phone", "first_name", "", ""}, nil},
		{"an email alone will do", models.CSVMapping{"", "", "", "email"}, nil},
		{"an unnamed column can be read", models.CSVMapping{"", "", "email", ""}, nil},
		{"a field twice, and another twice", models.CSVMapping{"phone", "phone", "last_name", "last_name"}, []string{
			`phone is chosen for two columns, "Mobile" and "Name": choose it for one of them`,
			`last name is chosen for two columns, "column 3" and "Mail": choose it for one of them`,
		}},
		{"neither phone nor email", models.CSVMapping{"", "first_name", "", ""}, []string{
			"choose the column that holds the phone or the email: each contact needs one",
		}},
		{"a field that is not one", models.CSVMapping{"phone", "nickname", "", ""}, []string{
			`column 2: "nickname" is not a field the import reads (phone, first_name, last_name, email, time_zone, or none)`,
		}},
		{"another file's width", models.CSVMapping{"phone", ""}, []string{
			"the columns chosen are for a file of 2 columns, and this file has 4: upload it again",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.m.Problems(header); !slices.Equal(got, tc.want) {
				t.Fatalf("problems %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParseContactCSVMapped(t *testing.T) {
	file := "Mobile,Name,Nick,Notes\n" +
		"(415) 555-0101,Ann,Annie,VIP\n" +
		"+14155550102,Bob,,\n" +
		"12,Cyd,,\n"
	// The person reads Nick as the first name and leaves Name out; phones are read in the US.
	m := models.CSVMapping{"phone", "", "first_name", ""}
	got, err := models.ParseContactCSVMapped(strings.NewReader(file), "US", m)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Contacts) != 2 || got.Contacts[0].Phone != "+14155550101" || got.Contacts[0].FirstName != "Annie" || got.Contacts[1].FirstName != "" {
		t.Fatalf("contacts %+v", got.Contacts)
	}
	if len(got.Errors) != 1 || got.Errors[0].Row != 4 {
		t.Fatalf("errors %+v", got.Errors)
	}
	if !slices.Equal(got.IgnoredColumns, []string{"Name", "Notes"}) {
		t.Fatalf("ignored %q", got.IgnoredColumns)
	}
	// A choice that does not fit the file is refused whole, with the first reason.
	for _, bad := range []models.CSVMapping{nil, {"phone", "phone", "", ""}, {"phone"}} {
		if _, err := models.ParseContactCSVMapped(strings.NewReader(file), "US", bad); models.ErrorCode(err) != models.CodeValidation {
			t.Errorf("mapping %q: %v, want VALIDATION_ERROR", bad, err)
		}
	}
}

func TestPreviewContactCSV(t *testing.T) {
	file := "\uFEFFphone;name;notes\n" +
		"+14155550101;Ann\n" + // short: padded
		"\n" +
		"+14155550102;Bob;x;extra\n" + // long: cut
		"+14155550103;\"Cyd;never closed\n" +
		"+14155550104;Dee;\n" +
		"+14155550105;Eve;\n"
	p, err := models.PreviewContactCSV(strings.NewReader(file), 3)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Header, []string{"phone", "name", "notes"}) || !slices.Equal(p.Guess, models.CSVMapping{"phone", "", ""}) {
		t.Fatalf("header %q, guess %q", p.Header, p.Guess)
	}
	// The unclosed quote makes line 5 a row of its own, and the lines after it rows again.
	if p.RowCount != 5 || len(p.Rows) != 3 {
		t.Fatalf("%d rows, %d shown", p.RowCount, len(p.Rows))
	}
	if r := p.Rows[0]; r.Line != 2 || !slices.Equal(r.Fields, []string{"+14155550101", "Ann", ""}) {
		t.Fatalf("row 1: %+v", r)
	}
	if r := p.Rows[1]; r.Line != 4 || !slices.Equal(r.Fields, []string{"+14155550102", "Bob", "x"}) {
		t.Fatalf("row 2: %+v", r)
	}
	if r := p.Rows[2]; r.Line != 5 || r.Fields != nil || !strings.HasPrefix(r.Problem, "unclosed quote") || r.Raw != `+14155550103;"Cyd;never closed` {
		t.Fatalf("row 3: %+v", r)
	}

	for _, tc := range []struct{ name, file, want string }{
		{"empty", "", "the file is empty"},
		{"binary header", "ph\x00one\n", "not CSV text (line 1 holds binary data)"},
		{"binary row", "phone\n+14155550101\x00\n", "not CSV text (line 2 holds binary data)"},
		{"header not UTF-8", "ph\xffone\n+14155550101\n", "its header row (line 1) is not UTF-8"},
		{"UTF-16", "\xff\xfep\x00", "UTF-16"},
		{"header not CSV", "\"phone\n", "the header row (line 1) is not valid CSV"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := models.PreviewContactCSV(strings.NewReader(tc.file), 5)
			if models.ErrorCode(err) != models.CodeValidation || !strings.Contains(models.ErrorMessage(err), tc.want) {
				t.Fatalf("%v, want VALIDATION_ERROR saying %q", err, tc.want)
			}
		})
	}
	// A header the guess cannot read is no error: the person chooses the columns.
	if p, err := models.PreviewContactCSV(strings.NewReader("name,company\nAnn,Acme\n"), 5); err != nil || !slices.Equal(p.Guess, models.CSVMapping{"", ""}) {
		t.Fatalf("an unguessable header: %+v, %v", p, err)
	}
}
