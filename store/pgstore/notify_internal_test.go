package pgstore

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/pgtest"
)

// TestLedgerLinkLossIsSaid: when the connection that LISTENs is lost, the
// ledger's subscribers are told at once that the link is down
// (baton.LedgerLinkDown: they used to hear nothing until it was back);
// once it is back, they are told that other nodes' batches
// published meanwhile may have been missed (baton.LedgerLinkLost), and
// only then: so that the lease reports judged on that time say so rather
// than judge on what is missing. They used to hear nothing of it. With no other server
// listening on the database, they are told only that the link was down
// (baton.LedgerLinkLostAlone): a node alone used to be told it missed
// batches, and withheld its own verdicts for 15 minutes.
func TestLedgerLinkLossIsSaid(t *testing.T) {
	t.Parallel()
	url := pgtest.MustDatabase(t)
	ctx := context.Background()
	s, err := Open(ctx, url, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	type delivery struct {
		batch []byte
		gap   baton.LedgerGap
	}
	got := make(chan delivery, 16)
	s.SubscribeLedger(func(b []byte, gap baton.LedgerGap) {
		got <- delivery{bytes.Clone(b), gap}
	})
	<-s.Listening()
	next := func(what string) delivery {
		t.Helper()
		select {
		case d := <-got:
			return d
		case <-time.After(30 * time.Second):
			t.Fatalf("no %s within 30s", what)
			return delivery{}
		}
	}
	if err := s.PublishLedger(ctx, [][]byte{[]byte("one")}); err != nil {
		t.Fatal(err)
	}
	if d := next("batch"); string(d.batch) != "one" || d.gap != baton.LedgerNoGap {
		t.Fatalf("delivered %q, gap %d, want the batch published", d.batch, d.gap)
	}

	exec := adminExec(t, url)
	cut := func(spare uint32) {
		t.Helper()
		exec(fmt.Sprintf(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE datname = current_database() AND query LIKE 'LISTEN%%' AND pid <> %d`, spare))
	}
	cut(0)
	if d := next("word of the link down"); d.batch != nil || d.gap != baton.LedgerLinkDown {
		t.Fatalf("once the listening connection was cut: delivered %q, gap %d, want the word that the link is down", d.batch, d.gap)
	}
	if d := next("word of the link lost"); d.batch != nil || d.gap != baton.LedgerLinkLostAlone {
		t.Fatalf("after the listening connection of the only server was cut: delivered %q, gap %d, want the word that no other server listens", d.batch, d.gap)
	}
	if err := s.PublishLedger(ctx, [][]byte{[]byte("two")}); err != nil {
		t.Fatal(err)
	}
	if d := next("batch"); string(d.batch) != "two" || d.gap != baton.LedgerNoGap {
		t.Fatalf("delivered %q, gap %d after the link came back, want the batch published", d.batch, d.gap)
	}
	// A NOTIFY without a payload, from any client, is an (empty) batch,
	// not word of a gap.
	if _, err := s.pool.Exec(ctx, "NOTIFY "+ledgerChannel); err != nil {
		t.Fatal(err)
	}
	if d := next("empty batch"); len(d.batch) != 0 || d.gap != baton.LedgerNoGap {
		t.Fatalf("a NOTIFY without a payload: delivered %q, gap %d, want an empty batch", d.batch, d.gap)
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
	if d := next("word of the link down"); d.batch != nil || d.gap != baton.LedgerLinkDown {
		t.Fatalf("once the listening connection was cut again: delivered %q, gap %d, want the word that the link is down", d.batch, d.gap)
	}
	if d := next("word of the link lost"); d.batch != nil || d.gap != baton.LedgerLinkLost {
		t.Fatalf("after the listening connection was cut while another server listened: delivered %q, gap %d, want the word that batches may have been missed", d.batch, d.gap)
	}
}
