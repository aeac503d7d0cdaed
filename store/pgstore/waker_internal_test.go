package pgstore

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baton-sqs/baton/internal/pgtest"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/internal/testutil/logbuf"
)

// A wake-up whose NOTIFY fails (the waker's connection cannot be made: a
// connect timeout on a loaded machine, a failover) is sent again once the
// database can be reached, and the log says what the failure costs and
// when it is over. It used to be dropped: the other servers' long polls on
// its queue waited for their next re-check.
func TestWakeUpSentAfterFailedNotify(t *testing.T) {
	t.Parallel()
	url := pgtest.MustDatabase(t)
	logs := &logbuf.Buffer{}
	a, err := Open(context.Background(), url, Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	b, err := Open(context.Background(), url, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	woke := subscribed(t, b)

	// a's waker has made no connection yet (it makes it for its first
	// notification): make its connections fail until the test says.
	var failing atomic.Bool
	failing.Store(true)
	dial := a.wake.cfg.DialFunc
	a.wake.cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if failing.Load() {
			return nil, errors.New("the test refuses the connection")
		}
		return dial(ctx, network, addr)
	}
	const queue = 4242
	a.wake.add(queue)
	testutil.CheckFor(t, 30*time.Second, func() error {
		if !strings.Contains(logs.String(), "could not notify other servers of new messages") {
			return errors.New("no failed notification logged yet")
		}
		return nil
	})
	failing.Store(false)
	select {
	case id := <-woke:
		if id != queue {
			t.Errorf("woken for queue %d, want %d", id, queue)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the wake-up whose notification failed never reached the other store\n%s", logs)
	}
	testutil.CheckFor(t, 10*time.Second, func() error {
		if !strings.Contains(logs.String(), "notifying other servers of new messages again") {
			return errors.New("the recovery is not logged")
		}
		return nil
	})
	t.Logf("the log:\n%s", logs)
}

// TestWakeUpNotWaitingForCommits: a wake-up goes out and is delivered
// while every commit that waits for its flush waits for ever
// (synchronous_commit on, as PostgreSQL's default is, and a synchronous
// standby required that never comes): the waker's transactions, NOTIFYs
// alone, write no WAL before their commit, so they wait for no flush
// without asking for it.
func TestWakeUpNotWaitingForCommits(t *testing.T) {
	t.Parallel()
	pg := pgtest.MustStart(t)
	url := pg.MustDatabase(t)
	exec := adminExec(t, url)
	// pgtest runs with synchronous_commit off; the database's own setting
	// wins for the sessions opened after it.
	exec(`ALTER DATABASE ` + pgx.Identifier{pgtest.DatabaseName(url)}.Sanitize() + ` SET synchronous_commit = on`)
	open := func() *Store {
		s, err := Open(context.Background(), url, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := open(), open()
	woke := subscribed(t, b)
	exec(`ALTER SYSTEM SET synchronous_standby_names = 'nobody'`)
	exec(`SELECT pg_reload_conf()`)
	t.Cleanup(func() {
		exec(`ALTER SYSTEM RESET synchronous_standby_names`)
		exec(`SELECT pg_reload_conf()`)
	})
	// A commit that writes waits, as the test means it to (until the
	// standby requirement is lifted at the end).
	writer, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	wrote := make(chan error, 1)
	go func() {
		_, err := writer.Exec(context.Background(), `CREATE TABLE waits_for_standby (x int)`)
		wrote <- err
		writer.Close(context.Background())
	}()
	select {
	case err := <-wrote:
		t.Fatalf("a commit that wrote did not wait for the standby (%v): the test proves nothing", err)
	case <-time.After(2 * time.Second):
	}
	const queue = 4343
	a.wake.add(queue)
	select {
	case id := <-woke:
		if id != queue {
			t.Errorf("woken for queue %d, want %d", id, queue)
		}
	case <-time.After(30 * time.Second):
		t.Error("the wake-up was not delivered while writing commits wait")
	}
}

// subscribed subscribes to s's wake-ups once s listens, and returns the
// channel they come on.
func subscribed(t *testing.T, s *Store) <-chan uint64 {
	t.Helper()
	woke := make(chan uint64, 16)
	s.Subscribe(func(id uint64) { woke <- id })
	select {
	case <-s.Listening():
	case <-time.After(30 * time.Second):
		t.Fatal("the other store never listened")
	}
	return woke
}
