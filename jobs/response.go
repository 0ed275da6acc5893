package jobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

// What an answer to one attempt means, for webhook deliveries (WebhookSender.Send) and provider sends
// (ProviderClient.post) alike, so that the rule lives once: a 2xx answer is a success; a redirect is a
// final failure, as it is never followed; any other status is a failure "HTTP <status>: <excerpt>" that
// may be retried for 408, 429 and 5xx; Retry-After is honoured; an attempt that got no answer may be
// retried unless the SSRF guard refused its destination. The senders differ only in how they read their
// receivers' bodies (responseReading).

const (
	// maxWebhookResponseBytes is how much of a response body classifyResponse reads (and the most
	// response header bytes either sender's transport accepts).
	maxWebhookResponseBytes = 64 << 10
	// maxWebhookExcerptBytes is how much of a failed response's body goes into DeliveryResult.Error.
	maxWebhookExcerptBytes = 512
	// maxRetryAfter caps a receiver's Retry-After.
	maxRetryAfter = time.Hour
)

// responseReading is how a sender reads its receiver's response bodies; what the status and headers
// mean is classifyResponse's. The zero value is the webhook sender's: no message id, and a failure's
// body as it came.
type responseReading struct {
	// messageID is the accepted message's id in a 2xx body; nil when the receiver gives none.
	messageID func(body []byte) string
	// failure reads the body of a failed answer (neither 2xx nor 3xx): the detail whose excerpt the
	// Error shows; whether the body says a later attempt may get past the failure (a provider's
	// throttling error: it makes a final status retryable, never a retryable one final); and whether the
	// detail stands alone in the Error, without "HTTP <status>: " before it (the attempt keeps the
	// status code). nil: the body is the detail.
	failure func(body []byte) (detail []byte, retryable, bare bool)
}

// classifyResponse reads at most maxWebhookResponseBytes of resp's body (it leaves closing it to the
// caller) and describes the answer:
//   - 2xx: OK, without Retry-After; ProviderID is the excerpt of reading.messageID's id;
//   - 3xx: the final failure "HTTP <status>: redirect not followed";
//   - any other status: the failure "HTTP <status>: <excerpt of the detail>" ("HTTP <status>" when the
//     excerpt is empty), retryable per retryableStatus.
//
// Every answer but a 2xx one keeps its Retry-After (parseRetryAfter), retryable or not. Duration is the
// caller's.
func classifyResponse(resp *http.Response, reading responseReading) DeliveryResult {
	// A read error after the status line changes nothing: the receiver has answered.
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxWebhookResponseBytes))

	res := DeliveryResult{
		StatusCode: resp.StatusCode,
		RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()),
	}
	switch code := resp.StatusCode; {
	case code >= 200 && code <= 299:
		res.RetryAfter = 0
		if reading.messageID != nil {
			res.ProviderID = responseExcerpt([]byte(reading.messageID(body)))
		}
	case code >= 300 && code <= 399:
		res.Error = fmt.Sprintf("HTTP %d: redirect not followed", code)
	default:
		res.Error = fmt.Sprintf("HTTP %d", code)
		res.Retryable = retryableStatus(code)
		detail := body
		if reading.failure != nil {
			var retryable, bare bool
			detail, retryable, bare = reading.failure(body)
			res.Retryable = res.Retryable || retryable
			if bare {
				res.Error = ""
			}
		}
		if excerpt := responseExcerpt(detail); excerpt != "" {
			res.Error = strings.TrimPrefix(res.Error+": "+excerpt, ": ")
		}
	}
	return res
}

// retryableStatus reports whether an answer with this non-2xx status may be retried: 408, 429 and 5xx.
func retryableStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || (code >= 500 && code <= 599)
}

// classifyTransportFailure describes an attempt that got no HTTP response within timeout, the bound of
// the attempt. Only a refused destination is final.
func classifyTransportFailure(ctx context.Context, err error, timeout time.Duration) DeliveryResult {
	res := DeliveryResult{Retryable: true}
	var netErr net.Error
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, errDestinationNotAllowed):
		res.Retryable = false
		res.Error = "destination not allowed: " + refusalReason(err)
	case errors.Is(ctx.Err(), context.DeadlineExceeded) ||
		errors.Is(err, context.DeadlineExceeded) ||
		(errors.As(err, &netErr) && netErr.Timeout()):
		res.Error = "timeout after " + timeout.String()
	case errors.Is(err, context.Canceled):
		res.Error = "request canceled"
	case errors.Is(err, syscall.ECONNREFUSED):
		res.Error = "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		res.Error = "connection reset"
	case errors.As(err, &dnsErr):
		res.Error = "dns lookup failed: " + dnsErr.Err + " (" + dnsErr.Name + ")"
	default:
		res.Error = "connection error: " + innermostMessage(err)
	}
	return res
}

// refusalReason is the guard's message without the wrapping of net and net/http.
func refusalReason(err error) string {
	var ge *guardError
	if errors.As(err, &ge) {
		return ge.reason
	}
	return innermostMessage(err)
}

// innermostMessage drops the "Post \"url\": " prefix that net/http puts on transport errors.
func innermostMessage(err error) string {
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		return urlErr.Err.Error()
	}
	return err.Error()
}

// responseExcerpt is the start of a response body as text that any database column accepts: at most
// 512 bytes of valid UTF-8, without NUL bytes, trimmed.
func responseExcerpt(body []byte) string {
	if len(body) > maxWebhookExcerptBytes {
		body = body[:maxWebhookExcerptBytes]
		// Drop a rune the cut split in two rather than turning it into a replacement character.
		for i := 0; i < utf8.UTFMax && len(body) > 0; i++ {
			if r, size := utf8.DecodeLastRune(body); r != utf8.RuneError || size != 1 {
				break
			}
			body = body[:len(body)-1]
		}
	}
	text := strings.ToValidUTF8(string(body), "\uFFFD")
	text = strings.ReplaceAll(text, "\x00", "")
	return strings.TrimSpace(text)
}

// parseRetryAfter reads a Retry-After header, delay-seconds or HTTP-date (RFC 9110 section 10.2.3), as a
// delay from now. It is 0 when the header is absent, invalid or in the past, and at most maxRetryAfter.
func parseRetryAfter(value string, now time.Time) time.Duration {
	value = strings.TrimSpace(value)
	if value == "" {
		return 0
	}
	var d time.Duration
	if strings.Trim(value, "0123456789") == "" {
		secs, err := strconv.ParseUint(value, 10, 64)
		if err != nil || secs > uint64(maxRetryAfter/time.Second) {
			return maxRetryAfter // only overflow makes a string of digits fail to parse
		}
		d = time.Duration(secs) * time.Second
	} else if at, err := http.ParseTime(value); err == nil {
		d = at.Sub(now)
	} else {
		return 0
	}
	return max(0, min(d, maxRetryAfter))
}
