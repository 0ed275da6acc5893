package app

import (
	"context"
	"time"

	"funnelchat/models"
)

// CreateCampaign creates a campaign, with its send counts (all zero). Nothing is queued, even for a
// campaign created live: it owes openings only to contacts added to its list from then on (AddToList
// and ImportContacts queue those), never to those already on it. Errors: those of
// models.Store.CreateCampaign.
func (a *App) CreateCampaign(ctx context.Context, accountID string, in models.CampaignInput) (*models.Campaign, error) {
	campaign, err := a.store.CreateCampaign(ctx, accountID, in)
	if err != nil {
		return nil, err
	}
	campaign.Sends = &models.SendCounts{} // a new campaign owes no one yet
	return campaign, nil
}

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
