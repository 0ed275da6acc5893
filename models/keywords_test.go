package models

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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

func TestValidKeyword(t *testing.T) {
	valid := []string{"basta", "arrêter", "arre\u0302ter", "Halt", "стоп", "停止", "रुको", "ＢＡＳＴＡ", "a", strings.Repeat("a", 20), strings.Repeat("é", 20)}
	for _, word := range valid {
		if err := ValidKeyword(word); err != nil {
			t.Errorf("ValidKeyword(%q) = %v, want nil", word, err)
		}
	}
	tests := []struct {
		word, msg string
	}{
		{"", `keyword "" must be 1-20 letters; it is empty`},
		{strings.Repeat("a", 21), `keyword "aaaaaaaaaaaaaaaaaaaaa" must be 1-20 letters; it has 21`},
		{"stop2", `keyword "stop2" must be 1-20 letters; '2' is not a letter`},
		{"st op", `keyword "st op" must be 1-20 letters; ' ' is not a letter`},
		{" stop", `keyword " stop" must be 1-20 letters; ' ' is not a letter`},
		{"opt-out", `keyword "opt-out" must be 1-20 letters; '-' is not a letter`},
		{"stop!", `keyword "stop!" must be 1-20 letters; '!' is not a letter`},
		{"stop🙏", `keyword "stop🙏" must be 1-20 letters; '🙏' is not a letter`},
		{"\u0302a", `keyword "̂a" must be 1-20 letters; '̂' is not a letter`},
		{"stop\xff", `keyword "stop\xff" must be 1-20 letters; it is not valid UTF-8`},
	}
	for _, tt := range tests {
		err := ValidKeyword(tt.word)
		if err == nil {
			t.Errorf("ValidKeyword(%q) = nil, want an error", tt.word)
			continue
		}
		if ErrorCode(err) != CodeValidation || ErrorMessage(err) != tt.msg {
			t.Errorf("ValidKeyword(%q) = %v, want %s: %s", tt.word, err, CodeValidation, tt.msg)
		}
	}
}

func TestNormalizeKeywordList(t *testing.T) {
	got, err := NormalizeKeywordList("optOutKeywords", []string{"Basta", "ARRÊTER", "basta", "halt", "ＢＡＳＴＡ", "arre\u0302ter"})
	if err != nil {
		t.Fatalf("NormalizeKeywordList: %v", err)
	}
	if diff := cmp.Diff([]string{"basta", "arrêter", "halt"}, got); diff != "" {
		t.Errorf("NormalizeKeywordList (-want +got):\n%s", diff)
	}
	// Stored words are already in the form they are compared in.
	for _, w := range got {
		if NormalizeKeyword(w) != w {
			t.Errorf("NormalizeKeyword(%q) = %q, want it unchanged", w, NormalizeKeyword(w))
		}
	}

	for _, words := range [][]string{nil, {}} {
		got, err := NormalizeKeywordList("optInKeywords", words)
		if err != nil || got == nil || len(got) != 0 {
			t.Errorf("NormalizeKeywordList(%#v) = %#v, %v; want an empty list", words, got, err)
		}
	}

	tests := []struct {
		words []string
		msg   string
	}{
		{[]string{"basta", "halt", "st op"}, `optOutKeywords[2] "st op" must be 1-20 letters; ' ' is not a letter`},
		{[]string{""}, `optOutKeywords[0] "" must be 1-20 letters; it is empty`},
		{[]string{"basta", "basta1", "2"}, `optOutKeywords[1] "basta1" must be 1-20 letters; '1' is not a letter`},
		{[]string{strings.Repeat("x", 21)}, `optOutKeywords[0] "xxxxxxxxxxxxxxxxxxxxx" must be 1-20 letters; it has 21`},
	}
	for _, tt := range tests {
		got, err := NormalizeKeywordList("optOutKeywords", tt.words)
		if err == nil {
			t.Errorf("NormalizeKeywordList(%q) = %q, want an error", tt.words, got)
			continue
		}
		if got != nil || ErrorCode(err) != CodeValidation || ErrorMessage(err) != tt.msg {
			t.Errorf("NormalizeKeywordList(%q) = %q, %v; want %s: %s", tt.words, got, err, CodeValidation, tt.msg)
		}
	}
}
