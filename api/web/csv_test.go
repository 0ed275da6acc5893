package web

import (
	"context"
	"encoding/csv"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
)

// A download that takes longer in all than the server's WriteTimeout must still arrive whole: the
// timeout bounds each flush (a client that stops reading), not the whole file.
func TestStreamCSVOutlastsTheServersWriteTimeout(t *testing.T) {
	const batches, perBatch = 6, 1000
	app := fiber.New(fiber.Config{WriteTimeout: 500 * time.Millisecond, DisableStartupMessage: true})
	app.Get("/export", func(c *fiber.Ctx) error {
		return StreamCSV(c, slog.New(slog.DiscardHandler), "test export", "test.csv", []string{"n"},
			func(ctx context.Context, write func([]string) error) error {
				for i := range batches * perBatch {
					if i > 0 && i%perBatch == 0 {
						time.Sleep(200 * time.Millisecond) // 1.2 s in all, over twice the WriteTimeout
					}
					if err := write([]string{strconv.Itoa(i)}); err != nil {
						return err
					}
				}
				return nil
			})
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Listener(ln) }()
	t.Cleanup(func() { _ = app.Shutdown() })

	res, err := http.Get("http://" + ln.Addr().String() + "/export")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	r := csv.NewReader(res.Body)
	rows := -1 // the header
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("after %d rows: %v", rows, err)
		}
		if rows >= 0 && rec[0] != strconv.Itoa(rows) {
			t.Fatalf("row %d reads %v", rows, rec)
		}
		rows++
	}
	if rows != batches*perBatch {
		t.Fatalf("%d rows arrived, want %d", rows, batches*perBatch)
	}
}
