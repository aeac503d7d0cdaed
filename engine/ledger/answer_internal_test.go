package ledger

import (
	"context"
	"testing"

	"github.com/baton-sqs/baton"
)

// Leases recorded as their client's whose answer was then lost (its write
// failing as the client left): told so after the fact, they lapse held by
// no one, as those of an answer whose client had left before it came, and
// the client polling again makes them no failing handler's.
func TestAnswerLostAfterRecorded(t *testing.T) {
	t.Parallel()
	d := newDoc(t, 30)
	d.quick(consumerA, 5, 0)
	ctx, a := WithAnswer(context.Background())
	if AnswerOf(ctx) != a {
		t.Fatal("the context carries no answer")
	}
	for i, id := range []string{"lost-1", "lost-2", "lost-3"} {
		ev := Event{Kind: KindReceive, QueueID: applyQueue, MessageID: id, Epoch: 1, At: ms(2000), Deadline: ms(32_000),
			ReceiveCount: 1, Client: consumerA, Batch: 1, N: 3}
		d.l.Record(ev)
		AnswerOf(ctx).Hand(ev)
		if a.Leases() != i+1 {
			t.Fatalf("the answer holds %d leases, want %d", a.Leases(), i+1)
		}
	}
	if n := d.l.AnswerLost(a); n != 3 {
		t.Fatalf("AnswerLost told %d leases, want 3", n)
	}
	if n := d.l.AnswerLost(a); n != 0 {
		t.Fatalf("AnswerLost again told %d leases, want none", n)
	}
	d.l.Record(Event{Kind: KindSeen, QueueID: applyQueue, At: ms(95_000), Client: consumerA}) // it polls again
	r := d.report(95_000)
	wantFindings(t, r, DiagnosisClientLeft, DiagnosisClientLeft)
	if r.Findings[0].Leases != 3 || r.Window.Received != 8 {
		t.Errorf("finding on %d leases, %d received; want 3 and 8 (the receive told again counted once)", r.Findings[0].Leases, r.Window.Received)
	}
}

// A FIFO receive retried with its ReceiveRequestAttemptId, whose answer is
// lost as it is written: the lease is held by no one. Told after its lease
// lapsed (an answer written for long to a slow client), the retry told
// again counts no second lapse.
func TestAnswerLostOfReplay(t *testing.T) {
	t.Parallel()
	d := newDoc(t, 30)
	d.quick(consumerA, 5, 0)
	ctx, a := WithAnswer(context.Background())
	for _, id := range []string{"fifo-1", "fifo-2", "fifo-3"} {
		d.receive(consumerA, 2000, 1, id)
		ev := Event{Kind: KindChange, QueueID: applyQueue, MessageID: id, Epoch: 1, At: ms(5000), Deadline: ms(35_000),
			LeasedAt: ms(2000), Result: baton.LeaseCurrent, StoreEpoch: 1, Replay: true, Client: consumerA}
		d.l.Record(ev)
		AnswerOf(ctx).Hand(ev)
	}
	d.l.Record(Event{Kind: KindSeen, QueueID: applyQueue, At: ms(40_000), Client: consumerA}) // the leases lapsed
	d.l.AnswerLost(a)
	d.l.Record(Event{Kind: KindSeen, QueueID: applyQueue, At: ms(95_000), Client: consumerA})
	r := d.report(95_000)
	wantFindings(t, r, DiagnosisClientLeft, DiagnosisClientLeft)
	if r.Findings[0].Leases != 3 || r.Window.Expired != 3 {
		t.Errorf("finding on %d leases, %d lapsed; want 3 and 3", r.Findings[0].Leases, r.Window.Expired)
	}
}

// A running lease whose answer was lost after it was recorded is held by
// no one: held far beyond the p99 it is named client-left while it runs,
// not a hung lease of its client (held-unrenewed).
func TestAnswerLostRunning(t *testing.T) {
	t.Parallel()
	d := newDoc(t, 3600)
	d.quick(consumerA, 5, 0) // p99 100 ms
	_, a := WithAnswer(context.Background())
	ev := Event{Kind: KindReceive, QueueID: applyQueue, MessageID: "lost", Epoch: 1, At: ms(2000), Deadline: ms(3_602_000),
		ReceiveCount: 1, Client: consumerA}
	d.l.Record(ev)
	a.Hand(ev)
	d.l.AnswerLost(a)
	r := d.report(60_000)
	wantFindings(t, r, DiagnosisClientLeft, DiagnosisClientLeft)
	if h := r.Findings[0].Held; len(h) != 1 || h[0].MessageID != "lost" {
		t.Errorf("held %+v; want the running lease no one holds", h)
	}
}
