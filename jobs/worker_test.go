package jobs

import (
	"slices"
	"strings"
	"testing"
)

func TestConcurrenciesShareWorkerConcurrency(t *testing.T) {
	for _, tc := range []struct {
		total int
		want  []int
	}{
		{1, []int{1}}, {5, []int{5}}, // one loop keeps up with so few tasks
		{6, []int{3, 2, 1}}, {7, []int{3, 2, 2}}, {20, []int{10, 5, 5}}, {21, []int{10, 6, 5}}, {100, []int{50, 25, 25}},
	} {
		got := concurrencies(tc.total)
		if !slices.Equal(got, tc.want) {
			t.Errorf("concurrencies(%d) = %v, want %v", tc.total, got, tc.want)
		}
	}
	for total := 1; total <= 200; total++ {
		got := concurrencies(total)
		sum := 0
		for _, n := range got {
			if n < 1 {
				t.Fatalf("concurrencies(%d) = %v: a server without a slot", total, got)
			}
			sum += n
		}
		if sum != total {
			t.Fatalf("concurrencies(%d) = %v: sums to %d", total, got, sum)
		}
	}
}

// The first-word index must answer exactly as trying every phrase at every word (the matcher before the
// index), including a first word matched through its plural -s.
func TestOptOutIndexMatchesEveryPhraseScan(t *testing.T) {
	scan := func(m optOutMatcher, words []string) bool {
		for _, msg := range m.messages {
			if len(msg) == len(words) && containsPhrase(words, msg) {
				return true
			}
		}
		every := make([]int, len(m.phrases))
		for i := range every {
			every[i] = i
		}
		for i := range words {
			if m.phraseAt(words, i, every) {
				return true
			}
		}
		return false
	}
	var texts []string
	for _, m := range optOutMatchers {
		for _, p := range m.phrases {
			phrase := strings.Join(p, " ")
			texts = append(texts, phrase, "please "+phrase+" now", "I do not "+phrase, phrase+" nicht",
				strings.Join(append([]string{p[0] + "s"}, p[1:]...), " "), "hello "+strings.Join(p[:len(p)-1], " "))
		}
	}
	texts = append(texts, "", "stop", "stops texting me", "what are your prices", "don't stop texting me")
	hits := 0
	for _, text := range texts {
		words := foldedWords(text)
		for _, m := range optOutMatchers {
			want := scan(m, words)
			if got := m.matches(words); got != want {
				t.Fatalf("%s: matches(%q) = %v, the scan over every phrase says %v", m.lang, text, got, want)
			}
			if want {
				hits++
			}
		}
	}
	if hits < len(texts)/2 {
		t.Fatalf("only %d of %d texts opt out: the comparison checks too little", hits, len(texts))
	}
}
