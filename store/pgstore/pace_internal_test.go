package pgstore

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/internal/testutil/poll"
)

// pacedGroup is a grouper whose rounds run no statements: each says its
// size on starts and waits until the test releases it. Its holds are timed
// by a fake clock.
type pacedGroup struct {
	g      grouper
	clock  *clock.Fake
	starts chan int

	mu       sync.Mutex
	releases []chan struct{}
	ended    bool
}

func newPacedGroup(t *testing.T) *pacedGroup {
	t.Helper()
	p := &pacedGroup{clock: clock.NewFake(time.Unix(1_700_000_000, 0)), starts: make(chan int, 16)}
	p.g.clock, p.g.round = p.clock, p.round
	p.g.start()
	t.Cleanup(func() {
		p.mu.Lock()
		p.ended = true
		for _, r := range p.releases {
			close(r)
		}
		p.releases = nil
		p.mu.Unlock()
		p.g.stop()
	})
	return p
}

func (p *pacedGroup) round(ctx context.Context, ops []*op) error {
	release := make(chan struct{})
	p.mu.Lock()
	if p.ended {
		close(release)
	} else {
		p.releases = append(p.releases, release)
	}
	p.mu.Unlock()
	p.starts <- len(ops)
	<-release
	return nil
}

// releaseFirst lets the earliest round still running end.
func (p *pacedGroup) releaseFirst() {
	p.mu.Lock()
	defer p.mu.Unlock()
	close(p.releases[0])
	p.releases = p.releases[1:]
}

// commit queues n ops, each from a goroutine of its own.
func (p *pacedGroup) commit(n int) {
	for range n {
		go p.g.commit(context.Background(), &op{kind: opSend})
	}
}

// firstRound starts a round of n ops and waits until it runs.
func (p *pacedGroup) firstRound(t *testing.T, n int) {
	t.Helper()
	g := &p.g
	g.mu.Lock()
	g.held = true
	g.mu.Unlock()
	p.commit(n)
	poll.For(t, 30*time.Second, func() error {
		g.mu.Lock()
		defer g.mu.Unlock()
		if len(g.queue) != n {
			return fmt.Errorf("%d of %d ops queued", len(g.queue), n)
		}
		return nil
	})
	g.mu.Lock()
	g.held = false
	g.cond.Broadcast()
	g.mu.Unlock()
	if got := p.nextStart(t); got != n {
		t.Fatalf("first round held %d ops, want %d", got, n)
	}
}

// awaitHold waits until a committer holds a round and its timer runs.
func (p *pacedGroup) awaitHold(t *testing.T) {
	t.Helper()
	poll.For(t, 30*time.Second, func() error {
		if h, n := p.g.holds.Load(), p.clock.Timers(); h != 1 || n != 1 {
			return fmt.Errorf("%d holds, %d timers; want 1 and 1", h, n)
		}
		return nil
	})
	select {
	case n := <-p.starts:
		t.Fatalf("a round of %d started while the small one was held", n)
	default:
	}
}

func (p *pacedGroup) nextStart(t *testing.T) int {
	t.Helper()
	select {
	case n := <-p.starts:
		return n
	case <-time.After(30 * time.Second):
		t.Fatal("no round started")
		return 0
	}
}

// TestPaceHoldsSmallRoundUntilInFlightEnds: while a round of four runs, a
// lone op queued is held, and goes as soon as that round ends, the clock
// not moving.
func TestPaceHoldsSmallRoundUntilInFlightEnds(t *testing.T) {
	t.Parallel()
	p := newPacedGroup(t)
	p.firstRound(t, 4)
	p.commit(1)
	p.awaitHold(t)
	p.releaseFirst()
	if got := p.nextStart(t); got != 1 {
		t.Errorf("held round ran %d ops, want 1", got)
	}
}

// TestPaceHoldEndsAtHoldMax: a small round held behind a round that does
// not end goes once holdMax has passed.
func TestPaceHoldEndsAtHoldMax(t *testing.T) {
	t.Parallel()
	p := newPacedGroup(t)
	p.firstRound(t, 4)
	p.commit(1)
	p.awaitHold(t)
	p.clock.Advance(holdMax - time.Nanosecond)
	select {
	case n := <-p.starts:
		t.Fatalf("a round of %d started before holdMax", n)
	default:
	}
	p.clock.Advance(time.Nanosecond)
	if got := p.nextStart(t); got != 1 {
		t.Errorf("held round ran %d ops, want 1", got)
	}
}

// TestPaceHoldEndsWhenRoundFull: a held round goes once as many ops are
// queued as the round in flight holds.
func TestPaceHoldEndsWhenRoundFull(t *testing.T) {
	t.Parallel()
	p := newPacedGroup(t)
	p.firstRound(t, 4)
	p.commit(1)
	p.awaitHold(t)
	p.commit(3)
	if got := p.nextStart(t); got != 4 {
		t.Errorf("held round ran %d ops, want 4", got)
	}
}

// TestPaceLoneOpNotHeld: with no round in flight an op runs at once, held
// by nothing.
func TestPaceLoneOpNotHeld(t *testing.T) {
	t.Parallel()
	p := newPacedGroup(t)
	p.commit(1)
	if got := p.nextStart(t); got != 1 {
		t.Errorf("round ran %d ops, want 1", got)
	}
	if h := p.g.holds.Load(); h != 0 {
		t.Errorf("%d holds, want 0", h)
	}
}

func TestHoldSmall(t *testing.T) {
	for _, c := range []struct {
		queued, inflight, last int
		want                   bool
	}{
		{1, 0, 10, false}, // nothing in flight: go
		{1, 1, 10, true},  // smaller than the round in flight: hold
		{10, 1, 10, false},
		{12, 1, 10, false},
		{1, 1, 1, false},
	} {
		if got := holdSmall(c.queued, c.inflight, c.last); got != c.want {
			t.Errorf("holdSmall(%d, %d, %d) = %v, want %v", c.queued, c.inflight, c.last, got, c.want)
		}
	}
}
