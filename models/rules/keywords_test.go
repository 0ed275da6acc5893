package rules

import (
	"strings"
	"testing"
)

func TestNormalizeKeyword(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"STOP", "stop"},
		{" stop. ", "stop"},
		{"\"Stop\"", "stop"},
		{"«Stop»", "stop"},
		{"stop 🙏", "stop"},
		{"🛑 STOP 🛑", "stop"},
		{"stop \u2764\ufe0f", "stop"},    // a heart with the emoji variation selector
		{"stop 1\ufe0f\u20e3", "stop 1"}, // the keycap goes, the digit is a word
		{"ＳＴＯＰ", "stop"},
		{"stop\u200b", "stop"},
		{"\u00a0stop\u00a0", "stop"},
		{"Opt-Out!", "opt-out"},
		{"opt\u2010out", "opt-out"},
		{"opt–out", "opt-out"},
		{"opt   out", "opt out"},
		{"opt\tout\n", "opt out"},
		{"please  stop!", "please stop"},
		{"Arrêter", "arrêter"},
		{"arre\u0302ter", "arrêter"}, // decomposed ê
		{"", ""},
		{" \t\n ", ""},
		{"!!!", ""},
		{"🙏", ""},
	}
	for _, tt := range tests {
		if got := NormalizeKeyword(tt.in); got != tt.want {
			t.Errorf("NormalizeKeyword(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// keywordForms are the ways people type a keyword: every one must classify as the keyword itself.
func keywordForms(word string) []string {
	return []string{
		word,
		strings.ToUpper(word),
		strings.ToUpper(word[:1]) + word[1:],
		word + "!",
		strings.ToUpper(word) + "!!",
		word + ".",
		" " + word + " ",
		"\"" + word + "\"",
		"  \"" + strings.ToUpper(word) + ".\"\n",
		"“" + word + "”",
		word + " 🙏",
	}
}

func TestClassifyKeywordBuiltins(t *testing.T) {
	for kind, words := range map[KeywordKind][]string{
		KeywordOptOut: builtinOptOutKeywords,
		KeywordOptIn:  builtinOptInKeywords,
		KeywordHelp:   builtinHelpKeywords,
	} {
		for _, word := range words {
			for _, body := range keywordForms(word) {
				if got := ClassifyKeyword(body, nil, nil); got != kind {
					t.Errorf("ClassifyKeyword(%q) = %v, want %v", body, got, kind)
				}
			}
		}
	}
	for body, want := range map[string]KeywordKind{
		"Opt-Out": KeywordOptOut, "OPT OUT": KeywordOptOut, "opt   out": KeywordOptOut, "Opt Out!": KeywordOptOut,
		"OPT-OUT.": KeywordOptOut, "OptOut": KeywordOptOut, "opt\u2011out": KeywordOptOut, "StopAll": KeywordOptOut,
		"UnStop": KeywordOptIn, "Subscribe!": KeywordOptIn, "INFO?": KeywordHelp, "Help?!": KeywordHelp,
	} {
		if got := ClassifyKeyword(body, nil, nil); got != want {
			t.Errorf("ClassifyKeyword(%q) = %v, want %v", body, got, want)
		}
	}
}

func TestClassifyKeywordNotKeywords(t *testing.T) {
	for _, body := range []string{
		"", " ", "\n\t", "!!!", "🙏",
		"please stop", "stop it", "Stop please", "STOP STOP", "I want to start", "can I start tomorrow?",
		"how do I unsubscribe", "help me", "I need help", "more info please", "the end", "don't cancel",
		"stop1", "s top", "stopp", "opt", "out", "opt out now", "optout please", "opt_out", "opt--out",
	} {
		if got := ClassifyKeyword(body, nil, nil); got != KeywordNone {
			t.Errorf("ClassifyKeyword(%q) = %v, want %v", body, got, KeywordNone)
		}
	}
}

func TestClassifyKeywordAccountExtras(t *testing.T) {
	optOut := []string{"basta", "arrêter", "Halt"}
	optIn := []string{"volver", "basta", "stop"} // "basta" in both lists and the built-in "stop": opt-out wins
	tests := []struct {
		body string
		want KeywordKind
	}{
		{"basta", KeywordOptOut},
		{"BASTA!", KeywordOptOut},
		{"Arrêter.", KeywordOptOut},
		{"ARRÊTER", KeywordOptOut},
		{"arre\u0302ter", KeywordOptOut},
		{"halt", KeywordOptOut},
		{"Volver", KeywordOptIn},
		{"stop", KeywordOptOut},
		{"start", KeywordOptIn},
		{"info", KeywordHelp},
		{"ya basta", KeywordNone},
		{"arreter", KeywordNone}, // accents are part of an account's word
		{"", KeywordNone},
	}
	for _, tt := range tests {
		if got := ClassifyKeyword(tt.body, optOut, optIn); got != tt.want {
			t.Errorf("ClassifyKeyword(%q) = %v, want %v", tt.body, got, tt.want)
		}
	}
	// An extra that normalizes to nothing (it should not pass NormalizeKeywordList) matches nothing.
	if got := ClassifyKeyword("!", []string{"", "!"}, nil); got != KeywordNone {
		t.Errorf("ClassifyKeyword with empty extras = %v, want %v", got, KeywordNone)
	}
	// An account's opt-in word beats a built-in help word.
	if got := ClassifyKeyword("info", nil, []string{"info"}); got != KeywordOptIn {
		t.Errorf("ClassifyKeyword(info) with opt-in extra info = %v, want %v", got, KeywordOptIn)
	}
}

func TestKeywordKindString(t *testing.T) {
	for k, want := range map[KeywordKind]string{
		KeywordNone: "none", KeywordOptOut: "opt-out", KeywordOptIn: "opt-in", KeywordHelp: "help", 7: "KeywordKind(7)",
	} {
		if got := k.String(); got != want {
			t.Errorf("KeywordKind(%d).String() = %q, want %q", int(k), got, want)
		}
	}
}

// TestKeywordShape checks the one shape test that both the settings (KeywordProblem) and incoming
// messages (KeywordCandidate) use: every word the settings accept is a candidate in a message and
// classifies as the account's word, and a variation selector or a mark with no letter before it is
// no part of a word on either path. A selector at an edge of a message is trimmed like an emoji.
func TestKeywordShape(t *testing.T) {
	tests := []struct {
		word      string
		accepted  bool // the settings accept it (KeywordProblem is "")
		candidate bool // a message of just this is read as a possible keyword
	}{
		{"basta", true, true},
		{"ARRÊTER", true, true},
		{"arre\u0302ter", true, true},
		{"रुको", true, true},
		{"ＢＡＳＴＡ", true, true},
		{strings.Repeat("a", 20), true, true},
		{strings.Repeat("a", 21), false, false},
		{"st\uFE0Fop", false, false},   // emoji selector inside a word
		{"ba\uFE0Esta", false, false},  // text selector inside a word
		{"a\U000E0100b", false, false}, // a supplementary variation selector
		{"\u0302a", false, false},      // a mark with no letter before it
		{"basta\uFE0F", false, true},   // a trailing selector is trimmed from a message...
		{"\uFE0Fbasta", false, true},   // ...and a leading one
		{"stop\uFE0F", false, true},    // a built-in keyword is always a candidate
		{"st op", false, false},
		{"stop2", false, false},
		{"", false, false},
	}
	for _, tt := range tests {
		problem := KeywordProblem(tt.word)
		if (problem == "") != tt.accepted {
			t.Errorf("KeywordProblem(%q) = %q, want accepted %v", tt.word, problem, tt.accepted)
		}
		if got := KeywordCandidate(tt.word); got != tt.candidate {
			t.Errorf("KeywordCandidate(%q) = %v, want %v", tt.word, got, tt.candidate)
		}
		if problem != "" {
			continue
		}
		form := KeywordForm(tt.word)
		if !KeywordCandidate(form) {
			t.Errorf("KeywordCandidate(%q), the stored form of accepted %q, = false", form, tt.word)
		}
		if got := ClassifyKeyword(tt.word, []string{form}, nil); got != KeywordOptOut {
			t.Errorf("ClassifyKeyword(%q) with the account's word %q = %v, want %v", tt.word, form, got, KeywordOptOut)
		}
	}
}
