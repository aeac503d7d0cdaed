package ledger

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/internal/testutil/poll"
)

// testHeader is the header of node's batch numbered seq.
func testHeader(node, seq uint64) []byte {
	b := make([]byte, batchHeader)
	b[0] = batchVersion
	binary.BigEndian.PutUint64(b[1:], node)
	binary.BigEndian.PutUint64(b[9:], seq)
	return b
}

// testBatch is node's batch numbered seq of evs.
func testBatch(node, seq uint64, evs ...Event) []byte {
	b := testHeader(node, seq)
	for _, ev := range evs {
		b = appendEvent(b, ev)
	}
	return b
}

// gapLeases are three leases of 30 s taken at 0 s on another node, and
// their deletes at 5 s.
func gapLeases() (receives, deletes []Event) {
	for i := range 3 {
		id := fmt.Sprintf("m%d", i)
		receives = append(receives, Event{Kind: KindReceive, QueueID: applyQueue, MessageID: id, Epoch: 1, At: sec(0),
			Deadline: sec(30), ReceiveCount: 1, Client: consumerA})
		deletes = append(deletes, Event{Kind: KindDelete, QueueID: applyQueue, MessageID: id, Epoch: 1, At: sec(5),
			LeasedAt: sec(0), StoreEpoch: 1, Removed: true, Client: consumerA})
	}
	return receives, deletes
}

// TestLedgerGapIsSaidNotJudged: a node that missed another node's batches
// (a jump in its numbers) or was told by the bus that its link was down
// names no finding on a period the gap falls in, and says what it missed:
// the leases whose deletes it missed would otherwise read as lapsed, their
// holders as stopped. They used to: a verdict on missing evidence. Once the
// window no longer holds the gap, the doctor judges again; a batch
// delivered twice is applied once.
func TestLedgerGapIsSaidNotJudged(t *testing.T) {
	t.Parallel()
	receives, _ := gapLeases()
	q := Queue{ID: applyQueue, Name: "gap", VisibilityTimeout: 30}
	for _, tc := range []struct {
		name    string
		deliver func(l *Ledger)
		says    string
		next    uint64 // the node's next batch number
	}{
		{"numbers jump", func(l *Ledger) {
			l.applyBatch(testBatch(9, 1, receives...))
			// Batch 2, the deletes, never arrives; 3 does.
			l.applyBatch(testBatch(9, 3, Event{Kind: KindSeen, QueueID: applyQueue, At: sec(6), Client: consumerB}))
		}, "1 of their batches of lease events", 4},
		{"link down", func(l *Ledger) {
			l.applyBatch(testBatch(9, 1, receives...))
			l.deliver(nil, baton.LedgerLinkLost) // the deletes were published meanwhile
		}, "its link to them was down", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := clock.NewFake(sec(1))
			l := New(Config{Clock: now, Started: sec(-60), Logger: quietLog})
			tc.deliver(l)
			now.Set(sec(60))
			r := l.Report(q, now.Now())
			if r.Diagnosis != DiagnosisEvidenceMissed || len(r.Findings) != 0 {
				t.Fatalf("after missing the deletes: diagnosis %s, findings %v; want %s and none\n%s",
					r.Diagnosis, findingKinds(r), DiagnosisEvidenceMissed, r.Advice)
			}
			for _, want := range []string{"may have missed other nodes' lease events", tc.says, "no verdict"} {
				if !strings.Contains(r.Advice, want) {
					t.Errorf("advice lacks %q: %s", want, r.Advice)
				}
			}
			// Once the window no longer holds the gap, leases judged in it
			// are judged.
			now.Set(sec(2000))
			later := make([]Event, len(receives))
			for i, ev := range receives {
				ev.Epoch, ev.At, ev.Deadline = 2, sec(2000), sec(2030)
				later[i] = ev
			}
			l.applyBatch(testBatch(9, tc.next, later...))
			l.applyBatch(testBatch(9, tc.next, later...)) // again: applied once
			r = l.Report(q, sec(2000).Add(time.Second))
			if r.Diagnosis == DiagnosisEvidenceMissed {
				t.Errorf("15 minutes after the gap: %s\n%s", r.Diagnosis, r.Advice)
			}
			if r.Window.Received != 3 {
				t.Errorf("a batch delivered twice: %d leases received, want 3", r.Window.Received)
			}
		})
	}
}

// flakyBus is a loopBus that refuses its first exchanges: lost (never
// delivered) or, with delivered, delivered and then its answer lost.
type flakyBus struct {
	loopBus
	mu        sync.Mutex
	refuse    int
	delivered bool
}

func (b *flakyBus) PublishLedger(ctx context.Context, batches [][]byte) error {
	b.mu.Lock()
	refuse := b.refuse > 0
	b.refuse--
	b.mu.Unlock()
	if !refuse {
		return b.loopBus.PublishLedger(ctx, batches)
	}
	if b.delivered {
		b.loopBus.PublishLedger(ctx, batches)
	}
	return errors.New("connection lost")
}

// TestLedgerRefusedBatchesAreSentAgain: batches whose publication the bus
// refused are published again, in order, and another node applies each
// once, whether the refused exchange reached it or not. They used to be
// dropped, and the other nodes' reports to miss their leases.
func TestLedgerRefusedBatchesAreSentAgain(t *testing.T) {
	t.Parallel()
	for _, delivered := range []bool{false, true} {
		t.Run(fmt.Sprint("delivered=", delivered), func(t *testing.T) {
			bus := &flakyBus{refuse: 2, delivered: delivered}
			now := clock.NewFake(sec(1))
			a := New(Config{Bus: bus, Clock: now, Logger: quietLog})
			b := New(Config{Bus: bus, Clock: now, Logger: quietLog})
			t.Cleanup(a.Close)
			t.Cleanup(b.Close)
			receives, deletes := gapLeases()
			for _, ev := range receives {
				a.Record(ev)
			}
			for _, ev := range deletes {
				a.Record(ev)
			}
			q := Queue{ID: applyQueue, Name: "again", VisibilityTimeout: 30}
			poll.For(t, 30*time.Second, func() error {
				if s := b.Report(q, sec(10)).SinceStart; s.Completed != 3 {
					return fmt.Errorf("the other node saw %d leases completed, want 3", s.Completed)
				}
				return nil
			})
			if s := b.Report(q, sec(10)).SinceStart; s.Received != 3 || s.Completed != 3 {
				t.Errorf("the other node saw %d received, %d completed; want each once: 3, 3", s.Received, s.Completed)
			}
			if r := b.Report(q, sec(10)); r.Diagnosis == DiagnosisEvidenceMissed {
				t.Errorf("every batch arrived, yet: %s", r.Advice)
			}
		})
	}
}

// TestLedgerKeptBatchesBounded: while the bus refuses, the publisher keeps
// at most ledgerKeptBatches batches to publish again, the newest, and once
// the bus takes them they go out in order; the oldest are dropped, which
// the other nodes see as a jump in the numbers.
func TestLedgerKeptBatchesBounded(t *testing.T) {
	t.Parallel()
	bus := &flakyBus{refuse: 1 << 30}
	p := newLedgerPublisher(bus, 5, quietLog)
	p.maxBatch = batchHeader + 40 // a batch an event
	p.Start(context.Background())
	const n = 4 * ledgerKeptBatches
	for i := range n {
		p.queue(Event{Kind: KindSent, QueueID: 1, MessageID: fmt.Sprintf("m-%d", i), At: sec(i), N: 1})
	}
	// Let the events be read, and refused, before the bus takes them.
	poll.For(t, 30*time.Second, func() error {
		if len(p.events) > 0 {
			return fmt.Errorf("%d events not read yet", len(p.events))
		}
		return nil
	})
	bus.mu.Lock()
	bus.refuse = 0
	bus.mu.Unlock()
	p.Stop()
	got := bus.published()
	if got == 0 || got > ledgerKeptBatches+1 {
		t.Fatalf("%d batches published after the bus refused %d events' worth; want some, at most %d", got, n, ledgerKeptBatches+1)
	}
	var prev uint64
	for i, b := range bus.batches {
		seq, ok := batchSeq(b)
		if !ok || i > 0 && seq != prev+1 {
			t.Fatalf("batch %d numbered %d after %d: want the kept batches in order", i, seq, prev)
		}
		prev = seq
	}
	if first, _ := batchSeq(bus.batches[0]); first <= 1 {
		t.Errorf("the first batch published is numbered %d: want the oldest dropped, so that other nodes see the gap", first)
	}
}

// TestLedgerGapInAHeldLeaseLife: a gap before the window still withholds a
// finding that names a lease running through it: its delete may be what
// was missed, and "held far beyond the p99" would then be said of a lease
// long ended.
func TestLedgerGapInAHeldLeaseLife(t *testing.T) {
	t.Parallel()
	d := newDoc(t, 43200)
	d.quick(consumerA, 5, 0) // p99 100 ms
	d.receive(consumerA, 2000, 1, "h1", "h2", "h3")
	d.l.missed.delivered(ms(50_000))
	d.l.missed.linkLost(time.Time{}, ms(70_000)) // the deletes may have come meanwhile
	d.quick(consumerA, 5, 29*60_000)             // the window sees leases of its own
	r := d.report(30 * 60_000)
	if r.JudgedSinceStart {
		t.Fatal("judged since start: want the window judged, the gap before it")
	}
	wantFindings(t, r, DiagnosisEvidenceMissed)
	if !strings.Contains(r.Advice, "wait until the leases that ran through the gap have ended") {
		t.Errorf("advice %q: want it to say the leases running through the gap hold the verdict back", r.Advice)
	}
}

// TestLedgerLinkDownAloneIsNoGap: a node alone on its database, whose link
// to the bus was down, missed nothing; the bus says so (no other node
// listens: baton.LedgerLinkLostAlone), and the node's own lapses are still judged
// rather than withheld for 15 minutes with advice to ask nodes that do not
// exist. A node that heard from another node before is told the same, yet
// still says what it may have missed: that node may have published while
// the link was down and stopped since.
func TestLedgerLinkDownAloneIsNoGap(t *testing.T) {
	t.Parallel()
	receives, _ := gapLeases()
	q := Queue{ID: applyQueue, Name: "alone", VisibilityTimeout: 30}
	for _, tc := range []struct {
		name      string
		heardPeer bool
		word      baton.LedgerGap
		withheld  bool
	}{
		{"alone, never heard another", false, baton.LedgerLinkLostAlone, false},
		{"alone now, heard another before", true, baton.LedgerLinkLostAlone, true},
		{"others listen", false, baton.LedgerLinkLost, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := clock.NewFake(sec(0))
			l := New(Config{Clock: now, Started: sec(-60), Logger: quietLog})
			if tc.heardPeer {
				l.applyBatch(testBatch(9, 1, Event{Kind: KindSeen, QueueID: applyQueue, At: sec(0), Client: consumerB}))
			}
			for _, ev := range receives {
				l.Record(ev) // leased here; never deleted: they lapse at 30 s
			}
			now.Set(sec(10))
			l.deliver(nil, tc.word)
			now.Set(sec(60))
			r := l.Report(q, now.Now())
			if withheld := r.Diagnosis == DiagnosisEvidenceMissed; withheld != tc.withheld {
				t.Fatalf("diagnosis %s (findings %v); want withheld=%v\n%s", r.Diagnosis, findingKinds(r), tc.withheld, r.Advice)
			}
			if !tc.withheld && r.Window.Expired != 3 {
				t.Errorf("the node's own leases: %d lapsed, want 3", r.Window.Expired)
			}
		})
	}
}

// TestLedgerLinkDownNowIsSaid: while the bus says its link is down now (a
// database failing over, and the seconds its listener takes to come back
// after), a node that heard from another names no finding: the other
// nodes' deletes of leases begun here do not arrive, and the leases would
// read as lapsed. It says the link is down now, and once the bus says it
// is back, that it was down. A node that never heard another judges its
// own leases as before. Nodes used to judge on what they had until the
// link was back.
func TestLedgerLinkDownNowIsSaid(t *testing.T) {
	t.Parallel()
	receives, _ := gapLeases()
	q := Queue{ID: applyQueue, Name: "down", VisibilityTimeout: 30}
	for _, tc := range []struct {
		name      string
		heardPeer bool
		withheld  bool
	}{
		{"heard another", true, true},
		{"never heard another", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := clock.NewFake(sec(0))
			l := New(Config{Clock: now, Started: sec(-60), Logger: quietLog})
			if tc.heardPeer {
				l.applyBatch(testBatch(9, 1, Event{Kind: KindSeen, QueueID: applyQueue, At: sec(0), Client: consumerB}))
			}
			for _, ev := range receives {
				l.Record(ev) // leased here; deleted elsewhere (unseen) or lapsed at 30 s
			}
			now.Set(sec(1))
			l.deliver(nil, baton.LedgerLinkDown)
			now.Set(sec(60))
			r := l.Report(q, now.Now())
			if withheld := r.Diagnosis == DiagnosisEvidenceMissed; withheld != tc.withheld {
				t.Fatalf("link down now: diagnosis %s (findings %v); want withheld=%v\n%s", r.Diagnosis, findingKinds(r), tc.withheld, r.Advice)
			}
			if !tc.withheld {
				if r.Window.Expired != 3 {
					t.Errorf("the node's own leases: %d lapsed, want 3", r.Window.Expired)
				}
				return
			}
			if !strings.Contains(r.Advice, "its link to them is down now") || !strings.Contains(r.Advice, "once the link is back") {
				t.Errorf("link down now, advice: %s", r.Advice)
			}
			now.Set(sec(70))
			l.deliver(nil, baton.LedgerLinkLost)
			r = l.Report(q, now.Now())
			if r.Diagnosis != DiagnosisEvidenceMissed || !strings.Contains(r.Advice, "its link to them was down") || strings.Contains(r.Advice, "down now") {
				t.Errorf("link back: %s: %s", r.Diagnosis, r.Advice)
			}
		})
	}
}

// TestLedgerEmptyBatchIsNoGap: a batch the bus carries is a batch, even an
// empty one (a NOTIFY on the ledger's channel without a payload, from any
// client of the database): it is dropped as malformed, not taken for the
// bus's word that the link was down. The bus used to say that with an
// empty batch, so such a NOTIFY made a node that had heard from another
// withhold its verdicts for 15 minutes.
func TestLedgerEmptyBatchIsNoGap(t *testing.T) {
	t.Parallel()
	receives, _ := gapLeases()
	q := Queue{ID: applyQueue, Name: "empty", VisibilityTimeout: 30}
	now := clock.NewFake(sec(0))
	bus := &loopBus{}
	l := New(Config{Clock: now, Started: sec(-60), Logger: quietLog, Bus: bus})
	defer l.Close()
	l.applyBatch(testBatch(9, 1, Event{Kind: KindSeen, QueueID: applyQueue, At: sec(0), Client: consumerB}))
	for _, ev := range receives {
		l.Record(ev) // leased here; never deleted: they lapse at 30 s
	}
	now.Set(sec(10))
	if err := bus.PublishLedger(t.Context(), [][]byte{{}}); err != nil {
		t.Fatal(err)
	}
	now.Set(sec(60))
	r := l.Report(q, now.Now())
	if r.Diagnosis == DiagnosisEvidenceMissed {
		t.Fatalf("an empty batch was taken for a link lost: %s\n%s", r.Diagnosis, r.Advice)
	}
	if r.Window.Expired != 3 {
		t.Errorf("the node's own leases: %d lapsed, want 3", r.Window.Expired)
	}
	if n := l.badBatches.Load(); n != 1 {
		t.Errorf("%d malformed batches counted, want the empty one", n)
	}
}

// TestLedgerForgetsSilentNodes: a node forgets the batch numbers of nodes
// not heard from for longer than any evidence judged (peerHorizon), when
// another is heard from first; it still knows it heard from others, and a
// node heard from within the horizon keeps its numbers, and a jump in them
// is still a gap. Every node that ever ran (each start draws a new id)
// used to be remembered for ever.
func TestLedgerForgetsSilentNodes(t *testing.T) {
	t.Parallel()
	now := clock.NewFake(sec(0))
	l := New(Config{Clock: now, Started: sec(-60), Logger: quietLog})
	seen := func(node, seq uint64) {
		l.applyBatch(testBatch(node, seq, Event{Kind: KindSeen, QueueID: applyQueue, At: now.Now(), Client: consumerB}))
	}
	for node := uint64(1); node <= 100; node++ {
		seen(node, 1) // nodes that ran once and stopped
	}
	now.Advance(peerHorizon - time.Minute)
	seen(200, 1) // a node heard from within the horizon of the first
	now.Advance(2 * time.Minute)
	seen(300, 1) // the first 100 are now past it
	l.missed.mu.Lock()
	peers := len(l.missed.peers)
	_, kept := l.missed.peers[200]
	l.missed.mu.Unlock()
	if peers != 2 || !kept {
		t.Fatalf("%d nodes' numbers remembered (node 200 kept: %v), want 2: those heard from within %v", peers, kept, peerHorizon)
	}
	if !l.missed.heardOthers() {
		t.Fatal("the node forgot it heard from others")
	}
	seen(200, 3)
	if gap, _, ok := l.missed.since(now.Now().Add(-time.Minute), now.Now()); !ok || gap.batches != 1 {
		t.Fatalf("a jump in the numbers of a node remembered: gap %+v, %v; want 1 batch missed", gap, ok)
	}
}
