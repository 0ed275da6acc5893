package api_test

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"
)

// multipartCSV builds a form with the CSV as the file field.
func multipartCSV(t *testing.T, field, csv string) ([]byte, string) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	fw, err := w.CreateFormFile(field, "contacts.csv")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = fw.Write([]byte(csv))
	_ = w.Close()
	return buf.Bytes(), w.FormDataContentType()
}

func TestImportTriggersCampaignsAndReportsInvalidRows(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	startWorker(t)
	hook := newSink(t, nil)
	key, _ := messagingAccount(t, srv, hook)
	campaignID, listID := liveCampaign(t, srv, key, nil)
	existing := namedContact(t, srv, key, "+14155557001", "Old")
	expect(t, do(t, "POST", srv.URL+"/v1/lists/"+listID+"/contacts", key, map[string]any{"contactId": existing}), http.StatusCreated, "")
	waitFor(t, 10*time.Second, "the first opening", func() bool { return len(campaignMessages(t, campaignID)) == 1 })

	csv := "phone,first_name,last_name,email\n" +
		"+14155557001,Old,,\n" + // already on the list
		"+14155557002,Uma,Ray,uma@example.com\n" +
		"4155557003,NoCountry,,\n" + // invalid
		",Vic,,vic@example.com\n" +
		"+1 415 555 7002,Uma again,,\n" // row 3's contact again: on the list by now
	body, ctype := multipartCSV(t, "file", csv)
	r := do(t, "POST", srv.URL+"/v1/lists/"+listID+"/import", key, body, "Content-Type: "+ctype)
	expect(t, r, http.StatusOK, "")
	res := r.JSON(t)
	// Uma and Vic are new contacts; Old was one already, and no row changed a contact.
	if res["imported"] != 2.0 || res["existing"] != 2.0 || res["invalid"] != 1.0 || res["created"] != 2.0 || res["updated"] != 0.0 {
		t.Fatalf("import result: %s", r.Body)
	}
	errs := res["errors"].([]any)
	if len(errs) != 1 || errs[0].(map[string]any)["row"] != 4.0 || !strings.Contains(errs[0].(map[string]any)["error"].(string), "country code") {
		t.Fatalf("row errors: %v", errs)
	}
	waitFor(t, 10*time.Second, "openings for the two imported", func() bool { return len(campaignMessages(t, campaignID)) == 3 })
	// A second opening would still be in a task: the three went at once (the pacer's burst), a fourth
	// is paced a slot (3 s at the default rate) later.
	waitDrained(t, mustAccountID(t, key), retryHorizon)
	if n := len(campaignMessages(t, campaignID)); n != 3 {
		t.Fatalf("%d openings, want 3 (none again for the contact already on the list)", n)
	}

	bad := []struct {
		name, url, ctype string
		body             []byte
		status           int
	}{
		{"unknown list", srv.URL + "/v1/lists/lst_nope/import", ctype, body, 404},
		{"not multipart", srv.URL + "/v1/lists/" + listID + "/import", "text/csv", []byte(csv), 400},
	}
	wrongField, wrongType := multipartCSV(t, "upload", csv)
	bad = append(bad, struct {
		name, url, ctype string
		body             []byte
		status           int
	}{"file under another field name", srv.URL + "/v1/lists/" + listID + "/import", wrongType, wrongField, 400})
	noPhone, noPhoneType := multipartCSV(t, "file", "name,company\nAnn,Acme\n")
	bad = append(bad, struct {
		name, url, ctype string
		body             []byte
		status           int
	}{"no phone or email column", srv.URL + "/v1/lists/" + listID + "/import", noPhoneType, noPhone, 400})
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, "POST", tc.url, key, tc.body, "Content-Type: "+tc.ctype)
			if r.Status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.Status, tc.status, r.Body)
			}
		})
	}
}

// A row with bad quoting is that row's error: the rows after it, including those an unclosed quote
// would have swallowed, are imported (models.ParseContactCSV).
func TestImportReportsBadQuotingPerRow(t *testing.T) {
	srv := startServer(t)
	_, key := newAccount(t)
	listID := newList(t, srv, key, "Quoting")

	csv := "phone,first_name\n" +
		"+14155557101,\"Ada\n" + // 2: a quote never closed
		"+14155557102,Bob\n" + // 3
		"+14155557103,O\"Brien\n" + // 4: a bare quote
		"+14155557104,\"Cy \"\"Jr\"\"\"\n" // 5: quoted, with doubled quotes
	body, ctype := multipartCSV(t, "file", csv)
	r := do(t, "POST", srv.URL+"/v1/lists/"+listID+"/import", key, body, "Content-Type: "+ctype)
	expect(t, r, http.StatusOK, "")
	res := r.JSON(t)
	if res["imported"] != 2.0 || res["existing"] != 0.0 || res["invalid"] != 2.0 {
		t.Fatalf("import result: %s", r.Body)
	}
	errs := res["errors"].([]any)
	if len(errs) != 2 {
		t.Fatalf("row errors: %v", errs)
	}
	for i, want := range []struct {
		row  float64
		text string
	}{{2, "unclosed quote"}, {4, "bare quote"}} {
		e := errs[i].(map[string]any)
		if e["row"] != want.row || !strings.Contains(e["error"].(string), want.text) {
			t.Errorf("row error %d: %v, want row %v with %q", i, e, want.row, want.text)
		}
	}

	page := do(t, "GET", srv.URL+"/v1/lists/"+listID+"/contacts", key, nil)
	expect(t, page, http.StatusOK, "")
	names := map[string]string{}
	for _, item := range page.JSON(t)["data"].([]any) {
		c := item.(map[string]any)
		phone, _ := c["phone"].(string)
		name, _ := c["firstName"].(string)
		names[phone] = name
	}
	want := map[string]string{"+14155557102": "Bob", "+14155557104": `Cy "Jr"`}
	if len(names) != len(want) || names["+14155557102"] != want["+14155557102"] || names["+14155557104"] != want["+14155557104"] {
		t.Fatalf("list contacts %v, want %v\n%s", names, want, page.Body)
	}
}
