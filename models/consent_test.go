package models_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"funnelchat/models"
	"funnelchat/models/testenv"
)

// Helpers of the consent tests carry a cs prefix so that they do not meet other test files' names.

var csSeq atomic.Int64

// csAccount creates an account named name.
func csAccount(t testing.TB, name string) *models.CreatedAccount {
	t.Helper()
	return testenv.NewAccount(t, env.Store, name)
}

// csFrom returns a sender id (not a phone number) no other test uses.
func csFrom(name string) string { return testenv.UniqueFromID(name) }

// csIncoming stores an incoming custom-channel text message from fromID on channel, through the
// store's own API (what POST /v1/incoming_custom_channel_message does).
func csIncoming(t testing.TB, s *models.Store, accountID, fromID, channel, body string) *models.Message {
	t.Helper()
	return testenv.ReceiveOn(t, s, accountID, fromID, channel, body)
}

func csContact(t testing.TB, accountID, id string) *models.Contact {
	t.Helper()
	return testenv.Contact(t, env.Store, accountID, id)
}

func csMessage(t testing.TB, accountID, id string) *models.Message {
	t.Helper()
	m, err := env.Store.MessageByID(context.Background(), accountID, id)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func csConsent(t testing.TB, accountID, contactID string) *models.ContactConsent {
	t.Helper()
	cc, err := env.Store.ConsentOf(context.Background(), accountID, contactID)
	if err != nil {
		t.Fatal(err)
	}
	return cc
}

func csSettings(t testing.TB, s *models.Store, accountID string) *models.ComplianceSettings {
	t.Helper()
	cs, err := s.ComplianceSettings(context.Background(), accountID)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func csKeyword(t testing.TB, s *models.Store, m *models.Message) *models.KeywordOutcome {
	t.Helper()
	out, err := s.HandleKeyword(context.Background(), m)
	if err != nil {
		t.Fatalf("HandleKeyword(%q): %v", m.Body, err)
	}
	return out
}

// csStore opens a second store on the package's database, for tests that change the store itself
// (its default quiet hours, a query hook) without touching env.Store, which parallel tests share.
func csStore(t testing.TB) *models.Store {
	t.Helper()
	var s *models.Store
	var err error
	if env.Postgres() {
		s, err = models.OpenPostgres(env.DatabaseURL, 4)
	} else {
		s, err = models.OpenSQLite(env.SQLitePath)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// queryCounter counts every statement run on the store it is added to.
type queryCounter struct{ n atomic.Int64 }

func (q *queryCounter) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	return ctx
}
func (q *queryCounter) AfterQuery(context.Context, *bun.QueryEvent) { q.n.Add(1) }

func csPtr[T any](v T) *T { return &v }

func csStr(p *string) string { return testenv.Str(p) }

// csWantEvent checks one ledger event.
func csWantEvent(t testing.TB, e *models.ConsentEvent, channel, status, source, text, messageID string, at time.Time) {
	t.Helper()
	if e.Channel != channel || e.Status != status || e.Source != source || e.Text != text || csStr(e.MessageID) != messageID || !e.At.Equal(at) {
		t.Errorf("event = {channel %q status %q source %q text %q messageId %s at %v}, want {%q %q %q %q %s %v}",
			e.Channel, e.Status, e.Source, e.Text, csStr(e.MessageID), e.At, channel, status, source, text, messageID, at)
	}
}

// csWantReply checks a keyword's reply: the service's own message answering in, pending.
func csWantReply(t testing.TB, reply *models.Message, in *models.Message, body string) {
	t.Helper()
	if reply == nil {
		t.Fatalf("keyword %q: no reply, want %q", in.Body, body)
	}
	if reply.Author != models.AuthorSystem || reply.Body != body || csStr(reply.ReplyToID) != in.ID ||
		reply.Status != models.StatusPending || reply.Direction != models.DirectionOutgoing ||
		reply.Channel != in.Channel || reply.ToID != in.FromID || reply.ContactID != in.ContactID {
		t.Errorf("keyword %q: reply = {author %q body %q replyTo %s status %q direction %q channel %q to %q contact %q}, want {%q %q %s %q outgoing %q %q %q}",
			in.Body, reply.Author, reply.Body, csStr(reply.ReplyToID), reply.Status, reply.Direction, reply.Channel, reply.ToID, reply.ContactID,
			models.AuthorSystem, body, in.ID, models.StatusPending, in.Channel, in.FromID, in.ContactID)
	}
	stored, err := env.Store.ReplyTo(context.Background(), in.ID)
	if err != nil {
		t.Fatalf("keyword %q: stored reply: %v", in.Body, err)
	}
	if stored.ID != reply.ID || stored.Body != body || stored.Author != models.AuthorSystem || stored.Status != models.StatusPending {
		t.Errorf("keyword %q: stored reply = {%s %q %q %q}, want {%s %q system pending}", in.Body, stored.ID, stored.Body, stored.Author, stored.Status, reply.ID, body)
	}
}

func csWantBotStatus(t testing.TB, accountID string, m *models.Message, want string) {
	t.Helper()
	if got := csStr(csMessage(t, accountID, m.ID).BotStatus); got != want {
		t.Errorf("message %q: bot status %s, want %s", m.Body, got, want)
	}
}

func csWantNoReply(t testing.TB, m *models.Message) {
	t.Helper()
	if r, err := env.Store.ReplyTo(context.Background(), m.ID); models.ErrorCode(err) != models.CodeNotFound {
		t.Errorf("message %q: a reply is stored (%v, %v), want none", m.Body, r, err)
	}
}

// TestConsentKeywordsBuiltIn walks one contact through STOP, a repeated stop, HELP while opted out,
// and START, checking the consent, the ledger, the replies and the bot status after each.
func TestConsentKeywordsBuiltIn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acc := csAccount(t, "Acme Dental")
	accID := acc.Account.ID
	settings := csSettings(t, env.Store, accID)
	from := csFrom("kw")

	// STOP: opted out on sms, one event, one confirmation.
	stop := csIncoming(t, env.Store, accID, from, "sms", "STOP")
	out := csKeyword(t, env.Store, stop)
	if out == nil || out.Kind != models.KeywordOptOut || !out.Changed {
		t.Fatalf("STOP: outcome %+v, want opt-out, changed", out)
	}
	csWantReply(t, out.Reply, stop, settings.OptOutConfirmation)
	csWantBotStatus(t, accID, stop, models.BotKeyword)
	if csStr(stop.BotStatus) != models.BotKeyword {
		t.Errorf("STOP: the caller's message has bot status %s, want keyword", csStr(stop.BotStatus))
	}
	c := csContact(t, accID, stop.ContactID)
	st, ok := c.Consent.For("sms")
	if !ok || st.Status != models.ConsentOptedOut || st.Source != models.ConsentSourceKeyword || !st.At.Equal(stop.CreatedAt) {
		t.Errorf("after STOP: consent on sms %+v (%v), want opted_out by keyword at %v", st, ok, stop.CreatedAt)
	}
	cc := csConsent(t, accID, stop.ContactID)
	if len(cc.Events) != 1 {
		t.Fatalf("after STOP: %d events, want 1", len(cc.Events))
	}
	csWantEvent(t, cc.Events[0], "sms", models.ConsentOptedOut, models.ConsentSourceKeyword, "STOP", stop.ID, stop.CreatedAt)
	if e := cc.Events[0]; e.IP != nil || e.UserID != nil || e.RecordedBy != nil {
		t.Errorf("keyword event: ip %s user %s recorded by %+v, want none", csStr(e.IP), csStr(e.UserID), e.RecordedBy)
	}

	// "stop" again while opted out: nothing recorded, nothing sent, not the bot's either.
	again := csIncoming(t, env.Store, accID, from, "sms", "stop")
	out = csKeyword(t, env.Store, again)
	if out == nil || out.Kind != models.KeywordOptOut || out.Changed || out.Reply != nil {
		t.Fatalf("second STOP: outcome %+v, want opt-out, unchanged, no reply", out)
	}
	csWantBotStatus(t, accID, again, models.BotKeyword)
	csWantNoReply(t, again)
	if n := len(csConsent(t, accID, stop.ContactID).Events); n != 1 {
		t.Errorf("after a second STOP: %d events, want 1", n)
	}

	// HELP while opted out: the help text, and no consent change.
	help := csIncoming(t, env.Store, accID, from, "sms", "HELP")
	out = csKeyword(t, env.Store, help)
	if out == nil || out.Kind != models.KeywordHelp || out.Changed {
		t.Fatalf("HELP: outcome %+v, want help, unchanged", out)
	}
	csWantReply(t, out.Reply, help, settings.HelpText)
	csWantBotStatus(t, accID, help, models.BotKeyword)
	if cc := csConsent(t, accID, stop.ContactID); len(cc.Events) != 1 || !cc.Channels.OptedOut("sms") {
		t.Errorf("after HELP: %d events, consent %+v; want 1 event, still opted out", len(cc.Events), cc.Channels)
	}

	// start: opted in again, an event, the opt-in confirmation.
	start := csIncoming(t, env.Store, accID, from, "sms", "start")
	out = csKeyword(t, env.Store, start)
	if out == nil || out.Kind != models.KeywordOptIn || !out.Changed {
		t.Fatalf("start: outcome %+v, want opt-in, changed", out)
	}
	csWantReply(t, out.Reply, start, settings.OptInConfirmation)
	csWantBotStatus(t, accID, start, models.BotKeyword)
	cc = csConsent(t, accID, stop.ContactID)
	if len(cc.Events) != 2 {
		t.Fatalf("after start: %d events, want 2", len(cc.Events))
	}
	csWantEvent(t, cc.Events[0], "sms", models.ConsentOptedOut, models.ConsentSourceKeyword, "STOP", stop.ID, stop.CreatedAt)
	csWantEvent(t, cc.Events[1], "sms", models.ConsentOptedIn, models.ConsentSourceKeyword, "start", start.ID, start.CreatedAt)
	if st := cc.Channels["sms"]; st.Status != models.ConsentOptedIn || len(cc.Channels) != 1 {
		t.Errorf("after start: consent %+v, want sms opted_in only", cc.Channels)
	}

	// HELP while opted in: the help text too.
	help2 := csIncoming(t, env.Store, accID, from, "sms", "info")
	out = csKeyword(t, env.Store, help2)
	if out == nil || out.Kind != models.KeywordHelp {
		t.Fatalf("info: outcome %+v, want help", out)
	}
	csWantReply(t, out.Reply, help2, settings.HelpText)

	// Every message of the conversation: five incoming, four replies (none to the repeated stop).
	msgs, _, err := env.Store.ContactMessages(ctx, accID, stop.ContactID, models.Page{Limit: models.MaxPageLimit})
	if err != nil {
		t.Fatal(err)
	}
	var replies int
	for _, m := range msgs {
		if m.Direction == models.DirectionOutgoing {
			replies++
		}
	}
	if len(msgs) != 9 || replies != 4 {
		t.Errorf("conversation: %d messages, %d replies; want 9 and 4", len(msgs), replies)
	}
}

// TestConsentKeywordNotAKeyword: an ordinary message is left to the bot, and one that cannot be a
// keyword does not even read the settings.
func TestConsentKeywordNotAKeyword(t *testing.T) {
	t.Parallel()
	acc := csAccount(t, "Acme")
	accID := acc.Account.ID
	s := csStore(t)
	counter := &queryCounter{}
	s.DB().AddQueryHook(counter)

	// queries is how many statements HandleKeyword may run: a single word could be one of the
	// account's own keywords (1-20 letters), so it reads the settings (one SELECT); several words, or
	// a word with a digit, cannot be, and read nothing (the hot path of ordinary messages).
	for _, tc := range []struct {
		body    string
		queries int64
	}{
		{"please stop texting me", 0},
		{"hello", 1},
		{"Hello!", 1},
		{"stop it", 0},
		{"STOP 2", 0},
		{"hello, I would like to know more about your prices", 0},
	} {
		body := tc.body
		m := csIncoming(t, env.Store, accID, csFrom("plain"), "sms", body)
		before := counter.n.Load()
		out, err := s.HandleKeyword(context.Background(), m)
		if err != nil || out != nil {
			t.Errorf("HandleKeyword(%q) = %+v, %v; want nil, nil", body, out, err)
		}
		if reads := counter.n.Load() - before; reads != tc.queries {
			t.Errorf("HandleKeyword(%q) ran %d queries, want %d", body, reads, tc.queries)
		}
		csWantBotStatus(t, accID, m, models.BotPending)
		csWantNoReply(t, m)
		if cc := csConsent(t, accID, m.ContactID); len(cc.Events) != 0 || len(cc.Channels) != 0 {
			t.Errorf("HandleKeyword(%q): consent %+v with %d events, want none", body, cc.Channels, len(cc.Events))
		}
	}
}

// TestConsentKeywordIdempotent: handling one message twice (a retry, or the worker after a crash)
// records nothing new and returns the reply that is still to be delivered.
func TestConsentKeywordIdempotent(t *testing.T) {
	t.Parallel()
	acc := csAccount(t, "Acme")
	accID := acc.Account.ID
	for _, body := range []string{"STOP", "HELP", "Start"} {
		m := csIncoming(t, env.Store, accID, csFrom("idem"), "sms", body)
		first := csKeyword(t, env.Store, m)
		if first == nil || first.Reply == nil {
			t.Fatalf("%s: first outcome %+v, want a reply", body, first)
		}
		// The second call comes with the message as it was stored (a fresh read), and with the
		// caller's copy (whose bot status the first call set).
		for _, again := range []*models.Message{csMessage(t, accID, m.ID), m} {
			second := csKeyword(t, env.Store, again)
			if second == nil || second.Kind != first.Kind || second.Changed {
				t.Fatalf("%s: second outcome %+v, want kind %v, unchanged", body, second, first.Kind)
			}
			if second.Reply == nil || second.Reply.ID != first.Reply.ID || second.Reply.Body != first.Reply.Body ||
				second.Reply.Status != models.StatusPending {
				t.Errorf("%s: second call's reply %+v, want the first's pending reply %s", body, second.Reply, first.Reply.ID)
			}
		}
		wantEvents := 1
		if first.Kind == models.KeywordHelp {
			wantEvents = 0
		}
		if n := len(csConsent(t, accID, m.ContactID).Events); n != wantEvents {
			t.Errorf("%s twice: %d events, want %d", body, n, wantEvents)
		}
		msgs, _, err := env.Store.ContactMessages(context.Background(), accID, m.ContactID, models.Page{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) != 2 {
			t.Errorf("%s twice: %d messages, want the keyword and one reply", body, len(msgs))
		}
	}

	// Once the reply went out, a retry owes nothing.
	m := csIncoming(t, env.Store, accID, csFrom("idem-sent"), "sms", "STOP")
	first := csKeyword(t, env.Store, m)
	if err := env.Store.RecordAttempt(context.Background(), first.Reply.ID, models.AttemptOutcome{StatusCode: 200}); err != nil {
		t.Fatal(err)
	}
	if sent := csMessage(t, accID, first.Reply.ID); sent.Status != models.StatusSent {
		t.Fatalf("the reply is %s after a 200, want sent", sent.Status)
	}
	if again := csKeyword(t, env.Store, m); again == nil || again.Reply != nil {
		t.Errorf("retry after the reply was sent: outcome %+v, want one without a reply", again)
	}
}

// TestConsentKeywordAccountWords: an account's own opt-out word opts out, in any case and with
// punctuation.
func TestConsentKeywordAccountWords(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acc := csAccount(t, "Acme")
	accID := acc.Account.ID

	before := csIncoming(t, env.Store, accID, csFrom("basta0"), "sms", "Basta!")
	if out := csKeyword(t, env.Store, before); out != nil {
		t.Fatalf("Basta! before the account listed it: %+v, want nil", out)
	}
	words := []string{"Basta"}
	in := []string{"Alta"}
	got, err := env.Store.UpdateComplianceSettings(ctx, accID, models.ComplianceInput{OptOutKeywords: &words, OptInKeywords: &in})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.OptOutKeywords, []string{"basta"}) || !slices.Equal(got.OptInKeywords, []string{"alta"}) {
		t.Fatalf("keywords %v / %v, want [basta] / [alta]", got.OptOutKeywords, got.OptInKeywords)
	}
	from := csFrom("basta")
	m := csIncoming(t, env.Store, accID, from, "sms", "Basta!")
	out := csKeyword(t, env.Store, m)
	if out == nil || out.Kind != models.KeywordOptOut || !out.Changed {
		t.Fatalf("Basta!: outcome %+v, want opt-out", out)
	}
	csWantReply(t, out.Reply, m, got.OptOutConfirmation)
	cc := csConsent(t, accID, m.ContactID)
	if len(cc.Events) != 1 || !cc.Channels.OptedOut("sms") {
		t.Fatalf("after Basta!: %d events, consent %+v", len(cc.Events), cc.Channels)
	}
	csWantEvent(t, cc.Events[0], "sms", models.ConsentOptedOut, models.ConsentSourceKeyword, "Basta!", m.ID, m.CreatedAt)

	m = csIncoming(t, env.Store, accID, from, "sms", " ALTA ")
	out = csKeyword(t, env.Store, m)
	if out == nil || out.Kind != models.KeywordOptIn || !out.Changed {
		t.Fatalf("ALTA: outcome %+v, want opt-in", out)
	}
	if csConsent(t, accID, m.ContactID).Channels.OptedOut("sms") {
		t.Error("after ALTA the contact is still opted out")
	}
}

// TestConsentKeywordChannelScope: an opt-out on one channel leaves the contact's other channels
// alone.
func TestConsentKeywordChannelScope(t *testing.T) {
	t.Parallel()
	acc := csAccount(t, "Acme")
	accID := acc.Account.ID
	from := csFrom("scope")
	chat := csIncoming(t, env.Store, accID, from, "live-chat", "hi there")
	m := csIncoming(t, env.Store, accID, from, "sms", "STOP")
	if m.ContactID != chat.ContactID {
		t.Fatalf("one sender became two contacts: %s, %s", chat.ContactID, m.ContactID)
	}
	if out := csKeyword(t, env.Store, m); out == nil || !out.Changed {
		t.Fatalf("STOP: %+v", out)
	}
	c := csContact(t, accID, m.ContactID)
	if _, ok := c.Consent.For("live-chat"); ok {
		t.Errorf("live-chat has a consent state %+v after an opt-out on sms", c.Consent)
	}
	if c.Consent.OptedOut("live-chat") || !c.Consent.OptedOut("sms") {
		t.Errorf("consent %+v: want opted out on sms only", c.Consent)
	}
	if len(c.Consent) != 1 {
		t.Errorf("consent %+v: want one channel", c.Consent)
	}
	// The chat message is still the bot's, and a STOP on live-chat is a change of its own.
	csWantBotStatus(t, accID, chat, models.BotPending)
	m2 := csIncoming(t, env.Store, accID, from, "live-chat", "STOP")
	if out := csKeyword(t, env.Store, m2); out == nil || !out.Changed || out.Reply == nil {
		t.Errorf("STOP on live-chat after sms: %+v, want a change and a confirmation", out)
	}
}

// csCampaign creates a live custom-channel campaign on a new list and returns both.
func csCampaign(t testing.TB, accountID, channel string) (*models.Campaign, *models.List) {
	t.Helper()
	ctx := context.Background()
	l, err := env.Store.CreateList(ctx, accountID, fmt.Sprintf("list %s %d", channel, csSeq.Add(1)))
	if err != nil {
		t.Fatal(err)
	}
	name, ch, status, opening, listID := fmt.Sprintf("camp %s %d", channel, csSeq.Add(1)), "custom:"+channel, models.CampaignLive, "Hi {{firstName}}", l.ID
	c, err := env.Store.CreateCampaign(ctx, accountID, models.CampaignInput{Name: &name, Channel: &ch, Status: &status, OpeningMessage: &opening, ListID: &listID})
	if err != nil {
		t.Fatal(err)
	}
	return c, l
}

// csQueue adds the contacts to the list and returns the queued send of each, by contact id.
func csQueue(t testing.TB, accountID, listID string, contactIDs ...string) map[string]string {
	t.Helper()
	return testenv.Queue(t, env.Store, accountID, listID, contactIDs...)
}

func csWantSend(t testing.TB, sendID, status, detail string, followUpsDone bool, what string) {
	t.Helper()
	send, err := env.Store.CampaignSend(context.Background(), sendID)
	if err != nil {
		t.Fatal(err)
	}
	got := ""
	if send.Detail != nil {
		got = *send.Detail
	}
	if send.Status != status || got != detail || send.FollowUpsDone != followUpsDone {
		t.Errorf("%s: send %s/%s followUpsDone %v, want %s/%s %v", what, send.Status, csStr(send.Detail), send.FollowUpsDone, status, detail, followUpsDone)
	}
}

// TestConsentKeywordSuppressesSends: an opt-out suppresses what the campaigns on that channel still
// owe the contact, and nothing else.
func TestConsentKeywordSuppressesSends(t *testing.T) {
	t.Parallel()
	acc := csAccount(t, "Acme")
	accID := acc.Account.ID
	from, other := csFrom("supp"), csFrom("supp-other")
	contactID := csIncoming(t, env.Store, accID, from, "live-chat", "hello").ContactID
	otherID := csIncoming(t, env.Store, accID, other, "sms", "hello").ContactID

	sms1, smsList1 := csCampaign(t, accID, "sms")
	sms2, smsList2 := csCampaign(t, accID, "sms")
	chat, chatList := csCampaign(t, accID, "live-chat")
	s1 := csQueue(t, accID, smsList1.ID, contactID, otherID)
	s2 := csQueue(t, accID, smsList2.ID, contactID)
	sc := csQueue(t, accID, chatList.ID, contactID)
	_, _, _ = sms1, sms2, chat

	m := csIncoming(t, env.Store, accID, from, "sms", "STOP")
	if out := csKeyword(t, env.Store, m); out == nil || !out.Changed {
		t.Fatalf("STOP: %+v", out)
	}
	csWantSend(t, s1[contactID], models.SendSuppressed, models.ReasonOptedOut, true, "first sms campaign")
	csWantSend(t, s2[contactID], models.SendSuppressed, models.ReasonOptedOut, true, "second sms campaign")
	csWantSend(t, sc[contactID], models.SendQueued, "", false, "live-chat campaign")
	csWantSend(t, s1[otherID], models.SendQueued, "", false, "another contact's send")

	// The campaign's counts and listing show it.
	if err := env.Store.CountSends(context.Background(), sms1); err != nil {
		t.Fatal(err)
	}
	if sms1.Sends.Suppressed != 1 || sms1.Sends.Queued != 1 {
		t.Errorf("sms campaign counts %+v, want 1 suppressed, 1 queued", *sms1.Sends)
	}
	views, _, err := env.Store.CampaignSends(context.Background(), accID, sms1.ID, models.SendSuppressed, models.Page{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(views) != 1 {
		t.Errorf("suppressed sends of the sms campaign: %d, want 1", len(views))
	}
}

// TestConsentSetConsent: evidence given by hand is always recorded, an all-channels state replaces
// each channel's own, and the ledger lists every event oldest first.
func TestConsentSetConsent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acc := csAccount(t, "Acme")
	accID := acc.Account.ID
	userID := acc.User.ID
	contactID := csIncoming(t, env.Store, accID, csFrom("set"), "sms", "hello").ContactID
	base := time.Now().UTC().Add(-3 * time.Hour).Truncate(time.Second)

	set := func(in models.ConsentInput) *models.Contact {
		t.Helper()
		if err := in.Normalize("", models.ConsentSourceAPI); err != nil {
			t.Fatal(err)
		}
		c, err := env.Store.SetConsent(ctx, accID, contactID, in)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	set(models.ConsentInput{Channel: "sms", Status: models.ConsentOptedIn, Source: "landing-page form", Text: "I agree to texts", IP: "203.0.113.7", At: base,
		RecordedBy: models.RecordedByUser(userID, acc.User.Email)})
	// The same status again: evidence, recorded.
	c := set(models.ConsentInput{Channel: "sms", Status: models.ConsentOptedIn, Text: "again", At: base.Add(time.Minute)})
	set(models.ConsentInput{Channel: "live-chat", Status: models.ConsentOptedIn, At: base.Add(2 * time.Minute)})
	if n := len(csConsent(t, accID, contactID).Events); n != 3 {
		t.Fatalf("%d events after three SetConsent calls (two the same), want 3", n)
	}
	if st := c.Consent["sms"]; st.Status != models.ConsentOptedIn || st.Source != models.ConsentSourceAPI || !st.At.Equal(base.Add(time.Minute)) {
		t.Errorf("returned consent on sms %+v, want opted_in by api at %v", st, base.Add(time.Minute))
	}

	// Queued sends on both channels, to be stopped by the opt-out everywhere.
	_, smsList := csCampaign(t, accID, "sms")
	_, chatList := csCampaign(t, accID, "live-chat")
	sSMS := csQueue(t, accID, smsList.ID, contactID)[contactID]
	sChat := csQueue(t, accID, chatList.ID, contactID)[contactID]

	c = set(models.ConsentInput{Channel: models.ConsentAllChannels, Status: models.ConsentOptedOut, Source: "phone call", At: base.Add(3 * time.Minute)})
	want := models.ConsentMap{"*": {Status: models.ConsentOptedOut, At: base.Add(3 * time.Minute), Source: "phone call"}}
	if !csConsentEqual(c.Consent, want) {
		t.Errorf("after opting out everywhere: returned %+v, want %+v", c.Consent, want)
	}
	if stored := csContact(t, accID, contactID).Consent; !csConsentEqual(stored, want) {
		t.Errorf("after opting out everywhere: stored %+v, want %+v", stored, want)
	}
	for _, ch := range []string{"sms", "live-chat", "whatsapp"} {
		if !c.Consent.OptedOut(ch) {
			t.Errorf("not opted out on %s after opting out everywhere", ch)
		}
	}
	csWantSend(t, sSMS, models.SendSuppressed, models.ReasonOptedOut, true, "sms send after an opt-out everywhere")
	csWantSend(t, sChat, models.SendSuppressed, models.ReasonOptedOut, true, "live-chat send after an opt-out everywhere")

	// A channel's own state, recorded later, overrides the all-channels one there only.
	c = set(models.ConsentInput{Channel: "sms", Status: models.ConsentOptedIn, At: base.Add(4 * time.Minute)})
	if c.Consent.OptedOut("sms") || !c.Consent.OptedOut("live-chat") || len(c.Consent) != 2 {
		t.Errorf("after opting in on sms: %+v, want sms in, the rest out", c.Consent)
	}

	cc := csConsent(t, accID, contactID)
	if !csConsentEqual(cc.Channels, c.Consent) {
		t.Errorf("ConsentOf channels %+v, want %+v", cc.Channels, c.Consent)
	}
	type ev struct{ channel, status, source, text string }
	var got []ev
	for _, e := range cc.Events {
		got = append(got, ev{e.Channel, e.Status, e.Source, e.Text})
	}
	wantEvents := []ev{
		{"sms", "opted_in", "landing-page form", "I agree to texts"},
		{"sms", "opted_in", "api", "again"},
		{"live-chat", "opted_in", "api", ""},
		{"*", "opted_out", "phone call", ""},
		{"sms", "opted_in", "api", ""},
	}
	if !slices.Equal(got, wantEvents) {
		t.Errorf("ledger:\n got %v\nwant %v", got, wantEvents)
	}
	for i, e := range cc.Events {
		if !e.At.Equal(base.Add(time.Duration(i) * time.Minute)) {
			t.Errorf("event %d at %v, want %v", i, e.At, base.Add(time.Duration(i)*time.Minute))
		}
	}
	if e := cc.Events[0]; csStr(e.IP) != "203.0.113.7" || csStr(e.UserID) != userID || e.MessageID != nil {
		t.Errorf("first event: ip %s user %s message %s; want 203.0.113.7, %s, none", csStr(e.IP), csStr(e.UserID), csStr(e.MessageID), userID)
	}
	// Who recorded each: the user with their email as it was then; no one for the others.
	if by := cc.Events[0].RecordedBy; by == nil || *by != (models.ConsentRecorder{UserID: userID, Email: acc.User.Email}) {
		t.Errorf("first event recorded by %+v, want the user %s <%s>", by, userID, acc.User.Email)
	}
	for i, e := range cc.Events[1:] {
		if e.RecordedBy != nil {
			t.Errorf("event %d recorded by %+v, want no one", i+1, e.RecordedBy)
		}
	}

	// Another account cannot read or change the contact.
	other := csAccount(t, "Other")
	if _, err := env.Store.ConsentOf(ctx, other.Account.ID, contactID); models.ErrorCode(err) != models.CodeNotFound {
		t.Errorf("ConsentOf from another account: %v, want NOT_FOUND", err)
	}
	in := models.ConsentInput{Status: models.ConsentOptedIn}
	_ = in.Normalize("", models.ConsentSourceAPI)
	if _, err := env.Store.SetConsent(ctx, other.Account.ID, contactID, in); models.ErrorCode(err) != models.CodeNotFound {
		t.Errorf("SetConsent from another account: %v, want NOT_FOUND", err)
	}
	if n := len(csConsent(t, accID, contactID).Events); n != 5 {
		t.Errorf("%d events after another account's attempt, want 5", n)
	}
}

func csConsentEqual(a, b models.ConsentMap) bool {
	if len(a) != len(b) {
		return false
	}
	for k, va := range a {
		vb, ok := b[k]
		if !ok || va.Status != vb.Status || va.Source != vb.Source || !va.At.Equal(vb.At) {
			return false
		}
	}
	return true
}

// TestConsentInputNormalize: every invalid field is a VALIDATION_ERROR naming it, with the prefix;
// a bare input gets the defaults.
func TestConsentInputNormalize(t *testing.T) {
	t.Parallel()
	bad := []struct {
		in   models.ConsentInput
		want string // the error message's start
	}{
		{models.ConsentInput{Status: "maybe"}, "consent.status must be opted_in or opted_out"},
		{models.ConsentInput{Status: "OPTED_OUT"}, "consent.status must be opted_in or opted_out"},
		{models.ConsentInput{IP: "300.1.2.3"}, "consent.ip must be an IPv4 or IPv6 address"},
		{models.ConsentInput{IP: "example.com"}, "consent.ip must be an IPv4 or IPv6 address"},
		{models.ConsentInput{At: time.Now().Add(time.Hour)}, "consent.at must not be in the future"},
		{models.ConsentInput{Source: strings.Repeat("s", 101)}, "consent.source must be at most 100 characters"},
		{models.ConsentInput{Text: strings.Repeat("t", 2001)}, "consent.text must be at most 2000 characters"},
		{models.ConsentInput{Text: "bad\x00text"}, "consent.text must be valid UTF-8"},
		{models.ConsentInput{Channel: strings.Repeat("c", 65)}, "consent.channel must be at most 64 characters"},
	}
	for _, tc := range bad {
		in := tc.in
		err := in.Normalize("consent.", "form")
		if models.ErrorCode(err) != models.CodeValidation || !strings.HasPrefix(models.ErrorMessage(err), tc.want) {
			t.Errorf("Normalize(%+v) = %v, want VALIDATION_ERROR %q", tc.in, err, tc.want)
		}
	}

	// At the limits: valid.
	ok := models.ConsentInput{Source: strings.Repeat("é", 100), Text: strings.Repeat("t", 2000), At: time.Now().Add(30 * time.Second)}
	if err := ok.Normalize("consent.", "form"); err != nil {
		t.Errorf("Normalize at the limits: %v", err)
	}

	before := time.Now()
	in := models.ConsentInput{Source: "  ", IP: " 2001:DB8::1 "}
	if err := in.Normalize("", "inbox"); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	if in.Channel != models.ConsentAllChannels || in.Status != models.ConsentOptedIn || in.Source != "inbox" || in.IP != "2001:db8::1" {
		t.Errorf("defaults: %+v, want channel *, opted_in, source inbox, ip 2001:db8::1", in)
	}
	if in.At.Before(before.Add(-time.Millisecond)) || in.At.After(after) || in.At.Location() != time.UTC {
		t.Errorf("default at %v (%v), want now in UTC, between %v and %v", in.At, in.At.Location(), before, after)
	}

	at := time.Date(2024, 5, 1, 12, 0, 0, 0, time.FixedZone("X", -5*3600))
	in = models.ConsentInput{Channel: " sms ", Status: " opted_out ", Source: " kiosk ", At: at}
	if err := in.Normalize("", "inbox"); err != nil {
		t.Fatal(err)
	}
	if in.Channel != "sms" || in.Status != models.ConsentOptedOut || in.Source != "kiosk" || !in.At.Equal(at) || in.At.Location() != time.UTC {
		t.Errorf("normalized %+v, want sms, opted_out, kiosk, %v in UTC", in, at.UTC())
	}
}

// TestComplianceSettingsDefaults: an account that saved nothing has English texts naming it, the
// operator's quiet hours and UTC.
func TestComplianceSettingsDefaults(t *testing.T) {
	t.Parallel()
	acc := csAccount(t, "Acme Dental")
	got := csSettings(t, env.Store, acc.Account.ID)
	want := models.ComplianceSettings{
		OptOutKeywords:     []string{},
		OptInKeywords:      []string{},
		OptOutConfirmation: "You have opted out of messages from Acme Dental on this channel and will receive no more. Reply START to opt back in.",
		OptInConfirmation:  "You have opted in to messages from Acme Dental again. Reply STOP to opt out, HELP for help.",
		HelpText:           "Acme Dental: reply to this message and our team will answer. Reply STOP to opt out.",
		QuietHours:         &models.QuietHours{Start: "21:00", End: "08:00"},
		TimeZone:           "UTC",
	}
	csWantSettings(t, "defaults", got, &want)

	// An account without a name is "us".
	unnamed := csSettings(t, env.Store, csAccount(t, "  ").Account.ID)
	if want := "You have opted out of messages from us on this channel and will receive no more. Reply START to opt back in."; unnamed.OptOutConfirmation != want {
		t.Errorf("unnamed account's confirmation %q, want %q", unnamed.OptOutConfirmation, want)
	}
	if want := "Reply to this message and our team will answer. Reply STOP to opt out."; unnamed.HelpText != want {
		t.Errorf("unnamed account's help %q, want %q", unnamed.HelpText, want)
	}

	_, err := env.Store.ComplianceSettings(context.Background(), "acc_doesnotexist")
	if models.ErrorCode(err) != models.CodeNotFound {
		t.Errorf("settings of an unknown account: %v, want NOT_FOUND", err)
	}
	_, err = env.Store.UpdateComplianceSettings(context.Background(), "acc_doesnotexist", models.ComplianceInput{HelpText: csPtr("x")})
	if models.ErrorCode(err) != models.CodeNotFound {
		t.Errorf("update of an unknown account: %v, want NOT_FOUND", err)
	}
}

func csWantSettings(t testing.TB, what string, got, want *models.ComplianceSettings) {
	t.Helper()
	gq, wq := "none", "none"
	if got.QuietHours != nil {
		gq = got.QuietHours.String()
	}
	if want.QuietHours != nil {
		wq = want.QuietHours.String()
	}
	if !slices.Equal(got.OptOutKeywords, want.OptOutKeywords) || !slices.Equal(got.OptInKeywords, want.OptInKeywords) ||
		got.OptOutKeywords == nil || got.OptInKeywords == nil ||
		got.OptOutConfirmation != want.OptOutConfirmation || got.OptInConfirmation != want.OptInConfirmation ||
		got.HelpText != want.HelpText || gq != wq || got.TimeZone != want.TimeZone {
		t.Errorf("%s:\n got %+v (quiet %s)\nwant %+v (quiet %s)", what, *got, gq, *want, wq)
	}
}

// TestComplianceSettingsUpdate: partial updates keep the other fields; quiet hours can be switched
// off, which is not the same as the operator's default.
func TestComplianceSettingsUpdate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acc := csAccount(t, "Acme")
	accID := acc.Account.ID
	want := *csSettings(t, env.Store, accID)

	update := func(what string, in models.ComplianceInput) {
		t.Helper()
		got, err := env.Store.UpdateComplianceSettings(ctx, accID, in)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		csWantSettings(t, what+" (returned)", got, &want)
		csWantSettings(t, what+" (read)", csSettings(t, env.Store, accID), &want)
	}

	update("nothing", models.ComplianceInput{})
	want.HelpText = "Call 555-0100."
	update("help text", models.ComplianceInput{HelpText: csPtr("  Call 555-0100.  ")})
	want.OptOutKeywords = []string{"basta", "arrêt"}
	update("opt-out keywords", models.ComplianceInput{OptOutKeywords: &[]string{"Basta", "ARRÊT", "basta"}})
	want.OptOutConfirmation, want.OptInConfirmation = "Bye.", "Welcome back."
	update("confirmations", models.ComplianceInput{OptOutConfirmation: csPtr("Bye."), OptInConfirmation: csPtr("Welcome back.")})
	want.TimeZone = "America/New_York"
	update("time zone", models.ComplianceInput{TimeZone: csPtr("America/New_York")})
	want.QuietHours = &models.QuietHours{Start: "20:00", End: "09:30"}
	update("quiet hours", models.ComplianceInput{SetQuietHours: true, QuietHours: &models.QuietHours{Start: "20:00", End: "09:30"}})
	want.QuietHours = nil
	update("quiet hours off", models.ComplianceInput{SetQuietHours: true})
	want.OptInKeywords = []string{"alta"}
	update("opt-in keywords", models.ComplianceInput{OptInKeywords: &[]string{"alta"}})
	want.OptOutKeywords = []string{}
	update("no opt-out keywords", models.ComplianceInput{OptOutKeywords: &[]string{}})
	// A 320-character text is allowed.
	want.HelpText = strings.Repeat("h", models.MaxComplianceText)
	update("longest help text", models.ComplianceInput{HelpText: csPtr(strings.Repeat("h", models.MaxComplianceText))})

	// The operator's default does not touch an account that chose its own (here: none).
	s := csStore(t)
	s.SetDefaultQuietHours(&models.QuietHours{Start: "22:00", End: "07:00"})
	if q := csSettings(t, s, accID).QuietHours; q != nil {
		t.Errorf("an account with quiet hours off gets the operator's default %v", q)
	}
}

// TestComplianceSettingsOperatorDefault: SetDefaultQuietHours sets the quiet hours of the accounts
// that did not choose their own; nil means none.
func TestComplianceSettingsOperatorDefault(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	plain := csAccount(t, "Plain")
	own := csAccount(t, "Own")
	// Another setting saved, quiet hours not chosen: still the operator's.
	saved := csAccount(t, "Saved")
	if _, err := env.Store.UpdateComplianceSettings(ctx, own.Account.ID, models.ComplianceInput{SetQuietHours: true, QuietHours: &models.QuietHours{Start: "23:00", End: "06:00"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Store.UpdateComplianceSettings(ctx, saved.Account.ID, models.ComplianceInput{HelpText: csPtr("help")}); err != nil {
		t.Fatal(err)
	}

	s := csStore(t)
	quiet := func(id string) string {
		if q := csSettings(t, s, id).QuietHours; q != nil {
			return q.String()
		}
		return "none"
	}
	for _, tc := range []struct {
		set         *models.QuietHours
		plain, save string
	}{
		{&models.QuietHours{Start: "20:00", End: "08:00"}, "20:00-08:00", "20:00-08:00"},
		{nil, "none", "none"},
		{&models.QuietHours{Start: "21:00", End: "08:00"}, "21:00-08:00", "21:00-08:00"},
	} {
		s.SetDefaultQuietHours(tc.set)
		if got := quiet(plain.Account.ID); got != tc.plain {
			t.Errorf("default %v: an account without settings has %s, want %s", tc.set, got, tc.plain)
		}
		if got := quiet(saved.Account.ID); got != tc.save {
			t.Errorf("default %v: an account with other settings has %s, want %s", tc.set, got, tc.save)
		}
		if got := quiet(own.Account.ID); got != "23:00-06:00" {
			t.Errorf("default %v: an account with its own quiet hours has %s, want 23:00-06:00", tc.set, got)
		}
	}
	// The package's store is untouched.
	if q := csSettings(t, env.Store, plain.Account.ID).QuietHours; q == nil || q.String() != "21:00-08:00" {
		t.Errorf("env.Store's default changed: %v", q)
	}
}

// TestComplianceSettingsInvalid: every invalid field is a VALIDATION_ERROR naming it, and nothing of
// the update is stored, not even its valid fields.
func TestComplianceSettingsInvalid(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acc := csAccount(t, "Acme")
	accID := acc.Account.ID
	if _, err := env.Store.UpdateComplianceSettings(ctx, accID, models.ComplianceInput{HelpText: csPtr("original help")}); err != nil {
		t.Fatal(err)
	}
	before := csSettings(t, env.Store, accID)

	valid := csPtr("a valid new help text")
	for _, tc := range []struct {
		name string
		in   models.ComplianceInput
		want string // the message's start
	}{
		{"keyword with a space", models.ComplianceInput{OptOutKeywords: &[]string{"ok", "st op"}}, `optOutKeywords[1] "st op" must be 1-20 letters`},
		{"21 letters", models.ComplianceInput{OptInKeywords: &[]string{strings.Repeat("a", 21)}}, `optInKeywords[0] "` + strings.Repeat("a", 21) + `" must be 1-20 letters; it has 21`},
		{"keyword with a digit", models.ComplianceInput{OptOutKeywords: &[]string{"stop2"}}, `optOutKeywords[0] "stop2" must be 1-20 letters`},
		{"51 keywords", models.ComplianceInput{OptOutKeywords: csPtr(slices.Repeat([]string{"a"}, 51))}, "optOutKeywords must hold at most 50 keywords"},
		{"321 characters", models.ComplianceInput{OptOutConfirmation: csPtr(strings.Repeat("x", 321))}, "optOutConfirmation must be at most 320 characters"},
		{"empty confirmation", models.ComplianceInput{OptInConfirmation: csPtr("   ")}, "optInConfirmation must not be empty"},
		{"empty help", models.ComplianceInput{HelpText: csPtr("")}, "helpText must not be empty"},
		{"quiet hours 25:00", models.ComplianceInput{SetQuietHours: true, QuietHours: &models.QuietHours{Start: "25:00", End: "08:00"}}, "quietHours: quiet hours start \"25:00\""},
		{"quiet hours equal", models.ComplianceInput{SetQuietHours: true, QuietHours: &models.QuietHours{Start: "08:00", End: "08:00"}}, "quietHours: "},
		{"Mars/Base", models.ComplianceInput{TimeZone: csPtr("Mars/Base")}, "timeZone must be an IANA time zone"},
		{"Local", models.ComplianceInput{TimeZone: csPtr("Local")}, "timeZone must be an IANA time zone"},
		{"empty zone", models.ComplianceInput{TimeZone: csPtr("")}, "timeZone must be an IANA time zone"},
	} {
		in := tc.in
		if in.HelpText == nil {
			in.HelpText = valid // a valid field beside the invalid one is not stored either
		}
		got, err := env.Store.UpdateComplianceSettings(ctx, accID, in)
		if models.ErrorCode(err) != models.CodeValidation || !strings.HasPrefix(models.ErrorMessage(err), tc.want) {
			t.Errorf("%s: %v, %v; want VALIDATION_ERROR %q", tc.name, got, err, tc.want)
		}
		csWantSettings(t, tc.name+": stored settings", csSettings(t, env.Store, accID), before)
	}
}

// TestConsentKeywordConcurrent: opt-outs of one contact arriving together record one event and send
// one confirmation; one message handled by several callers at once is acted on once.
func TestConsentKeywordConcurrent(t *testing.T) {
	t.Parallel()
	acc := csAccount(t, "Acme")
	accID := acc.Account.ID

	run := func(msgs []*models.Message) []*models.KeywordOutcome {
		outs := make([]*models.KeywordOutcome, len(msgs))
		errs := make([]error, len(msgs))
		start := make(chan struct{})
		done := make(chan int)
		for i, m := range msgs {
			go func() {
				<-start
				cp := *m
				outs[i], errs[i] = env.Store.HandleKeyword(context.Background(), &cp)
				done <- i
			}()
		}
		close(start)
		for range msgs {
			<-done
		}
		for i, err := range errs {
			if err != nil {
				t.Fatalf("HandleKeyword %d: %v", i, err)
			}
		}
		return outs
	}

	// Five different STOP messages of one contact.
	from := csFrom("conc")
	var msgs []*models.Message
	for i := range 5 {
		msgs = append(msgs, csIncoming(t, env.Store, accID, from, "sms", []string{"STOP", "stop", "Stop!", "END", "quit"}[i]))
	}
	outs := run(msgs)
	changed, replies := 0, 0
	for _, o := range outs {
		if o == nil || o.Kind != models.KeywordOptOut {
			t.Fatalf("outcome %+v, want opt-out", o)
		}
		if o.Changed {
			changed++
		}
		if o.Reply != nil {
			replies++
		}
	}
	if changed != 1 || replies != 1 {
		t.Errorf("five concurrent STOPs: %d changes, %d replies; want 1 and 1", changed, replies)
	}
	if n := len(csConsent(t, accID, msgs[0].ContactID).Events); n != 1 {
		t.Errorf("five concurrent STOPs: %d events, want 1", n)
	}
	for _, m := range msgs {
		csWantBotStatus(t, accID, m, models.BotKeyword)
	}

	// One START handled by five callers at once: one event, one reply, which each of them returns.
	start := csIncoming(t, env.Store, accID, csFrom("conc-one"), "sms", "START")
	outs = run([]*models.Message{start, start, start, start, start})
	changed = 0
	var replyID string
	for _, o := range outs {
		if o == nil || o.Kind != models.KeywordOptIn || o.Reply == nil {
			t.Fatalf("outcome %+v, want opt-in with a reply", o)
		}
		if o.Changed {
			changed++
		}
		if replyID == "" {
			replyID = o.Reply.ID
		} else if o.Reply.ID != replyID {
			t.Errorf("callers got different replies: %s, %s", replyID, o.Reply.ID)
		}
	}
	if changed != 1 {
		t.Errorf("one START handled five times: %d changes, want 1", changed)
	}
	if n := len(csConsent(t, accID, start.ContactID).Events); n != 1 {
		t.Errorf("one START handled five times: %d events, want 1", n)
	}
}

// TestConsentOptOutByBot: the bot's reading of an opt-out request has a keyword's effect, with
// source bot.
func TestConsentOptOutByBot(t *testing.T) {
	t.Parallel()
	acc := csAccount(t, "Acme Dental")
	accID := acc.Account.ID
	m := csIncoming(t, env.Store, accID, csFrom("bot"), "sms", "please stop texting me")
	out, err := env.Store.OptOutByBot(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	if out == nil || out.Kind != models.KeywordOptOut || !out.Changed {
		t.Fatalf("OptOutByBot: %+v", out)
	}
	csWantReply(t, out.Reply, m, csSettings(t, env.Store, accID).OptOutConfirmation)
	csWantBotStatus(t, accID, m, models.BotKeyword)
	cc := csConsent(t, accID, m.ContactID)
	if len(cc.Events) != 1 {
		t.Fatalf("%d events, want 1", len(cc.Events))
	}
	csWantEvent(t, cc.Events[0], "sms", models.ConsentOptedOut, models.ConsentSourceBot, "please stop texting me", m.ID, m.CreatedAt)
	if st := cc.Channels["sms"]; st.Source != models.ConsentSourceBot {
		t.Errorf("consent source %q, want bot", st.Source)
	}
}

// TestConsentStateAtMatchesLedger: the time a consent state shows is the time of the ledger event that
// set it, to the stored precision (microseconds), whatever precision the caller gave.
func TestConsentStateAtMatchesLedger(t *testing.T) {
	t.Parallel()
	acc := csAccount(t, "Acme")
	accID := acc.Account.ID
	contactID := csIncoming(t, env.Store, accID, csFrom("prec"), "sms", "hi").ContactID
	// An RFC 3339 time with nanoseconds, as a client may send it.
	at := time.Now().UTC().Add(-time.Hour).Truncate(time.Second).Add(123456789 * time.Nanosecond)
	in := models.ConsentInput{Channel: "sms", Status: models.ConsentOptedOut, At: at}
	if err := in.Normalize("", models.ConsentSourceAPI); err != nil {
		t.Fatal(err)
	}
	returned, err := env.Store.SetConsent(context.Background(), accID, contactID, in)
	if err != nil {
		t.Fatal(err)
	}
	cc := csConsent(t, accID, contactID)
	event := cc.Events[0].At
	if want := at.Truncate(time.Microsecond); !event.Equal(want) {
		t.Fatalf("ledger event at %v, want %v", event, want)
	}
	if got := returned.Consent["sms"].At; !got.Equal(event) {
		t.Errorf("SetConsent returned the state at %v, the ledger has %v", got, event)
	}
	if got := cc.Channels["sms"].At; !got.Equal(event) {
		t.Errorf("the stored state is at %v, the ledger has %v", got, event)
	}
}

// TestConsentKeywordAccountWordsFinalSigma: an account's Greek keyword matches however the contact
// cases it. Lower-casing "Σ" gives "σ", never the final "ς", so a word ending in sigma must be
// compared case-folded ("τελος" and "ΤΕΛΟΣ" are one word).
func TestConsentKeywordAccountWordsFinalSigma(t *testing.T) {
	t.Parallel()
	acc := csAccount(t, "Acme")
	accID := acc.Account.ID
	for _, tc := range []struct{ keyword, body string }{
		{"τελος", "ΤΕΛΟΣ"}, // saved in lower case, typed in capitals
		{"ΤΕΛΟΣ", "τελος"}, // saved in capitals, typed in lower case
		{"τελος", "Τελος"},
	} {
		words := []string{tc.keyword}
		if _, err := env.Store.UpdateComplianceSettings(context.Background(), accID, models.ComplianceInput{OptOutKeywords: &words}); err != nil {
			t.Fatal(err)
		}
		m := csIncoming(t, env.Store, accID, csFrom("sigma"), "sms", tc.body)
		out := csKeyword(t, env.Store, m)
		if out == nil || out.Kind != models.KeywordOptOut || !out.Changed {
			t.Errorf("account keyword %q, message %q: outcome %+v, want an opt-out", tc.keyword, tc.body, out)
		}
	}
}

// Back-dated evidence (a form signed last year, entered after today's STOP) goes into the ledger and
// changes no state: the state is the latest change by its time, so it never undoes a newer opt-out.
func TestConsentBackDatedEvidenceKeepsANewerOptOut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acc := csAccount(t, "Acme")
	stop := csIncoming(t, env.Store, acc.Account.ID, csFrom("backdated"), "sms", "STOP")
	csKeyword(t, env.Store, stop)
	for _, channel := range []string{"sms", models.ConsentAllChannels} {
		in := models.ConsentInput{Channel: channel, Status: models.ConsentOptedIn, Source: "paper form", Text: "signed", At: time.Now().AddDate(-1, 0, 0)}
		if err := in.Normalize("", models.ConsentSourceAPI); err != nil {
			t.Fatal(err)
		}
		c, err := env.Store.SetConsent(ctx, acc.Account.ID, stop.ContactID, in)
		if err != nil {
			t.Fatal(err)
		}
		if !c.Consent.OptedOut("sms") {
			t.Fatalf("back-dated consent for %q undid the newer STOP: %v", channel, c.Consent)
		}
	}
	consent := csConsent(t, acc.Account.ID, stop.ContactID)
	if len(consent.Events) != 3 || !consent.Channels.OptedOut("sms") {
		t.Fatalf("ledger %d events (want the STOP and both forms), state %v", len(consent.Events), consent.Channels)
	}
	// A newer opt-in does change it.
	in := models.ConsentInput{Channel: "sms", Status: models.ConsentOptedIn, Text: "asked to be texted again"}
	if err := in.Normalize("", models.ConsentSourceAPI); err != nil {
		t.Fatal(err)
	}
	if c, err := env.Store.SetConsent(ctx, acc.Account.ID, stop.ContactID, in); err != nil || c.Consent.OptedOut("sms") {
		t.Fatalf("a newer opt-in: %v, %v", c, err)
	}
}

// TestConsentRecordedByAPIKey: an API change keeps the last 4 characters of the request's key and
// nothing more, in the ledger and in the export's label.
func TestConsentRecordedByAPIKey(t *testing.T) {
	t.Parallel()
	acc := csAccount(t, "Keyed")
	contactID := csIncoming(t, env.Store, acc.Account.ID, csFrom("key"), "sms", "hello").ContactID
	in := models.ConsentInput{Channel: "sms", Status: models.ConsentOptedOut, Text: "asked by email", RecordedBy: models.RecordedByAPIKey(acc.APIKey)}
	if err := in.Normalize("", models.ConsentSourceAPI); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Store.SetConsent(context.Background(), acc.Account.ID, contactID, in); err != nil {
		t.Fatal(err)
	}
	last4 := acc.APIKey[len(acc.APIKey)-4:]
	e := csConsent(t, acc.Account.ID, contactID).Events[0]
	if e.RecordedBy == nil || *e.RecordedBy != (models.ConsentRecorder{APIKey: last4}) || csStr(e.APIKeyLast4) != last4 || e.UserID != nil {
		t.Fatalf("recorded by %+v (stored %s), want the key's last 4 %q only", e.RecordedBy, csStr(e.APIKeyLast4), last4)
	}
	if got := e.RecordedBy.Label(); got != "api_key:"+last4 {
		t.Errorf("label %q, want api_key:%s", got, last4)
	}
	if models.RecordedByAPIKey("") != nil {
		t.Errorf("no key names someone")
	}
}
