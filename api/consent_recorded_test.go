package api_test

import (
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// Who recorded each consent change: the API key of the request (its last 4 characters), the inbox's
// signed-in user, or no one for a change the service made itself (a keyword). In the ledger, the
// export's recorded_by column and the inbox's consent history.

var (
	consentEntry = regexp.MustCompile(`(?s)<li class="consentevent">(.*?)</li>`)
	htmlTag      = regexp.MustCompile(`<[^>]*>`)
	spaces       = regexp.MustCompile(`\s+`)
)

// consentEntries are the entries of the consent history on an inbox conversation page, in the page's
// order, each as its text with the whitespace collapsed.
func consentEntries(body string) []string {
	var out []string
	for _, m := range consentEntry.FindAllStringSubmatch(body, -1) {
		out = append(out, strings.TrimSpace(spaces.ReplaceAllString(htmlTag.ReplaceAllString(m[1], " "), " ")))
	}
	return out
}

func TestConsentRecordedBy(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	b, acc, key := signedIn(t, srv)
	contact := senderOf(t, srv, key, chatIncoming(t, srv, key, "who-1", "vera-web", "live-chat", "hello"))
	consentPath := "/v1/contacts/" + contact + "/consent"
	conversation := "/inbox/conversations/" + contact

	// 1. Through the API, by hand.
	expect(t, do(t, "PUT", srv.URL+consentPath, key, map[string]any{
		"channel": "live-chat", "status": "opted_in", "source": "chat widget", "text": "Ticked the box in the chat"}), http.StatusOK, "")
	// 2. By keyword: the service itself.
	expect(t, chatIncoming(t, srv, key, "who-2", "vera-web", "live-chat", "STOP"), http.StatusOK, "")
	// 3. In the inbox, by the signed-in owner, through the form.
	if p := b.post(conversation, conversation+"/consent", url.Values{
		"channel": {"live-chat"}, "status": {"opted_in"}, "note": {"Called us and asked for the chat offers again"},
	}); p.Status != http.StatusSeeOther {
		t.Fatalf("the inbox's consent form: %d\n%.1500s", p.Status, p.Body)
	}
	// 4. With a list addition through the API.
	listID := newList(t, srv, key, "who")
	expect(t, do(t, "POST", srv.URL+"/v1/lists/"+listID+"/contacts", key, map[string]any{
		"contactId": contact, "consent": map[string]any{"channel": "sms", "source": "checkout", "text": "Yes, text me"}}), http.StatusCreated, "")
	// 5. With the key rotated: the request's key is the one named.
	r := do(t, "POST", srv.URL+"/v1/api_key", key, nil)
	expect(t, r, http.StatusCreated, "")
	newKey := r.JSON(t)["apiKey"].(string)
	expect(t, do(t, "PUT", srv.URL+consentPath, newKey, map[string]any{"channel": "sms", "status": "opted_out", "text": "asked by email"}),
		http.StatusOK, "")
	// 6. Evidence from a paper form, given long ago and recorded last.
	const paper = "2026-11-20T09:30:00Z"
	expect(t, do(t, "PUT", srv.URL+consentPath, newKey, map[string]any{
		"channel": "whatsapp", "status": "opted_in", "source": "paper form", "at": paper}), http.StatusOK, "")

	// 7. The answer to PUT lists the new event with who recorded it.
	r = do(t, "PUT", srv.URL+consentPath, newKey, map[string]any{"channel": "sms", "status": "opted_in", "text": "changed their mind"})
	expect(t, r, http.StatusOK, "")
	answered := r.JSON(t)["events"].([]any)
	if got := answered[len(answered)-1].(map[string]any)["recordedBy"]; !reflect.DeepEqual(got, map[string]any{"apiKey": newKey[len(newKey)-4:]}) {
		t.Fatalf("the answer's new event: recordedBy %v, want the new key's last 4", got)
	}

	byKey := func(k string) map[string]any { return map[string]any{"apiKey": k[len(k)-4:]} }
	byOwner := map[string]any{"userId": acc.OwnerUserID, "email": acc.Email}
	want := []struct {
		source     string
		recordedBy map[string]any
		label      string // in the export's recorded_by
	}{
		{"chat widget", byKey(key), "api_key:" + key[len(key)-4:]},
		{"keyword", nil, ""},
		{"inbox", byOwner, acc.Email},
		{"checkout", byKey(key), "api_key:" + key[len(key)-4:]},
		{"api", byKey(newKey), "api_key:" + newKey[len(newKey)-4:]},
		{"paper form", byKey(newKey), "api_key:" + newKey[len(newKey)-4:]},
		{"api", byKey(newKey), "api_key:" + newKey[len(newKey)-4:]},
	}

	t.Run("the ledger says who", func(t *testing.T) {
		_, events := consentOf(t, srv, newKey, contact)
		if len(events) != len(want) {
			t.Fatalf("%d events, want %d: %v", len(events), len(want), events)
		}
		for i, w := range want {
			e := events[i]
			got, present := e["recordedBy"]
			if e["source"] != w.source || !present {
				t.Fatalf("event %d: %v, want source %q and recordedBy", i, e, w.source)
			}
			if w.recordedBy == nil {
				if got != nil {
					t.Errorf("event %d (%s): recordedBy %v, want null", i, w.source, got)
				}
				continue
			}
			if !reflect.DeepEqual(got, w.recordedBy) {
				t.Errorf("event %d (%s): recordedBy %v, want %v", i, w.source, got, w.recordedBy)
			}
		}
		if events[2]["userId"] != acc.OwnerUserID {
			t.Errorf("the inbox's event: userId %v, want %s", events[2]["userId"], acc.OwnerUserID)
		}
	})

	t.Run("the export's last column says who", func(t *testing.T) {
		r := do(t, "GET", srv.URL+"/v1/consent/export", newKey, nil)
		expect(t, r, http.StatusOK, "")
		rows := readCSV(t, r.Body)
		if got := strings.Join(rows[0], ","); got != "at,contact_id,phone,email,channel,status,source,text,ip,message_id,recorded_by" {
			t.Fatalf("header %s", got)
		}
		// The export is in order of time: the paper form's evidence, given first, comes first.
		order := []int{5, 0, 1, 2, 3, 4, 6}
		if len(rows) != len(order)+1 {
			t.Fatalf("%d rows, want %d: %v", len(rows)-1, len(order), rows)
		}
		for i, k := range order {
			row := rows[i+1]
			if row[6] != want[k].source || row[10] != want[k].label {
				t.Errorf("row %d: source %q recorded_by %q, want %q and %q (%v)", i+1, row[6], row[10], want[k].source, want[k].label, row)
			}
		}
	})

	t.Run("the inbox shows the history newest first", func(t *testing.T) {
		p := b.get(conversation)
		if p.Status != http.StatusOK {
			t.Fatalf("conversation page: %d", p.Status)
		}
		entries := consentEntries(p.Body)
		wantEntries := [][]string{
			{"Opted in", "sms", "api", "by API key …" + newKey[len(newKey)-4:], "changed their mind"},
			{"Opted out", "sms", "api", "by API key …" + newKey[len(newKey)-4:], "asked by email"},
			{"Opted in", "sms", "checkout", "by API key …" + key[len(key)-4:], "Yes, text me"},
			{"Opted in", "live-chat", "inbox", "by " + acc.Email, "Called us and asked for the chat offers again"},
			{"Opted out", "live-chat", "keyword", "STOP"},
			{"Opted in", "live-chat", "chat widget", "by API key …" + key[len(key)-4:], "Ticked the box in the chat"},
			// Given first, though recorded last: the oldest.
			{"Opted in", "whatsapp", "paper form", "by API key …" + newKey[len(newKey)-4:]},
		}
		if len(entries) != len(wantEntries) {
			t.Fatalf("%d entries in the history, want %d: %q", len(entries), len(wantEntries), entries)
		}
		for i, parts := range wantEntries {
			for _, part := range parts {
				if !strings.Contains(entries[i], part) {
					t.Errorf("entry %d reads %q, want it to contain %q", i, entries[i], part)
				}
			}
		}
		if strings.Contains(entries[4], "by ") {
			t.Errorf("the keyword's entry names someone: %q", entries[4])
		}
		// The five newest on show, the two oldest behind a switch.
		shown, older, _ := strings.Cut(p.Body, `<details class="consentolder">`)
		if n, m := len(consentEntries(shown)), len(consentEntries(older)); n != 5 || m != 2 || !strings.Contains(older, "2 older changes</summary>") {
			t.Errorf("%d entries on show and %d behind the switch, want 5 and 2 behind \"2 older changes\"", n, m)
		}
	})
}
