package models

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
)

// Prefixes of the opaque ids, so that an id read in a log says what it names.
const (
	prefixAccount  = "acc_"
	prefixUser     = "usr_"
	prefixAPIKey   = "key_"
	prefixContact  = "ct_"
	prefixList     = "lst_"
	prefixMember   = "lm_"
	prefixMessage  = "msg_"
	prefixAttempt  = "att_"
	prefixAlert    = "alr_"
	prefixCampaign = "cmp_"
	prefixSend     = "snd_"
	prefixCredit   = "crt_"
	prefixConsent  = "cns_"
	prefixGoal     = "gol_"
	prefixNote     = "not_"
	prefixCanned   = "cnr_"
)

// maxIDLength bounds the ids we look up: anything longer cannot be ours and is answered as not found
// without a database round trip.
const maxIDLength = 64

// entropy makes ids created in the same millisecond by this process increase, so rows created in a
// loop page in creation order.
var entropy = &ulid.LockedMonotonicReader{MonotonicReader: ulid.Monotonic(rand.Reader, 0)}

// newID returns a prefixed, lower-case ULID: unique, and sortable by creation time, which keyset
// pagination relies on.
func newID(prefix string) string {
	return newIDAt(prefix, time.Now())
}

// newIDAt is newID for a row created at t: the ULID's time part is t's millisecond. On PostgreSQL the
// id decides which monthly partition of messages and consent_events the row lands in
// (partitions.go), so only the server's clock ever sets it.
func newIDAt(prefix string, t time.Time) string {
	return prefix + strings.ToLower(ulid.MustNew(ulid.Timestamp(t), entropy).String())
}

// idBound is the smallest id with prefix created at t or later: prefix and the ten characters of a
// ULID that encode t's millisecond (big-endian base32, so ids compare as their times do, in byte
// order). The bounds of the monthly partitions are idBound of each month's first millisecond.
func idBound(prefix string, t time.Time) string {
	var id ulid.ULID
	_ = id.SetTime(ulid.Timestamp(t)) // only fails beyond the year 10889
	return prefix + strings.ToLower(id.String()[:10])
}

// now is the timestamp stored for new rows: UTC, at the microsecond precision PostgreSQL keeps, so a
// value returned at creation equals the value read back later.
func now() time.Time {
	return time.Now().UTC().Truncate(time.Microsecond)
}

// BotReplyID is the id of the bot's reply to the incoming message incomingID, the same every time it is
// asked: a bot task that sends its reply before storing it (jobs' deliverFirst) and dies in between
// sends it again, under the same webhook-id, when it reruns. The id is a ULID one millisecond after the
// incoming message's, with a random part drawn from its id, so the reply takes its place right after
// the message it answers (README, "Custom channels, the bot and the reply webhook").
func BotReplyID(incomingID string) string {
	sum := sha256.Sum256([]byte("bot-reply:" + incomingID))
	var ms uint64
	if u, err := ulid.ParseStrict(strings.ToUpper(strings.TrimPrefix(incomingID, prefixMessage))); err == nil {
		ms = u.Time() + 1
	} else {
		// Not one of our ids (they are all ULIDs): still the same every time.
		ms = binary.BigEndian.Uint64(sum[10:18]) & (1<<48 - 1)
	}
	var id ulid.ULID
	// Neither can fail: ms is at most MaxTime, and ten bytes is what a ULID's entropy is.
	_ = id.SetTime(min(ms, ulid.MaxTime()))
	_ = id.SetEntropy(sum[:10])
	return prefixMessage + strings.ToLower(id.String())
}
