package api_test

import (
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestInboxFlashKeepsTheWholeMessage: the message an action leaves for the next page arrives whole,
// whatever it holds: a validation error's ";" (which would end a cookie's value), quotes, and
// characters beyond ASCII.
func TestInboxFlashKeepsTheWholeMessage(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	b, _, _ := signedIn(t, srv)
	p := b.post("/inbox/settings", "/inbox/settings/compliance",
		url.Values{"optOutKeywords": {"STOP1 café"}, "timeZone": {"UTC"}, "noQuietHours": {"true"}})
	if p.Status != http.StatusSeeOther {
		t.Fatalf("saving an invalid keyword: %d\n%.1000s", p.Status, p.Body)
	}
	next := b.get(p.Header.Get("Location"))
	text := html.UnescapeString(next.Body)
	for _, want := range []string{`"STOP1"`, `must be 1-`, `'1' is not a letter`, `Nothing was saved.`} {
		if !strings.Contains(text, want) {
			i := strings.Index(text, "STOP1")
			t.Fatalf("the settings page after the error lacks %q; around the keyword it says:\n%.400s", want, text[max(i-100, 0):])
		}
	}
}
