package models

import (
	"strings"
	"testing"
)

func TestNormalizePhone(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"US number with spaces", "+1 415 555 0123", "+14155550123"},
		{"UK number with spaces", "+44 20 7946 0958", "+442079460958"},
		{"00 international prefix", "0044 20 7946 0958", "+442079460958"},
		{"brackets and dashes after the country code", "+1 (415) 555-0123", "+14155550123"},
		{"dots", "+1.415.555.0123", "+14155550123"},
		{"surrounding whitespace", " \t+14155550123\n", "+14155550123"},
		{"already E.164", "+14155550123", "+14155550123"},
		{"UK mobile", "+44 7911 123456", "+447911123456"},
		{"variable-length German number", "+49 30 901820", "+4930901820"},
		{"empty", "", ""},
		{"only whitespace", "   ", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NormalizePhone(tt.in)
			if err != nil {
				t.Fatalf("NormalizePhone(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("NormalizePhone(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestNormalizePhoneInvalid(t *testing.T) {
	tests := []struct {
		name string
		in   string
	}{
		{"no country code", "4155550123"},
		{"national format with trunk prefix", "020 7946 0958"},
		// The API: the number includes its country code, prefixed with +. A bracketed country code is
		// not a + prefix, so it is rejected rather than guessed at.
		{"bracketed country code", "(+1) 415-555-0123"},
		{"unknown country code", "+999 1234567"},
		{"country code zero", "+0 1234567"},
		{"too short for the country", "+1 23"},
		{"one digit short", "+1415555012"},
		{"too long for the country", "+14155550123456789"},
		{"letters only", "hello"},
		{"plus and letters", "+abc"},
		{"digits followed by a word", "+1 415 555 0123 abc"},
		{"vanity letters", "+1 800 FLOWERS"},
		{"extension", "+1 415 555 0123 ext 99"},
		{"plus alone", "+"},
		{"00 alone", "00"},
		{"overlong input", "+1 " + strings.Repeat("5", 70)},
		{"invalid UTF-8", "+1 415 555 0123\xff"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NormalizePhone(tt.in)
			if err == nil {
				t.Fatalf("NormalizePhone(%q) = %q, want INVALID_PHONE", tt.in, got)
			}
			if code := ErrorCode(err); code != CodeInvalidPhone {
				t.Errorf("NormalizePhone(%q): code %s (%v), want %s", tt.in, code, err, CodeInvalidPhone)
			}
			if got != "" {
				t.Errorf("NormalizePhone(%q) returned %q along with the error", tt.in, got)
			}
		})
	}

	t.Run("overlong input is truncated in the message", func(t *testing.T) {
		_, err := NormalizePhone("+1 " + strings.Repeat("5", 1000))
		if err == nil {
			t.Fatal("want an error")
		}
		if msg := ErrorMessage(err); len(msg) > 200 {
			t.Errorf("message is %d bytes long, want the input truncated: %q", len(msg), msg)
		}
	})
}

// A number without a country code is read in the region; one with a country code is read as it says.
func TestNormalizePhoneIn(t *testing.T) {
	tests := []struct {
		in, region, want string
		wantErr          string // a part of the INVALID_PHONE message; "" when the number is valid
	}{
		{"(415) 555-0105", "US", "+14155550105", ""},
		{"415.555.0105", "US", "+14155550105", ""},
		{"1 415 555 0105", "US", "+14155550105", ""},       // the country code without its +
		{"011 44 20 7946 0958", "US", "+442079460958", ""}, // the US international prefix
		{"07700 900123", "GB", "+447700900123", ""},
		{"020 7946 0958", "GB", "+442079460958", ""},
		{"+1 415 555 0105", "GB", "+14155550105", ""},
		{"0044 20 7946 0958", "US", "+442079460958", ""},
		{"", "US", "", ""},
		{"(415) 555-0105", "", "", `has no country code: write it in international form, such as +14155550123, or set the account's defaultCountry`},
		{"415 555 010", "US", "", "has the wrong number of digits for US"},
		{"011 999 1234567", "US", "", "is not a valid phone number in US"},
		{"(415) 555-CALL", "US", "", "may contain only digits"},
	}
	for _, tt := range tests {
		t.Run(tt.region+" "+tt.in, func(t *testing.T) {
			got, err := NormalizePhoneIn(tt.in, tt.region)
			if tt.wantErr == "" {
				if err != nil || got != tt.want {
					t.Fatalf("NormalizePhoneIn(%q, %q) = %q, %v; want %q", tt.in, tt.region, got, err, tt.want)
				}
				return
			}
			if ErrorCode(err) != CodeInvalidPhone || !strings.Contains(ErrorMessage(err), tt.wantErr) || got != "" {
				t.Fatalf("NormalizePhoneIn(%q, %q) = %q, %v; want INVALID_PHONE saying %q", tt.in, tt.region, got, err, tt.wantErr)
			}
		})
	}
	// NormalizePhone has no account to point to.
	if _, err := NormalizePhone("(415) 555-0105"); strings.Contains(ErrorMessage(err), "defaultCountry") {
		t.Errorf("NormalizePhone's message names the account's setting: %v", err)
	}
}

func TestNormalizeEmail(t *testing.T) {
	// A 254-byte address, the longest SMTP allows: 64-byte local part, "@", 189-byte domain.
	label := strings.Repeat("d", 60)
	longest := strings.Repeat("l", 64) + "@" + label + "." + label + "." + label + "." + strings.Repeat("d", 2) + ".com"
	if len(longest) != 254 {
		t.Fatalf("test address is %d bytes, want 254", len(longest))
	}

	valid := []struct {
		name string
		in   string
		want string
	}{
		{"trimmed and lower-cased", "  Alice.Smith@Example.COM \n", "alice.smith@example.com"},
		{"plus tag kept", "bob+leads@example.org", "bob+leads@example.org"},
		{"subdomain", "ops@mail.example.co.uk", "ops@mail.example.co.uk"},
		{"254 bytes", strings.ToUpper(longest), longest},
		{"empty", "", ""},
		{"only whitespace", " \t ", ""},
	}
	for _, tt := range valid {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NormalizeEmail(tt.in)
			if err != nil {
				t.Fatalf("NormalizeEmail(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("NormalizeEmail(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}

	invalid := []struct {
		name string
		in   string
	}{
		{"display-name form", "Alice <alice@example.com>"},
		{"angle brackets only", "<alice@example.com>"},
		{"trailing comment", "alice@example.com (Alice)"},
		{"two addresses", "a@example.com, b@example.com"},
		{"no at sign", "alice.example.com"},
		{"no domain", "alice@"},
		{"no local part", "@example.com"},
		{"space inside", "ali ce@example.com"},
		{"garbage", "not an email"},
		{"255 bytes", "l" + longest},
		{"invalid UTF-8", "alice\xff@example.com"},
	}
	for _, tt := range invalid {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NormalizeEmail(tt.in)
			if err == nil {
				t.Fatalf("NormalizeEmail(%q) = %q, want VALIDATION_ERROR", tt.in, got)
			}
			if code := ErrorCode(err); code != CodeValidation {
				t.Errorf("NormalizeEmail(%q): code %s (%v), want %s", tt.in, code, err, CodeValidation)
			}
		})
	}
}
