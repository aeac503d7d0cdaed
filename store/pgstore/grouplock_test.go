package pgstore_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/baton-sqs/baton/internal/pgtest"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/internal/testutil/logbuf"
	"github.com/baton-sqs/baton/store/pgstore"
)

// A group lock whose connection breaks while it is held is lost: another
// server takes it at once, the holder's unlock says in the log what that
// may have cost, and the holder's next lock connects again.
func TestGroupLockLostWithConnection(t *testing.T) {
	t.Parallel()
	url := pgtest.MustDatabase(t)
	logs := &logbuf.Buffer{}
	a, err := pgstore.Open(context.Background(), url, pgstore.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	b := mustOpen(t, url)

	unlock, err := a.GroupLock(t.Context(), "g")
	if err != nil {
		t.Fatal(err)
	}
	admin := pgtest.MustConnect(t, url)
	var ended int
	if err := admin.QueryRow(t.Context(), `
		SELECT count(*) FROM (SELECT pg_terminate_backend(l.pid) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
			WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 AND a.query LIKE '%pg_try_advisory_lock%'
				AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())) AS t`).Scan(&ended); err != nil || ended != 1 {
		t.Fatalf("terminated %d sessions holding advisory locks (%v), want 1", ended, err)
	}

	unlockB, err := b.GroupLock(t.Context(), "g")
	if err != nil {
		t.Fatalf("the other server, once the holder's session ended: %v", err)
	}
	unlockB()
	unlock()
	testutil.CheckFor(t, 10*time.Second, func() error {
		if !strings.Contains(logs.String(), "locks held went with it") || !strings.Contains(logs.String(), "groups=[g]") {
			return fmt.Errorf("the lost lock was not logged:\n%s", logs)
		}
		return nil
	})
	again, err := a.GroupLock(t.Context(), "g")
	if err != nil {
		t.Fatalf("a lock after the connection broke: %v", err)
	}
	again()
}

// A caller that leaves while its try of a group lock runs (its context
// ended) leaves the connection, and every lock held on it, as they were:
// the driver would close a connection whose statement's context ended.
func TestGroupLockCallerLeavingKeepsOthersLocks(t *testing.T) {
	t.Parallel()
	url := pgtest.MustDatabase(t)
	logs := &logbuf.Buffer{}
	a, err := pgstore.Open(context.Background(), url, pgstore.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	b := mustOpen(t, url)

	unlock, err := a.GroupLock(t.Context(), "held")
	if err != nil {
		t.Fatal(err)
	}
	gone, cancel := context.WithCancel(t.Context())
	cancel()
	for range 20 { // each either gives up waiting for the connection or tries with its context ended
		if _, err := a.GroupLock(gone, "other"); err == nil {
			t.Fatal("a lock taken for a caller that had left")
		}
	}
	short, cancel2 := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel2()
	if _, err := b.GroupLock(short, "held"); err == nil {
		t.Fatal("another server took the lock still held: the callers that left broke its connection")
	}
	if strings.Contains(logs.String(), "locks held went with it") {
		t.Errorf("the callers that left broke the locks' connection:\n%s", logs)
	}
	unlock()
	other, err := b.GroupLock(t.Context(), "other")
	if err != nil {
		t.Fatalf("the lock the callers that left tried is not free: %v", err)
	}
	other()
}
