package api_test

import (
	"fmt"
	"net"
	"testing"

	"github.com/valyala/fasthttp"
)

// BenchmarkIncomingHandler measures the server's side of POST /v1/incoming_custom_channel_message
// (middleware, key and rate-limit check, decoding, validation, the store, the enqueue and the answer)
// through the app's fasthttp handler, without a client or a socket; run with -benchmem for the
// allocations per request. Each iteration posts a new message (new messageSid and sender).
//
//	go test -run XXX -bench IncomingHandler -benchmem ./api
func BenchmarkIncomingHandler(b *testing.B) {
	srv := startServer(b, "RATE_LIMIT_PER_MINUTE=1000000")
	_, key := newAccount(b)
	handler := srv.App().Handler()
	remote := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
	post := func(i int) *fasthttp.RequestCtx {
		var ctx fasthttp.RequestCtx
		ctx.Init(&fasthttp.Request{}, remote, nil)
		ctx.Request.Header.SetMethod("POST")
		ctx.Request.SetRequestURI(incomingEndpoint)
		ctx.Request.Header.SetContentType("application/json")
		ctx.Request.Header.Set("x-api-key", key)
		ctx.Request.SetBodyString(fmt.Sprintf(`{"customData":{"messageSid":"bench-%d","fromId":"bench-visitor-%d","toId":"biz","body":"What does the premium plan cost?","channel":"live-chat"}}`, i, i))
		return &ctx
	}
	handler(post(-1)) // warm: fills the key cache and prepares connections
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		ctx := post(i)
		b.StartTimer()
		handler(ctx)
		if ctx.Response.StatusCode() != 200 {
			b.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
		}
	}
}
