package models

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/uptrace/bun"
)

// CodeNoAddress is the error of a message to a contact that has no address on the channel: 409.
const CodeNoAddress = "NO_ADDRESS"

// RouteTo is where a message to the contact goes on channel: the one rule for campaign openings,
// follow-ups, bot replies and team replies, so a team member answers a lead at the address the
// campaign reached it at, and a follow-up goes where its opening went. In order:
//
//  1. answering a message on the channel (a bot reply, a keyword's confirmation): where it came from;
//  2. the address the contact last wrote from on the channel;
//  3. the address the service last sent to on the channel (a campaign's opening, an earlier reply);
//  4. the contact's own address for the channel's transport: its phone on SMS and WhatsApp, its
//     latest Messenger or Instagram sender id there, and on a custom channel its latest custom-channel
//     id, else its phone, else its email.
//
// channel "" is the conversation's channel: the one the contact last wrote on, else the one it was
// last sent to. Errors: NO_ADDRESS naming what is missing.
func (s *Store) RouteTo(ctx context.Context, contact *Contact, channel string, answering *Message) (Route, error) {
	if m := answering; m != nil && m.Direction == DirectionIncoming && (channel == "" || m.Channel == channel) && m.FromID != "" {
		return AnswerRoute(m), nil
	}
	for _, dir := range []string{DirectionIncoming, DirectionOutgoing} {
		r, err := s.lastRoute(ctx, contact.ID, channel, dir)
		if err != nil {
			return Route{}, fmt.Errorf("route: %w", err)
		}
		if r.ToID != "" {
			return r, nil
		}
	}
	if channel == "" {
		return Route{}, Errorf(CodeNoAddress, "the contact has not written and has not been sent anything: name the channel to reach it on")
	}
	r := Route{Channel: channel, Transport: transportOf(channel)}
	to, err := s.ownAddress(ctx, contact, r.Transport)
	if err != nil {
		return Route{}, fmt.Errorf("route: %w", err)
	}
	if to == "" {
		return Route{}, Errorf(CodeNoAddress, "%s", noAddress(channel, r.Transport))
	}
	r.ToID = to
	return r, nil
}

// AnswerRoute is where an answer to the incoming message m goes (rule 1 of RouteTo): back to the
// address it came from, on its channel. It needs no query, so the bot and the keywords' confirmations
// call it directly.
func AnswerRoute(m *Message) Route {
	return Route{Channel: m.Channel, Transport: m.Transport, ToID: m.FromID}
}

// lastRoute is the route of the contact's latest message in direction dir (on channel, when one is
// given) that has an address: where it came from, or where it went.
func (s *Store) lastRoute(ctx context.Context, contactID, channel, dir string) (Route, error) {
	var m Message
	addr := "from_id"
	if dir == DirectionOutgoing {
		addr = "to_id"
	}
	q := s.db.NewSelect().Model(&m).Column("channel", "transport", addr).
		Where("contact_id = ? AND direction = ?", contactID, dir).Where("? <> ''", bun.Ident(addr)).
		Order("id DESC").Limit(1)
	if channel != "" {
		q = q.Where("channel = ?", channel)
	}
	if err := q.Scan(ctx); errors.Is(err, sql.ErrNoRows) {
		return Route{}, nil
	} else if err != nil {
		return Route{}, err
	}
	to := m.FromID
	if dir == DirectionOutgoing {
		to = m.ToID
	}
	return Route{Channel: m.Channel, Transport: m.Transport, ToID: to}, nil
}

// ownAddress is the contact's own address on a transport (rule 4 of RouteTo), "" when it has none.
func (s *Store) ownAddress(ctx context.Context, c *Contact, transport string) (string, error) {
	switch transport {
	case ChannelSMS, ChannelWhatsApp:
		if c.Phone == nil {
			return "", nil
		}
		return *c.Phone, nil
	}
	q := s.db.NewSelect().Model((*contactIdentity)(nil)).Column("external_id").Where("contact_id = ?", c.ID)
	if IsMetaChannel(transport) {
		q = q.Where("external_id LIKE ?", transport+":%")
	} else {
		q = q.Where("external_id NOT LIKE ? AND external_id NOT LIKE ?", ChannelMessenger+":%", ChannelInstagram+":%")
	}
	var ids []string
	if err := q.Order("created_at DESC").Limit(1).Scan(ctx, &ids); err != nil {
		return "", err
	}
	switch {
	case len(ids) > 0:
		return ids[0], nil
	case IsMetaChannel(transport):
		return "", nil
	case c.Phone != nil && *c.Phone != "":
		return *c.Phone, nil
	case c.Email != nil && *c.Email != "":
		return *c.Email, nil
	}
	return "", nil
}

// transportOf is the transport of a channel label: a built-in channel is its own transport, any other
// label a custom channel.
func transportOf(channel string) string {
	switch channel {
	case ChannelSMS, ChannelWhatsApp, ChannelMessenger, ChannelInstagram:
		return channel
	}
	return TransportCustom
}

// noAddress says what a contact lacks to be reached on channel.
func noAddress(channel, transport string) string {
	switch {
	case transport == ChannelSMS || transport == ChannelWhatsApp:
		return fmt.Sprintf("the contact has no phone number to reach it on %s", channel)
	case IsMetaChannel(transport):
		return fmt.Sprintf("the contact has never written on %s, and %s only lets a page answer people who wrote to it", channel, channel)
	}
	return fmt.Sprintf("the contact has no custom-channel id, phone or email to reach it on %s", channel)
}
