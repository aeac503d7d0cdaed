package ledger

import (
	"fmt"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
)

// BenchmarkLifecycle applies what the engine records for each message of a
// busy queue: a receive, then a delete within the lease. Past the bound of
// tracked messages each new one makes the ledger forget the oldest, as on
// a server that has run a while.
func BenchmarkLifecycle(b *testing.B) {
	l := New(Config{})
	defer l.Close()
	const names = 1 << 16
	ids := make([]string, names)
	for i := range ids {
		ids[i] = fmt.Sprintf("5f1c1a52-0a8e-4bb4-9d1e-%012d", i)
	}
	at := applyBase
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		// Each name comes back as a new message after names others, long
		// after the ledger forgot it.
		id := ids[i%names]
		epoch := uint32(1 + i/names)
		at = at.Add(time.Millisecond)
		l.applyLocal(Event{Kind: KindReceive, QueueID: applyQueue, MessageID: id, Epoch: epoch, At: at,
			Deadline: at.Add(30 * time.Second), ReceiveCount: 1, SentAt: at})
		l.applyLocal(Event{Kind: KindDelete, QueueID: applyQueue, MessageID: id, Epoch: epoch, At: at.Add(time.Millisecond),
			LeasedAt: at, Result: baton.LeaseCurrent, StoreEpoch: epoch, Removed: true})
	}
}

// BenchmarkOwnEcho is what a node pays for its own batch of events when
// the bus (PostgreSQL's NOTIFY) hands it back, as it does every batch: a
// full batch of receives and deletes.
func BenchmarkOwnEcho(b *testing.B) {
	l := New(Config{})
	defer l.Close()
	p := newLedgerPublisher(nil, l.node, l.log)
	batch := p.header()
	for i := 0; ; i++ {
		at := applyBase.Add(time.Duration(i) * time.Millisecond)
		ev := Event{Kind: KindReceive, QueueID: applyQueue, MessageID: fmt.Sprintf("5f1c1a52-0a8e-4bb4-9d1e-%012d", i), Epoch: 1, At: at,
			Deadline: at.Add(30 * time.Second), ReceiveCount: 1, SentAt: at}
		enc := appendEvent(nil, ev)
		if len(batch)+len(enc) > p.maxBatch {
			break
		}
		batch = append(batch, enc...)
	}
	b.ReportAllocs()
	for b.Loop() {
		l.applyBatch(batch)
	}
}
