package models

import (
	"context"
	"fmt"
	"strings"

	"funnelchat/models/rules"
)

// A phone number written without a country code is read in the account's region, wherever a contact's
// phone comes in: POST /v1/contacts (CreateOrGetContact), the lookup by phone (ContactByPhone) and the
// CSV import (ImportContactCSV). Numbers from providers and channel settings always carry theirs.

// PhoneRegion returns the country in which the account reads a phone number written without a country
// code (rules.PhoneRegion): its defaultCountry, else its time zone's country when that zone is one
// country's, else "" (such a number is then INVALID_PHONE).
func (s *Store) PhoneRegion(ctx context.Context, accountID string) (string, error) {
	var (
		country *string
		zone    string
	)
	err := s.db.NewSelect().TableExpr("compliance_settings").ColumnExpr("default_country, time_zone").
		Where("account_id = ?", accountID).Scan(ctx, &country, &zone)
	if isNoRows(err) {
		return rules.PhoneRegion("", defaultTimeZone), nil
	}
	if err != nil {
		return "", fmt.Errorf("phone region: %w", err)
	}
	if country == nil {
		return rules.PhoneRegion("", zone), nil
	}
	return rules.PhoneRegion(*country, zone), nil
}

// phoneRegionFor is the region to read phone in for the account: PhoneRegion when phone has no country
// code, else "" without asking the database (a number with its country code needs none).
func (s *Store) phoneRegionFor(ctx context.Context, accountID, phone string) (string, error) {
	p := strings.TrimSpace(phone)
	if p == "" || strings.HasPrefix(p, "+") || strings.HasPrefix(p, "00") {
		return "", nil
	}
	return s.PhoneRegion(ctx, accountID)
}

// ZoneRegion is the region PhoneRegion gives an account without a defaultCountry whose time zone is
// zone: the zone's country when it is one country's, else "".
func ZoneRegion(zone string) string {
	return rules.PhoneRegion("", zone)
}
