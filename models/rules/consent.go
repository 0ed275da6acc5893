package rules

import "time"

// Consent statuses.
const (
	ConsentOptedIn  = "opted_in"
	ConsentOptedOut = "opted_out"
)

// ConsentAllChannels is the channel of consent given or withdrawn for every channel at once (a form's
// consent, or a PUT without a channel). A channel's own state, recorded later, overrides it.
const ConsentAllChannels = "*"

// ConsentState is a contact's consent on one channel: its status, when and by what it was given or
// withdrawn.
type ConsentState struct {
	Status string    `json:"status"`
	At     time.Time `json:"at"`
	Source string    `json:"source"`
}

// ConsentMap is a contact's consent by channel (ConsentAllChannels for all of them). models.ConsentMap
// is the same map as stored; one converts to the other.
type ConsentMap map[string]ConsentState

// For returns the state that holds on channel: its own, else the all-channels state.
func (m ConsentMap) For(channel string) (ConsentState, bool) {
	if st, ok := m[channel]; ok {
		return st, true
	}
	st, ok := m[ConsentAllChannels]
	return st, ok
}

// ConsentChange is evidence of consent given or withdrawn, as the state computation sees it.
type ConsentChange struct {
	// Channel is the channel it is for, or ConsentAllChannels.
	Channel string
	// Status is ConsentOptedIn or ConsentOptedOut.
	Status string
	Source string
	// At is when it was given: the state is the latest change by this time, not by when it was
	// recorded.
	At time.Time
	// Always records the event even when the state does not change (evidence given again); a keyword
	// or the bot repeating the state records nothing.
	Always bool
}

// NextConsent is what change does to a contact whose consent is cur. record says that the change is
// an event of the ledger: false when it repeats the state in force on its channel and is not
// Always. apply says that the contact's state becomes next; it is false, with next equal to cur, when
// nothing is recorded or when the change is older than the state in force on its channel (a form
// signed last year, entered after today's STOP): such evidence goes into the ledger and changes no
// state, so back-dated consent never undoes a newer opt-out. cur is not modified.
//
// Consent for every channel (ConsentAllChannels) replaces each channel's own state that is not newer
// than it: withdrawing everywhere must leave no channel opted in, and giving it everywhere must leave
// none opted out.
func NextConsent(cur ConsentMap, change ConsentChange) (next ConsentMap, record, apply bool) {
	st, ok := cur.For(change.Channel)
	if ok && st.Status == change.Status && !change.Always {
		return cur, false, false
	}
	if ok && st.At.After(change.At) {
		return cur, true, false // older than the state in force: evidence for the ledger only
	}
	next = ConsentMap{}
	for ch, st := range cur {
		if change.Channel != ConsentAllChannels || st.At.After(change.At) {
			next[ch] = st
		}
	}
	next[change.Channel] = ConsentState{Status: change.Status, At: change.At, Source: change.Source}
	return next, true, true
}
