package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"funnelchat/models"
)

// newContact creates a contact through the API and returns its id.
func newContact(t testing.TB, srv *server, key, phone string) string {
	t.Helper()
	r := do(t, "POST", srv.URL+"/v1/contacts", key, map[string]any{"phone": phone})
	if r.Status != http.StatusCreated {
		t.Fatalf("create contact %s: %d %s", phone, r.Status, r.Body)
	}
	return r.JSON(t)["id"].(string)
}

func newList(t testing.TB, srv *server, key, name string) string {
	t.Helper()
	r := do(t, "POST", srv.URL+"/v1/lists", key, map[string]any{"name": name})
	expect(t, r, http.StatusCreated, "")
	return r.JSON(t)["id"].(string)
}

func TestLists(t *testing.T) {
	srv := startServer(t)
	_, key := newAccount(t)

	created := do(t, "POST", srv.URL+"/v1/lists", key, map[string]any{"name": "  Webinar leads "})
	expect(t, created, http.StatusCreated, "")
	l := created.JSON(t)
	if !strings.HasPrefix(l["id"].(string), "lst_") || l["name"] != "Webinar leads" || l["createdAt"] == nil {
		t.Fatalf("unexpected list: %s", created.Body)
	}
	got := do(t, "GET", srv.URL+"/v1/lists/"+l["id"].(string), key, nil)
	expect(t, got, http.StatusOK, "")
	if got.JSON(t)["name"] != "Webinar leads" {
		t.Fatalf("got %s", got.Body)
	}

	for name, body := range map[string]any{
		"missing name":     map[string]any{},
		"empty name":       map[string]any{"name": "   "},
		"name not string":  map[string]any{"name": 42},
		"name too long":    map[string]any{"name": strings.Repeat("n", 201)},
		"malformed":        `{"name":`,
		"null body object": `null`,
	} {
		t.Run("create rejects "+name, func(t *testing.T) {
			r := do(t, "POST", srv.URL+"/v1/lists", key, body)
			if r.Status != http.StatusBadRequest {
				t.Fatalf("status %d: %s", r.Status, r.Body)
			}
		})
	}

	t.Run("unknown and foreign lists are 404", func(t *testing.T) {
		_, otherKey := newAccount(t)
		expect(t, do(t, "GET", srv.URL+"/v1/lists/"+l["id"].(string), otherKey, nil), 404, models.CodeNotFound)
		expect(t, do(t, "GET", srv.URL+"/v1/lists/lst_nope", key, nil), 404, models.CodeNotFound)
	})
}

func TestListsPagination(t *testing.T) {
	srv := startServer(t)
	_, key := newAccount(t)
	var want []string
	for i := 0; i < 5; i++ {
		want = append(want, newList(t, srv, key, fmt.Sprint("list ", i)))
	}
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("pagination does not end")
		}
		r := do(t, "GET", srv.URL+"/v1/lists?limit=2&cursor="+cursor, key, nil)
		expect(t, r, http.StatusOK, "")
		body := r.JSON(t)
		for _, item := range body["data"].([]any) {
			got = append(got, item.(map[string]any)["id"].(string))
		}
		next, _ := body["nextCursor"].(string)
		if next == "" {
			if body["nextCursor"] != nil {
				t.Fatalf("last page nextCursor should be null: %s", r.Body)
			}
			break
		}
		cursor = next
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("pages gave %v, want %v", got, want)
	}
	for _, q := range []string{"limit=0", "limit=201", "limit=abc", "cursor=" + strings.Repeat("x", 65), "cursor=%27%20or%201=1"} {
		t.Run("rejects "+q, func(t *testing.T) {
			expect(t, do(t, "GET", srv.URL+"/v1/lists?"+q, key, nil), 400, models.CodeValidation)
		})
	}
}

func TestAddContactToList(t *testing.T) {
	srv := startServer(t)
	_, key := newAccount(t)
	listID := newList(t, srv, key, "Funnel")
	contactID := newContact(t, srv, key, "+14155550100")
	url := srv.URL + "/v1/lists/" + listID + "/contacts"

	first := do(t, "POST", url, key, map[string]any{"contactId": contactID})
	expect(t, first, http.StatusCreated, "")
	m := first.JSON(t)
	if m["listId"] != listID || m["contactId"] != contactID || m["addedAt"] == nil {
		t.Fatalf("unexpected membership: %s", first.Body)
	}
	again := do(t, "POST", url, key, map[string]any{"contact_id": contactID})
	expect(t, again, http.StatusOK, "")
	if again.JSON(t)["addedAt"] != m["addedAt"] {
		t.Fatalf("re-adding changed the membership: %s vs %s", again.Body, first.Body)
	}

	_, otherKey := newAccount(t)
	foreignContact := newContact(t, srv, otherKey, "+14155550101")
	bad := []struct {
		name   string
		url    string
		key    string
		body   any
		status int
		code   string
	}{
		{"unknown contact", url, key, map[string]any{"contactId": "ct_unknown"}, 404, models.CodeNotFound},
		{"another account's contact", url, key, map[string]any{"contactId": foreignContact}, 404, models.CodeNotFound},
		{"unknown list", srv.URL + "/v1/lists/lst_unknown/contacts", key, map[string]any{"contactId": contactID}, 404, models.CodeNotFound},
		{"another account's list", url, otherKey, map[string]any{"contactId": foreignContact}, 404, models.CodeNotFound},
		{"no contact id", url, key, map[string]any{}, 400, models.CodeValidation},
		{"empty contact id", url, key, map[string]any{"contactId": ""}, 400, models.CodeValidation},
		{"contact id not a string", url, key, map[string]any{"contactId": 7}, 400, models.CodeValidation},
		{"both forms", url, key, map[string]any{"contactId": contactID, "contactIds": []string{contactID}}, 400, models.CodeValidation},
		{"camel and snake disagree", url, key, map[string]any{"contactId": contactID, "contact_id": "ct_other"}, 400, models.CodeValidation},
		{"malformed JSON", url, key, `{"contactId":`, 400, models.CodeInvalidJSON},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			expect(t, do(t, "POST", tc.url, tc.key, tc.body), tc.status, tc.code)
		})
	}
}

func TestAddContactsToListInBatch(t *testing.T) {
	srv := startServer(t)
	_, key := newAccount(t)
	listID := newList(t, srv, key, "Batch")
	url := srv.URL + "/v1/lists/" + listID + "/contacts"
	a := newContact(t, srv, key, "+14155550110")
	b := newContact(t, srv, key, "+14155550111")
	c := newContact(t, srv, key, "+14155550112")
	expect(t, do(t, "POST", url, key, map[string]any{"contactId": a}), http.StatusCreated, "")

	r := do(t, "POST", url, key, map[string]any{"contactIds": []string{a, b, "ct_missing", c, b}})
	expect(t, r, http.StatusCreated, "")
	body := r.JSON(t)
	if fmt.Sprint(body["added"]) != fmt.Sprint([]any{b, c}) || fmt.Sprint(body["existing"]) != fmt.Sprint([]any{a}) ||
		fmt.Sprint(body["notFound"]) != fmt.Sprint([]any{"ct_missing"}) {
		t.Fatalf("unexpected batch result: %s", r.Body)
	}
	r = do(t, "POST", url, key, map[string]any{"contactIds": []string{a, b}})
	expect(t, r, http.StatusOK, "")
	if len(r.JSON(t)["added"].([]any)) != 0 {
		t.Fatalf("nothing should be added: %s", r.Body)
	}

	tooMany := make([]string, models.MaxBatchContacts+1)
	for i := range tooMany {
		tooMany[i] = fmt.Sprint("ct_", i)
	}
	for name, body := range map[string]any{
		"empty batch":       map[string]any{"contactIds": []string{}},
		"empty id in batch": map[string]any{"contactIds": []string{a, ""}},
		"ids not strings":   map[string]any{"contactIds": []any{1, 2}},
		"ids not an array":  map[string]any{"contactIds": a},
		"more than the max": map[string]any{"contactIds": tooMany},
		"null inside batch": `{"contactIds":[null]}`,
	} {
		t.Run("rejects "+name, func(t *testing.T) {
			expect(t, do(t, "POST", url, key, body), 400, models.CodeValidation)
		})
	}

	t.Run("list contacts come in the order added, paged", func(t *testing.T) {
		var got []string
		cursor := ""
		for i := 0; i < 5; i++ {
			r := do(t, "GET", url+"?limit=2&cursor="+cursor, key, nil)
			expect(t, r, http.StatusOK, "")
			page := r.JSON(t)
			for _, item := range page["data"].([]any) {
				got = append(got, item.(map[string]any)["id"].(string))
			}
			next, _ := page["nextCursor"].(string)
			if next == "" {
				break
			}
			cursor = next
		}
		if strings.Join(got, ",") != strings.Join([]string{a, b, c}, ",") {
			t.Fatalf("got %v, want %v", got, []string{a, b, c})
		}
	})
	t.Run("another account cannot read the list's contacts", func(t *testing.T) {
		_, otherKey := newAccount(t)
		expect(t, do(t, "GET", url, otherKey, nil), 404, models.CodeNotFound)
	})
}
