package models_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"funnelchat/models"
)

// doorDecide asks the door, failing the test on an error.
func doorDecide(t testing.TB, out models.Outgoing) models.Decision {
	t.Helper()
	d, err := env.Store.Decide(context.Background(), out)
	if err != nil {
		t.Fatalf("Decide(%s on %s): %v", out.Purpose, out.Channel, err)
	}
	return d
}

func doorWant(t testing.TB, what string, d models.Decision, verdict models.Verdict, notBefore time.Time, code string) {
	t.Helper()
	if d.Verdict != verdict || !d.NotBefore.Equal(notBefore) || d.Code() != code {
		t.Errorf("%s: %v not before %v code %q (reason %q); want %v not before %v code %q",
			what, d.Verdict, d.NotBefore, d.Code(), d.Reason, verdict, notBefore, code)
	}
}

// etcZone is the IANA name of the fixed zone offset hours east of UTC (Etc/GMT-5 is UTC+5).
func etcZone(offset int) string {
	switch {
	case offset > 0:
		return fmt.Sprintf("Etc/GMT-%d", offset)
	case offset < 0:
		return fmt.Sprintf("Etc/GMT+%d", -offset)
	}
	return "Etc/GMT"
}

// zoneAtLocalHour returns a fixed zone in which the local time now is hour:MM (MM being the current
// minute), so that a test of quiet hours needs no waiting.
func zoneAtLocalHour(t testing.TB, hour int) (string, *time.Location) {
	t.Helper()
	offset := ((hour-time.Now().UTC().Hour())%24 + 24) % 24
	if offset > 14 {
		offset -= 24
	}
	name := etcZone(offset)
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return name, loc
}

// localClock returns today's (in loc, as of now) instant at hour:00.
func localClock(loc *time.Location, hour int) time.Time {
	l := time.Now().In(loc)
	return time.Date(l.Year(), l.Month(), l.Day(), hour, 0, 0, 0, loc)
}

func doorSettings(t testing.TB, accountID string, in models.ComplianceInput) {
	t.Helper()
	if _, err := env.Store.UpdateComplianceSettings(context.Background(), accountID, in); err != nil {
		t.Fatal(err)
	}
}

// TestDoorConsentOptedOut: nothing but a keyword's confirmation goes to a contact who opted out on
// the channel; the contact's other channels are open.
func TestDoorConsentOptedOut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acc := csAccount(t, "Acme")
	accID := acc.Account.ID
	from := csFrom("door")
	csIncoming(t, env.Store, accID, from, "live-chat", "hi on chat")
	hi := csIncoming(t, env.Store, accID, from, "sms", "hi on sms")
	contactID := hi.ContactID
	// A team reply written before the opt-out, delivered after it.
	before, err := env.Store.HumanReply(ctx, accID, contactID, "", "written before", "sms")
	if err != nil {
		t.Fatal(err)
	}

	stop := csIncoming(t, env.Store, accID, from, "sms", "STOP")
	kw := csKeyword(t, env.Store, stop)
	if kw == nil || kw.Reply == nil {
		t.Fatalf("STOP: %+v", kw)
	}

	sms := models.Route{Channel: "sms", Transport: models.TransportCustom, ToID: from}
	chat := models.Route{Channel: "live-chat", Transport: models.TransportCustom, ToID: from}
	outgoing := func(purpose string, r models.Route) models.Outgoing {
		return models.Outgoing{Purpose: purpose, AccountID: accID, ContactID: contactID, Route: r}
	}
	for _, purpose := range []string{models.PurposeTeamReply, models.PurposeBotReply, models.PurposeCampaign, models.PurposeAPISend} {
		d := doorDecide(t, outgoing(purpose, sms))
		doorWant(t, purpose+" on sms", d, models.DoNotSend, time.Time{}, models.ReasonOptedOut)
		if !strings.HasPrefix(d.Reason, "OPTED_OUT: the contact opted out on sms on ") || !strings.HasSuffix(d.Reason, "(keyword)") {
			t.Errorf("%s: reason %q", purpose, d.Reason)
		}
		if d.Allowed() {
			t.Errorf("%s: allowed", purpose)
		}
		// Delivered later, the same.
		o := outgoing(purpose, sms)
		o.Delivery = true
		doorWant(t, purpose+" delivery on sms", doorDecide(t, o), models.DoNotSend, time.Time{}, models.ReasonOptedOut)
	}
	doorWant(t, "compliance on sms", doorDecide(t, outgoing(models.PurposeCompliance, sms)), models.SendNow, time.Time{}, "")
	doorWant(t, "team reply on live-chat", doorDecide(t, outgoing(models.PurposeTeamReply, chat)), models.SendNow, time.Time{}, "")
	doorWant(t, "bot reply on live-chat", doorDecide(t, outgoing(models.PurposeBotReply, chat)), models.SendNow, time.Time{}, "")

	// Stored messages about to be delivered: the confirmation goes, the earlier reply does not.
	d, err := env.Store.DecideAttempt(ctx, kw.Reply, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	doorWant(t, "delivery of the STOP confirmation", d, models.SendNow, time.Time{}, "")
	d, err = env.Store.DecideAttempt(ctx, before, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	doorWant(t, "delivery of a reply written before the opt-out", d, models.DoNotSend, time.Time{}, models.ReasonOptedOut)

	// The inbox's plan, HumanReply and SendCustom refuse it and store nothing.
	c := csContact(t, accID, contactID)
	plan, err := env.Store.PlanTeamReply(ctx, c, "sms")
	if err != nil {
		t.Fatal(err)
	}
	doorWant(t, "PlanTeamReply on sms", plan.Decision, models.DoNotSend, time.Time{}, models.ReasonOptedOut)
	if _, err := env.Store.SetBotActive(ctx, accID, contactID, true); err != nil { // HumanReply above paused the bot
		t.Fatal(err)
	}
	count := func() int {
		msgs, _, err := env.Store.ContactMessages(ctx, accID, contactID, models.Page{Limit: models.MaxPageLimit})
		if err != nil {
			t.Fatal(err)
		}
		return len(msgs)
	}
	n := count()
	// Without a channel the reply goes where the contact last wrote: sms, where it opted out.
	for _, ch := range []string{"", "sms"} {
		m, err := env.Store.HumanReply(ctx, accID, contactID, "", "are you there?", ch)
		if models.ErrorCode(err) != models.CodeOptedOut || m != nil {
			t.Errorf("HumanReply on %q: %v, %v; want OPTED_OUT", ch, m, err)
		}
	}
	in := models.CustomSendInput{FromID: from, Channel: "sms", Body: "promo"}
	if err := in.Validate(); err != nil {
		t.Fatal(err)
	}
	if m, _, err := env.Store.SendCustom(ctx, accID, in); models.ErrorCode(err) != models.CodeOptedOut {
		t.Errorf("SendCustom on sms: %v, %v; want OPTED_OUT", m, err)
	}
	if got := count(); got != n {
		t.Errorf("refused sends stored %d messages", got-n)
	}
	if csContact(t, accID, contactID).BotPaused {
		t.Error("a refused HumanReply paused the bot")
	}
	// live-chat is open.
	m, err := env.Store.HumanReply(ctx, accID, contactID, "", "hello on chat", "live-chat")
	if err != nil || m.Status != models.StatusPending || m.Channel != "live-chat" {
		t.Errorf("HumanReply on live-chat: %+v, %v; want pending on live-chat", m, err)
	}
}

// TestDoorQuietHours: a campaign message inside the contact's quiet hours is sent later, at the
// window's end; nothing else is deferred. Zones are chosen so that now is inside (or outside) the
// window, so the test never waits.
func TestDoorQuietHours(t *testing.T) {
	t.Parallel()
	acc := csAccount(t, "Acme")
	accID := acc.Account.ID
	from := csFrom("quiet")
	contactID := csIncoming(t, env.Store, accID, from, "promo", "hi").ContactID
	route := models.Route{Channel: "promo", Transport: models.TransportCustom, ToID: from}
	outgoing := func(purpose string) models.Outgoing {
		return models.Outgoing{Purpose: purpose, AccountID: accID, ContactID: contactID, Route: route}
	}

	// The account's zone puts now at 02:xx, inside the default 21:00-08:00.
	night, nightLoc := zoneAtLocalHour(t, 2)
	doorSettings(t, accID, models.ComplianceInput{TimeZone: &night})
	d := doorDecide(t, outgoing(models.PurposeCampaign))
	doorWant(t, "campaign at 02:00 in "+night, d, models.SendLater, localClock(nightLoc, 8), "")
	if d.Allowed() || d.Reason != "" {
		t.Errorf("a deferred message: allowed %v, reason %q", d.Allowed(), d.Reason)
	}
	delivery := outgoing(models.PurposeCampaign)
	delivery.Delivery = true
	doorWant(t, "campaign delivery at 02:00", doorDecide(t, delivery), models.SendNow, time.Time{}, "")
	for _, purpose := range []string{models.PurposeBotReply, models.PurposeTeamReply, models.PurposeCompliance, models.PurposeAPISend} {
		doorWant(t, purpose+" at 02:00", doorDecide(t, outgoing(purpose)), models.SendNow, time.Time{}, "")
	}
	// A bot reply to a message just received is never deferred.
	bot := outgoing(models.PurposeBotReply)
	bot.RepliesTo = csIncoming(t, env.Store, accID, from, "promo", "what's the price?")
	doorWant(t, "bot reply at 02:00", doorDecide(t, bot), models.SendNow, time.Time{}, "")

	// An explicit time of 14:00 local is outside.
	at := outgoing(models.PurposeCampaign)
	at.At = localClock(nightLoc, 14)
	doorWant(t, "campaign at 14:00 local", doorDecide(t, at), models.SendNow, time.Time{}, "")
	at.At = localClock(nightLoc, 21).Add(-time.Minute)
	doorWant(t, "campaign at 20:59 local", doorDecide(t, at), models.SendNow, time.Time{}, "")
	at.At = localClock(nightLoc, 21)
	doorWant(t, "campaign at 21:00 local", doorDecide(t, at), models.SendLater, localClock(nightLoc, 8).Add(24*time.Hour), "")

	// Quiet hours off: sent now, even at night.
	doorSettings(t, accID, models.ComplianceInput{SetQuietHours: true})
	doorWant(t, "campaign at 02:00 without quiet hours", doorDecide(t, outgoing(models.PurposeCampaign)), models.SendNow, time.Time{}, "")
	doorSettings(t, accID, models.ComplianceInput{SetQuietHours: true, QuietHours: &models.DefaultQuietHours})

	// The account's zone at 14:xx: outside.
	day, dayLoc := zoneAtLocalHour(t, 14)
	doorSettings(t, accID, models.ComplianceInput{TimeZone: &day})
	doorWant(t, "campaign at 14:00 in "+day, doorDecide(t, outgoing(models.PurposeCampaign)), models.SendNow, time.Time{}, "")
	_ = dayLoc

	// The contact's own zone beats the account's.
	c := csContact(t, accID, contactID)
	c.TimeZone = &night
	own := outgoing(models.PurposeCampaign)
	own.Contact = c
	doorWant(t, "campaign to a contact at 02:00 in its own zone", doorDecide(t, own), models.SendLater, localClock(nightLoc, 8), "")
}

// TestDoorQuietHoursAccountWindow: the account's own window, set around the current time, defers a
// campaign message to the window's end.
func TestDoorQuietHoursAccountWindow(t *testing.T) {
	t.Parallel()
	acc := csAccount(t, "Acme")
	accID := acc.Account.ID
	from := csFrom("window")
	contactID := csIncoming(t, env.Store, accID, from, "promo", "hi").ContactID
	out := models.Outgoing{Purpose: models.PurposeCampaign, AccountID: accID, ContactID: contactID,
		Route: models.Route{Channel: "promo", Transport: models.TransportCustom, ToID: from}}
	for range 2 { // once more if the hour turned meanwhile
		now := time.Now().UTC()
		h := now.Hour()
		q := &models.QuietHours{Start: fmt.Sprintf("%02d:00", (h+23)%24), End: fmt.Sprintf("%02d:00", (h+2)%24)}
		doorSettings(t, accID, models.ComplianceInput{SetQuietHours: true, QuietHours: q, TimeZone: csPtr("UTC")})
		d := doorDecide(t, out)
		if time.Now().UTC().Hour() != h {
			continue
		}
		doorWant(t, "campaign inside "+q.String()+" UTC", d, models.SendLater, now.Truncate(time.Hour).Add(2*time.Hour), "")

		// A window that ended an hour ago: now.
		q = &models.QuietHours{Start: fmt.Sprintf("%02d:00", (h+20)%24), End: fmt.Sprintf("%02d:00", (h+23)%24)}
		doorSettings(t, accID, models.ComplianceInput{SetQuietHours: true, QuietHours: q})
		doorWant(t, "campaign after "+q.String()+" UTC", doorDecide(t, out), models.SendNow, time.Time{}, "")
		return
	}
	t.Fatal("the hour turned twice during the test")
}

// TestDoorQuietHoursPhoneZones: without its own zone, a contact's phone number decides its local
// time, and Florida's state rule ends the day at 20:00.
func TestDoorQuietHoursPhoneZones(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	acc := csAccount(t, "Acme")
	accID := acc.Account.ID
	// The account's zone is far from both numbers': it must not be the one used.
	doorSettings(t, accID, models.ComplianceInput{TimeZone: csPtr("Asia/Tokyo")})
	contact := func(phone string) string {
		c, _, err := env.Store.CreateOrGetContact(ctx, accID, models.ContactInput{Phone: phone})
		if err != nil {
			t.Fatal(err)
		}
		return c.ID
	}
	la, miami := contact("+14155550142"), contact("+13055550142")
	laLoc, nyLoc := mustLoad(t, "America/Los_Angeles"), mustLoad(t, "America/New_York")
	decide := func(contactID, phone string, at time.Time) models.Decision {
		return doorDecide(t, models.Outgoing{Purpose: models.PurposeCampaign, AccountID: accID, ContactID: contactID, At: at,
			Route: models.Route{Channel: "promo", Transport: models.TransportCustom, ToID: phone}})
	}
	day := func(loc *time.Location, d, h, m int) time.Time {
		return time.Date(2025, time.January, d, h, m, 0, 0, loc)
	}

	doorWant(t, "California at 20:30", decide(la, "+14155550142", day(laLoc, 15, 20, 30)), models.SendNow, time.Time{}, "")
	doorWant(t, "California at 21:00", decide(la, "+14155550142", day(laLoc, 15, 21, 0)), models.SendLater, day(laLoc, 16, 8, 0), "")
	doorWant(t, "California at 07:59", decide(la, "+14155550142", day(laLoc, 16, 7, 59)), models.SendLater, day(laLoc, 16, 8, 0), "")
	doorWant(t, "Florida at 19:59", decide(miami, "+13055550142", day(nyLoc, 15, 19, 59)), models.SendNow, time.Time{}, "")
	doorWant(t, "Florida at 20:30", decide(miami, "+13055550142", day(nyLoc, 15, 20, 30)), models.SendLater, day(nyLoc, 16, 8, 0), "")
	// Quiet hours off for the account: the state rule goes too (the account's choice).
	doorSettings(t, accID, models.ComplianceInput{SetQuietHours: true})
	doorWant(t, "Florida at 20:30 without quiet hours", decide(miami, "+13055550142", day(nyLoc, 15, 20, 30)), models.SendNow, time.Time{}, "")
}

func mustLoad(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}
