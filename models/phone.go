package models

import (
	"net/mail"
	"strings"
	"unicode/utf8"

	"github.com/nyaruka/phonenumbers"
)

// NormalizePhone returns phone in E.164 form (+14155550123). The number must carry its country code
// (a leading + or 00); otherwise, or when it cannot be a phone number of that country, the error is
// INVALID_PHONE. Spaces, dots, dashes and brackets are allowed, as people type them.
func NormalizePhone(phone string) (string, error) {
	p := strings.TrimSpace(phone)
	if p == "" {
		return "", nil
	}
	if len(p) > 64 || !utf8.ValidString(p) {
		return "", Errorf(CodeInvalidPhone, "phone %q is not a valid phone number", truncate(p, 64))
	}
	// Only the characters people type in a number: letters (vanity numbers, "ext 12") would be turned
	// into digits or dropped silently by the parser.
	if strings.IndexFunc(p, func(r rune) bool { return !strings.ContainsRune("+0123456789 -.()/", r) }) >= 0 {
		return "", Errorf(CodeInvalidPhone, "phone %q may contain only digits, a leading +, spaces, dashes, dots and brackets", p)
	}
	if strings.HasPrefix(p, "00") {
		p = "+" + p[2:]
	}
	if !strings.HasPrefix(p, "+") {
		return "", Errorf(CodeInvalidPhone, "phone %q has no country code: write it in international form, such as +14155550123", p)
	}
	num, err := phonenumbers.Parse(p, "")
	if err != nil {
		return "", Errorf(CodeInvalidPhone, "phone %q is not a valid phone number with a country code", p)
	}
	if phonenumbers.GetRegionCodeForCountryCode(int(num.GetCountryCode())) == "ZZ" {
		return "", Errorf(CodeInvalidPhone, "phone %q has an unknown country code", p)
	}
	// IsPossibleNumber checks the length for the country; full validity (IsValidNumber) would reject
	// test and newly allocated ranges that providers accept.
	if !phonenumbers.IsPossibleNumber(num) {
		return "", Errorf(CodeInvalidPhone, "phone %q has the wrong number of digits for its country", p)
	}
	e164 := phonenumbers.Format(num, phonenumbers.E164)
	// E.164 allows at most 15 digits; the parser accepts a few longer national numbers (found by
	// FuzzNormalizePhone), which providers could not dial.
	if len(e164) > 16 {
		return "", Errorf(CodeInvalidPhone, "phone %q has more digits than an international number can have", p)
	}
	// Some inputs (national prefixes after the country code, as in +20 0...) format to an E.164 form
	// that parses to yet another number; such a number could be stored but never found again by the
	// same phone, so it is refused (found by FuzzNormalizePhone).
	if again, err := phonenumbers.Parse(e164, ""); err != nil || phonenumbers.Format(again, phonenumbers.E164) != e164 {
		return "", Errorf(CodeInvalidPhone, "phone %q is not a valid phone number with a country code", p)
	}
	return e164, nil
}

// maxEmailLength is the longest address SMTP allows.
const maxEmailLength = 254

// NormalizeEmail trims and lower-cases email and checks that it is a plain address (no display name).
// An empty input returns "" and no error; the caller decides whether email is required.
func NormalizeEmail(email string) (string, error) {
	// Check UTF-8 before lower-casing: strings.ToLower turns invalid bytes into U+FFFD, which would
	// pass the check and be stored as part of the address.
	if !utf8.ValidString(email) {
		return "", Errorf(CodeValidation, "email is not a valid email address")
	}
	e := strings.ToLower(strings.TrimSpace(email))
	if e == "" {
		return "", nil
	}
	if len(e) > maxEmailLength {
		return "", Errorf(CodeValidation, "email is not a valid email address")
	}
	addr, err := mail.ParseAddress(e)
	if err != nil || addr.Address != e || addr.Name != "" {
		return "", Errorf(CodeValidation, "email %q is not a valid email address", e)
	}
	return e, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
