package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"funnelchat/models"
)

// agencyWithSub creates an agency and one sub-account with the given credits.
func agencyWithSub(t *testing.T, credits float64) (agencyKey, subKey, subEmail, subID string) {
	t.Helper()
	ctx := context.Background()
	n := accountSeq.Add(1)
	agency, err := env.Store.CreateAccount(ctx, models.NewAccount{Email: fmt.Sprintf("agency%d@example.com", n), Agency: true})
	if err != nil {
		t.Fatal(err)
	}
	subEmail = fmt.Sprintf("client%d@example.com", n)
	sub, err := env.Store.CreateAccount(ctx, models.NewAccount{Email: subEmail, ParentEmail: agency.Account.Email, Credits: credits})
	if err != nil {
		t.Fatal(err)
	}
	return agency.APIKey, sub.APIKey, subEmail, sub.Account.ID
}

func balanceOf(t *testing.T, srv *server, key string) float64 {
	t.Helper()
	r := do(t, "GET", srv.URL+"/v1/credits", key, nil)
	expect(t, r, http.StatusOK, "")
	return r.JSON(t)["balance"].(float64)
}

func TestGrantCredits(t *testing.T) {
	srv := startServer(t)
	agencyKey, subKey, subEmail, subID := agencyWithSub(t, 5)
	url := srv.URL + "/v1/subaccounts/credits"

	r := do(t, "POST", url, agencyKey, map[string]any{"email": subEmail, "amount": 10, "description": "October top-up"})
	expect(t, r, http.StatusOK, "")
	if got := r.JSON(t); got["success"] != true || got["sub_account_id"] != subID || got["credits_added"] != 10.0 || got["new_balance"] != 15.0 {
		t.Fatalf("grant: %s", r.Body)
	}
	r = do(t, "POST", url, "", map[string]any{"email": strings.ToUpper(subEmail), "amount": 2.5}, "Authorization: Bearer "+agencyKey)
	expect(t, r, http.StatusOK, "")
	if balanceOf(t, srv, subKey) != 17.5 {
		t.Fatalf("balance %v, want 17.5", balanceOf(t, srv, subKey))
	}
	tx := do(t, "GET", srv.URL+"/v1/credits/transactions", subKey, nil).JSON(t)["data"].([]any)
	if len(tx) != 2 || tx[0].(map[string]any)["amount"] != 2.5 || tx[1].(map[string]any)["description"] != "October top-up" ||
		tx[0].(map[string]any)["balance"] != 17.5 || tx[0].(map[string]any)["type"] != "grant" {
		t.Fatalf("transactions (newest first): %v", tx)
	}
	subs := do(t, "GET", srv.URL+"/v1/subaccounts", agencyKey, nil).JSON(t)["data"].([]any)
	if len(subs) != 1 || subs[0].(map[string]any)["id"] != subID || subs[0].(map[string]any)["balance"] != 17.5 {
		t.Fatalf("sub-accounts: %v", subs)
	}

	otherAgency, _, otherSubEmail, _ := agencyWithSub(t, 0)
	_, plainKey := newAccount(t)
	cases := []struct {
		name   string
		key    string
		url    string
		body   any
		status int
		code   string
	}{
		{"API key in the query", "", url + "?apiKey=" + agencyKey, map[string]any{"email": subEmail, "amount": 1}, 401, models.CodeUnauthorized},
		{"no key", "", url, map[string]any{"email": subEmail, "amount": 1}, 401, models.CodeUnauthorized},
		{"not an agency", plainKey, url, map[string]any{"email": subEmail, "amount": 1}, 403, models.CodeForbidden},
		{"another agency's sub-account", otherAgency, url, map[string]any{"email": subEmail, "amount": 1}, 404, models.CodeNotFound},
		{"an email that exists nowhere", agencyKey, url, map[string]any{"email": "nobody@example.com", "amount": 1}, 404, models.CodeNotFound},
		{"the agency's own email", agencyKey, url, map[string]any{"email": otherSubEmail, "amount": 1}, 404, models.CodeNotFound},
		{"zero", agencyKey, url, map[string]any{"email": subEmail, "amount": 0}, 400, models.CodeValidation},
		{"negative", agencyKey, url, map[string]any{"email": subEmail, "amount": -5}, 400, models.CodeValidation},
		{"a string", agencyKey, url, map[string]any{"email": subEmail, "amount": "5"}, 400, models.CodeValidation},
		{"null", agencyKey, url, `{"email":"` + subEmail + `","amount":null}`, 400, models.CodeValidation},
		{"missing", agencyKey, url, map[string]any{"email": subEmail}, 400, models.CodeValidation},
		{"NaN-like", agencyKey, url, `{"email":"` + subEmail + `","amount":"NaN"}`, 400, models.CodeValidation},
		{"1e309", agencyKey, url, `{"email":"` + subEmail + `","amount":1e309}`, 400, models.CodeValidation},
		{"above the maximum", agencyKey, url, map[string]any{"email": subEmail, "amount": 1e10}, 400, models.CodeValidation},
		{"finer than a thousandth", agencyKey, url, map[string]any{"email": subEmail, "amount": 0.0001}, 400, models.CodeValidation},
		{"no email", agencyKey, url, map[string]any{"amount": 1}, 400, models.CodeValidation},
		{"description too long", agencyKey, url, map[string]any{"email": subEmail, "amount": 1, "description": strings.Repeat("d", 501)}, 400, models.CodeValidation},
	}
	for _, tc := range cases {
		t.Run("refuses "+tc.name, func(t *testing.T) {
			expect(t, do(t, "POST", tc.url, tc.key, tc.body), tc.status, tc.code)
		})
	}
	if got := balanceOf(t, srv, subKey); got != 17.5 {
		t.Fatalf("refused grants changed the balance to %v", got)
	}
	t.Run("GET /subaccounts is for agencies only", func(t *testing.T) {
		expect(t, do(t, "GET", srv.URL+"/v1/subaccounts", plainKey, nil), 403, models.CodeForbidden)
	})
}

func TestGrantIdempotency(t *testing.T) {
	srv := startServer(t)
	agencyKey, subKey, subEmail, _ := agencyWithSub(t, 0)
	url := srv.URL + "/v1/subaccounts/credits"
	body := map[string]any{"email": subEmail, "amount": 7}

	first := do(t, "POST", url, agencyKey, body, "Idempotency-Key: recharge-1")
	expect(t, first, http.StatusOK, "")
	again := do(t, "POST", url, agencyKey, body, "Idempotency-Key: recharge-1")
	expect(t, again, http.StatusOK, "")
	if string(again.Body) != string(first.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("repeat: %s %v, want the first response %s", again.Body, again.Header, first.Body)
	}
	viaField := do(t, "POST", url, agencyKey, map[string]any{"email": subEmail, "amount": 7, "idempotency_key": "recharge-1"})
	expect(t, viaField, http.StatusOK, "")
	if balanceOf(t, srv, subKey) != 7 {
		t.Fatalf("balance %v after repeats, want 7", balanceOf(t, srv, subKey))
	}
	expect(t, do(t, "POST", url, agencyKey, map[string]any{"email": subEmail, "amount": 8}, "Idempotency-Key: recharge-1"), 422, models.CodeIdempotencyReused)
	expect(t, do(t, "POST", url, agencyKey, map[string]any{"email": subEmail, "amount": 7, "idempotency_key": "b"}, "Idempotency-Key: a"), 400, models.CodeValidation)
	expect(t, do(t, "POST", url, agencyKey, body, "Idempotency-Key: "+strings.Repeat("k", 300)), 400, models.CodeValidation)

	t.Run("a repeat while the first is still running is 409", func(t *testing.T) {
		acc, err := env.Store.Authenticate(context.Background(), agencyKey)
		if err != nil {
			t.Fatal(err)
		}
		// Put a finished key back in flight, as a first request holds it while it runs.
		probe := do(t, "POST", url, agencyKey, map[string]any{"email": subEmail, "amount": 3}, "Idempotency-Key: probe")
		expect(t, probe, http.StatusOK, "")
		if _, err := env.Store.DB().NewUpdate().TableExpr("idempotency_keys").Set("status = 'in_flight'").
			Where("account_id = ? AND key = ?", acc.ID, "probe").Exec(context.Background()); err != nil {
			t.Fatal(err)
		}
		_ = env.Redis.Del(context.Background(), "idempotency:"+acc.ID+":probe").Err()
		expect(t, do(t, "POST", url, agencyKey, map[string]any{"email": subEmail, "amount": 3}, "Idempotency-Key: probe"), 409, models.CodeConflict)
	})
}

// TestConcurrentGrantsAreExact: 200 grants of 1 credit at once, half of them repeating 20 keys, leave
// exactly 120 more credits and 120 transactions.
func TestConcurrentGrantsAreExact(t *testing.T) {
	srv := startServer(t)
	agencyKey, subKey, subEmail, subID := agencyWithSub(t, 0)
	var wg sync.WaitGroup
	statuses := make([]int, 200)
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			var headers []string
			if i%2 == 1 {
				headers = append(headers, fmt.Sprintf("Idempotency-Key: k-%d", (i/2)%20))
			}
			statuses[i] = do(t, "POST", srv.URL+"/v1/subaccounts/credits", agencyKey, map[string]any{"email": subEmail, "amount": 1}, headers...).Status
		}(i)
	}
	wg.Wait()
	for i, st := range statuses {
		if st != http.StatusOK && !(i%2 == 1 && st == http.StatusConflict) {
			t.Fatalf("request %d: status %d", i, st)
		}
	}
	if got := balanceOf(t, srv, subKey); got != 120 {
		t.Fatalf("balance %v, want exactly 120 (100 plain grants + 20 keys)", got)
	}
	n, err := env.Store.DB().NewSelect().TableExpr("credit_transactions").Where("account_id = ?", subID).Count(context.Background())
	if err != nil || n != 120 {
		t.Fatalf("%d transactions (err %v), want 120", n, err)
	}
}
