package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
)

// batchNow is when the batch tests act: by then leaseFixture's first
// message's lease has expired, the second's first lease was superseded by
// a second, live one, and the third's lease is live.
var batchNow = at(20 * time.Second)

// leaseFixture sends three messages to a new queue and leases them so that,
// at batchNow, message 1 holds an expired lease (epoch 1, ended at 10s),
// message 2 a superseded one (epoch 1, ended at 3s) and a live one (epoch
// 2, until an hour), and message 3 a live one (epoch 1, until an hour).
// Message 9 never exists. It also returns a queue holding a leased
// message 4, which no batch on the first queue may touch.
func leaseFixture(t *testing.T, s baton.Store) (q, other *baton.Queue) {
	t.Helper()
	q = mustCreate(t, s, 1, "orders")
	var msgs []*baton.Message
	for n := 1; n <= 3; n++ {
		m := NewMessage(n, base)
		m.VisibleAt = at(time.Duration(n-1) * time.Second) // one at a time
		msgs = append(msgs, m)
	}
	MustSend(t, s, q.ID, msgs...)
	mustReceiveOne(t, s, q.ID, base, at(10*time.Second), MessageID(1))
	mustReceiveOne(t, s, q.ID, at(time.Second), at(3*time.Second), MessageID(2))
	mustReceiveOne(t, s, q.ID, at(2*time.Second), at(time.Hour), MessageID(3))
	mustReceiveOne(t, s, q.ID, at(3*time.Second), at(time.Hour), MessageID(2))

	other = mustCreate(t, s, 2, "other")
	MustSend(t, s, other.ID, NewMessage(4, base))
	mustReceiveOne(t, s, other.ID, base, at(time.Hour), MessageID(4))
	return q, other
}

// wantOutcome is what one batch entry should report: the result and, unless
// gone, the message's lease epoch and receive count before the entry.
type wantOutcome struct {
	result       baton.LeaseResult
	epoch        uint32
	receiveCount int
}

// checkOutcomes compares a batch's outcomes with want, entry by entry. A
// batch outcome's message need not carry the payload, so only its lease
// state is compared.
func checkOutcomes(t *testing.T, what string, got []baton.LeaseOutcome, want []wantOutcome) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d outcomes, want %d", what, len(got), len(want))
	}
	for i, w := range want {
		entry := fmt.Sprintf("%s, entry %d", what, i)
		checkResult(t, entry, got[i], w.result)
		if m := got[i].Message; m != nil && w.result != baton.LeaseGone {
			if m.Epoch != w.epoch || m.ReceiveCount != w.receiveCount {
				t.Errorf("%s: got epoch %d, receive count %d before the entry, want %d, %d",
					entry, m.Epoch, m.ReceiveCount, w.epoch, w.receiveCount)
			}
		}
	}
}

func mustDeleteBatch(t *testing.T, s baton.Store, p baton.MessageDeleteBatchParams) []baton.LeaseOutcome {
	t.Helper()
	out, err := s.MessageDeleteBatch(t.Context(), p)
	if err != nil {
		t.Fatalf("delete batch of %d at %v: %v", len(p.Entries), p.Now, err)
	}
	return out
}

func mustChangeVisibilityBatch(t *testing.T, s baton.Store, p baton.MessageChangeVisibilityBatchParams) []baton.LeaseOutcome {
	t.Helper()
	out, err := s.MessageChangeVisibilityBatch(t.Context(), p)
	if err != nil {
		t.Fatalf("change visibility batch of %d at %v: %v", len(p.Entries), p.Now, err)
	}
	return out
}

func ref(n int, epoch uint32) baton.LeaseRef {
	return baton.LeaseRef{MessageID: MessageID(n), Epoch: epoch}
}

// ---------------------------------------------------------------------------
// MessageDeleteBatch

func testMessageDeleteBatchMixed(t *testing.T, s baton.Store) {
	q, other := leaseFixture(t, s)
	out := mustDeleteBatch(t, s, baton.MessageDeleteBatchParams{QueueID: q.ID, Now: batchNow, Entries: []baton.LeaseRef{
		ref(3, 1), // live
		ref(2, 1), // superseded: deleted all the same
		ref(1, 1), // expired: deleted all the same
		ref(9, 1), // never sent
		ref(3, 1), // deleted by the first entry
		ref(4, 1), // the other queue's
	}})
	checkOutcomes(t, "delete batch", out, []wantOutcome{
		{baton.LeaseCurrent, 1, 1},
		{baton.LeaseLapsed, 2, 2},
		{baton.LeaseLapsed, 1, 1},
		{result: baton.LeaseGone},
		{result: baton.LeaseGone},
		{result: baton.LeaseGone},
	})
	checkStats(t, "stats after the batch", MustStats(t, s, q.ID, batchNow), baton.MessageStats{})
	checkIDs(t, "receive after every lease would have ended", mustReceive(t, s, q.ID, at(2*time.Hour), at(3*time.Hour), 10))
	checkStats(t, "stats of the other queue", MustStats(t, s, other.ID, batchNow),
		baton.MessageStats{InFlight: 1, NextVisibleAt: at(time.Hour)})
}

func testMessageDeleteBatchRequireLive(t *testing.T, s baton.Store) {
	q, _ := leaseFixture(t, s)
	out := mustDeleteBatch(t, s, baton.MessageDeleteBatchParams{QueueID: q.ID, Now: batchNow, RequireLive: true, Entries: []baton.LeaseRef{
		ref(3, 1), // live: deleted
		ref(2, 1), // superseded: kept
		ref(1, 1), // expired: kept
		ref(2, 2), // live: deleted
		ref(9, 1), // never sent
	}})
	checkOutcomes(t, "require-live delete batch", out, []wantOutcome{
		{baton.LeaseCurrent, 1, 1},
		{baton.LeaseLapsed, 2, 2},
		{baton.LeaseLapsed, 1, 1},
		{baton.LeaseCurrent, 2, 2},
		{result: baton.LeaseGone},
	})
	checkStats(t, "stats after the batch", MustStats(t, s, q.ID, batchNow), baton.MessageStats{Visible: 1})
	got := mustReceiveOne(t, s, q.ID, batchNow, at(time.Hour), MessageID(1))
	if got.Epoch != 2 {
		t.Errorf("receive after the batch: got epoch %d, want 2", got.Epoch)
	}
}

func testMessageDeleteBatchUnknownQueue(t *testing.T, s baton.Store) {
	_, err := s.MessageDeleteBatch(t.Context(), baton.MessageDeleteBatchParams{QueueID: QueueID(1), Now: base,
		Entries: []baton.LeaseRef{ref(1, 1)}})
	checkErr(t, "delete batch in an unknown queue", err, baton.ErrNotFound)
}

// ---------------------------------------------------------------------------
// MessageChangeVisibilityBatch

func testMessageChangeVisibilityBatchMixed(t *testing.T, s baton.Store) {
	q, other := leaseFixture(t, s)
	out := mustChangeVisibilityBatch(t, s, baton.MessageChangeVisibilityBatchParams{QueueID: q.ID, Now: batchNow, Entries: []baton.VisibilityChange{
		{MessageID: MessageID(3), Epoch: 1, VisibleAt: at(time.Minute)}, // live: moved
		{MessageID: MessageID(2), Epoch: 2, VisibleAt: batchNow},        // live: released
		{MessageID: MessageID(2), Epoch: 2, VisibleAt: at(time.Hour)},   // released by the entry before
		{MessageID: MessageID(2), Epoch: 1, VisibleAt: at(time.Hour)},   // superseded
		{MessageID: MessageID(1), Epoch: 1, VisibleAt: at(time.Hour)},   // expired
		{MessageID: MessageID(9), Epoch: 1, VisibleAt: at(time.Hour)},   // never sent
		{MessageID: MessageID(4), Epoch: 1, VisibleAt: batchNow},        // the other queue's
	}})
	checkOutcomes(t, "change visibility batch", out, []wantOutcome{
		{baton.LeaseCurrent, 1, 1},
		{baton.LeaseCurrent, 2, 2},
		{baton.LeaseLapsed, 2, 2},
		{baton.LeaseLapsed, 2, 2},
		{baton.LeaseLapsed, 1, 1},
		{result: baton.LeaseGone},
		{result: baton.LeaseGone},
	})
	checkStats(t, "stats after the batch", MustStats(t, s, q.ID, batchNow),
		baton.MessageStats{Visible: 2, InFlight: 1, NextVisibleAt: at(time.Minute)})
	checkIDs(t, "receive after the batch", mustReceive(t, s, q.ID, batchNow, at(time.Hour), 10), MessageID(1), MessageID(2))
	checkStats(t, "stats when the moved lease ends", MustStats(t, s, q.ID, at(time.Minute)),
		baton.MessageStats{Visible: 1, InFlight: 2, NextVisibleAt: at(time.Hour)})
	checkStats(t, "stats of the other queue", MustStats(t, s, other.ID, batchNow),
		baton.MessageStats{InFlight: 1, NextVisibleAt: at(time.Hour)})
}

// With AnyLease a superseded receipt changes the message's live lease; an
// expired one still changes nothing.
func testMessageChangeVisibilityBatchAnyLease(t *testing.T, s baton.Store) {
	q, _ := leaseFixture(t, s)
	out := mustChangeVisibilityBatch(t, s, baton.MessageChangeVisibilityBatchParams{QueueID: q.ID, Now: batchNow, AnyLease: true, Entries: []baton.VisibilityChange{
		{MessageID: MessageID(2), Epoch: 1, VisibleAt: at(time.Minute)}, // superseded: the live lease moved
		{MessageID: MessageID(1), Epoch: 1, VisibleAt: at(time.Hour)},   // expired, not in flight
		{MessageID: MessageID(3), Epoch: 1, VisibleAt: batchNow},        // live: released
		{MessageID: MessageID(9), Epoch: 1, VisibleAt: at(time.Hour)},   // never sent
	}})
	checkOutcomes(t, "change visibility batch", out, []wantOutcome{
		{baton.LeaseSuperseded, 2, 2},
		{baton.LeaseLapsed, 1, 1},
		{baton.LeaseCurrent, 1, 1},
		{result: baton.LeaseGone},
	})
	checkStats(t, "stats after the batch", MustStats(t, s, q.ID, batchNow),
		baton.MessageStats{Visible: 2, InFlight: 1, NextVisibleAt: at(time.Minute)})
	checkIDs(t, "receive after the batch", mustReceive(t, s, q.ID, batchNow, at(time.Hour), 10), MessageID(1), MessageID(3))
	checkIDs(t, "receive when the moved lease ends", mustReceive(t, s, q.ID, at(time.Minute), at(time.Hour), 10), MessageID(2))
}

// With Unreceive a change of a live lease takes back the receive that lease
// counted; a lease not live keeps its count, and a rerun of the batch takes
// nothing more.
func testMessageChangeVisibilityBatchUnreceive(t *testing.T, s baton.Store) {
	q, _ := leaseFixture(t, s)
	p := baton.MessageChangeVisibilityBatchParams{QueueID: q.ID, Now: batchNow, Unreceive: true, Entries: []baton.VisibilityChange{
		{MessageID: MessageID(3), Epoch: 1, VisibleAt: batchNow}, // live: released, its receive taken back
		{MessageID: MessageID(2), Epoch: 1, VisibleAt: batchNow}, // superseded: nothing
		{MessageID: MessageID(1), Epoch: 1, VisibleAt: batchNow}, // expired: nothing
	}}
	checkOutcomes(t, "change visibility batch", mustChangeVisibilityBatch(t, s, p), []wantOutcome{
		{baton.LeaseCurrent, 1, 1},
		{baton.LeaseLapsed, 2, 2},
		{baton.LeaseLapsed, 1, 1},
	})
	checkOutcomes(t, "the batch run again", mustChangeVisibilityBatch(t, s, p), []wantOutcome{
		{baton.LeaseLapsed, 1, 0},
		{baton.LeaseLapsed, 2, 2},
		{baton.LeaseLapsed, 1, 1},
	})
	counts := map[string]int{}
	for _, m := range mustReceive(t, s, q.ID, batchNow, at(time.Hour), 10) {
		counts[m.ID] = m.ReceiveCount
	}
	if counts[MessageID(3)] != 1 || counts[MessageID(1)] != 2 || len(counts) != 2 {
		t.Errorf("receive counts after the batch and a receive: %v; want %s 1 (its receive taken back), %s 2",
			counts, MessageID(3), MessageID(1))
	}
}

// A lease taken for no time (VisibilityTimeout 0) ends as it begins: a
// change with Unreceive at the instant before, the finest time every store
// keeps, finds it live and takes back its receive, once, at any instant's
// fraction of a microsecond.
func testMessageChangeVisibilityBatchUnreceiveNoTime(t *testing.T, s baton.Store) {
	q := mustCreate(t, s, 1, "orders")
	MustSend(t, s, q.ID, NewMessage(1, base))
	now := at(time.Second + 123456789) // not a whole microsecond
	mustReceiveOne(t, s, q.ID, now, now, MessageID(1))
	back := now.Add(-time.Microsecond)
	p := baton.MessageChangeVisibilityBatchParams{QueueID: q.ID, Now: back, Unreceive: true, Entries: []baton.VisibilityChange{
		{MessageID: MessageID(1), Epoch: 1, VisibleAt: back},
	}}
	checkOutcomes(t, "give back a lease for no time", mustChangeVisibilityBatch(t, s, p), []wantOutcome{{baton.LeaseCurrent, 1, 1}})
	checkOutcomes(t, "the give-back run again", mustChangeVisibilityBatch(t, s, p), []wantOutcome{{baton.LeaseLapsed, 1, 0}})
	got := mustReceive(t, s, q.ID, now, at(time.Hour), 10)
	if len(got) != 1 || got[0].ReceiveCount != 1 {
		t.Errorf("receive after the give-back: %d messages, first %+v; want message 1 received once", len(got), got)
	}
}

func testMessageChangeVisibilityBatchUnknownQueue(t *testing.T, s baton.Store) {
	_, err := s.MessageChangeVisibilityBatch(t.Context(), baton.MessageChangeVisibilityBatchParams{QueueID: QueueID(1), Now: base,
		Entries: []baton.VisibilityChange{{MessageID: MessageID(1), Epoch: 1, VisibleAt: at(lease)}}})
	checkErr(t, "change visibility batch in an unknown queue", err, baton.ErrNotFound)
}
