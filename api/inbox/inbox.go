package inbox

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"html/template"
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"funnelchat/models"
	"funnelchat/models/report"
)

// The inbox is the account team's web app, served by the api under /inbox/ (README, "The inbox"). Pages
// are rendered on the server with html/template, whose contextual escaping makes every message body,
// name and error plain text. The only script is static/app.js (live updates); every asset is embedded
// and served under a name carrying its content hash, so browsers cache it for good and a new build
// can never be served a stale copy.

//go:embed templates/*.html
var inboxTemplateFiles embed.FS

//go:embed static/*
var inboxStaticFiles embed.FS

// inboxAsset is an embedded file served at /inbox/static/<hashed name>.
type inboxAsset struct {
	body        []byte
	contentType string
}

var (
	// inboxAssetPaths maps a file's name ("app.css") to its hashed path.
	inboxAssetPaths = map[string]string{}
	// inboxAssets maps a hashed name ("app.3f2a9c1b.css") to the file.
	inboxAssets = map[string]inboxAsset{}
	// inboxPages are the parsed pages, each with the layout, by name ("conversations").
	inboxPages = map[string]*template.Template{}
)

var inboxContentTypes = map[string]string{
	".css": "text/css; charset=utf-8",
	".js":  "text/javascript; charset=utf-8",
	".svg": "image/svg+xml",
	".png": "image/png",
}

func init() {
	entries, err := fs.ReadDir(inboxStaticFiles, "static")
	if err != nil {
		panic(err)
	}
	for _, e := range entries {
		body, err := inboxStaticFiles.ReadFile("static/" + e.Name())
		if err != nil {
			panic(err)
		}
		sum := sha256.Sum256(body)
		ext := path.Ext(e.Name())
		hashed := strings.TrimSuffix(e.Name(), ext) + "." + hex.EncodeToString(sum[:4]) + ext
		inboxAssets[hashed] = inboxAsset{body: body, contentType: inboxContentTypes[ext]}
		inboxAssetPaths[e.Name()] = "/inbox/static/" + hashed
	}
	pages, err := fs.Glob(inboxTemplateFiles, "templates/*.html")
	if err != nil {
		panic(err)
	}
	// A file whose name starts with "_" holds parts that several pages render alike (the consent,
	// the goals): it is parsed with every page and is no page itself.
	for _, p := range pages {
		name := strings.TrimSuffix(path.Base(p), ".html")
		if name == "layout" || strings.HasPrefix(name, "_") {
			continue
		}
		inboxPages[name] = template.Must(template.New("layout.html").Funcs(inboxFuncs).
			ParseFS(inboxTemplateFiles, "templates/layout.html", "templates/_*.html", p))
	}
}

// inboxSecurityHeaders go on every inbox response. The policy allows no inline script or style and no
// other origin: a message body that slipped past escaping still could not run or load anything.
func inboxSecurityHeaders(c *fiber.Ctx) error {
	setSecurityHeaders(c)
	return c.Next()
}

// setSecurityHeaders sets inboxSecurityHeaders' headers, also on an answer given before routing
// (TooLarge).
func setSecurityHeaders(c *fiber.Ctx) {
	c.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "+
		"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	c.Set("X-Content-Type-Options", "nosniff")
	c.Set("X-Frame-Options", "DENY")
	c.Set("Referrer-Policy", "same-origin")
}

// inboxStatic serves an embedded asset by its hashed name.
func inboxStatic(c *fiber.Ctx) error {
	a, ok := inboxAssets[c.Params("name")]
	if !ok {
		return c.Status(fiber.StatusNotFound).SendString("not found")
	}
	c.Set(fiber.HeaderContentType, a.contentType)
	c.Set(fiber.HeaderCacheControl, "public, max-age=31536000, immutable")
	return c.Send(a.body)
}

// inboxView is what every page template gets.
type inboxView struct {
	Title   string
	Nav     string // the navigation entry to highlight
	User    *models.User
	CSRF    string
	Flash   string
	FlashOK bool
	// FlashFor is the section of the page the flash belongs to ("" for the top of the page).
	FlashFor string
	// Counts is what waits for the user (unread conversations, open alerts), shown in the navigation
	// and the title; nil when they could not be read (the page shows none rather than failing).
	Counts *report.InboxCounts
	Data   any
}

// render writes a page (or, for the live script's refresh, only its live region) with status.
func (h *Handler) render(c *fiber.Ctx, status int, page string, v inboxView) error {
	return renderPage(c, status, page, v)
}

func renderPage(c *fiber.Ctx, status int, page string, v inboxView) error {
	t, ok := inboxPages[page]
	if !ok {
		return errors.New("inbox: no page " + page)
	}
	var buf bytes.Buffer
	name := "layout"
	// The live script asks for the page's live region ("1") or for its other live parts ("parts":
	// a page's sections that events change, each in an element with data-live-part).
	switch live := c.Get("X-Inbox-Live"); {
	case live == "1" && t.Lookup("live") != nil:
		name = "live"
	case live == "parts" && t.Lookup("parts") != nil:
		name = "parts"
	}
	if err := t.ExecuteTemplate(&buf, name, v); err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Status(status).Send(buf.Bytes())
}

// inboxFuncs are the helpers the templates use.
var inboxFuncs = template.FuncMap{
	"asset": func(name string) string { return inboxAssetPaths[name] },
	// navCount is a navigation entry's count (team_inbox.go).
	"navCount": navCount,
	// sect pairs a page's view with one of its sections, for the "sectionflash" template.
	"sect": func(v inboxView, section string) sectionRef { return sectionRef{View: v, Section: section} },
	// contactName names a contact as every page does (report.ContactName).
	"contactName": report.ContactName,
	"initial": func(name string) string {
		for _, r := range name {
			if r == '+' || r == '@' {
				continue
			}
			return strings.ToUpper(string(r))
		}
		return "?"
	},
	"preview": func(m *models.Message) string {
		if m == nil {
			return ""
		}
		text := strings.Join(strings.Fields(m.Body), " ")
		if text == "" && m.MediaURL != nil {
			text = "[attachment]"
		}
		if m.Direction == models.DirectionOutgoing {
			text = authorLabel[m.Author] + ": " + text
		}
		if r := []rune(text); len(r) > 90 {
			text = string(r[:89]) + "…"
		}
		return text
	},
	"when": func(t time.Time) string {
		t = t.UTC()
		now := time.Now().UTC()
		switch {
		case now.Sub(t) < 24*time.Hour && now.Day() == t.Day():
			return t.Format("15:04")
		case now.Year() == t.Year():
			return t.Format("Jan 2")
		}
		return t.Format("Jan 2, 2006")
	},
	"stamp": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
	// author names who wrote an outgoing message ("Auto-reply" for the service's own answer to a
	// consent keyword).
	"author": func(author string) string {
		if l, ok := authorLabel[author]; ok {
			return l
		}
		return author
	},
	"join":  strings.Join,
	"iso":   func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"deref": deref,
	"isImage": func(m models.Message) bool {
		return m.MediaContentType != nil && embeddedImage(m) && previewable[*m.MediaContentType]
	},
	"isEmbedded": embeddedImage,
	// thousands writes a count with thousands separators (campaign.go).
	"thousands": thousands,
	// waiting says how long something has waited, as "waiting 23 min" (team_inbox.go).
	"waiting": func(since time.Time) string { return waitingFor(time.Since(since)) },
	// byLabel names who wrote an outgoing message, on the conversation page (team_inbox.go).
	"byLabel": byLabel,
	"snippet": snippet,
}

// sectionRef is a view and the id of one of its page's sections.
type sectionRef struct {
	View    inboxView
	Section string
}

// authorLabel names who wrote an outgoing message, in the list's previews.
var authorLabel = map[string]string{
	models.AuthorBot: "Bot", models.AuthorCampaign: "Campaign", models.AuthorHuman: "Team", models.AuthorAPI: "Sent",
	models.AuthorSystem: "Auto-reply",
}

// previewable are the image types the inbox shows inline (never SVG, which can carry script).
var previewable = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// embeddedImage reports whether the message's media is a data URI stored with it, which the inbox
// serves itself (/inbox/media/{id}); a linked file on another site is shown as a link, since the
// pages load nothing from other origins.
func embeddedImage(m models.Message) bool {
	return m.MediaURL != nil && strings.HasPrefix(strings.ToLower(*m.MediaURL), "data:")
}
