package rules

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	// The zone database is compiled in so that quiet hours do not depend on the host having
	// /usr/share/zoneinfo (slim containers do not); the system copy is still used first when present.
	_ "time/tzdata"

	"github.com/nyaruka/phonenumbers"
)

// Quiet hours hold back business-initiated messages (campaign openings and follow-ups) while the
// contact is likely asleep. US law sets the outer limit for telephone solicitations at 08:00-21:00
// local time at the called party's location (FCC, 47 CFR 64.1200(c)(1)), so 21:00-08:00 is the
// usual window; Florida and Oklahoma allow only 08:00-20:00 (see stateAreaCodes).

// QuietHours is a daily quiet window in local time: sending is held back at local times in
// [Start, End). When End is earlier than Start the window wraps midnight (21:00-08:00 is quiet from
// 21:00 until 08:00 the next morning); Start == End is invalid, since it could mean either nothing
// or the whole day. A nil *QuietHours means the account has no quiet hours.
type QuietHours struct {
	Start string `json:"start"` // "HH:MM", the first quiet minute
	End   string `json:"end"`   // "HH:MM", the first minute at which sending is allowed again
}

// ParseQuietHours reads quiet hours as written in configuration (DEFAULT_QUIET_HOURS): "21:00-08:00",
// or "off" (any case) for none, which returns nil and no error. Anything else is an error naming the
// problem; an empty value is one too, so that a blank setting is never read as "off".
func ParseQuietHours(s string) (*QuietHours, error) {
	v := strings.TrimSpace(s)
	if strings.EqualFold(v, "off") {
		return nil, nil
	}
	if v == "" {
		return nil, errors.New("quiet hours are empty: write them as HH:MM-HH:MM (such as 21:00-08:00) or off")
	}
	start, end, found := strings.Cut(v, "-")
	if !found {
		return nil, fmt.Errorf("quiet hours %q have no end: write them as HH:MM-HH:MM (such as 21:00-08:00) or off", v)
	}
	q := QuietHours{Start: strings.TrimSpace(start), End: strings.TrimSpace(end)}
	if err := q.Validate(); err != nil {
		return nil, err
	}
	return &q, nil
}

// ParseClock reads a time of day written "HH:MM" (two digits each, 00:00 to 23:59) and returns the
// minutes since midnight. Shorter forms such as 7:00 are refused so that a stored value has one
// spelling.
func ParseClock(s string) (int, error) {
	digit := func(i int) (int, bool) {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		return int(s[i] - '0'), true
	}
	if len(s) != 5 || s[2] != ':' {
		return 0, fmt.Errorf("time %q is not a time of day: write it as HH:MM, 00:00 to 23:59", s)
	}
	h1, ok1 := digit(0)
	h2, ok2 := digit(1)
	m1, ok3 := digit(3)
	m2, ok4 := digit(4)
	h, m := h1*10+h2, m1*10+m2
	if !ok1 || !ok2 || !ok3 || !ok4 || h > 23 || m > 59 {
		return 0, fmt.Errorf("time %q is not a time of day: write it as HH:MM, 00:00 to 23:59", s)
	}
	return h*60 + m, nil
}

// Validate checks that Start and End are times of day and differ.
func (q QuietHours) Validate() error {
	_, err := q.window()
	return err
}

// String returns the window as ParseQuietHours reads it: "21:00-08:00".
func (q QuietHours) String() string { return q.Start + "-" + q.End }

// window is a quiet window in minutes since midnight, [start, end), wrapping midnight when
// end < start.
type window struct{ start, end int }

func (q QuietHours) window() (window, error) {
	start, err := ParseClock(q.Start)
	if err != nil {
		return window{}, fmt.Errorf("quiet hours start %q is not a time of day: write it as HH:MM, 00:00 to 23:59", q.Start)
	}
	end, err := ParseClock(q.End)
	if err != nil {
		return window{}, fmt.Errorf("quiet hours end %q is not a time of day: write it as HH:MM, 00:00 to 23:59", q.End)
	}
	if start == end {
		return window{}, fmt.Errorf("quiet hours %s start and end at the same time: give two different times, or off for none", q)
	}
	return window{start, end}, nil
}

func (w window) contains(minute int) bool {
	if w.start < w.end {
		return w.start <= minute && minute < w.end
	}
	return minute >= w.start || minute < w.end
}

// minutesLeft is how many minutes after the start of minute the window ends; only meaningful when
// the window contains minute, and then at least 1.
func (w window) minutesLeft(minute int) int {
	return (w.end - minute + 24*60) % (24 * 60)
}

// stateAreaCodes maps the area codes of US states whose telephone solicitation laws allow calls and
// texts only from 08:00 to 20:00 local time (an hour less in the evening than the federal rule) to
// the state: the Florida Telephone Solicitation Act (Fla. Stat. 501.059) and the Oklahoma Telephone
// Solicitation Act (15 O.S. 775C). It lists every area code in service or assigned for those states
// in the North American Numbering Plan, overlays included, and agrees with libphonenumber's
// geocoding (TestStateAreaCodesMatchGeocoding fails when an upgrade of the library knows a new one).
var stateAreaCodes = map[string]string{
	"239": "FL", "305": "FL", "321": "FL", "324": "FL", "352": "FL", "386": "FL", "407": "FL",
	"448": "FL", "561": "FL", "645": "FL", "656": "FL", "689": "FL", "727": "FL", "728": "FL",
	"754": "FL", "772": "FL", "786": "FL", "813": "FL", "850": "FL", "863": "FL", "904": "FL",
	"941": "FL", "954": "FL",

	"405": "OK", "539": "OK", "572": "OK", "580": "OK", "918": "OK",
}

// stateWindow is the quiet window those states impose: no messages before 08:00 or from 20:00.
var stateWindow = window{start: 20 * 60, end: 8 * 60}

// StateQuietHours returns 20:00-08:00 for a US phone number (E.164) with a Florida or Oklahoma area
// code, and nil for any other number. The area code tells the state the number was issued in, which
// is what these laws go by when the contact's address is not known.
func StateQuietHours(phoneE164 string) *QuietHours {
	if _, ok := stateAreaCodes[nanpAreaCode(phoneE164)]; !ok {
		return nil
	}
	return &QuietHours{Start: "20:00", End: "08:00"}
}

// nanpAreaCode returns the area code (first three digits of the national number) of a country code
// 1 number, or "". It does not also require phonenumbers to place the number in the US: every code
// in stateAreaCodes is a US one, and a number too new for the library's metadata has no region,
// which would otherwise skip the state rule for it.
func nanpAreaCode(phoneE164 string) string {
	num, err := phonenumbers.Parse(phoneE164, "")
	if err != nil || num.GetCountryCode() != 1 {
		return ""
	}
	nsn := phonenumbers.GetNationalSignificantNumber(num)
	if len(nsn) != 10 {
		return ""
	}
	return nsn[:3]
}

// areaCodeZones overrides libphonenumber's zones for area codes where they are wrong in a way that
// matters for the state rule: it maps all of 689 (an Orlando overlay, Eastern) to America/Chicago,
// and all of 448 (the overlay of 850, the Florida panhandle, whose western part keeps Central time)
// to America/New_York only. For 850 itself the library knows each exchange's zone.
var areaCodeZones = map[string][]string{
	"689": {"America/New_York"},
	"448": {"America/New_York", "America/Chicago"},
}

// ValidTimeZone checks that name is an IANA time zone name, such as America/New_York or UTC. It
// refuses "" and "Local", which time.LoadLocation accepts but which mean the server's zone, not the
// contact's.
func ValidTimeZone(name string) error {
	_, err := loadZone(name)
	return err
}

// zoneCache keeps loaded zones: time.LoadLocation reads and parses a zone file on every call.
var zoneCache sync.Map // string -> *time.Location

func loadZone(name string) (*time.Location, error) {
	if loc, ok := zoneCache.Load(name); ok {
		return loc.(*time.Location), nil
	}
	if name == "" || name == "Local" {
		return nil, fmt.Errorf("time zone %q is not an IANA time zone name such as America/New_York", name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("time zone %q is not an IANA time zone name such as America/New_York", name)
	}
	zoneCache.Store(name, loc)
	return loc, nil
}

// ContactZones returns the zones whose local time decides when a business-initiated message may
// reach the contact, most specific knowledge first: the contact's own zone when it is a valid name;
// else the zones its phone number implies; else the account's zone; else UTC. It never returns an
// empty list. An invalid contact or account zone is skipped, not an error: it was validated when
// stored, and sending must not stop over it.
func ContactZones(contactZone, phoneE164, accountZone string) []*time.Location {
	if loc, err := loadZone(contactZone); err == nil {
		return []*time.Location{loc}
	}
	if locs := phoneZones(phoneE164); len(locs) > 0 {
		return locs
	}
	if loc, err := loadZone(accountZone); err == nil {
		return []*time.Location{loc}
	}
	return []*time.Location{time.UTC}
}

// phoneZones returns the zones libphonenumber gives for the number, or nil when it knows none. A
// number can span several (Idaho's 208 is Mountain and Pacific). The list is all or nothing: were
// a zone that fails to load dropped, a time quiet in that zone could pass.
func phoneZones(phoneE164 string) []*time.Location {
	num, err := phonenumbers.Parse(phoneE164, "")
	if err != nil {
		return nil
	}
	names, err := phonenumbers.GetTimezonesForNumber(num)
	if err != nil {
		return nil
	}
	if num.GetCountryCode() == 1 {
		if fixed, ok := areaCodeZones[nanpAreaCode(phoneE164)]; ok {
			names = fixed
		} else if nanpWide, err := phonenumbers.GetTimezonesForPrefix("1"); err == nil && slices.Equal(names, nanpWide) {
			// Non-geographic numbers (toll-free 8XX, 5XX) get every zone of the calling code, from
			// Guam to Newfoundland, which share no daytime: that says nothing about the contact.
			// Elsewhere a country-wide list is kept; it still names the contact's country.
			return nil
		}
	}
	var locs []*time.Location
	for _, name := range names {
		if name == phonenumbers.UNKNOWN_TIMEZONE {
			continue
		}
		loc, err := loadZone(name)
		if err != nil {
			return nil
		}
		if !slices.ContainsFunc(locs, func(l *time.Location) bool { return l.String() == loc.String() }) {
			locs = append(locs, loc)
		}
	}
	return locs
}

// nextAllowedHorizon is how far NextAllowed looks for a minute allowed in every zone. Quiet windows
// repeat daily, so two days cover every case but a DST change shifting zones against each other.
const nextAllowedHorizon = 48 * time.Hour

// NextAllowed decides when a business-initiated message may go to a contact whose local time is
// given by zones (see ContactZones) and whose phone is phoneE164, under the account's quiet hours q.
// It returns t itself when the message may go at t, else the first whole minute after t at which
// it may go in every zone. The state rule (StateQuietHours) adds its window to q's for Florida and
// Oklahoma numbers, so the stricter of the two holds at each end of the day.
//
// With q nil the account has no quiet hours and nothing is applied, not even the state rule. That
// is the account's choice: the service enforces what the business configured, and the README's
// Compliance section tells them the law.
//
// When no minute within two days is allowed in every zone (zones too far apart for the window, or
// q invalid), ok is false and next is the whole minute at or after t + 24h: the caller should not
// send, and may ask again then. Empty zones mean UTC.
func NextAllowed(t time.Time, q *QuietHours, phoneE164 string, zones []*time.Location) (next time.Time, ok bool) {
	if q == nil {
		return t, true
	}
	giveUp := ceilMinute(t.Add(24 * time.Hour))
	w, err := q.window()
	if err != nil {
		return giveUp, false
	}
	windows := []window{w}
	if StateQuietHours(phoneE164) != nil {
		windows = append(windows, stateWindow)
	}
	locs := slices.DeleteFunc(slices.Clone(zones), func(l *time.Location) bool { return l == nil })
	if len(locs) == 0 {
		locs = []*time.Location{time.UTC}
	}
	// Jump from one end of a quiet stretch to the next rather than step through minutes. Every
	// jump lands on a whole minute at least a minute later, so the loop ends.
	for c := t; c.Sub(t) <= nextAllowedHorizon; {
		until, quiet := quietUntil(c, windows, locs)
		if !quiet {
			return c, true
		}
		c = until
	}
	return giveUp, false
}

// quietUntil reports whether c is quiet in some zone and, if so, the earliest instant that could be
// allowed: until then at least one zone stays quiet. Within one zone offset, local minutes advance
// with absolute ones, so the window's end is exact; when a DST change comes first, the answer is
// the change, where the caller looks again (the end may have been skipped or may come twice).
func quietUntil(c time.Time, windows []window, locs []*time.Location) (time.Time, bool) {
	var until time.Time
	quiet := false
	for _, loc := range locs {
		local := c.In(loc)
		minute := local.Hour()*60 + local.Minute()
		for _, w := range windows {
			if !w.contains(minute) {
				continue
			}
			end := c.Truncate(time.Minute).Add(time.Duration(w.minutesLeft(minute)) * time.Minute)
			if _, change := local.ZoneBounds(); !change.IsZero() && change.Before(end) {
				end = ceilMinute(change)
			}
			if !quiet || end.After(until) {
				until = end
			}
			quiet = true
		}
	}
	return until, quiet
}

// ceilMinute rounds t up to a whole minute.
func ceilMinute(t time.Time) time.Time {
	if m := t.Truncate(time.Minute); !m.Equal(t) {
		return m.Add(time.Minute)
	}
	return t
}
