package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
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
	if err := ctx.Err(); err != nil {
		return 0, nil, err
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
			return 0, nil, err
		}
		req.Header.SetContentType("application/json")
		req.SetBodyRaw(buf)
	}
	deadline := time.Now().Add(requestTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := c.http.DoDeadline(req, resp, deadline); err != nil {
		return 0, nil, err
	}
	return resp.StatusCode(), append([]byte(nil), resp.Body()...), nil
}

// call makes one request, requires one of the wanted statuses and decodes the JSON answer into out
// (when out is not nil). It returns the status.
func (c *client) call(ctx context.Context, method, path string, body, out any, wanted ...int) (int, error) {
	status, resp, err := c.send(ctx, method, path, body)
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
