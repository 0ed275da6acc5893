package models

import (
	"context"
	"fmt"
	"strings"

	"github.com/uptrace/bun"
)

// User roles: an owner also manages the team in the inbox's Settings; a member reads and answers.
const (
	RoleOwner  = "owner"
	RoleMember = "member"
)

// AddedUser is a new user and the generated password, which exists only here.
type AddedUser struct {
	User     *User
	Password string
}

// AddUser adds a user to the account with a generated password. Errors: VALIDATION_ERROR for a bad
// email or role, CONFLICT when the email already belongs to a user (of any account).
func (s *Store) AddUser(ctx context.Context, accountID, email, role string) (*AddedUser, error) {
	email, err := NormalizeEmail(email)
	if err != nil {
		return nil, err
	}
	if email == "" {
		return nil, Errorf(CodeValidation, "email is required")
	}
	if role == "" {
		role = RoleMember
	}
	if role != RoleOwner && role != RoleMember {
		return nil, Errorf(CodeValidation, "role must be owner or member")
	}
	password := GeneratePassword()
	hash, err := HashPassword(password)
	if err != nil {
		return nil, err
	}
	u := &User{ID: newID(prefixUser), AccountID: accountID, Email: email, Role: role, PasswordHash: &hash, CreatedAt: now(), Available: true}
	if _, err := s.db.NewInsert().Model(u).Exec(ctx); err != nil {
		if isUniqueViolation(err) {
			return nil, Errorf(CodeConflict, "a user with email %s already exists", email)
		}
		return nil, fmt.Errorf("add user: %w", err)
	}
	return &AddedUser{User: u, Password: password}, nil
}

// UserByEmail returns the user with the email, or NOT_FOUND.
func (s *Store) UserByEmail(ctx context.Context, email string) (*User, error) {
	u := new(User)
	err := s.db.NewSelect().Model(u).Where("email = ?", strings.ToLower(strings.TrimSpace(email))).Scan(ctx)
	if isNoRows(err) {
		return nil, notFound("user")
	}
	if err != nil {
		return nil, fmt.Errorf("user by email: %w", err)
	}
	return u, nil
}

// Users lists the account's users, oldest first.
func (s *Store) Users(ctx context.Context, accountID string) ([]User, error) {
	var users []User
	if err := s.db.NewSelect().Model(&users).Where("account_id = ?", accountID).Order("id").Scan(ctx); err != nil {
		return nil, fmt.Errorf("users: %w", err)
	}
	return users, nil
}

// SetPassword sets the user's password and ends every session the user has, at once. Errors:
// VALIDATION_ERROR for a password that is too short, NOT_FOUND.
func (s *Store) SetPassword(ctx context.Context, userID, password string) error {
	if err := CheckPassword(password); err != nil {
		return err
	}
	hash, err := HashPassword(password)
	if err != nil {
		return err
	}
	return s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		res, err := tx.NewUpdate().Model((*User)(nil)).Set("password_hash = ?", hash).Where("id = ?", userID).Exec(ctx)
		if err != nil {
			return fmt.Errorf("set password: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return notFound("user")
		}
		return endUserSessions(ctx, tx, userID)
	})
}

// RemoveUser removes a member of the account; their sessions end at once. The account's owner (the
// user it was created with) cannot be removed. Errors: NOT_FOUND (another account's user too),
// CONFLICT for the account's owner.
func (s *Store) RemoveUser(ctx context.Context, accountID, userID string) error {
	return s.inTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		var owner string
		if err := tx.NewSelect().Model((*Account)(nil)).Column("owner_user_id").Where("id = ?", accountID).Scan(ctx, &owner); err != nil {
			if isNoRows(err) {
				return notFound("user")
			}
			return fmt.Errorf("remove user: %w", err)
		}
		if owner == userID {
			return Errorf(CodeConflict, "the account's owner cannot be removed")
		}
		if err := endUserSessions(ctx, tx, userID); err != nil {
			return err
		}
		if _, err := tx.NewDelete().Model((*conversationRead)(nil)).Where("account_id = ? AND reader_id = ?", accountID, userID).Exec(ctx); err != nil {
			return fmt.Errorf("remove user: %w", err)
		}
		// Their conversations go back to the team: unassigned, so that hand-offs find a new owner. An
		// assignment that commits after this statement is undone by the deletion below on PostgreSQL
		// (the foreign key's ON DELETE SET NULL, assigneeForeignKeyMigration); on SQLite none can, as
		// this transaction is the only one running.
		if _, err := tx.NewUpdate().Model((*Contact)(nil)).Set("assignee_id = NULL").Where("account_id = ? AND assignee_id = ?", accountID, userID).Exec(ctx); err != nil {
			return fmt.Errorf("remove user: %w", err)
		}
		res, err := tx.NewDelete().Model((*User)(nil)).Where("id = ? AND account_id = ?", userID, accountID).Exec(ctx)
		if err != nil {
			return fmt.Errorf("remove user: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return notFound("user")
		}
		return nil
	})
}

// SignIn checks an email and password. A wrong password, an unknown email and a user without a
// password are all UNAUTHORIZED with one message, and take about as long, so that the answer does not
// tell which emails have users.
func (s *Store) SignIn(ctx context.Context, email, password string) (*User, error) {
	wrong := Errorf(CodeUnauthorized, "wrong email or password")
	u, err := s.UserByEmail(ctx, email)
	if err != nil && ErrorCode(err) != CodeNotFound {
		return nil, err
	}
	if u == nil || u.PasswordHash == nil {
		VerifyPassword(password, dummyHash())
		return nil, wrong
	}
	if !VerifyPassword(password, *u.PasswordHash) {
		return nil, wrong
	}
	return u, nil
}
