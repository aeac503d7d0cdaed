package pgstore_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baton-sqs/baton/internal/pgtest"
	"github.com/baton-sqs/baton/internal/testutil/logbuf"
	"github.com/baton-sqs/baton/store/pgstore"
)

// A pooled connection cut while idle (a proxy or PgBouncer restarted, a
// firewall's idle timeout) is not the database being down: Ping, the
// node's /healthz, still answers that the database is fine, and says in
// the log what it found. It used to answer "database unreachable: unexpected
// EOF" from the dead connection it took. A database that is really gone
// still fails Ping at once.
func TestPingThroughIdleConnectionsCut(t *testing.T) {
	t.Parallel()
	proxy, url := startCutProxy(t, pgtest.MustDatabase(t))
	logs := &logbuf.Buffer{}
	s, err := pgstore.Open(context.Background(), url, pgstore.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	// As /healthz asks it (server.go: two seconds).
	ping := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return s.Ping(ctx)
	}
	for round := range 3 {
		// Several connections in the pool, used a moment ago, then idle.
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				if _, err := s.ReceiptKey(context.Background()); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		cut := proxy.cuts()
		proxy.cutAll()
		if proxy.cuts() == cut {
			t.Fatalf("round %d: the proxy had no connection to cut", round)
		}
		if err := ping(); err != nil {
			t.Fatalf("round %d: Ping after idle connections were cut: %v\n%s", round, err, logs)
		}
	}
	if !strings.Contains(logs.String(), "closed while idle") {
		t.Errorf("no log line says the health check found connections closed while idle:\n%s", logs)
	}

	// The way to the database gone for good: new connections are refused.
	proxy.ln.Close()
	proxy.cutAll()
	start := time.Now()
	err = ping()
	if err == nil || !strings.Contains(err.Error(), "database unreachable") {
		t.Errorf("Ping with the database gone: %v; want database unreachable", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("Ping with the database gone took %v", took)
	}
	t.Logf("Ping with the database gone: %v", err)
}

// So are connections the database ended while idle (an operator's
// pg_terminate_backend, idle_session_timeout): Ping still answers that the
// database is fine.
func TestPingAfterIdleSessionsEnded(t *testing.T) {
	t.Parallel()
	url := pgtest.MustDatabase(t)
	s, err := pgstore.Open(context.Background(), url, pgstore.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	admin, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close(context.Background()) })
	for round := range 3 {
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				if _, err := s.ReceiptKey(context.Background()); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		var ended int
		if err := admin.QueryRow(context.Background(), `
			SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'idle' AND application_name = 'baton'`).Scan(&ended); err != nil {
			t.Fatal(err)
		}
		if ended == 0 {
			t.Fatalf("round %d: no idle connection of the store to end", round)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := s.Ping(ctx)
		cancel()
		if err != nil {
			t.Fatalf("round %d: Ping after %d idle sessions were ended: %v", round, ended, err)
		}
	}
}
