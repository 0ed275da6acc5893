package inbox

import (
	"context"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"funnelchat/api/web"
	"funnelchat/models"
	"funnelchat/models/report"
)

// The campaign page (README, "Goals and campaign reports"): the campaign's funnel drawn on the
// server, its opening variants side by side, its days, its sends one by one, and the report's CSV. The
// numbers are report.CampaignReport's; this file only lays them out. Everything is HTML and inline
// SVG, so the page is complete without the script, and the bars' widths are SVG attributes rather
// than inline styles, which the inbox's Content-Security-Policy (inbox.go) refuses.

// campaignSendsPage is how many sends the campaign page lists at once.
const campaignSendsPage = 50

// sendFilters are the statuses the sends table can be filtered by, in the order a send moves through
// them, each with its label and what it means (models/campaign_send.go).
var sendFilters = []sendStatus{
	{models.SendQueued, "Queued", "Waiting for its time, its pacing slot, or the campaign to be live again"},
	{models.SendPending, "Pending", "Written; being delivered or waiting for a retry"},
	{models.SendSent, "Sent", "Delivered: the receiver or provider accepted it (opened)"},
	{models.SendFailed, "Failed", "The contact cannot be reached on the channel, or the delivery failed for good"},
	{models.SendSuppressed, "Suppressed", "Not sent: the contact opted out on the campaign's channel"},
	{models.SendDeferred, "Deferred", "Waiting for the end of the contact's quiet hours"},
	{models.SendSkipped, "Skipped", "Not needed: the lead wrote first, or was removed from the list"},
}

type sendStatus struct{ Status, Label, Title string }

// sendReasons put the reason codes a send can carry in words; any other reason (a delivery's error)
// is shown as it is.
var sendReasons = map[string]string{
	models.ReasonOptedOut:          "Opted out",
	models.ReasonNoChannelIdentity: "No address on the campaign's channel",
	models.ReasonOutsideWindow:     "Outside the channel's messaging window",
	models.ReasonQuietHours:        "Quiet hours",
	models.ReasonRemovedFromList:   "Removed from the list",
}

// contactName names a contact as every page does.
var contactName = report.ContactName

// funnelBar is one bar of the funnel chart.
type funnelBar struct {
	Stage, Label string
	Count        int
	// Width is the bar's length as a percentage of the added contacts, for the SVG's width attribute.
	Width string
	// Rate says what share the count is ("80% of added"); "" for the first bar.
	Rate string
	// Title explains the stage.
	Title string
}

// figure is one of the small numbers beside the chart.
type figure struct {
	Label, Value, Title string
	// Filter is the send status the figure links to ("" when it counts no sends).
	Filter string
}

// variantCard is an opening variant as the page shows it.
type variantCard struct {
	report.VariantReport
	Name                 string
	ReplyRate, GoalRate  string
	Best                 bool
	OpenedShare          string
	Replied, GoalReached string
}

// dayRow is a day of the report, its date in words: Day ("Thu, Nov 19") and Year ("2026"), which a
// phone leaves out.
type dayRow struct {
	report.DayReport
	Day, Year string
}

// sendRow is a send of the sends table.
type sendRow struct {
	models.SendView
	Name    string
	Variant string
	Reason  string
	// ReasonCode is the reason as stored, when Reason puts it in words.
	ReasonCode string
}

// sendFilter is a link of the sends table's status filter.
type sendFilter struct {
	Label, Title, Href string
	Count              int
	Current            bool
}

// campaignView is the campaign page's data.
type campaignView struct {
	*models.Campaign
	Report   *report.CampaignReport
	ListName string
	Path     string
	Funnel   []funnelBar
	Figures  []figure
	Variants []variantCard
	// BestNote explains the Best mark, or why no variant has it; "" with one variant.
	BestNote string
	BestSet  bool
	Days     []dayRow
	Sends    []sendRow
	Filters  []sendFilter
	// Filter is the sends' status filter ("" for all; Status is the campaign's); More the next page's
	// link ("" on the last).
	Filter, More string
	// Paged: this is a later page of the sends.
	Paged bool
}

// campaignPage: GET /inbox/campaigns/{id}[?status=&cursor=] shows the campaign's report and its
// sends, 50 at a time, filtered by status.
func (h *Handler) campaignPage(c *fiber.Ctx) error {
	sess := sessionOf(c)
	ctx := c.UserContext()
	page, err := pageOf(c)
	if err != nil {
		return h.inboxNotFound(c)
	}
	page.Limit = campaignSendsPage
	status := c.Query("status")
	if status != "" && !slices.ContainsFunc(sendFilters, func(f sendStatus) bool { return f.Status == status }) {
		return h.inboxNotFound(c) // a link the inbox did not make
	}
	campaign, err := h.store.CampaignByID(ctx, sess.AccountID, c.Params("id"))
	if err != nil {
		return h.campaignMissing(c, err)
	}
	rep, err := h.reports.CampaignReport(ctx, sess.AccountID, campaign.ID)
	if err != nil {
		return h.campaignMissing(c, err)
	}
	sends, next, err := h.store.CampaignSends(ctx, sess.AccountID, campaign.ID, status, page)
	if err != nil {
		return h.campaignMissing(c, err)
	}
	v := campaignView{Campaign: campaign, Report: rep, Path: campaignPath(campaign.ID),
		Filter: status, Paged: page.Cursor != ""}
	if campaign.ListID != nil {
		if l, err := h.store.ListByID(ctx, sess.AccountID, *campaign.ListID); err == nil {
			v.ListName = l.Name
		}
	}
	v.Funnel = funnelBars(rep)
	v.Figures = funnelFigures(rep)
	v.Variants, v.BestNote = variantCards(rep)
	v.BestSet = rep.BestVariant != nil
	v.Days = dayRows(rep.Days)
	v.Filters = v.filters()
	if v.Sends, err = h.sendRows(ctx, sess.AccountID, sends); err != nil {
		return h.inboxFailure(c, err)
	}
	if next != "" {
		v.More = v.sendsLink(status, next)
	}
	return h.render(c, fiber.StatusOK, "campaign", h.view(c, campaign.Name, "campaigns", v))
}

// campaignPath is a campaign's page.
func campaignPath(id string) string { return "/inbox/campaigns/" + url.PathEscape(id) }

// campaignMissing answers a campaign that is not the account's (or a store failure).
func (h *Handler) campaignMissing(c *fiber.Ctx, err error) error {
	if models.ErrorCode(err) == models.CodeNotFound || models.ErrorCode(err) == models.CodeValidation {
		return h.inboxNotFound(c)
	}
	return h.inboxFailure(c, err)
}

// campaignReportCSV: GET /inbox/campaigns/{id}/report.csv streams the report's CSV, as GET
// /v1/campaigns/{id}/report?format=csv does (api/outcomes.go): one row per added contact.
func (h *Handler) campaignReportCSV(c *fiber.Ctx) error {
	sess := sessionOf(c)
	// The rows are written after the handler returns; the id must not point into the request's
	// buffer, which Fiber reuses.
	accountID, id := sess.AccountID, strings.Clone(c.Params("id"))
	if _, err := h.store.CampaignByID(c.UserContext(), accountID, id); err != nil {
		return h.campaignMissing(c, err) // before the first byte, so that it is the 404 page
	}
	return web.StreamCSV(c, h.log.With("account_id", accountID, "campaign_id", id), "campaign report", "campaign-"+id+".csv",
		report.CampaignReportCSVHeader, func(ctx context.Context, write func([]string) error) error {
			return h.reports.CampaignReportCSV(ctx, accountID, id, write)
		})
}

// funnelBars are the chart's bars: added, opened, replied, goal reached, each as long as its share of
// the added contacts. Replied and goal reached are rated over the opened, as the report rates them.
func funnelBars(r *report.CampaignReport) []funnelBar {
	width := func(n int) string {
		if r.Added == 0 {
			return "0%"
		}
		return strconv.FormatFloat(float64(n)*100/float64(r.Added), 'f', 4, 64) + "%"
	}
	return []funnelBar{
		{Stage: "added", Label: "Added", Count: r.Added, Width: width(r.Added),
			Title: "Contacts added to the campaign's list while it could send: each is owed one opening"},
		{Stage: "opened", Label: "Opened", Count: r.Opened, Width: width(r.Opened), Rate: percent(ratio(r.Opened, r.Added)) + " of added",
			Title: "Contacts whose opening message was delivered"},
		{Stage: "replied", Label: "Replied", Count: r.Replied, Width: width(r.Replied), Rate: percent(r.ReplyRate) + " of opened",
			Title: "Opened contacts who wrote back after their opening was delivered"},
		{Stage: "goal", Label: "Goal reached", Count: r.GoalReached, Width: width(r.GoalReached), Rate: percent(r.GoalRate) + " of opened",
			Title: "Opened contacts who reached the campaign's goal"},
	}
}

// funnelFigures are the smaller numbers beside the chart: where the other sends stand, what followed
// the openings, and the median times.
func funnelFigures(r *report.CampaignReport) []figure {
	title := func(status string) string {
		for _, f := range sendFilters {
			if f.Status == status {
				return f.Title
			}
		}
		return ""
	}
	return []figure{
		{Label: "Queued", Value: thousands(r.Queued), Title: title(models.SendQueued), Filter: models.SendQueued},
		{Label: "Pending", Value: thousands(r.Pending), Title: title(models.SendPending), Filter: models.SendPending},
		{Label: "Failed", Value: thousands(r.Failed), Title: title(models.SendFailed), Filter: models.SendFailed},
		{Label: "Suppressed", Value: thousands(r.Suppressed), Title: title(models.SendSuppressed), Filter: models.SendSuppressed},
		{Label: "Deferred", Value: thousands(r.Deferred), Title: title(models.SendDeferred), Filter: models.SendDeferred},
		{Label: "Skipped", Value: thousands(r.Skipped), Title: title(models.SendSkipped), Filter: models.SendSkipped},
		{Label: "Handed off", Value: thousands(r.HandedOff), Title: "Opened contacts whose conversation was handed to the team after the opening"},
		{Label: "Opted out", Value: thousands(r.OptedOut), Title: "Opened contacts who opted out of the campaign's channel after the opening"},
		{Label: "Median time to reply", Value: duration(r.MedianMinutesToReply), Title: "From the opening's delivery to the contact's first reply"},
		{Label: "Median time to goal", Value: duration(r.MedianMinutesToGoal), Title: "From the opening's delivery to the goal"},
	}
}

// variantCards lays out the opening variants, the Best one marked, and the line that explains the
// mark (models.bestVariant's rule: a one-sided two-proportion z-test at 95% against every other
// variant, on goal rate once any contact reached the goal, else on reply rate).
func variantCards(r *report.CampaignReport) ([]variantCard, string) {
	cards := make([]variantCard, len(r.Variants))
	for i, v := range r.Variants {
		cards[i] = variantCard{VariantReport: v, Name: variantName(v.Index), ReplyRate: percent(v.ReplyRate), GoalRate: percent(v.GoalRate),
			OpenedShare: percent(ratio(v.Opened, v.Added)), Replied: thousands(v.Replied), GoalReached: thousands(v.GoalReached),
			Best: r.BestVariant != nil && r.BestVariant.Index == v.Index}
	}
	switch {
	case r.BestVariant != nil && r.BestVariant.Metric == "goalRate":
		return cards, "Best: its goal rate is above every other variant's by a one-sided two-proportion test at 95%."
	case r.BestVariant != nil:
		return cards, "Best: no contact has reached the goal yet, so by reply rate: above every other variant's by a one-sided two-proportion test at 95%."
	case len(cards) >= 2:
		return cards, "No variant is ahead by more than chance yet."
	}
	return cards, ""
}

// variantName names a variant by a letter, as A/B tests are spoken of ("Variant A" is index 0).
func variantName(index int) string {
	if index >= 0 && index < 26 {
		return "Variant " + string(rune('A'+index))
	}
	return "Variant " + strconv.Itoa(index+1)
}

// dayRows puts the report's dates in words (they are the account's local days, not instants, so they
// are not <time> elements that the script would move to the reader's zone).
func dayRows(days []report.DayReport) []dayRow {
	rows := make([]dayRow, len(days))
	for i, d := range days {
		rows[i] = dayRow{DayReport: d, Day: d.Date}
		if t, err := time.Parse(time.DateOnly, d.Date); err == nil {
			rows[i].Day, rows[i].Year = t.Format("Mon, Jan 2"), t.Format("2006")
		}
	}
	return rows
}

// sendRows adds each send's contact name and its reason in words.
func (h *Handler) sendRows(ctx context.Context, accountID string, sends []models.SendView) ([]sendRow, error) {
	ids := make([]string, len(sends))
	for i, s := range sends {
		ids[i] = s.ContactID
	}
	contacts, err := h.store.ContactsByID(ctx, accountID, ids)
	if err != nil {
		return nil, err
	}
	rows := make([]sendRow, len(sends))
	for i, s := range sends {
		rows[i] = sendRow{SendView: s, Variant: strings.TrimPrefix(variantName(s.Variant), "Variant "), Name: s.ContactID}
		if ct := contacts[s.ContactID]; ct != nil {
			rows[i].Name = contactName(ct, "")
		}
		if s.Reason != nil {
			rows[i].Reason = *s.Reason
			if words, ok := sendReasons[*s.Reason]; ok {
				rows[i].Reason, rows[i].ReasonCode = words, *s.Reason
			}
		}
	}
	return rows, nil
}

// filters are the sends table's status links, each with the report's count.
func (v campaignView) filters() []sendFilter {
	counts := map[string]int{
		models.SendQueued: v.Report.Queued, models.SendPending: v.Report.Pending, models.SendSent: v.Report.Opened,
		models.SendFailed: v.Report.Failed, models.SendSuppressed: v.Report.Suppressed, models.SendDeferred: v.Report.Deferred,
		models.SendSkipped: v.Report.Skipped,
	}
	out := []sendFilter{{Label: "All", Title: "Every send", Href: v.sendsLink("", ""), Count: v.Report.Added, Current: v.Filter == ""}}
	for _, f := range sendFilters {
		out = append(out, sendFilter{Label: f.Label, Title: f.Title, Href: v.sendsLink(f.Status, ""), Count: counts[f.Status], Current: v.Filter == f.Status})
	}
	return out
}

// sendsLink is the page with the sends filtered by status, from cursor, scrolled to the table.
func (v campaignView) sendsLink(status, cursor string) string {
	q := url.Values{}
	if status != "" {
		q.Set("status", status)
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	link := v.Path
	if len(q) > 0 {
		link += "?" + q.Encode()
	}
	return link + "#sends"
}

// FilterLabel names the sends' filter in words ("" for all).
func (v campaignView) FilterLabel() string {
	for _, f := range sendFilters {
		if f.Status == v.Filter {
			return strings.ToLower(f.Label)
		}
	}
	return ""
}

// ratio is n over of, 0 when of is 0.
func ratio(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return float64(n) / float64(of)
}

// percent writes a rate (0..1) as a percentage with at most one decimal ("33.3%", "60%").
func percent(r float64) string {
	return strconv.FormatFloat(math.Round(r*1000)/10, 'f', -1, 64) + "%"
}

// thousands writes a count with thousands separators ("12,345").
func thousands(n int) string {
	s := strconv.Itoa(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// duration writes a median in minutes for people: "—" when there is none, minutes below two hours,
// hours from there.
func duration(minutes *float64) string {
	switch m := minutes; {
	case m == nil:
		return "—"
	case *m < 1:
		return "under 1 min"
	case *m < 120:
		return strconv.FormatFloat(math.Round(*m), 'f', -1, 64) + " min"
	default:
		return strconv.FormatFloat(math.Round(*m/6)/10, 'f', -1, 64) + " hours"
	}
}
