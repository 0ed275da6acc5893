package models

import "funnelchat/models/rules"

// Quiet hours hold back business-initiated messages (campaign openings and follow-ups) while the
// contact is likely asleep; the arithmetic (windows, the Florida and Oklahoma rule, the zones of a
// phone number, NextAllowed) is in package rules. What is here gives its errors their code.

// QuietHours is a daily quiet window in local time (see rules.QuietHours). Its Validate returns a
// plain error; validateQuietHours gives it its code.
type QuietHours = rules.QuietHours

// ParseQuietHours reads quiet hours as written in configuration (DEFAULT_QUIET_HOURS): "21:00-08:00",
// or "off" (any case) for none, which returns nil and no error (rules.ParseQuietHours). Errors:
// VALIDATION_ERROR naming the problem.
func ParseQuietHours(s string) (*QuietHours, error) {
	q, err := rules.ParseQuietHours(s)
	if err != nil {
		return nil, validation(err)
	}
	return q, nil
}

// ParseClock reads a time of day written "HH:MM" and returns the minutes since midnight
// (rules.ParseClock). Errors: VALIDATION_ERROR.
func ParseClock(s string) (int, error) {
	m, err := rules.ParseClock(s)
	if err != nil {
		return 0, validation(err)
	}
	return m, nil
}

// validateQuietHours is q.Validate with its error as VALIDATION_ERROR.
func validateQuietHours(q QuietHours) error {
	if err := q.Validate(); err != nil {
		return validation(err)
	}
	return nil
}

// ValidTimeZone checks that name is an IANA time zone name, such as America/New_York or UTC; "" and
// "Local" are refused (rules.ValidTimeZone). Errors: VALIDATION_ERROR.
func ValidTimeZone(name string) error {
	if err := rules.ValidTimeZone(name); err != nil {
		return validation(err)
	}
	return nil
}

// validation gives a rule's plain error the code VALIDATION_ERROR, keeping its message.
func validation(err error) error {
	return Errorf(CodeValidation, "%s", err.Error())
}
