package models

import (
	"encoding/base64"
	"strings"
	"testing"
	"unicode/utf8"
)

// Hostile-input fuzz targets for the validators every request passes through. Each must answer any
// input with a value or a client error (a domain error with a 4xx code), never a panic or an internal
// error. `go test` runs the seeds; `go test -fuzz FuzzX ./models` searches further.

// isClientError reports whether err is a domain error a client is told about (never INTERNAL).
func isClientError(err error) bool {
	switch ErrorCode(err) {
	case CodeValidation, CodeInvalidPhone, CodeTooLarge:
		return true
	}
	return false
}

func FuzzNormalizePhone(f *testing.F) {
	for _, seed := range []string{"+14155550123", "+1 (415) 555-0123", "0044 7700 900123", "4155550123", "(415) 555-0105", "07700 900123", "011 44 20 7946 0958", "",
		"+", "++1", "+1\x00415", "+999999999999999999999", "+١٤١٥٥٥٥٠١٢٣", "tel:+14155550123", strings.Repeat("9", 500)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		// Without a region (NormalizePhone), and read in two countries as an account's default.
		for _, region := range []string{"", "US", "GB"} {
			out, err := NormalizePhoneIn(in, region)
			if err != nil {
				if !isClientError(err) {
					t.Fatalf("NormalizePhoneIn(%q, %q): %v is not a client error", in, region, err)
				}
				continue
			}
			if out == "" {
				continue // empty input, no phone
			}
			if out[0] != '+' || strings.Trim(out[1:], "0123456789") != "" || len(out) > 16 {
				t.Fatalf("NormalizePhoneIn(%q, %q) = %q, not E.164", in, region, out)
			}
			again, err := NormalizePhone(out)
			if err != nil || again != out {
				t.Fatalf("NormalizePhoneIn(%q, %q) = %q, but normalizing that gives %q, %v", in, region, out, again, err)
			}
		}
	})
}

func FuzzCheckMedia(f *testing.F) {
	png := "data:image/png;base64," + base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"))
	for _, seed := range [][2]string{
		{png, "image/png"}, {png, "image/jpeg"}, {"https://example.com/a.jpg", "image/jpeg"},
		{"data:image/png;base64,!!!!", "image/png"}, {"data:;base64,", "image/png"}, {"data:image/png,raw", "image/png"},
		{"javascript:alert(1)", "text/html"}, {"", "image/png"}, {"https://example.com/a.jpg", ""},
		{"DATA:IMAGE/PNG;BASE64,AAAA", "image/png; charset=x"}, {"http://[::1", "a/b"}, {"data:image/png;base64," + strings.Repeat("A", 4000), "image/png"},
	} {
		f.Add(seed[0], seed[1])
	}
	const maxBytes = 1024
	f.Fuzz(func(t *testing.T, rawURL, contentType string) {
		u, typ, err := checkMedia(rawURL, contentType, maxBytes)
		if err != nil {
			if !isClientError(err) {
				t.Fatalf("checkMedia(%q, %q): %v is not a client error", rawURL, contentType, err)
			}
			return
		}
		if u == "" {
			if typ != "" {
				t.Fatalf("no media but type %q", typ)
			}
			return
		}
		if typ == "" || !utf8.ValidString(u) {
			t.Fatalf("accepted %q with type %q", u, typ)
		}
		if lower := strings.ToLower(u); !strings.HasPrefix(lower, "data:") && !strings.HasPrefix(lower, "http://") && !strings.HasPrefix(lower, "https://") {
			t.Fatalf("accepted a media URL that is neither a link nor a data URI: %q", u)
		}
	})
}
