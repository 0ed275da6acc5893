package jobs

import (
	"context"
	"time"

	"github.com/hibiken/asynq"
)

// handlePartitions is the hourly maintenance of the partitioned tables (PostgreSQL): the monthly
// partitions of messages and consent_events made models.PartitionMonthsAhead months ahead, and, when
// MESSAGE_RETENTION_MONTHS is set, the message partitions older than that dropped (consent events
// never are). On SQLite it deletes the expired messages, if any. Every worker schedules it; concurrent
// runs wait for each other in the database and the second finds the work done.
func (h *Handler) handlePartitions(ctx context.Context, _ *asynq.Task) error {
	rep, err := h.Store.MaintainPartitions(ctx, time.Now(), h.Config.MessageRetentionMonths)
	if err != nil {
		return err
	}
	if len(rep.Created) > 0 || len(rep.Dropped) > 0 {
		h.Log.InfoContext(ctx, "partitions maintained", "created", rep.Created, "dropped", rep.Dropped,
			"retention_months", h.Config.MessageRetentionMonths)
	}
	return nil
}
