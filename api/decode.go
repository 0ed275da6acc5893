package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/gofiber/fiber/v2"

	"funnelchat/api/web"
	"funnelchat/models"
)

// decodeJSON decodes the request body into v (a pointer to a struct). Unknown fields are ignored, so
// clients can send more than we read; a field of the wrong type is VALIDATION_ERROR naming the field;
// an empty body, a body that is not one JSON object, trailing data, invalid UTF-8 or a repeated member
// name is INVALID_JSON.
func decodeJSON(c *fiber.Ctx, v any) error {
	body := c.Body()
	if len(bytes.TrimSpace(body)) == 0 {
		return models.Errorf(models.CodeInvalidJSON, "request body is empty: send a JSON object")
	}
	if err := checkJSONText(body); err != nil {
		return err
	}
	if string(bytes.TrimSpace(body)) == "null" {
		return models.Errorf(models.CodeInvalidJSON, "request body must be a JSON object") // decoding null would set nothing
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			if typeErr.Field == "" {
				return models.Errorf(models.CodeInvalidJSON, "request body must be a JSON object")
			}
			return models.Errorf(models.CodeValidation, "%s must be %s", typeErr.Field, jsonTypeName(typeErr.Type))
		}
		return models.Errorf(models.CodeInvalidJSON, "request body is not valid JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return models.Errorf(models.CodeInvalidJSON, "request body must be exactly one JSON object")
	}
	return nil
}

// checkJSONText refuses what encoding/json would quietly repair: invalid UTF-8 (raw, or an escaped
// lone surrogate), which it stores as U+FFFD, and a repeated member name, whose last value it keeps
// while whoever checked the first saw another. jsontext reads the body as RFC 7493 (I-JSON) requires.
func checkJSONText(body []byte) error {
	_, err := jsontext.NewDecoder(bytes.NewReader(body)).ReadValue()
	var syntax *jsontext.SyntacticError
	if err == nil || !errors.As(err, &syntax) {
		return nil // well formed, or a fault the decoder below names in its own words
	}
	where := ""
	if p := string(syntax.JSONPointer); p != "" && len(p) <= 200 { // the client's own names, bounded
		where = " at " + p
	}
	switch {
	case errors.Is(err, jsontext.ErrDuplicateName):
		return models.Errorf(models.CodeInvalidJSON, "request body repeats the member%s: send each member once", where)
	case strings.Contains(syntax.Err.Error(), "UTF-8"), strings.Contains(syntax.Err.Error(), "surrogate"):
		return models.Errorf(models.CodeInvalidJSON, "request body has a string that is not valid UTF-8 (or has a lone surrogate)%s", where)
	}
	return nil
}

func jsonTypeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Float64, reflect.Float32:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array of " + strings.TrimPrefix(jsonTypeName(t.Elem()), "a ") + "s"
	case reflect.Pointer:
		return jsonTypeName(t.Elem())
	default:
		return "an object"
	}
}

// oneOf returns the value of a field that clients may send under two names (camelCase on the API page,
// snake_case on the funnel page). Sending both with different values is VALIDATION_ERROR.
func oneOf(camelName string, camel *string, snakeName string, snake *string) (string, error) {
	switch {
	case camel != nil && snake != nil && *camel != *snake:
		return "", models.Errorf(models.CodeValidation, "%s and %s are the same field and disagree: send one", camelName, snakeName)
	case camel != nil:
		return *camel, nil
	case snake != nil:
		return *snake, nil
	}
	return "", nil
}

// pageOf reads ?limit= (default 50, 1..200) and ?cursor= for a paged listing.
func pageOf(c *fiber.Ctx) (models.Page, error) {
	p := models.Page{Limit: models.DefaultPageLimit, Cursor: strings.Clone(c.Query("cursor"))}
	if raw := c.Query("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > models.MaxPageLimit {
			return p, models.Errorf(models.CodeValidation, "limit must be a whole number from 1 to %d", models.MaxPageLimit)
		}
		p.Limit = n
	}
	if len(p.Cursor) > 64 || (p.Cursor != "" && !web.PlainToken(p.Cursor, 64)) {
		return p, models.Errorf(models.CodeValidation, "cursor is not a cursor this API returned")
	}
	return p, nil
}

// pageBody is the shape of every paged listing: {"data":[...],"nextCursor":string|null}.
func pageBody[T any](items []T, next string) fiber.Map {
	if items == nil {
		items = []T{}
	}
	var cursor any
	if next != "" {
		cursor = next
	}
	return fiber.Map{"data": items, "nextCursor": cursor}
}

// boolQuery reads an optional true/false query parameter: nil when absent. Errors: VALIDATION_ERROR for
// any other value.
func boolQuery(c *fiber.Ctx, name string) (*bool, error) {
	switch c.Query(name) {
	case "":
		return nil, nil
	case "true":
		v := true
		return &v, nil
	case "false":
		v := false
		return &v, nil
	}
	return nil, models.Errorf(models.CodeValidation, "%s must be true or false", name)
}

// nullable is a JSON member whose null and absence mean different things (PUT /v1/settings/compliance's
// quietHours: null is "none", absent is "unchanged"): Set says that it was present, Value is nil for
// null.
type nullable[T any] struct {
	Set   bool
	Value *T
}

func (n *nullable[T]) UnmarshalJSON(b []byte) error {
	n.Set = true
	if string(bytes.TrimSpace(b)) == "null" {
		n.Value = nil
		return nil
	}
	v := new(T)
	if err := json.Unmarshal(b, v); err != nil {
		return err
	}
	n.Value = v
	return nil
}
