package models

import (
	"context"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
	"github.com/uptrace/bun/migrate"
)

// campaignReportIndex is one index the campaign report reads (package report, CampaignReport and its
// CSV; docs/performance.md, "Campaign pacing and reports"): its columns, and those it carries on
// PostgreSQL (INCLUDE) or, on SQLite, as its last columns, so that a read finds all it needs in the
// index (an index-only scan on PostgreSQL, a covering index on SQLite).
type campaignReportIndex struct {
	name, table, columns, include, where string
}

// campaignReportIndexes:
//   - messages_campaign_idx: the openings of a campaign, with their times, in one range (the report
//     joins them to the sends by id instead of looking each one up);
//   - messages_replies_idx: a contact's first reply after a time, with what tells an opt-out or a
//     HELP from a reply; it replaces messages_incoming_idx (the same rows and order, fewer columns);
//   - consent_events_opt_in_message_idx: whether an incoming keyword recorded an opt-in (which makes
//     it a reply), by message, instead of a scan of the consent events per keyword.
func campaignReportIndexes() []campaignReportIndex {
	return []campaignReportIndex{
		{name: "messages_campaign_idx", table: "messages", columns: "campaign_id, id", include: "created_at", where: "campaign_id IS NOT NULL"},
		{name: "messages_replies_idx", table: "messages", columns: "contact_id, created_at", include: "bot_status, id", where: "direction = 'incoming'"},
		{name: "consent_events_opt_in_message_idx", table: "consent_events", columns: "message_id", where: "status = 'opted_in'"},
	}
}

// campaignReportIndexesMigration creates the report's indexes and drops messages_incoming_idx, which
// messages_replies_idx replaces (IF [NOT] EXISTS, so that a run that stopped half way completes).
func campaignReportIndexesMigration(db *bun.DB) migrate.Migration {
	sqlite := db.Dialect().Name() == dialect.SQLite
	exec := func(ctx context.Context, stmts []string) error {
		for _, s := range stmts {
			if _, err := db.ExecContext(ctx, s); err != nil {
				return err
			}
		}
		return nil
	}
	return migrate.Migration{
		Name: "20261204300001", Comment: "campaign_report_indexes",
		Up: func(ctx context.Context, _ *migrate.Migrator, _ *migrate.Migration) error {
			var stmts []string
			for _, ix := range campaignReportIndexes() {
				s := "CREATE INDEX IF NOT EXISTS " + ix.name + " ON " + ix.table + " (" + ix.columns
				switch {
				case ix.include == "":
					s += ")"
				case sqlite:
					s += ", " + ix.include + ")"
				default:
					s += ") INCLUDE (" + ix.include + ")"
				}
				stmts = append(stmts, s+" WHERE "+ix.where)
			}
			return exec(ctx, append(stmts, "DROP INDEX IF EXISTS messages_incoming_idx"))
		},
		Down: func(ctx context.Context, _ *migrate.Migrator, _ *migrate.Migration) error {
			stmts := []string{"CREATE INDEX IF NOT EXISTS messages_incoming_idx ON messages (contact_id, created_at) WHERE direction = 'incoming'"}
			// One name a statement: SQLite's DROP INDEX takes one.
			for _, ix := range campaignReportIndexes() {
				stmts = append(stmts, "DROP INDEX IF EXISTS "+ix.name)
			}
			return exec(ctx, stmts)
		},
	}
}
