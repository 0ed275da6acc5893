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
//   - The medians are minutes from the delivery to the first reply, and to the goal (nil when none);
//     a send recorded as sent without its opening message has no time to count from, and is left out.
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

// reportRow is one row of the report query: kind "v" (the sends of variant k with status Status:
// N of them, and of those the ones that replied, were handed off, reached the goal, opted out), "od",
// "rd", "gd" (N openings, first replies, goals in the 15-minute slice k), "rm", "gm" (the middle value
// or values of the minutes to reply, to goal, in M).
type reportRow struct {
	Kind      string   `bun:"kind"`
	K         int64    `bun:"k"`
	Status    string   `bun:"status"`
	M         *float64 `bun:"m"`
	N         int      `bun:"n"`
	Replied   int      `bun:"replied"`
	HandedOff int      `bun:"handed_off"`
	Goal      int      `bun:"goal"`
	OptedOut  int      `bun:"opted_out"`
}

// perContactSQL is the CSV's row per added contact, for one page of sends: its send, and the times of
// what followed its opening (written_at: when the opening was written and handed to the channel, so a
// lead or a bridge that answers before a slow receiver's answer was recorded counts), each a lookup by
// the page's rows. The page's contact and goal come from csvPageColumns; the opening's time and the
// first reply after it are the send's own written_at and first_reply_at, which the database keeps
// (models.FirstReplySQL is the rule). The arguments are the campaign's id, the last send of the previous
// page ("" for the first), the page's size and the campaign's consent channel.
const perContactSQL = `WITH page AS (SELECT s.id, s.contact_id, s.variant, s.status, s.sent_at, s.written_at, s.first_reply_at, %s
	WHERE s.campaign_id = ? AND s.id > ? ORDER BY s.id LIMIT ?)
SELECT p.id, p.contact_id, p.variant, p.status, p.sent_at, p.written_at, p.first_name, p.phone, p.goal_at,
	CASE WHEN p.sent_at IS NULL THEN NULL ELSE p.first_reply_at END AS first_reply_at,
	CASE WHEN p.sent_at IS NULL THEN NULL ELSE (SELECT min(a.created_at) FROM alerts AS a
		WHERE a.contact_id = p.contact_id AND a.created_at > p.written_at) END AS handed_off_at,
	CASE WHEN p.sent_at IS NULL THEN NULL ELSE (SELECT min(e.at) FROM consent_events AS e
		WHERE e.contact_id = p.contact_id AND e.status = 'opted_out' AND e.channel IN (?, '*') AND e.at > p.written_at) END AS opted_out_at
FROM page AS p ORDER BY p.id`

// csvPageColumns is the page's contact's first name and phone and its goal (goal_at), and the FROM they
// are read from. On PostgreSQL as scalar subqueries, one lookup each
// per row of the page: as joins, its planner may hash a whole table (the contacts, the messages) for
// one page of 1,000 sends. SQLite runs joins as lookups, and faster than subqueries.
func (r *Reader) csvPageColumns() string {
	if r.isSQLite() {
		return `c.first_name, c.phone, g.at AS goal_at
	FROM campaign_sends AS s JOIN contacts AS c ON c.id = s.contact_id
		LEFT JOIN goals AS g ON g.campaign_id = s.campaign_id AND g.contact_id = s.contact_id`
	}
	// The contact is there: campaign_sends.contact_id is a foreign key.
	return `(SELECT c.first_name FROM contacts AS c WHERE c.id = s.contact_id) AS first_name,
		(SELECT c.phone FROM contacts AS c WHERE c.id = s.contact_id) AS phone,
		(SELECT g.at FROM goals AS g WHERE g.campaign_id = s.campaign_id AND g.contact_id = s.contact_id) AS goal_at
	FROM campaign_sends AS s`
}

// campaignSendsSQL is the report's row per added contact, with what it counts of what followed the
// opening, in one pass over the campaign's sends (the same facts as the CSV's, perContactSQL):
//   - written_at, the opening's time, and first_reply_at, the first reply after it: the send's own
//     columns, which the database keeps (models.FirstReplySQL is the rule), so the pass reads no
//     message;
//   - handed_off and opted_out: 1 when the contact's latest alert, latest opt-out of the campaign's
//     channel, came after the opening, which is when one came after it; each grouped once over the
//     account's alerts and opt-outs (an alert or a consent event is its contact's account's), instead
//     of a lookup per send;
//   - goal_at, the goal the contact reached in this campaign.
//
// The arguments are the campaign's id, its account (twice) and its consent channel.
const campaignSendsSQL = `SELECT q.variant, q.status, q.sent_at, q.written_at,
	CASE WHEN q.opened THEN q.first_reply_at END AS first_reply_at,
	CASE WHEN q.opened AND ha.last > q.written_at THEN 1 ELSE 0 END AS handed_off,
	CASE WHEN q.opened AND oe.last > q.written_at THEN 1 ELSE 0 END AS opted_out,
	g.at AS goal_at
FROM (SELECT s.campaign_id, s.contact_id, s.variant, s.status, s.sent_at, s.first_reply_at,
		s.status = 'sent' AND s.sent_at IS NOT NULL AS opened,
		CASE WHEN s.sent_at IS NOT NULL THEN s.written_at END AS written_at
	FROM campaign_sends AS s WHERE s.campaign_id = ?) AS q
	LEFT JOIN goals AS g ON g.campaign_id = q.campaign_id AND g.contact_id = q.contact_id
	LEFT JOIN (SELECT contact_id, max(created_at) AS last FROM alerts WHERE account_id = ?
		GROUP BY contact_id) AS ha ON ha.contact_id = q.contact_id
	LEFT JOIN (SELECT contact_id, max(at) AS last FROM consent_events
		WHERE account_id = ? AND status = 'opted_out' AND channel IN (?, '*')
		GROUP BY contact_id) AS oe ON oe.contact_id = q.contact_id`

// reportWorkMem is the memory PostgreSQL may give each of the report's sorts and hashes: enough to
// keep 100,000 sends' rows and their sort in memory rather than in temporary files.
const reportWorkMem = "32MB"

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
	// The medians: the rows sorted by how long after the opening (later - written_at, an interval on
	// PostgreSQL), the minutes computed for the one or two in the middle only.
	median := func(kind, later string) string {
		return `SELECT '` + kind + `', 0, NULL, CAST(` + r.sqlMinutesOf("d") + ` AS DOUBLE PRECISION), 0, 0, 0, 0, 0 FROM (
			SELECT d, row_number() OVER (ORDER BY d) AS rn, count(*) OVER () AS n FROM (
				SELECT ` + r.sqlSince(later, "written_at") + ` AS d FROM per
				WHERE ` + opened + ` AND ` + later + ` IS NOT NULL AND written_at IS NOT NULL) AS d) AS r
			WHERE rn IN ((n + 1) / 2, (n + 2) / 2)`
	}
	day := func(kind, at string) string {
		return `SELECT '` + kind + `', ` + r.sqlBucket(at) + `, NULL, CAST(NULL AS DOUBLE PRECISION), count(*), 0, 0, 0, 0
			FROM per WHERE ` + opened + ` AND ` + at + ` IS NOT NULL GROUP BY 2`
	}
	query := `WITH per AS MATERIALIZED (` + campaignSendsSQL + `)
		SELECT 'v' AS kind, variant AS k, status, CAST(NULL AS DOUBLE PRECISION) AS m, count(*) AS n,
			count(first_reply_at) AS replied, sum(handed_off) AS handed_off, count(goal_at) AS goal,
			sum(opted_out) AS opted_out
		FROM per GROUP BY variant, status
		UNION ALL ` + day("od", "sent_at") + `
		UNION ALL ` + day("rd", "first_reply_at") + `
		UNION ALL ` + day("gd", "goal_at") + `
		UNION ALL ` + median("rm", "first_reply_at") + `
		UNION ALL ` + median("gm", "goal_at")
	var rows []reportRow
	// One statement, so one snapshot: the report adds up even while sends move on. PostgreSQL's JIT
	// would compile this query for longer than it runs (0.65 s of 1.2 s over 100,000 contacts), and
	// its default work_mem (4 MB) would sort and keep the rows in temporary files. It may run on the
	// read replica (replica.go); the campaign and the account's settings above come from the primary.
	err = r.routed(ctx, ReadCampaignReport, func(ctx context.Context, on source) error {
		rows = nil
		return r.inTx(ctx, on, func(ctx context.Context, tx bun.Tx) error {
			if !r.isSQLite() {
				if _, err := tx.ExecContext(ctx, "SET LOCAL jit = off; SET LOCAL work_mem = '"+reportWorkMem+"'"); err != nil {
					return err
				}
			}
			return tx.NewRaw(query, c.ID, accountID, accountID, c.ChannelLabel()).Scan(ctx, &rows)
		})
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
			r.Added += row.N
			switch row.Status {
			case models.SendQueued, models.SendHeld:
				r.Queued += row.N
			case models.SendPending:
				r.Pending += row.N
			case models.SendFailed:
				r.Failed += row.N
			case models.SendSuppressed:
				r.Suppressed += row.N
			case models.SendDeferred:
				r.Deferred += row.N
			case models.SendSkipped:
				r.Skipped += row.N
			}
			// What followed an opening counts for the opened (delivered) sends only.
			var opened, replied, goal int
			if row.Status == models.SendSent {
				opened, replied, goal = row.N, row.Replied, row.Goal
				r.Opened += opened
				r.Replied += replied
				r.HandedOff += row.HandedOff
				r.GoalReached += goal
				r.OptedOut += row.OptedOut
			}
			v := variants[int(row.K)]
			if v == nil { // a retired variant
				i := int(row.K)
				v = &VariantReport{Index: i, Letter: models.VariantLetter(i), Retired: true}
				if i < len(all) {
					v.Text = all[i].Text
				}
				variants[i] = v
			}
			v.Added += row.N
			v.Opened += opened
			v.Replied += replied
			v.GoalReached += goal
		case "od":
			dayOf(row.K).Opened += row.N
		case "rd":
			dayOf(row.K).Replied += row.N
		case "gd":
			dayOf(row.K).GoalReached += row.N
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

// sqlSince is the SQL for how long after earlier later came (two timestamp columns), in a form that
// sorts as the time between them: an interval on PostgreSQL, minutes on SQLite. sqlMinutesOf turns it
// into minutes.
func (r *Reader) sqlSince(later, earlier string) string {
	if r.isSQLite() {
		return "((julianday(" + later + ") - julianday(" + earlier + ")) * 1440.0)"
	}
	return "(" + later + " - " + earlier + ")"
}

// sqlMinutesOf is the SQL for the minutes of d, a value of sqlSince.
func (r *Reader) sqlMinutesOf(d string) string {
	if r.isSQLite() {
		return d
	}
	return "(EXTRACT(EPOCH FROM " + d + ") / 60.0)"
}

// sqlBucket is the SQL for the reportBucket-wide UTC slice a timestamp column falls in. On PostgreSQL
// in double precision, which is exact here: the epoch's whole seconds (floor) are exact for any time
// before the year 2200, and so is the floor of a whole number over 900.
func (r *Reader) sqlBucket(col string) string {
	if r.isSQLite() {
		return fmt.Sprintf("(CAST(strftime('%%s', %s) AS INTEGER) / %d)", col, reportBucket)
	}
	return fmt.Sprintf("CAST(floor(floor(date_part('epoch', %s)) / %d) AS BIGINT)", col, reportBucket)
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
// write's first error. Errors: NOT_FOUND. Each batch may be read on the read replica (replica.go).
func (r *Reader) CampaignReportCSV(ctx context.Context, accountID, campaignID string, write func([]string) error) error {
	c, err := r.store.CampaignByID(ctx, accountID, campaignID)
	if err != nil {
		return err
	}
	csvPage := fmt.Sprintf(perContactSQL, r.csvPageColumns())
	after := ""
	for {
		var rows []reportContact
		err := r.routed(ctx, ReadCampaignReportCSV, func(ctx context.Context, on source) error {
			rows = nil
			return on.db.NewRaw(csvPage, c.ID, after, reportCSVBatch, c.ChannelLabel()).Scan(ctx, &rows)
		})
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
