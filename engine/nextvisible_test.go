package engine_test

import (
	"context"
	"errors"
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
	go poll()
	testutil.CheckFor(t, 10*time.Second, func() error {
		if st.calls.Load() != 1 {
			return errors.New("the first long poll has not asked the store")
		}
		return nil
	})
	for range polls - 1 {
		go poll()
	}
	testutil.CheckFor(t, 10*time.Second, func() error {
		if n := st.calls.Load(); n > 1 {
			close(st.release)
			t.Fatalf("%d reads of the next visible moment ran at once, want the polls arriving during the first to share it", n)
		}
		if n := engine.NextVisibleWaiters(e, st.queue.Load()); n != polls-1 {
			return fmt.Errorf("%d long polls wait for the running read, want %d", n, polls-1)
		}
		return nil
	})
	close(st.release)
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
