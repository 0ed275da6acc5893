package rules

import (
	"strings"
	"testing"
	"time"
)

func TestZoneCountry(t *testing.T) {
	for zone, want := range map[string]string{
		"America/New_York":    "US",
		"America/Los_Angeles": "US",
		"America/Toronto":     "CA",
		"Europe/London":       "GB",
		"Europe/Amsterdam":    "NL",
		"Europe/Brussels":     "BE", // zone.tab: Brussels is Belgium's, though NL and LU keep its time
		"Asia/Dubai":          "AE", // and Oman has Asia/Muscat
		"Asia/Muscat":         "OM",
		"Australia/Sydney":    "AU",
		"US/Eastern":          "US", // an alias of America/New_York
		"Asia/Calcutta":       "IN", // an alias of Asia/Kolkata
		// No one country.
		"UTC":            "",
		"Etc/GMT+5":      "",
		"CET":            "",
		"GB":             "", // an alias of Europe/London, which Guernsey, Man and Jersey share
		"America/Virgin": "", // an alias of America/Puerto_Rico, the time of a score of countries
		"Mars/Base":      "",
		"":               "",
	} {
		if got := ZoneCountry(zone); got != want {
			t.Errorf("ZoneCountry(%q) = %q, want %q", zone, got, want)
		}
	}
}

// The table holds real zone names: it was generated from the tz database, and every name loads with
// the zone data compiled into the binary. The region a zone gives is a country with a numbering plan,
// or none.
func TestZoneCountriesAreRealZones(t *testing.T) {
	if len(zoneCountries) < 400 {
		t.Fatalf("%d zones in the table, want the tz database's 400 and more", len(zoneCountries))
	}
	for zone, country := range zoneCountries {
		if _, err := time.LoadLocation(zone); err != nil {
			t.Errorf("zone %q (%s) does not load: %v", zone, country, err)
		}
		// Antarctica and a few all but uninhabited territories (Pitcairn, South Georgia) have zones but
		// no numbering plan.
		want := country
		if _, err := Country("country", country); err != nil {
			want = ""
		}
		if region := PhoneRegion("", zone); region != want {
			t.Errorf("zone %q of %s gives the region %q, want %q", zone, country, region, want)
		}
	}
}

func TestPhoneRegion(t *testing.T) {
	tests := []struct{ defaultCountry, zone, want string }{
		{"", "America/New_York", "US"},
		{"GB", "America/New_York", "GB"},
		{"GB", "UTC", "GB"},
		{"", "UTC", ""},
		{"", "Etc/GMT-3", ""},
		{"", "Pacific/Pitcairn", ""}, // PN, which has no numbering plan
	}
	for _, tt := range tests {
		if got := PhoneRegion(tt.defaultCountry, tt.zone); got != tt.want {
			t.Errorf("PhoneRegion(%q, %q) = %q, want %q", tt.defaultCountry, tt.zone, got, tt.want)
		}
	}
}

func TestCountry(t *testing.T) {
	for in, want := range map[string]string{"US": "US", "gb": "GB", " De ": "DE", "IM": "IM"} {
		if got, err := Country("defaultCountry", in); err != nil || got != want {
			t.Errorf("Country(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "USA", "U", "XX", "ZZ", "001", "U1", "ÜS", "AQ"} {
		got, err := Country("defaultCountry", in)
		if err == nil || !strings.HasPrefix(err.Error(), "defaultCountry must be an ISO 3166 alpha-2 country code") {
			t.Errorf("Country(%q) = %q, %v; want an error naming defaultCountry", in, got, err)
		}
	}
}
