package api_test

import (
	"html"
	"net/http"
	"strings"
	"testing"

	"funnelchat/models"
)

// TestInboxFlashKeepsTheWholeMessage: the message an action leaves for the next page arrives whole,
// whatever it holds: a ";" (which would end a cookie's value), quotes, and characters beyond ASCII,
// here in the contact's name that a retried delivery's message names.
func TestInboxFlashKeepsTheWholeMessage(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	b, acc, _ := signedIn(t, srv)
	in := models.IncomingInput{ExternalID: "flash-" + acc.ID, FromID: "flash-zoe", ToID: "shop", Body: "hi", Channel: "live-chat",
		FirstName: "Zoë", LastName: `"Zee"; Ng`}
	if err := in.Validate(1 << 20); err != nil {
		t.Fatal(err)
	}
	m, _, err := env.Store.IngestIncoming(t.Context(), acc.ID, in)
	if err != nil {
		t.Fatal(err)
	}
	reply, err := env.Store.HumanReply(t.Context(), acc.ID, m.ContactID, acc.OwnerUserID, "hello", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Store.RecordAttempt(t.Context(), reply.ID, models.AttemptOutcome{StatusCode: 410, Error: "webhook answered 410"}); err != nil {
		t.Fatal(err)
	}
	p := b.post("/inbox/deliveries", "/inbox/deliveries/"+reply.ID+"/retry", nil)
	if p.Status != http.StatusSeeOther {
		t.Fatalf("retrying the delivery: %d\n%.1000s", p.Status, p.Body)
	}
	text := html.UnescapeString(b.get(p.Header.Get("Location")).Body)
	if want := `The message to Zoë "Zee"; Ng is queued again.`; !strings.Contains(text, want) {
		i := strings.Index(text, "The message to")
		t.Fatalf("the page after the retry lacks %q; it says:\n%.400s", want, text[max(i, 0):])
	}
}
