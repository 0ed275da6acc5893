package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/gofiber/fiber/v2"
)

// openAPIFile is the document the server embeds and serves at /v1/openapi.json.
const openAPIFile = "openapi.json"

// incomingEndpoint answers every error in the string form; everything else uses the object form.
const incomingEndpoint = "/v1/incoming_custom_channel_message"

// contract is the OpenAPI document with a router that finds the operation of a request. Every request
// do sends to the server, and its response, is checked against it (checkContract).
type contract struct {
	doc    *openapi3.T
	router routers.Router
}

var loadContract = sync.OnceValues(func() (*contract, error) {
	// kin-openapi decodes JSON, forms, multipart and text/plain bodies by default; Twilio's answer is XML.
	openapi3filter.RegisterBodyDecoder("text/xml", openapi3filter.PlainBodyDecoder)
	doc, err := loadOpenAPI()
	if err != nil {
		return nil, err
	}
	// The tests' servers listen on random loopback ports: match paths whatever the host.
	doc.Servers = nil
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("router: %w", err)
	}
	return &contract{doc: doc, router: router}, nil
})

func loadOpenAPI() (*openapi3.T, error) {
	doc, err := openapi3.NewLoader().LoadFromFile(openAPIFile)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", openAPIFile, err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("validate %s: %w", openAPIFile, err)
	}
	return doc, nil
}

var contractOptions = &openapi3filter.Options{
	// Authentication is the server's business; the document only declares the schemes.
	AuthenticationFunc: openapi3filter.NoopAuthenticationFunc,
	// A status the operation does not document is a mismatch, not a pass.
	IncludeResponseStatus: true,
	MultiError:            true,
	SkipSettingDefaults:   true,
}

// servedByAPI tells requests to the api server from requests to the tests' other servers (webhook and
// provider sinks): the server's paths are /v1/..., the probes and /monitoring/, and every response of
// the server carries X-Request-Id, also for paths it does not know.
func servedByAPI(path string, h http.Header) bool {
	switch {
	case path == "/v1", strings.HasPrefix(path, "/v1/"), strings.HasPrefix(path, "/monitoring"),
		path == "/healthz", path == "/readyz", path == "/metrics":
		return true
	}
	return h.Get("X-Request-Id") != ""
}

// checkContract fails the test when a request to the api server or its response does not match the
// OpenAPI document (checkExchange says which answers are checked, and how). The request is checked
// too, but when the server refused it with a 4xx a mismatch is expected (tests send malformed
// requests on purpose) and only logged; the server accepting a request the document calls invalid is
// a mismatch.
func checkContract(t testing.TB, req *http.Request, body []byte, r response) {
	t.Helper()
	checkExchange(t, req, body, true, r)
}

// checkResponse fails the test when the api server's answer to req does not match the OpenAPI
// document; the request itself is not checked: it is for requests that do not follow the document on
// purpose (fuzzed or endless bodies, raw bytes net/http would not send), whose answers still must.
func checkResponse(t testing.TB, req *http.Request, r response) {
	t.Helper()
	checkExchange(t, req, nil, false, r)
}

// wireRequest is the request a hand-written request line names (method, and target as sent), built
// field by field for checkResponse: net/http refuses what such lines carry on purpose (a method that
// is not a token, a NUL in the target).
func wireRequest(method, target string) *http.Request {
	if _, err := url.ParseRequestURI(target); err != nil {
		// Not a target any route matches (a NUL in it): kept whole as the path, which no operation has.
		return &http.Request{Method: method, URL: &url.URL{Path: target}, Header: http.Header{}}
	}
	path, query, _ := strings.Cut(target, "?")
	if unescaped, err := url.PathUnescape(path); err == nil {
		path = unescaped
	}
	return &http.Request{Method: method, URL: &url.URL{Path: path, RawQuery: query}, Header: http.Header{}}
}

// checkExchange is the one rule for which answers are checked against the document, and how:
//   - answers of the tests' other servers (webhook and provider sinks) are not the api's: skipped
//     (servedByAPI); so are HEAD answers, which are GET's without a body;
//   - an operation of the document (method and path, found by kin-openapi's router) is validated by
//     openapi3filter.ValidateResponse: status (an undocumented one fails), headers and body;
//   - a path or method no operation has must be an error in the document's object form (an unknown
//     path is 404 NOT_FOUND, an unknown method 405); a success there fails the test, since the
//     document must describe every endpoint that answers. So must a 431: the HTTP server could not
//     read the request line and headers, and answers before any route (the document's description
//     says so). asynqmon's own pages and API under /monitoring/ are its own and not in the document.
func checkExchange(t testing.TB, req *http.Request, body []byte, checkRequest bool, r response) {
	t.Helper()
	// HEAD is GET without a body (Fiber serves it for every GET); there is no body to check.
	if req.Method == http.MethodHead || !servedByAPI(req.URL.Path, r.Header) {
		return
	}
	c, err := loadContract()
	if err != nil {
		t.Fatalf("OpenAPI document: %v", err)
	}
	vreq := req.Clone(context.Background())
	vreq.Body = io.NopCloser(bytes.NewReader(body))
	vreq.ContentLength = int64(len(body))
	call := req.Method + " " + req.URL.Path
	if r.Status == http.StatusRequestHeaderFieldsTooLarge {
		c.checkUnrouted(t, req.URL.Path, call, r)
		return
	}

	route, params, err := c.router.FindRoute(vreq)
	switch {
	case errors.Is(err, routers.ErrPathNotFound):
		c.checkUnrouted(t, req.URL.Path, call, r)
		return
	case errors.Is(err, routers.ErrMethodNotAllowed):
		// A method the path does not have: the answer must be an error that some operation of the path
		// documents (405 on the incoming endpoint), or else an object-form error like any unknown route.
		if r.Status >= 400 {
			route, params = c.routeDocumenting(vreq, r.Status)
		}
		if route == nil {
			c.checkUnrouted(t, req.URL.Path, call, r)
			return
		}
	case err != nil:
		t.Errorf("contract: %s: finding the operation: %v", call, err)
		return
	}

	in := &openapi3filter.RequestValidationInput{Request: vreq, PathParams: params, Route: route, Options: contractOptions}
	if checkRequest && route.Method == req.Method {
		if err := openapi3filter.ValidateRequest(context.Background(), in); err != nil {
			if r.Status >= 400 && r.Status < 500 {
				t.Logf("contract: %s (%s): request does not match the document, refused with %d as it should be: %s",
					call, route.Operation.OperationID, r.Status, firstLine(err))
			} else {
				t.Errorf("contract: %s (%s): the server answered %d to a request the document calls invalid: %s\nrequest body: %s",
					call, route.Operation.OperationID, r.Status, excerpt([]byte(err.Error())), excerpt(body))
			}
		}
	}
	err = openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: r.Status, Header: r.Header,
		Body: io.NopCloser(bytes.NewReader(r.Body)), Options: contractOptions,
	})
	// ValidateResponse lets any body through where the document describes none (a 204).
	if documented := route.Operation.Responses.Status(r.Status); err == nil && documented != nil &&
		len(documented.Value.Content) == 0 && len(r.Body) > 0 {
		err = errors.New("a body where the document describes none")
	}
	if err != nil {
		t.Errorf("contract: %s: response %d does not match operation %s (%s %s) in api/%s: %s\nresponse body: %s",
			call, r.Status, route.Operation.OperationID, route.Method, route.Path, openAPIFile, excerpt([]byte(err.Error())), excerpt(r.Body))
	}
}

// routeDocumenting finds an operation of the request's path that documents status, for a request
// whose method the path does not have.
func (c *contract) routeDocumenting(req *http.Request, status int) (*routers.Route, map[string]string) {
	for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		probe := req.Clone(context.Background())
		probe.Method = method
		route, params, err := c.router.FindRoute(probe)
		if err == nil && route.Operation.Responses.Status(status) != nil {
			return route, params
		}
	}
	return nil, nil
}

// checkUnrouted checks the answer to a request no operation describes: it must be an error in the
// object form (404 NOT_FOUND for an unknown path, or an earlier refusal such as HTTPS_REQUIRED).
// asynqmon's own pages and API under /monitoring/ are not part of the document, its JSON errors
// excepted (they pass through the server's error renderer).
func (c *contract) checkUnrouted(t testing.TB, path, call string, r response) {
	t.Helper()
	if strings.HasPrefix(path, "/monitoring") && (r.Status < 400 || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json")) {
		return
	}
	if r.Status < 400 {
		t.Errorf("contract: %s: answered %d, but no operation in api/%s describes it\nresponse body: %s",
			call, r.Status, openAPIFile, excerpt(r.Body))
		return
	}
	var body any
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Errorf("contract: %s: error %d is not JSON (%v)\nresponse body: %s", call, r.Status, err, excerpt(r.Body))
		return
	}
	if err := c.doc.Components.Schemas["Error"].Value.VisitJSON(body); err != nil {
		t.Errorf("contract: %s: error %d is not the object-form error of the document: %v\nresponse body: %s",
			call, r.Status, err, excerpt(r.Body))
	}
}

// firstLine is the gist of a kin-openapi error, without its schema and value dumps.
func firstLine(err error) string {
	msg, _, _ := strings.Cut(err.Error(), "\n")
	return msg
}

// excerpt keeps failure messages readable: a schema dump or a body can run to kilobytes.
func excerpt(b []byte) string {
	if len(b) > 2000 {
		return string(b[:2000]) + "..."
	}
	return string(b)
}

func TestOpenAPIDocumentIsValid(t *testing.T) {
	doc, err := loadOpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.0.3" {
		t.Fatalf("openapi %q, want 3.0.3", doc.OpenAPI)
	}
	ids := map[string]string{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			name := method + " " + path
			if op.OperationID == "" || op.Summary == "" {
				t.Errorf("%s: needs an operationId and a summary", name)
			}
			if other, ok := ids[op.OperationID]; ok {
				t.Errorf("%s: operationId %s is also %s", name, op.OperationID, other)
			}
			ids[op.OperationID] = name
			if !strings.HasPrefix(path, "/v1/") {
				continue
			}
			// The README's rules: the HTTPS rule covers /v1; keyed endpoints answer 401 and 429;
			// errors are object-form except on the incoming endpoint.
			security := doc.Security
			if op.Security != nil {
				security = *op.Security
			}
			want := []int{403, 500}
			if len(security) > 0 {
				want = append(want, 401, 429, 503)
			}
			for _, status := range want {
				if op.Responses.Status(status) == nil {
					t.Errorf("%s: does not document %d", name, status)
				}
			}
			for code, resp := range op.Responses.Map() {
				if code[0] != '4' && code[0] != '5' {
					continue
				}
				mt := resp.Value.Content.Get("application/json")
				if mt == nil || mt.Schema == nil {
					t.Errorf("%s: response %s has no JSON schema", name, code)
					continue
				}
				schema := mt.Schema
				ref := schema.Ref
				if ref == "" && len(schema.Value.AllOf) > 0 {
					ref = schema.Value.AllOf[0].Ref
				}
				wantRef := "#/components/schemas/Error"
				if path == incomingEndpoint {
					wantRef = "#/components/schemas/StringError"
				}
				if ref != wantRef {
					t.Errorf("%s: response %s is %q, want %s", name, code, ref, wantRef)
				}
			}
		}
	}
}

func TestOpenAPIDocumentIsServedWithoutKey(t *testing.T) {
	srv := startServer(t)
	r := do(t, "GET", srv.URL+"/v1/openapi.json", "", nil)
	expect(t, r, http.StatusOK, "")
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	file, err := os.ReadFile(openAPIFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(r.Body, file) {
		t.Fatalf("the served document differs from api/%s", openAPIFile)
	}
	doc, err := openapi3.NewLoader().LoadFromData(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatal(err)
	}

	t.Run("under the HTTPS rule of /v1", func(t *testing.T) {
		strict := startServer(t, "REQUIRE_HTTPS=true")
		expect(t, do(t, "GET", strict.URL+"/v1/openapi.json", "", nil), http.StatusForbidden, "HTTPS_REQUIRED")
	})
}

// fiberParam is a Fiber path parameter (":id"), written {id} in OpenAPI.
var fiberParam = regexp.MustCompile(`:([A-Za-z0-9_]+)`)

// onlyMethodNotAllowed reports whether the route is the incoming endpoint's 405 catch-all (for POST,
// Fiber merges the catch-all into the real route, which then has the endpoint's handler too).
func onlyMethodNotAllowed(route fiber.Route) bool {
	for _, h := range route.Handlers {
		if runtime.FuncForPC(reflect.ValueOf(h).Pointer()).Name() != "funnelchat/api.methodNotAllowed" {
			return false
		}
	}
	return len(route.Handlers) > 0
}

// mirrorsGet reports whether the HEAD route head has a GET route on the same path with the same
// handlers.
func mirrorsGet(head fiber.Route, routes []fiber.Route) bool {
	for _, route := range routes {
		if route.Method != fiber.MethodGet || route.Path != head.Path || len(route.Handlers) != len(head.Handlers) {
			continue
		}
		same := true
		for i, h := range route.Handlers {
			same = same && reflect.ValueOf(h).Pointer() == reflect.ValueOf(head.Handlers[i]).Pointer()
		}
		if same {
			return true
		}
	}
	return false
}

// TestOpenAPIDocumentsEveryRoute keeps the document and the router the same set of operations.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	srv := startServer(t, "ADMIN_USER=ops", "ADMIN_PASSWORD=s3cret")
	doc, err := loadOpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	registered := map[string]bool{}
	// true: without the Use middleware entries. /monitoring/ is asynqmon's, behind basic auth, and
	// /inbox/ is the team's web app (README, "The inbox"), whose JSON side is /v1; the 405
	// catch-all of the incoming endpoint answers every method. Every GET route answers HEAD with the
	// same handlers (api/server.go): OpenAPI leaves HEAD implicit, so such a HEAD route is skipped, but
	// a HEAD route that does not mirror a GET is an operation like any other.
	routes := srv.App().GetRoutes(true)
	for _, route := range routes {
		if strings.HasPrefix(route.Path, "/monitoring") || strings.HasPrefix(route.Path, "/inbox") || onlyMethodNotAllowed(route) ||
			route.Method == fiber.MethodHead && mirrorsGet(route, routes) {
			continue
		}
		registered[route.Method+" "+fiberParam.ReplaceAllString(route.Path, "{$1}")] = true
	}
	documented := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented[method+" "+path] = true
		}
	}
	if len(registered) < 40 {
		t.Fatalf("only %d routes found: %v", len(registered), registered)
	}
	var undocumented, unserved []string
	for op := range registered {
		if !documented[op] {
			undocumented = append(undocumented, op)
		}
	}
	for op := range documented {
		if !registered[op] {
			unserved = append(unserved, op)
		}
	}
	slices.Sort(undocumented)
	slices.Sort(unserved)
	if len(undocumented) > 0 {
		t.Errorf("routes without an operation in api/%s:\n  %s", openAPIFile, strings.Join(undocumented, "\n  "))
	}
	if len(unserved) > 0 {
		t.Errorf("operations in api/%s that the server does not register:\n  %s", openAPIFile, strings.Join(unserved, "\n  "))
	}
}

// recordingTB collects the failures checkContract reports instead of failing the test.
type recordingTB struct {
	testing.TB
	failures []string
}

func (r *recordingTB) Helper()             {}
func (r *recordingTB) Logf(string, ...any) {}
func (r *recordingTB) Errorf(format string, a ...any) {
	r.failures = append(r.failures, fmt.Sprintf(format, a...))
}

// TestContractCheckCatchesMismatches proves that checkContract fails what it should: a check that can
// only pass would let the document drift.
func TestContractCheckCatchesMismatches(t *testing.T) {
	id := http.Header{"X-Request-Id": {"req-1"}, "Content-Type": {"application/json"}}
	jsonBody := http.Header{"Content-Type": {"application/json"}}
	xml := http.Header{"X-Request-Id": {"req-1"}, "Content-Type": {"text/xml"}}
	list := `{"id":"lst_1","name":"Leads","createdAt":"2026-01-02T03:04:05Z"}`
	cases := []struct {
		name, method, path, reqBody string
		reqHeader                   http.Header
		status                      int
		header                      http.Header
		body                        string
		fails                       bool
	}{
		{"a matching response", "GET", "/v1/lists/lst_1", "", nil, 200, id, list, false},
		{"a matching error", "GET", "/v1/lists/lst_1", "", nil, 404, id, `{"error":{"code":"NOT_FOUND","message":"list not found"}}`, false},
		{"a field of the wrong type", "GET", "/v1/lists/lst_1", "", nil, 200, id, `{"id":1,"name":"Leads","createdAt":"2026-01-02T03:04:05Z"}`, true},
		{"a missing field", "GET", "/v1/lists/lst_1", "", nil, 200, id, `{"id":"lst_1","name":"Leads"}`, true},
		{"a field the document does not have", "GET", "/v1/lists/lst_1", "", nil, 200, id, `{"id":"lst_1","name":"Leads","createdAt":"2026-01-02T03:04:05Z","x":1}`, true},
		{"an undocumented status", "GET", "/v1/lists/lst_1", "", nil, 418, id, `{"error":{"code":"NOT_FOUND","message":"x"}}`, true},
		{"an error code the status does not have", "GET", "/v1/lists/lst_1", "", nil, 404, id, `{"error":{"code":"CONFLICT","message":"x"}}`, true},
		{"no X-Request-Id", "GET", "/v1/lists/lst_1", "", nil, 200, http.Header{"Content-Type": {"application/json"}}, list, true},
		{"the string form outside the incoming endpoint", "GET", "/v1/lists/lst_1", "", nil, 404, id, `{"error":"not found"}`, true},
		{"the object form on the incoming endpoint", "POST", incomingEndpoint, `{}`, nil, 400, id, `{"error":{"code":"VALIDATION_ERROR","message":"x"}}`, true},
		{"the string form on the incoming endpoint", "POST", incomingEndpoint, `{}`, nil, 400, id, `{"error":"customData is required"}`, false},
		{"405 on the incoming endpoint in the string form", "GET", incomingEndpoint, "", nil, 405,
			http.Header{"X-Request-Id": {"r"}, "Content-Type": {"application/json"}, "Allow": {"POST"}}, `{"error":"use POST"}`, false},
		{"an unknown path in the object form", "GET", "/v1/nope", "", nil, 404, id, `{"error":{"code":"NOT_FOUND","message":"no such endpoint"}}`, false},
		{"an unknown path in another form", "GET", "/v1/nope", "", nil, 404, id, `{"error":"no such endpoint"}`, true},
		{"an unknown path answered with success", "GET", "/v1/nope", "", nil, 200, id, `{}`, true},
		{"a method the path does not have answered with success", "DELETE", "/v1/lists", "", nil, 200, id, `{"data":[],"nextCursor":null}`, true},
		{"a method the path does not have refused", "DELETE", "/v1/lists", "", nil, 405, id, `{"error":{"code":"METHOD_NOT_ALLOWED","message":"x"}}`, false},
		{"an invalid request accepted", "POST", "/v1/lists", `{"name":7}`, http.Header{"Content-Type": {"application/json"}}, 201, id, list, true},
		{"an invalid request refused", "POST", "/v1/lists", `{"name":7}`, http.Header{"Content-Type": {"application/json"}}, 400, id, `{"error":{"code":"VALIDATION_ERROR","message":"name must be a string"}}`, false},
		{"plain text where XML is documented", "POST", "/v1/channels/sms/inbound", "AccountSid=AC1&To=%2B14155550100",
			http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, 200, http.Header{"X-Request-Id": {"r"}, "Content-Type": {"text/plain"}}, "<Response></Response>", true},
		{"TwiML", "POST", "/v1/channels/sms/inbound", "AccountSid=AC1&To=%2B14155550100",
			http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, 200, xml, "<Response></Response>", false},
		{"a sink is not checked", "POST", "/hook", "", nil, 500, http.Header{}, "nope", false},
		{"431 before routing, in the object form", "GET", "/v1/lists/lst_1", "", nil, 431, id, `{"error":{"code":"VALIDATION_ERROR","message":"Request Header Fields Too Large"}}`, false},
		{"431 in another form", "GET", "/v1/lists/lst_1", "", nil, 431, id, `{"error":"Request Header Fields Too Large"}`, true},
		// Nullable fields that refer to a schema: null, or that schema, and nothing else.
		{"an unassigned conversation", "PUT", "/v1/contacts/ctc_1/assignee", `{"userId":null}`, jsonBody, 200, id, `{"contactId":"ctc_1","assignee":null}`, false},
		{"an assignee", "PUT", "/v1/contacts/ctc_1/assignee", `{"userId":"usr_1"}`, jsonBody, 200, id, `{"contactId":"ctc_1","assignee":{"userId":"usr_1","email":"a@b.co"}}`, false},
		{"an assignee without its email", "PUT", "/v1/contacts/ctc_1/assignee", `{"userId":"usr_1"}`, jsonBody, 200, id, `{"contactId":"ctc_1","assignee":{"userId":"usr_1"}}`, true},
		{"an assignee that is a string", "PUT", "/v1/contacts/ctc_1/assignee", `{"userId":"usr_1"}`, jsonBody, 200, id, `{"contactId":"ctc_1","assignee":"usr_1"}`, true},
		{"a body where the document describes none", "POST", "/v1/contacts/ctc_1/read", "", nil, 204, id, `{}`, true},
		{"no body where the document describes none", "POST", "/v1/contacts/ctc_1/read", "", nil, 204, id, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, "http://127.0.0.1:1"+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.reqHeader != nil {
				req.Header = tc.reqHeader
			}
			rec := &recordingTB{TB: t}
			checkContract(rec, req, []byte(tc.reqBody), response{Status: tc.status, Header: tc.header, Body: []byte(tc.body)})
			if failed := len(rec.failures) > 0; failed != tc.fails {
				t.Fatalf("check failed: %v, want %v: %v", failed, tc.fails, rec.failures)
			}
		})
	}

	// checkResponse (postRaw's, raw connections') leaves the request alone, not the answer.
	for _, tc := range []struct {
		name, body string
		fails      bool
	}{
		{"response only: an invalid request accepted", list, false},
		{"response only: an invalid answer", `{"id":"lst_1","name":"Leads"}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest("POST", "http://127.0.0.1:1/v1/lists", strings.NewReader(`{"name":7}`))
			if err != nil {
				t.Fatal(err)
			}
			req.Header = jsonBody
			rec := &recordingTB{TB: t}
			checkResponse(rec, req, response{Status: 201, Header: id, Body: []byte(tc.body)})
			if failed := len(rec.failures) > 0; failed != tc.fails {
				t.Fatalf("check failed: %v, want %v: %v", failed, tc.fails, rec.failures)
			}
		})
	}
}

// The document's URL query form for keys must not be offered where the server refuses it.
func TestOpenAPICreditGrantTakesNoQueryKey(t *testing.T) {
	doc, err := loadOpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	op := doc.Paths.Find("/v1/subaccounts/credits").Post
	if op.Security == nil {
		t.Fatal("POST /v1/subaccounts/credits has no security of its own")
	}
	for _, req := range *op.Security {
		if _, ok := req["ApiKeyQuery"]; ok {
			t.Fatal("POST /v1/subaccounts/credits offers the apiKey query parameter, which the server refuses with 401")
		}
	}
}
