package api_test

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"funnelchat/models"
)

// searchContactIDs walks every page of GET /v1/contacts?q= (limit per page) and returns the ids found.
func searchContactIDs(t *testing.T, srv *server, key, q string, limit int) []string {
	t.Helper()
	ids := []string{}
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 20 {
			t.Fatalf("q=%q: more pages than contacts", q)
		}
		query := "q=" + url.QueryEscape(q) + "&limit=" + strconv.Itoa(limit)
		if cursor != "" {
			query += "&cursor=" + url.QueryEscape(cursor)
		}
		r := do(t, "GET", srv.URL+"/v1/contacts?"+query, key, nil)
		expect(t, r, http.StatusOK, "")
		body := r.JSON(t)
		data, _ := body["data"].([]any)
		if len(data) > limit {
			t.Fatalf("q=%q: a page of %d with limit %d", q, len(data), limit)
		}
		for _, c := range data {
			ids = append(ids, c.(map[string]any)["id"].(string))
		}
		next, _ := body["nextCursor"].(string)
		if next == "" {
			return ids
		}
		cursor = next
	}
}

// TestSearchContacts: GET /v1/contacts?q= is the contact search (README, "Contacts"): a prefix of a
// name, the email, the phone as typed or a sender id, in any case, paged newest first; a blank q lists
// every contact; exactly one of phoneNumber, email and q; a q over 200 characters is 400.
func TestSearchContacts(t *testing.T) {
	srv := startServer(t)
	_, key := newAccount(t)
	create := func(body map[string]any) string {
		r := do(t, "POST", srv.URL+"/v1/contacts", key, body)
		expect(t, r, http.StatusCreated, "")
		return r.JSON(t)["id"].(string)
	}
	ann := create(map[string]any{"firstName": "Ann", "lastName": "Lee", "phone": "+14155550143", "email": "ann.lee@example.com"})
	bo := create(map[string]any{"first_name": "Bo", "last_name": "Annan", "phone_number": "+447700900123"})
	_, web := chat(t, srv, key, "s-1", "WebVisitor-7", "hello", nil)
	all := []string{web, bo, ann}
	_, otherKey := newAccount(t)
	expect(t, do(t, "POST", srv.URL+"/v1/contacts", otherKey, map[string]any{"firstName": "Ann", "phone": "+14155550143"}), http.StatusCreated, "")

	for _, tc := range []struct {
		q    string
		want []string
	}{
		{"ann", []string{bo, ann}}, // Ann's first name, Bo Annan's last name
		{"ANN L", []string{ann}},   // the full name
		{"nan", []string{}},        // not a prefix
		{"ann.lee@ex", []string{ann}},
		{"example.com", []string{}},
		{"+1 415", []string{ann}},
		{"415555", []string{ann}},
		{"(415) 555-0143", []string{ann}},
		{"07700 900", []string{bo}},
		{"5550143", []string{}},
		{"webvisitor", []string{web}},
		{"visitor", []string{}},
		{"", all},
		{"   ", all},
	} {
		for _, limit := range []int{1, 2, 50} {
			if got := searchContactIDs(t, srv, key, tc.q, limit); !slices.Equal(got, tc.want) {
				t.Errorf("q=%q limit=%d: %v, want %v", tc.q, limit, got, tc.want)
			}
		}
	}
	t.Run("the contacts are whole contact objects", func(t *testing.T) {
		r := do(t, "GET", srv.URL+"/v1/contacts?q="+url.QueryEscape("ann l"), key, nil)
		expect(t, r, http.StatusOK, "")
		data := r.JSON(t)["data"].([]any)
		if len(data) != 1 {
			t.Fatalf("%s", r.Body)
		}
		c := data[0].(map[string]any)
		if c["id"] != ann || c["phone"] != "+14155550143" || c["email"] != "ann.lee@example.com" || c["lastName"] != "Lee" {
			t.Errorf("contact %v", c)
		}
		if r.JSON(t)["nextCursor"] != nil {
			t.Errorf("nextCursor on the only page: %s", r.Body)
		}
	})
	t.Run("an unencoded + arrives as a space and still finds the phone", func(t *testing.T) {
		r := do(t, "GET", srv.URL+"/v1/contacts?q=+14155550143", key, nil)
		expect(t, r, http.StatusOK, "")
		if data := r.JSON(t)["data"].([]any); len(data) != 1 || data[0].(map[string]any)["id"] != ann {
			t.Errorf("%s", r.Body)
		}
	})
	t.Run("bad requests", func(t *testing.T) {
		for _, query := range []string{
			"q=" + strings.Repeat("a", 201),
			"q=" + url.QueryEscape(strings.Repeat("é", 201)),
			"q=ann&email=ann.lee@example.com",
			"q=ann&phoneNumber=%2B14155550143",
			"",
			"q=ann&limit=0",
			"q=ann&limit=201",
			"q=ann&cursor=" + url.QueryEscape("not a cursor!"),
		} {
			expect(t, do(t, "GET", srv.URL+"/v1/contacts?"+query, key, nil), http.StatusBadRequest, models.CodeValidation)
		}
		expect(t, do(t, "GET", srv.URL+"/v1/contacts?q="+strings.Repeat("é", 200), key, nil), http.StatusOK, "")
	})
}
