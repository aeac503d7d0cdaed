package pgstore

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/baton-sqs/baton/internal/pgtest"
)

// TestLedgerLinkLossIsSaid: once the connection that LISTENs is back after
// it was lost, the ledger's subscribers are told (a nil batch) that other
// nodes' batches published meanwhile were missed, and only then: so that
// the lease reports judged on that time say so rather than judge on what
// is missing. They used to hear nothing of it.
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
			b = append([]byte(nil), b...)
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

	adminExec(t, url)(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND query LIKE 'LISTEN%'`)
	if b := next("word of the link lost"); b != nil {
		t.Fatalf("after the listening connection was cut: delivered %q, want the nil batch that says batches were missed", b)
	}
	if err := s.PublishLedger(ctx, [][]byte{[]byte("two")}); err != nil {
		t.Fatal(err)
	}
	if b := next("batch"); string(b) != "two" {
		t.Fatalf("delivered %q after the link came back, want the batch published", b)
	}
}
