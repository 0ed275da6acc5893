package models

import (
	"crypto/rand"
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
	return prefix + strings.ToLower(ulid.MustNew(ulid.Timestamp(time.Now()), entropy).String())
}

// now is the timestamp stored for new rows: UTC, at the microsecond precision PostgreSQL keeps, so a
// value returned at creation equals the value read back later.
func now() time.Time {
	return time.Now().UTC().Truncate(time.Microsecond)
}
