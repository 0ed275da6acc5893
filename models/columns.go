package models

import (
	"reflect"
	"strings"
)

// Statements that fill a struct from a table name the struct's columns: no SELECT *, RETURNING * or
// alias.* into a struct. During a rolling deploy an api or worker one migration behind runs against the
// newer schema, and a column a migration added would reach a struct without it: bun refuses the row
// ("does not have column"), and PostgreSQL refuses a prepared statement whose * has grown ("cached
// plan must not change result type"). For RecordAttempt that failure came after the receiver had
// accepted the message, so the retried task sent it twice. (bun's NewSelect().Model(x) names the
// columns by itself.)

// columnsOf is the column list of model's table as model (a pointer to its struct) has it, for a
// statement that scans into it: its fields' quoted names, each after alias and a dot unless alias is
// "". It comes from bun's table metadata, the same that bun scans by, so it cannot drift from the
// struct; scan-only fields and relations are not columns and are left out.
func (s *Store) columnsOf(model any, alias string) string {
	var b strings.Builder
	for i, f := range s.db.Table(reflect.TypeOf(model)).Fields {
		if i > 0 {
			b.WriteString(", ")
		}
		if alias != "" {
			b.WriteString(alias)
			b.WriteByte('.')
		}
		b.WriteString(string(f.SQLName))
	}
	return b.String()
}

// ColumnsOf is columnsOf for the read models outside this package (models/report).
func (s *Store) ColumnsOf(model any, alias string) string { return s.columnsOf(model, alias) }
