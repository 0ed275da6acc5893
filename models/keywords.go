package models

import (
	"slices"
	"strconv"

	"funnelchat/models/rules"
)

// Consent keywords: their shape, normalization and classification are rules (package rules); what
// is here gives a refused word its VALIDATION_ERROR and names the field it came from.

// KeywordKind is what an inbound message asks for when the whole message is a consent keyword.
type KeywordKind = rules.KeywordKind

// The kinds of keyword (rules.KeywordKind).
const (
	KeywordNone   = rules.KeywordNone   // not a keyword: an ordinary message
	KeywordOptOut = rules.KeywordOptOut // the contact revokes consent to messages
	KeywordOptIn  = rules.KeywordOptIn  // the contact gives consent again
	KeywordHelp   = rules.KeywordHelp   // the contact asks who is writing and how to opt out
)

// NormalizeKeyword is the form of a message body that keywords are compared in
// (rules.NormalizeKeyword).
func NormalizeKeyword(body string) string { return rules.NormalizeKeyword(body) }

// ClassifyKeyword reports which consent keyword body is, with the account's own words optOutExtra and
// optInExtra besides the built-in ones (rules.ClassifyKeyword).
func ClassifyKeyword(body string, optOutExtra, optInExtra []string) KeywordKind {
	return rules.ClassifyKeyword(body, optOutExtra, optInExtra)
}

// AsksToOptOut reports whether an incoming message asks, in plain words or as a keyword, to receive
// no more messages (rules.AsksToOptOut).
func AsksToOptOut(text string) bool { return rules.AsksToOptOut(text) }

// ValidKeyword checks an account's own keyword: 1-20 letters of any script, without digits, spaces
// or punctuation, so that it reads as one word and cannot swallow ordinary replies. A combining mark
// after a letter counts as part of it (Devanagari vowel signs, a decomposed "ê"), not as a letter of
// its own. The word is checked as NFKC-normalized, the form it is compared in. Errors:
// VALIDATION_ERROR, with a message that names the word and the problem.
func ValidKeyword(word string) error {
	return checkKeyword("keyword", word)
}

// checkKeyword is ValidKeyword with name, the field and index the word came from, opening the message.
func checkKeyword(name, word string) error {
	if problem := rules.KeywordProblem(word); problem != "" {
		return Errorf(CodeValidation, "%s %q must be 1-%d letters; %s", name, word, rules.MaxKeywordLetters, problem)
	}
	return nil
}

// NormalizeKeywordList validates an account's own keywords (ValidKeyword) and returns them in the
// form they are compared in (NFKC, lower case), without duplicates, in their first order. field names
// the list in errors, e.g. `optOutKeywords[2] "st op" must be 1-20 letters; ' ' is not a letter`. The
// result is never nil when the error is nil, so an empty list stays an empty list in JSON. Errors:
// VALIDATION_ERROR for the first invalid word.
func NormalizeKeywordList(field string, words []string) ([]string, error) {
	out := make([]string, 0, len(words))
	for i, w := range words {
		if err := checkKeyword(field+"["+strconv.Itoa(i)+"]", w); err != nil {
			return nil, err
		}
		if w = rules.KeywordForm(w); !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out, nil
}
