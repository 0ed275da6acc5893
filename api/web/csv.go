package web

import (
	"bufio"
	"context"
	"encoding/csv"
	"log/slog"
	"time"

	"github.com/gofiber/fiber/v2"
)

// csvStreamTimeout bounds one CSV download's streaming: a million rows take seconds; a client that
// stops reading must not hold a database connection for ever.
const csvStreamTimeout = 10 * time.Minute

// csvWriteTimeout is how long one flush of a download may wait for the client. The server's
// WriteTimeout is set once per response, so a download taking longer than it in all (a large export on
// a busy machine) was cut off mid-file; each flush now moves the connection's write deadline on instead,
// and only a client that stops reading is cut.
const csvWriteTimeout = 30 * time.Second

// CSVRows produces a download's rows, calling write for each in order, and stops at write's first
// error.
type CSVRows func(ctx context.Context, write func([]string) error) error

// StreamCSV answers with a CSV download (header, then rows) written as rows produces it, so memory
// stays flat for any number of rows. The body is written after the handler returns: the request's
// values (its id, for the log) go along, its end does not. A failure after the first byte cannot
// change the status any more: the body then ends early, which the missing rows show, and it is logged
// with what (e.g. "consent export") on log.
func StreamCSV(c *fiber.Ctx, log *slog.Logger, what, filename string, header []string, rows CSVRows) error {
	reqCtx := context.WithoutCancel(c.UserContext())
	c.Set(fiber.HeaderContentType, "text/csv; charset=utf-8")
	c.Set(fiber.HeaderContentDisposition, `attachment; filename="`+filename+`"`)
	if c.Method() == fiber.MethodHead {
		return nil
	}
	conn := c.Context().Conn()
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		ctx, cancel := context.WithTimeout(reqCtx, csvStreamTimeout)
		defer cancel()
		flush := func() error {
			if conn != nil {
				_ = conn.SetWriteDeadline(time.Now().Add(csvWriteTimeout))
			}
			return w.Flush()
		}
		out := csv.NewWriter(w)
		_ = out.Write(header)
		n := 0
		err := rows(ctx, func(record []string) error {
			if err := out.Write(record); err != nil {
				return err
			}
			if n++; n%1000 == 0 {
				out.Flush()
				if err := out.Error(); err != nil {
					return err
				}
				return flush() // a gone client ends the download here
			}
			return nil
		})
		out.Flush()
		if err == nil {
			err = flush()
		}
		if err != nil {
			log.WarnContext(ctx, what+" ended early", "rows", n, "error", err.Error())
		}
	})
	return nil
}
