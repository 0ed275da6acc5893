package jobs

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestFetchWhatsAppMediaSendsTheTokenOnlyToTheGraphAPI: the media endpoint is asked at the client's
// WhatsApp base URL whatever host the stored link names, and a failure never shows the token.
func TestFetchWhatsAppMediaSendsTheTokenOnlyToTheGraphAPI(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	var graph *httptest.Server
	graph = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok-123" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/v21.0/4490709327384033":
			_, _ = w.Write([]byte(`{"url":"` + graph.URL + `/file?ext=1","mime_type":"image/png","id":"4490709327384033"}`))
		case "/file":
			_, _ = w.Write([]byte("0123456789"))
		default:
			http.NotFound(w, r)
		}
	}))
	defer graph.Close()
	client := NewProviderClient(ProviderEndpoints{WhatsApp: graph.URL}, 5*time.Second)

	data, problem := client.FetchWhatsAppMedia(context.Background(), "tok-123", WhatsAppMediaLink(other.URL, "4490709327384033"), 100)
	if problem != "" || string(data) != "0123456789" || elsewhere.Load() != 0 {
		t.Fatalf("data %q, problem %q, %d requests to the link's host", data, problem, elsewhere.Load())
	}
	if data, _ := client.FetchWhatsAppMedia(context.Background(), "tok-123", WhatsAppMediaLink("", "4490709327384033"), 4); len(data) != 5 {
		t.Fatalf("read %d bytes with a limit of 4, want 5 (enough to see the file is too large)", len(data))
	}
	_, problem = NewProviderClient(ProviderEndpoints{WhatsApp: closedAddress(t) + "/tok-123"}, 5*time.Second).
		FetchWhatsAppMedia(context.Background(), "tok-123", WhatsAppMediaLink("", "1"), 100)
	if !strings.HasPrefix(problem, "unreachable: connection refused") || strings.Contains(problem, "tok-123") {
		t.Fatalf("problem %q", problem)
	}
	if _, problem = client.FetchWhatsAppMedia(context.Background(), "", WhatsAppMediaLink("", "1"), 100); problem == "" {
		t.Fatal("no problem without a token")
	}
}
