package models

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun"
)

// Account is a customer of the service: a business, an agency, or an agency's sub-account.
type Account struct {
	bun.BaseModel `bun:"table:accounts"`

	ID          string    `bun:"id,pk"`
	Name        string    `bun:"name"`
	Email       string    `bun:"email"`
	IsAgency    bool      `bun:"is_agency"`
	ParentID    *string   `bun:"parent_id"`
	OwnerUserID string    `bun:"owner_user_id"`
	CreditMilli int64     `bun:"credit_balance_milli"`
	CreatedAt   time.Time `bun:"created_at"`

	// Where replies (and alerts) go, and the secret that signs them.
	WebhookURL      *string `bun:"webhook_url"`
	WebhookSecret   *string `bun:"webhook_secret"`
	AlertWebhookURL *string `bun:"alert_webhook_url"`

	// RateLimitPerMinute overrides RATE_LIMIT_PER_MINUTE for the account's keys; nil keeps the default.
	RateLimitPerMinute *int `bun:"rate_limit_per_minute"`

	// Auto-recharge of a sub-account (see AutoRecharge).
	RechargeThresholdMilli *int64  `bun:"auto_recharge_threshold_milli"`
	RechargeAmountMilli    *int64  `bun:"auto_recharge_amount_milli"`
	RechargeWebhookURL     *string `bun:"auto_recharge_webhook_url"`
	RechargeArmed          bool    `bun:"auto_recharge_armed"`
	RechargeEvent          int     `bun:"auto_recharge_event"`

	// KeyID is the id of the API key the request authenticated with (filled by Authenticate only).
	KeyID string `bun:"key_id,scanonly"`

	// The bot's configuration when no campaign applies.
	BotInstructions string `bun:"bot_instructions"`
	BotGoal         string `bun:"bot_goal"`
	BotLanguage     string `bun:"bot_language"`
	// BotActive false stops every bot reply of the account, campaigns' included (see BotSettings).
	// default:true makes an insert of the zero value take the column's default, so a new account's
	// bot is on.
	BotActive bool `bun:"bot_active,default:true"`
	// Hand-offs (see BotSettings): the message the bot sends when it hands over (nil: the default,
	// "": none), the minutes after which an unanswered alert is escalated (0: never; default:15 as
	// BotActive's default), the minutes of team silence after which a paused bot resumes (nil: never).
	HandoffMessage           *string `bun:"handoff_message"`
	HandoffEscalationMinutes int     `bun:"handoff_escalation_minutes,default:15"`
	BotResumeMinutes         *int    `bun:"bot_resume_minutes"`
}

// Credits returns the account's credit balance in credits.
func (a *Account) Credits() float64 { return float64(a.CreditMilli) / creditScale }

// User is a person who can act for an account; every account has its owner.
type User struct {
	bun.BaseModel `bun:"table:users"`

	ID        string `bun:"id,pk"`
	AccountID string `bun:"account_id"`
	Email     string `bun:"email"`
	// Role is RoleOwner or RoleMember: owners also manage the account's team in the inbox.
	Role string `bun:"role"`
	// PasswordHash is the argon2id hash of the inbox password (see password.go); nil: cannot sign in.
	PasswordHash *string   `bun:"password_hash"`
	CreatedAt    time.Time `bun:"created_at"`
	// Available: the user takes hand-offs in turn (round-robin, the least recently assigned first).
	Available      bool       `bun:"available"`
	LastAssignedAt *time.Time `bun:"last_assigned_at"`
}

// APIKey is the stored form of an account's key: only its SHA-256 hash is kept.
type APIKey struct {
	bun.BaseModel `bun:"table:api_keys"`

	ID        string     `bun:"id,pk"`
	AccountID string     `bun:"account_id"`
	KeyHash   string     `bun:"key_hash"`
	CreatedAt time.Time  `bun:"created_at"`
	RevokedAt *time.Time `bun:"revoked_at"`
}

// creditScale is how many stored units make one credit: balances are kept as whole thousandths so that
// sums stay exact on both backends.
const creditScale = 1000

// maxCredits bounds any credit amount or balance, far below where int64 thousandths would overflow.
const maxCredits = 1e12

// CreditsToMilli converts an amount of credits to stored thousandths, rejecting what cannot be stored
// exactly (negative, not finite, too large, finer than a thousandth).
func CreditsToMilli(credits float64) (int64, error) {
	if math.IsNaN(credits) || math.IsInf(credits, 0) || credits < 0 || credits > maxCredits {
		return 0, Errorf(CodeValidation, "credits must be a finite number from 0 to %g", float64(maxCredits))
	}
	// The shortest decimal that reads back as credits is the one the client wrote (amounts arrive as JSON
	// or flag text), so its decimal places are counted exactly. A tolerance on credits*1000 cannot do
	// this: relative to a large amount, 1000.0004 is within rounding error and would be stored as 1000.
	if _, frac, ok := strings.Cut(strconv.FormatFloat(credits, 'f', -1, 64), "."); ok && len(frac) > 3 {
		return 0, Errorf(CodeValidation, "credits may have at most three decimal places")
	}
	return int64(math.Round(credits * creditScale)), nil
}

// NewAccount describes an account to create with the admin CLI.
type NewAccount struct {
	Email       string
	Name        string
	Agency      bool
	ParentEmail string // the agency this account is a sub-account of; empty for none
	Credits     float64
	RateLimit   int // requests per minute per key; 0 keeps the default
}

// CreatedAccount is the result of CreateAccount; APIKey is the only time the raw key exists.
type CreatedAccount struct {
	Account *Account
	User    *User
	APIKey  string
}

// CreateAccount creates an account, its owner user and its first API key in one transaction. It returns
// VALIDATION_ERROR for a bad email, credits, or a parent that is not an agency, NOT_FOUND for an unknown
// parent, and CONFLICT when the email is taken.
func (s *Store) CreateAccount(ctx context.Context, in NewAccount) (*CreatedAccount, error) {
	email, err := NormalizeEmail(in.Email)
	if err != nil {
		return nil, err
	}
	if email == "" {
		return nil, Errorf(CodeValidation, "email is required")
	}
	credits, err := CreditsToMilli(in.Credits)
	if err != nil {
		return nil, err
	}
	if in.RateLimit < 0 || in.RateLimit > MaxRateLimit {
		return nil, Errorf(CodeValidation, "rate limit must be from 1 to %d requests per minute", MaxRateLimit)
	}
	if in.Agency && in.ParentEmail != "" {
		return nil, Errorf(CodeValidation, "an agency cannot be a sub-account of another agency")
	}
	created := now()
	acc := &Account{
		BotLanguage:   "en",
		RechargeArmed: true,
		ID:            newID(prefixAccount),
		Name:          in.Name,
		Email:         email,
		IsAgency:      in.Agency,
		OwnerUserID:   newID(prefixUser),
		CreditMilli:   credits,
		CreatedAt:     created,
	}
	if in.RateLimit > 0 {
		acc.RateLimitPerMinute = &in.RateLimit
	}
	user := &User{ID: acc.OwnerUserID, AccountID: acc.ID, Email: email, Role: RoleOwner, CreatedAt: created, Available: true}
	rawKey, key := newAPIKey(acc.ID)

	err = s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if in.ParentEmail != "" {
			parent, err := accountByEmail(ctx, tx, in.ParentEmail)
			if err != nil {
				return err
			}
			if !parent.IsAgency {
				return Errorf(CodeValidation, "parent %s is not an agency account", parent.Email)
			}
			acc.ParentID = &parent.ID
		}
		if _, err := tx.NewInsert().Model(acc).Exec(ctx); err != nil {
			if isUniqueViolation(err) {
				return Errorf(CodeConflict, "an account with email %s already exists", email)
			}
			return err
		}
		if _, err := tx.NewInsert().Model(user).Exec(ctx); err != nil {
			if isUniqueViolation(err) {
				return Errorf(CodeConflict, "a user with email %s already exists", email)
			}
			return err
		}
		_, err := tx.NewInsert().Model(key).Exec(ctx)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("create account: %w", err)
	}
	return &CreatedAccount{Account: acc, User: user, APIKey: rawKey}, nil
}

// AccountByEmail returns the account whose email is email, or NOT_FOUND.
func (s *Store) AccountByEmail(ctx context.Context, email string) (*Account, error) {
	return accountByEmail(ctx, s.db, email)
}

func accountByEmail(ctx context.Context, db bun.IDB, email string) (*Account, error) {
	norm, err := NormalizeEmail(email)
	if err != nil {
		return nil, err
	}
	acc := new(Account)
	err = db.NewSelect().Model(acc).Where("email = ?", norm).Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, Errorf(CodeNotFound, "no account with email %s", norm)
	}
	if err != nil {
		return nil, fmt.Errorf("account by email: %w", err)
	}
	return acc, nil
}

// CountAccounts returns how many accounts exist (standalone mode seeds a demo account when none do).
func (s *Store) CountAccounts(ctx context.Context) (int64, error) {
	return s.db.NewSelect().Model((*Account)(nil)).Count(ctx)
}

// RotateAPIKey revokes the account's current key and returns a new one. The old key stops working as
// soon as this returns, in every process: keys are checked against the database, and with the key
// cache the old key is marked revoked in Redis before the revocation commits. Errors: UNAVAILABLE when
// that mark cannot be written (nothing changes then).
func (s *Store) RotateAPIKey(ctx context.Context, accountID string) (string, error) {
	// Two rotations at once race on the one-active-key index; the loser retries against the winner's key.
	for attempt := 0; ; attempt++ {
		rawKey, key := newAPIKey(accountID)
		err := s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
			var revoked []string
			if _, err := tx.NewUpdate().Model((*APIKey)(nil)).
				Set("revoked_at = ?", now()).
				Where("account_id = ? AND revoked_at IS NULL", accountID).
				Returning("key_hash").
				Exec(ctx, &revoked); err != nil {
				return err
			}
			if s.keys != nil {
				// The update holds the key's row lock, so no other rotation can slip a key between
				// the mark and the commit.
				for _, hash := range revoked {
					if err := s.keys.revoke(ctx, hash); err != nil {
						return err
					}
				}
			}
			_, err := tx.NewInsert().Model(key).Exec(ctx)
			return err
		})
		if err == nil {
			return rawKey, nil
		}
		var domainErr *Error
		if errors.As(err, &domainErr) {
			return "", err
		}
		if !isUniqueViolation(err) || attempt >= 3 {
			return "", fmt.Errorf("rotate api key: %w", err)
		}
	}
}

// Authenticate returns the account that owns the active key rawKey, or UNAUTHORIZED: through the key
// cache, as the api's per-request check does (keyCache), when the store uses it.
func (s *Store) Authenticate(ctx context.Context, rawKey string) (*Account, error) {
	k, err := s.CheckKey(rawKey)
	if err != nil {
		return nil, err
	}
	var read *KeyCacheRead
	if s.keys != nil {
		read = s.keys.read(ctx, k)
	}
	acc, _, err := s.AuthenticateRead(ctx, k, read)
	return acc, err
}

// authenticateInDatabase returns the account that owns the active key k according to the database, or
// UNAUTHORIZED. fill says that the key cache was read and had no entry for k (no revoked mark, no Redis
// error): only then is the answer cached, with SET NX.
func (s *Store) authenticateInDatabase(ctx context.Context, k KeyCheck, fill bool) (*Account, error) {
	acc := new(Account)
	err := s.db.NewSelect().Model(acc).
		ColumnExpr(s.columnsOf((*Account)(nil), "account")+", k.id AS key_id").
		Join("JOIN api_keys AS k ON k.account_id = account.id").
		Where("k.key_hash = ? AND k.revoked_at IS NULL", k.hash).
		Scan(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, Errorf(CodeUnauthorized, "invalid API key")
	}
	if err != nil {
		return nil, fmt.Errorf("authenticate: %w", err)
	}
	if fill && s.keys != nil {
		s.keys.fill(ctx, k.hash, acc)
	}
	return acc, nil
}

// MaxRateLimit bounds a per-account rate limit.
const MaxRateLimit = 1_000_000

// SetRateLimit sets the account's requests per minute per key; 0 returns it to the default.
// Errors: NOT_FOUND, VALIDATION_ERROR.
func (s *Store) SetRateLimit(ctx context.Context, email string, perMinute int) (*Account, error) {
	if perMinute < 0 || perMinute > MaxRateLimit {
		return nil, Errorf(CodeValidation, "rate limit must be from 1 to %d requests per minute (0: the default)", MaxRateLimit)
	}
	acc, err := s.AccountByEmail(ctx, email)
	if err != nil {
		return nil, err
	}
	acc.RateLimitPerMinute = nil
	if perMinute > 0 {
		acc.RateLimitPerMinute = &perMinute
	}
	if _, err := s.db.NewUpdate().Model(acc).Column("rate_limit_per_minute").WherePK().Exec(ctx); err != nil {
		return nil, fmt.Errorf("set rate limit: %w", err)
	}
	if s.keys != nil {
		if hash, err := s.activeKeyHash(ctx, acc.ID); err == nil && hash != "" {
			s.keys.forget(ctx, hash)
		}
	}
	return acc, nil
}

// newAPIKey makes a random key with 256 bits of entropy and the row that stores its hash.
func newAPIKey(accountID string) (string, *APIKey) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	raw := "sk_" + base64.RawURLEncoding.EncodeToString(b)
	return raw, &APIKey{ID: newID(prefixAPIKey), AccountID: accountID, KeyHash: hashKey(raw), CreatedAt: now()}
}

// hashKey is a plain SHA-256: keys are long random strings, so a slow KDF would add latency to every
// request without adding safety.
func hashKey(raw string) string {
	sum := sha256.Sum256([]byte(raw))
	return hex.EncodeToString(sum[:])
}
