package models_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/nyaruka/phonenumbers"

	"funnelchat/models"
)

// TestPhoneNationalSQLMatchesLibrary: the search's national number of a stored phone
// (models.PhoneNationalSQL, which its index holds) is the phone number library's national significant
// number, for an example number of every country calling code the library knows, on this backend.
func TestPhoneNationalSQLMatchesLibrary(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	checked := 0
	for code := range phonenumbers.GetSupportedCallingCodes() {
		var num *phonenumbers.PhoneNumber
		if regions := phonenumbers.GetRegionCodesForCountryCode(code); len(regions) > 0 && regions[0] != "001" {
			num = phonenumbers.GetExampleNumber(regions[0])
		} else {
			num = phonenumbers.GetExampleNumberForNonGeoEntity(code)
		}
		if num == nil {
			continue
		}
		e164 := phonenumbers.Format(num, phonenumbers.E164)
		var got string
		if err := env.Store.DB().NewSelect().ColumnExpr(models.PhoneNationalSQL("t")).TableExpr("(SELECT ? AS phone) AS t", e164).Scan(ctx, &got); err != nil {
			t.Fatal(err)
		}
		if want := phonenumbers.GetNationalSignificantNumber(num); got != want {
			t.Errorf("calling code %d: national number of %s is %q, want %q", code, e164, got, want)
		}
		if want := "+" + strconv.Itoa(code) + got; want != e164 {
			t.Errorf("calling code %d: %s is not + code + national %q", code, e164, got)
		}
		checked++
	}
	if checked < 200 {
		t.Fatalf("checked %d calling codes, want every one the library has an example for", checked)
	}
}
