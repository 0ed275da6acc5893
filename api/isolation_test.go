package api_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"funnelchat/models"
)

// tenant is an agency account with one of every resource that a path of the API names by id.
type tenant struct {
	name         string
	key          string
	email        string
	secret       string // signing secret of the reply webhook
	agency       bool
	accountID    string
	contactEmail string
	contactPhone string
	fromIDs      []string
	alertID      string
	sub          struct{ id, email, key string }
	// ids are the tenant's resource ids by the path segment that precedes {id} ("contacts", "lists"...).
	// The first id of each kind is the one a request that must succeed (the control) uses.
	ids map[string][]string
	// member is a contact on the tenant's list (a plain tenant's own contact, on no list).
	member string
}

// isolationSink answers the reply webhook with a final 400, so every outgoing message ends failed (and
// can be redelivered) and nothing is left in flight to change while the test compares snapshots.
func isolationSink(t *testing.T) *sink {
	return newSink(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hook" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
}

// seedTenant creates an agency with a sub-account, a contact (with phone and email) on a list, a draft
// campaign on that list, a conversation whose bot reply failed for good, and a handoff alert.
func seedTenant(t *testing.T, srv *server, hook *sink, name string) *tenant {
	t.Helper()
	ctx := context.Background()
	n := accountSeq.Add(1)
	tn := &tenant{name: name, agency: true, ids: map[string][]string{}}
	tn.email = fmt.Sprintf("%s-agency%d-%d@example.com", name, n, time.Now().UnixNano())
	agency, err := env.Store.CreateAccount(ctx, models.NewAccount{Email: tn.email, Agency: true})
	if err != nil {
		t.Fatal(err)
	}
	tn.key, tn.accountID = agency.APIKey, agency.Account.ID
	tn.sub.email = fmt.Sprintf("%s-client%d-%d@example.com", name, n, time.Now().UnixNano())
	sub, err := env.Store.CreateAccount(ctx, models.NewAccount{Email: tn.sub.email, ParentEmail: tn.email, Credits: 5})
	if err != nil {
		t.Fatal(err)
	}
	tn.sub.id, tn.sub.key = sub.Account.ID, sub.APIKey

	r := do(t, "PUT", srv.URL+"/v1/settings/webhook", tn.key, map[string]any{"url": hook.URL + "/hook"})
	expect(t, r, http.StatusOK, "")
	tn.secret, _ = r.JSON(t)["signingSecret"].(string)
	r = do(t, "PUT", srv.URL+"/v1/subaccounts/"+tn.sub.id+"/auto_recharge", tn.key,
		map[string]any{"threshold": 2, "amount": 5, "webhookUrl": hook.URL + "/recharge"})
	expect(t, r, http.StatusOK, "")

	tn.contactPhone = fmt.Sprintf("+1415555%04d", 7000+n%1000)
	tn.contactEmail = fmt.Sprintf("%s-lead%d@example.com", name, n)
	r = do(t, "POST", srv.URL+"/v1/contacts", tn.key, map[string]any{"firstName": "Lead", "phone": tn.contactPhone, "email": tn.contactEmail})
	expect(t, r, http.StatusCreated, "")
	member := r.JSON(t)["id"].(string)
	list := newList(t, srv, tn.key, name+" leads")
	expect(t, do(t, "POST", srv.URL+"/v1/lists/"+list+"/contacts", tn.key, map[string]any{"contactId": member}), http.StatusCreated, "")
	r = do(t, "POST", srv.URL+"/v1/campaigns", tn.key, map[string]any{
		"name": name + " funnel", "listId": list, "channel": "custom:chat", "openingMessage": "Hi {{firstName}}", "goal": "Book a call.",
	})
	expect(t, r, http.StatusCreated, "")
	campaign := r.JSON(t)["id"].(string)

	tn.fromIDs = []string{fmt.Sprintf("%s-visitor-%d", name, n), fmt.Sprintf("%s-asker-%d", name, n)}
	r = incoming(t, srv, tn.key, fmt.Sprintf("%s-sid-%d-1", name, n), tn.fromIDs[0], "hello")
	expect(t, r, http.StatusOK, "")
	received := r.JSON(t)["messageId"].(string)
	r = incoming(t, srv, tn.key, fmt.Sprintf("%s-sid-%d-2", name, n), tn.fromIDs[1], "I want to talk to a human")
	expect(t, r, http.StatusOK, "")
	handoff := r.JSON(t)["messageId"].(string)
	chatter := do(t, "GET", srv.URL+"/v1/messages/"+received, tn.key, nil).JSON(t)["contactId"].(string)
	asker := do(t, "GET", srv.URL+"/v1/messages/"+handoff, tn.key, nil).JSON(t)["contactId"].(string)

	var reply string
	waitFor(t, 20*time.Second, name+"'s bot reply to fail for good", func() bool {
		var m models.Message
		err := env.Store.DB().NewSelect().Model(&m).
			Where("contact_id = ? AND direction = ? AND status = ? AND next_attempt_at IS NULL", chatter, "outgoing", "failed").
			Limit(1).Scan(context.Background())
		reply = m.ID
		return err == nil
	})
	waitFor(t, 20*time.Second, name+"'s handoff alert", func() bool {
		data, _ := do(t, "GET", srv.URL+"/v1/alerts", tn.key, nil).JSON(t)["data"].([]any)
		if len(data) == 0 {
			return false
		}
		tn.alertID, _ = data[0].(map[string]any)["id"].(string)
		return true
	})
	waitFor(t, 20*time.Second, name+"'s messages to settle", func() bool {
		n, err := env.Store.DB().NewSelect().Model((*models.Message)(nil)).
			Where("account_id = ? AND (status = ? OR next_attempt_at IS NOT NULL)", tn.accountID, "pending").Count(context.Background())
		return err == nil && n == 0
	})

	tn.ids["contacts"] = []string{chatter, member, asker}
	tn.ids["conversations"] = []string{chatter, asker} // contacts with messages
	tn.member = member
	tn.ids["lists"] = []string{list}
	tn.ids["campaigns"] = []string{campaign}
	tn.ids["messages"] = []string{reply, received, handoff}
	tn.ids["subaccounts"] = []string{tn.sub.id}
	tn.ids["alerts"] = []string{tn.alertID}
	tn.ids["users"] = []string{agency.Account.OwnerUserID}
	r = do(t, "POST", srv.URL+"/v1/canned_replies", tn.key, map[string]any{"shortcut": name + "-hours", "body": "We open at 9."})
	expect(t, r, http.StatusCreated, "")
	tn.ids["canned_replies"] = []string{r.JSON(t)["id"].(string)}
	return tn
}

// plainTenant is an ordinary account (not an agency) with a contact of its own.
func plainTenant(t *testing.T, srv *server, name string) *tenant {
	t.Helper()
	acc, key := newAccount(t)
	tn := &tenant{name: name, key: key, email: acc.Email, accountID: acc.ID, ids: map[string][]string{}}
	r := do(t, "POST", srv.URL+"/v1/contacts", key, map[string]any{"firstName": "Own", "email": name + "-own@example.com"})
	expect(t, r, http.StatusCreated, "")
	tn.ids["contacts"] = []string{r.JSON(t)["id"].(string)}
	tn.member = tn.ids["contacts"][0]
	return tn
}

// pathParam finds the parameters of an OpenAPI path template.
var pathParam = regexp.MustCompile(`\{[^}]+\}`)

// callerParams fill the parameters after the first of a path with ids of the caller's own, by path
// and parameter: the request names the victim's resource by the first parameter only (removing the
// caller's own member from the victim's list), and on the caller's own resources it is the control
// that succeeds.
var callerParams = map[string]map[string]func(caller *tenant) string{
	"/v1/lists/{id}/contacts/{contactId}": {"{contactId}": func(caller *tenant) string { return caller.member }},
}

// resourceOf names the resource a path's first parameter identifies: the segment before it
// (/v1/lists/{id}/contacts -> "lists"). ok is false for a path with no parameter, or with more than
// one that callerParams does not fill.
func resourceOf(path string) (kind string, ok bool) {
	locs := pathParam.FindAllStringIndex(path, -1)
	if len(locs) == 0 || len(locs) > 1+len(callerParams[path]) {
		return "", false
	}
	segments := strings.Split(strings.TrimSuffix(path[:locs[0][0]], "/"), "/")
	return segments[len(segments)-1], true
}

// isolationRequest is a request that would succeed if the caller owned the resource in its path.
type isolationRequest struct {
	body    any
	headers []string
}

// isolationBodies are plausible valid bodies for the write operations with a path id, by "METHOD path".
// caller is the account sending the request (its own contact goes into a list add).
var isolationBodies = map[string]func(t *testing.T, caller *tenant) isolationRequest{
	"PATCH /v1/campaigns/{id}": func(*testing.T, *tenant) isolationRequest {
		return isolationRequest{body: map[string]any{"name": "Taken over", "openingMessage": "Hi from elsewhere", "goal": "Leak."}}
	},
	"PATCH /v1/conversations/{contactId}": func(*testing.T, *tenant) isolationRequest {
		return isolationRequest{body: map[string]any{"status": "resolved"}}
	},
	"PUT /v1/contacts/{id}/bot": func(*testing.T, *tenant) isolationRequest {
		return isolationRequest{body: map[string]any{"active": true}}
	},
	"PUT /v1/contacts/{id}/consent": func(*testing.T, *tenant) isolationRequest {
		return isolationRequest{body: map[string]any{"status": "opted_in", "text": "not yours to give"}}
	},
	"POST /v1/contacts/{id}/messages": func(*testing.T, *tenant) isolationRequest {
		return isolationRequest{body: map[string]any{"body": "hi"}}
	},
	"POST /v1/lists/{id}/contacts": func(_ *testing.T, caller *tenant) isolationRequest {
		return isolationRequest{body: map[string]any{"contactId": caller.ids["contacts"][0]}}
	},
	"POST /v1/lists/{id}/import": func(t *testing.T, caller *tenant) isolationRequest {
		csv := fmt.Sprintf("phone,first_name,last_name,email\n+1415555%04d,Imp,Orted,%s-import@example.com\n", 8000+accountSeq.Add(1)%1000, caller.name)
		body, ctype := multipartCSV(t, "file", csv)
		return isolationRequest{body: body, headers: []string{"Content-Type: " + ctype}}
	},
	"POST /v1/contacts/{id}/goal": func(*testing.T, *tenant) isolationRequest {
		return isolationRequest{body: map[string]any{"note": "not yours"}}
	},
	"PUT /v1/contacts/{id}/assignee": func(*testing.T, *tenant) isolationRequest {
		return isolationRequest{body: map[string]any{"userId": nil}}
	},
	"POST /v1/contacts/{id}/notes": func(*testing.T, *tenant) isolationRequest {
		return isolationRequest{body: map[string]any{"body": "a note on someone else's contact"}}
	},
	"PATCH /v1/users/{id}": func(*testing.T, *tenant) isolationRequest {
		return isolationRequest{body: map[string]any{"available": false}}
	},
	"PUT /v1/canned_replies/{id}": func(*testing.T, *tenant) isolationRequest {
		return isolationRequest{body: map[string]any{"shortcut": "taken", "body": "Taken over"}}
	},
	"PUT /v1/subaccounts/{id}/auto_recharge": func(*testing.T, *tenant) isolationRequest {
		return isolationRequest{body: map[string]any{"threshold": 1, "amount": 1, "webhookUrl": "https://example.com/x"}}
	},
}

// pathOperation is one operation of the OpenAPI document whose path names a resource by id.
type pathOperation struct {
	method, path, id, kind string
	hasBody                bool
}

// pathOperations walks the document for every operation with a path parameter. An operation whose
// resource the test cannot supply, or a write without a body here, fails the test: a route added later
// must come with isolation coverage.
func pathOperations(t *testing.T, victim *tenant) []pathOperation {
	t.Helper()
	c, err := loadContract()
	if err != nil {
		t.Fatal(err)
	}
	var ops []pathOperation
	for path, item := range c.doc.Paths.Map() {
		for method, op := range item.Operations() {
			if !pathParam.MatchString(path) {
				continue
			}
			name := method + " " + path
			kind, ok := resourceOf(path)
			if !ok || len(victim.ids[kind]) == 0 {
				t.Errorf("%s (%s): no isolation coverage: the test has no victim resource for its path parameters", name, op.OperationID)
				continue
			}
			hasBody := op.RequestBody != nil
			if _, ok := isolationBodies[name]; hasBody && !ok {
				t.Errorf("%s (%s): no isolation coverage: the test has no valid request body for it", name, op.OperationID)
				continue
			}
			ops = append(ops, pathOperation{method: method, path: path, id: op.OperationID, kind: kind, hasBody: hasBody})
		}
	}
	for name := range isolationBodies {
		method, path, _ := strings.Cut(name, " ")
		if item := c.doc.Paths.Find(path); item == nil || item.GetOperation(method) == nil {
			t.Errorf("isolationBodies has %s, which the document does not have", name)
		}
	}
	slices.SortFunc(ops, func(a, b pathOperation) int { return strings.Compare(a.path+" "+a.method, b.path+" "+b.method) })
	return ops
}

// call sends op as caller on the resource id.
func (op pathOperation) call(t *testing.T, srv *server, caller *tenant, id string) response {
	t.Helper()
	var req isolationRequest
	if build, ok := isolationBodies[op.method+" "+op.path]; ok {
		req = build(t, caller)
	}
	first := true
	path := pathParam.ReplaceAllStringFunc(op.path, func(param string) string {
		if first {
			first = false
			return url.PathEscape(id)
		}
		return url.PathEscape(callerParams[op.path][param](caller))
	})
	return do(t, op.method, srv.URL+path, caller.key, req.body, req.headers...)
}

// victimSnapshot is everything of the victim that a request of another account could change: the body
// of every GET with a path id and of its collections, and the rows behind what the API does not show
// (bot pauses, auto-recharge settings, balances).
type victimSnapshot struct {
	API      map[string]string
	Contacts []models.Contact
	Messages []models.Message
	Sub      models.Account
}

func victimState(t *testing.T, srv *server, victim *tenant, ops []pathOperation) victimSnapshot {
	t.Helper()
	ctx := context.Background()
	state := victimSnapshot{API: map[string]string{}}
	for _, op := range ops {
		if op.method != http.MethodGet {
			continue
		}
		for _, id := range victim.ids[op.kind] {
			r := op.call(t, srv, victim, id)
			expect(t, r, http.StatusOK, "")
			state.API[op.method+" "+op.path+" "+id] = string(r.Body)
		}
	}
	for _, path := range []string{"/v1/lists", "/v1/campaigns", "/v1/alerts", "/v1/alerts?all=true", "/v1/conversations", "/v1/subaccounts", "/v1/settings/webhook"} {
		r := do(t, "GET", srv.URL+path, victim.key, nil)
		expect(t, r, http.StatusOK, "")
		state.API["GET "+path] = string(r.Body)
	}
	for _, path := range []string{"/v1/credits", "/v1/credits/transactions"} {
		r := do(t, "GET", srv.URL+path, victim.sub.key, nil)
		expect(t, r, http.StatusOK, "")
		state.API["sub-account GET "+path] = string(r.Body)
	}
	db := env.Store.DB()
	if err := db.NewSelect().Model(&state.Contacts).Where("account_id = ?", victim.accountID).Order("id").Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if err := db.NewSelect().Model(&state.Messages).Where("account_id = ?", victim.accountID).Order("id").Scan(ctx); err != nil {
		t.Fatal(err)
	}
	err := db.NewSelect().Model(&state.Sub).
		Column("id", "credit_balance_milli", "auto_recharge_threshold_milli", "auto_recharge_amount_milli",
			"auto_recharge_webhook_url", "auto_recharge_armed", "auto_recharge_event").
		Where("id = ?", victim.sub.id).Scan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return state
}

// secretsOf lists what of the victim must never appear in another account's response.
func secretsOf(victim *tenant) []string {
	s := []string{victim.key, victim.secret, victim.email, victim.contactEmail, victim.contactPhone,
		strings.TrimPrefix(victim.contactPhone, "+"), victim.alertID, victim.accountID, victim.sub.id, victim.sub.email, victim.sub.key}
	s = append(s, victim.fromIDs...)
	for _, ids := range victim.ids {
		s = append(s, ids...)
	}
	return slices.DeleteFunc(s, func(v string) bool { return v == "" })
}

// unknownID is an id shaped like id that no account has: its last character changed.
func unknownID(id string) string {
	last := "0"
	if strings.HasSuffix(id, "0") {
		last = "1"
	}
	return id[:len(id)-1] + last
}

// refusal tells whether r is the answer op must give caller for the victim's id, and names it.
func refusal(t *testing.T, op pathOperation, caller *tenant, r response) (string, bool) {
	t.Helper()
	if r.Status >= 200 && r.Status < 300 {
		return fmt.Sprintf("%d (SUCCESS on another account's id): %s", r.Status, excerpt(r.Body)), false
	}
	code := r.errorCode(t)
	answer := fmt.Sprintf("%d %s", r.Status, code)
	if r.Status == http.StatusNotFound && code == models.CodeNotFound {
		return answer, true
	}
	// A caller that is not an agency is refused by the agency routes before any id is looked at.
	if op.kind == "subaccounts" && !caller.agency && r.Status == http.StatusForbidden && code == models.CodeForbidden {
		return answer + " (not an agency)", true
	}
	return answer + ": " + excerpt(r.Body), false
}

func TestEveryRouteIsolatesAccounts(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t)
	hook := isolationSink(t)
	victim := seedTenant(t, srv, hook, "victim")
	agencyAttacker := seedTenant(t, srv, hook, "rival")
	attackers := []*tenant{plainTenant(t, srv, "intruder"), agencyAttacker}

	ops := pathOperations(t, victim)
	if t.Failed() {
		t.FailNow()
	}
	before := victimState(t, srv, victim, ops)
	secrets := secretsOf(victim)

	for _, attacker := range attackers {
		t.Run("as "+attacker.name, func(t *testing.T) {
			for _, op := range ops {
				for _, id := range victim.ids[op.kind] {
					r := op.call(t, srv, attacker, id)
					answer, ok := refusal(t, op, attacker, r)
					if !ok {
						t.Errorf("%s %s (%s) on the victim's %s %s: %s, want 404 NOT_FOUND", op.method, op.path, op.id, op.kind, id, answer)
						continue
					}
					t.Logf("%s %s (%s) on the victim's %s: %s", op.method, op.path, op.id, op.kind, answer)
					// Exactly like an id that exists nowhere: the same status and body (the id aside).
					unknown := unknownID(id)
					u := op.call(t, srv, attacker, unknown)
					if got, want := strings.ReplaceAll(string(r.Body), id, "<id>"), strings.ReplaceAll(string(u.Body), unknown, "<id>"); r.Status != u.Status || got != want {
						t.Errorf("%s %s: the victim's id answers %d %s, an unknown id %d %s", op.method, op.path, r.Status, got, u.Status, want)
					}
					for _, s := range secrets {
						// The refusal may name the id the caller sent; anything else of the victim is a leak.
						if s != id && strings.Contains(string(r.Body), s) {
							t.Errorf("%s %s: the refusal shows the victim's %q: %s", op.method, op.path, s, r.Body)
						}
					}
				}
			}
		})
	}

	t.Run("collections show nothing of the victim", func(t *testing.T) {
		reads := []struct {
			path, query string
			status      int // 0: any 2xx
			code        string
		}{
			{"/v1/lists", "", 0, ""},
			{"/v1/campaigns", "", 0, ""},
			{"/v1/alerts", "", 0, ""},
			{"/v1/alerts", "all=true", 0, ""},
			{"/v1/conversations", "", 0, ""},
			{"/v1/conversations", "unread=true", 0, ""},
			{"/v1/contacts", "email=" + url.QueryEscape(victim.contactEmail), http.StatusNotFound, models.CodeNotFound},
			{"/v1/contacts", "phoneNumber=" + url.QueryEscape(victim.contactPhone), http.StatusNotFound, models.CodeNotFound},
			{"/v1/subaccounts", "", 0, ""},
			{"/v1/credits", "", 0, ""},
			{"/v1/credits/transactions", "", 0, ""},
			{"/v1/settings/webhook", "", 0, ""},
		}
		for _, attacker := range attackers {
			for _, rd := range reads {
				r := do(t, "GET", srv.URL+rd.path+"?"+rd.query, attacker.key, nil)
				switch {
				case rd.path == "/v1/subaccounts" && !attacker.agency:
					expect(t, r, http.StatusForbidden, models.CodeForbidden)
				case rd.status != 0:
					expect(t, r, rd.status, rd.code)
				case r.Status < 200 || r.Status > 299:
					t.Errorf("GET %s?%s as %s: %d %s", rd.path, rd.query, attacker.name, r.Status, r.Body)
				}
				t.Logf("GET %s?%s as %s: %d", rd.path, rd.query, attacker.name, r.Status)
				for _, s := range secrets {
					if strings.Contains(string(r.Body), s) {
						t.Errorf("GET %s?%s as %s shows the victim's %q: %s", rd.path, rd.query, attacker.name, s, r.Body)
					}
				}
			}
		}
	})

	t.Run("a grant to another agency's sub-account", func(t *testing.T) {
		grant := map[string]any{"email": victim.sub.email, "amount": 100, "description": "not yours"}
		expect(t, do(t, "POST", srv.URL+"/v1/subaccounts/credits", agencyAttacker.key, grant), http.StatusNotFound, models.CodeNotFound)
		expect(t, do(t, "POST", srv.URL+"/v1/subaccounts/credits", attackers[0].key, grant), http.StatusForbidden, models.CodeForbidden)
		if got := balanceOf(t, srv, victim.sub.key); got != 5 {
			t.Fatalf("the victim's sub-account has %v credits, want 5", got)
		}
	})

	// Nothing of the victim changed: not the contacts, the list's members, the campaign, the messages'
	// status, the bot pauses, the sub-account's balance or auto-recharge.
	if diff := cmp.Diff(before, victimState(t, srv, victim, ops)); diff != "" {
		t.Errorf("the attackers' requests changed the victim's data (-before +after):\n%s", diff)
	}

	// The same requests on the attacker's own resources succeed: the refusals above were for the ids,
	// not for the bodies.
	t.Run("control: the same requests on the caller's own ids", func(t *testing.T) {
		// Deletes last: the other requests on the same resource need it to exist.
		ordered := slices.Clone(ops)
		slices.SortStableFunc(ordered, func(a, b pathOperation) int {
			return boolInt(a.method == http.MethodDelete) - boolInt(b.method == http.MethodDelete)
		})
		for _, op := range ordered {
			r := op.call(t, srv, agencyAttacker, agencyAttacker.ids[op.kind][0])
			if r.Status < 200 || r.Status > 299 {
				t.Errorf("%s %s (%s) on the caller's own %s: %d %s", op.method, op.path, op.id, op.kind, r.Status, r.Body)
			}
		}
	})
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
