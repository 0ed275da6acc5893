package app

import (
	"context"
	"time"

	"funnelchat/models"
)

// UpdateCampaign changes a campaign; going back to live queues the sends its pause held (the
// openings, and the follow-ups that fell due, each at the campaign's pace). Errors: those of
// UpdateCampaign.
func (a *App) UpdateCampaign(ctx context.Context, accountID, campaignID string, in models.CampaignInput) (*models.Campaign, error) {
	campaign, resumed, err := a.store.UpdateCampaign(ctx, accountID, campaignID, in)
	if err != nil {
		return nil, err
	}
	if resumed != nil {
		a.releaseHeld(ctx, resumed)
	}
	return campaign, nil
}

// releaseHeld queues what a campaign's pause held. Everything is stored already, so a Redis failure
// only delays it until the sweep.
func (a *App) releaseHeld(ctx context.Context, r *models.Resumed) {
	a.queueOpenings(ctx, r.Openings)
	enqCtx, cancel := context.WithTimeout(ctx, EnqueueTimeout)
	defer cancel()
	for _, f := range r.FollowUps {
		if err := a.queue.FollowUp(enqCtx, f.SendID, f.Step, time.Now()); err != nil {
			a.log.WarnContext(ctx, "held follow-ups released, not all enqueued; the sweep will send them", "count", len(r.FollowUps),
				"error", err.Error())
			return
		}
	}
}
