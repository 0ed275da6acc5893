package rules

import (
	"fmt"
	"strings"

	"github.com/nyaruka/phonenumbers"
)

//go:generate go run zonecountry_gen.go

// PhoneRegion is the country in which an account's phone numbers written without a country code are
// read: its defaultCountry when it set one (Country checked it), else the country of its time zone
// when that zone is one country's (ZoneCountry) and the country has a telephone numbering plan, else
// "" (such numbers are then invalid).
func PhoneRegion(defaultCountry, accountZone string) string {
	if defaultCountry != "" {
		return defaultCountry
	}
	if c := ZoneCountry(accountZone); c != "" && phonenumbers.GetCountryCodeForRegion(c) != 0 {
		return c
	}
	return ""
}

// ZoneCountry returns the ISO 3166 alpha-2 country of an IANA time zone name (America/New_York: US,
// US/Eastern: US, Europe/London: GB), or "" for a name that is no one country's (UTC, Etc/GMT+5, GB,
// an unknown name). The table is generated from the tz database's zone.tab, zone1970.tab and links
// (zonecountry_gen.go says how).
func ZoneCountry(zone string) string {
	return zoneCountries[zone]
}

// Country returns code as an ISO 3166 alpha-2 country code in upper case, if it is one with a
// telephone numbering plan (one libphonenumber knows: a default country is only good for reading
// phone numbers). Errors are plain, naming the field as field.
func Country(field, code string) (string, error) {
	c := strings.ToUpper(strings.TrimSpace(code))
	if len(c) == 2 && c[0] >= 'A' && c[0] <= 'Z' && c[1] >= 'A' && c[1] <= 'Z' && phonenumbers.GetCountryCodeForRegion(c) != 0 {
		return c, nil
	}
	return "", fmt.Errorf("%s must be an ISO 3166 alpha-2 country code with a telephone numbering plan, such as US or GB", field)
}
