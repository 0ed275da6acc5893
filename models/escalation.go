package models

import (
	"context"
	"fmt"
	"time"
)

// Hand-offs that are not forgotten (README, "The inbox"): an alert nobody answers is escalated once,
// and a bot paused with nobody answering resumes, each after the account's minutes. The worker's sweep
// calls both (every SWEEP_INTERVAL); they are safe to run from many workers at once.

// EscalateAlerts escalates, once, up to limit open alerts that have waited the account's
// handoffEscalationMinutes (0: never) with no team reply (a message by a team member, from the inbox
// or the API) since they were raised, and returns them. Each gets escalated_at and, when the account
// a call of the alert webhook to make (EscalationWebhookStatus pending: the call records none when the
// account has no alert webhook).
func (s *Store) EscalateAlerts(ctx context.Context, at time.Time, limit int) ([]Alert, error) {
	dueWhere, dueArgs := s.alertDue("d", at)
	due := s.db.NewSelect().TableExpr("alerts AS d").Column("d.id").Where(dueWhere, dueArgs...).
		OrderExpr("d.created_at").Limit(int64(limit))
	// The write repeats every condition of the choice: on PostgreSQL it re-reads an alert changed since
	// the choice (resolved a moment ago, say) and escalates it only if it is still due.
	where, args := s.alertDue("a", at)
	var out []Alert
	err := s.db.NewUpdate().Model(&out).ModelTableExpr("alerts AS a").
		Set("escalated_at = ?", at.UTC()).
		Set("escalation_webhook_status = ?", AlertWebhookPending). // the call finds out whether there is a webhook
		Where("a.id IN (?)", due).Where(where, args...).
		Returning(s.columnsOf((*Alert)(nil), "")).Scan(ctx)
	if err != nil && !isNoRows(err) {
		return nil, fmt.Errorf("escalate alerts: %w", err)
	}
	for i := range out {
		s.emit(ctx, out[i].AccountID, EventAlertEscalated, &out[i])
	}
	return out, nil
}

// EventAlertEscalated tells listeners that an alert waited too long; data the alert.
const EventAlertEscalated = "alert.escalated"

// SetEscalationWebhookResult records the outcome of an escalation's alert webhook call.
func (s *Store) SetEscalationWebhookResult(ctx context.Context, id, status string) error {
	_, err := s.db.NewUpdate().Model((*Alert)(nil)).Set("escalation_webhook_status = ?", status).Where("id = ?", id).Exec(ctx)
	if err != nil {
		return fmt.Errorf("escalation webhook result: %w", err)
	}
	return nil
}

// ResumeIdleBots resumes, up to limit, the bots paused for contacts of accounts with botResumeMinutes
// whose last pause (a hand-off, a team reply, the pause switch) is that old: the team has been silent
// that long. It returns the contacts, and tells open inbox pages (contact.updated).
func (s *Store) ResumeIdleBots(ctx context.Context, at time.Time, limit int) ([]string, error) {
	dueWhere, dueArgs := s.botIdle("d", at)
	due := s.db.NewSelect().TableExpr("contacts AS d").Column("d.id").Where(dueWhere, dueArgs...).
		OrderExpr("d.bot_paused_at").Limit(int64(limit))
	// The write repeats every condition of the choice: on PostgreSQL it re-reads a contact changed since
	// the choice (its bot resumed by hand, or paused again by a team reply) and resumes it only if it is
	// still due.
	where, args := s.botIdle("c", at)
	var rows []struct {
		ID        string `bun:"id"`
		AccountID string `bun:"account_id"`
	}
	err := s.db.NewUpdate().Model((*Contact)(nil)).ModelTableExpr("contacts AS c").
		Set("bot_paused = ?", false).Set("updated_at = ?", at.UTC()).
		Where("c.id IN (?)", due).Where(where, args...).
		Returning("id, account_id").Scan(ctx, &rows)
	if err != nil && !isNoRows(err) {
		return nil, fmt.Errorf("resume idle bots: %w", err)
	}
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
		s.emit(ctx, r.AccountID, EventContactUpdated, botState{ID: r.ID, BotActive: true})
	}
	return ids, nil
}

// alertDue is the condition, on alerts AS alias, of an alert EscalateAlerts escalates at at: open, not
// escalated, older than its account's handoffEscalationMinutes (0: never), and with no team reply since
// it was raised. On PostgreSQL a write re-reads the alert's row if it changed since the statement began,
// but reads accounts and messages as they were then: a team reply that commits while the sweep runs
// is one that came just after it.
func (s *Store) alertDue(alias string, at time.Time) (string, []any) {
	a := alias + "."
	return a + `resolved_at IS NULL AND ` + a + `escalated_at IS NULL
		AND EXISTS (SELECT 1 FROM accounts AS acc WHERE acc.id = ` + a + `account_id AND acc.handoff_escalation_minutes > 0
			AND ` + s.sqlMinutesBefore(a+"created_at") + ` >= acc.handoff_escalation_minutes)
		AND NOT EXISTS (SELECT 1 FROM messages AS m WHERE m.contact_id = ` + a + `contact_id AND m.direction = ?
			AND m.author = ? AND m.created_at > ` + a + `created_at)`,
		[]any{at.UTC(), DirectionOutgoing, AuthorHuman}
}

// botIdle is the condition, on contacts AS alias, of a contact whose bot ResumeIdleBots resumes at at:
// paused, by a pause (or a team reply) at least its account's botResumeMinutes old.
func (s *Store) botIdle(alias string, at time.Time) (string, []any) {
	c := alias + "."
	return c + `bot_paused AND ` + c + `bot_paused_at IS NOT NULL
		AND EXISTS (SELECT 1 FROM accounts AS acc WHERE acc.id = ` + c + `account_id AND acc.bot_resume_minutes IS NOT NULL
			AND ` + s.sqlMinutesBefore(c+"bot_paused_at") + ` >= acc.bot_resume_minutes)`,
		[]any{at.UTC()}
}

// sqlMinutesBefore is the SQL for the minutes from a timestamp column to a time given as the query's
// next argument.
func (s *Store) sqlMinutesBefore(col string) string {
	if s.IsSQLite() {
		return "((julianday(?) - julianday(" + col + ")) * 1440.0)"
	}
	return "(EXTRACT(EPOCH FROM (CAST(? AS TIMESTAMPTZ) - " + col + ")) / 60.0)"
}
