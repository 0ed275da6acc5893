package models

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// The door at delivery time. Each delivery attempt of a stored message asks DecideAttempt once, and
// the transport is given its decision (a WhatsApp template, Meta's HUMAN_AGENT tag) instead of asking
// again.
//
// A campaign's message and an opt-out race: the opt-out must win over any campaign message not yet
// handed to its channel, and the opt-out's confirmation must reach the receiver after any campaign
// message that was. Nothing is held across the call to the receiver for that:
//
//   - DecideAttempt decides a campaign message in a short transaction that share-locks the contact
//     (the consent change locks it for update, so the two take turns), and when it may go, marks it
//     handed over (messages.handover_until, a lease as long as the call may take) in the same
//     transaction. An opt-out recorded before it is seen; one recorded after it finds the mark.
//   - RecordAttempt ends the mark with the attempt's outcome; a worker that died mid-call leaves it
//     to expire.
//   - A consent keyword's confirmation (AuthorSystem) waits while the contact has a campaign message
//     handed over (HandoverWait), so it is sent after that message's call has ended.

// handoverMargin is added to the call's timeout in a handover's lease: the attempt's record comes a
// moment after the call ends.
const handoverMargin = 5 * time.Second

// DecideAttempt is the door's decision for one delivery attempt of the stored outgoing message m
// (read by MessageForWork, or a bot reply built for its first attempt, with its Contact): consent, the
// channel's messaging window and the contact's address, as when it was written; quiet hours were
// decided then and are not applied again. A campaign message the door lets go is marked handed over
// until callTimeout (plus a margin) from now; see above.
func (s *Store) DecideAttempt(ctx context.Context, m *Message, callTimeout time.Duration) (Decision, error) {
	out, err := s.storedOutgoing(ctx, m)
	if err != nil {
		return Decision{}, fmt.Errorf("decide attempt: %w", err)
	}
	out.Delivery = true
	if m.Author != AuthorCampaign {
		return s.decide(ctx, s.db, out)
	}
	var d Decision
	err = s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		q := tx.NewSelect()
		if !s.IsSQLite() {
			q = q.For("SHARE") // the consent change's lock (FOR UPDATE) waits for this transaction
		}
		contact, err := readDoorContact(ctx, q, m.ContactID)
		if err != nil {
			return err
		}
		out.Contact = contact
		if d, err = s.decide(ctx, tx, out); err != nil || !d.Allowed() {
			return err
		}
		_, err = tx.NewUpdate().Model((*Message)(nil)).Set("handover_until = ?", time.Now().Add(callTimeout+handoverMargin)).
			Where("id = ? AND status <> ?", m.ID, StatusSent).Exec(ctx)
		return err
	})
	if err != nil {
		return Decision{}, fmt.Errorf("decide attempt: %w", err)
	}
	return d, nil
}

// storedOutgoing is the door's view of the stored outgoing message m: its purpose, route and contact
// (m.Contact: nil lets the door read it), and for a campaign's message on WhatsApp its campaign, whose
// approved template the window rule may need. Delivery attempts and retries ask the door with it.
func (s *Store) storedOutgoing(ctx context.Context, m *Message) (Outgoing, error) {
	out := Outgoing{
		Purpose: PurposeOf(m), AccountID: m.AccountID, ContactID: m.ContactID, Contact: m.Contact,
		Route: Route{Channel: m.Channel, Transport: m.Transport, ToID: m.ToID},
	}
	if m.CampaignID != nil && m.Author == AuthorCampaign && m.Transport == ChannelWhatsApp {
		c, err := s.Campaign(ctx, *m.CampaignID)
		if err != nil && ErrorCode(err) != CodeNotFound {
			return Outgoing{}, err
		}
		out.Campaign = c
	}
	return out, nil
}

// HandoverWait is how long the contact's campaign messages that are handed over to their channel may
// still be in flight (0: none is): a consent keyword's confirmation waits that long, so that it is
// never followed by one of them.
func (s *Store) HandoverWait(ctx context.Context, contactID string) (time.Duration, error) {
	var until []time.Time
	at := time.Now()
	err := s.db.NewSelect().Model((*Message)(nil)).ColumnExpr("handover_until").
		Where("contact_id = ? AND handover_until > ?", contactID, at).OrderExpr("handover_until DESC").Limit(1).Scan(ctx, &until)
	if err != nil {
		return 0, fmt.Errorf("handover wait: %w", err)
	}
	if len(until) == 0 {
		return 0, nil
	}
	return until[0].Sub(at), nil
}
