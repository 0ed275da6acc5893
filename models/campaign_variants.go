package models

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/uptrace/bun"
)

// A campaign's opening variants are stable once used: a send records its variant's index, and that
// index keeps its text for as long as the campaign exists, so the send delivers the text it was given
// and the report counts each text's own results. Editing the openings of a campaign with sends
// rewrites only variants no send used, appends new texts, and retires a used variant that the edit
// leaves out (no new sends get it; it keeps its row in the report).
//
// Storage: a campaign with one opening text and no history keeps it in opening_message; otherwise
// opening_messages holds every variant's text by index, retired ones included, and retired_variants
// their indexes.

// maxVariantsEver bounds a campaign's variants over its life, retired ones included: one letter each.
const maxVariantsEver = 26

// OpeningVariant is one of a campaign's opening texts, as the campaign's openingVariants list it.
type OpeningVariant struct {
	Index   int    `json:"index"`
	Letter  string `json:"letter"`
	Text    string `json:"text"`
	Retired bool   `json:"retired"`
}

// VariantLetter is a variant's letter (A for index 0), as the report's CSV names it.
func VariantLetter(index int) string {
	if index < 0 || index >= maxVariantsEver {
		return "?"
	}
	return string(rune('A' + index))
}

// Variants lists every opening variant of the campaign by index, retired ones included.
func (c *Campaign) Variants() []OpeningVariant {
	texts := c.OpeningMessages
	if len(texts) == 0 {
		if c.OpeningMessage == "" {
			return []OpeningVariant{}
		}
		texts = []string{c.OpeningMessage}
	}
	out := make([]OpeningVariant, len(texts))
	for i, t := range texts {
		out[i] = OpeningVariant{Index: i, Letter: VariantLetter(i), Text: t, Retired: slices.Contains(c.RetiredVariants, i)}
	}
	return out
}

// ActiveOpenings are the texts new sends may get, by index.
func (c *Campaign) ActiveOpenings() []string {
	var out []string
	for _, v := range c.activeVariants() {
		out = append(out, v.Text)
	}
	return out
}

// activeVariants are the variants new sends may get.
func (c *Campaign) activeVariants() []OpeningVariant {
	return slices.DeleteFunc(c.Variants(), func(v OpeningVariant) bool { return v.Retired })
}

// OpeningFor is the text of the variant a send recorded (0 for a campaign with one opening message),
// retired or not.
func (c *Campaign) OpeningFor(variant int) string {
	vs := c.Variants()
	if variant < 0 || variant >= len(vs) {
		return "" // never recorded: a send's variant is one the campaign had when it was added
	}
	return vs[variant].Text
}

// pickVariant chooses the variant a newly added contact gets: evenly at random among the active ones.
func (c *Campaign) pickVariant() int {
	active := c.activeVariants()
	if len(active) == 0 {
		return 0
	}
	return active[rand.IntN(len(active))].Index
}

// setOpenings gives the campaign the opening texts an edit asks for (texts: one or several), keeping
// every variant in used (the indexes its sends recorded) at its index with its text. Errors:
// VALIDATION_ERROR when the edits over the campaign's life would pass maxVariantsEver variants.
func (c *Campaign) setOpenings(texts []string, used map[int]bool) error {
	old := c.Variants()
	if len(used) == 0 {
		old = nil // nothing to keep: the edit's texts, in its order
	}
	all, retired := make([]string, len(old)), []int(nil)
	want := slices.Clone(texts)
	free := []int{}
	for i, v := range old {
		all[i] = v.Text
		switch j := slices.Index(want, v.Text); {
		case j >= 0:
			want = slices.Delete(want, j, j+1)
		case used[i]:
			retired = append(retired, i)
		default:
			free = append(free, i)
		}
	}
	for _, i := range free {
		if len(want) > 0 {
			all[i], want = want[0], want[1:]
			continue
		}
		retired = append(retired, i) // unused and left out: nothing refers to it, it goes at the end below
	}
	all = append(all, want...)
	for len(all) > 0 && slices.Contains(retired, len(all)-1) && !used[len(all)-1] {
		retired = slices.DeleteFunc(retired, func(i int) bool { return i == len(all)-1 })
		all = all[:len(all)-1]
	}
	if len(all) > maxVariantsEver {
		return Errorf(CodeValidation, "a campaign keeps at most %d opening variants over its life, retired ones included: create a new campaign", maxVariantsEver)
	}
	slices.Sort(retired)
	if len(all) == 1 && len(retired) == 0 {
		c.OpeningMessage, c.OpeningMessages, c.RetiredVariants = all[0], nil, nil
		return nil
	}
	c.OpeningMessage, c.OpeningMessages, c.RetiredVariants = "", all, retired
	return nil
}

// usedVariants are the variant indexes the campaign's sends recorded.
func usedVariants(ctx context.Context, db bun.IDB, campaignID string) (map[int]bool, error) {
	var idx []int
	if err := db.NewSelect().Model((*CampaignSend)(nil)).Distinct().Column("variant").
		Where("campaign_id = ?", campaignID).Scan(ctx, &idx); err != nil {
		return nil, err
	}
	used := make(map[int]bool, len(idx))
	for _, i := range idx {
		used[i] = true
	}
	return used, nil
}

// openingTexts is the edit's opening texts (nil when it does not touch them), trimmed.
func (in *CampaignInput) openingTexts() []string {
	switch {
	case in.OpeningMessages != nil:
		out := make([]string, len(*in.OpeningMessages))
		for i, t := range *in.OpeningMessages {
			out[i] = strings.TrimSpace(t)
		}
		return out
	case in.OpeningMessage != nil:
		if t := strings.TrimSpace(*in.OpeningMessage); t != "" {
			return []string{t}
		}
		return []string{}
	}
	return nil
}

// MarshalJSON shows the openings as a client sets them (openingMessage, or openingMessages when
// several are active) and every variant with its index, letter and whether it is retired.
func (c Campaign) MarshalJSON() ([]byte, error) {
	type plain Campaign
	out := struct {
		plain
		OpeningMessage  string           `json:"openingMessage"`
		OpeningMessages []string         `json:"openingMessages,omitempty"`
		OpeningVariants []OpeningVariant `json:"openingVariants"`
	}{plain: plain(c), OpeningVariants: c.Variants()}
	switch active := c.ActiveOpenings(); len(active) {
	case 0:
	case 1:
		out.OpeningMessage = active[0]
	default:
		out.OpeningMessages = active
	}
	return json.Marshal(out)
}
