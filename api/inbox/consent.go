package inbox

import (
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"funnelchat/models"
	"funnelchat/models/report"
)

// Consent on the conversation page (README, "Compliance"): the contact's state per channel with the
// evidence of its last change, its history (each change with who recorded it), a notice instead of
// the reply box when the contact opted out on the reply's channel, and a form to record consent given
// or withdrawn outside the service (a phone call, a paper form).

// maxConsentNote is the longest note the form takes: the ledger's limit on an event's text
// (ConsentInput.Normalize checks it too; the form says it in its own words first).
const maxConsentNote = 2000

// consentRow is the contact's consent on one channel, as the conversation page shows it.
type consentRow struct {
	// Channel is the channel, or models.ConsentAllChannels.
	Channel string
	models.ConsentState
	// Event is the ledger's last event on the channel (its note, who recorded it); nil when the
	// ledger the page read does not hold it.
	Event *models.ConsentEvent
	// AllChannels: the state is the all-channels one, standing for Channel (the opted-out notice).
	AllChannels bool
}

// Label names the channel for people: "All channels" for the all-channels state.
func (r consentRow) Label() string { return channelLabel(r.Channel) }

// OptedOut reports whether the row withdraws consent.
func (r consentRow) OptedOut() bool { return r.Status == models.ConsentOptedOut }

func channelLabel(channel string) string {
	if channel == models.ConsentAllChannels {
		return "All channels"
	}
	return channel
}

// consentStatusLabel names a consent status for people.
func consentStatusLabel(status string) string {
	switch status {
	case models.ConsentOptedIn:
		return "opted in"
	case models.ConsentOptedOut:
		return "opted out"
	}
	return status
}

// consentRows lists the contact's consent by channel, the all-channels state first, each with the
// last event of its channel in the ledger (oldest first).
func consentRows(cc *models.ContactConsent) []consentRow {
	last := map[string]*models.ConsentEvent{}
	for _, e := range cc.Events {
		last[e.Channel] = e
	}
	rows := make([]consentRow, 0, len(cc.Channels))
	for ch, st := range cc.Channels {
		rows = append(rows, consentRow{Channel: ch, ConsentState: st, Event: last[ch]})
	}
	slices.SortFunc(rows, func(a, b consentRow) int {
		switch {
		case a.Channel == b.Channel:
			return 0
		case a.Channel == models.ConsentAllChannels:
			return -1
		case b.Channel == models.ConsentAllChannels:
			return 1
		}
		return strings.Compare(a.Channel, b.Channel)
	})
	return rows
}

// consentShown is how many of the newest ledger events the conversation page lists at once; the older
// ones wait behind a "show older" switch, so that a long history keeps the section short on a phone.
const consentShown = 5

// consentEntry is one event of the contact's consent history, as the conversation page lists it.
type consentEntry struct{ *models.ConsentEvent }

// Label names the event's channel for people.
func (e consentEntry) Label() string { return channelLabel(e.Channel) }

// OptedOut reports whether the event withdraws consent.
func (e consentEntry) OptedOut() bool { return e.Status == models.ConsentOptedOut }

// Who names who recorded the change: the user's email, "API key …" and the key's last 4, or "" for
// a change the service made itself (its source says what made it).
func (e consentEntry) Who() string {
	switch by := e.RecordedBy; {
	case by == nil:
		return ""
	case by.APIKey != "":
		return "API key …" + by.APIKey
	case by.Email != "":
		return by.Email
	}
	return "a former team member"
}

// consentHistory is the contact's consent ledger, newest first: the consentShown newest events, and
// the older ones.
type consentHistory struct {
	Recent, Older []consentEntry
}

// historyOf lists the ledger cc holds (in the order recorded) newest first: by the time consent was
// given or withdrawn, which the page shows, so that evidence recorded late (a paper form) takes its
// place among the rest; of two at one time, the one recorded last first.
func historyOf(cc *models.ContactConsent) consentHistory {
	entries := make([]consentEntry, len(cc.Events))
	for i, e := range cc.Events {
		entries[len(entries)-1-i] = consentEntry{e}
	}
	slices.SortStableFunc(entries, func(a, b consentEntry) int { return b.At.Compare(a.At) })
	n := min(len(entries), consentShown)
	return consentHistory{Recent: entries[:n], Older: entries[n:]}
}

// optedOutRow is the state that stops the reply box: the contact opted out on the channel the reply
// would take (its own state, else the all-channels one); nil when it did not.
func optedOutRow(rows []consentRow, channel string) *consentRow {
	if channel == "" {
		return nil
	}
	var all *consentRow
	for i := range rows {
		switch rows[i].Channel {
		case channel:
			if !rows[i].OptedOut() {
				return nil
			}
			r := rows[i]
			return &r
		case models.ConsentAllChannels:
			all = &rows[i]
		}
	}
	if all == nil || !all.OptedOut() {
		return nil
	}
	r := *all
	r.Channel, r.AllChannels = channel, true
	return &r
}

// knownChannels are the channels the record form offers besides all channels: the reply's, those of
// the messages shown and those of the consent ledger, in order of name.
func knownChannels(conv *report.ConversationView, cc *models.ContactConsent) []string {
	var out []string
	add := func(ch string) {
		if ch != "" && ch != models.ConsentAllChannels && !slices.Contains(out, ch) {
			out = append(out, ch)
		}
	}
	add(conv.Reply.Route.Channel)
	for _, m := range conv.Messages {
		add(m.Channel)
	}
	for ch := range cc.Channels {
		add(ch)
	}
	for _, e := range cc.Events {
		add(e.Channel)
	}
	slices.Sort(out)
	return out
}

// withConsent adds the contact's consent to the conversation page's data.
func (h *Handler) withConsent(c *fiber.Ctx, v *conversationView) error {
	cc, err := h.store.ConsentOf(c.UserContext(), sessionOf(c).AccountID, v.Contact.ID)
	if err != nil {
		return err
	}
	v.Consent = consentRows(cc)
	v.ConsentHistory = historyOf(cc)
	if v.Reply.Problem == "" {
		v.OptedOut = optedOutRow(v.Consent, v.Reply.Route.Channel)
	}
	v.ConsentChannels = knownChannels(v.ConversationView, cc)
	return nil
}

// recordConsent: POST /inbox/conversations/{contactId}/consent {channel, status, note} records consent
// given or withdrawn outside the service, as evidence in the contact's ledger: source "inbox", the
// note as its text and the signed-in user as who recorded it. The note is required: evidence says
// where it came from. channel "*" (or none) is every channel.
func (h *Handler) recordConsent(c *fiber.Ctx) error {
	sess := sessionOf(c)
	back := "/inbox/conversations/" + url.PathEscape(c.Params("id")) + "#consent"
	status := c.FormValue("status")
	note := strings.TrimSpace(c.FormValue("note"))
	switch {
	case status != models.ConsentOptedIn && status != models.ConsentOptedOut:
		return h.done(c, back, false, "Choose opted in or opted out. Nothing was recorded.")
	case note == "":
		return h.done(c, back, false, "Write where the consent came from (a call, a form, a message): the note is required. Nothing was recorded.")
	case utf8.RuneCountInString(note) > maxConsentNote:
		return h.done(c, back, false, "The note must be at most "+itoa(maxConsentNote)+" characters. Nothing was recorded.")
	}
	in := models.ConsentInput{Channel: c.FormValue("channel"), Status: status, Source: models.ConsentSourceInbox, Text: note,
		RecordedBy: models.RecordedByUser(sess.UserID, sess.User.Email)}
	if err := in.Normalize("", models.ConsentSourceInbox); err != nil {
		if models.ErrorCode(err) == models.CodeValidation {
			return h.done(c, back, false, sentence(models.ErrorMessage(err))+" Nothing was recorded.")
		}
		return h.actionFailed(c, back, err)
	}
	if _, err := h.app.SetConsent(c.UserContext(), sess.AccountID, c.Params("id"), in); err != nil {
		return h.actionFailed(c, back, err)
	}
	where := "on " + in.Channel
	if in.Channel == models.ConsentAllChannels {
		where = "on all channels"
	}
	return h.done(c, back, true, "Recorded: "+consentStatusLabel(in.Status)+" "+where+".")
}

// sentence starts a message with a capital letter and ends it with a full stop.
func sentence(msg string) string {
	msg = strings.TrimSpace(msg)
	if msg == "" {
		return msg
	}
	r, n := utf8.DecodeRuneInString(msg)
	msg = strings.ToUpper(string(r)) + msg[n:]
	if !strings.HasSuffix(msg, ".") {
		msg += "."
	}
	return msg
}
