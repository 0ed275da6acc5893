package models

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// Session is a signed-in browser, stored server-side so that it can be ended at once. The cookie holds
// the raw token; the row's id is the token's SHA-256 (hashKey: a long random token needs no slow KDF).
type Session struct {
	bun.BaseModel `bun:"table:sessions"`

	ID         string    `bun:"id,pk"`
	UserID     string    `bun:"user_id"`
	AccountID  string    `bun:"account_id"`
	CSRFToken  string    `bun:"csrf_token"`
	CreatedAt  time.Time `bun:"created_at"`
	LastSeenAt time.Time `bun:"last_seen_at"`
	ExpiresAt  time.Time `bun:"expires_at"`

	User *User `bun:"rel:belongs-to,join:user_id=id"`
}

// SessionIdle is how long a session lasts without use; each use (at most hourly, to spare writes)
// pushes its end back.
const (
	SessionIdle    = 14 * 24 * time.Hour
	sessionRefresh = time.Hour
)

// NewSession signs the user in: it stores a session and returns the raw token for the cookie.
func (s *Store) NewSession(ctx context.Context, u *User) (string, *Session, error) {
	token := randomToken()
	at := now()
	sess := &Session{
		ID: hashKey(token), UserID: u.ID, AccountID: u.AccountID, CSRFToken: randomToken(),
		CreatedAt: at, LastSeenAt: at, ExpiresAt: at.Add(SessionIdle), User: u,
	}
	if _, err := s.db.NewInsert().Model(sess).Exec(ctx); err != nil {
		return "", nil, fmt.Errorf("new session: %w", err)
	}
	return token, sess, nil
}

// SessionByToken returns the live session of a cookie's token with its user, or UNAUTHORIZED when there
// is none (never was, signed out, expired, password changed, user removed).
func (s *Store) SessionByToken(ctx context.Context, token string) (*Session, error) {
	if token == "" || len(token) > 128 {
		return nil, Errorf(CodeUnauthorized, "not signed in")
	}
	sess := new(Session)
	err := s.db.NewSelect().Model(sess).Relation("User").Where("session.id = ?", hashKey(token)).Scan(ctx)
	if isNoRows(err) {
		return nil, Errorf(CodeUnauthorized, "not signed in")
	}
	if err != nil {
		return nil, fmt.Errorf("session: %w", err)
	}
	at := now()
	if !at.Before(sess.ExpiresAt) || sess.User == nil {
		return nil, Errorf(CodeUnauthorized, "session expired")
	}
	if at.Sub(sess.LastSeenAt) > sessionRefresh {
		sess.LastSeenAt, sess.ExpiresAt = at, at.Add(SessionIdle)
		if _, err := s.db.NewUpdate().Model(sess).Column("last_seen_at", "expires_at").WherePK().Exec(ctx); err != nil {
			return nil, fmt.Errorf("session: %w", err)
		}
	}
	return sess, nil
}

// EndSession signs a browser out; the token stops working at once. Ending an unknown token is not an
// error.
func (s *Store) EndSession(ctx context.Context, token string) error {
	if _, err := s.db.NewDelete().Model((*Session)(nil)).Where("id = ?", hashKey(token)).Exec(ctx); err != nil {
		return fmt.Errorf("end session: %w", err)
	}
	return nil
}

// DeleteExpiredSessions removes sessions past their end (run by the worker's sweep).
func (s *Store) DeleteExpiredSessions(ctx context.Context) (int64, error) {
	res, err := s.db.NewDelete().Model((*Session)(nil)).Where("expires_at < ?", now()).Exec(ctx)
	if err != nil {
		return 0, fmt.Errorf("delete expired sessions: %w", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

func endUserSessions(ctx context.Context, db bun.IDB, userID string) error {
	if _, err := db.NewDelete().Model((*Session)(nil)).Where("user_id = ?", userID).Exec(ctx); err != nil {
		return fmt.Errorf("end sessions: %w", err)
	}
	return nil
}

// randomToken returns 32 random bytes, URL-safe base64.
func randomToken() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return base64.RawURLEncoding.EncodeToString(b)
}
