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

// receivesFail is a memory store whose receives fail as a database store's
// do while its database fails over, and counts them.
type receivesFail struct {
	*memstore.Store
	down     atomic.Bool
	attempts atomic.Int64
	// statsDown fails MessageStats as well.
	statsDown atomic.Bool
	// failing, if set, runs before a receive (or MessageStats) fails: a database store's
	// retries take time before it gives up.
	failing func()
}

// MessageStats fails too while statsDown: a long poll asks it when the
// queue's next hidden message becomes visible.
func (s *receivesFail) MessageStats(ctx context.Context, p baton.MessageStatsParams) (baton.MessageStats, error) {
	if s.statsDown.Load() {
		if s.failing != nil {
			s.failing()
		}
		return baton.MessageStats{}, errStoreDown
	}
	return s.Store.MessageStats(ctx, p)
}

func (s *receivesFail) MessageReceive(ctx context.Context, p baton.MessageReceiveParams) ([]*baton.Message, error) {
	s.attempts.Add(1)
	if s.down.Load() {
		if s.failing != nil {
			s.failing()
		}
		return nil, errStoreDown
	}
	return s.Store.MessageReceive(ctx, p)
}

// newOutageRig is an engine on a fake clock over a receivesFail store that
// is down, with a queue "q".
func newOutageRig(t *testing.T) (*engine.Engine, *receivesFail, *clock.Fake, engine.QueueRef) {
	t.Helper()
	s := &receivesFail{Store: memstore.New()}
	s.down.Store(true)
	clk := clock.NewFake(testutil.Epoch)
	e, err := engine.New(engine.Config{Store: s, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e, s, clk, mkQueue(t, e, "q", nil)
}

// pausedAfter waits until the long poll has tried the store n times and
// sleeps on its pause: the fake clock may then move.
func pausedAfter(t *testing.T, s *receivesFail, clk *clock.Fake, n int64) {
	t.Helper()
	testutil.CheckFor(t, 5*time.Second, func() error {
		if got := s.attempts.Load(); got < n {
			return fmt.Errorf("receives tried: %d, want %d", got, n)
		}
		return nil
	})
	waitTimers(t, clk, 1)
}

// A long poll waits through the store's outage and is answered with the
// message once the store is back, within its wait, not with a 503.
func TestLongPollWaitsThroughOutage(t *testing.T) {
	t.Parallel()
	e, s, clk, ref := newOutageRig(t)
	if _, err := e.SendMessage(context.Background(), ref, engine.SendParams{Body: "m"}); err != nil {
		t.Fatal(err)
	}
	done := startPoll(context.Background(), e, ref, 20, engine.ReceiveParams{})
	pausedAfter(t, s, clk, 1)
	clk.Advance(time.Second)
	pausedAfter(t, s, clk, 2)

	s.down.Store(false)
	clk.Advance(time.Second)
	r := mustAnswer(t, done, "store back after 2 s")
	if r.err != nil || len(r.msgs) != 1 || r.msgs[0].Body != "m" {
		t.Fatalf("long poll answered %v, %v; want the message", r.msgs, r.err)
	}
}

// A long poll whose store stays down for its whole wait looks again once a
// second (no busy loop) and, the store still down at its last look, is
// answered the store's error (a 503) at the end of the wait, not an empty
// receive that would say the queue had nothing to give.
func TestLongPollOutageOutlastsWait(t *testing.T) {
	t.Parallel()
	e, s, clk, ref := newOutageRig(t)
	if _, err := e.SendMessage(context.Background(), ref, engine.SendParams{Body: "m"}); err != nil {
		t.Fatal(err)
	}
	done := startPoll(context.Background(), e, ref, 5, engine.ReceiveParams{})
	for i := int64(1); i <= 5; i++ {
		pausedAfter(t, s, clk, i)
		select {
		case r := <-done:
			t.Fatalf("answered %v, %v after %d s of a 5 s wait", r.msgs, r.err, i-1)
		default:
		}
		clk.Advance(time.Second)
	}
	r := mustAnswer(t, done, "the wait over")
	if !errors.Is(r.err, baton.ErrUnavailable) || len(r.msgs) != 0 {
		t.Fatalf("long poll answered %v, %v; want ErrUnavailable", r.msgs, r.err)
	}
	if got := s.attempts.Load(); got > 7 {
		t.Fatalf("%d receives tried in a 5 s wait, want about one a second", got)
	}
}

// readsFail is a memory store whose every read of messages fails while down,
// as a database store's do while its database is away, and whose QueueGet
// fails too while queueDown; looks counts the reads of messages.
type readsFail struct {
	*memstore.Store
	down, queueDown atomic.Bool
	looks           atomic.Int64
}

func (s *readsFail) QueueGet(ctx context.Context, region, account, name string) (*baton.Queue, error) {
	if s.queueDown.Load() {
		return nil, errStoreDown
	}
	return s.Store.QueueGet(ctx, region, account, name)
}

func (s *readsFail) MessageStats(ctx context.Context, p baton.MessageStatsParams) (baton.MessageStats, error) {
	s.looks.Add(1)
	if s.down.Load() {
		return baton.MessageStats{}, errStoreDown
	}
	return s.Store.MessageStats(ctx, p)
}

func (s *readsFail) MessageReceive(ctx context.Context, p baton.MessageReceiveParams) ([]*baton.Message, error) {
	s.looks.Add(1)
	if s.down.Load() {
		return nil, errStoreDown
	}
	return s.Store.MessageReceive(ctx, p)
}

// newReadsFailRig is an engine on a fake clock over a readsFail store, up,
// with an empty queue "q".
func newReadsFailRig(t *testing.T) (*engine.Engine, *readsFail, *clock.Fake, engine.QueueRef) {
	t.Helper()
	s := &readsFail{Store: memstore.New()}
	clk := clock.NewFake(testutil.Epoch)
	e, err := engine.New(engine.Config{Store: s, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e, s, clk, mkQueue(t, e, "q", nil)
}

// A long poll on an empty queue whose store goes away while it sleeps is
// answered 503 at the wait's end, not empty: an empty receive says the
// queue had nothing to give, and on several nodes another may have sent
// meanwhile (its wake-up cannot arrive while the database is away). The
// poll asks the store at its last look; it answers nothing from what it
// knew before the outage.
func TestLongPollEmptyQueueOutage(t *testing.T) {
	t.Parallel()
	e, s, clk, ref := newReadsFailRig(t)
	done := startPoll(context.Background(), e, ref, 5, engine.ReceiveParams{})
	waitTimers(t, clk, 1) // looked, found nothing, sleeps to the wait's end
	s.down.Store(true)
	before := s.looks.Load()
	clk.Advance(5 * time.Second)
	r := mustAnswer(t, done, "the wait over")
	if !errors.Is(r.err, baton.ErrUnavailable) || len(r.msgs) != 0 {
		t.Fatalf("long poll on an empty queue, store down at its last look: %v, %v; want ErrUnavailable", r.msgs, r.err)
	}
	if s.looks.Load() == before {
		t.Fatal("the last look did not ask the store")
	}
}

// A long poll waiting through an outage when the engine closes (the server
// stops) is answered the store's error, not an empty receive: its last
// look failed. So is one still waiting for its queue to be read.
func TestLongPollOutageClosedAnswersError(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name      string
		queueDown bool
	}{{"messages unread", false}, {"queue unread", true}} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, s, clk, ref := newReadsFailRig(t)
			s.down.Store(true)
			s.queueDown.Store(tt.queueDown)
			done := startPoll(context.Background(), e, ref, 20, engine.ReceiveParams{})
			waitTimers(t, clk, 1) // paused after a failed look
			mustStillWait(t, done, "store down")
			e.Close()
			r := mustAnswer(t, done, "engine closed")
			if !errors.Is(r.err, baton.ErrUnavailable) || len(r.msgs) != 0 {
				t.Fatalf("long poll in an outage, engine closed: %v, %v; want ErrUnavailable", r.msgs, r.err)
			}
		})
	}
}

// A look that fails after the store's retries took the rest of the wait
// is the poll's last: it is answered the store's error then, not after
// one more pause measured from when the look began (which overran the
// wait by up to that pause, and on a fake clock that stands still, for
// good).
func TestLongPollOutageLookOutlastsWait(t *testing.T) {
	t.Parallel()
	e, s, clk, ref := newOutageRig(t)
	s.down.Store(false)
	if _, err := e.SendMessage(context.Background(), ref, engine.SendParams{Body: "m"}); err != nil {
		t.Fatal(err)
	}
	s.failing = func() { clk.Advance(25 * time.Second) } // the retries outlast the 20 s wait
	s.down.Store(true)
	done := startPoll(context.Background(), e, ref, 20, engine.ReceiveParams{})
	r := mustAnswer(t, done, "a failed look that ended past the wait")
	if !errors.Is(r.err, baton.ErrUnavailable) {
		t.Fatalf("long poll answered %v, %v; want the store's error", r.msgs, r.err)
	}
}

// The same when the failing read is the one a long poll sleeps on: when
// the queue's next hidden message becomes visible.
func TestLongPollOutageSleepOutlastsWait(t *testing.T) {
	t.Parallel()
	e, s, clk, ref := newOutageRig(t)
	s.down.Store(false)
	if _, err := e.SendMessage(context.Background(), ref, engine.SendParams{Body: "m", DelaySeconds: ptr(60)}); err != nil {
		t.Fatal(err)
	}
	s.failing = func() { clk.Advance(25 * time.Second) } // the retries outlast the 20 s wait
	s.down.Store(true)
	s.statsDown.Store(true)
	done := startPoll(context.Background(), e, ref, 20, engine.ReceiveParams{})
	r := mustAnswer(t, done, "a failed read of the next visible moment that ended past the wait")
	if !errors.Is(r.err, baton.ErrUnavailable) {
		t.Fatalf("long poll answered %v, %v; want the store's error", r.msgs, r.err)
	}
}
