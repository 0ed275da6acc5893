package inbox

import (
	"errors"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// unrouted answers a request under /inbox that no route took with the inbox's own HTML page rather
// than the API's JSON error: 404 for a path the inbox does not have, 405 for a method one of its paths
// does not take (the router has set Allow). The page has the navigation when the browser is signed in.
// Paths that only start with "/inbox" ("/inboxes") are not the inbox's and keep the API's answer.
func (h *Handler) unrouted(c *fiber.Ctx) error {
	err := c.Next()
	var fe *fiber.Error
	if err == nil || !errors.As(err, &fe) || (fe.Code != fiber.StatusNotFound && fe.Code != fiber.StatusMethodNotAllowed) {
		return err
	}
	if p := c.Path(); p != "/inbox" && !strings.HasPrefix(p, "/inbox/") {
		return err
	}
	pv := problemView{Heading: "Not found", Text: "There is no such page in the inbox."}
	title := "Not found"
	if fe.Code == fiber.StatusMethodNotAllowed {
		title = "Not allowed"
		pv = problemView{Heading: "Not allowed", Text: "This page does not take " + methodName(c.Method()) + " requests."}
	}
	v := inboxView{Title: title, Data: pv}
	if sess, serr := h.store.SessionByToken(c.UserContext(), c.Cookies(sessionCookie)); serr == nil {
		c.Locals("inbox.session", &session{Session: sess, token: c.Cookies(sessionCookie)})
		v = h.view(c, title, "", pv)
	}
	return h.render(c, fe.Code, "problem", v)
}

// methodName is a request's method as a page may name it: a plain token of letters, else "such".
func methodName(m string) string {
	if m == "" || len(m) > 16 {
		return "such"
	}
	for _, r := range m {
		if r < 'A' || r > 'Z' {
			return "such"
		}
	}
	return m
}
