package ledger

import (
	"strconv"
	"testing"
	"time"
)

// The ledger bounds what it keeps over all queues, not only per queue: a
// client making queue after queue and cycling messages through each grew
// it by about 280 MB a queue. The least recently active messages of any
// queue go first, and the event count follows every history.
func TestLedgerBoundedOverQueues(t *testing.T) {
	t.Parallel()
	l := Ledger{maxMessages: 500, maxEvents: 2000}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	check := func(when string) {
		t.Helper()
		n, evs := 0, 0
		for _, ql := range l.queues {
			n += len(ql.messages)
			for _, tm := range ql.messages {
				evs += len(tm.history)
			}
		}
		if n != l.lru.n || evs != l.events {
			t.Fatalf("%s: %d messages and %d events kept, counted %d and %d", when, n, evs, l.lru.n, l.events)
		}
		if n > 500 || evs > 2000 {
			t.Fatalf("%s: %d messages and %d events kept, want at most 500 and 2000", when, n, evs)
		}
	}
	at := t0
	for q := uint64(1); q <= 20; q++ {
		for m := range 100 {
			for r := uint32(1); r <= 8; r++ { // receive, then lapse: two events a round
				at = at.Add(time.Second)
				l.applyLocal(Event{Kind: KindReceive, QueueID: q, MessageID: "m" + strconv.Itoa(m), Epoch: r, At: at, Deadline: at.Add(time.Millisecond)})
			}
		}
		check("queue " + strconv.Itoa(int(q)))
	}
	if _, ok := l.history(20, "m99", at); !ok {
		t.Error("the most recently active message forgotten")
	}
	if _, ok := l.history(1, "m0", at); ok {
		t.Error("the least recently active message kept")
	}
	l.applyLocal(Event{Kind: KindForget, QueueID: 20, At: at})
	check("after a queue is deleted")
}
