package models

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/uptrace/bun"
)

// CreditTransaction is one change of an account's credit balance.
type CreditTransaction struct {
	bun.BaseModel `bun:"table:credit_transactions"`

	ID             string    `bun:"id,pk"`
	AccountID      string    `bun:"account_id"`
	Kind           string    `bun:"kind"`
	AmountMilli    int64     `bun:"amount_milli"`
	BalanceMilli   int64     `bun:"balance_after_milli"`
	Description    string    `bun:"description"`
	ActorAccountID *string   `bun:"actor_account_id"`
	Reference      *string   `bun:"reference"`
	CreatedAt      time.Time `bun:"created_at"`
}

// Credit transaction kinds.
const (
	CreditGrant    = "grant"
	CreditBotReply = "bot_reply"
)

// Limits of a credit grant.
const (
	MaxGrantCredits      = 1e9
	maxCreditDescription = 500
)

// GrantInput is an agency's grant of credits to one of its sub-accounts.
type GrantInput struct {
	Email       string
	Amount      float64
	Description string
}

// Grant is the outcome of a credit grant (POST /v1/subaccounts/credits).
type Grant struct {
	SubAccountID string  `json:"sub_account_id"`
	CreditsAdded float64 `json:"credits_added"`
	NewBalance   float64 `json:"new_balance"`
}

// Validate checks a grant. Errors: VALIDATION_ERROR.
func (in *GrantInput) Validate() error {
	in.Description = strings.TrimSpace(in.Description)
	if in.Amount <= 0 || in.Amount > MaxGrantCredits {
		return Errorf(CodeValidation, "amount must be a positive number of credits, at most %g", float64(MaxGrantCredits))
	}
	if _, err := CreditsToMilli(in.Amount); err != nil {
		return Errorf(CodeValidation, "amount: %s", ErrorMessage(err))
	}
	if strings.TrimSpace(in.Email) == "" {
		return Errorf(CodeValidation, "email is required")
	}
	return checkText("description", in.Description, maxCreditDescription)
}

// GrantCredits adds credits to a sub-account of the agency: the balance update and its transaction
// record happen in one database transaction, exact under any concurrency. When done is given, it runs
// in the same transaction (the idempotency record of the request). Errors: FORBIDDEN for a caller that
// is not an agency, NOT_FOUND for an email that is not one of its sub-accounts (whether or not the
// account exists elsewhere).
func (s *Store) GrantCredits(ctx context.Context, agency *Account, in GrantInput, done func(context.Context, bun.Tx, *Grant) error) (*Grant, error) {
	if !agency.IsAgency {
		return nil, Errorf(CodeForbidden, "only agency accounts can grant credits")
	}
	email, err := NormalizeEmail(in.Email)
	if err != nil || email == "" {
		return nil, Errorf(CodeNotFound, "no sub-account with that email")
	}
	milli, err := CreditsToMilli(in.Amount)
	if err != nil {
		return nil, err
	}
	var grant *Grant
	err = s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var ids []string
		if err := tx.NewSelect().Model((*Account)(nil)).Column("id").Where("email = ? AND parent_id = ?", email, agency.ID).Scan(ctx, &ids); err != nil {
			return err
		}
		if len(ids) == 0 {
			return Errorf(CodeNotFound, "no sub-account with email %s", email)
		}
		balance, err := addCredits(ctx, tx, ids[0], milli)
		if err != nil {
			return err
		}
		t := &CreditTransaction{
			ID: newID(prefixCredit), AccountID: ids[0], Kind: CreditGrant, AmountMilli: milli, BalanceMilli: balance,
			Description: in.Description, ActorAccountID: &agency.ID, CreatedAt: now(),
		}
		if _, err := tx.NewInsert().Model(t).Exec(ctx); err != nil {
			return err
		}
		if err := rearmRecharge(ctx, tx, ids[0]); err != nil {
			return err
		}
		grant = &Grant{SubAccountID: ids[0], CreditsAdded: float64(milli) / creditScale, NewBalance: float64(balance) / creditScale}
		if done != nil {
			return done(ctx, tx, grant)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("grant credits: %w", err)
	}
	return grant, nil
}

// addCredits changes a balance by delta in one statement and returns the new balance.
func addCredits(ctx context.Context, tx bun.Tx, accountID string, delta int64) (int64, error) {
	var balance []int64
	err := tx.NewUpdate().Model((*Account)(nil)).
		Set("credit_balance_milli = credit_balance_milli + ?", delta).
		Where("id = ?", accountID).
		Returning("credit_balance_milli").
		Scan(ctx, &balance)
	if err != nil {
		return 0, err
	}
	if len(balance) != 1 {
		return 0, notFound("account")
	}
	if balance[0] > maxCredits*creditScale {
		return 0, Errorf(CodeValidation, "the balance would exceed %g credits", float64(maxCredits))
	}
	return balance[0], nil
}

// CreditEntry is a credit transaction as the API shows it.
type CreditEntry struct {
	ID          string    `json:"id"`
	Type        string    `json:"type"`
	Amount      float64   `json:"amount"`
	Balance     float64   `json:"balance"`
	Description string    `json:"description"`
	CreatedAt   time.Time `json:"createdAt"`
}

// CreditTransactions returns one page of the account's credit history, newest first.
func (s *Store) CreditTransactions(ctx context.Context, accountID string, page Page) ([]CreditEntry, string, error) {
	var rows []CreditTransaction
	q := s.db.NewSelect().Model(&rows).Where("account_id = ?", accountID).Order("id DESC").Limit(int64(page.Limit) + 1)
	if page.Cursor != "" {
		q = q.Where("id < ?", page.Cursor)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, "", fmt.Errorf("credit transactions: %w", err)
	}
	rows, next := cutPage(rows, page, func(i int) string { return rows[i].ID })
	out := make([]CreditEntry, len(rows))
	for i, r := range rows {
		out[i] = CreditEntry{ID: r.ID, Type: r.Kind, Amount: float64(r.AmountMilli) / creditScale,
			Balance: float64(r.BalanceMilli) / creditScale, Description: r.Description, CreatedAt: r.CreatedAt}
	}
	return out, next, nil
}

// SubAccount is a sub-account as its agency sees it.
type SubAccount struct {
	ID        string    `json:"id"`
	Email     string    `json:"email"`
	Name      string    `json:"name"`
	Balance   float64   `json:"balance"`
	CreatedAt time.Time `json:"createdAt"`
}

// SubAccounts returns one page of the agency's sub-accounts, oldest first. Errors: FORBIDDEN for an
// account that is not an agency.
func (s *Store) SubAccounts(ctx context.Context, agency *Account, page Page) ([]SubAccount, string, error) {
	if !agency.IsAgency {
		return nil, "", Errorf(CodeForbidden, "only agency accounts have sub-accounts")
	}
	var rows []Account
	q := s.db.NewSelect().Model(&rows).Where("parent_id = ?", agency.ID).Order("id").Limit(int64(page.Limit) + 1)
	if page.Cursor != "" {
		q = q.Where("id > ?", page.Cursor)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, "", fmt.Errorf("sub-accounts: %w", err)
	}
	rows, next := cutPage(rows, page, func(i int) string { return rows[i].ID })
	out := make([]SubAccount, len(rows))
	for i, r := range rows {
		out[i] = SubAccount{ID: r.ID, Email: r.Email, Name: r.Name, Balance: r.Credits(), CreatedAt: r.CreatedAt}
	}
	return out, next, nil
}
