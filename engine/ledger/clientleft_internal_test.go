package ledger

import (
	"strings"
	"testing"

	"github.com/baton-sqs/baton"
)

// receiveLeft leases message id at ms as c in an answer that reached no
// client: c had left before it came.
func (d *doc) receiveLeft(c Client, at int, epoch uint32, id string) {
	d.l.applyLocal(Event{Kind: KindReceive, QueueID: applyQueue, MessageID: id, Epoch: epoch, At: ms(at),
		Deadline: ms(at + d.vis*1000), ReceiveCount: int(epoch), Client: c, ClientLeft: true})
}

// Leases of answers whose client had left lapse with no one holding them;
// the client polls again, seen alive: no handler failed, and the doctor
// says why the messages waited, and what to set. Below a finding's minimum
// it is a note.
func TestDoctorClientLeft(t *testing.T) {
	t.Parallel()
	d := newDoc(t, 30)
	d.quick(consumerA, 5, 0)
	for i, id := range []string{"left-1", "left-2", "left-3"} {
		d.receiveLeft(consumerA, 2000+20_000*i, 1, id) // each a long poll cut by the client
	}
	d.l.applyLocal(Event{Kind: KindSeen, QueueID: applyQueue, At: ms(95_000), Client: consumerA}) // it polls again
	r := d.report(95_000)
	wantFindings(t, r, DiagnosisClientLeft, DiagnosisClientLeft)
	f := r.Findings[0]
	for _, want := range []string{"3 leases handed out in answers to ReceiveMessage whose clients had left", "visibility timeout (30s here)",
		"left-1, left-2, left-3", "10.1.0.1 aws-sdk-go-v2/1.36.3"} {
		if !strings.Contains(f.Evidence, want) {
			t.Errorf("evidence lacks %q: %s", want, f.Evidence)
		}
	}
	if f.Leases != 3 || !strings.Contains(f.Fix, "HTTP read timeout above the longest WaitTimeSeconds") || f.LastEvent != "lapse" || !f.Last.Equal(ms(72_000)) {
		t.Errorf("finding %+v", f)
	}

	// One such lease among leases that completed: a note, no problem.
	d = newDoc(t, 30)
	d.quick(consumerA, 5, 0)
	d.receiveLeft(consumerA, 2000, 1, "left-1")
	d.l.applyLocal(Event{Kind: KindSeen, QueueID: applyQueue, At: ms(40_000), Client: consumerA})
	r = d.report(40_000)
	wantFindings(t, r, DiagnosisHealthy)
	if !strings.Contains(r.Advice, "1 lease handed out in answers to ReceiveMessage whose client had left") || strings.Contains(r.Advice, "lapsed and their holders") {
		t.Errorf("advice: %s", r.Advice)
	}
}

// A running lease whose answer reached no client is held by no one: no
// hung lease, however long it runs unrenewed, but no healthy queue either
// while its message waits (an hour here) for no one.
func TestDoctorClientLeftNotHeld(t *testing.T) {
	t.Parallel()
	d := newDoc(t, 3600)
	d.quick(consumerA, 5, 0) // p99 100 ms
	d.receiveLeft(consumerA, 2000, 1, "left")
	r := d.report(60_000)
	wantFindings(t, r, DiagnosisClientLeft, DiagnosisClientLeft)
	if f := r.Findings[0]; len(f.Held) != 1 || f.Held[0].MessageID != "left" ||
		!strings.Contains(f.Evidence, "1 running lease handed out in answers to ReceiveMessage whose client had left before getting the answer is held by no one (messages left") {
		t.Errorf("the running lease no one holds: held %v, evidence %q", f.Held, f.Evidence)
	}
	var m QueueMetrics
	d.l.Metrics(applyQueue, ms(60_000), &m)
	if m.HungLeases != 0 {
		t.Errorf("%d hung leases, want 0", m.HungLeases)
	}
}

// A late delete of such a lease (by a receiver that had the message again
// and its receipt: the client that left never had it) is read as any
// late completion is.
func TestDoctorClientLeftLateDelete(t *testing.T) {
	t.Parallel()
	d := newDoc(t, 30)
	d.quick(consumerA, 5, 0)
	d.receiveLeft(consumerA, 2000, 1, "left")
	d.l.applyLocal(Event{Kind: KindDelete, QueueID: applyQueue, MessageID: "left", Epoch: 1, At: ms(40_000), LeasedAt: ms(2000),
		Result: baton.LeaseLapsed, StoreEpoch: 1, Removed: true, Client: consumerB})
	r := d.report(40_000)
	if kinds := findingKinds(r); len(kinds) > 0 && kinds[0] == DiagnosisClientLeft || strings.Contains(r.Advice, "had left") {
		t.Errorf("a lease completed late read as one no one held: %s", r.Advice)
	}
	if r.SinceStart.Late != 1 {
		t.Errorf("late completions %d, want 1", r.SinceStart.Late)
	}
}

// A FIFO receive retried with its ReceiveRequestAttemptId by a client that
// gave up on the first (what the attempt id is for) hands the same leases
// to that client: they are held again, and their lapse is a holder's.
func TestDoctorClientLeftReplayedToClient(t *testing.T) {
	t.Parallel()
	d := newDoc(t, 30)
	d.quick(consumerA, 5, 0)
	for _, id := range []string{"m1", "m2", "m3"} {
		d.receiveLeft(consumerA, 2000, 1, id)
		d.l.applyLocal(Event{Kind: KindChange, QueueID: applyQueue, MessageID: id, Epoch: 1, At: ms(3000), Deadline: ms(33_000),
			LeasedAt: ms(2000), Result: baton.LeaseCurrent, StoreEpoch: 1, Replay: true, Client: consumerA})
	}
	d.l.applyLocal(Event{Kind: KindSeen, QueueID: applyQueue, At: ms(60_000), Client: consumerA})
	wantFindings(t, d.report(60_000), DiagnosisHandlerFailing, DiagnosisHandlerFailing)
}

// A cut receive of several messages, again and again: no batch failed
// whole, since no one had the batch.
func TestDoctorClientLeftBatches(t *testing.T) {
	t.Parallel()
	d := newDoc(t, 30)
	d.quick(consumerA, 5, 0)
	ids := []string{"m1", "m2", "m3"}
	for round := range 2 {
		at := 2000 + 40_000*round
		for _, id := range ids {
			d.l.applyLocal(Event{Kind: KindReceive, QueueID: applyQueue, MessageID: id, Epoch: uint32(round + 1), At: ms(at),
				Deadline: ms(at + 30_000), ReceiveCount: round + 1, Client: consumerA, Batch: uint64(100 + round), N: len(ids), ClientLeft: true})
		}
	}
	d.l.applyLocal(Event{Kind: KindSeen, QueueID: applyQueue, At: ms(80_000), Client: consumerA})
	wantFindings(t, d.report(80_000), DiagnosisClientLeft, DiagnosisClientLeft)
}
