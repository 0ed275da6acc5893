package report

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/uptrace/bun"

	"funnelchat/models"
)

// CampaignReport is a campaign's funnel (GET /v1/campaigns/{id}/report; README "Campaign reports").
// Every number is counted in SQL over the campaign's sends, exact at any size:
//   - Added: contacts added to the list while the campaign could trigger (one send each); Queued,
//     Pending, Opened (delivered: the send is sent), Failed, Suppressed, Deferred and Skipped split
//     them by their send's status.
//   - Of the opened: Replied wrote after their opening was delivered, HandedOff had an alert raised
//     after it, OptedOut opted out of the campaign's channel after it, GoalReached reached the
//     campaign's goal. Rates are over Opened (0 when none), rounded to 4 decimals.
//   - The medians are minutes from the delivery to the first reply, and to the goal (nil when none).
type CampaignReport struct {
	Added                int             `json:"added"`
	Queued               int             `json:"queued"`
	Pending              int             `json:"pending"`
	Opened               int             `json:"opened"`
	Failed               int             `json:"failed"`
	Suppressed           int             `json:"suppressed"`
	Deferred             int             `json:"deferred"`
	Skipped              int             `json:"skipped"`
	Replied              int             `json:"replied"`
	HandedOff            int             `json:"handedOff"`
	GoalReached          int             `json:"goalReached"`
	OptedOut             int             `json:"optedOut"`
	ReplyRate            float64         `json:"replyRate"`
	GoalRate             float64         `json:"goalRate"`
	MedianMinutesToReply *float64        `json:"medianMinutesToReply"`
	MedianMinutesToGoal  *float64        `json:"medianMinutesToGoal"`
	Variants             []VariantReport `json:"variants"`
	BestVariant          *BestVariant    `json:"bestVariant"`
	// Days count openings, first replies and goals by the day they happened, in TimeZone (the
	// account's, from its compliance settings), from the first such day to the last.
	Days     []DayReport `json:"days"`
	TimeZone string      `json:"timeZone"`
}

// VariantReport is one opening variant's part of the funnel.
type VariantReport struct {
	Index  int    `json:"index"`
	Letter string `json:"letter"` // A for index 0, as in the CSV
	Text   string `json:"text"`
	// Retired: an edit removed the variant; no new send gets it, and its results stay here.
	Retired     bool    `json:"retired"`
	Added       int     `json:"added"`
	Opened      int     `json:"opened"`
	Replied     int     `json:"replied"`
	GoalReached int     `json:"goalReached"`
	ReplyRate   float64 `json:"replyRate"`
	GoalRate    float64 `json:"goalRate"`
}

// DayReport is one day of a campaign.
type DayReport struct {
	Date        string `json:"date"` // YYYY-MM-DD
	Opened      int    `json:"opened"`
	Replied     int    `json:"replied"`
	GoalReached int    `json:"goalReached"`
}

// BestVariant names the variant that does better than every other by more than noise (see
// bestVariant): by its goal rate when any contact reached the goal, else by its reply rate.
type BestVariant struct {
	Index  int    `json:"index"`
	Metric string `json:"metric"` // goalRate | replyRate
}

// reportBucket is the width, in seconds, of the UTC time slices that days are counted from: every
// time zone's offset is a multiple of 15 minutes, so each slice falls within one local day.
const reportBucket = 15 * 60

// maxReportDays is the longest run of days a report fills in with empty days between active ones.
const maxReportDays = 400

// reportRow is one row of the report query: kind "v" (a variant's counts, k its index), "od", "rd",
// "gd" (openings, first replies, goals in the 15-minute slice k), "rm", "gm" (the middle value or
// values of the minutes to reply, to goal, in m).
type reportRow struct {
	Kind       string   `bun:"kind"`
	K          int64    `bun:"k"`
	M          *float64 `bun:"m"`
	Added      int      `bun:"added"`
	Queued     int      `bun:"queued"`
	Pending    int      `bun:"pending"`
	Opened     int      `bun:"opened"`
	Failed     int      `bun:"failed"`
	Suppressed int      `bun:"suppressed"`
	Deferred   int      `bun:"deferred"`
	Skipped    int      `bun:"skipped"`
	Replied    int      `bun:"replied"`
	HandedOff  int      `bun:"handed_off"`
	Goal       int      `bun:"goal"`
	OptedOut   int      `bun:"opted_out"`
}

// perContactSQL is the report's row per added contact: its send, and the times of what followed its
// opening (written_at: when the opening was written and handed to the channel, so a lead or a bridge
// that answers before a slow receiver's answer was recorded counts). A reply is an incoming message
// that is neither an opt-out nor a HELP (notAReply). The arguments are the campaign's consent channel
// and id.
const perContactSQL = `SELECT s.id, s.contact_id, s.variant, s.status, s.sent_at, w.created_at AS written_at,
	CASE WHEN s.sent_at IS NULL THEN NULL ELSE (SELECT min(m.created_at) FROM messages AS m
		WHERE m.contact_id = s.contact_id AND m.direction = 'incoming' AND m.created_at > w.created_at
		AND NOT ` + notAReply + `) END AS first_reply_at,
	CASE WHEN s.sent_at IS NULL THEN NULL ELSE (SELECT min(a.created_at) FROM alerts AS a
		WHERE a.contact_id = s.contact_id AND a.created_at > w.created_at) END AS handed_off_at,
	CASE WHEN s.sent_at IS NULL THEN NULL ELSE (SELECT min(e.at) FROM consent_events AS e
		WHERE e.contact_id = s.contact_id AND e.status = 'opted_out' AND e.channel IN (?, '*') AND e.at > w.created_at) END AS opted_out_at,
	g.at AS goal_at
FROM campaign_sends AS s LEFT JOIN messages AS w ON w.id = s.message_id
	LEFT JOIN goals AS g ON g.campaign_id = s.campaign_id AND g.contact_id = s.contact_id
WHERE s.campaign_id = ?`

// notAReply is true for an incoming message m that answered nothing the campaign said: an opt-out or a
// HELP. Both are handled as keywords (bot status "keyword"): the built-in and the account's words, and
// the plain-language requests the bot reads (its opt_out tool, the offline bot's phrases) through the
// same path; an opt-in keyword, which records an opted_in event for the message, is a reply.
const notAReply = `(m.bot_status = '` + models.BotKeyword + `' AND NOT EXISTS (SELECT 1 FROM consent_events AS ei
		WHERE ei.message_id = m.id AND ei.status = 'opted_in'))`

// CampaignReport computes a campaign's report in one query. Errors: NOT_FOUND (another account's
// campaign too).
func (r *Reader) CampaignReport(ctx context.Context, accountID, campaignID string) (*CampaignReport, error) {
	c, err := r.store.CampaignByID(ctx, accountID, campaignID)
	if err != nil {
		return nil, err
	}
	settings, err := r.store.ComplianceSettings(ctx, accountID)
	if err != nil {
		return nil, err
	}
	loc, err := time.LoadLocation(settings.TimeZone)
	if err != nil {
		loc = time.UTC
	}
	opened := `status = 'sent'`
	count := func(cond string) string { return "sum(CASE WHEN " + cond + " THEN 1 ELSE 0 END)" }
	median := func(kind, later string) string {
		return `SELECT '` + kind + `', 0, CAST(v AS DOUBLE PRECISION), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 FROM (
			SELECT v, row_number() OVER (ORDER BY v) AS rn, count(*) OVER () AS n FROM (
				SELECT ` + r.sqlMinutes(later, "written_at") + ` AS v FROM per WHERE ` + opened + ` AND ` + later + ` IS NOT NULL) AS d) AS r
			WHERE rn IN ((n + 1) / 2, (n + 2) / 2)`
	}
	day := func(kind, at string) string {
		return `SELECT '` + kind + `', ` + r.sqlBucket(at) + `, CAST(NULL AS DOUBLE PRECISION), count(*), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
			FROM per WHERE ` + opened + ` AND ` + at + ` IS NOT NULL GROUP BY 2`
	}
	query := `WITH per AS MATERIALIZED (` + perContactSQL + `)
		SELECT 'v' AS kind, variant AS k, CAST(NULL AS DOUBLE PRECISION) AS m, count(*) AS added,
			` + count(`status IN ('queued', 'held')`) + ` AS queued, ` + count(`status = 'pending'`) + ` AS pending,
			` + count(opened) + ` AS opened, ` + count(`status = 'failed'`) + ` AS failed,
			` + count(`status = 'suppressed'`) + ` AS suppressed, ` + count(`status = 'deferred'`) + ` AS deferred,
			` + count(`status = 'skipped'`) + ` AS skipped,
			` + count(opened+` AND first_reply_at IS NOT NULL`) + ` AS replied,
			` + count(opened+` AND handed_off_at IS NOT NULL`) + ` AS handed_off,
			` + count(opened+` AND goal_at IS NOT NULL`) + ` AS goal,
			` + count(opened+` AND opted_out_at IS NOT NULL`) + ` AS opted_out
		FROM per GROUP BY variant
		UNION ALL ` + day("od", "sent_at") + `
		UNION ALL ` + day("rd", "first_reply_at") + `
		UNION ALL ` + day("gd", "goal_at") + `
		UNION ALL ` + median("rm", "first_reply_at") + `
		UNION ALL ` + median("gm", "goal_at")
	var rows []reportRow
	// One statement, so one snapshot: the report adds up even while sends move on. PostgreSQL's JIT
	// would compile this query for longer than it runs (0.65 s of 1.2 s over 100,000 contacts).
	err = r.store.InTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		if !r.isSQLite() {
			if _, err := tx.ExecContext(ctx, "SET LOCAL jit = off"); err != nil {
				return err
			}
		}
		return tx.NewRaw(query, c.ChannelLabel(), c.ID).Scan(ctx, &rows)
	})
	if err != nil {
		return nil, fmt.Errorf("campaign report: %w", err)
	}
	return buildReport(c, rows, loc), nil
}

// buildReport folds the query's rows into the report.
func buildReport(c *models.Campaign, rows []reportRow, loc *time.Location) *CampaignReport {
	r := &CampaignReport{Variants: []VariantReport{}, Days: []DayReport{}, TimeZone: loc.String()}
	// Every active variant, and every retired one a send used (added below, from the rows), each with
	// its own text.
	all := c.Variants()
	variants := map[int]*VariantReport{}
	for _, v := range all {
		if !v.Retired {
			variants[v.Index] = &VariantReport{Index: v.Index, Letter: v.Letter, Text: v.Text}
		}
	}
	days := map[string]*DayReport{}
	dayOf := func(bucket int64) *DayReport {
		date := time.Unix(bucket*reportBucket, 0).In(loc).Format(time.DateOnly)
		if days[date] == nil {
			days[date] = &DayReport{Date: date}
		}
		return days[date]
	}
	var toReply, toGoal []float64
	for _, row := range rows {
		switch row.Kind {
		case "v":
			r.Added += row.Added
			r.Queued += row.Queued
			r.Pending += row.Pending
			r.Opened += row.Opened
			r.Failed += row.Failed
			r.Suppressed += row.Suppressed
			r.Deferred += row.Deferred
			r.Skipped += row.Skipped
			r.Replied += row.Replied
			r.HandedOff += row.HandedOff
			r.GoalReached += row.Goal
			r.OptedOut += row.OptedOut
			v := variants[int(row.K)]
			if v == nil { // a retired variant
				i := int(row.K)
				v = &VariantReport{Index: i, Letter: models.VariantLetter(i), Retired: true}
				if i < len(all) {
					v.Text = all[i].Text
				}
				variants[i] = v
			}
			v.Added, v.Opened, v.Replied, v.GoalReached = row.Added, row.Opened, row.Replied, row.Goal
		case "od":
			dayOf(row.K).Opened += row.Added
		case "rd":
			dayOf(row.K).Replied += row.Added
		case "gd":
			dayOf(row.K).GoalReached += row.Added
		case "rm":
			toReply = append(toReply, *row.M)
		case "gm":
			toGoal = append(toGoal, *row.M)
		}
	}
	r.ReplyRate, r.GoalRate = rate(r.Replied, r.Opened), rate(r.GoalReached, r.Opened)
	r.MedianMinutesToReply, r.MedianMinutesToGoal = middle(toReply), middle(toGoal)
	for _, v := range variants {
		v.ReplyRate, v.GoalRate = rate(v.Replied, v.Opened), rate(v.GoalReached, v.Opened)
		r.Variants = append(r.Variants, *v)
	}
	sort.Slice(r.Variants, func(i, j int) bool { return r.Variants[i].Index < r.Variants[j].Index })
	r.BestVariant = bestVariant(r.Variants, r.GoalReached > 0)
	r.Days = fillDays(days, loc)
	return r
}

// fillDays lists the days from the first to the last, the days without activity between them
// included (up to maxReportDays; beyond that only active days).
func fillDays(days map[string]*DayReport, loc *time.Location) []DayReport {
	out := make([]DayReport, 0, len(days))
	for _, d := range days {
		out = append(out, *d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Date < out[j].Date })
	if len(out) < 2 {
		return out
	}
	first, _ := time.ParseInLocation(time.DateOnly, out[0].Date, loc)
	last, _ := time.ParseInLocation(time.DateOnly, out[len(out)-1].Date, loc)
	if last.Sub(first) > maxReportDays*24*time.Hour {
		return out
	}
	filled := make([]DayReport, 0, len(out))
	for d := first; !d.After(last); d = d.AddDate(0, 0, 1) {
		date := d.Format(time.DateOnly)
		if got := days[date]; got != nil {
			filled = append(filled, *got)
		} else {
			filled = append(filled, DayReport{Date: date})
		}
	}
	return filled
}

// rate is n over of, rounded to 4 decimals; 0 when of is 0.
func rate(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return math.Round(float64(n)/float64(of)*10000) / 10000
}

// middle is the median from the query's middle value (odd count) or two middle values (even count),
// in minutes rounded to 1 decimal; a goal recorded before the delivery counts as 0 minutes.
func middle(vs []float64) *float64 {
	if len(vs) == 0 {
		return nil
	}
	sum := 0.0
	for _, v := range vs {
		sum += math.Max(v, 0)
	}
	m := math.Round(sum/float64(len(vs))*10) / 10
	return &m
}

// bestVariant is the variant whose rate (goal rate when byGoal, else reply rate) is above every
// other variant's by more than noise: a one-sided two-proportion z-test at 95% (z > 1.645) against
// each of them, with at least 5 successes and 5 failures on both sides so that the normal
// approximation holds. nil when there are fewer than two variants or no such winner.
func bestVariant(variants []VariantReport, byGoal bool) *BestVariant {
	if len(variants) < 2 {
		return nil
	}
	metric := "replyRate"
	hits := func(v VariantReport) int { return v.Replied }
	if byGoal {
		metric, hits = "goalRate", func(v VariantReport) int { return v.GoalReached }
	}
	leader := 0
	for i, v := range variants {
		if v.Opened > 0 && float64(hits(v))/float64(v.Opened) > ratio(hits(variants[leader]), variants[leader].Opened) {
			leader = i
		}
	}
	a := variants[leader]
	for i, b := range variants {
		if i == leader {
			continue
		}
		if !significantlyAbove(hits(a), a.Opened, hits(b), b.Opened) {
			return nil
		}
	}
	return &BestVariant{Index: a.Index, Metric: metric}
}

func ratio(n, of int) float64 {
	if of == 0 {
		return 0
	}
	return float64(n) / float64(of)
}

// significantlyAbove reports whether x1/n1 is above x2/n2 by a one-sided two-proportion z-test at 95%
// with the pooled proportion, each sample holding at least 5 successes and 5 failures.
func significantlyAbove(x1, n1, x2, n2 int) bool {
	for _, s := range [][2]int{{x1, n1}, {x2, n2}} {
		if s[0] < 5 || s[1]-s[0] < 5 {
			return false
		}
	}
	p1, p2 := float64(x1)/float64(n1), float64(x2)/float64(n2)
	p := float64(x1+x2) / float64(n1+n2)
	se := math.Sqrt(p * (1 - p) * (1/float64(n1) + 1/float64(n2)))
	return se > 0 && (p1-p2)/se > 1.645
}

// sqlMinutes is the SQL for the minutes from earlier to later, two timestamp columns.
func (r *Reader) sqlMinutes(later, earlier string) string {
	if r.isSQLite() {
		return "((julianday(" + later + ") - julianday(" + earlier + ")) * 1440.0)"
	}
	return "(EXTRACT(EPOCH FROM (" + later + " - " + earlier + ")) / 60.0)"
}

// sqlBucket is the SQL for the reportBucket-wide UTC slice a timestamp column falls in.
func (r *Reader) sqlBucket(col string) string {
	if r.isSQLite() {
		return fmt.Sprintf("(CAST(strftime('%%s', %s) AS INTEGER) / %d)", col, reportBucket)
	}
	return fmt.Sprintf("CAST(floor(EXTRACT(EPOCH FROM %s) / %d) AS BIGINT)", col, reportBucket)
}

// CampaignReportCSVHeader is the header of the report's CSV: one row per added contact.
var CampaignReportCSVHeader = []string{"contact_id", "first_name", "phone", "variant", "opening_status", "opened_at",
	"first_reply_at", "handed_off_at", "goal_reached_at", "opted_out_at"}

// reportContact is one added contact as the report's CSV lists it.
type reportContact struct {
	ID           string     `bun:"id"`
	ContactID    string     `bun:"contact_id"`
	FirstName    string     `bun:"first_name"`
	Phone        *string    `bun:"phone"`
	Variant      int        `bun:"variant"`
	Status       string     `bun:"status"`
	SentAt       *time.Time `bun:"sent_at"`
	WrittenAt    *time.Time `bun:"written_at"`
	FirstReplyAt *time.Time `bun:"first_reply_at"`
	HandedOffAt  *time.Time `bun:"handed_off_at"`
	OptedOutAt   *time.Time `bun:"opted_out_at"`
	GoalAt       *time.Time `bun:"goal_at"`
}

// record is the row in CampaignReportCSVHeader's order; absent times are empty fields. The times
// after the opening are those the report counts (opened contacts only); the goal's is there for
// every contact that reached it.
func (r *reportContact) record() []string {
	status := r.Status
	if status == models.SendHeld {
		status = models.SendQueued
	}
	stamp := func(t *time.Time) string {
		if t == nil {
			return ""
		}
		return t.UTC().Format(time.RFC3339)
	}
	afterOpening := func(t *time.Time) string {
		if status != models.SendSent {
			return ""
		}
		return stamp(t)
	}
	return []string{r.ContactID, r.FirstName, orEmpty(r.Phone), models.VariantLetter(r.Variant), status, afterOpening(r.SentAt),
		afterOpening(r.FirstReplyAt), afterOpening(r.HandedOffAt), stamp(r.GoalAt), afterOpening(r.OptedOutAt)}
}

// reportCSVBatch is how many contacts the CSV reads per query, each batch after the last one's send.
const reportCSVBatch = 1000

// CampaignReportCSV calls write with each added contact's row (CampaignReportCSVHeader), in the order
// they were added, reading them in batches so that memory stays flat for any number. It stops at
// write's first error. Errors: NOT_FOUND.
func (r *Reader) CampaignReportCSV(ctx context.Context, accountID, campaignID string, write func([]string) error) error {
	c, err := r.store.CampaignByID(ctx, accountID, campaignID)
	if err != nil {
		return err
	}
	after := ""
	for {
		var rows []reportContact
		err := r.db.NewRaw(`WITH per AS (`+perContactSQL+` AND s.id > ? ORDER BY s.id LIMIT ?)
			SELECT per.*, c.first_name, c.phone FROM per JOIN contacts AS c ON c.id = per.contact_id ORDER BY per.id`,
			c.ChannelLabel(), c.ID, after, reportCSVBatch).Scan(ctx, &rows)
		if err != nil {
			return fmt.Errorf("campaign report csv: %w", err)
		}
		for i := range rows {
			if err := write(rows[i].record()); err != nil {
				return err
			}
		}
		if len(rows) < reportCSVBatch {
			return nil
		}
		after = rows[len(rows)-1].ID
	}
}
