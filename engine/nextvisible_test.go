package engine_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/store/memstore"
)

// gatedStats is a store whose MessageStats calls count themselves and,
// while gated, wait until release is closed.
type gatedStats struct {
	baton.Store
	gated   atomic.Bool
	calls   atomic.Int32
	queue   atomic.Uint64
	release chan struct{}
}

func (s *gatedStats) MessageStats(ctx context.Context, p baton.MessageStatsParams) (baton.MessageStats, error) {
	if s.gated.Load() {
		s.queue.Store(p.QueueID)
		s.calls.Add(1)
		<-s.release
	}
	return s.Store.MessageStats(ctx, p)
}

// checkShared starts call once and, once it waits in MessageStats, n-1
// more, and checks that these wait for the first one's read (waiters, of
// the queue read, says how many do) rather than each reading; then it
// lets the read end. what names the read in a failure.
func (s *gatedStats) checkShared(t *testing.T, n int, call func(), waiters func(queueID uint64) int, what string) {
	t.Helper()
	go call()
	testutil.CheckFor(t, 10*time.Second, func() error {
		if s.calls.Load() != 1 {
			return fmt.Errorf("the first call has not started its %s", what)
		}
		return nil
	})
	for range n - 1 {
		go call()
	}
	testutil.CheckFor(t, 10*time.Second, func() error {
		if c := s.calls.Load(); c > 1 {
			close(s.release)
			t.Fatalf("%d calls each made their own %s at once, want the calls arriving during the first to share it", c, what)
		}
		if w := waiters(s.queue.Load()); w != n-1 {
			return fmt.Errorf("%d calls wait for the running %s, want %d", w, what, n-1)
		}
		return nil
	})
	close(s.release)
}

// Long polls of one queue that find nothing at once read when its next
// hidden message becomes visible once between them: each used to ask the
// store itself.
func TestLongPollsShareOneNextVisibleRead(t *testing.T) {
	st := &gatedStats{Store: memstore.New(), release: make(chan struct{})}
	e, err := engine.New(engine.Config{Store: st, Clock: clock.NewFake(testutil.Epoch)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	ref := mkQueue(t, e, "q", nil)
	// A short poll counts the queue's in-flight messages; on the fake clock
	// that count stays fresh, so the long polls below do not count again.
	if got, err := e.ReceiveMessage(t.Context(), ref, engine.ReceiveParams{}); err != nil || len(got) != 0 {
		t.Fatalf("short poll of an empty queue: %d messages, %v", len(got), err)
	}
	st.gated.Store(true)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	const polls = 6
	errs := make(chan error, polls)
	poll := func() {
		_, err := e.ReceiveMessage(ctx, ref, engine.ReceiveParams{WaitTimeSeconds: ptr(20)})
		errs <- err
	}
	st.checkShared(t, polls, poll, func(q uint64) int { return engine.NextVisibleWaiters(e, q) }, "read of the next visible moment")
	cancel() // the polls now sleep on the fake clock; let them go
	for range polls {
		if err := <-errs; err != nil {
			t.Fatalf("long poll: %v", err)
		}
	}
	if n := st.calls.Load(); n != 1 {
		t.Fatalf("%d reads of the next visible moment for %d long polls, want 1", n, polls)
	}
}
