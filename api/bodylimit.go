package api

import (
	"bytes"
	"sync"
	"sync/atomic"

	"github.com/valyala/fasthttp"
)

// chunkedIncoming lets handleError answer in the incoming endpoint's string form when a chunked body
// sent there overflows MAX_BODY_BYTES. fasthttp refuses such a body while reading it, before any
// handler, and resets the request, path included, before the error handler runs: the path no longer
// says whose answer it is. (A declared Content-Length over the limit is refused before the reset, with
// the path intact.) So when the headers of a chunked request to the endpoint have been read, the
// request is marked, keyed by its header (the one value fasthttp's header callback and the error
// handler both reach); the mark is taken by handleError, or cleared before the handler when the body
// was read. Requests with a Content-Length, the incoming endpoint's usual ones, pay one comparison,
// and every request one atomic load.
type chunkedIncoming struct {
	mu     sync.Mutex
	marked map[*fasthttp.RequestHeader]struct{}
	n      atomic.Int64 // len(marked), read without the lock
}

// headerReceived is fasthttp's Server.HeaderReceived: it marks a chunked request to the incoming
// endpoint and leaves the request's limits and timeouts as configured (a zero RequestConfig).
func (m *chunkedIncoming) headerReceived(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
	if h.ContentLength() != -1 {
		return fasthttp.RequestConfig{}
	}
	if path, _, _ := bytes.Cut(h.RequestURI(), []byte("?")); string(path) == incomingPath {
		m.mu.Lock()
		if m.marked == nil {
			m.marked = map[*fasthttp.RequestHeader]struct{}{}
		}
		m.marked[h] = struct{}{}
		m.n.Store(int64(len(m.marked)))
		m.mu.Unlock()
	}
	return fasthttp.RequestConfig{}
}

// take reports whether the request with header h was marked, and forgets it.
func (m *chunkedIncoming) take(h *fasthttp.RequestHeader) bool {
	if m.n.Load() == 0 {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.marked[h]
	delete(m.marked, h)
	m.n.Store(int64(len(m.marked)))
	return ok
}

// clearing wraps the server's handler: a request that reaches it had its body read, so its mark is
// not needed (and the header is reused by the connection's next request).
func (m *chunkedIncoming) clearing(next fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		m.take(&ctx.Request.Header)
		next(ctx)
	}
}
