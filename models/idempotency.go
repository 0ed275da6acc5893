package models

import (
	"context"
	"fmt"
	"time"

	"github.com/uptrace/bun"
)

// CodeIdempotencyReused: the same idempotency key came with a different request.
const CodeIdempotencyReused = "IDEMPOTENCY_KEY_REUSED"

type idempotencyKey struct {
	bun.BaseModel `bun:"table:idempotency_keys"`

	AccountID      string    `bun:"account_id,pk"`
	Key            string    `bun:"key,pk"`
	Fingerprint    string    `bun:"fingerprint"`
	Status         string    `bun:"status"`
	ResponseStatus *int      `bun:"response_status"`
	ResponseBody   *string   `bun:"response_body"`
	CreatedAt      time.Time `bun:"created_at"`
}

// StoredResponse is the response of the first request made with an idempotency key.
type StoredResponse struct {
	Status int
	Body   string
}

const (
	idempotencyInFlight = "in_flight"
	idempotencyDone     = "done"
	// idempotencyAbandonAfter: a claim this old whose request never finished (its process died) is
	// taken over by the next request with the key.
	idempotencyAbandonAfter = time.Minute
)

// BeginIdempotent claims an idempotency key for a request whose content hashes to fingerprint, per the
// IETF idempotency-key draft. It returns nil for a new claim (the caller runs the request and finishes
// it with FinishIdempotent in the same transaction, or AbandonIdempotent on failure), or the stored
// response of the first request. Errors: IDEMPOTENCY_KEY_REUSED for another fingerprint, CONFLICT while
// the first request is still running.
func (s *Store) BeginIdempotent(ctx context.Context, accountID, key, fingerprint string) (*StoredResponse, error) {
	claim := &idempotencyKey{AccountID: accountID, Key: key, Fingerprint: fingerprint, Status: idempotencyInFlight, CreatedAt: now()}
	res, err := s.db.NewInsert().Model(claim).On("CONFLICT DO NOTHING").Exec(ctx)
	if err != nil {
		return nil, fmt.Errorf("idempotency: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil, nil
	}
	first := new(idempotencyKey)
	if err := s.db.NewSelect().Model(first).Where("account_id = ? AND key = ?", accountID, key).Scan(ctx); err != nil {
		if isNoRows(err) { // abandoned and deleted meanwhile: try once more
			return s.BeginIdempotent(ctx, accountID, key, fingerprint)
		}
		return nil, fmt.Errorf("idempotency: %w", err)
	}
	switch {
	case first.Fingerprint != fingerprint:
		return nil, Errorf(CodeIdempotencyReused, "this Idempotency-Key was used with a different request")
	case first.Status == idempotencyDone && first.ResponseStatus != nil && first.ResponseBody != nil:
		return &StoredResponse{Status: *first.ResponseStatus, Body: *first.ResponseBody}, nil
	}
	// Still in flight. Take an abandoned claim over; otherwise the first request is running.
	res, err = s.db.NewUpdate().Model((*idempotencyKey)(nil)).Set("created_at = ?", now()).
		Where("account_id = ? AND key = ? AND status = ? AND created_at < ?", accountID, key, idempotencyInFlight, now().Add(-idempotencyAbandonAfter)).
		Exec(ctx)
	if err != nil {
		return nil, fmt.Errorf("idempotency: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil, nil
	}
	return nil, Errorf(CodeConflict, "a request with this Idempotency-Key is still being processed: retry shortly")
}

// FinishIdempotent stores the response of the request that claimed key, inside that request's transaction.
func FinishIdempotent(ctx context.Context, tx bun.Tx, accountID, key string, status int, body string) error {
	_, err := tx.NewUpdate().Model((*idempotencyKey)(nil)).
		Set("status = ?", idempotencyDone).Set("response_status = ?", status).Set("response_body = ?", body).
		Where("account_id = ? AND key = ?", accountID, key).Exec(ctx)
	return err
}

// AbandonIdempotent releases a claim whose request failed, so a corrected retry can run.
func (s *Store) AbandonIdempotent(ctx context.Context, accountID, key string) error {
	_, err := s.db.NewDelete().Model((*idempotencyKey)(nil)).
		Where("account_id = ? AND key = ? AND status = ?", accountID, key, idempotencyInFlight).Exec(ctx)
	return err
}
