package models

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
)

// AutoRecharge is a sub-account's auto-recharge setting, as its agency sets and sees it.
type AutoRecharge struct {
	SubAccountID string  `json:"subAccountId"`
	Threshold    float64 `json:"threshold"`
	Amount       float64 `json:"amount"`
	WebhookURL   string  `json:"webhookUrl"`
}

// RechargeEvent is one low-balance event of a sub-account, owed one auto-recharge webhook.
type RechargeEvent struct {
	SubAccountID string
	Event        int
}

// IdempotencyKey is what the agency stores to grant the event's credits once (README, "Agencies and credits").
func (e RechargeEvent) IdempotencyKey() string {
	return fmt.Sprintf("recharge_%s_%d", e.SubAccountID, e.Event)
}

// SetAutoRecharge sets a sub-account's auto-recharge (the caller validated the URL). Errors: FORBIDDEN
// for a caller that is not an agency, NOT_FOUND for an id that is not one of its sub-accounts,
// VALIDATION_ERROR for the numbers.
func (s *Store) SetAutoRecharge(ctx context.Context, agency *Account, subID string, in AutoRecharge) (*AutoRecharge, error) {
	if !agency.IsAgency {
		return nil, Errorf(CodeForbidden, "only agency accounts manage sub-accounts")
	}
	threshold, err := CreditsToMilli(in.Threshold)
	if err != nil {
		return nil, Errorf(CodeValidation, "threshold: %s", ErrorMessage(err))
	}
	amount, err := CreditsToMilli(in.Amount)
	if err != nil || amount == 0 || in.Amount > MaxGrantCredits {
		return nil, Errorf(CodeValidation, "amount must be a positive number of credits, at most %g", float64(MaxGrantCredits))
	}
	if subID == "" || len(subID) > maxIDLength {
		return nil, notFound("sub-account")
	}
	var balance []int64
	err = s.db.NewUpdate().Model((*Account)(nil)).
		Set("auto_recharge_threshold_milli = ?", threshold).
		Set("auto_recharge_amount_milli = ?", amount).
		Set("auto_recharge_webhook_url = ?", in.WebhookURL).
		// Armed unless the balance is below the new threshold already; that low balance counts as an
		// event only when a reply brings it down further.
		Set("auto_recharge_armed = (credit_balance_milli >= ?)", threshold).
		Where("id = ? AND parent_id = ?", subID, agency.ID).
		Returning("credit_balance_milli").
		Scan(ctx, &balance)
	if err != nil {
		return nil, fmt.Errorf("set auto-recharge: %w", err)
	}
	if len(balance) == 0 {
		return nil, notFound("sub-account")
	}
	in.SubAccountID = subID
	in.Threshold, in.Amount = float64(threshold)/creditScale, float64(amount)/creditScale
	return &in, nil
}

// ErrNoCredits is returned when a sub-account cannot pay for a bot reply.
var ErrNoCredits = Errorf(CodeForbidden, "out of credits")

// chargeBotReply takes the bot reply's cost from a sub-account inside the reply's transaction: once
// per incoming message, never below zero (ErrNoCredits). When the balance falls below an armed
// auto-recharge threshold it disarms it and returns the low-balance event.
func chargeBotReply(ctx context.Context, tx bun.Tx, accountID, incomingID string, costMilli int64) (*RechargeEvent, error) {
	var balance []int64
	err := tx.NewUpdate().Model((*Account)(nil)).
		Set("credit_balance_milli = credit_balance_milli - ?", costMilli).
		Where("id = ? AND credit_balance_milli >= ?", accountID, costMilli).
		Returning("credit_balance_milli").
		Scan(ctx, &balance)
	if err != nil {
		return nil, err
	}
	if len(balance) == 0 {
		return nil, ErrNoCredits
	}
	t := &CreditTransaction{
		ID: newID(prefixCredit), AccountID: accountID, Kind: CreditBotReply, AmountMilli: -costMilli,
		BalanceMilli: balance[0], Description: "bot reply", Reference: &incomingID, CreatedAt: now(),
	}
	if _, err := tx.NewInsert().Model(t).Exec(ctx); err != nil {
		return nil, err
	}
	var events []int
	err = tx.NewUpdate().Model((*Account)(nil)).
		Set("auto_recharge_armed = ?", false).
		Set("auto_recharge_event = auto_recharge_event + 1").
		Where("id = ? AND auto_recharge_armed AND auto_recharge_threshold_milli IS NOT NULL AND credit_balance_milli < auto_recharge_threshold_milli", accountID).
		Returning("auto_recharge_event").
		Scan(ctx, &events)
	if err != nil || len(events) == 0 {
		return nil, err
	}
	return &RechargeEvent{SubAccountID: accountID, Event: events[0]}, nil
}

// rearmRecharge arms a sub-account's auto-recharge again once a grant lifts it to the threshold.
func rearmRecharge(ctx context.Context, tx bun.Tx, accountID string) error {
	_, err := tx.NewUpdate().Model((*Account)(nil)).
		Set("auto_recharge_armed = ?", true).
		Where("id = ? AND NOT auto_recharge_armed AND credit_balance_milli >= auto_recharge_threshold_milli", accountID).
		Exec(ctx)
	return err
}

// CanPayBotReply reports whether the account can pay costMilli for a bot reply (accounts that are not
// sub-accounts always can).
func (s *Store) CanPayBotReply(ctx context.Context, acc *Account, costMilli int64) bool {
	return acc.ParentID == nil || costMilli == 0 || acc.CreditMilli >= costMilli
}
