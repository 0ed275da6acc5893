package api_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// TestOpenAPINullableFieldsAdmitNull holds the document to OpenAPI 3.0.3's reading of nullable, which
// strict validators (Ajv, for one) follow: `nullable: true` adds null to the `type` beside it and to
// nothing else, so a nullable schema without a type is an error to them, and every other keyword keeps
// its veto (an `allOf` of a non-nullable object, an `enum` without null, a `oneOf` with no null branch
// refuse null). kin-openapi, which checkContract uses, lets null through any nullable schema before it
// looks at those keywords, so the responses alone cannot catch this: the document is checked here.
func TestOpenAPINullableFieldsAdmitNull(t *testing.T) {
	doc, err := loadOpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	nullable := 0
	walkSchemas(doc, func(where string, s *openapi3.Schema) {
		if !s.Nullable {
			return
		}
		nullable++
		if len(s.Type.Slice()) == 0 {
			t.Errorf("%s: nullable without a type", where)
		}
		if !admitsNull(s) {
			t.Errorf("%s: nullable, but its allOf, oneOf, anyOf, not or enum refuses null", where)
		}
	})
	// The walk must reach the document's nullable fields (the nextCursor of every page, among others).
	if nullable < 50 {
		t.Fatalf("only %d nullable schemas found", nullable)
	}
}

// admitsNull reports whether null passes s when every keyword keeps its veto and nullable only widens
// the type beside it (an untyped schema admits null, as in JSON Schema).
func admitsNull(s *openapi3.Schema) bool {
	admits := func(r *openapi3.SchemaRef) bool { return admitsNull(r.Value) }
	switch {
	case len(s.Type.Slice()) > 0 && !s.Nullable:
		return false
	case len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(v any) bool { return v == nil }):
		return false
	case s.Not != nil && admitsNull(s.Not.Value):
		return false
	case len(s.AnyOf) > 0 && !slices.ContainsFunc(s.AnyOf, admits):
		return false
	}
	for _, r := range s.AllOf {
		if !admits(r) {
			return false
		}
	}
	branches := 0
	for _, r := range s.OneOf {
		if admits(r) {
			branches++
		}
	}
	return len(s.OneOf) == 0 || branches == 1
}

// walkSchemas calls visit with every schema the document writes out: each component schema and every
// schema inside operations, parameters, headers and bodies, down through properties, items and
// composition. A reference to a component is not followed (the component is visited under its name).
func walkSchemas(doc *openapi3.T, visit func(where string, s *openapi3.Schema)) {
	var walk func(where string, r *openapi3.SchemaRef)
	walk = func(where string, r *openapi3.SchemaRef) {
		if r == nil || r.Ref != "" || r.Value == nil {
			return
		}
		s := r.Value
		visit(where, s)
		for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
			walk(where+"."+name, s.Properties[name])
		}
		walk(where+"[]", s.Items)
		walk(where+"{}", s.AdditionalProperties.Schema)
		walk(where+" not", s.Not)
		for kind, refs := range map[string]openapi3.SchemaRefs{"allOf": s.AllOf, "anyOf": s.AnyOf, "oneOf": s.OneOf} {
			for _, r := range refs {
				walk(where+" "+kind, r)
			}
		}
	}
	content := func(where string, c openapi3.Content) {
		for ct, mt := range c {
			walk(where+" "+ct, mt.Schema)
		}
	}
	response := func(where string, r *openapi3.ResponseRef) {
		if r == nil || r.Ref != "" || r.Value == nil {
			return
		}
		content(where, r.Value.Content)
		for name, h := range r.Value.Headers {
			if h.Ref == "" && h.Value != nil {
				walk(where+" header "+name, h.Value.Schema)
			}
		}
	}
	parameter := func(where string, p *openapi3.ParameterRef) {
		if p != nil && p.Ref == "" && p.Value != nil {
			walk(where+" parameter "+p.Value.Name, p.Value.Schema)
			content(where+" parameter "+p.Value.Name, p.Value.Content)
		}
	}

	c := doc.Components
	for _, name := range slices.Sorted(maps.Keys(c.Schemas)) {
		walk(name, c.Schemas[name])
	}
	for name, p := range c.Parameters {
		parameter("parameters/"+name, p)
	}
	for name, h := range c.Headers {
		if h.Value != nil {
			walk("headers/"+name, h.Value.Schema)
		}
	}
	for name, r := range c.Responses {
		response("responses/"+name, r)
	}
	for path, item := range doc.Paths.Map() {
		for _, p := range item.Parameters {
			parameter(path, p)
		}
		for method, op := range item.Operations() {
			call := method + " " + path
			for _, p := range op.Parameters {
				parameter(call, p)
			}
			if op.RequestBody != nil && op.RequestBody.Value != nil {
				content(call+" request", op.RequestBody.Value.Content)
			}
			for status, r := range op.Responses.Map() {
				response(call+" "+status, r)
			}
		}
	}
}
