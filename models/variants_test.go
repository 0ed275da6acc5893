package models_test

import (
	"context"
	"fmt"
	"testing"

	"funnelchat/models"
)

func TestPersonalizeFillsOrRemovesNamesCleanly(t *testing.T) {
	ann := &models.Contact{FirstName: "Ann", LastName: "Lee"}
	nobody := &models.Contact{}
	for _, tc := range []struct {
		template string
		c        *models.Contact
		want     string
	}{
		{"Hi {{firstName}}, want a call?", ann, "Hi Ann, want a call?"},
		{"Hi {{firstName}}, want a call?", nobody, "Hi, want a call?"},
		{"Hi {{ firstName }}!", nobody, "Hi!"},
		{"{{firstName}}, shall we talk?", nobody, "Shall we talk?"},
		{"{{firstName}} - your offer is ready", nobody, "Your offer is ready"},
		{"{{firstName}}, shall we talk?", ann, "Ann, shall we talk?"},
		{"Dear {{firstName}} {{lastName}}, hello", ann, "Dear Ann Lee, hello"},
		{"Dear {{firstName}} {{lastName}}, hello", &models.Contact{FirstName: "Ann"}, "Dear Ann, hello"},
		{"Dear {{firstName}} {{lastName}}, hello", nobody, "Dear, hello"},
		{"{{firstName}}{{lastName}}", nobody, ""},
		{"({{firstName}}) hello", nobody, "() hello"},
		{"¡{{firstName}}, hola!", nobody, "¡, hola!"},
		{"{{firstName}}, ¿qué tal?", nobody, "¿Qué tal?"},
		{"{{firstName}}: 20% off today", nobody, "20% off today"},
		{"{{firstName}}, éxito", nobody, "Éxito"},
		{"No names here", nobody, "No names here"},
	} {
		if got := models.Personalize(tc.template, tc.c); got != tc.want {
			t.Errorf("Personalize(%q, %q) = %q, want %q", tc.template, tc.c.FirstName, got, tc.want)
		}
	}
}

// TestOpeningVariantsAreChosenEvenlyAndKept: 600 contacts added to a campaign with three variants each
// get one of them (each about a third), and re-adding them changes none.
func TestOpeningVariantsAreChosenEvenlyAndKept(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	accID := csAccount(t, "Variants").Account.ID
	l, err := env.Store.CreateList(ctx, accID, "variant leads")
	if err != nil {
		t.Fatal(err)
	}
	name, ch, status, listID := "variants", "custom:web", models.CampaignLive, l.ID
	texts := []string{"A {{firstName}}", "B {{firstName}}", "C {{firstName}}"}
	c, err := env.Store.CreateCampaign(ctx, accID, models.CampaignInput{Name: &name, Channel: &ch, Status: &status, ListID: &listID, OpeningMessages: &texts})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := 0; i < 600; i++ {
		ct, _, err := env.Store.CreateOrGetContact(ctx, accID, models.ContactInput{Email: fmt.Sprintf("v%d@example.com", i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ct.ID)
	}
	sends := csQueue(t, accID, l.ID, ids...)
	variantOf := func() map[string]int {
		out := map[string]int{}
		for contactID, sendID := range sends {
			s, err := env.Store.CampaignSend(ctx, sendID)
			if err != nil {
				t.Fatal(err)
			}
			out[contactID] = s.Variant
		}
		return out
	}
	before := variantOf()
	counts := make([]int, len(texts))
	for _, v := range before {
		counts[v]++
	}
	// Each count is Binomial(600, 1/3): mean 200, sd 11.5; 150..250 is beyond 4 sd.
	for v, n := range counts {
		if n < 150 || n > 250 {
			t.Errorf("variant %d went to %d of 600 contacts, want about 200: %v", v, n, counts)
		}
	}
	if res, err := env.Store.AddToList(ctx, accID, l.ID, ids); err != nil || len(res.Sends) != 0 {
		t.Fatalf("re-adding queued %v sends: %v", res, err)
	}
	for contactID, v := range variantOf() {
		if v != before[contactID] {
			t.Fatalf("contact %s changed variant %d -> %d", contactID, before[contactID], v)
		}
	}
	if got := c.OpeningFor(2); got != "C {{firstName}}" || c.OpeningFor(7) != "" {
		t.Fatalf("OpeningFor: %q, %q", got, c.OpeningFor(7))
	}
}

func TestOpeningVariantsValidation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	accID := csAccount(t, "Variant rules").Account.ID
	name := "rules"
	long := make([]byte, 4096*4+1)
	for i := range long {
		long[i] = 'x'
	}
	one, msg := "one", "single"
	for _, tc := range []struct {
		what string
		in   models.CampaignInput
	}{
		{"one text", models.CampaignInput{Name: &name, OpeningMessages: &[]string{"a"}}},
		{"six texts", models.CampaignInput{Name: &name, OpeningMessages: &[]string{"a", "b", "c", "d", "e", "f"}}},
		{"an empty text", models.CampaignInput{Name: &name, OpeningMessages: &[]string{"a", ""}}},
		{"a blank text", models.CampaignInput{Name: &name, OpeningMessages: &[]string{"a", "  \n "}}},
		{"an over-long text", models.CampaignInput{Name: &name, OpeningMessages: &[]string{"a", string(long)}}},
		{"both forms", models.CampaignInput{Name: &name, OpeningMessage: &one, OpeningMessages: &[]string{"a", "b"}}},
		{"no texts", models.CampaignInput{Name: &name, OpeningMessages: &[]string{}}},
	} {
		if _, err := env.Store.CreateCampaign(ctx, accID, tc.in); models.ErrorCode(err) != models.CodeValidation {
			t.Errorf("%s: %v, want VALIDATION_ERROR", tc.what, err)
		}
	}
	c, err := env.Store.CreateCampaign(ctx, accID, models.CampaignInput{Name: &name, OpeningMessages: &[]string{" a ", "b", "c", "d", "e"}})
	if err != nil || len(c.OpeningMessages) != 5 || c.OpeningMessages[0] != "a" {
		t.Fatalf("five variants: %+v, %v", c, err)
	}
	c, _, err = env.Store.UpdateCampaign(ctx, accID, c.ID, models.CampaignInput{OpeningMessage: &msg})
	if err != nil || c.OpeningMessages != nil || c.OpeningMessage != msg {
		t.Fatalf("a single message replaces the variants: %+v, %v", c, err)
	}
	if c, err = env.Store.CampaignByID(ctx, accID, c.ID); err != nil || c.OpeningMessages != nil || c.OpeningMessage != msg {
		t.Fatalf("read back: %+v, %v", c, err)
	}
	c, _, err = env.Store.UpdateCampaign(ctx, accID, c.ID, models.CampaignInput{OpeningMessages: &[]string{"x", "y"}})
	if err != nil || c.OpeningMessage != "" || len(c.OpeningMessages) != 2 {
		t.Fatalf("variants replace the single message: %+v, %v", c, err)
	}
	if c, err = env.Store.CampaignByID(ctx, accID, c.ID); err != nil || len(c.OpeningMessages) != 2 || c.OpeningMessages[1] != "y" {
		t.Fatalf("read back: %+v, %v", c, err)
	}
}
