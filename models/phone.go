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
	return normalizePhone(phone, "", "")
}

// NormalizePhoneIn is NormalizePhone reading a number written without a country code ("(415)
// 555-0105", "07700 900123") as a national number of region (ISO 3166 alpha-2, as rules.Country
// returns it); with region "" such a number is INVALID_PHONE. A number with a country code is read
// the same whatever region is. An account's region is Store.PhoneRegion's; the message for a number
// without a country code, when region is "", says where to set it.
func NormalizePhoneIn(phone, region string) (string, error) {
	return normalizePhone(phone, region, ", or set the account's defaultCountry")
}

// normalizePhone is NormalizePhoneIn; hint ends the message for a number without a country code when
// there is no region.
func normalizePhone(phone, region, hint string) (string, error) {
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
		if region == "" {
			return "", Errorf(CodeInvalidPhone, "phone %q has no country code: write it in international form, such as +14155550123%s", p, hint)
		}
		return nationalPhone(p, region)
	}
	num, err := phonenumbers.Parse(p, "")
	if err != nil {
		return "", Errorf(CodeInvalidPhone, "phone %q is not a valid phone number with a country code", p)
	}
	return checkedE164(p, num, "its country")
}

// nationalPhone reads p, a number without a country code, in region.
func nationalPhone(p, region string) (string, error) {
	num, err := phonenumbers.Parse(p, region)
	if err != nil {
		return "", Errorf(CodeInvalidPhone, "phone %q is not a valid phone number in %s", p, region)
	}
	// The parser also reads a number that starts with the region's international prefix (011 in the
	// US) or its country code (1 415 555 0105 in the US): the number then names its own country.
	return checkedE164(p, num, region)
}

// checkedE164 formats a parsed number in E.164 after checking that it can be one of country's (its
// country code's region, or the region it was read in, as the messages name it), refusing forms a
// provider could not dial or that would not be found again by the same phone.
func checkedE164(p string, num *phonenumbers.PhoneNumber, country string) (string, error) {
	if phonenumbers.GetRegionCodeForCountryCode(int(num.GetCountryCode())) == "ZZ" {
		return "", Errorf(CodeInvalidPhone, "phone %q has an unknown country code", p)
	}
	// IsPossibleNumber checks the length for the country; full validity (IsValidNumber) would reject
	// test and newly allocated ranges that providers accept.
	if !phonenumbers.IsPossibleNumber(num) {
		return "", Errorf(CodeInvalidPhone, "phone %q has the wrong number of digits for %s", p, country)
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
