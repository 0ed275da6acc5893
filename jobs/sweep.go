package jobs

import (
	"context"
	"time"

	"github.com/hibiken/asynq"

	"funnelchat/models"
)

// sweepBatch bounds how much one sweep re-enqueues; the next sweep takes the rest.
const sweepBatch = 1000

// handleSweep re-enqueues work the database says is owed but that may have no task: stored while Redis
// was down, or lost when Redis restarted empty. Task ids are deterministic (and a bot reply's batch is
// looked up), so work that still has its task is not enqueued twice.
func (h *Handler) handleSweep(ctx context.Context, _ *asynq.Task) error {
	began := time.Now()
	cutoff := began.UTC().Add(-2 * h.Config.SweepInterval)
	due, err := h.Store.DueWork(ctx, cutoff, sweepBatch)
	if err != nil {
		return err
	}
	// Deliveries and openings that a process of the release before the queues' rename queued in
	// their old queues are owed, and held there: the drain server runs them (LegacyQueues). A twin
	// queued in the new queue would run beside them.
	legacy, err := h.Queue.legacyInUse()
	if err != nil {
		return err
	}
	// Owed work whose task asynq archived is left to an operator (archivedTask), and named below.
	var archived []string
	for _, id := range due.BotReplies {
		a, err := h.Queue.botReplyUnlessHeld(ctx, id)
		if err != nil {
			return err
		}
		if a {
			archived = append(archived, botReplyTaskID(id))
		}
	}
	for _, d := range due.Deliveries {
		if d.ReplyToID != nil && d.Attempts == 0 {
			// A bot reply not yet attempted belongs to the bot's task while that task lives: the task
			// delivers it inline and may be waiting to record the receiver's answer (our database
			// down). A delivery task of the sweep's would send it a second time meanwhile.
			busy, err := h.Queue.BotReplyInProgress(ctx, *d.ReplyToID)
			if err != nil {
				return err
			}
			if busy {
				continue
			}
		}
		task := deliverTaskID(d.MessageID, d.Round)
		if held, err := h.Queue.heldByLegacy(legacy, task); err != nil || held {
			if err != nil {
				return err
			}
			continue
		}
		waits, err := h.Queue.archivedTask(QueueDeliveries, task)
		if err != nil {
			return err
		}
		if waits {
			archived = append(archived, task)
			continue
		}
		if err := h.Queue.Deliver(ctx, d.MessageID, d.Round); err != nil {
			return err
		}
	}
	for _, o := range due.Openings {
		if held, err := h.Queue.heldByLegacy(legacy, openingTaskID(o.SendID)); err != nil || held {
			if err != nil {
				return err
			}
			continue
		}
		if err := h.Queue.Opening(ctx, o); err != nil {
			return err
		}
	}
	for _, f := range due.FollowUps {
		if err := h.Queue.FollowUp(ctx, f.SendID, f.Step, time.Now()); err != nil {
			return err
		}
	}
	for _, u := range due.Unsettled {
		at, failure := time.Now(), ""
		if u.SentAt != nil {
			at = *u.SentAt
		}
		if u.Error != nil {
			failure = *u.Error
		}
		if err := h.settleOpening(ctx, u.MessageID, u.Status == models.StatusSent, at, failure); err != nil {
			return err
		}
	}
	for _, id := range due.Alerts {
		if err := h.Queue.Alert(ctx, id); err != nil {
			return err
		}
	}
	for _, id := range due.Escalations {
		if err := h.Queue.AlertEscalation(ctx, id); err != nil {
			return err
		}
	}
	for _, id := range due.MediaChecks {
		if err := h.Queue.MediaCheck(ctx, id); err != nil {
			return err
		}
	}
	if err := h.escalateAndResume(ctx); err != nil {
		return err
	}
	// Expired inbox sessions are refused already; this only keeps the table small.
	if n, err := h.Store.DeleteExpiredSessions(ctx); err != nil {
		h.Log.WarnContext(ctx, "sweep: expired sessions not deleted", "error", err.Error())
	} else if n > 0 {
		h.Log.InfoContext(ctx, "sweep: expired inbox sessions deleted", "sessions", n)
	}
	if len(archived) > 0 {
		h.Log.WarnContext(ctx, "sweep: owed work waits in archived tasks; run them again from asynqmon's Archived tab once their cause is fixed",
			"archived", len(archived), "task_ids", archived[:min(len(archived), 20)])
	}
	if n := len(due.BotReplies) + len(due.Deliveries) + len(due.Alerts) + len(due.Openings) + len(due.FollowUps) + len(due.MediaChecks); n > 0 {
		h.Log.InfoContext(ctx, "sweep: owed work found; enqueued where no task held it", "bot_replies", len(due.BotReplies), "deliveries", len(due.Deliveries), "alerts", len(due.Alerts), "media_checks", len(due.MediaChecks))
	}
	h.sweptAt(began)
	return nil
}

// sweptAt records that the sweep that began at began ran to its end (LastSweep). Sweeps of one
// process may overlap, so the latest beginning is kept, whichever ends last.
func (h *Handler) sweptAt(began time.Time) {
	for ns := began.UnixNano(); ; {
		prev := h.swept.Load()
		if prev >= ns || h.swept.CompareAndSwap(prev, ns) {
			return
		}
	}
}

// LastSweep is when the latest sweep of this process that ran to its end began (the zero time before
// one has): its checks all ran after that moment, and it took for owed the work due 2 × SWEEP_INTERVAL
// before it. It lets a test wait for a sweep that began after some moment instead of sleeping through
// intervals; the process itself never reads it, and it costs one atomic store per sweep.
func (h *Handler) LastSweep() time.Time {
	if ns := h.swept.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// escalateAndResume escalates the alerts that waited too long for a team reply (their webhook call is
// enqueued at once) and resumes the bots the team left paused too long (README, "The inbox").
func (h *Handler) escalateAndResume(ctx context.Context) error {
	escalated, err := h.Store.EscalateAlerts(ctx, time.Now(), sweepBatch)
	if err != nil {
		return err
	}
	for _, a := range escalated {
		h.Log.InfoContext(ctx, "alert escalated", "alert_id", a.ID, "account_id", a.AccountID, "contact_id", a.ContactID)
		if err := h.Queue.AlertEscalation(ctx, a.ID); err != nil {
			return err
		}
	}
	resumed, err := h.Store.ResumeIdleBots(ctx, time.Now(), sweepBatch)
	if err != nil {
		return err
	}
	if len(resumed) > 0 {
		h.Log.InfoContext(ctx, "bots resumed after the team's silence", "contacts", len(resumed))
	}
	return nil
}
