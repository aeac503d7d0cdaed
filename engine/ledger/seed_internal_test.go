package ledger

import (
	"errors"
	"testing"
	"time"

	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/internal/testutil/poll"
)

// seedAt is the lease of applyMsg epoch 1, begun at leased and ending at
// until (seconds), as the store lists it at start.
func seedAt(leased, until int) Seed {
	return Seed{MessageID: applyMsg, Epoch: 1, LeasedAt: sec(leased), Deadline: sec(until), ReceiveCount: 1}
}

// A seeded lease is no receive; its lapse is one lapse, which a node
// alone counts as its own (metrics).
func TestSeedLapseCountsOnce(t *testing.T) {
	t.Parallel()
	var l Ledger
	l.Seed(applyQueue, []Seed{seedAt(0, 30)}, sec(10))
	q := Queue{ID: applyQueue, Name: "seeded", VisibilityTimeout: 30}
	if s := l.Report(q, sec(20)).SinceStart; s.Received != 0 || s.Expired != 0 {
		t.Fatalf("before its deadline: %+v", s)
	}
	if got := l.ActiveLeases(applyQueue, sec(20), 10); len(got) != 1 || !got[0].Begin.Equal(sec(0)) {
		t.Fatalf("active leases %+v, want the seeded one begun at 0 s", got)
	}
	for _, at := range []int{31, 40, 90} {
		if s := l.Report(q, sec(at)).SinceStart; s.Received != 0 || s.Expired != 1 {
			t.Errorf("at %d s: received %d, expired %d; want 0 and 1", at, s.Received, s.Expired)
		}
	}
	var m QueueMetrics
	l.Metrics(applyQueue, sec(90), &m)
	if m.Totals.Expired != 1 || m.Totals.Received != 0 {
		t.Errorf("metrics: received %d, expired %d; want 0 and 1", m.Totals.Received, m.Totals.Expired)
	}
}

// A late delete by the receipt of a seeded lease is late.
func TestSeedLateDelete(t *testing.T) {
	t.Parallel()
	var l Ledger
	l.Seed(applyQueue, []Seed{seedAt(0, 30)}, sec(10))
	l.apply(evLateDelete(1, 0, 45, 1))
	s := l.Report(Queue{ID: applyQueue, Name: "seeded", VisibilityTimeout: 30}, sec(50)).SinceStart
	if s.Late != 1 || s.LateLeases != 1 || s.Expired != 1 || s.Received != 0 {
		t.Errorf("late %d (leases %d), expired %d, received %d; want 1, 1, 1, 0", s.Late, s.LateLeases, s.Expired, s.Received)
	}
}

// Seeds stay on the node that took them from the store: the others seed
// their own. The receive of a seeded lease made through another node,
// arriving after the seed, names its holder and counts once.
func TestSeedNotRelayed(t *testing.T) {
	t.Parallel()
	bus := &loopBus{}
	fake := clock.NewFake(sec(10))
	a := New(Config{Bus: bus, Clock: fake, Logger: quietLog})
	t.Cleanup(a.Close)
	b := New(Config{Bus: bus, Clock: fake, Logger: quietLog})
	t.Cleanup(b.Close)
	a.Seed(applyQueue, []Seed{seedAt(0, 300)}, sec(10))
	a.Record(Event{Kind: KindSent, QueueID: applyQueue, At: sec(10), N: 1})
	q := Queue{ID: applyQueue, Name: "seeded", VisibilityTimeout: 300}
	poll.For(t, 5*time.Second, func() error {
		if b.Report(q, sec(11)).SinceStart.Sent != 1 {
			return errors.New("b has not seen a's send yet")
		}
		return nil
	})
	if got := b.ActiveLeases(applyQueue, sec(11), 10); len(got) != 0 {
		t.Errorf("b holds a's seed: %+v", got)
	}
	var m QueueMetrics
	a.Metrics(applyQueue, sec(400), &m)
	if m.Totals.Expired != 0 {
		t.Errorf("a counts the lapse of a seed as its own (%d): every node seeds it", m.Totals.Expired)
	}
	if s := a.Report(q, sec(400)).SinceStart; s.Expired != 1 {
		t.Errorf("a's report: expired %d, want 1", s.Expired)
	}

	var c Ledger
	c.Seed(applyQueue, []Seed{seedAt(0, 300)}, sec(10))
	ev := evReceive(1, 0, 300)
	ev.Client = Client{Addr: "10.0.0.9", UserAgent: "sdk"}
	c.apply(ev)
	c.apply(ev)
	s := c.Report(q, sec(20)).SinceStart
	if s.Received != 1 {
		t.Errorf("received %d, want 1", s.Received)
	}
	if h := c.oldestRunning(applyQueue, sec(20)); h.Seeded || h.Client != ev.Client {
		t.Errorf("oldest running %+v: want the receive's holder, not seeded", h)
	}
}
