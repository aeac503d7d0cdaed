package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/engine/ledger"
)

// lateDelete is the message's late-delete event, and its entry among the
// queue's late completions.
func lateDelete(t *testing.T, in *incident, id string) (ledger.LeaseEvent, ledger.LateCompletion) {
	t.Helper()
	events, _, err := in.e.MessageHistory(context.Background(), in.ref, id)
	if err != nil {
		t.Fatal(err)
	}
	var ev ledger.LeaseEvent
	for _, e := range events {
		if e.Kind == ledger.EventLateDelete {
			ev = e
		}
	}
	lcs, err := in.e.RecentLateCompletions(context.Background(), in.ref)
	if err != nil {
		t.Fatal(err)
	}
	for _, lc := range lcs {
		if lc.MessageID == id && lc.Kind == ledger.EventLateDelete {
			return ev, lc
		}
	}
	t.Fatalf("no late delete of %s among %+v", id, lcs)
	return ev, ledger.LateCompletion{}
}

// A late delete a FIFO queue refused deleted nothing: the message's
// history says it was refused (the message runs again), beside the late
// delete it was.
func TestHistoryFifoRefusedLateDelete(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "refused.fifo", map[string]string{"VisibilityTimeout": "30", "FifoQueue": "true", "ContentBasedDeduplication": "true"})
	if _, err := in.e.SendMessage(context.Background(), in.ref, engine.SendParams{Body: "x", GroupID: "g"}); err != nil {
		t.Fatal(err)
	}
	id, h := in.receiveOne()
	in.at(40)
	if err := in.e.DeleteMessage(context.Background(), in.ref, h); err == nil {
		t.Fatal("a FIFO queue deleted by the receipt of a lapsed lease")
	}
	ev, lc := lateDelete(t, in, id)
	if !ev.Refused || ev.AlreadyDeleted || !lc.Refused {
		t.Errorf("late delete %+v, late completion %+v: want it marked refused", ev, lc)
	}
	in.at(41)
	if _, h2 := in.receiveOne(); h2 == "" {
		t.Fatal("the message did not run again")
	}
}

// The classic overrun on a standard queue, where each second worker
// deletes first: the first holders' late deletes find their messages
// already deleted. SQS answers such a delete with success, but it deleted
// nothing: each message was worked twice and deleted once, so it counts
// one completed lease, not two; the late delete still tells how long its
// handler ran (the p99), and its history says the message was already
// deleted.
func TestDoctorLateDeleteAlreadyDeleted(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "twice", map[string]string{"VisibilityTimeout": "30"})
	ids := in.send(3)
	first := in.receive(10, nil)
	in.at(31)
	second := in.receive(10, nil)
	in.at(35)
	for _, id := range ids {
		in.del(second[id])
	}
	in.at(90)
	for _, id := range ids {
		in.del(first[id]) // late, and the message is gone: succeeds, as on SQS
	}
	r := in.report()
	s := r.Window
	if s.Completed != 3 || s.AlreadyDeleted != 3 || s.Finished() != 6 || s.Late != 3 || s.Duplicates != 3 || s.DuplicatesStoreFailed != 0 || s.Max < 89e9 {
		t.Errorf("window %+v: want 3 completed, 3 deletes of messages already deleted, 3 late, 3 duplicates, the longest 90 s", s)
	}
	expect(t, r, ledger.DiagnosisLeaseTooShort, ledger.DiagnosisLeaseTooShort)
	contains(t, r.Advice, "3 deletes found their message already deleted", "deleted nothing")
	if r.RecommendedVisibilityTimeout < 135 {
		t.Errorf("recommended %d s, want the 90 s handlers × 1.5", r.RecommendedVisibilityTimeout)
	}
	ev, lc := lateDelete(t, in, ids[0])
	if !ev.AlreadyDeleted || ev.Refused || !ev.Duplicate || !lc.AlreadyDeleted {
		t.Errorf("late delete %+v, late completion %+v: want it marked already deleted", ev, lc)
	}
	qs, err := in.e.QueueMetrics(context.Background())
	if err != nil || len(qs) != 1 {
		t.Fatal(qs, err)
	}
	if m := qs[0]; m.Totals.Completed != 3 || m.Totals.Finished() != 6 {
		t.Errorf("metrics: completed %d, finished %d; want 3 deletes of 3 messages, 6 handlers finished", m.Totals.Completed, m.Totals.Finished())
	}
	if strings.Contains(r.Advice, "refused") {
		t.Errorf("a refusal said where none happened: %s", r.Advice)
	}
}

// The classic overrun on a standard queue where both holders overran: the
// first holder's late delete deletes the message, after the second's lease
// had lapsed too, and the second's late delete then finds it already
// deleted. That delete is no retry of a delete of its own whose answer was
// lost (its lease is the message's latest and lapsed, but someone else
// deleted the message): it deleted nothing, and is late, not a completion
// at a time not known.
func TestDoctorLateDeleteAfterAnOlderReceiptDeleted(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "both-late", map[string]string{"VisibilityTimeout": "30"})
	ids := in.send(3)
	first := in.receive(10, nil)
	in.at(31)
	second := in.receive(10, nil)
	in.at(90) // the second leases lapsed at 61 s
	for _, id := range ids {
		in.del(first[id]) // late: deletes the message, as on SQS
	}
	in.at(121)
	for _, id := range ids {
		in.del(second[id]) // late, the message already deleted
	}
	r := in.report()
	s := r.Window
	if s.Completed != 3 || s.Untimed != 0 || s.AlreadyDeleted != 3 || s.Finished() != 6 || s.LateLeases != 6 {
		t.Errorf("window %+v: want 3 completed (all timed), 3 deletes of messages already deleted, 6 leases late", s)
	}
	expect(t, r, ledger.DiagnosisLeaseTooShort, ledger.DiagnosisLeaseTooShort)
	if strings.Contains(r.Advice, "answer was lost") {
		t.Errorf("a lost answer said where none happened: %s", r.Advice)
	}
	h := in.history(ids[0])
	if last := h[len(h)-1]; last.Kind != ledger.EventLateDelete || !last.AlreadyDeleted {
		t.Errorf("the second holder's delete reads %+v; want a late delete of a message already deleted", last)
	}
}

// A holder's delete that finds its message gone after the queue was purged
// while its lease had lapsed deleted nothing: the purge did, not a lost
// attempt of its own (the purge ends only running leases, so the ledger
// must remember that it removed the messages).
func TestDoctorLateDeleteAfterAPurge(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "purged", map[string]string{"VisibilityTimeout": "30"})
	ids := in.send(3)
	first := in.receive(10, nil)
	in.at(40) // the leases lapsed at 30 s
	if err := in.e.PurgeQueue(context.Background(), in.ref); err != nil {
		t.Fatal(err)
	}
	in.at(50)
	for _, id := range ids {
		in.del(first[id]) // late, the message purged
	}
	s := in.report().Window
	if s.Completed != 0 || s.Untimed != 0 || s.AlreadyDeleted != 3 {
		t.Errorf("window %+v: want no lease completed, 3 deletes of messages already deleted", s)
	}
}

// The same after the retention sweep deleted the messages.
func TestDoctorLateDeleteAfterRetention(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "kept-briefly", map[string]string{"VisibilityTimeout": "30", "MessageRetentionPeriod": "60"})
	ids := in.send(3)
	first := in.receive(10, nil)
	in.at(70) // the leases lapsed at 30 s; the messages are past retention
	if n, err := engine.NewRetentionSweeper(in.e, time.Minute).SweepOnce(context.Background()); err != nil || n != 3 {
		t.Fatalf("retention sweep: %d, %v; want 3 deleted", n, err)
	}
	in.at(80)
	for _, id := range ids {
		in.del(first[id]) // late, the message deleted by retention
	}
	s := in.report().Window
	if s.Completed != 0 || s.Untimed != 0 || s.AlreadyDeleted != 3 {
		t.Errorf("window %+v: want no lease completed, 3 deletes of messages already deleted", s)
	}
}
