package models

import (
	"strings"
	"testing"
)

// TestQuietHoursErrorsAreValidation checks that the wrappers of the quiet-hours rules (package rules,
// where the rules themselves are tested) give their errors the code VALIDATION_ERROR and keep the
// rule's message, which the API shows.
func TestQuietHoursErrorsAreValidation(t *testing.T) {
	_, errClock := ParseClock("7:00")
	_, errParse := ParseQuietHours("21:00-21:00")
	for _, tt := range []struct {
		name    string
		err     error
		mention string
	}{
		{"ParseClock", errClock, `"7:00"`},
		{"ParseQuietHours", errParse, "same time"},
		{"validateQuietHours", validateQuietHours(QuietHours{Start: "21:00", End: "8:00"}), `"8:00"`},
		{"ValidTimeZone", ValidTimeZone("Local"), `"Local"`},
	} {
		if ErrorCode(tt.err) != CodeValidation || !strings.Contains(ErrorMessage(tt.err), tt.mention) {
			t.Errorf("%s: %v, want a %s naming %s", tt.name, tt.err, CodeValidation, tt.mention)
		}
	}
	if q, err := ParseQuietHours("off"); q != nil || err != nil {
		t.Errorf("ParseQuietHours(off) = %v, %v; want nil, nil", q, err)
	}
	if m, err := ParseClock("21:30"); m != 1290 || err != nil {
		t.Errorf("ParseClock(21:30) = %d, %v; want 1290, nil", m, err)
	}
	if err := ValidTimeZone("Europe/Paris"); err != nil {
		t.Errorf("ValidTimeZone(Europe/Paris): %v", err)
	}
}
