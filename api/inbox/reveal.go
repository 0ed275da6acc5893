package inbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/redis/go-redis/v9"

	"funnelchat/models"
)

// A secret the inbox shows once (a new API key, a new member's password) is not written into the
// answer to the form's POST, where a reload would post the form again (a second key, silently
// replacing the one just copied). The POST keeps it in Redis under a random token bound to the
// session and answers 303 to the settings page with the token; that page takes it (GETDEL), so a
// reload finds nothing and repeats nothing.

// revealTTL is how long a reveal waits for its page.
const revealTTL = 5 * time.Minute

// reveal is what one settings page shows once.
type reveal struct {
	Key            string `json:"key,omitempty"`
	MemberEmail    string `json:"memberEmail,omitempty"`
	MemberPassword string `json:"memberPassword,omitempty"`
}

// view puts what r reveals on the settings page's data.
func (r reveal) view(v *settingsView) {
	v.NewKey = r.Key
	if r.MemberEmail != "" {
		v.NewMember = &models.AddedUser{User: &models.User{Email: r.MemberEmail}, Password: r.MemberPassword}
	}
}

func revealKey(sess *session, token string) string {
	sum := sha256.Sum256([]byte(sess.token))
	return "inbox:reveal:" + hex.EncodeToString(sum[:12]) + ":" + token
}

// revealOnce keeps r for the session's next settings page and redirects there (303). When Redis
// cannot keep it, the page is shown as the answer itself, so that the secret is not lost.
func (h *Handler) revealOnce(c *fiber.Ctx, r reveal, section string) error {
	token := newFormToken()
	body, err := json.Marshal(r)
	if err == nil {
		err = h.redis.Set(c.UserContext(), revealKey(sessionOf(c), token), body, revealTTL).Err()
	}
	if err != nil {
		h.log.WarnContext(c.UserContext(), "one-time reveal not kept; shown in the answer", "error", err.Error())
		var v settingsView
		r.view(&v)
		return h.renderSettings(c, v)
	}
	return c.Redirect(settingsPath+"?shown="+token+section, fiber.StatusSeeOther)
}

// takeReveal returns the reveal of token for this session and forgets it; nil when there is none (it
// was shown already, expired, or is another session's).
func (h *Handler) takeReveal(c *fiber.Ctx, token string) (*reveal, error) {
	if len(token) > 64 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(c.UserContext(), 2*time.Second)
	defer cancel()
	body, err := h.redis.GetDel(ctx, revealKey(sessionOf(c), token)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, models.Errorf(models.CodeUnavailable, "reveal: %v", err)
	}
	var r reveal
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, nil
	}
	return &r, nil
}
