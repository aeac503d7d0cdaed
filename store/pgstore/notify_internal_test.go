package pgstore

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baton-sqs/baton/internal/pgtest"
)

// TestLedgerLinkLossIsSaid: once the connection that LISTENs is back after
// it was lost, the ledger's subscribers are told that other nodes' batches
// published meanwhile were missed (a nil batch), and only then: so that
// the lease reports judged on that time say so rather than judge on what
// is missing. They used to hear nothing of it. With no other server
// listening on the database, they are told only that the link was down
// (an empty batch): a node alone used to be told it missed batches, and
// withheld its own verdicts for 15 minutes.
func TestLedgerLinkLossIsSaid(t *testing.T) {
	t.Parallel()
	url := pgtest.MustDatabase(t)
	ctx := context.Background()
	s, err := Open(ctx, url, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	got := make(chan []byte, 16)
	s.SubscribeLedger(func(b []byte) {
		if b != nil {
			b = append([]byte{}, b...)
		}
		got <- b
	})
	<-s.Listening()
	next := func(what string) []byte {
		t.Helper()
		select {
		case b := <-got:
			return b
		case <-time.After(30 * time.Second):
			t.Fatalf("no %s within 30s", what)
			return nil
		}
	}
	if err := s.PublishLedger(ctx, [][]byte{[]byte("one")}); err != nil {
		t.Fatal(err)
	}
	if b := next("batch"); string(b) != "one" {
		t.Fatalf("delivered %q, want the batch published", b)
	}

	exec := adminExec(t, url)
	cut := func(spare uint32) {
		t.Helper()
		exec(fmt.Sprintf(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE datname = current_database() AND query LIKE 'LISTEN%%' AND pid <> %d`, spare))
	}
	cut(0)
	if b := next("word of the link lost"); b == nil || len(b) != 0 {
		t.Fatalf("after the listening connection of the only server was cut: delivered %q (nil: %v), want the empty batch that says no other server listens", b, b == nil)
	}
	if err := s.PublishLedger(ctx, [][]byte{[]byte("two")}); err != nil {
		t.Fatal(err)
	}
	if b := next("batch"); string(b) != "two" {
		t.Fatalf("delivered %q after the link came back, want the batch published", b)
	}

	// Another server's listener, as it stands between its checks.
	other, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close(context.Background()) })
	if _, err := other.Exec(ctx, "LISTEN "+ledgerChannel); err != nil {
		t.Fatal(err)
	}
	cut(other.PgConn().PID())
	if b := next("word of the link lost"); b != nil {
		t.Fatalf("after the listening connection was cut while another server listened: delivered %q, want the nil batch that says batches were missed", b)
	}
}
