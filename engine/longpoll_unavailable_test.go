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
}

func (s *receivesFail) MessageReceive(ctx context.Context, p baton.MessageReceiveParams) ([]*baton.Message, error) {
	s.attempts.Add(1)
	if s.down.Load() {
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
