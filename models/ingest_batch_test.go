package models_test

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"funnelchat/models"
)

// A batch of incoming messages stored set-based ends exactly as the same messages stored one by one,
// in order: same contacts (created, found by identity, phone or email), same identities, same
// duplicates, same conversation campaigns. Batches whose messages depend on each other (a sender, a
// messageSid, a phone or a contact shared by two of them), or that meet a messageSid stored already,
// are stored message by message, and end the same way too.
func TestIngestBatchMatchesOneByOne(t *testing.T) {
	if !env.Postgres() {
		t.Skip("the batch ingest is PostgreSQL's (SQLite stores each message in its own transaction)")
	}
	ctx := context.Background()
	type batch struct {
		name     string
		msgs     []models.IncomingInput
		setBased bool
	}
	msg := func(sid, from string, opts ...func(*models.IncomingInput)) models.IncomingInput {
		in := models.IncomingInput{ExternalID: sid, FromID: from, ToID: "business", Body: "hello " + sid, Channel: "chat"}
		for _, o := range opts {
			o(&in)
		}
		if err := in.Validate(1 << 20); err != nil {
			t.Fatal(err)
		}
		return in
	}
	campaign := func(id string) func(*models.IncomingInput) {
		return func(in *models.IncomingInput) { in.CampaignID = id }
	}
	person := func(first, last, email string) func(*models.IncomingInput) {
		return func(in *models.IncomingInput) { in.FirstName, in.LastName, in.Email = first, last, email }
	}
	batches := []batch{
		{"new senders", []models.IncomingInput{
			msg("s1", "web-a", person("Ana", "Souza", "Ana@Example.com")), msg("s2", "web-b", campaign("cmp_spring")),
			msg("s3", "+14155550177"), msg("s4", "web-c"),
		}, true},
		{"known senders, and senders found by phone and email", []models.IncomingInput{
			msg("s5", "known-1", campaign("cmp_known")), msg("s6", "+14155550101", campaign("cmp_phone")),
			msg("s7", "lead@example.com"), msg("s8", "web-a"), msg("s9", "web-d"),
		}, true},
		{"one sender twice", []models.IncomingInput{msg("s10", "web-e"), msg("s11", "web-e"), msg("s12", "web-f")}, false},
		{"one messageSid twice", []models.IncomingInput{msg("s13", "web-g"), msg("s13", "web-h"), msg("s14", "web-i")}, false},
		{"a messageSid stored already", []models.IncomingInput{msg("s15", "web-j"), msg("old", "web-k")}, false},
		{"one new phone in two forms", []models.IncomingInput{msg("s16", "+14155550188"), msg("s17", "0014155550188")}, false},
		{"one contact reached two ways", []models.IncomingInput{msg("s18", "+14155550101"), msg("s19", "0014155550101"), msg("s20", "web-l")}, false},
		{"after all that, independent again", []models.IncomingInput{msg("s21", "web-e"), msg("s22", "web-m"), msg("s23", "0014155550188")}, true},
	}

	// run stores every batch in a new account (after the same setup), batched or one by one, and
	// describes the outcome in the account's own terms: contacts and messages named by first appearance.
	run := func(oneByOne bool) (outcome []string, state []string, setBased []bool) {
		acc := newAccount(t).Account.ID
		names := map[string]string{}
		name := func(kind, id string) string {
			if n, ok := names[id]; ok {
				return n
			}
			n := fmt.Sprintf("%s%d", kind, len(names))
			names[id] = n
			return n
		}
		apiPhone, _, err := env.Store.CreateOrGetContact(ctx, acc, models.ContactInput{FirstName: "Phone", Phone: "+14155550101"})
		if err != nil {
			t.Fatal(err)
		}
		apiEmail, _, err := env.Store.CreateOrGetContact(ctx, acc, models.ContactInput{FirstName: "Email", Email: "lead@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		name("api-phone-", apiPhone.ID)
		name("api-email-", apiEmail.ID)
		first, err := env.Store.IngestForTest(ctx, acc, []models.IncomingInput{msg("old", "known-1", person("Kim", "", ""))}, true)
		if err != nil {
			t.Fatal(err)
		}
		name("known-", first[0].ContactID)
		name("old-msg-", first[0].MessageID)
		for _, b := range batches {
			got, err := env.Store.IngestForTest(ctx, acc, b.msgs, oneByOne)
			if err != nil {
				t.Fatalf("%s: %v", b.name, err)
			}
			if len(got) != len(b.msgs) {
				t.Fatalf("%s: %d results for %d messages", b.name, len(got), len(b.msgs))
			}
			all := true
			for i, r := range got {
				line := fmt.Sprintf("%s #%d: contact %s", b.name, i, name("contact-", r.ContactID))
				if r.Duplicate {
					line += " duplicate of " + name("msg-", r.MessageID)
				} else {
					line += " new " + name("msg-", r.MessageID)
				}
				outcome = append(outcome, line)
				all = all && r.SetBased
			}
			setBased = append(setBased, all)
		}
		var contacts []models.Contact
		if err := env.Store.DB().NewSelect().Model(&contacts).Where("account_id = ?", acc).Order("id").Scan(ctx); err != nil {
			t.Fatal(err)
		}
		str := func(p *string) string {
			if p == nil {
				return "-"
			}
			return *p
		}
		for _, c := range contacts {
			state = append(state, fmt.Sprintf("contact %s: %q %q phone %s email %s origin %s campaign %s", name("unnamed-", c.ID),
				c.FirstName, c.LastName, str(c.Phone), str(c.Email), c.Origin, str(c.ConversationCampaignID)))
		}
		var idents []struct {
			ExternalID string `bun:"external_id"`
			ContactID  string `bun:"contact_id"`
		}
		if err := env.Store.DB().NewSelect().TableExpr("contact_identities").Column("external_id", "contact_id").
			Where("account_id = ?", acc).Order("external_id").Scan(ctx, &idents); err != nil {
			t.Fatal(err)
		}
		for _, i := range idents {
			state = append(state, fmt.Sprintf("identity %s -> %s", i.ExternalID, name("unnamed-", i.ContactID)))
		}
		var msgs []models.Message
		if err := env.Store.DB().NewSelect().Model(&msgs).Where("account_id = ?", acc).Order("id").Scan(ctx); err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			state = append(state, fmt.Sprintf("message %s: sid %s from %s contact %s campaign %s bot %s", name("unnamed-", m.ID),
				str(m.ExternalID), m.FromID, name("unnamed-", m.ContactID), str(m.CampaignID), str(m.BotStatus)))
		}
		sort.Strings(state)
		return outcome, state, setBased
	}

	wantOutcome, wantState, _ := run(true)
	gotOutcome, gotState, setBased := run(false)
	if !reflect.DeepEqual(gotOutcome, wantOutcome) {
		t.Errorf("answers differ.\nbatched:\n%s\none by one:\n%s", strings.Join(gotOutcome, "\n"), strings.Join(wantOutcome, "\n"))
	}
	if !reflect.DeepEqual(gotState, wantState) {
		t.Errorf("stored rows differ.\nbatched:\n%s\none by one:\n%s", strings.Join(gotState, "\n"), strings.Join(wantState, "\n"))
	}
	for i, b := range batches {
		if setBased[i] != b.setBased {
			t.Errorf("batch %q: stored set-based %v, want %v", b.name, setBased[i], b.setBased)
		}
	}
	// The cases the comparison relies on happened: a duplicate inside a batch and one of a stored
	// messageSid, and senders found by phone and email.
	for _, want := range []string{
		"one messageSid twice #1: contact contact-",
		"a messageSid stored already #1: contact known-2 duplicate of old-msg-3",
		"known senders, and senders found by phone and email #1: contact api-phone-0",
		"known senders, and senders found by phone and email #2: contact api-email-1",
	} {
		found := false
		for _, l := range wantOutcome {
			found = found || strings.HasPrefix(l, want)
		}
		if !found {
			t.Errorf("no answer starts with %q:\n%s", want, strings.Join(wantOutcome, "\n"))
		}
	}
}

// TestClosingTheIngestAnswersQueuedCallersAtOnce: a store that closes answers the messages still
// queued for its ingest batcher at once with an unavailable error (the api's 503: the sender retries),
// instead of leaving their requests waiting; the batches already on their way get their own answers,
// and a message that comes after the close is refused at once too.
func TestClosingTheIngestAnswersQueuedCallersAtOnce(t *testing.T) {
	if !env.Postgres() {
		t.Skip("the ingest batcher is PostgreSQL's")
	}
	t.Parallel()
	ctx := context.Background()
	accID := csAccount(t, "Closing ingest").Account.ID
	s, err := models.OpenPostgres(env.DatabaseURL, 8) // a store of its own, for its own batcher
	if err != nil {
		t.Fatal(err)
	}
	closing := make(chan struct{})
	closed := make(chan struct{})
	t.Cleanup(func() {
		select {
		case <-closing:
		default:
			_ = s.Close()
		}
	})

	// The held transaction has stored the sender's identity: every message from the sender waits for it.
	sender := csFrom("held")
	held := holdTx(t, env.Store)
	contactID := "ct_held_" + strings.ReplaceAll(sender, "-", "_")
	if _, err := held.ExecContext(ctx, `INSERT INTO contacts (id, account_id, origin, created_at, updated_at)
		VALUES (?, ?, 'channel', now(), now())`, contactID, accID); err != nil {
		t.Fatal(err)
	}
	if _, err := held.ExecContext(ctx, `INSERT INTO contact_identities (account_id, external_id, contact_id, created_at)
		VALUES (?, ?, ?, now())`, accID, sender, contactID); err != nil {
		t.Fatal(err)
	}
	ingest := func(sid string) error {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		in := models.IncomingInput{ExternalID: sid, FromID: sender, ToID: "business", Body: "hello " + sid, Channel: "chat"}
		if err := in.Validate(1 << 20); err != nil {
			return err
		}
		_, _, err := s.IngestIncoming(ctx, accID, in)
		return err
	}
	wantUnavailable := func(err error, what string) {
		t.Helper()
		if !models.IsUnavailable(err) || models.ErrorCode(err) != models.CodeUnavailable {
			t.Errorf("%s: %v, want an unavailable error", what, err)
		}
	}

	// On their way: a batch per flusher, each waiting for the held identity.
	inFlight := make(chan error, models.IngestFlushersForTest)
	for i := range models.IngestFlushersForTest {
		go func() { inFlight <- ingest(fmt.Sprintf("%s-flight-%d", sender, i)) }()
		held.waitBlocked(t, i+1, nil)
	}
	// Queued: no flusher is free to take them.
	const queued = 5
	answers := make(chan error, queued)
	for i := range queued {
		go func() { answers <- ingest(fmt.Sprintf("%s-queued-%d", sender, i)) }()
	}
	for deadline := time.Now().Add(10 * time.Second); s.IngestQueuedForTest() < queued; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d messages queued after 10 s", s.IngestQueuedForTest(), queued)
		}
	}

	close(closing)
	go func() {
		_ = s.Close()
		close(closed)
	}()
	timeout := time.After(5 * time.Second)
	for range queued {
		select {
		case err := <-answers:
			wantUnavailable(err, "a queued message when the store closed")
		case <-timeout:
			t.Fatal("messages queued when the store closed still wait for an answer 5 s later")
		}
	}
	start := time.Now()
	wantUnavailable(ingest(sender+"-late"), "a message after the close")
	if took := time.Since(start); took > time.Second {
		t.Errorf("a message after the close waited %s for its answer", took)
	}

	// The batches on their way end as they would have: stored once the identity commits.
	if err := held.Commit(); err != nil {
		t.Fatal(err)
	}
	for range models.IngestFlushersForTest {
		if err := <-inFlight; err != nil {
			t.Errorf("a message on its way when the store closed: %v, want it stored", err)
		}
	}
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return once the batches on their way ended")
	}
}

// TestConcurrentBatchesWithOneNewPhone: two batches stored at once, each with a message from one new
// phone number, both store every message, with one contact for the phone and no error. Both look the
// phone up before either has stored it; the one that loses the race for the phone's contact finds,
// at its end, a message (and an identity) naming the contact it could not insert, and is stored
// message by message inside ingest_incoming_batch.
func TestConcurrentBatchesWithOneNewPhone(t *testing.T) {
	if !env.Postgres() {
		t.Skip("the batch ingest is PostgreSQL's (SQLite stores each message in its own transaction)")
	}
	t.Parallel()
	ctx := context.Background()
	accID := csAccount(t, "One new phone").Account.ID
	const phone = "+14155550142"
	msg := func(sid, from string) models.IncomingInput {
		in := models.IncomingInput{ExternalID: sid, FromID: from, ToID: "business", Body: "hello " + sid, Channel: "chat"}
		if err := in.Validate(1 << 20); err != nil {
			t.Fatal(err)
		}
		return in
	}
	batches := [][]models.IncomingInput{
		{msg("a-phone", phone), msg("a-web", "web-a")},
		{msg("b-phone", "00"+phone[1:]), msg("b-web", "web-b")}, // the same phone, written another way
	}

	// A contact with the phone, held open: both batches find no contact for it, then wait for this one
	// at their insert; once it rolls back, the two race for the phone.
	held := holdTx(t, env.Store)
	if _, err := held.ExecContext(ctx, `INSERT INTO contacts (id, account_id, phone, origin, created_at, updated_at)
		VALUES (?, ?, ?, 'api', now(), now())`, "ct_held_"+accID, accID, phone); err != nil {
		t.Fatal(err)
	}
	results := make([][]models.IngestedForTest, len(batches))
	errs := make([]error, len(batches))
	var wg sync.WaitGroup
	for i, b := range batches {
		wg.Go(func() { results[i], errs[i] = env.Store.IngestForTest(ctx, accID, b, false) })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	if !held.waitBlocked(t, len(batches), done) {
		t.Fatal("the batches did not wait for the held contact")
	}
	if err := held.Rollback(); err != nil {
		t.Fatal(err)
	}
	<-done

	setBased := 0
	for i, err := range errs {
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		for _, r := range results[i] {
			if r.Duplicate {
				t.Fatalf("batch %d: a message stored as a duplicate: %+v", i, r)
			}
		}
		if results[i][0].SetBased {
			setBased++
		}
	}
	if setBased != 1 {
		t.Errorf("%d batches stored set-based, want 1 (the other lost the race for the phone)", setBased)
	}
	if a, b := results[0][0].ContactID, results[1][0].ContactID; a != b {
		t.Fatalf("the phone's messages went to contacts %s and %s, want one", a, b)
	}
	var contacts, messages int
	if err := env.Store.DB().QueryRowContext(ctx, "SELECT count(*) FROM contacts WHERE account_id = ? AND phone = ?", accID, phone).Scan(&contacts); err != nil {
		t.Fatal(err)
	}
	if err := env.Store.DB().QueryRowContext(ctx, "SELECT count(*) FROM messages WHERE account_id = ?", accID).Scan(&messages); err != nil {
		t.Fatal(err)
	}
	if contacts != 1 || messages != 4 {
		t.Fatalf("%d contacts with the phone and %d messages, want 1 and 4", contacts, messages)
	}
}
