package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/testutil/poll"
	"github.com/baton-sqs/baton/store/memstore"
)

// loopBus is a memstore handle whose LedgerBus delivers every batch to
// every subscriber, the publisher included, as PostgreSQL's NOTIFY does.
type loopBus struct {
	*memstore.Shared
	mu        sync.Mutex
	subs      []func([]byte)
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
			f(batch)
		}
	}
	return nil
}

func (b *loopBus) SubscribeLedger(f func([]byte)) {
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

// TestLedgerOwnEchoIgnored: an engine drops its own batches when the bus
// hands them back, and applies another node's.
func TestLedgerOwnEchoIgnored(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bus := &loopBus{Shared: memstore.NewCluster().Open()}
	clock := baton.NewFakeClock(applyBase)
	e, err := New(Config{Store: bus, Clock: clock, Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	ref := QueueRef{Account: "000000000000", Name: "echo"}
	q, err := e.CreateQueue(ctx, CreateQueueParams{Account: ref.Account, Name: ref.Name})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.SendMessage(ctx, ref, SendParams{Body: "x"}); err != nil {
		t.Fatal(err)
	}
	got, err := e.ReceiveMessage(ctx, ref, ReceiveParams{})
	if err != nil || len(got) != 1 {
		t.Fatalf("receive: %v, %v", got, err)
	}
	if err := e.DeleteMessage(ctx, ref, got[0].ReceiptHandle); err != nil {
		t.Fatal(err)
	}
	poll.For(t, 5*time.Second, func() error {
		if n := bus.published(); n == 0 {
			return errors.New("nothing published yet")
		}
		return nil
	})
	report := func() LeaseStats {
		r, err := e.LeaseReport(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		return r.SinceStart
	}
	if s := report(); s.Sent != 1 || s.Received != 1 || s.Completed != 1 {
		t.Fatalf("after its own echo: sent %d received %d completed %d, want 1 1 1", s.Sent, s.Received, s.Completed)
	}
	// The same batch from another node is applied.
	bus.mu.Lock()
	batch := append([]byte(nil), bus.batches[0]...)
	bus.mu.Unlock()
	batch[1] ^= 0xff // another node id
	e.applyBatch(batch)
	if s := report(); s.Sent != 2 {
		t.Errorf("another node's send: sent %d, want 2", s.Sent)
	}
	if own := e.ledger.owned(q.ID, clock.Now()); own.sent != 1 || own.received != 1 || own.completed != 1 {
		t.Errorf("own counts sent %d received %d completed %d, want 1 1 1", own.sent, own.received, own.completed)
	}
}

// TestLedgerBatchesUnderLimit: the publisher cuts batches before they pass
// the limit, loses no event and keeps their order.
func TestLedgerBatchesUnderLimit(t *testing.T) {
	t.Parallel()
	bus := &loopBus{Shared: memstore.NewCluster().Open()}
	p := newLedgerPublisher(bus, 42, quietLog)
	p.every = time.Hour // only size cuts a batch until Stop
	p.Start(context.Background())
	const n = 1000
	agent := strings.Repeat("a", 500) // longer than an event keeps
	for i := range n {
		p.queue(ledgerEvent{
			kind: kindReceive, queueID: 3, messageID: fmt.Sprintf("m-%d", i), epoch: uint32(i), at: sec(i),
			deadline: sec(i + 30), receiveCount: 1, client: Client{Addr: "10.0.0.1:5000", UserAgent: agent},
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
			if want := fmt.Sprintf("m-%d", next); ev.messageID != want {
				t.Fatalf("event %d is %s, want %s", next, ev.messageID, want)
			}
			if len(ev.client.UserAgent) != maxEventClient {
				t.Fatalf("user agent of %d bytes, want it cut to %d", len(ev.client.UserAgent), maxEventClient)
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
	bus := &slowBus{loopBus: loopBus{Shared: memstore.NewCluster().Open()}, entered: make(chan struct{}), release: make(chan struct{})}
	p := newLedgerPublisher(bus, 7, quietLog)
	p.every = time.Millisecond
	p.Start(context.Background())
	ev := func(i int) ledgerEvent {
		return ledgerEvent{kind: kindReceive, queueID: 1, messageID: fmt.Sprintf("m-%d", i), epoch: 1, at: sec(i),
			client: Client{UserAgent: strings.Repeat("u", maxEventClient)}}
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
			if want := fmt.Sprintf("m-%d", next); e.messageID != want {
				t.Fatalf("event %d is %s, want %s", next, e.messageID, want)
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
	bus := &loopBus{Shared: memstore.NewCluster().Open()}
	p := newLedgerPublisher(bus, 1, quietLog)
	p.Start(context.Background())
	t.Cleanup(p.Stop)
	p.queue(ledgerEvent{kind: kindSent, queueID: 1, at: sec(0), n: 1})
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
	evs := []ledgerEvent{
		{kind: kindSent, queueID: 9, at: sec(1).Add(123), n: 10},
		evReceive(1, 0, 30),
		{kind: kindReceive, queueID: 1 << 40, messageID: "not-a-uuid", epoch: 2, at: sec(5), deadline: sec(5), receiveCount: 2, sentAt: sec(-50), client: client},
		evRenew(3, 10, 20, 80),
		evDelete(4, 0, 9),
		evLateDelete(1, 0, 90, 3),
		{kind: kindChange, queueID: 2, messageID: applyMsg, epoch: 1, at: sec(40), deadline: sec(70), leasedAt: sec(0).Add(5 * time.Millisecond),
			result: baton.LeaseLapsed, duplicate: true, client: client},
		{kind: kindChange, queueID: 2, messageID: applyMsg, epoch: 2, at: sec(41), deadline: sec(45), leasedAt: sec(35),
			result: baton.LeaseCurrent, storeEpoch: 2, shortened: true},
		{kind: kindDeadLetter, queueID: 2, messageID: applyMsg, epoch: 6, at: sec(3), receiveCount: 5},
		{kind: kindForget, queueID: 2, at: sec(4)},
		{kind: kindPurge, queueID: 2, at: sec(5)},
		{kind: kindRetention, queueID: 2, at: sec(70), sentAt: sec(10)},
	}
	b := []byte{batchVersion, 0, 0, 0, 0, 0, 0, 0, 7}
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

func sameEvent(a, b ledgerEvent) bool {
	return a.kind == b.kind && a.queueID == b.queueID && a.messageID == b.messageID && a.epoch == b.epoch &&
		a.at.Equal(b.at) && a.deadline.Equal(b.deadline) && a.leasedAt.Equal(b.leasedAt) && a.sentAt.Equal(b.sentAt) &&
		a.receiveCount == b.receiveCount && a.n == b.n && a.result == b.result && a.storeEpoch == b.storeEpoch &&
		a.duplicate == b.duplicate && a.removed == b.removed && a.shortened == b.shortened && a.client == b.client
}

// FuzzDecodeLedgerBatch: a batch from the wire never panics the decoder,
// and what decodes re-encodes to the same events.
func FuzzDecodeLedgerBatch(f *testing.F) {
	b := []byte{batchVersion, 0, 0, 0, 0, 0, 0, 0, 1}
	f.Add(appendEvent(b, evLateDelete(1, 0, 90, 3)))
	f.Add(appendEvent(b, ledgerEvent{kind: kindReceive, queueID: 1, messageID: "x", at: sec(0), deadline: sec(30)}))
	f.Add([]byte{batchVersion})
	f.Fuzz(func(t *testing.T, data []byte) {
		node, evs, err := decodeBatch(data)
		if err != nil {
			return
		}
		again := []byte{batchVersion, 0, 0, 0, 0, 0, 0, 0, 0}
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
