package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/engine/ledger"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/store/memstore"
)

// How a store loses the answer to a delete or visibility change it made.
const (
	answerKept = iota
	// answerLost: the change is made, and the call fails as a database
	// store's does when the database fails over between the commit and
	// its answer (503, the outcome unknown), or the embedded store's when
	// its log write fails after the change was applied in memory. The
	// SDK retries.
	answerLost
	// answerRerun: the change is made, its answer lost, and the store runs
	// it again and answers the rerun's outcome, as the PostgreSQL store
	// does within its retry bound: the rerun finds the message gone, the
	// lease released, the end set.
	answerRerun
	// answerNotMade: the call fails without the change being made (503:
	// the store down before it could). The SDK retries.
	answerNotMade
)

// answersLost is a memory store whose deletes and visibility changes lose
// their answer as mode says.
type answersLost struct {
	*memstore.Store
	mode atomic.Int32
}

func (s *answersLost) MessageDeleteBatch(ctx context.Context, p baton.MessageDeleteBatchParams) ([]baton.LeaseOutcome, error) {
	if s.mode.Load() == answerNotMade {
		return nil, errStoreDown
	}
	outs, err := s.Store.MessageDeleteBatch(ctx, p)
	return lose(s.mode.Load(), outs, err, func() ([]baton.LeaseOutcome, error) { return s.Store.MessageDeleteBatch(ctx, p) })
}

func (s *answersLost) MessageChangeVisibilityBatch(ctx context.Context, p baton.MessageChangeVisibilityBatchParams) ([]baton.LeaseOutcome, error) {
	if s.mode.Load() == answerNotMade {
		return nil, errStoreDown
	}
	outs, err := s.Store.MessageChangeVisibilityBatch(ctx, p)
	return lose(s.mode.Load(), outs, err, func() ([]baton.LeaseOutcome, error) { return s.Store.MessageChangeVisibilityBatch(ctx, p) })
}

// sharedAnswersLost is answersLost on a handle of a memstore.Cluster, one
// node's store of several.
type sharedAnswersLost struct {
	*memstore.Shared
	mode atomic.Int32
}

func (s *sharedAnswersLost) MessageDeleteBatch(ctx context.Context, p baton.MessageDeleteBatchParams) ([]baton.LeaseOutcome, error) {
	outs, err := s.Shared.MessageDeleteBatch(ctx, p)
	return lose(s.mode.Load(), outs, err, func() ([]baton.LeaseOutcome, error) { return s.Shared.MessageDeleteBatch(ctx, p) })
}

// lose answers a call that made its change (outs, err) as mode says,
// rerun running it again.
func lose(mode int32, outs []baton.LeaseOutcome, err error, rerun func() ([]baton.LeaseOutcome, error)) ([]baton.LeaseOutcome, error) {
	if err != nil {
		return outs, err
	}
	switch mode {
	case answerLost:
		return nil, errStoreDown
	case answerRerun:
		return rerun()
	}
	return outs, nil
}

// threeLeased starts an incident on a queue (FIFO or not) with a 30 s
// lease, whose store loses answers as told (answersLost), sends it three
// messages and leases them to sdkClient in one receive (their receipt
// handles by message id).
func threeLeased(t *testing.T, fifo bool) (*incident, *answersLost, map[string]string) {
	t.Helper()
	queue, attrs := "jobs", map[string]string{"VisibilityTimeout": "30"}
	if fifo {
		queue, attrs["FifoQueue"] = "jobs.fifo", "true"
	}
	in, s := newLostAnswers(t, queue, attrs)
	in.sendTo(fifo, 3)
	handles := in.receiveAs(sdkClient, 10)
	if len(handles) != 3 {
		t.Fatalf("received %d, want 3", len(handles))
	}
	return in, s, handles
}

// newLostAnswers is an incident over an answersLost store.
func newLostAnswers(t *testing.T, queue string, attrs map[string]string) (*incident, *answersLost) {
	t.Helper()
	s := &answersLost{Store: memstore.New()}
	clk := clock.NewFake(testutil.Epoch)
	e, err := engine.New(engine.Config{Store: s, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	in := &incident{t: t, e: e, clock: clk, ref: engine.QueueRef{Account: "000000000000", Name: queue}}
	in.queue(queue, attrs)
	return in, s
}

// sendTo sends n messages to the queue, in groups of one if it is FIFO.
func (in *incident) sendTo(fifo bool, n int) {
	in.t.Helper()
	for i := range n {
		p := engine.SendParams{Body: "job " + strconv.Itoa(i)}
		if fifo {
			p.GroupID, p.DedupID = "g"+strconv.Itoa(i), "d"+strconv.Itoa(i)
		}
		if _, err := in.e.SendMessage(context.Background(), in.ref, p); err != nil {
			in.t.Fatal(err)
		}
	}
}

// deleteAll deletes by every handle as c, in one DeleteMessageBatch if
// batch, else one DeleteMessage each, and returns the first error.
func (in *incident) deleteAll(c ledger.Client, handles map[string]string, batch bool) error {
	if !batch {
		var first error
		for _, h := range handles {
			if err := in.e.DeleteMessage(as(c), in.ref, h); err != nil && first == nil {
				first = err
			}
		}
		return first
	}
	var entries []engine.HandleEntry
	for _, h := range handles {
		entries = append(entries, engine.HandleEntry{ID: "e" + strconv.Itoa(len(entries)), ReceiptHandle: h})
	}
	_, failed, err := in.e.DeleteMessageBatch(as(c), in.ref, entries)
	if err == nil && len(failed) > 0 {
		err = failed[0].Err
	}
	return err
}

// history is the message's lease history.
func (in *incident) history(id string) []ledger.LeaseEvent {
	in.t.Helper()
	events, _, err := in.e.MessageHistory(context.Background(), in.ref, id)
	if err != nil {
		in.t.Fatal(err)
	}
	return events
}

// completedTotal is the queue's completed leases as /metrics counts them
// (baton_messages_deleted_total).
func (in *incident) completedTotal() uint64 {
	in.t.Helper()
	qs, err := in.e.QueueMetrics(context.Background())
	if err != nil {
		in.t.Fatal(err)
	}
	for _, q := range qs {
		if q.Name == in.ref.Name {
			return q.Totals.Completed
		}
	}
	in.t.Fatalf("no metrics of %s", in.ref.Name)
	return 0
}

// checkDeletedInTime checks that each message's lease reads completed by
// its delete: the report healthy, three leases completed and none
// lapsed, late or already deleted, each history ending in a plain delete,
// and /metrics' deleted counter at three.
func checkDeletedInTime(t *testing.T, in *incident, ids []string) {
	t.Helper()
	r := in.report()
	expect(t, r, ledger.DiagnosisHealthy)
	if s := r.Window; s.Completed != 3 || s.AlreadyDeleted != 0 || s.Expired != 0 || s.Late != 0 {
		t.Errorf("window %+v: want 3 completed, none already deleted, lapsed or late", s)
	}
	for _, id := range ids {
		h := in.history(id)
		if last := h[len(h)-1]; last.Kind != ledger.EventDelete || last.AlreadyDeleted || last.Late != 0 {
			t.Errorf("history of %s: %+v, want it to end in its lease's delete", id, h)
		}
	}
	if n := in.completedTotal(); n != 3 {
		t.Errorf("/metrics deleted %d, want 3", n)
	}
}

// A delete (or a DeleteMessageBatch) whose change was made but whose
// answer was lost, on a standard or FIFO queue: the store answered 503 and
// the SDK retried, or the store ran it again itself. The retry finds each
// message deleted (and succeeds: on a standard queue SQS answers so, and
// Baton does on a FIFO queue too). Each lease is the latest its message
// had, still running, no purge, retention sweep or operator ended it:
// only its own delete can have deleted the message. So it is the lease's
// completion, in time; not a delete that found its message already
// deleted by someone else, nor a late one, and the lease does not lapse
// afterwards, while the consumer goes on polling.
func TestDoctorDeleteAnswerLost(t *testing.T) {
	t.Parallel()
	for _, fifo := range []bool{false, true} {
		for _, batch := range []bool{false, true} {
			for _, mode := range []int32{answerLost, answerRerun} {
				name := fmt.Sprintf("fifo=%v/batch=%v/rerun=%v", fifo, batch, mode == answerRerun)
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					in, s, handles := threeLeased(t, fifo)
					in.at(5)
					s.mode.Store(mode)
					err := in.deleteAll(sdkClient, handles, batch)
					s.mode.Store(answerKept)
					if mode == answerLost {
						// A batch's entries each fail ServiceUnavailable.
						if !errors.Is(err, baton.ErrUnavailable) && !baton.IsCode(err, baton.ErrServiceUnavailable) {
							t.Fatalf("delete with its answer lost: %v, want ErrUnavailable", err)
						}
						in.at(6)
						if err := in.deleteAll(sdkClient, handles, batch); err != nil {
							t.Fatalf("the retry: %v, want success", err)
						}
					} else if err != nil {
						t.Fatalf("delete the store ran again: %v, want success", err)
					}
					var ids []string
					for id := range handles {
						ids = append(ids, id)
					}
					checkDeletedInTime(t, in, ids)
					for _, sec := range []int{20, 40, 100} {
						in.at(sec)
						in.receiveAs(sdkClient, 10) // polls on, finds nothing
					}
					checkDeletedInTime(t, in, ids)
				})
			}
		}
	}
}

// A delete whose answer was lost, retried only after the lease's end (the
// database took its failover; the SDK's retries met it down): the retry
// finds the message deleted, no later lease begun. Its holder completed
// the lease, and the server saw when: it answered that first attempt 503
// (ledger.Event.Unanswered). So it says neither that the lease lapsed (a
// handler failing, a holder stopped) nor that it was completed late, and
// counts the handler's time to that attempt, within the lease.
func TestDoctorDeleteAnswerLostRetriedAfterLapse(t *testing.T) {
	t.Parallel()
	for _, fifo := range []bool{false, true} {
		t.Run(fmt.Sprintf("fifo=%v", fifo), func(t *testing.T) {
			t.Parallel()
			testDeleteAnswerLostRetriedAfterLapse(t, fifo)
		})
	}
}

func testDeleteAnswerLostRetriedAfterLapse(t *testing.T, fifo bool) {
	in, s, handles := threeLeased(t, fifo)
	in.at(25)
	s.mode.Store(answerLost)
	if err := in.deleteAll(sdkClient, handles, false); !errors.Is(err, baton.ErrUnavailable) {
		t.Fatalf("delete with its answer lost: %v, want ErrUnavailable", err)
	}
	s.mode.Store(answerKept)
	in.at(31)
	in.receiveAs(sdkClient, 10) // the database is back; nothing to receive
	in.at(45)
	if err := in.deleteAll(sdkClient, handles, false); err != nil {
		t.Fatalf("the retry: %v", err)
	}
	in.at(100)
	in.receiveAs(sdkClient, 10)
	r := in.report()
	expect(t, r, ledger.DiagnosisHealthy)
	if s := r.Window; s.Completed != 3 || s.Untimed != 0 || s.Finished() != 3 || s.AlreadyDeleted != 0 ||
		s.Expired != 0 || s.Late != 0 || s.Max != 25*time.Second {
		t.Errorf("window %+v: want 3 completed at their first attempt (25s), none lapsed, late or already deleted", s)
	}
	if strings.Contains(r.Advice, "whose answer was lost") {
		t.Errorf("advice says the time of the deletes is not known: %s", r.Advice)
	}
	for id := range handles {
		h := in.history(id)
		for _, ev := range h {
			if ev.Kind == ledger.EventExpire || ev.Kind == ledger.EventLateDelete || ev.AlreadyDeleted {
				t.Errorf("history of %s: %+v, want a receive and its delete", id, h)
			}
		}
		if last := h[len(h)-1]; last.Kind != ledger.EventDelete || !last.At.Equal(testutil.Epoch.Add(25*time.Second)) {
			t.Errorf("history of %s: %+v, want it to end in the delete at its first attempt (25s)", id, h)
		}
	}
	if n := in.completedTotal(); n != 3 {
		t.Errorf("/metrics deleted %d, want 3", n)
	}
}

// A release (ChangeMessageVisibility 0) whose first attempt the store
// answered 503 (it was made, its answer lost: the database failed over),
// retried by the SDK only after the lease's end: the retry finds the lease
// no longer live, the message waiting, or handed on to another receiver
// after the lease's end, or deleted by it. The holder let go in time; it
// is no late change, and the lease no lapse (no handler failing, no lease
// too short): it reads released when the first attempt came, which the
// server saw (ledger.Event.Unanswered).
func TestDoctorReleaseAnswerLostRetriedAfterLapse(t *testing.T) {
	t.Parallel()
	for _, fifo := range []bool{false, true} {
		for _, then := range []string{"waiting", "handed-on", "deleted"} {
			t.Run(fmt.Sprintf("fifo=%v/%s", fifo, then), func(t *testing.T) {
				t.Parallel()
				testReleaseAnswerLostRetriedAfterLapse(t, fifo, then)
			})
		}
	}
}

func testReleaseAnswerLostRetriedAfterLapse(t *testing.T, fifo bool, then string) {
	in, s, handles := threeLeased(t, fifo)
	in.at(2)
	s.mode.Store(answerLost)
	for _, h := range handles {
		if err := in.e.ChangeMessageVisibility(as(sdkClient), in.ref, h, ptr(0)); !errors.Is(err, baton.ErrUnavailable) {
			t.Fatalf("release with its answer lost: %v, want ErrUnavailable", err)
		}
	}
	s.mode.Store(answerKept)
	other := ledger.Client{Addr: "10.0.0.21", UserAgent: sdkClient.UserAgent}
	var again map[string]string
	if then != "waiting" {
		in.at(35) // after the lease's end
		if again = in.receiveAs(other, 10); len(again) != 3 {
			t.Fatalf("received again %d, want the 3 released", len(again))
		}
		if then == "deleted" {
			in.at(36)
			for _, h := range again {
				in.delAs(other, h)
			}
		}
	}
	in.at(45) // the SDK's retries, once the database is back
	for _, h := range handles {
		// A message deleted meanwhile answers an error; a standard
		// queue's message handed on is released again, as on SQS.
		in.e.ChangeMessageVisibility(as(sdkClient), in.ref, h, ptr(0))
	}
	if then != "deleted" {
		in.at(50)
		if then == "waiting" || !fifo { // a FIFO queue's stale receipt moved nothing: the other holds them
			again = in.receiveAs(other, 10)
		}
		if len(again) != 3 {
			t.Fatalf("received again %d, want the 3 released", len(again))
		}
		in.at(51)
		for _, h := range again {
			in.delAs(other, h)
		}
	}
	in.at(100)
	in.receiveAs(sdkClient, 10) // the holder polls on
	r := in.report()
	if s := r.Window; s.Late != 0 || s.Expired != 0 || s.Releases < 3 || s.Completed != 3 {
		t.Errorf("window %+v: want 3 released, 3 completed, none late or lapsed\nadvice: %s", s, r.Advice)
	}
	for _, f := range r.Findings {
		if f.Kind == ledger.DiagnosisLeaseTooShort || f.Kind == ledger.DiagnosisHandlerFailing || f.Kind == ledger.DiagnosisHoldersStopped {
			t.Errorf("finding %s: %s", f.Kind, f.Evidence)
		}
	}
	for id := range handles {
		h := in.history(id)
		released := false
		for _, ev := range h {
			if ev.Kind == ledger.EventLateChange || ev.Kind == ledger.EventExpire {
				t.Errorf("history of %s: %+v, want its first lease released, no lapse or late change", id, h)
			}
			released = released || ev.Kind == ledger.EventRelease && ev.Epoch == 1 && ev.At.Equal(testutil.Epoch.Add(2*time.Second))
		}
		if !released {
			t.Errorf("history of %s: %+v, want its first lease released at 2s, its first attempt", id, h)
		}
	}
}

// A release (ChangeMessageVisibility 0) whose answer was lost: the retry,
// or the store's own rerun, finds the lease no longer live, since the
// first attempt ended it. It is the lease's release, not a late change by
// a holder whose lease lapsed, and the lease does not lapse later; the
// message goes to the next receiver, who completes it.
func TestDoctorReleaseAnswerLost(t *testing.T) {
	t.Parallel()
	for _, fifo := range []bool{false, true} {
		for _, mode := range []int32{answerLost, answerRerun} {
			t.Run(fmt.Sprintf("fifo=%v/rerun=%v", fifo, mode == answerRerun), func(t *testing.T) {
				t.Parallel()
				testReleaseAnswerLost(t, fifo, mode)
			})
		}
	}
}

func testReleaseAnswerLost(t *testing.T, fifo bool, mode int32) {
	in, s, handles := threeLeased(t, fifo)
	in.at(2)
	for _, h := range handles {
		s.mode.Store(mode)
		err := in.e.ChangeMessageVisibility(as(sdkClient), in.ref, h, ptr(0))
		s.mode.Store(answerKept)
		if mode == answerLost {
			if !errors.Is(err, baton.ErrUnavailable) {
				t.Fatalf("release with its answer lost: %v, want ErrUnavailable", err)
			}
			in.changeAs(sdkClient, h, 0) // the SDK's retry
		} else if err != nil {
			t.Fatal(err)
		}
	}
	in.at(3)
	other := ledger.Client{Addr: "10.0.0.21", UserAgent: sdkClient.UserAgent}
	again := in.receiveAs(other, 10)
	if len(again) != 3 {
		t.Fatalf("received again %d, want the 3 released", len(again))
	}
	in.at(4)
	for _, h := range again {
		in.delAs(other, h)
	}
	in.at(100)
	in.receiveAs(sdkClient, 10)
	r := in.report()
	expect(t, r, ledger.DiagnosisHealthy)
	if s := r.Window; s.Late != 0 || s.Expired != 0 || s.Releases != 3 || s.Completed != 3 {
		t.Errorf("window %+v: want 3 releases, 3 completed, none late or lapsed", s)
	}
	for id := range handles {
		for _, ev := range in.history(id) {
			if ev.Kind == ledger.EventLateChange || ev.Kind == ledger.EventExpire {
				t.Errorf("history of %s: %+v, want receive, release, receive, delete", id, in.history(id))
			}
		}
	}
}

// A renewal the store ran again after its answer was lost: the rerun finds
// the lease ending where the first run set it. That is the renewal it
// was, not a release with a delay (a change that brought the end
// forward); when the holder then stops, the lease lapses, its holder
// stopped, not released.
func TestDoctorRenewalRerunIsRenewal(t *testing.T) {
	t.Parallel()
	in, s := newLostAnswers(t, "jobs", map[string]string{"VisibilityTimeout": "30"})
	in.send(3)
	handles := in.receiveAs(sdkClient, 10)
	in.at(10)
	s.mode.Store(answerRerun)
	for _, h := range handles {
		in.changeAs(sdkClient, h, 60)
	}
	s.mode.Store(answerKept)
	for id := range handles {
		h := in.history(id)
		if last := h[len(h)-1]; last.Kind != ledger.EventRenew {
			t.Errorf("history of %s: %+v, want it to end in a renewal", id, h)
		}
	}
	if r := in.report(); r.Window.Renewals != 3 {
		t.Errorf("renewals %d, want 3", r.Window.Renewals)
	}
	in.at(200) // the holder made no request since: stopped, or working on
	r := in.report()
	expect(t, r, ledger.DiagnosisHoldersStopped, ledger.DiagnosisHoldersStopped)
	if s := r.Window; s.Expired != 3 || s.Releases != 0 {
		t.Errorf("window %+v: want 3 lapsed, none released", s)
	}
}

// A delete whose answer node 1 lost, retried through node 2 (a load
// balancer sends the SDK's retry anywhere): every node reads the retry as
// the lease's completion, from the events they share.
func TestDoctorDeleteAnswerLostRetriedElsewhere(t *testing.T) {
	t.Parallel()
	c := memstore.NewCluster()
	first := &sharedAnswersLost{Shared: c.Open()}
	second := c.Open()
	t.Cleanup(func() { first.Close(); second.Close() })
	nodes, clk := startNodes(t, []baton.SharedStore{first, second}, []byte("one receipt key for every node.."), nil)
	ctx := context.Background()
	var ids []string
	for range 3 {
		out, err := nodes[0].SendMessage(ctx, clusterQueue, engine.SendParams{Body: "job"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, out.MessageID)
	}
	got, err := nodes[0].ReceiveMessage(as(sdkClient), clusterQueue, engine.ReceiveParams{MaxNumberOfMessages: ptr(10)})
	if err != nil || len(got) != 3 {
		t.Fatalf("receive: %d, %v", len(got), err)
	}
	// The retry comes after the 503, which comes after the store's retry
	// bound: node 2 has heard the receives by then.
	testutil.CheckFor(t, 10*time.Second, func() error {
		if s := mustReport(t, nodes[1]).SinceStart; s.Received != 3 {
			return fmt.Errorf("node 2 heard %d receives, want 3", s.Received)
		}
		return nil
	})
	clk.Advance(5 * time.Second)
	for _, m := range got {
		first.mode.Store(answerLost)
		err := nodes[0].DeleteMessage(as(sdkClient), clusterQueue, m.ReceiptHandle)
		first.mode.Store(answerKept)
		if !errors.Is(err, baton.ErrUnavailable) {
			t.Fatalf("delete with its answer lost: %v, want ErrUnavailable", err)
		}
		if err := nodes[1].DeleteMessage(as(sdkClient), clusterQueue, m.ReceiptHandle); err != nil {
			t.Fatalf("the retry through node 2: %v", err)
		}
	}
	testutil.CheckFor(t, 10*time.Second, func() error {
		for i, e := range nodes {
			r := mustReport(t, e)
			if s := r.SinceStart; r.Diagnosis != ledger.DiagnosisHealthy || s.Completed != 3 || s.AlreadyDeleted != 0 || s.Late != 0 {
				return fmt.Errorf("node %d: %s, since start %+v; want healthy, 3 completed, none already deleted or late", i+1, r.Diagnosis, s)
			}
			for _, id := range ids {
				if h := historyOf(t, e, id); len(h) != 2 || !strings.HasPrefix(h[1], "delete@5#") {
					return fmt.Errorf("node %d: history of %s %v, want its receive and its delete", i+1, id, h)
				}
			}
		}
		return nil
	})
}

// A delete whose answer node 1 lost (503), retried through node 2 only
// after the lease's end: node 1 tells the others of the attempt it failed
// (ledger.Event.Unanswered), so every node reads the retry as the lease's
// completion at that attempt, within the lease, and none as a completion
// at a time not known.
func TestDoctorDeleteAnswerLostRetriedElsewhereAfterLapse(t *testing.T) {
	t.Parallel()
	c := memstore.NewCluster()
	first := &sharedAnswersLost{Shared: c.Open()}
	second := c.Open()
	t.Cleanup(func() { first.Close(); second.Close() })
	nodes, clk := startNodes(t, []baton.SharedStore{first, second}, []byte("one receipt key for every node.."), nil)
	ctx := context.Background()
	var ids []string
	for range 3 {
		out, err := nodes[0].SendMessage(ctx, clusterQueue, engine.SendParams{Body: "job"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, out.MessageID)
	}
	got, err := nodes[0].ReceiveMessage(as(sdkClient), clusterQueue, engine.ReceiveParams{MaxNumberOfMessages: ptr(10), VisibilityTimeout: ptr(30)})
	if err != nil || len(got) != 3 {
		t.Fatalf("receive: %d, %v", len(got), err)
	}
	clk.Advance(5 * time.Second)
	for _, m := range got {
		first.mode.Store(answerLost)
		err := nodes[0].DeleteMessage(as(sdkClient), clusterQueue, m.ReceiptHandle)
		first.mode.Store(answerKept)
		if !errors.Is(err, baton.ErrUnavailable) {
			t.Fatalf("delete with its answer lost: %v, want ErrUnavailable", err)
		}
	}
	// The retries come after the leases' end, once node 2 has heard all
	// that node 1 told (a send after the attempts marks the end of it: a
	// node's events arrive in order).
	if _, err := nodes[0].SendMessage(ctx, clusterQueue, engine.SendParams{Body: "marker"}); err != nil {
		t.Fatal(err)
	}
	testutil.CheckFor(t, 10*time.Second, func() error {
		if s := mustReport(t, nodes[1]).SinceStart; s.Received != 3 || s.Sent != 4 {
			return fmt.Errorf("node 2 heard %d receives and %d sends, want 3 and 4", s.Received, s.Sent)
		}
		return nil
	})
	clk.Advance(40 * time.Second)
	for _, m := range got {
		if err := nodes[1].DeleteMessage(as(sdkClient), clusterQueue, m.ReceiptHandle); err != nil {
			t.Fatalf("the retry through node 2: %v", err)
		}
	}
	testutil.CheckFor(t, 10*time.Second, func() error {
		for i, e := range nodes {
			r := mustReport(t, e)
			if s := r.SinceStart; r.Diagnosis != ledger.DiagnosisHealthy || s.Completed != 3 || s.Untimed != 0 || s.Max != 5*time.Second ||
				s.Expired != 0 || s.Late != 0 {
				return fmt.Errorf("node %d: %s, since start %+v; want healthy, 3 completed at 5s, none untimed, lapsed or late", i+1, r.Diagnosis, s)
			}
			for _, id := range ids {
				if h := historyOf(t, e, id); len(h) != 2 || !strings.HasPrefix(h[1], "delete@5#") {
					return fmt.Errorf("node %d: history of %s %v, want its receive and its delete at 5s", i+1, id, h)
				}
			}
		}
		return nil
	})
}
