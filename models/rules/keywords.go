package rules

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// KeywordKind is what an inbound message asks for when the whole message is a consent keyword.
type KeywordKind int

const (
	KeywordNone   KeywordKind = iota // not a keyword: an ordinary message
	KeywordOptOut                    // the contact revokes consent to messages
	KeywordOptIn                     // the contact gives consent again
	KeywordHelp                      // the contact asks who is writing and how to opt out
)

func (k KeywordKind) String() string {
	switch k {
	case KeywordNone:
		return "none"
	case KeywordOptOut:
		return "opt-out"
	case KeywordOptIn:
		return "opt-in"
	case KeywordHelp:
		return "help"
	}
	return "KeywordKind(" + strconv.Itoa(int(k)) + ")"
}

// The built-in keywords, in the form NormalizeKeyword returns. The opt-out words are the CTIA ones
// plus every word the FCC lists as a reasonable way to revoke consent by text (47 CFR 64.1200:
// stop, quit, end, revoke, opt out, cancel, unsubscribe), so no account can turn them off.
var (
	builtinOptOutKeywords = []string{"stop", "stopall", "unsubscribe", "cancel", "end", "quit", "revoke", "optout", "opt out", "opt-out"}
	builtinOptInKeywords  = []string{"start", "unstop", "subscribe"}
	builtinHelpKeywords   = []string{"help", "info"}
)

// MaxKeywordLetters is the longest an account's own keyword may be, in letters.
const MaxKeywordLetters = 20

// NormalizeKeyword is the form of a message body that keywords are compared in: NFKC-normalized (so
// full-width "ＳＴＯＰ" is "stop"), lower case, without the whitespace, punctuation and symbols (emoji
// included) around it, without invisible format characters, with every dash as "-" and with every run
// of whitespace as one space. Punctuation inside is kept: "Opt-Out!" is "opt-out", " opt   out. " is
// "opt out" and "stop 🙏" is "stop".
func NormalizeKeyword(body string) string {
	// Greek's final sigma folds to σ, as Unicode case folding does: "ΤΕΛΟΣ" and "τελος" are one word.
	s := strings.ReplaceAll(strings.ToLower(norm.NFKC.String(body)), "ς", "σ")
	s = strings.Map(func(r rune) rune {
		switch {
		case unicode.Is(unicode.Cf, r):
			// Zero-width spaces and joiners, soft hyphens and direction marks are invisible, and
			// phones and copy-paste add them; dropping them keeps "stop\u200b" a keyword.
			return -1
		case unicode.Is(unicode.Pd, r):
			// Autocorrect turns "opt-out" into "opt‐out" (U+2010) or "opt–out" (U+2013).
			return '-'
		}
		return r
	}, s)
	s = strings.TrimFunc(s, isKeywordEdge)
	return strings.Join(strings.Fields(s), " ")
}

// isKeywordEdge reports whether r is trimmed from the ends of a keyword: whitespace, punctuation,
// symbols (emoji are symbols), control characters, and the marks that only decorate a symbol (the
// emoji variation selector U+FE0F and the enclosing keycap U+20E3). Other marks are kept: they can be
// part of the last letter of a word.
func isKeywordEdge(r rune) bool {
	return unicode.IsSpace(r) || unicode.IsPunct(r) || unicode.IsSymbol(r) || unicode.IsControl(r) ||
		unicode.Is(unicode.Variation_Selector, r) || unicode.Is(unicode.Me, r)
}

// ClassifyKeyword reports which consent keyword body is. The whole message must be the keyword once
// normalized (NormalizeKeyword): "STOP!" and "Opt Out" opt out, "please stop" and "stop it" are
// ordinary messages (the bot may still read them as a request: they are not keywords). optOutExtra
// and optInExtra are the account's own words, added to the built-in ones and compared in the same
// form.
//
// Opt-out is checked first, then opt-in, then help: a word an account lists as both opt-out and
// opt-in opts out, and so does an account's opt-in word that is a built-in opt-out word, because
// wrongly keeping a contact who asked to stop is the worse mistake. An account's opt-in word beats
// a built-in help word in the same way.
func ClassifyKeyword(body string, optOutExtra, optInExtra []string) KeywordKind {
	word := NormalizeKeyword(body)
	if word == "" {
		return KeywordNone
	}
	switch {
	case slices.Contains(builtinOptOutKeywords, word) || containsKeyword(optOutExtra, word):
		return KeywordOptOut
	case slices.Contains(builtinOptInKeywords, word) || containsKeyword(optInExtra, word):
		return KeywordOptIn
	case slices.Contains(builtinHelpKeywords, word):
		return KeywordHelp
	}
	return KeywordNone
}

// containsKeyword reports whether one of words is word once normalized. word is normalized and not
// empty, so an extra that normalizes to "" never matches.
func containsKeyword(words []string, word string) bool {
	for _, w := range words {
		if NormalizeKeyword(w) == word {
			return true
		}
	}
	return false
}

// KeywordProblem says why word is not what an account's own keyword may be, "" when it is: 1-20
// letters (MaxKeywordLetters) of any script, without digits, spaces or punctuation, so that it reads
// as one word and cannot swallow ordinary replies. A combining mark after a letter counts as part of
// it (Devanagari vowel signs, a decomposed "ê"), not as a letter of its own; a variation selector
// (U+FE0E, U+FE0F: text or emoji presentation) is no part of a word. The word is checked as
// NFKC-normalized, the form it is compared in. The problem completes "must be 1-20 letters; ...":
// "it is empty", "it has 21", "'2' is not a letter", "it is not valid UTF-8".
func KeywordProblem(word string) string {
	if !utf8.ValidString(word) {
		return "it is not valid UTF-8"
	}
	return keywordShape(norm.NFKC.String(word))
}

// KeywordForm is the form an account's own keyword is stored and compared in: NFKC, lower case. For
// a word KeywordProblem accepts it is what NormalizeKeyword makes of it.
func KeywordForm(word string) string {
	return strings.ToLower(norm.NFKC.String(word))
}

// KeywordCandidate reports whether an incoming body could be a keyword at all, before the account's
// settings are read: a built-in keyword, or, once normalized (NormalizeKeyword), a word of the shape
// an account's own keyword has (the same keywordShape as KeywordProblem), so that every word the
// settings accept is read in a message the same way. Ordinary messages, longer or with spaces or
// digits, read nothing.
func KeywordCandidate(body string) bool {
	n := NormalizeKeyword(body)
	if ClassifyKeyword(n, nil, nil) != KeywordNone {
		return true
	}
	return keywordShape(n) == ""
}

// keywordShape is the one test of a keyword's shape, for a word in NFKC: 1-MaxKeywordLetters letters,
// each optionally followed by combining marks (Mn, Mc) that are not variation selectors. It returns
// what is wrong, "" when nothing is.
func keywordShape(word string) string {
	letters := 0
	for _, r := range word {
		switch {
		case unicode.IsLetter(r):
			letters++
		case letters > 0 && unicode.In(r, unicode.Mn, unicode.Mc) && !unicode.Is(unicode.Variation_Selector, r):
			// A mark that belongs to the letter before it.
		default:
			return fmt.Sprintf("%q is not a letter", r)
		}
	}
	switch {
	case letters == 0:
		return "it is empty"
	case letters > MaxKeywordLetters:
		return fmt.Sprintf("it has %d", letters)
	}
	return ""
}
