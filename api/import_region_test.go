package api_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// importFile posts csv to the list's import and returns the answer.
func importFile(t *testing.T, srv *server, key, listID, csv string) map[string]any {
	t.Helper()
	body, ctype := multipartCSV(t, "file", csv)
	r := do(t, "POST", srv.URL+"/v1/lists/"+listID+"/import", key, body, "Content-Type: "+ctype)
	expect(t, r, http.StatusOK, "")
	return r.JSON(t)
}

// listContactsByPhone returns the list's contacts by phone.
func listContactsByPhone(t *testing.T, srv *server, key, listID string) map[string]map[string]any {
	t.Helper()
	page := do(t, "GET", srv.URL+"/v1/lists/"+listID+"/contacts", key, nil)
	expect(t, page, http.StatusOK, "")
	out := map[string]map[string]any{}
	for _, item := range page.JSON(t)["data"].([]any) {
		c := item.(map[string]any)
		phone, _ := c["phone"].(string)
		out[phone] = c
	}
	return out
}

// stringList reads a JSON array of strings.
func stringList(v any) []string {
	items, _ := v.([]any)
	out := []string{}
	for _, it := range items {
		s, _ := it.(string)
		out = append(out, s)
	}
	return out
}

// A spreadsheet's export, headers as people write them: the names are stored, the columns the import
// does not read are named in the answer.
func TestImportReadsExportHeaders(t *testing.T) {
	srv := startServer(t)
	_, key := newAccount(t)
	listID := newList(t, srv, key, "Export")

	res := importFile(t, srv, key, listID,
		"First Name,Last Name,Mobile Phone,E-mail Address,TZ,Company,,Notes\n"+
			"Ada,Lovelace,+1 415 555 7201,ADA@example.com,America/Chicago,Acme,,met at the fair\n"+
			"Bo,Ng,+14155557202,,,,,\n")
	if res["imported"] != 2.0 || res["invalid"] != 0.0 {
		t.Fatalf("import result: %v", res)
	}
	if got := stringList(res["ignoredColumns"]); !slices.Equal(got, []string{"Company", "Notes"}) {
		t.Errorf("ignoredColumns %q, want the header's unread columns as written: Company, Notes", got)
	}
	contacts := listContactsByPhone(t, srv, key, listID)
	ada, bo := contacts["+14155557201"], contacts["+14155557202"]
	if ada == nil || ada["firstName"] != "Ada" || ada["lastName"] != "Lovelace" || ada["email"] != "ada@example.com" || ada["timeZone"] != "America/Chicago" {
		t.Errorf("Ada as stored: %v", ada)
	}
	if bo == nil || bo["firstName"] != "Bo" || bo["lastName"] != "Ng" {
		t.Errorf("Bo as stored: %v", bo)
	}

	// A file whose every column is read ignores none: the answer says so with an empty list.
	res = importFile(t, srv, key, listID, "Surname,Given Name,Tel\nCo,Cy,+14155557203\n")
	if ignored, ok := res["ignoredColumns"].([]any); !ok || len(ignored) != 0 || res["imported"] != 1.0 {
		t.Errorf("import result %v, want one imported and ignoredColumns []", res)
	}
	if cy := listContactsByPhone(t, srv, key, listID)["+14155557203"]; cy == nil || cy["firstName"] != "Cy" || cy["lastName"] != "Co" {
		t.Errorf("Cy as stored: %v", cy)
	}
}

// A phone written without a country code is read in the account's defaultCountry, else in its time
// zone's country, else it is invalid; on the import, on POST /v1/contacts and on the lookup by phone
// alike.
func TestNationalNumbersReadInAccountCountry(t *testing.T) {
	srv := startServer(t)
	_, key := newAccount(t)
	listID := newList(t, srv, key, "National")
	settings := srv.URL + "/v1/settings/compliance"
	put := func(body map[string]any) map[string]any {
		t.Helper()
		r := do(t, "PUT", settings, key, body)
		expect(t, r, http.StatusOK, "")
		return r.JSON(t)
	}

	got := do(t, "GET", settings, key, nil)
	expect(t, got, http.StatusOK, "")
	if s := got.JSON(t); s["defaultCountry"] != nil || s["timeZone"] != "UTC" {
		t.Fatalf("a new account's settings: %s", got.Body)
	}

	t.Run("neither a default country nor a time zone of one country", func(t *testing.T) {
		res := importFile(t, srv, key, listID, "phone,first_name\n+14155557300,Intl\n(415) 555-0105,Ann\n")
		errs, _ := res["errors"].([]any)
		if res["imported"] != 1.0 || res["invalid"] != 1.0 || len(errs) != 1 {
			t.Fatalf("import result: %v", res)
		}
		e := errs[0].(map[string]any)
		if msg, _ := e["error"].(string); e["row"] != 3.0 || !strings.Contains(msg, `phone "(415) 555-0105" has no country code`) || !strings.Contains(msg, "defaultCountry") {
			t.Errorf("row error %v, want line 3 saying the phone has no country code and naming defaultCountry", e)
		}
		r := do(t, "POST", srv.URL+"/v1/contacts", key, map[string]any{"phone": "(415) 555-0105"})
		expect(t, r, http.StatusBadRequest, "INVALID_PHONE")
	})

	t.Run("the time zone America/New_York reads it in the US", func(t *testing.T) {
		if s := put(map[string]any{"timeZone": "America/New_York"}); s["defaultCountry"] != nil {
			t.Fatalf("settings: %v", s)
		}
		res := importFile(t, srv, key, listID, "phone,first_name\n(415) 555-0105,Ann\n")
		if res["imported"] != 1.0 || res["invalid"] != 0.0 {
			t.Fatalf("import result: %v", res)
		}
		if ann := listContactsByPhone(t, srv, key, listID)["+14155550105"]; ann == nil || ann["firstName"] != "Ann" {
			t.Fatalf("(415) 555-0105 not stored as +14155550105: %v", listContactsByPhone(t, srv, key, listID))
		}
		// POST /v1/contacts reads a number the same way, and the lookup by phone finds it so.
		r := do(t, "POST", srv.URL+"/v1/contacts", key, map[string]any{"firstName": "Dee", "phone": "415.555.0106"})
		expect(t, r, http.StatusCreated, "")
		dee := r.JSON(t)
		if dee["phone"] != "+14155550106" {
			t.Fatalf("POST /v1/contacts stored %v, want +14155550106", dee["phone"])
		}
		found := do(t, "GET", srv.URL+"/v1/contacts?phoneNumber="+url.QueryEscape("(415) 555-0106"), key, nil)
		expect(t, found, http.StatusOK, "")
		if id := found.JSON(t)["id"]; id != dee["id"] {
			t.Errorf("lookup by (415) 555-0106 found %v, want %v", id, dee["id"])
		}
		// The same contact again, in another notation: found, not created.
		again := do(t, "POST", srv.URL+"/v1/contacts", key, map[string]any{"phone": "(415) 555-0106"})
		expect(t, again, http.StatusOK, "")
	})

	t.Run("defaultCountry GB reads a UK national number", func(t *testing.T) {
		if s := put(map[string]any{"defaultCountry": "gb"}); s["defaultCountry"] != "GB" || s["timeZone"] != "America/New_York" {
			t.Fatalf("settings after setting defaultCountry: %v", s)
		}
		if s := do(t, "GET", settings, key, nil).JSON(t); s["defaultCountry"] != "GB" {
			t.Fatalf("GET after setting defaultCountry: %v", s)
		}
		res := importFile(t, srv, key, listID, "phone,first_name\n07700 900301,Bea\n+1 415 555 0107,Cal\n")
		if res["imported"] != 2.0 || res["invalid"] != 0.0 {
			t.Fatalf("import result: %v", res)
		}
		contacts := listContactsByPhone(t, srv, key, listID)
		if bea := contacts["+447700900301"]; bea == nil || bea["firstName"] != "Bea" {
			t.Fatalf("07700 900301 not stored as +447700900301: %v", contacts)
		}
		if contacts["+14155550107"] == nil {
			t.Fatalf("a number with its country code is read as it says: %v", contacts)
		}
	})

	t.Run("a bad defaultCountry is refused and changes nothing", func(t *testing.T) {
		for _, bad := range []any{"XX", "USA", "", "U", "001", 44, true} {
			r := do(t, "PUT", settings, key, map[string]any{"defaultCountry": bad, "timeZone": "Europe/Paris"})
			expect(t, r, http.StatusBadRequest, "VALIDATION_ERROR")
			if msg := r.JSON(t)["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "defaultCountry") {
				t.Errorf("defaultCountry %v: message %q does not name the field", bad, msg)
			}
		}
		if s := do(t, "GET", settings, key, nil).JSON(t); s["defaultCountry"] != "GB" || s["timeZone"] != "America/New_York" {
			t.Fatalf("settings after refused updates: %v", s)
		}
	})

	t.Run("null clears it: the time zone's country again", func(t *testing.T) {
		if s := put(map[string]any{"defaultCountry": nil}); s["defaultCountry"] != nil {
			t.Fatalf("settings after clearing defaultCountry: %v", s)
		}
		r := do(t, "POST", srv.URL+"/v1/contacts", key, map[string]any{"phone": "(415) 555-0108"})
		expect(t, r, http.StatusCreated, "")
		if phone := r.JSON(t)["phone"]; phone != "+14155550108" {
			t.Fatalf("stored %v, want +14155550108", phone)
		}
		// A time zone of several countries' time, or none, leaves such a number invalid.
		put(map[string]any{"timeZone": "UTC"})
		expect(t, do(t, "POST", srv.URL+"/v1/contacts", key, map[string]any{"phone": "(415) 555-0109"}), http.StatusBadRequest, "INVALID_PHONE")
	})
}
