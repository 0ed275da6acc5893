package models

import (
	"database/sql"
	"errors"
	"fmt"
)

// Error codes that reach API clients. Everything that is not an *Error is internal.
const (
	CodeValidation   = "VALIDATION_ERROR"
	CodeInvalidJSON  = "INVALID_JSON"
	CodeInvalidPhone = "INVALID_PHONE"
	CodeUnauthorized = "UNAUTHORIZED"
	CodeForbidden    = "FORBIDDEN"
	CodeNotFound     = "NOT_FOUND"
	CodeConflict     = "CONFLICT"
	CodeTooLarge     = "PAYLOAD_TOO_LARGE"
	CodeUnavailable  = "UNAVAILABLE"
	CodeInternal     = "INTERNAL"
)

// Error is a domain error: a code from the list above and a message meant for the API client.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Errorf builds a domain error with a formatted client-facing message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the domain error in err's chain, or CodeInternal.
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// ErrorMessage returns the client-facing message of the domain error in err's chain, or a generic one
// that reveals nothing about the internal failure.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}

func notFound(what string) *Error {
	return Errorf(CodeNotFound, "%s not found", what)
}

func isNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }

// ErrorMessages returns the client-facing message of every domain error in err's tree (errors.Join's
// too), in order: a form lists them all. An error that holds none gives ErrorMessage's one message.
func ErrorMessages(err error) []string {
	var out []string
	var walk func(error)
	walk = func(e error) {
		if e == nil {
			return
		}
		if de, ok := e.(*Error); ok {
			out = append(out, de.Message)
			return
		}
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	walk(err)
	if len(out) == 0 {
		return []string{ErrorMessage(err)}
	}
	return out
}
