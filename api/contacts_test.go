package api_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"funnelchat/models"
)

func TestCreateContact(t *testing.T) {
	srv := startServer(t)
	_, key := newAccount(t)
	url := srv.URL + "/v1/contacts"

	first := do(t, "POST", url, key, map[string]any{"firstName": "Ann", "lastName": "Lee", "phone": "+1 415 555 0123", "email": " Ann@Example.COM "})
	expect(t, first, http.StatusCreated, "")
	c := first.JSON(t)
	if !strings.HasPrefix(c["id"].(string), "ct_") || c["phone"] != "+14155550123" || c["email"] != "ann@example.com" ||
		c["firstName"] != "Ann" || c["lastName"] != "Lee" || c["createdAt"] == "" {
		t.Fatalf("unexpected contact: %s", first.Body)
	}

	t.Run("same phone returns the existing contact with 200", func(t *testing.T) {
		again := do(t, "POST", url, key, map[string]any{"firstName": "Other", "phone": "+14155550123"})
		expect(t, again, http.StatusOK, "")
		if got := again.JSON(t); got["id"] != c["id"] || got["firstName"] != "Ann" {
			t.Fatalf("got %s, want the existing contact %s", again.Body, first.Body)
		}
	})
	t.Run("same phone in another notation is the same contact", func(t *testing.T) {
		again := do(t, "POST", url, key, map[string]any{"phone": "0014155550123"})
		expect(t, again, http.StatusOK, "")
		if again.JSON(t)["id"] != c["id"] {
			t.Fatalf("got %s", again.Body)
		}
	})
	t.Run("funnel page snake_case form with Bearer", func(t *testing.T) {
		r := do(t, "POST", url, "", map[string]any{"phone_number": "+447911123456", "first_name": "Bo", "last_name": "Ng", "email": "bo@example.com"},
			"Authorization: Bearer "+key)
		expect(t, r, http.StatusCreated, "")
		if got := r.JSON(t); got["phone"] != "+447911123456" || got["firstName"] != "Bo" || got["lastName"] != "Ng" {
			t.Fatalf("got %s", r.Body)
		}
	})
	t.Run("both forms of one field that disagree", func(t *testing.T) {
		r := do(t, "POST", url, key, map[string]any{"phone": "+447911123456", "phone_number": "+447911123457"})
		expect(t, r, http.StatusBadRequest, models.CodeValidation)
	})
	t.Run("email only, then the same email again", func(t *testing.T) {
		r := do(t, "POST", url, key, map[string]any{"email": "solo@example.com", "firstName": "Solo"})
		expect(t, r, http.StatusCreated, "")
		again := do(t, "POST", url, key, map[string]any{"email": "SOLO@example.com"})
		expect(t, again, http.StatusOK, "")
		if again.JSON(t)["id"] != r.JSON(t)["id"] {
			t.Fatalf("email-only contact duplicated: %s vs %s", r.Body, again.Body)
		}
		if r.JSON(t)["phone"] != nil {
			t.Fatalf("phone should be null: %s", r.Body)
		}
	})
	t.Run("unknown fields are ignored", func(t *testing.T) {
		r := do(t, "POST", url, key, map[string]any{"phone": "+33612345678", "favouriteColour": "blue", "custom": map[string]any{"a": 1}})
		expect(t, r, http.StatusCreated, "")
	})
	t.Run("the same phone in another account is another contact", func(t *testing.T) {
		_, otherKey := newAccount(t)
		r := do(t, "POST", url, otherKey, map[string]any{"phone": "+14155550123"})
		expect(t, r, http.StatusCreated, "")
		if r.JSON(t)["id"] == c["id"] {
			t.Fatal("contact shared across accounts")
		}
	})
}

func TestCreateContactRejectsBadInput(t *testing.T) {
	srv := startServer(t, "MAX_BODY_BYTES=4096")
	_, key := newAccount(t)
	url := srv.URL + "/v1/contacts"
	cases := []struct {
		name   string
		body   any
		status int
		code   string
	}{
		{"neither phone nor email", map[string]any{"firstName": "Ann"}, 400, models.CodeValidation},
		{"empty phone and email", map[string]any{"phone": " ", "email": ""}, 400, models.CodeValidation},
		{"phone without country code", map[string]any{"phone": "4155550123"}, 400, models.CodeInvalidPhone},
		{"unknown country code", map[string]any{"phone": "+999 1234567"}, 400, models.CodeInvalidPhone},
		{"too few digits", map[string]any{"phone": "+1 23"}, 400, models.CodeInvalidPhone},
		{"letters", map[string]any{"phone": "+1 call me"}, 400, models.CodeInvalidPhone},
		{"bad email", map[string]any{"email": "not-an-email"}, 400, models.CodeValidation},
		{"email with display name", map[string]any{"email": "Ann <ann@example.com>"}, 400, models.CodeValidation},
		{"phone as a number", map[string]any{"phone": 14155550123}, 400, models.CodeValidation},
		{"firstName as an object", map[string]any{"phone": "+14155550123", "firstName": map[string]any{}}, 400, models.CodeValidation},
		{"email as a boolean", map[string]any{"email": true}, 400, models.CodeValidation},
		{"name too long", map[string]any{"phone": "+14155550124", "firstName": strings.Repeat("a", 201)}, 400, models.CodeValidation},
		{"malformed JSON", `{"phone": "+14155550123"`, 400, models.CodeInvalidJSON},
		{"empty body", "", 400, models.CodeInvalidJSON},
		{"whitespace body", "  \n ", 400, models.CodeInvalidJSON},
		{"array instead of object", `[{"phone":"+14155550123"}]`, 400, models.CodeInvalidJSON},
		{"string instead of object", `"+14155550123"`, 400, models.CodeInvalidJSON},
		{"trailing data", `{"phone":"+14155550123"} {"x":1}`, 400, models.CodeInvalidJSON},
		{"deep nesting", strings.Repeat("[", 1500) + strings.Repeat("]", 1500), 400, models.CodeInvalidJSON},
		{"body over MAX_BODY_BYTES", `{"firstName":"` + strings.Repeat("a", 5000) + `","phone":"+14155550123"}`, 413, "PAYLOAD_TOO_LARGE"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			expect(t, do(t, "POST", url, key, tc.body), tc.status, tc.code)
		})
	}
	// Nothing above created a contact.
	n, err := env.Store.DB().NewSelect().TableExpr("contacts").Where("phone = ?", "+14155550124").Count(context.Background())
	if err != nil || n != 0 {
		t.Fatalf("rejected input stored: n=%d err=%v", n, err)
	}
}

func TestConcurrentCreatesOfOnePhoneMakeOneContact(t *testing.T) {
	srv := startServer(t)
	acc, key := newAccount(t)
	const n = 50
	var wg sync.WaitGroup
	ids := make([]string, n)
	statuses := make([]int, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			// Half the callers write the number in another notation.
			phone := "+1 (415) 555-0199"
			if i%2 == 0 {
				phone = "+14155550199"
			}
			r := do(t, "POST", srv.URL+"/v1/contacts", key, map[string]any{"phone": phone, "firstName": fmt.Sprint("caller", i)})
			statuses[i] = r.Status
			if id, ok := r.JSON(t)["id"].(string); ok {
				ids[i] = id
			}
		}(i)
	}
	wg.Wait()
	created := 0
	for i := range ids {
		if statuses[i] == http.StatusCreated {
			created++
		} else if statuses[i] != http.StatusOK {
			t.Fatalf("request %d: status %d", i, statuses[i])
		}
		if ids[i] == "" || ids[i] != ids[0] {
			t.Fatalf("request %d got id %q, request 0 got %q", i, ids[i], ids[0])
		}
	}
	if created != 1 {
		t.Fatalf("%d requests answered 201, want exactly 1", created)
	}
	count, err := env.Store.DB().NewSelect().TableExpr("contacts").Where("account_id = ?", acc.ID).Count(context.Background())
	if err != nil || count != 1 {
		t.Fatalf("%d contacts stored (err %v), want 1", count, err)
	}
}

func TestConcurrentCreatesOfOneEmailMakeOneContact(t *testing.T) {
	srv := startServer(t)
	acc, key := newAccount(t)
	var wg sync.WaitGroup
	for i := 0; i < 30; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := do(t, "POST", srv.URL+"/v1/contacts", key, map[string]any{"email": "race@example.com"})
			if r.Status != http.StatusCreated && r.Status != http.StatusOK {
				t.Errorf("status %d: %s", r.Status, r.Body)
			}
		}()
	}
	wg.Wait()
	count, err := env.Store.DB().NewSelect().TableExpr("contacts").Where("account_id = ?", acc.ID).Count(context.Background())
	if err != nil || count != 1 {
		t.Fatalf("%d contacts stored (err %v), want 1", count, err)
	}
}

func TestFindContact(t *testing.T) {
	srv := startServer(t)
	_, key := newAccount(t)
	created := do(t, "POST", srv.URL+"/v1/contacts", key, map[string]any{"phone": "+61 412 345 678", "email": "find@example.com", "firstName": "Fi"})
	expect(t, created, http.StatusCreated, "")
	id := created.JSON(t)["id"]
	base := srv.URL + "/v1/contacts?"

	found := []struct{ name, query string }{
		{"phone encoded", "phoneNumber=" + url.QueryEscape("+61412345678")},
		{"plus sent unencoded arrives as a space", "phoneNumber=+61412345678"},
		{"phone with spaces", "phoneNumber=" + url.QueryEscape("+61 412 345 678")},
		{"email in other case", "email=" + url.QueryEscape("FIND@example.com")},
		{"api key in the query", "email=find@example.com&apiKey=" + key},
	}
	for _, tc := range found {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, "GET", base+tc.query, key, nil)
			expect(t, r, http.StatusOK, "")
			if got := r.JSON(t); got["id"] != id || got["firstName"] != "Fi" {
				t.Fatalf("got %s", r.Body)
			}
		})
	}
	bad := []struct {
		name, query string
		status      int
		code        string
	}{
		{"both parameters", "phoneNumber=%2B61412345678&email=find@example.com", 400, models.CodeValidation},
		{"neither parameter", "", 400, models.CodeValidation},
		{"empty phone", "phoneNumber=", 400, models.CodeValidation},
		{"phone without country code", "phoneNumber=0412345678", 400, models.CodeInvalidPhone},
		{"bad email", "email=nope", 400, models.CodeValidation},
		{"no such phone", "phoneNumber=%2B61412345679", 404, models.CodeNotFound},
		{"no such email", "email=nobody@example.com", 404, models.CodeNotFound},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			expect(t, do(t, "GET", base+tc.query, key, nil), tc.status, tc.code)
		})
	}
	t.Run("another account cannot find it", func(t *testing.T) {
		_, otherKey := newAccount(t)
		expect(t, do(t, "GET", base+"email=find@example.com", otherKey, nil), 404, models.CodeNotFound)
		expect(t, do(t, "GET", base+"phoneNumber=%2B61412345678", otherKey, nil), 404, models.CodeNotFound)
	})
}

func TestGetContact(t *testing.T) {
	srv := startServer(t)
	_, key := newAccount(t)
	created := do(t, "POST", srv.URL+"/v1/contacts", key, map[string]any{"phone": "+4915112345678"})
	id := created.JSON(t)["id"].(string)

	r := do(t, "GET", srv.URL+"/v1/contacts/"+id, key, nil)
	expect(t, r, http.StatusOK, "")
	if r.JSON(t)["phone"] != "+4915112345678" {
		t.Fatalf("got %s", r.Body)
	}
	_, otherKey := newAccount(t)
	for name, tc := range map[string]struct{ id, key string }{
		"another account's contact": {id, otherKey},
		"unknown id":                {"ct_01jzzzzzzzzzzzzzzzzzzzzzzz", key},
		"malformed id":              {"%27%3B%20drop%20table%20contacts", key},
		"very long id":              {strings.Repeat("x", 5000), key},
	} {
		t.Run(name, func(t *testing.T) {
			expect(t, do(t, "GET", srv.URL+"/v1/contacts/"+tc.id, tc.key, nil), 404, models.CodeNotFound)
		})
	}
}
