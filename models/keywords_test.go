package models

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

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
