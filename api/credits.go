package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/uptrace/bun"

	"funnelchat/models"
)

// idempotencyTTL is how long Redis remembers a finished request (the database keeps it longer).
const idempotencyTTL = 25 * time.Hour

// grantCredits: POST /v1/subaccounts/credits {"email","amount","description"?} -> 200
// {success, sub_account_id, credits_added, new_balance}. Agencies only (403); an email that is not one
// of the caller's sub-accounts is 404. With an Idempotency-Key header (or idempotency_key field) a repeat
// returns the first response and grants nothing; the key with another body is 422; a repeat while the
// first runs is 409.
func (h *credits) grantCredits(c *fiber.Ctx) error {
	var req struct {
		Email          *string  `json:"email"`
		Amount         *float64 `json:"amount"`
		Description    *string  `json:"description"`
		IdempotencyKey *string  `json:"idempotency_key"`
	}
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if req.Amount == nil {
		return models.Errorf(models.CodeValidation, "amount is required")
	}
	in := models.GrantInput{Email: str(req.Email), Amount: *req.Amount, Description: str(req.Description)}
	if err := in.Validate(); err != nil {
		return err
	}
	key, err := idempotencyKeyOf(c.Get("Idempotency-Key"), str(req.IdempotencyKey))
	if err != nil {
		return err
	}
	ctx, acc := c.UserContext(), accountOf(c)
	if !acc.IsAgency {
		return models.Errorf(models.CodeForbidden, "only agency accounts can grant credits")
	}
	if key == "" {
		grant, err := h.store.GrantCredits(ctx, acc, in, nil)
		if err != nil {
			return err
		}
		return c.JSON(grantBody(grant))
	}

	fingerprint := grantFingerprint(in)
	if stored, err := h.cachedIdempotent(ctx, acc.ID, key, fingerprint); err != nil || stored != nil {
		if err != nil {
			return err
		}
		return sendStored(c, stored)
	}
	stored, err := h.store.BeginIdempotent(ctx, acc.ID, key, fingerprint)
	if err != nil {
		return err
	}
	if stored != nil {
		h.cacheIdempotent(ctx, acc.ID, key, fingerprint, stored)
		return sendStored(c, stored)
	}
	var body []byte
	_, err = h.store.GrantCredits(ctx, acc, in, func(ctx context.Context, tx bun.Tx, g *models.Grant) error {
		body, _ = json.Marshal(grantBody(g))
		return models.FinishIdempotent(ctx, tx, acc.ID, key, fiber.StatusOK, string(body))
	})
	if err != nil {
		if aerr := h.store.AbandonIdempotent(context.WithoutCancel(ctx), acc.ID, key); aerr != nil {
			h.log.ErrorContext(ctx, "idempotency claim not released", "error", aerr.Error(), "account_id", acc.ID)
		}
		return err
	}
	h.cacheIdempotent(ctx, acc.ID, key, fingerprint, &models.StoredResponse{Status: fiber.StatusOK, Body: string(body)})
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Send(body)
}

func grantBody(g *models.Grant) fiber.Map {
	return fiber.Map{"success": true, "sub_account_id": g.SubAccountID, "credits_added": g.CreditsAdded, "new_balance": g.NewBalance}
}

// idempotencyKeyOf takes the key from the header or the body field; both at once must agree.
func idempotencyKeyOf(header, field string) (string, error) {
	header, field = strings.TrimSpace(header), strings.TrimSpace(field)
	if header != "" && field != "" && header != field {
		return "", models.Errorf(models.CodeValidation, "the Idempotency-Key header and idempotency_key field disagree")
	}
	key := header + field
	if header != "" && field != "" {
		key = header
	}
	if len(key) > 255 {
		return "", models.Errorf(models.CodeValidation, "Idempotency-Key must be at most 255 characters")
	}
	for _, r := range key {
		if r < 0x21 || r > 0x7e {
			return "", models.Errorf(models.CodeValidation, "Idempotency-Key must be printable ASCII without spaces")
		}
	}
	return key, nil
}

// grantFingerprint identifies the content of a grant, so a key reused for another grant is caught.
func grantFingerprint(in models.GrantInput) string {
	email, _ := models.NormalizeEmail(in.Email)
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%v\x00%s", email, in.Amount, in.Description)))
	return hex.EncodeToString(sum[:])
}

type cachedResponse struct {
	Fingerprint string `json:"f"`
	Status      int    `json:"s"`
	Body        string `json:"b"`
}

func idempotencyCacheKey(accountID, key string) string { return "idempotency:" + accountID + ":" + key }

// cachedIdempotent is the Redis fast path: a finished request's response, or nil on a miss (or when
// Redis cannot answer, since the database decides anyway).
func (h *credits) cachedIdempotent(ctx context.Context, accountID, key, fingerprint string) (*models.StoredResponse, error) {
	raw, err := h.redis.Get(ctx, idempotencyCacheKey(accountID, key)).Bytes()
	if err != nil {
		return nil, nil
	}
	var cached cachedResponse
	if json.Unmarshal(raw, &cached) != nil {
		return nil, nil
	}
	if cached.Fingerprint != fingerprint {
		return nil, models.Errorf(models.CodeIdempotencyReused, "this Idempotency-Key was used with a different request")
	}
	return &models.StoredResponse{Status: cached.Status, Body: cached.Body}, nil
}

func (h *credits) cacheIdempotent(ctx context.Context, accountID, key, fingerprint string, r *models.StoredResponse) {
	raw, _ := json.Marshal(cachedResponse{Fingerprint: fingerprint, Status: r.Status, Body: r.Body})
	if err := h.redis.Set(ctx, idempotencyCacheKey(accountID, key), raw, idempotencyTTL).Err(); err != nil {
		h.log.WarnContext(ctx, "idempotency fast path not updated", "error", err.Error())
	}
}

func sendStored(c *fiber.Ctx, r *models.StoredResponse) error {
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	c.Set("Idempotent-Replayed", "true")
	return c.Status(r.Status).SendString(r.Body)
}

// getCredits: GET /v1/credits -> {"balance"} of the caller.
func (h *credits) getCredits(c *fiber.Ctx) error {
	acc, err := h.store.AccountByID(c.UserContext(), accountOf(c).ID)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"balance": acc.Credits()})
}

// creditTransactions: GET /v1/credits/transactions -> the caller's credit history, newest first.
func (h *credits) creditTransactions(c *fiber.Ctx) error {
	page, err := pageOf(c)
	if err != nil {
		return err
	}
	entries, next, err := h.store.CreditTransactions(c.UserContext(), accountOf(c).ID, page)
	if err != nil {
		return err
	}
	return c.JSON(pageBody(entries, next))
}

// listSubAccounts: GET /v1/subaccounts (agencies only).
func (h *credits) listSubAccounts(c *fiber.Ctx) error {
	page, err := pageOf(c)
	if err != nil {
		return err
	}
	subs, next, err := h.store.SubAccounts(c.UserContext(), accountOf(c), page)
	if err != nil {
		return err
	}
	return c.JSON(pageBody(subs, next))
}

// putAutoRecharge: PUT /v1/subaccounts/{id}/auto_recharge {"threshold","amount","webhookUrl"} -> 200
// the settings. When the sub-account's balance falls below threshold, webhookUrl receives
// {idempotency_key, sub_account_id, email, balance, threshold, amount} once per low-balance event.
func (h *credits) putAutoRecharge(c *fiber.Ctx) error {
	var req struct {
		Threshold  *float64 `json:"threshold"`
		Amount     *float64 `json:"amount"`
		WebhookURL *string  `json:"webhookUrl"`
	}
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if req.Threshold == nil || req.Amount == nil || req.WebhookURL == nil {
		return models.Errorf(models.CodeValidation, "threshold, amount and webhookUrl are required")
	}
	settings, err := h.app.SetAutoRecharge(c.UserContext(), accountOf(c), c.Params("id"),
		models.AutoRecharge{Threshold: *req.Threshold, Amount: *req.Amount, WebhookURL: *req.WebhookURL})
	if err != nil {
		return err
	}
	return c.JSON(settings)
}
