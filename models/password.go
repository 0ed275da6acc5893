package models

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base32"
	"encoding/base64"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"
)

// Inbox passwords are stored as argon2id hashes in the PHC string form
// ($argon2id$v=19$m=...,t=...,p=...$salt$hash), so that the parameters can be raised later while old
// hashes still verify.
const (
	MinPasswordLength = 12
	maxPasswordLength = 256

	// OWASP's argon2id baseline: 19 MiB, two passes, one lane.
	argonMemoryKiB = 19 * 1024
	argonTime      = 2
	argonThreads   = 1
	argonKeyLen    = 32
	argonSaltLen   = 16
)

// hashSlots bounds the hashes computed at once: each takes argonMemoryKiB of memory, and a burst of
// sign-ins must not grow the api process past its memory budget.
var hashSlots = make(chan struct{}, 4)

// CheckPassword validates a new password's length (characters, not bytes).
func CheckPassword(pw string) error {
	n := utf8.RuneCountInString(pw)
	if !utf8.ValidString(pw) || n < MinPasswordLength {
		return Errorf(CodeValidation, "password must be at least %d characters", MinPasswordLength)
	}
	if len(pw) > maxPasswordLength {
		return Errorf(CodeValidation, "password must be at most %d bytes", maxPasswordLength)
	}
	return nil
}

// HashPassword returns the argon2id hash of pw in PHC form.
func HashPassword(pw string) (string, error) {
	salt := make([]byte, argonSaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("hash password: %w", err)
	}
	key := argonKey(pw, salt, argonTime, argonMemoryKiB, argonThreads, argonKeyLen)
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, argonMemoryKiB, argonTime, argonThreads, b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

// VerifyPassword reports whether pw matches the PHC-form hash. A malformed hash matches nothing.
func VerifyPassword(pw, hash string) bool {
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false
	}
	var version int
	var mem, iters uint32
	var threads uint8
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false
	}
	// Bounds on the parameters keep a corrupt hash from taking a gigabyte or a minute to check.
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &mem, &iters, &threads); err != nil || mem == 0 || iters == 0 || threads == 0 || mem > 1<<20 || iters > 16 || threads > 16 {
		return false
	}
	b64 := base64.RawStdEncoding
	salt, err := b64.DecodeString(parts[4])
	if err != nil {
		return false
	}
	want, err := b64.DecodeString(parts[5])
	if err != nil || len(want) == 0 {
		return false
	}
	got := argonKey(pw, salt, iters, mem, threads, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1
}

func argonKey(pw string, salt []byte, iters, mem uint32, threads uint8, keyLen uint32) []byte {
	hashSlots <- struct{}{}
	defer func() { <-hashSlots }()
	return argon2.IDKey([]byte(pw), salt, iters, mem, threads, keyLen)
}

// dummyHash is verified against when a sign-in names no known user, so that an unknown email takes as
// long to refuse as a wrong password and the timing does not tell which emails have users.
// It is computed on first use, not at start-up: the worker and the admin CLI never need it.
var dummyHash = sync.OnceValue(func() string {
	h, err := HashPassword("not a password of anyone's")
	if err != nil {
		panic(err)
	}
	return h
})

// GeneratePassword returns a random password for a new user (shown once): 20 characters of base32,
// about 100 bits.
func GeneratePassword() string {
	b := make([]byte, 13)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))[:20]
}
