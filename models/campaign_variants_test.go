package models

import (
	"fmt"
	"testing"
)

// TestSetOpenings: an edit keeps every used variant at its index with its text, rewrites unused
// ones, appends new texts and retires used ones it leaves out.
func TestSetOpenings(t *testing.T) {
	cases := []struct {
		name        string
		old         []string
		oldRetired  []int
		used        []int
		texts       []string
		wantAll     []string
		wantRetired []int
		wantSingle  string
	}{
		{"no sends: the edit as given", []string{"A", "B", "C"}, nil, nil, []string{"C", "X"}, []string{"C", "X"}, nil, ""},
		{"remove a used variant", []string{"A", "B", "C"}, nil, []int{0, 1, 2}, []string{"A", "C"}, []string{"A", "B", "C"}, []int{1}, ""},
		{"replace a used one: retired, the new text appended", []string{"A", "B"}, nil, []int{0, 1}, []string{"A", "X"}, []string{"A", "B", "X"}, []int{1}, ""},
		{"an unused one is rewritten in place", []string{"A", "B", "C"}, nil, []int{0, 2}, []string{"A", "X", "C"}, []string{"A", "X", "C"}, nil, ""},
		{"an unused tail is dropped", []string{"A", "B", "C"}, nil, []int{0, 1}, []string{"A", "B"}, []string{"A", "B"}, nil, ""},
		{"an unused middle one is retired", []string{"A", "B", "C"}, nil, []int{0, 2}, []string{"A", "C"}, []string{"A", "B", "C"}, []int{1}, ""},
		{"a retired text comes back", []string{"A", "B", "C"}, []int{1}, []int{0, 1, 2}, []string{"A", "B", "C"}, []string{"A", "B", "C"}, nil, ""},
		{"one message edited after use", nil, nil, []int{0}, []string{"Hello"}, []string{"Hi", "Hello"}, []int{0}, ""},
		{"one message edited before use", nil, nil, nil, []string{"Hello"}, nil, nil, "Hello"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &Campaign{OpeningMessages: tc.old, RetiredVariants: tc.oldRetired}
			if tc.old == nil {
				c.OpeningMessage = "Hi"
			}
			used := map[int]bool{}
			for _, i := range tc.used {
				used[i] = true
			}
			if err := c.setOpenings(tc.texts, used); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(c.OpeningMessages) != fmt.Sprint(tc.wantAll) || fmt.Sprint(c.RetiredVariants) != fmt.Sprint(tc.wantRetired) || c.OpeningMessage != tc.wantSingle {
				t.Fatalf("got %q retired %v single %q; want %q retired %v single %q",
					c.OpeningMessages, c.RetiredVariants, c.OpeningMessage, tc.wantAll, tc.wantRetired, tc.wantSingle)
			}
			for _, i := range tc.used {
				if i < len(tc.old) && c.OpeningFor(i) != tc.old[i] {
					t.Fatalf("used variant %d now reads %q, want %q", i, c.OpeningFor(i), tc.old[i])
				}
			}
		})
	}
	t.Run("at most 26 over a life", func(t *testing.T) {
		c := &Campaign{}
		used := map[int]bool{}
		var err error
		for i := 0; err == nil && i < 40; i++ {
			err = c.setOpenings([]string{fmt.Sprint("v", i), fmt.Sprint("w", i)}, used)
			for j := range c.OpeningMessages {
				used[j] = true
			}
		}
		if ErrorCode(err) != CodeValidation {
			t.Fatalf("40 edits of used variants: %v, want VALIDATION_ERROR", err)
		}
	})
}
