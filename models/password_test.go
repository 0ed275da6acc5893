package models_test

import (
	"encoding/base64"
	"regexp"
	"strings"
	"testing"
	"time"

	"funnelchat/models"
)

func TestHashPasswordRoundTrip(t *testing.T) {
	const pw = "correct horse battery staple"
	hash, err := models.HashPassword(pw)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(hash, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Errorf("hash %q: want the PHC form of argon2id with m=19456,t=2,p=1", hash)
	}
	if strings.Contains(hash, pw) {
		t.Errorf("hash %q contains the password", hash)
	}
	if !models.VerifyPassword(pw, hash) {
		t.Error("VerifyPassword of the hashed password = false, want true")
	}
	for _, wrong := range []string{"", "correct horse battery stapl", "correct horse battery staple ", "Correct horse battery staple"} {
		if models.VerifyPassword(wrong, hash) {
			t.Errorf("VerifyPassword(%q) = true for the hash of %q", wrong, pw)
		}
	}

	again, err := models.HashPassword(pw)
	if err != nil {
		t.Fatal(err)
	}
	if again == hash {
		t.Error("two hashes of one password are equal: want a fresh salt each time")
	}
	if !models.VerifyPassword(pw, again) {
		t.Error("the second hash does not verify")
	}
	if salt := func(h string) string { return strings.Split(h, "$")[4] }; salt(hash) == salt(again) {
		t.Errorf("two hashes share the salt %q", salt(hash))
	}
}

func TestVerifyPasswordMalformedHashes(t *testing.T) {
	const pw = "correct horse battery staple"
	good, err := models.HashPassword(pw)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(good, "$") // "", argon2id, v=19, m=...,t=...,p=..., salt, key
	with := func(i int, v string) string {
		p := append([]string(nil), parts...)
		p[i] = v
		return strings.Join(p, "$")
	}
	// A key that differs in one byte. (Changing the last base64 character would not do: its low bits are
	// padding, which the decoder ignores.)
	key := parts[5]
	raw, err := base64.RawStdEncoding.DecodeString(key)
	if err != nil {
		t.Fatal(err)
	}
	raw[0] ^= 1
	otherKey := base64.RawStdEncoding.EncodeToString(raw)
	malformed := []struct{ name, hash string }{
		{"empty", ""},
		{"not PHC", "plain text"},
		{"only dollars", "$$$$$"},
		{"wrong algorithm", with(1, "argon2i")},
		{"bcrypt prefix", "$2a$10$" + parts[4] + parts[5]},
		{"no leading dollar", strings.TrimPrefix(good, "$")},
		{"too few parts", strings.Join(parts[:5], "$")},
		{"too many parts", good + "$extra"},
		{"other version", with(2, "v=16")},
		{"garbled version", with(2, "version")},
		{"garbled parameters", with(3, "m=lots")},
		{"zero memory", with(3, "m=0,t=2,p=1")},
		{"zero passes", with(3, "m=19456,t=0,p=1")},
		{"zero lanes", with(3, "m=19456,t=2,p=0")},
		{"absurd memory", with(3, "m=4294967295,t=2,p=1")},
		{"memory just above the bound", with(3, "m=1048577,t=2,p=1")},
		{"memory beyond uint32", with(3, "m=99999999999,t=2,p=1")},
		{"negative memory", with(3, "m=-1,t=2,p=1")},
		{"salt not base64", with(4, "!!!not base64!!!")},
		{"key not base64", with(5, "*** nope ***")},
		{"padded base64 key", with(5, parts[5]+"=")},
		{"empty key", with(5, "")},
		{"other key", with(5, otherKey)},
		{"shorter key", with(5, key[:len(key)-4])},
	}
	for _, tt := range malformed {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			if models.VerifyPassword(pw, tt.hash) {
				t.Errorf("VerifyPassword(%q) = true, want false", tt.hash)
			}
			// A hash that asks for gigabytes must be refused before any work, not computed.
			if d := time.Since(start); d > 30*time.Second {
				t.Errorf("VerifyPassword took %v", d)
			}
		})
	}
}

func TestCheckPassword(t *testing.T) {
	ok := []struct{ name, pw string }{
		{"12 characters", "abcdefghijkl"},
		{"12 two-byte characters", strings.Repeat("é", 12)},
		{"12 three-byte characters", strings.Repeat("密", 12)},
		{"12 four-byte characters", strings.Repeat("🔑", 12)},
		{"256 bytes", strings.Repeat("a", 256)},
		{"spaces count", "a b c d e f "},
	}
	for _, tt := range ok {
		t.Run(tt.name, func(t *testing.T) {
			if err := models.CheckPassword(tt.pw); err != nil {
				t.Errorf("CheckPassword(%q): %v, want accepted", tt.pw, err)
			}
		})
	}
	refused := []struct{ name, pw string }{
		{"empty", ""},
		{"11 characters", "abcdefghijk"},
		{"11 three-byte characters (33 bytes)", strings.Repeat("密", 11)},
		{"11 four-byte characters (44 bytes)", strings.Repeat("🔑", 11)},
		{"257 bytes", strings.Repeat("a", 257)},
		{"100 three-byte characters (300 bytes)", strings.Repeat("密", 100)},
		{"invalid UTF-8", strings.Repeat("\xff", 20)},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			err := models.CheckPassword(tt.pw)
			if code := models.ErrorCode(err); code != models.CodeValidation {
				t.Errorf("CheckPassword(%d bytes): %v (code %s), want %s", len(tt.pw), err, code, models.CodeValidation)
			}
		})
	}
	if models.MinPasswordLength != 12 {
		t.Errorf("MinPasswordLength = %d, want 12", models.MinPasswordLength)
	}
}

var generatedPassword = regexp.MustCompile(`^[a-z2-7]{20}$`)

func TestGeneratePassword(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		pw := models.GeneratePassword()
		if !generatedPassword.MatchString(pw) {
			t.Fatalf("GeneratePassword() = %q, want 20 lower-case base32 characters", pw)
		}
		if err := models.CheckPassword(pw); err != nil {
			t.Fatalf("CheckPassword(GeneratePassword() = %q): %v", pw, err)
		}
		if seen[pw] {
			t.Fatalf("GeneratePassword() repeated %q", pw)
		}
		seen[pw] = true
	}
}
