package models

import "errors"

// FieldErrors are the validation errors of several fields of one request, in the order of its fields,
// one per field. As an error it is its first (code and message): the API answers one error per
// request; a form that lists what to fix reads them all (AllErrors).
type FieldErrors []*Error

func (e FieldErrors) Error() string { return e[0].Error() }

// Unwrap is the first error, which ErrorCode and ErrorMessage report.
func (e FieldErrors) Unwrap() error { return e[0] }

// add keeps err, a domain error (any other is kept as a validation error with its text).
func (e *FieldErrors) add(err error) {
	var de *Error
	if !errors.As(err, &de) {
		de = Errorf(CodeValidation, "%s", err.Error())
	}
	*e = append(*e, de)
}

// orNil is e as an error, or nil when it holds none.
func (e FieldErrors) orNil() error {
	if len(e) == 0 {
		return nil
	}
	return e
}

// AllErrors are the messages of every error err holds: each of a FieldErrors, else err's own.
func AllErrors(err error) []string {
	var fe FieldErrors
	if errors.As(err, &fe) {
		out := make([]string, len(fe))
		for i, e := range fe {
			out[i] = e.Message
		}
		return out
	}
	return []string{ErrorMessage(err)}
}
