package rules

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nyaruka/phonenumbers"
)

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("LoadLocation(%q): %v", name, err)
	}
	return loc
}

func zoneNames(locs []*time.Location) string {
	names := make([]string, len(locs))
	for i, l := range locs {
		names[i] = l.String()
	}
	return strings.Join(names, ",")
}

func TestParseClock(t *testing.T) {
	good := []struct {
		in   string
		want int
	}{
		{"00:00", 0},
		{"08:00", 480},
		{"21:30", 1290},
		{"23:59", 1439},
	}
	for _, tt := range good {
		got, err := ParseClock(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseClock(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{"24:00", "7:00", "07:60", "", "7:0", "07-00", "0a:00", "-1:00", " 7:00", "07:00 ", "0700", "07:000", "１2:00"} {
		if got, err := ParseClock(in); err == nil {
			t.Errorf("ParseClock(%q) = %d, want an error", in, got)
		}
	}
}

func TestParseQuietHours(t *testing.T) {
	good := []struct {
		in   string
		want *QuietHours
	}{
		{"21:00-08:00", &QuietHours{"21:00", "08:00"}},
		{"12:00-13:00", &QuietHours{"12:00", "13:00"}},
		{" 22:30 - 07:15 ", &QuietHours{"22:30", "07:15"}},
		{"00:00-23:59", &QuietHours{"00:00", "23:59"}},
		{"off", nil},
		{"OFF", nil},
		{" Off ", nil},
	}
	for _, tt := range good {
		got, err := ParseQuietHours(tt.in)
		if err != nil {
			t.Errorf("ParseQuietHours(%q): %v", tt.in, err)
			continue
		}
		if (got == nil) != (tt.want == nil) || got != nil && *got != *tt.want {
			t.Errorf("ParseQuietHours(%q) = %v, want %v", tt.in, got, tt.want)
		}
		if got != nil {
			if again, err := ParseQuietHours(got.String()); err != nil || *again != *got {
				t.Errorf("ParseQuietHours(%q) = %v, %v; want the same window back", got.String(), again, err)
			}
		}
	}
	bad := []struct {
		in, mention string // mention: what the error must name
	}{
		{"21:00-21:00", "same time"},
		{"21:00", "no end"},
		{"", "empty"},
		{"   ", "empty"},
		{"none", "no end"},
		{"24:00-08:00", `"24:00"`},
		{"21:00-7:00", `"7:00"`},
		{"21:00-07:60", `"07:60"`},
		{"21:00-08:00-09:00", `"08:00-09:00"`},
		{"-08:00", `""`},
	}
	for _, tt := range bad {
		got, err := ParseQuietHours(tt.in)
		if err == nil {
			t.Errorf("ParseQuietHours(%q) = %v, want an error", tt.in, got)
			continue
		}
		if !strings.Contains(err.Error(), tt.mention) {
			t.Errorf("ParseQuietHours(%q) = %v, want an error naming %s", tt.in, err, tt.mention)
		}
	}
}

func TestQuietHoursValidate(t *testing.T) {
	for _, q := range []QuietHours{{"21:00", "08:00"}, {"12:00", "13:00"}, {"23:59", "00:00"}} {
		if err := q.Validate(); err != nil {
			t.Errorf("%v.Validate(): %v", q, err)
		}
	}
	for _, q := range []QuietHours{{}, {"21:00", ""}, {"", "08:00"}, {"08:00", "08:00"}, {"21:00", "8:00"}} {
		if err := q.Validate(); err == nil {
			t.Errorf("%#v.Validate() = nil, want an error", q)
		}
	}
}

func TestValidTimeZone(t *testing.T) {
	for _, name := range []string{"UTC", "America/New_York", "Europe/Paris", "Pacific/Honolulu", "Asia/Kolkata"} {
		if err := ValidTimeZone(name); err != nil {
			t.Errorf("ValidTimeZone(%q): %v", name, err)
		}
	}
	for _, name := range []string{"", "Local", "Mars/Olympus_Mons", "america/new_york_", "../etc/passwd", "/etc/localtime", "Etc/Unknown", "America/New_York "} {
		if err := ValidTimeZone(name); err == nil {
			t.Errorf("ValidTimeZone(%q) = nil, want an error", name)
		}
	}
}

func TestContactZones(t *testing.T) {
	tests := []struct {
		name                         string
		contactZone, phone, acctZone string
		want                         string
	}{
		{"contact's own zone wins over the phone's", "Europe/Paris", "+12125550123", "America/Chicago", "Europe/Paris"},
		{"New York number", "", "+12125550123", "America/Chicago", "America/New_York"},
		{"invalid contact zone falls to the phone", "Mars/Base", "+12125550123", "UTC", "America/New_York"},
		{"Local is not a contact's zone", "Local", "+12125550123", "UTC", "America/New_York"},
		{"Idaho number spans Mountain and Pacific", "", "+12085550123", "UTC", "America/Boise,America/Los_Angeles"},
		{"Florida panhandle exchange on Central time", "", "+18504320000", "UTC", "America/Chicago"},
		{"689 is Orlando, Eastern (libphonenumber says Central)", "", "+16895550123", "UTC", "America/New_York"},
		{"448 overlays the panhandle, both zones", "", "+14485550123", "UTC", "America/New_York,America/Chicago"},
		{"international freephone is Etc/Unknown: account zone", "", "+80012345678", "Europe/Berlin", "Europe/Berlin"},
		{"US toll-free names every NANP zone: account zone", "", "+18005550199", "America/Denver", "America/Denver"},
		{"UK mobile", "", "+447911123456", "America/New_York", "Europe/Guernsey,Europe/Isle_of_Man,Europe/London"},
		{"no phone: account zone", "", "", "Asia/Tokyo", "Asia/Tokyo"},
		{"not a phone number: account zone", "", "not a phone", "Asia/Tokyo", "Asia/Tokyo"},
		{"invalid account zone: UTC", "", "", "Nowhere/City", "UTC"},
		{"nothing known: UTC", "", "", "", "UTC"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := zoneNames(ContactZones(tt.contactZone, tt.phone, tt.acctZone))
			if got != tt.want {
				t.Errorf("ContactZones(%q, %q, %q) = %s, want %s", tt.contactZone, tt.phone, tt.acctZone, got, tt.want)
			}
		})
	}
}

func TestStateQuietHours(t *testing.T) {
	for code, state := range stateAreaCodes {
		phone := "+1" + code + "5550123"
		q := StateQuietHours(phone)
		if q == nil || *q != (QuietHours{"20:00", "08:00"}) {
			t.Errorf("StateQuietHours(%s) (%s) = %v, want 20:00-08:00", phone, state, q)
		}
	}
	for _, phone := range []string{"+12125550123", "+14155550123", "+18005550199", "+443055550123", "+13055", "13055550123", "", "+1 305 555 0123 ext"} {
		if q := StateQuietHours(phone); q != nil {
			t.Errorf("StateQuietHours(%q) = %v, want nil", phone, q)
		}
	}
	// The lists themselves, so that an edit that drops a code is noticed.
	var fl, ok []string
	for _, code := range []string{"239", "305", "321", "324", "352", "386", "407", "448", "561", "645", "656", "689", "727", "728", "754", "772", "786", "813", "850", "863", "904", "941", "954"} {
		if stateAreaCodes[code] != "FL" {
			fl = append(fl, code)
		}
	}
	for _, code := range []string{"405", "539", "572", "580", "918"} {
		if stateAreaCodes[code] != "OK" {
			ok = append(ok, code)
		}
	}
	if len(fl) > 0 || len(ok) > 0 || len(stateAreaCodes) != 28 {
		t.Errorf("stateAreaCodes lacks FL %v, OK %v, or has extras (%d codes, want 28)", fl, ok, len(stateAreaCodes))
	}
}

// TestStateAreaCodesMatchGeocoding checks stateAreaCodes against libphonenumber's geocoding, both
// ways, so that an upgrade of the library that knows a new Florida or Oklahoma area code fails here.
func TestStateAreaCodesMatchGeocoding(t *testing.T) {
	skipUnderRace(t)
	seen := map[string]bool{}
	for npa := 200; npa <= 999; npa++ {
		code := fmt.Sprint(npa)
		for nxx := 200; nxx <= 999; nxx += 23 {
			num, err := phonenumbers.Parse(fmt.Sprintf("+1%s%d0123", code, nxx), "")
			if err != nil {
				continue
			}
			place, _ := phonenumbers.GetGeocodingForNumber(num, "en")
			var state string
			switch {
			case place == "Florida" || strings.HasSuffix(place, ", FL"):
				state = "FL"
			case place == "Oklahoma" || strings.HasSuffix(place, ", OK"):
				state = "OK"
			default:
				continue
			}
			seen[code] = true
			if stateAreaCodes[code] != state {
				t.Errorf("libphonenumber places +1 %s %d in %s (%s); stateAreaCodes has %q", code, nxx, state, place, stateAreaCodes[code])
				break
			}
		}
	}
	for code := range stateAreaCodes {
		if !seen[code] {
			t.Errorf("stateAreaCodes has %s, which libphonenumber places in no state of the rule", code)
		}
	}
}

// at builds a time in loc; the tests never wait on the clock.
func at(loc *time.Location, y int, mo time.Month, d, h, mi int) time.Time {
	return time.Date(y, mo, d, h, mi, 0, 0, loc)
}

func TestNextAllowedWindows(t *testing.T) {
	utc := time.UTC
	night := &QuietHours{"21:00", "08:00"}
	lunch := &QuietHours{"12:00", "13:00"}
	tests := []struct {
		name string
		q    *QuietHours
		t    time.Time
		want time.Time
	}{
		{"wrap: evening before start", night, at(utc, 2026, 6, 15, 20, 59), at(utc, 2026, 6, 15, 20, 59)},
		{"wrap: exactly at start is quiet", night, at(utc, 2026, 6, 15, 21, 0), at(utc, 2026, 6, 16, 8, 0)},
		{"wrap: before midnight", night, at(utc, 2026, 6, 15, 23, 30), at(utc, 2026, 6, 16, 8, 0)},
		{"wrap: after midnight", night, at(utc, 2026, 6, 16, 0, 0), at(utc, 2026, 6, 16, 8, 0)},
		{"wrap: seconds before end", night, time.Date(2026, 6, 16, 7, 59, 30, 5, utc), at(utc, 2026, 6, 16, 8, 0)},
		{"wrap: exactly at end is allowed", night, at(utc, 2026, 6, 16, 8, 0), at(utc, 2026, 6, 16, 8, 0)},
		{"allowed time with seconds is kept", night, time.Date(2026, 6, 16, 9, 0, 12, 345, utc), time.Date(2026, 6, 16, 9, 0, 12, 345, utc)},
		{"same day: before start", lunch, at(utc, 2026, 6, 15, 11, 59), at(utc, 2026, 6, 15, 11, 59)},
		{"same day: exactly at start is quiet", lunch, at(utc, 2026, 6, 15, 12, 0), at(utc, 2026, 6, 15, 13, 0)},
		{"same day: inside", lunch, time.Date(2026, 6, 15, 12, 59, 59, 0, utc), at(utc, 2026, 6, 15, 13, 0)},
		{"same day: exactly at end is allowed", lunch, at(utc, 2026, 6, 15, 13, 0), at(utc, 2026, 6, 15, 13, 0)},
		{"same day: night is allowed", lunch, at(utc, 2026, 6, 15, 23, 0), at(utc, 2026, 6, 15, 23, 0)},
		{"no quiet hours", nil, at(utc, 2026, 6, 15, 3, 0), at(utc, 2026, 6, 15, 3, 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := NextAllowed(tt.t, tt.q, "", []*time.Location{utc})
			if !ok || !got.Equal(tt.want) {
				t.Errorf("NextAllowed(%v, %v) = %v, %v; want %v, true", tt.t, tt.q, got, ok, tt.want)
			}
		})
	}
}

func TestNextAllowedState(t *testing.T) {
	ny, chi, london := mustZone(t, "America/New_York"), mustZone(t, "America/Chicago"), mustZone(t, "Europe/London")
	night := &QuietHours{"21:00", "08:00"}
	tests := []struct {
		name, phone, contactZone string
		q                        *QuietHours
		t, want                  time.Time
	}{
		{"Florida 20:30: deferred to 08:00", "+13055550123", "", night, at(ny, 2026, 6, 15, 20, 30), at(ny, 2026, 6, 16, 8, 0)},
		{"Florida exactly 20:00 is quiet", "+13055550123", "", night, at(ny, 2026, 6, 15, 20, 0), at(ny, 2026, 6, 16, 8, 0)},
		{"Florida 19:59 allowed", "+13055550123", "", night, at(ny, 2026, 6, 15, 19, 59), at(ny, 2026, 6, 15, 19, 59)},
		{"Florida 07:30: both end at 08:00", "+13055550123", "", night, at(ny, 2026, 6, 15, 7, 30), at(ny, 2026, 6, 15, 8, 0)},
		{"Florida with a later account morning", "+19045550123", "", &QuietHours{"22:00", "09:00"}, at(ny, 2026, 6, 15, 20, 30), at(ny, 2026, 6, 16, 9, 0)},
		{"Florida with a lunch window: evening", "+17275550123", "", &QuietHours{"12:00", "13:00"}, at(ny, 2026, 6, 15, 20, 30), at(ny, 2026, 6, 16, 8, 0)},
		{"Florida with a lunch window: lunch", "+17275550123", "", &QuietHours{"12:00", "13:00"}, at(ny, 2026, 6, 15, 12, 30), at(ny, 2026, 6, 15, 13, 0)},
		{"Florida 689 on Eastern time", "+16895550123", "", night, at(ny, 2026, 6, 15, 20, 30), at(ny, 2026, 6, 16, 8, 0)},
		{"Florida panhandle on Central time", "+18504320000", "", night, at(chi, 2026, 6, 15, 20, 30), at(chi, 2026, 6, 16, 8, 0)},
		{"Florida number, contact's zone London", "+13055550123", "Europe/London", night, at(london, 2026, 6, 15, 20, 30), at(london, 2026, 6, 16, 8, 0)},
		{"Florida with no quiet hours: nothing applies", "+13055550123", "", nil, at(ny, 2026, 6, 15, 23, 0), at(ny, 2026, 6, 15, 23, 0)},
		{"Oklahoma City 20:30", "+14055550123", "", night, at(chi, 2026, 6, 15, 20, 30), at(chi, 2026, 6, 16, 8, 0)},
		{"Tulsa 07:59", "+19185550123", "", night, at(chi, 2026, 6, 15, 7, 59), at(chi, 2026, 6, 15, 8, 0)},
		{"Oklahoma 572 overlay", "+15725550123", "", night, at(chi, 2026, 6, 15, 20, 0), at(chi, 2026, 6, 16, 8, 0)},
		{"New York 20:30 allowed", "+12125550123", "", night, at(ny, 2026, 6, 15, 20, 30), at(ny, 2026, 6, 15, 20, 30)},
		{"Texas 20:30 allowed", "+12145550123", "", night, at(chi, 2026, 6, 15, 20, 30), at(chi, 2026, 6, 15, 20, 30)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			zones := ContactZones(tt.contactZone, tt.phone, "UTC")
			got, ok := NextAllowed(tt.t, tt.q, tt.phone, zones)
			if !ok || !got.Equal(tt.want) {
				t.Errorf("NextAllowed(%v, %v, %s, %s) = %v, %v; want %v, true", tt.t, tt.q, tt.phone, zoneNames(zones), got, ok, tt.want)
			}
		})
	}
}

func TestNextAllowedSeveralZones(t *testing.T) {
	la, ny, hnl := mustZone(t, "America/Los_Angeles"), mustZone(t, "America/New_York"), mustZone(t, "Pacific/Honolulu")
	night := &QuietHours{"21:00", "08:00"}
	idaho := ContactZones("", "+12085550123", "UTC")
	tests := []struct {
		name  string
		zones []*time.Location
		q     *QuietHours
		t     time.Time
		want  time.Time
	}{
		{"Idaho: 07:30 Pacific is 08:30 Mountain", idaho, night, at(la, 2026, 6, 15, 7, 30), at(la, 2026, 6, 15, 8, 0)},
		{"Idaho: 20:30 Pacific is 21:30 Mountain", idaho, night, at(la, 2026, 6, 15, 20, 30), at(la, 2026, 6, 16, 8, 0)},
		{"Idaho: midday", idaho, night, at(la, 2026, 6, 15, 12, 0), at(la, 2026, 6, 15, 12, 0)},
		{"New York and Honolulu: waits for 08:00 in Honolulu", []*time.Location{ny, hnl}, night, at(ny, 2026, 6, 15, 10, 0), at(hnl, 2026, 6, 15, 8, 0)},
		{"New York and Honolulu: 20:59 New York", []*time.Location{ny, hnl}, night, at(ny, 2026, 6, 15, 20, 59), at(ny, 2026, 6, 15, 20, 59)},
		{"New York and Honolulu: 21:00 New York", []*time.Location{ny, hnl}, night, at(ny, 2026, 6, 15, 21, 0), at(hnl, 2026, 6, 16, 8, 0)},
		{"no zones means UTC", nil, night, at(time.UTC, 2026, 6, 15, 22, 0), at(time.UTC, 2026, 6, 16, 8, 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := NextAllowed(tt.t, tt.q, "", tt.zones)
			if !ok || !got.Equal(tt.want) {
				t.Errorf("NextAllowed(%v, %v, %s) = %v, %v; want %v, true", tt.t, tt.q, zoneNames(tt.zones), got, ok, tt.want)
			}
		})
	}
}

func TestNextAllowedNoCommonMinute(t *testing.T) {
	ny, la := mustZone(t, "America/New_York"), mustZone(t, "America/Los_Angeles")
	// Allowed only 10:00-11:00, which New York and Los Angeles never share.
	q := &QuietHours{"11:00", "10:00"}
	start := time.Date(2026, 6, 15, 12, 0, 30, 0, ny)
	got, ok := NextAllowed(start, q, "", []*time.Location{ny, la})
	if want := at(ny, 2026, 6, 16, 12, 1); ok || !got.Equal(want) {
		t.Errorf("NextAllowed = %v, %v; want %v, false", got, ok, want)
	}
	// An invalid window gives the same answer rather than sending.
	got, ok = NextAllowed(start, &QuietHours{"21:00", "21:00"}, "", []*time.Location{ny})
	if want := at(ny, 2026, 6, 16, 12, 1); ok || !got.Equal(want) {
		t.Errorf("NextAllowed with an invalid window = %v, %v; want %v, false", got, ok, want)
	}
}

func TestNextAllowedDST(t *testing.T) {
	ny := mustZone(t, "America/New_York")
	utc := time.UTC
	tests := []struct {
		name    string
		q       *QuietHours
		t, want time.Time
	}{
		// 2026-03-08: clocks go from 02:00 EST to 03:00 EDT.
		{"spring forward: night is an hour shorter", &QuietHours{"21:00", "08:00"}, at(ny, 2026, 3, 7, 23, 0), at(utc, 2026, 3, 8, 12, 0)},
		{"spring forward: end inside the skipped hour", &QuietHours{"22:00", "02:30"}, at(ny, 2026, 3, 8, 1, 30), at(utc, 2026, 3, 8, 7, 0)},
		{"spring forward: start inside the skipped hour", &QuietHours{"02:30", "06:00"}, at(ny, 2026, 3, 8, 1, 59), at(ny, 2026, 3, 8, 1, 59)},
		{"spring forward: after the skipped start", &QuietHours{"02:30", "06:00"}, at(ny, 2026, 3, 8, 3, 0), at(ny, 2026, 3, 8, 6, 0)},
		// 2026-11-01: clocks go from 02:00 EDT back to 01:00 EST.
		{"fall back: night is an hour longer", &QuietHours{"21:00", "08:00"}, at(ny, 2026, 10, 31, 23, 0), at(utc, 2026, 11, 1, 13, 0)},
		{"fall back: first 01:30 ends the window", &QuietHours{"22:00", "01:30"}, at(ny, 2026, 10, 31, 23, 0), at(utc, 2026, 11, 1, 5, 30)},
		{"fall back: first 01:45 is allowed", &QuietHours{"22:00", "01:30"}, at(utc, 2026, 11, 1, 5, 45), at(utc, 2026, 11, 1, 5, 45)},
		{"fall back: repeated 01:00 is quiet again", &QuietHours{"22:00", "01:30"}, at(utc, 2026, 11, 1, 6, 0), at(utc, 2026, 11, 1, 6, 30)},
		// The contract goes by the clock: at the change it reads 01:00 again, outside the window
		// until the second 01:30.
		{"fall back: clock goes back out of the window", &QuietHours{"01:30", "07:00"}, at(utc, 2026, 11, 1, 5, 45), at(utc, 2026, 11, 1, 6, 0)},
		{"fall back: second 01:30 is quiet until 07:00 EST", &QuietHours{"01:30", "07:00"}, at(utc, 2026, 11, 1, 6, 30), at(utc, 2026, 11, 1, 12, 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := NextAllowed(tt.t, tt.q, "", []*time.Location{ny})
			if !ok || !got.Equal(tt.want) {
				t.Errorf("NextAllowed(%v, %v) = %v, %v; want %v (%v), true", tt.t, tt.q, got.In(ny), ok, tt.want.In(ny), tt.want.UTC())
			}
		})
	}
}

// TestNextAllowedFirstMinute compares NextAllowed with a minute-by-minute search over many start
// times, DST changes included: the answer is never before t, is t or a whole minute, is allowed in
// every zone, and no whole minute between t and it is.
func TestNextAllowedFirstMinute(t *testing.T) {
	zones := func(names ...string) []*time.Location {
		locs := make([]*time.Location, len(names))
		for i, n := range names {
			locs[i] = mustZone(t, n)
		}
		return locs
	}
	tests := []struct {
		name  string
		q     QuietHours
		phone string
		zones []*time.Location
		from  time.Time
	}{
		{"UTC night", QuietHours{"21:00", "08:00"}, "", zones("UTC"), at(time.UTC, 2026, 6, 14, 0, 0)},
		{"New York spring forward", QuietHours{"22:00", "02:30"}, "", zones("America/New_York"), at(time.UTC, 2026, 3, 6, 0, 0)},
		{"New York fall back", QuietHours{"22:00", "01:30"}, "", zones("America/New_York"), at(time.UTC, 2026, 10, 30, 0, 0)},
		{"Florida, account morning later", QuietHours{"22:00", "09:00"}, "+13055550123", zones("America/New_York"), at(time.UTC, 2026, 10, 30, 0, 0)},
		{"Idaho", QuietHours{"21:00", "08:00"}, "+12085550123", zones("America/Boise", "America/Los_Angeles"), at(time.UTC, 2026, 3, 6, 0, 0)},
		{"New York and Honolulu", QuietHours{"21:00", "08:00"}, "", zones("America/New_York", "Pacific/Honolulu"), at(time.UTC, 2026, 11, 0, 0, 0)},
		{"Lord Howe half-hour DST", QuietHours{"01:45", "02:15"}, "", zones("Australia/Lord_Howe"), at(time.UTC, 2026, 4, 3, 0, 0)},
		{"no common minute", QuietHours{"11:00", "10:00"}, "", zones("America/New_York", "America/Los_Angeles"), at(time.UTC, 2026, 6, 14, 0, 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			windows := []window{}
			w, err := tt.q.window()
			if err != nil {
				t.Fatal(err)
			}
			windows = append(windows, w)
			if StateQuietHours(tt.phone) != nil {
				windows = append(windows, stateWindow)
			}
			allowed := func(x time.Time) bool {
				for _, loc := range tt.zones {
					l := x.In(loc)
					for _, w := range windows {
						if w.contains(l.Hour()*60 + l.Minute()) {
							return false
						}
					}
				}
				return true
			}
			// Start times 37 minutes and 13 seconds apart over four days, so that they fall on every
			// part of the window and on both sides of each change.
			for start := tt.from; start.Before(tt.from.Add(96 * time.Hour)); start = start.Add(37*time.Minute + 13*time.Second) {
				got, ok := NextAllowed(start, &tt.q, tt.phone, tt.zones)
				if got.Before(start) {
					t.Fatalf("NextAllowed(%v) = %v, before t", start, got)
				}
				if !got.Equal(start) && !got.Equal(got.Truncate(time.Minute)) {
					t.Fatalf("NextAllowed(%v) = %v, not a whole minute", start, got)
				}
				if got.Equal(start) != (ok && allowed(start)) {
					t.Fatalf("NextAllowed(%v) = %v, %v; allowed at t is %v", start, got, ok, allowed(start))
				}
				if ok && !allowed(got) {
					t.Fatalf("NextAllowed(%v) = %v, which is quiet", start, got)
				}
				limit := got
				if !ok {
					limit = start.Add(nextAllowedHorizon)
				}
				for m := start.Truncate(time.Minute).Add(time.Minute); m.Before(limit); m = m.Add(time.Minute) {
					if allowed(m) {
						t.Fatalf("NextAllowed(%v) = %v, %v; %v was allowed before it", start, got, ok, m)
					}
				}
			}
		})
	}
}
