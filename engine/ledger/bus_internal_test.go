package ledger

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/internal/testutil/poll"
)

// loopBus is a LedgerBus delivering every batch to every subscriber, the
// publisher included, as PostgreSQL's NOTIFY does.
type loopBus struct {
	mu        sync.Mutex
	subs      []func([]byte, baton.LedgerGap)
	batches   [][]byte
	exchanges int // calls of PublishLedger
}

func (b *loopBus) PublishLedger(_ context.Context, batches [][]byte) error {
	b.mu.Lock()
	b.exchanges++
	for _, batch := range batches {
		b.batches = append(b.batches, append([]byte(nil), batch...))
	}
	subs := b.subs
	b.mu.Unlock()
	for _, batch := range batches {
		for _, f := range subs {
			f(batch, baton.LedgerNoGap)
		}
	}
	return nil
}

func (b *loopBus) SubscribeLedger(f func([]byte, baton.LedgerGap)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.subs = append(b.subs, f)
}

func (b *loopBus) published() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.batches)
}

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// TestLedgerOwnEchoIgnored: a ledger drops its own batches when the bus
// hands them back, and applies another node's.
func TestLedgerOwnEchoIgnored(t *testing.T) {
	t.Parallel()
	bus := &loopBus{}
	clock := clock.NewFake(sec(10))
	l := New(Config{Bus: bus, Clock: clock, Logger: quietLog})
	t.Cleanup(l.Close)
	l.Record(Event{Kind: KindSent, QueueID: applyQueue, At: sec(0), N: 1})
	l.Record(evReceive(1, 1, 30))
	l.Record(evDelete(1, 1, 5))
	poll.For(t, 5*time.Second, func() error {
		if n := bus.published(); n == 0 {
			return errors.New("nothing published yet")
		}
		return nil
	})
	report := func() LeaseStats {
		return l.Report(Queue{ID: applyQueue, Name: "echo", VisibilityTimeout: 30}, clock.Now()).SinceStart
	}
	if s := report(); s.Sent != 1 || s.Received != 1 || s.Completed != 1 {
		t.Fatalf("after its own echo: sent %d received %d completed %d, want 1 1 1", s.Sent, s.Received, s.Completed)
	}
	// The same batch from another node is applied.
	bus.mu.Lock()
	batch := append([]byte(nil), bus.batches[0]...)
	bus.mu.Unlock()
	batch[1] ^= 0xff // another node id
	l.applyBatch(batch)
	if s := report(); s.Sent != 2 {
		t.Errorf("another node's send: sent %d, want 2", s.Sent)
	}
	if own := l.owned(applyQueue, clock.Now()); own.sent != 1 || own.received != 1 || own.completed != 1 {
		t.Errorf("own counts sent %d received %d completed %d, want 1 1 1", own.sent, own.received, own.completed)
	}
}

// TestLedgerBatchesUnderLimit: the publisher cuts batches before they pass
// the limit, loses no event and keeps their order.
func TestLedgerBatchesUnderLimit(t *testing.T) {
	t.Parallel()
	bus := &loopBus{}
	p := newLedgerPublisher(bus, 42, quietLog)
	p.every = time.Hour // only size cuts a batch until Stop
	p.Start(context.Background())
	const n = 1000
	agent := strings.Repeat("a", 500) // longer than an event keeps
	for i := range n {
		p.queue(Event{
			Kind: KindReceive, QueueID: 3, MessageID: fmt.Sprintf("m-%d", i), Epoch: uint32(i), At: sec(i),
			Deadline: sec(i + 30), ReceiveCount: 1, Client: Client{Addr: "10.0.0.1:5000", UserAgent: agent},
		})
	}
	poll.For(t, 5*time.Second, func() error {
		if got := bus.published(); got < 10 {
			return fmt.Errorf("%d batches published, want at least 10 before the flush interval", got)
		}
		return nil
	})
	p.Stop()
	var next int
	for i, b := range bus.batches {
		if len(b) > baton.MaxLedgerBatch {
			t.Errorf("batch %d is %d bytes, over %d", i, len(b), baton.MaxLedgerBatch)
		}
		node, evs, err := decodeBatch(b)
		if err != nil || node != 42 {
			t.Fatalf("batch %d: node %d, %v", i, node, err)
		}
		if i < len(bus.batches)-1 && len(b) < baton.MaxLedgerBatch-400 {
			t.Errorf("batch %d is %d bytes: cut long before the limit", i, len(b))
		}
		for _, ev := range evs {
			if want := fmt.Sprintf("m-%d", next); ev.MessageID != want {
				t.Fatalf("event %d is %s, want %s", next, ev.MessageID, want)
			}
			if len(ev.Client.UserAgent) != maxEventClient {
				t.Fatalf("user agent of %d bytes, want it cut to %d", len(ev.Client.UserAgent), maxEventClient)
			}
			next++
		}
	}
	if next != n {
		t.Errorf("%d events arrived, want %d", next, n)
	}
}

// slowBus is a loopBus whose first exchange waits for release, as a busy
// database's round trip does.
type slowBus struct {
	loopBus
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (b *slowBus) PublishLedger(ctx context.Context, batches [][]byte) error {
	b.once.Do(func() {
		close(b.entered)
		<-b.release
	})
	return b.loopBus.PublishLedger(ctx, batches)
}

// TestLedgerSlowBusGathers: while an exchange with the bus is under way,
// the batches that fill up go out together in the next exchanges, not one
// round trip each, and none is lost or reordered.
func TestLedgerSlowBusGathers(t *testing.T) {
	t.Parallel()
	bus := &slowBus{loopBus: loopBus{}, entered: make(chan struct{}), release: make(chan struct{})}
	p := newLedgerPublisher(bus, 7, quietLog)
	// Each time the flush interval passes while the backlog is read, a
	// part-filled exchange goes out: an interval far above the time the
	// read takes, even on a loaded machine, leaves the bound below to the
	// gathering it checks.
	p.every = 200 * time.Millisecond
	p.Start(context.Background())
	ev := func(i int) Event {
		return Event{Kind: KindReceive, QueueID: 1, MessageID: fmt.Sprintf("m-%d", i), Epoch: 1, At: sec(i),
			Client: Client{UserAgent: strings.Repeat("u", maxEventClient)}}
	}
	p.queue(ev(0))
	<-bus.entered  // the first exchange is stuck in its round trip
	const n = 3000 // about 170 batches: more than the queue's worth of exchanges one by one
	for i := 1; i < n; i++ {
		p.queue(ev(i))
	}
	close(bus.release)
	p.Stop()
	if d := p.dropped.Load(); d != 0 {
		t.Fatalf("%d events dropped", d)
	}
	next := 0
	for _, b := range bus.batches {
		_, evs, err := decodeBatch(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if want := fmt.Sprintf("m-%d", next); e.MessageID != want {
				t.Fatalf("event %d is %s, want %s", next, e.MessageID, want)
			}
			next++
		}
	}
	if next != n {
		t.Fatalf("%d events arrived, want %d", next, n)
	}
	if limit := len(bus.batches)/ledgerExchangeBatches + 3; bus.exchanges > limit {
		t.Errorf("%d batches took %d exchanges, want at most %d", len(bus.batches), bus.exchanges, limit)
	}
	t.Logf("%d events in %d batches and %d exchanges", n, len(bus.batches), bus.exchanges)
}

// TestLedgerBatchFlushesAfterInterval: a lone event is published without
// waiting for more.
func TestLedgerBatchFlushesAfterInterval(t *testing.T) {
	t.Parallel()
	bus := &loopBus{}
	p := newLedgerPublisher(bus, 1, quietLog)
	p.Start(context.Background())
	t.Cleanup(p.Stop)
	p.queue(Event{Kind: KindSent, QueueID: 1, At: sec(0), N: 1})
	poll.For(t, 5*time.Second, func() error {
		if bus.published() != 1 {
			return errors.New("not published yet")
		}
		return nil
	})
}

// TestLedgerEventRoundTrip encodes an event of every kind and decodes it.
func TestLedgerEventRoundTrip(t *testing.T) {
	t.Parallel()
	client := Client{Addr: "192.0.2.7:41000", UserAgent: "aws-sdk-go-v2/1.30"}
	evs := []Event{
		{Kind: KindSent, QueueID: 9, At: sec(1).Add(123), N: 10},
		evReceive(1, 0, 30),
		{Kind: KindReceive, QueueID: 1 << 40, MessageID: "not-a-uuid", Epoch: 2, At: sec(5), Deadline: sec(5), ReceiveCount: 2, SentAt: sec(-50), Client: client},
		evRenew(3, 10, 20, 80),
		evDelete(4, 0, 9),
		evLateDelete(1, 0, 90, 3),
		{Kind: KindChange, QueueID: 2, MessageID: applyMsg, Epoch: 1, At: sec(40), Deadline: sec(70), LeasedAt: sec(0).Add(5 * time.Millisecond),
			Result: baton.LeaseLapsed, duplicate: true, Client: client},
		{Kind: KindChange, QueueID: 2, MessageID: applyMsg, Epoch: 2, At: sec(41), Deadline: sec(45), LeasedAt: sec(35),
			Result: baton.LeaseCurrent, StoreEpoch: 2, Shortened: true},
		{Kind: KindDeadLetter, QueueID: 2, MessageID: applyMsg, Epoch: 6, At: sec(3), ReceiveCount: 5},
		{Kind: KindForget, QueueID: 2, At: sec(4)},
		{Kind: KindPurge, QueueID: 2, At: sec(5)},
		{Kind: KindRetention, QueueID: 2, At: sec(70), SentAt: sec(10)},
		{Kind: KindRemove, QueueID: 2, MessageID: applyMsg, Epoch: 3, At: sec(71)},
		{Kind: KindReceive, QueueID: 2, MessageID: applyMsg, Epoch: 4, At: sec(72), Deadline: sec(102), Batch: 1 << 50, N: 10, Client: client},
		{Kind: KindReceive, QueueID: 2, MessageID: applyMsg, Epoch: 5, At: sec(72), Deadline: sec(102), Client: client, QueueTimeout: true},
		{Kind: KindChange, QueueID: 2, MessageID: applyMsg, Epoch: 4, At: sec(73), Deadline: sec(103), LeasedAt: sec(72),
			Result: baton.LeaseCurrent, StoreEpoch: 4, Progress: true},
		{Kind: KindRefused, QueueID: 2, MessageID: applyMsg, Epoch: 4, At: sec(74), Deadline: sec(74 + 43200), LeasedAt: sec(72), Client: client},
		{Kind: KindSeen, QueueID: 2, At: sec(75), Client: client},
		{Kind: KindDelete, QueueID: 2, MessageID: applyMsg, Epoch: 4, At: sec(76), LeasedAt: sec(72), Result: baton.LeaseGone, FIFO: true},
		{Kind: KindChange, QueueID: 2, MessageID: applyMsg, Epoch: 4, At: sec(77), Deadline: sec(107), LeasedAt: sec(72),
			Result: baton.LeaseCurrent, StoreEpoch: 4, Replay: true},
		{Kind: KindReceive, QueueID: 2, MessageID: applyMsg, Epoch: 6, At: sec(78), Deadline: sec(108), Client: client, ClientLeft: true},
		{Kind: KindSeen, QueueID: 2, MessageID: applyMsg, Epoch: 6, At: sec(79), Deadline: sec(79), LeasedAt: sec(78), Client: client, Unanswered: true},
	}
	b := testHeader(7, 1)
	for _, ev := range evs {
		b = appendEvent(b, ev)
	}
	node, got, err := decodeBatch(b)
	if err != nil || node != 7 || len(got) != len(evs) {
		t.Fatalf("decode: node %d, %d events, %v", node, len(got), err)
	}
	for i := range evs {
		if !sameEvent(got[i], evs[i]) {
			t.Errorf("event %d: got %+v, want %+v", i, got[i], evs[i])
		}
	}
}

func sameEvent(a, b Event) bool {
	return a.Kind == b.Kind && a.QueueID == b.QueueID && a.MessageID == b.MessageID && a.Epoch == b.Epoch &&
		a.At.Equal(b.At) && a.Deadline.Equal(b.Deadline) && a.LeasedAt.Equal(b.LeasedAt) && a.SentAt.Equal(b.SentAt) &&
		a.ReceiveCount == b.ReceiveCount && a.N == b.N && a.Result == b.Result && a.StoreEpoch == b.StoreEpoch &&
		a.duplicate == b.duplicate && a.Removed == b.Removed && a.Shortened == b.Shortened && a.Client == b.Client &&
		a.Progress == b.Progress && a.Batch == b.Batch && a.QueueTimeout == b.QueueTimeout && a.FIFO == b.FIFO && a.Replay == b.Replay &&
		a.ClientLeft == b.ClientLeft && a.Unanswered == b.Unanswered
}

// A node of the version before (1: no second flags byte) is still read.
func TestLedgerReadsVersion1(t *testing.T) {
	t.Parallel()
	ev := evReceive(1, 0, 30)
	b := appendEvent([]byte{1, 0, 0, 0, 0, 0, 0, 0, 7}, ev)
	b = b[:len(b)-1] // version 1 had no second flags byte
	node, got, err := decodeBatch(b)
	if err != nil || node != 7 || len(got) != 1 || !sameEvent(got[0], ev) {
		t.Fatalf("decode version 1: node %d, %+v, %v", node, got, err)
	}
	if _, _, err := decodeBatch(append([]byte{batchVersion + 1}, b[1:]...)); err == nil {
		t.Error("a batch of a later version decoded")
	}
}

// A client string longer than any sender writes is a malformed batch, not
// an event that would encode differently (found by FuzzDecodeLedgerBatch).
func TestLedgerRefusesLongClientString(t *testing.T) {
	t.Parallel()
	head := testHeader(1, 1)
	ok := appendEvent(head, evReceive(1, 0, 30))
	if _, _, err := decodeBatch(ok); err != nil {
		t.Fatalf("a well-formed batch: %v", err)
	}
	ev := evReceive(1, 0, 30)
	ev.Client.Addr = "a"
	b := appendEvent(append([]byte(nil), head...), ev)
	// Make the address one byte longer than appendString would write:
	// its length byte follows the one-byte address "a"; rebuild the tail.
	i := bytes.LastIndex(b, []byte{1, 'a'})
	long := strings.Repeat("a", maxEventClient+1)
	b = append(binary.AppendUvarint(b[:i:i], uint64(len(long))), append([]byte(long), b[i+2:]...)...)
	if _, _, err := decodeBatch(b); err == nil {
		t.Fatalf("a client address of %d bytes decoded", len(long))
	}
}

// FuzzDecodeLedgerBatch: a batch from the wire never panics the decoder,
// and what decodes re-encodes to the same events.
func FuzzDecodeLedgerBatch(f *testing.F) {
	b := testHeader(1, 1)
	f.Add(appendEvent(b, evLateDelete(1, 0, 90, 3)))
	f.Add(appendEvent(b, Event{Kind: KindReceive, QueueID: 1, MessageID: "x", At: sec(0), Deadline: sec(30)}))
	f.Add([]byte{batchVersion})
	f.Fuzz(func(t *testing.T, data []byte) {
		node, evs, err := decodeBatch(data)
		if err != nil {
			return
		}
		again := testHeader(0, 1)
		for _, ev := range evs {
			again = appendEvent(again, ev)
		}
		_, evs2, err := decodeBatch(again)
		if err != nil || len(evs2) != len(evs) {
			t.Fatalf("re-encoded batch of node %d: %d events, %v; want %d", node, len(evs2), err, len(evs))
		}
		for i := range evs {
			if !sameEvent(evs[i], evs2[i]) {
				t.Fatalf("event %d: %+v re-decoded as %+v", i, evs[i], evs2[i])
			}
		}
	})
}

// TestLedgerStopSaysWhatItDrops: batches the bus refuses are tried once
// more as the node stops, with what is still queued; those it refuses then
// are dropped, and the node says how many and what that means for the
// other nodes, which no later batch will tell of the gap. They used to be
// dropped without a word.
func TestLedgerStopSaysWhatItDrops(t *testing.T) {
	t.Parallel()
	for _, refused := range []bool{true, false} {
		t.Run(fmt.Sprint("refused=", refused), func(t *testing.T) {
			bus := &flakyBus{refuse: 1 << 30}
			var logs bytes.Buffer
			p := newLedgerPublisher(bus, 5, slog.New(slog.NewTextHandler(&logs, nil)))
			p.maxBatch = batchHeader + 40 // a batch an event
			p.Start(context.Background())
			for i := range 3 {
				p.queue(Event{Kind: KindSent, QueueID: 1, MessageID: fmt.Sprintf("m-%d", i), At: sec(i), N: 1})
			}
			poll.For(t, 30*time.Second, func() error {
				bus.mu.Lock()
				defer bus.mu.Unlock()
				if bus.refuse == 1<<30 {
					return errors.New("the batches not tried yet")
				}
				return nil
			})
			if !refused {
				bus.mu.Lock()
				bus.refuse = 0
				bus.mu.Unlock()
			}
			p.Stop() // Stop waits for the publisher: logs are written
			said := strings.Contains(logs.String(), "dropped as this node stops")
			if !refused {
				if said || bus.published() != 3 {
					t.Fatalf("the bus took the batches at stop: %d published, want 3; logs:\n%s", bus.published(), logs.String())
				}
				return
			}
			if !said || !strings.Contains(logs.String(), "batches=3") ||
				!strings.Contains(logs.String(), "could not publish lease-ledger events as this node stops") {
				t.Fatalf("3 batches refused at stop; logs do not say they were dropped:\n%s", logs.String())
			}
		})
	}
}
