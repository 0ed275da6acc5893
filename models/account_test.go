package models

import (
	"math"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestCreditsToMilli(t *testing.T) {
	valid := []struct {
		name    string
		credits float64
		want    int64
	}{
		{"zero", 0, 0},
		{"one", 1, 1000},
		{"one and a half", 1.5, 1500},
		{"one thousandth", 0.001, 1},
		{"three decimals that are inexact in binary", 2.675, 2675},
		{"large amount with three decimals", 123456789.123, 123456789123},
		{"the maximum", 1e12, 1e15},
		{"one thousandth below the maximum", 999999999999.999, 999999999999999},
	}
	for _, tt := range valid {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CreditsToMilli(tt.credits)
			if err != nil {
				t.Fatalf("CreditsToMilli(%v): %v", tt.credits, err)
			}
			if got != tt.want {
				t.Errorf("CreditsToMilli(%v) = %d, want %d", tt.credits, got, tt.want)
			}
		})
	}

	invalid := []struct {
		name    string
		credits float64
	}{
		{"negative", -1},
		{"negative thousandth", -0.001},
		{"NaN", math.NaN()},
		{"positive infinity", math.Inf(1)},
		{"negative infinity", math.Inf(-1)},
		{"above the maximum", 1e13},
		{"one above the maximum", 1e12 + 1},
		{"finer than a thousandth", 0.0001},
		{"half a thousandth", 1.0005},
		{"finer than a thousandth on a large amount", 1000.0004},
		{"smallest float", math.SmallestNonzeroFloat64},
	}
	for _, tt := range invalid {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CreditsToMilli(tt.credits)
			if err == nil {
				t.Fatalf("CreditsToMilli(%v) = %d, want VALIDATION_ERROR", tt.credits, got)
			}
			if code := ErrorCode(err); code != CodeValidation {
				t.Errorf("CreditsToMilli(%v): code %s (%v), want %s", tt.credits, code, err, CodeValidation)
			}
		})
	}
}

func TestAccountCredits(t *testing.T) {
	for _, milli := range []int64{0, 1, 1500, 1e15} {
		a := &Account{CreditMilli: milli}
		back, err := CreditsToMilli(a.Credits())
		if err != nil || back != milli {
			t.Errorf("CreditsToMilli(Credits()) of %d thousandths = %d, %v; want the same amount back", milli, back, err)
		}
	}
	if got := (&Account{CreditMilli: 2500}).Credits(); got != 2.5 {
		t.Errorf("Credits() of 2500 thousandths = %v, want 2.5", got)
	}
}

var idSuffix = regexp.MustCompile(`^[0-9a-hjkmnp-tv-z]{26}$`) // lower-case Crockford base32 ULID

func TestNewID(t *testing.T) {
	for _, prefix := range []string{prefixAccount, prefixUser, prefixAPIKey, prefixContact, prefixList, prefixMember} {
		t.Run(prefix, func(t *testing.T) {
			id := newID(prefix)
			rest, ok := strings.CutPrefix(id, prefix)
			if !ok {
				t.Fatalf("newID(%q) = %q, want the prefix", prefix, id)
			}
			if !idSuffix.MatchString(rest) {
				t.Errorf("newID(%q) = %q, want the prefix and a lower-case ULID", prefix, id)
			}
			if len(id) > maxIDLength {
				t.Errorf("newID(%q) is %d bytes, longer than maxIDLength %d", prefix, len(id), maxIDLength)
			}
		})
	}

	t.Run("ids made in sequence sort in creation order", func(t *testing.T) {
		ids := make([]string, 5)
		for i := range ids {
			if i > 0 {
				time.Sleep(2 * time.Millisecond) // ULIDs order by millisecond; within one they are random
			}
			ids[i] = newID(prefixContact)
		}
		for i := 1; i < len(ids); i++ {
			if ids[i-1] >= ids[i] {
				t.Errorf("id %d %q does not sort before id %d %q", i-1, ids[i-1], i, ids[i])
			}
		}
	})

	t.Run("ids are unique", func(t *testing.T) {
		seen := make(map[string]bool)
		for range 10000 {
			id := newID(prefixContact)
			if seen[id] {
				t.Fatalf("duplicate id %q", id)
			}
			seen[id] = true
		}
	})
}

func TestNewAPIKey(t *testing.T) {
	raw, key := newAPIKey("acc_1")
	if !strings.HasPrefix(raw, "sk_") || len(raw) != len("sk_")+43 {
		t.Errorf("raw key %q: want sk_ and 43 base64url characters (256 bits)", raw)
	}
	if key.AccountID != "acc_1" || !strings.HasPrefix(key.ID, prefixAPIKey) || key.RevokedAt != nil {
		t.Errorf("key row %+v: want account acc_1, a key_ id, not revoked", key)
	}
	if key.KeyHash != hashKey(raw) || strings.Contains(key.KeyHash, raw) || len(key.KeyHash) != 64 {
		t.Errorf("key hash %q: want the hex SHA-256 of the raw key, not the key", key.KeyHash)
	}
	raw2, _ := newAPIKey("acc_1")
	if raw2 == raw {
		t.Error("two keys are equal")
	}
}
