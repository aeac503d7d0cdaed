package sqlitestore

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/baton-sqs/baton/engine"
)

// crashCopy copies the database files of dir, as they are on disk now, to a
// new directory: what a kill -9 at this instant would leave.
func crashCopy(t *testing.T, dir string) string {
	t.Helper()
	to := t.TempDir()
	for _, name := range []string{DatabaseFile, DatabaseFile + "-wal"} {
		src, err := os.Open(filepath.Join(dir, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		dst, err := os.Create(filepath.Join(to, name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(dst, src); err != nil {
			t.Fatal(err)
		}
		src.Close()
		dst.Close()
	}
	return to
}

// fillDisk makes the database full at its current size.
func fillDisk(t *testing.T, s *Store) {
	t.Helper()
	var n int
	if err := s.w.conn.QueryRowContext(t.Context(), "PRAGMA page_count").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.conn.ExecContext(t.Context(), "PRAGMA max_page_count = "+strconv.Itoa(n)); err != nil {
		t.Fatal(err)
	}
}

// A CreateQueue whose commit failed (a full disk) leaves the queue in
// memory while the store retries the write; the client's retry finds it
// there. It must not be acknowledged before the queue is on disk: refused,
// or durable — a kill -9 right after must not lose it.
func TestCreateQueueRetryNotAckedUncommitted(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(t.Context(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e, err := engine.New(engine.Config{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	// Make sure the database has grown past its first pages.
	if _, err := e.CreateQueue(t.Context(), engine.CreateQueueParams{Account: "000000000000", Name: "first"}); err != nil {
		t.Fatal(err)
	}
	// Fill the disk: creates succeed until one needs a new page.
	name := ""
	for i := 0; ; i++ {
		if i == 200 {
			t.Fatal("the disk never filled")
		}
		fillDisk(t, s)
		name = "orders" + strconv.Itoa(i)
		if _, err = e.CreateQueue(t.Context(), engine.CreateQueueParams{Account: "000000000000", Name: name}); err != nil {
			t.Logf("create %s on a full disk: %v", name, err)
			break
		}
	}
	// The client retries; the disk is still full.
	q, err := e.CreateQueue(t.Context(), engine.CreateQueueParams{Account: "000000000000", Name: name})
	if err != nil {
		t.Logf("retry refused (%v): fine", err)
		return
	}
	crashed := crashCopy(t, dir)
	s2, err := Open(t.Context(), crashed, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if _, err := s2.QueueGet(t.Context(), "us-east-1", "000000000000", name); err != nil {
		t.Errorf("CreateQueue retry acknowledged queue %d, but after a crash: %v", q.ID, err)
	}
}

// While commits fail (here: the database made read-only) the reclaimer
// waits for the writer's retries of its chunk instead of queueing another
// chunk at every retry, and once commits succeed the purged rows go.
func TestReclaimerWaitsOutFailingCommits(t *testing.T) {
	t.Parallel()
	s, err := Open(t.Context(), t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.reclaim.mu.Lock()
	s.reclaim.retry = time.Millisecond
	s.reclaim.mu.Unlock()
	e, err := engine.New(engine.Config{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ref := engine.QueueRef{Account: "000000000000", Name: "orders"}
	if _, err := e.CreateQueue(t.Context(), engine.CreateQueueParams{Account: ref.Account, Name: ref.Name}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := e.SendMessage(t.Context(), ref, engine.SendParams{Body: "x"}); err != nil {
			t.Fatal(err)
		}
	}
	readOnly := func(on int) {
		if _, err := s.w.conn.ExecContext(t.Context(), "PRAGMA query_only = "+strconv.Itoa(on)); err != nil {
			t.Fatal(err)
		}
	}
	readOnly(1)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if err := e.PurgeQueue(ctx, ref); err == nil {
		t.Fatal("purge on a read-only database: no error")
	}
	queued := func() int {
		s.w.mu.Lock()
		defer s.w.mu.Unlock()
		n := len(s.w.open.changes)
		if s.w.inflight != nil {
			n += len(s.w.inflight.changes)
		}
		return n
	}
	// The writer retries every retryDelay; the reclaimer looks every
	// millisecond meanwhile.
	time.Sleep(3 * retryDelay)
	if n := queued(); n > 2 {
		t.Errorf("%d changes queued while commits fail, want the purge and one reclaim chunk", n)
	}
	readOnly(0)
	for deadline := time.Now().Add(5 * time.Second); Rows(t, s) != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d rows left 5 s after commits succeed again, want 0", Rows(t, s))
		}
	}
}
