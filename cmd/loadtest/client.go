package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
)

// requestTimeout bounds one API request.
const requestTimeout = 30 * time.Second

// client calls the deployment's API with one API key.
type client struct {
	base string // e.g. http://127.0.0.1:8080, without a trailing slash
	key  string
	http *fasthttp.Client
}

// newClient returns a client keeping up to conns connections to the api, so that a closed loop of
// conns workers reuses its connections instead of opening new ones. It is fasthttp's client rather
// than net/http's because the tool shares the machine with what it measures: per request it costs
// about half the CPU (docs/performance.md).
func newClient(baseURL, key string, conns int) *client {
	return &client{
		base: strings.TrimRight(baseURL, "/"),
		key:  key,
		http: &fasthttp.Client{
			MaxConnsPerHost:     conns,
			MaxIdleConnDuration: 90 * time.Second,
			ReadTimeout:         requestTimeout,
			WriteTimeout:        requestTimeout,
			// A request that finds every connection busy waits for one instead of failing.
			MaxConnWaitTimeout:            requestTimeout,
			MaxResponseBodySize:           1 << 20,
			NoDefaultUserAgentHeader:      true,
			DisableHeaderNamesNormalizing: true,
		},
	}
}

// apiError is a response with an unexpected status.
type apiError struct {
	Method, Path string
	Status       int
	Body         string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%s %s: HTTP %d: %s", e.Method, e.Path, e.Status, strings.TrimSpace(e.Body))
}

// send makes one request with body (nil: none; []byte: as is; else JSON-encoded) and returns the
// status and the response body. An error is a transport error: no response was read.
func (c *client) send(ctx context.Context, method, path string, body any) (int, []byte, error) {
	status, resp, _, err := c.exchange(ctx, method, path, body)
	return status, resp, err
}

// exchange is send that also returns the answer's Retry-After (0 when it has none or it is not a
// number of seconds).
func (c *client) exchange(ctx context.Context, method, path string, body any) (int, []byte, time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return 0, nil, 0, err
	}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.Header.SetMethod(method)
	req.SetRequestURI(c.base + path)
	req.Header.Set("x-api-key", c.key)
	switch b := body.(type) {
	case nil:
	case []byte:
		req.Header.SetContentType("application/json")
		req.SetBodyRaw(b)
	default:
		buf, err := json.Marshal(body)
		if err != nil {
			return 0, nil, 0, err
		}
		req.Header.SetContentType("application/json")
		req.SetBodyRaw(buf)
	}
	deadline := time.Now().Add(requestTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := c.http.DoDeadline(req, resp, deadline); err != nil {
		return 0, nil, 0, err
	}
	var retryAfter time.Duration
	if secs, err := strconv.Atoi(string(resp.Header.Peek("Retry-After"))); err == nil && secs > 0 {
		retryAfter = time.Duration(secs) * time.Second
	}
	return resp.StatusCode(), append([]byte(nil), resp.Body()...), retryAfter, nil
}

// answer is the outcome of sendPatiently.
type answer struct {
	Status int // 0: no answer (Err says why)
	Body   []byte
	// Latency is the last attempt's, from its start to the end of reading its answer: the waits for
	// Retry-After and the refused attempts before it are not in it.
	Latency time.Duration
	Err     error
}

// defaultRetryAfter is how long sendPatiently waits after a 429 or 503 without a Retry-After.
const defaultRetryAfter = time.Second

// sendPatiently makes the request until it is answered with something other than 429 (rate limited)
// or 503 (unavailable, retry: README, "Errors"), waiting each such answer's Retry-After
// (defaultRetryAfter without one) before the next attempt, and calling retried with its status. It
// gives up only when ctx ends. Both answers ask the client to retry (README, "Errors"): a 429 comes
// before the request is handled, and the incoming endpoint de-duplicates a retry of a message it
// stored before answering 503 by its messageSid. The outgoing send endpoint has no such key: a 503
// that came after its message was stored would make the retry a second message (the fill's counts
// would then show one more than it posted).
func (c *client) sendPatiently(ctx context.Context, method, path string, body any, retried func(status int)) answer {
	for {
		start := time.Now()
		status, resp, retryAfter, err := c.exchange(ctx, method, path, body)
		a := answer{Status: status, Body: resp, Latency: time.Since(start), Err: err}
		if err != nil || (status != http.StatusTooManyRequests && status != http.StatusServiceUnavailable) {
			return a
		}
		if retried != nil {
			retried(status)
		}
		if retryAfter <= 0 {
			retryAfter = defaultRetryAfter
		}
		select {
		case <-ctx.Done():
			return answer{Err: ctx.Err()}
		case <-time.After(retryAfter):
		}
	}
}

// call makes one request, requires one of the wanted statuses and decodes the JSON answer into out
// (when out is not nil). It returns the status.
func (c *client) call(ctx context.Context, method, path string, body, out any, wanted ...int) (int, error) {
	status, resp, err := c.send(ctx, method, path, body)
	return decodeAnswer(method, path, status, resp, err, out, wanted)
}

// callPatiently is call through sendPatiently: 429 and 503 answers are waited out and retried.
func (c *client) callPatiently(ctx context.Context, method, path string, body, out any, retried func(int), wanted ...int) (int, error) {
	a := c.sendPatiently(ctx, method, path, body, retried)
	return decodeAnswer(method, path, a.Status, a.Body, a.Err, out, wanted)
}

// decodeAnswer requires one of the wanted statuses and decodes resp into out (when out is not nil).
func decodeAnswer(method, path string, status int, resp []byte, err error, out any, wanted []int) (int, error) {
	if err != nil {
		return status, fmt.Errorf("%s %s: %w", method, path, err)
	}
	ok := false
	for _, w := range wanted {
		ok = ok || status == w
	}
	if !ok {
		return status, &apiError{Method: method, Path: path, Status: status, Body: string(resp)}
	}
	if out != nil {
		if err := json.Unmarshal(resp, out); err != nil {
			return status, fmt.Errorf("%s %s: decode answer: %w", method, path, err)
		}
	}
	return status, nil
}

// setWebhook registers url as the account's reply webhook and returns its signing secret.
func (c *client) setWebhook(ctx context.Context, url string) (string, error) {
	var out struct {
		SigningSecret string `json:"signingSecret"`
	}
	_, err := c.call(ctx, http.MethodPut, "/v1/settings/webhook", map[string]string{"url": url}, &out, http.StatusOK)
	var ae *apiError
	switch {
	case errors.As(err, &ae) && ae.Status == http.StatusBadRequest:
		return "", fmt.Errorf("%w\nthe api refused the sink's URL %s: a plain-http, loopback or private sink needs the "+
			"deployment to run with WEBHOOK_ALLOW_PRIVATE=true; else give --sink-url a public https URL that reaches --sink-addr", err, url)
	case errors.As(err, &ae) && ae.Status == http.StatusForbidden && strings.Contains(ae.Body, "HTTPS_REQUIRED"):
		return "", fmt.Errorf("%w\nthe api requires HTTPS: use an https --url, or run it with REQUIRE_HTTPS=false", err)
	case err != nil:
		return "", err
	case out.SigningSecret == "":
		return "", errors.New("PUT /v1/settings/webhook: the answer has no signingSecret")
	}
	return out.SigningSecret, nil
}

// waitHealthy polls GET /healthz until it answers 200 or ctx ends.
func waitHealthy(ctx context.Context, baseURL string) error {
	url := strings.TrimRight(baseURL, "/") + "/healthz"
	var last error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not become healthy: %v", url, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
