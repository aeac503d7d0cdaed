package ledger

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
)

// Tests of the ledger's apply path with events as several nodes make them,
// in the orders a shared store's notifications may bring them.

var applyBase = time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)

const (
	applyQueue = 7
	applyMsg   = "5f1c1a52-0a8e-4bb4-9d1e-3c2f6a7b8c9d"
)

func sec(s int) time.Time { return applyBase.Add(time.Duration(s) * time.Second) }

func evReceive(epoch uint32, s, vis int) Event {
	return Event{Kind: KindReceive, QueueID: applyQueue, MessageID: applyMsg, Epoch: epoch, At: sec(s),
		Deadline: sec(s + vis), ReceiveCount: int(epoch)}
}

func evRenew(epoch uint32, leased, s, until int) Event {
	return Event{Kind: KindChange, QueueID: applyQueue, MessageID: applyMsg, Epoch: epoch, At: sec(s),
		Deadline: sec(until), LeasedAt: sec(leased), Result: baton.LeaseCurrent, StoreEpoch: epoch}
}

func evDelete(epoch uint32, leased, s int) Event {
	return Event{Kind: KindDelete, QueueID: applyQueue, MessageID: applyMsg, Epoch: epoch, At: sec(s),
		LeasedAt: sec(leased), Result: baton.LeaseCurrent, StoreEpoch: epoch, Removed: true}
}

// evLateDelete is a late delete on a standard queue, which removes the
// message from whoever holds it now (lease storeEpoch).
func evLateDelete(epoch uint32, leased, s int, storeEpoch uint32) Event {
	return Event{Kind: KindDelete, QueueID: applyQueue, MessageID: applyMsg, Epoch: epoch, At: sec(s),
		LeasedAt: sec(leased), Result: baton.LeaseLapsed, StoreEpoch: storeEpoch, Removed: true,
		duplicate: storeEpoch > epoch}
}

// applyAll applies events, the local ones (marked in local) as this node's.
func applyAll(l *Ledger, evs []Event, local ...int) {
	for i, ev := range evs {
		if slices.Contains(local, i) {
			l.applyLocal(ev)
		} else {
			l.apply(ev)
		}
	}
}

func kinds(l *Ledger, now time.Time) []string {
	h, _ := l.history(applyQueue, applyMsg, now)
	var out []string
	for _, ev := range h {
		out = append(out, fmt.Sprintf("%s@%d#%d", ev.Kind, int(ev.At.Sub(applyBase)/time.Second), ev.Epoch))
	}
	return out
}

type tally struct {
	received, completed, expired, late, duplicates, redeliveries, lapsedWorking, renewals uint64
	active                                                                                int
}

func tallyOf(l *Ledger, now time.Time) tally {
	c, _ := l.snapshot(applyQueue, now)
	l.mu.Lock()
	defer l.mu.Unlock()
	return tally{c.received, c.completed, c.expired, c.late, c.duplicates, c.redeliveries, c.lapsedWorking, c.renewals,
		len(l.queue(applyQueue).active)}
}

// TestLedgerApplyReordered applies the events of one lease story in the
// order they happened and in orders replication may deliver them: every
// order must end with the same counts and the same history.
func TestLedgerApplyReordered(t *testing.T) {
	t.Parallel()
	// The classic incident: a 30 s lease lapses while its holder works; the
	// message goes to a second and a third receiver, then the first
	// holder's delete arrives, late, and removes it from the third.
	incident := []Event{
		evReceive(1, 0, 30),
		evReceive(2, 31, 30),
		evReceive(3, 62, 30),
		evLateDelete(1, 0, 90, 3),
	}
	incidentWant := tally{received: 3, completed: 1, expired: 2, late: 1, duplicates: 1, redeliveries: 2, lapsedWorking: 1}
	incidentHistory := []string{"receive@0#1", "expire@30#1", "receive@31#2", "expire@61#2", "receive@62#3", "late-delete@90#1", "removed@90#3"}
	// A lease received on one node and renewed through another.
	renewed := []Event{evReceive(1, 0, 30), evRenew(1, 0, 20, 60), evDelete(1, 0, 50)}
	renewedWant := tally{received: 1, completed: 1, renewals: 1}
	renewedHistory := []string{"receive@0#1", "renew@20#1", "delete@50#1"}

	tests := []struct {
		name    string
		events  []Event
		order   []int
		local   []int // indexes into order applied as this node's
		queryAt []int // seconds at which a report is read between events (-1: none)
		want    tally
		history []string
	}{
		{"incident in order", incident, []int{0, 1, 2, 3}, []int{0}, []int{-1, -1, -1, -1}, incidentWant, incidentHistory},
		// The first receive arrives last, after the node already saw the
		// redeliveries and the late delete that prove its lapse.
		{"incident first receive last", incident, []int{1, 2, 3, 0}, []int{3}, []int{-1, -1, -1, -1}, incidentWant, incidentHistory},
		// The third receive arrives after the late delete that removed its
		// message: it must not start a lease that later seems to lapse.
		{"incident removed lease arrives late", incident, []int{0, 1, 3, 2}, []int{2}, []int{40, 70, 95, 200}, incidentWant, incidentHistory},
		// The renewal made through another node arrives after this node
		// read a report past the original deadline: no expiry may remain.
		{"renewal arrives after the deadline", renewed, []int{0, 1, 2}, []int{0}, []int{35, 40, 100}, renewedWant, renewedHistory},
		{"renewal arrives before its receive", renewed, []int{1, 0, 2}, []int{1}, []int{-1, 45, 100}, renewedWant, renewedHistory},
		// A remote receive arriving after the local delete of its lease
		// must not start a lease that then lapses.
		{"delete before its receive", renewed, []int{2, 1, 0}, []int{0}, []int{-1, -1, 100}, renewedWant, renewedHistory},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var l Ledger
			for i, j := range tt.order {
				if slices.Contains(tt.local, i) {
					l.applyLocal(tt.events[j])
				} else {
					l.apply(tt.events[j])
				}
				if s := tt.queryAt[i]; s >= 0 {
					tallyOf(&l, sec(s))
				}
			}
			end := sec(1000)
			if got := tallyOf(&l, end); got != tt.want {
				t.Errorf("counts = %+v, want %+v", got, tt.want)
			}
			if got := kinds(&l, end); !slices.Equal(got, tt.history) {
				t.Errorf("history = %v, want %v", got, tt.history)
			}
			if tt.want.late > 0 {
				if rl := l.queue(applyQueue).recentLate; len(rl) != 1 || rl[0].Late != time.Minute {
					t.Errorf("late completions %+v, want one a minute late", rl)
				}
			}
		})
	}
}

// TestLedgerRetractedExpiryNeverNegative: an expiry taken back after its
// minute left the window is taken back from the totals only, and nothing
// goes below zero.
func TestLedgerRetractedExpiryNeverNegative(t *testing.T) {
	t.Parallel()
	var l Ledger
	l.applyLocal(evReceive(1, 0, 30))
	if got := tallyOf(&l, sec(31*60)); got.expired != 1 {
		t.Fatalf("expired = %d before the renewal arrives, want 1", got.expired)
	}
	l.apply(evRenew(1, 0, 29, 40*60)) // renewed in time through another node
	total, window := l.snapshot(applyQueue, sec(31*60))
	if total.expired != 0 || window.expired != 0 {
		t.Errorf("expired = %d since start, %d in the window, want 0 and 0", total.expired, window.expired)
	}
	if own := l.owned(applyQueue, sec(31*60)); own.expired != 0 {
		t.Errorf("own expired = %d, want 0", own.expired)
	}
	// The same renewal applied twice takes nothing back twice.
	l.apply(evRenew(1, 0, 29, 40*60))
	if total, _ := l.snapshot(applyQueue, sec(31*60)); total.expired != 0 || total.renewals != 2 {
		t.Errorf("after a repeated renewal: expired %d, renewals %d; want 0 and 2", total.expired, total.renewals)
	}
}

// TestLedgerOwnCounts: own counts what this node originated, including the
// expiries of the leases it handed out, and nothing of the others'.
func TestLedgerOwnCounts(t *testing.T) {
	t.Parallel()
	var node1, node2 Ledger
	// Node 1 hands out lease 1; node 2 hands out lease 2 after it lapses
	// and takes the late delete.
	evs := []Event{evReceive(1, 0, 30), evReceive(2, 31, 30), evLateDelete(1, 0, 50, 2)}
	applyAll(&node1, evs, 0)
	applyAll(&node2, evs, 1, 2)
	now := sec(55)
	o1, o2 := node1.owned(applyQueue, now), node2.owned(applyQueue, now)
	if o1.received != 1 || o1.expired != 1 || o1.late != 0 || o1.completed != 0 {
		t.Errorf("node 1 owns received %d expired %d late %d completed %d, want 1 1 0 0", o1.received, o1.expired, o1.late, o1.completed)
	}
	if o2.received != 1 || o2.expired != 0 || o2.late != 1 || o2.completed != 1 {
		t.Errorf("node 2 owns received %d expired %d late %d completed %d, want 1 0 1 1", o2.received, o2.expired, o2.late, o2.completed)
	}
	t1, _ := node1.snapshot(applyQueue, now)
	t2, _ := node2.snapshot(applyQueue, now)
	if t1.received != 2 || t2.received != 2 || t1.expired != 1 || t2.expired != 1 || t1.late != 1 || t2.late != 1 {
		t.Errorf("cluster views differ: node 1 %+v, node 2 %+v", t1, t2)
	}
}

// TestLedgerOwnExpiredNeverDecreases: own.expired is exported as the
// Prometheus counter baton_lease_expired_total, which must never go down.
// A scrape that read an expiry this node inferred keeps it when a renewal
// made through another node arrives later and takes the expiry back.
func TestLedgerOwnExpiredNeverDecreases(t *testing.T) {
	t.Parallel()
	var l Ledger
	l.applyLocal(evReceive(1, 0, 30))
	before := l.owned(applyQueue, sec(31)).expired // a scrape past the deadline
	l.apply(evRenew(1, 0, 29, 60))                 // renewed in time through another node
	after := l.owned(applyQueue, sec(32))
	if after.expired < before {
		t.Errorf("own expired went from %d to %d between two scrapes, want it never to decrease", before, after.expired)
	}
	// The cluster's view still takes the inference back.
	if total, _ := l.snapshot(applyQueue, sec(32)); total.expired != 0 {
		t.Errorf("expired since start = %d, want 0", total.expired)
	}
}

// TestLedgerRemovedLeaseDeletedInTime: the third receiver of the classic
// incident, whose message the first holder's late delete removed, deletes
// it before its own deadline: that is no second late completion, nor a
// second completion: the message was deleted once, and the third
// receiver's delete found it already deleted.
func TestLedgerRemovedLeaseDeletedInTime(t *testing.T) {
	t.Parallel()
	var l Ledger
	gone := evDelete(3, 62, 91)
	gone.Result, gone.StoreEpoch = baton.LeaseGone, 0
	applyAll(&l, []Event{evReceive(1, 0, 30), evReceive(2, 31, 30), evReceive(3, 62, 30), evLateDelete(1, 0, 90, 3), gone}, 4)
	want := tally{received: 3, completed: 1, expired: 2, late: 1, duplicates: 1, redeliveries: 2, lapsedWorking: 1}
	if got := tallyOf(&l, sec(1000)); got != want {
		t.Errorf("counts = %+v, want %+v", got, want)
	}
	if c, _ := l.snapshot(applyQueue, sec(1000)); c.alreadyDeleted != 1 {
		t.Errorf("%d deletes of a message already deleted, want the third receiver's", c.alreadyDeleted)
	}
	for _, lc := range l.queue(applyQueue).recentLate {
		if lc.Late < 0 {
			t.Errorf("late completion %+v came before its deadline", lc)
		}
	}
}

// TestLedgerReleaseBeforeMoveReordered: a release at once and the
// dead-letter move at the next receive, made on two nodes, count once as
// a lease given back before the move, whichever arrives first.
func TestLedgerReleaseBeforeMoveReordered(t *testing.T) {
	t.Parallel()
	release := Event{Kind: KindChange, QueueID: applyQueue, MessageID: applyMsg, Epoch: 1, At: sec(1),
		Deadline: sec(1), LeasedAt: sec(0), Result: baton.LeaseCurrent, StoreEpoch: 1}
	moved := Event{Kind: KindDeadLetter, QueueID: applyQueue, MessageID: applyMsg, Epoch: 2, At: sec(2), ReceiveCount: 1}
	for _, order := range [][]Event{
		{evReceive(1, 0, 30), release, moved},
		{evReceive(1, 0, 30), moved, release},
		{moved, release, evReceive(1, 0, 30)},
	} {
		l := New(Config{Started: applyBase})
		applyAll(l, order)
		c, _ := l.snapshot(applyQueue, sec(3))
		if c.deadAfterRelease != 1 {
			t.Errorf("order %v: %d moved after a release, want 1", order, c.deadAfterRelease)
		}
	}
}
