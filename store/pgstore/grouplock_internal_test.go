package pgstore

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-sqs/baton/internal/pgtest"
	"github.com/baton-sqs/baton/internal/testutil"
)

// A server that gives a group's lock back and at once wants it again (the
// next publish of the group, waiting for its turn on this server) lets a
// server that waits for the lock go first. It took the lock again in the
// round trip that gave it back, so that the other server, trying now and
// then, seldom found it free: with one server publishing without pause,
// hundreds of its locks came between two of the other's, which under load
// failed after the retry bound, a 503 for its publish
// (TestSNSFIFOGroupOrderTwoNodes/postgres at load 30).
func TestGroupLockWaiterGoesFirst(t *testing.T) {
	t.Parallel()
	url := pgtest.MustDatabase(t)
	a, b := mustOpenInternal(t, url), mustOpenInternal(t, url)
	a.groupLocks.yieldFor = time.Minute // a loaded machine may pause b for long
	unlock, err := a.GroupLock(t.Context(), "g")
	if err != nil {
		t.Fatal(err)
	}
	var bGot atomic.Bool
	bDone := make(chan error, 1)
	go func() {
		unlockB, err := b.GroupLock(context.Background(), "g")
		if err == nil {
			bGot.Store(true)
			unlockB()
		}
		bDone <- err
	}()
	admin := pgtest.MustConnect(t, url)
	key := groupWaiterKey("g")
	testutil.CheckFor(t, 30*time.Second, func() error { // b tried, a holding the lock, and says it waits
		var n int
		if err := admin.QueryRow(t.Context(), `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted
			AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
			AND classid = (($1::bigint >> 32) & 4294967295)::oid AND objid = ($1::bigint & 4294967295)::oid`, key).Scan(&n); err != nil || n != 1 {
			return fmt.Errorf("%d sessions hold the group's waiter key (%v), want 1", n, err)
		}
		return nil
	})
	unlock()
	again, err := a.GroupLock(t.Context(), "g")
	if err != nil {
		t.Fatalf("a's next lock: %v", err)
	}
	if !bGot.Load() {
		t.Error("a took the lock again before b, which waited for it")
	}
	again()
	if err := <-bDone; err != nil {
		t.Errorf("b's lock: %v", err)
	}
}

// mustOpenInternal opens a store on url, closed when the test ends, whose
// operations and group locks wait up to a minute.
func mustOpenInternal(t *testing.T, url string) *Store {
	t.Helper()
	s, err := Open(context.Background(), url, Options{RetryFor: time.Minute, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
