package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Editing a live campaign's variants while sends are queued: every send delivers the text of the
// variant it recorded, the removed variant is retired (no new sends, its own text and results kept in
// the report), and a new text is appended at a new index.
func TestEditingVariantsKeepsWhatSendsRecorded(t *testing.T) {
	srv := startServer(t, "WEBHOOK_ALLOW_PRIVATE=true")
	hook := newSink(t, nil)
	key, _ := messagingAccount(t, srv, hook)
	texts := []string{"Alpha {{firstName}}", "Bravo {{firstName}}", "Charlie {{firstName}}"}
	campaignID, listID := liveCampaign(t, srv, key, map[string]any{"openingMessage": nil, "openingMessages": texts, "sendRatePerMinute": 6000})
	add := func(from, n int) {
		var ids []string
		for i := range n {
			ids = append(ids, namedContact(t, srv, key, fmt.Sprintf("+1415555%04d", from+i), fmt.Sprintf("Lead%d", from+i)))
		}
		expect(t, do(t, "POST", srv.URL+"/v1/lists/"+listID+"/contacts", key, map[string]any{"contactIds": ids}), http.StatusCreated, "")
	}
	add(7200, 30) // no worker yet: all 30 are queued, each with its variant recorded

	r := do(t, "PATCH", srv.URL+"/v1/campaigns/"+campaignID, key, map[string]any{
		"openingMessages": []string{"Alpha {{firstName}}", "Charlie {{firstName}}", "Delta {{firstName}}"},
	})
	expect(t, r, http.StatusOK, "")
	var campaign struct {
		OpeningMessages []string `json:"openingMessages"`
		OpeningVariants []struct {
			Index   int    `json:"index"`
			Letter  string `json:"letter"`
			Text    string `json:"text"`
			Retired bool   `json:"retired"`
		} `json:"openingVariants"`
	}
	if err := json.Unmarshal(r.Body, &campaign); err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(campaign.OpeningVariants)
	want := "[{0 A Alpha {{firstName}} false} {1 B Bravo {{firstName}} true} {2 C Charlie {{firstName}} false} {3 D Delta {{firstName}} false}]"
	if got != want || strings.Join(campaign.OpeningMessages, "|") != "Alpha {{firstName}}|Charlie {{firstName}}|Delta {{firstName}}" {
		t.Fatalf("after the edit: variants %s, openingMessages %v; want %s", got, campaign.OpeningMessages, want)
	}
	add(7300, 30)

	// What each send recorded, by the phone its opening goes to.
	type recorded struct {
		Phone   string `bun:"phone"`
		First   string `bun:"first_name"`
		Variant int    `bun:"variant"`
	}
	var sends []recorded
	err := env.Store.DB().NewSelect().TableExpr("campaign_sends AS s").Join("JOIN contacts AS c ON c.id = s.contact_id").
		ColumnExpr("c.phone, c.first_name, s.variant").Where("s.campaign_id = ?", campaignID).Scan(t.Context(), &sends)
	if err != nil {
		t.Fatal(err)
	}
	perVariant := map[int]int{}
	wantBody := map[string]string{}
	letters := []string{"Alpha", "Bravo", "Charlie", "Delta"}
	for _, s := range sends {
		perVariant[s.Variant]++
		wantBody[s.Phone] = letters[s.Variant] + " " + s.First
	}
	for _, s := range sends {
		if s.Variant == 1 && s.Phone >= "+14155557300" {
			t.Fatalf("%s, added after B was retired, got variant B", s.Phone)
		}
	}
	if perVariant[1] == 0 {
		t.Fatalf("no send recorded variant B before the edit (%v): the test proves nothing", perVariant)
	}

	startWorker(t)
	waitFor(t, 30*time.Second, "60 openings", func() bool { return len(hook.deliveries()) == 60 })
	for _, d := range hook.deliveries() {
		var p map[string]any
		_ = json.Unmarshal(d.Body, &p)
		if to := p["toId"].(string); p["body"] != wantBody[to] {
			t.Errorf("opening to %s: %q, want %q (the text of the variant its send recorded)", to, p["body"], wantBody[to])
		}
	}

	rep := reportOf(t, srv, key, campaignID)
	byIndex := map[int]map[string]any{}
	for _, v := range rep["variants"].([]any) {
		v := v.(map[string]any)
		byIndex[int(v["index"].(float64))] = v
	}
	for i, text := range []string{"Alpha {{firstName}}", "Bravo {{firstName}}", "Charlie {{firstName}}", "Delta {{firstName}}"} {
		v := byIndex[i]
		if v == nil || v["text"] != text || v["added"] != float64(perVariant[i]) || v["retired"] != (i == 1) || v["letter"] != letters[i][:1] {
			t.Errorf("report variant %d: %v, want text %q, added %d, retired %v", i, v, text, perVariant[i], i == 1)
		}
	}
}
