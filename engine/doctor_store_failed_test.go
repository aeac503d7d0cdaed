package engine_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine/ledger"
	"github.com/baton-sqs/baton/internal/testutil"
)

// A delete made in time that the store failed without making it (503, the
// store down), retried by the SDK only after the lease's end: the lease
// lapsed in the store and its message was received again by another
// consumer; the retry finds the lease lapsed (a standard queue deletes the
// message then, a FIFO queue refuses it). The holder was on time: the
// cause is the store's failure, named as such (store-failed), not a late
// delete (lease-too-short) nor a handler that failed.
func TestDoctorDeleteFailedByStoreRetriedAfterLapse(t *testing.T) {
	t.Parallel()
	for _, fifo := range []bool{false, true} {
		t.Run(fmt.Sprintf("fifo=%v", fifo), func(t *testing.T) {
			t.Parallel()
			testDeleteFailedByStoreRetriedAfterLapse(t, fifo)
		})
	}
}

// failedThenReceivedAgain plays three leases (30 s) whose deletes the
// store failed at 25 s, their messages received again at 35 s by another
// consumer, which it returns with the receipts of both.
func failedThenReceivedAgain(t *testing.T, fifo bool) (in *incident, other ledger.Client, handles, again map[string]string) {
	t.Helper()
	in, s, handles := threeLeased(t, fifo)
	in.at(25)
	s.mode.Store(answerNotMade)
	if err := in.deleteAll(sdkClient, handles, false); !errors.Is(err, baton.ErrUnavailable) {
		t.Fatalf("delete the store failed: %v, want ErrUnavailable", err)
	}
	s.mode.Store(answerKept)
	other = ledger.Client{Addr: "10.0.0.21", UserAgent: sdkClient.UserAgent}
	in.at(35) // the lease lapsed in the store: the messages go to another consumer
	again = in.receiveAs(other, 10)
	if len(again) != 3 {
		t.Fatalf("received again %d, want the 3 the store did not delete", len(again))
	}
	return in, other, handles, again
}

func testDeleteFailedByStoreRetriedAfterLapse(t *testing.T, fifo bool) {
	in, other, handles, again := failedThenReceivedAgain(t, fifo)
	in.at(45) // the SDK's retries, once the store is back
	for _, h := range handles {
		// A FIFO queue refuses a delete after the lease's end.
		in.e.DeleteMessage(as(sdkClient), in.ref, h)
	}
	in.at(46)
	for _, h := range again {
		in.delAs(other, h)
	}
	in.at(100)
	in.receiveAs(sdkClient, 10) // the holder polls on
	in.receiveAs(other, 10)
	r := in.report()
	expect(t, r, ledger.DiagnosisStoreFailed, ledger.DiagnosisStoreFailed)
	if s := r.Window; s.Late != 0 || s.LateLeases != 0 {
		t.Errorf("window %+v: want no late completion", s)
	}
	if f := finding(r, ledger.DiagnosisStoreFailed); f.Leases != 3 || f.LastEvent != "lapse" ||
		!f.Last.Equal(testutil.Epoch.Add(30*time.Second)) {
		t.Errorf("store-failed finding %+v: want 3 leases, the last lapse at 30s", f)
	}
	for id := range handles {
		h := in.history(id)
		failed := false
		for _, ev := range h {
			if ev.Kind == ledger.EventLateDelete {
				t.Errorf("history of %s: %+v, want no late delete", id, h)
			}
			failed = failed || ev.Kind == ledger.EventDelete && ev.Epoch == 1 && ev.StoreFailedAt.Equal(testutil.Epoch.Add(25*time.Second))
		}
		if !failed {
			t.Errorf("history of %s: %+v, want its first lease's delete marked failed by the store at 25s", id, h)
		}
	}
}

// A delete whose first attempt itself came after the lease's end, on a
// standard queue, and deleted the message, its answer lost (503, the
// outcome unknown): the retry finds the message gone. The server saw when
// that attempt came: it is a late delete then, not a completion at a time
// not known.
func TestDoctorDeleteAnswerLostAfterLapse(t *testing.T) {
	t.Parallel()
	in, s, handles := threeLeased(t, false)
	in.at(35)
	s.mode.Store(answerLost)
	if err := in.deleteAll(sdkClient, handles, false); !errors.Is(err, baton.ErrUnavailable) {
		t.Fatalf("delete with its answer lost: %v, want ErrUnavailable", err)
	}
	s.mode.Store(answerKept)
	in.at(45)
	if err := in.deleteAll(sdkClient, handles, false); err != nil {
		t.Fatalf("the retry: %v", err)
	}
	in.at(100)
	in.receiveAs(sdkClient, 10)
	r := in.report()
	expect(t, r, ledger.DiagnosisLeaseTooShort, ledger.DiagnosisLeaseTooShort)
	if s := r.Window; s.Late != 3 || s.LateLeases != 3 || s.Untimed != 0 || s.Completed != 3 || s.Max != 35*time.Second {
		t.Errorf("window %+v: want 3 late deletes at their first attempt (35s), none of a time not known", s)
	}
	for id := range handles {
		h := in.history(id)
		last := h[len(h)-1]
		if last.Kind != ledger.EventLateDelete || !last.At.Equal(testutil.Epoch.Add(35*time.Second)) || last.Late != 5*time.Second {
			t.Errorf("history of %s: %+v, want it to end in a late delete at 35s, 5s late", id, h)
		}
	}
}

// One delete the store failed in time, retried after the lapse, the other
// two deleted in time: too few for a finding, but a failure all the same,
// said in a note, the queue not called healthy.
func TestDoctorDeleteFailedByStoreOnce(t *testing.T) {
	t.Parallel()
	in, s, handles := threeLeased(t, false)
	in.at(25)
	var failed string
	for _, h := range handles {
		if failed != "" {
			in.delAs(sdkClient, h)
			continue
		}
		failed = h
		s.mode.Store(answerNotMade)
		if err := in.e.DeleteMessage(as(sdkClient), in.ref, h); !errors.Is(err, baton.ErrUnavailable) {
			t.Fatalf("delete the store failed: %v, want ErrUnavailable", err)
		}
		s.mode.Store(answerKept)
	}
	in.at(45)
	in.delAs(sdkClient, failed) // the retry, after the lease's end
	in.at(100)
	in.receiveAs(sdkClient, 10)
	r := in.report()
	expect(t, r, ledger.DiagnosisTooFewLeases)
	if !strings.Contains(r.Advice, "the store failed the delete") || r.Window.Late != 0 {
		t.Errorf("advice %q, window %+v: want a note of the delete the store failed, no late completion", r.Advice, r.Window)
	}
}

// A delete made in time that the store failed (503, not made), its
// message received again by another consumer before the SDK's retry: the
// message ran twice, a confirmed duplicate execution, whether the retry
// comes while the other consumer holds it (a standard queue deletes it
// then, a FIFO queue refuses it) or after that consumer deleted it (the
// retry finds it gone). Either way the lapse is the store's, not a late
// delete: the other consumer received the message after the first
// attempt, so that attempt was not made.
func TestDoctorStoreFailedDeleteRanTwice(t *testing.T) {
	t.Parallel()
	for _, fifo := range []bool{false, true} {
		for _, otherFirst := range []bool{false, true} {
			t.Run(fmt.Sprintf("fifo=%v,other-deletes-first=%v", fifo, otherFirst), func(t *testing.T) {
				t.Parallel()
				testStoreFailedDeleteRanTwice(t, fifo, otherFirst)
			})
		}
	}
}

func testStoreFailedDeleteRanTwice(t *testing.T, fifo, otherFirst bool) {
	in, other, handles, again := failedThenReceivedAgain(t, fifo)
	retry := func() {
		for _, h := range handles {
			in.e.DeleteMessage(as(sdkClient), in.ref, h) // a FIFO queue refuses it while the other holds it
		}
	}
	if otherFirst {
		in.at(40)
		for _, h := range again {
			in.delAs(other, h)
		}
		in.at(45)
		retry()
	} else {
		in.at(45)
		retry()
		in.at(46)
		for _, h := range again {
			in.delAs(other, h)
		}
	}
	in.at(100)
	in.receiveAs(sdkClient, 10)
	in.receiveAs(other, 10)
	r := in.report()
	expect(t, r, ledger.DiagnosisStoreFailed, ledger.DiagnosisStoreFailed)
	if w := r.Window; w.Duplicates != 3 || w.DuplicatesStoreFailed != 3 || w.Late != 0 {
		t.Errorf("window %+v: want 3 duplicate executions, all of deletes the store failed, no late completion", w)
	}
	// The holders came back, in time: their messages' redeliveries are the
	// store's, not ones whose holder never came back.
	if w := r.Window; w.RedeliveriesStoreFailed != 3 || w.RedeliveriesNeverReturned != 0 || w.RedeliveriesLapsedWhileWorking != 0 {
		t.Errorf("window %+v: want 3 redeliveries after a delete the store failed, none never returned", w)
	}
	for id := range handles {
		h := in.history(id)
		if !slices.ContainsFunc(h, func(ev ledger.LeaseEvent) bool {
			return ev.Kind == ledger.EventDelete && ev.Epoch == 1 && ev.Duplicate && ev.StoreFailedAt.Equal(testutil.Epoch.Add(25*time.Second))
		}) {
			t.Errorf("history of %s: %+v, want its first lease's delete marked failed by the store at 25s, a duplicate", id, h)
		}
	}
}

// A queue with both: three deletes the store failed, their messages run
// twice, and three handlers that overran their lease, their messages run
// twice too. lease-too-short's evidence counts the duplicates of its late
// completions only (it said 6 beside 3 late completions), the report the
// six, three of them the store's.
func TestDoctorTooShortBesideStoreFailed(t *testing.T) {
	t.Parallel()
	in, other, handles, again := failedThenReceivedAgain(t, false)
	in.at(45)
	for _, h := range handles {
		in.e.DeleteMessage(as(sdkClient), in.ref, h) // the retry deletes the message
	}
	in.at(46)
	for _, h := range again {
		in.delAs(other, h) // finds it deleted
	}
	in.at(50)
	in.sendTo(false, 3)
	first := in.receiveAs(sdkClient, 10)
	in.at(81) // the 30 s leases lapsed: the messages go to the other consumer
	second := in.receiveAs(other, 10)
	if len(first) != 3 || len(second) != 3 {
		t.Fatalf("received %d then %d, want 3 and 3", len(first), len(second))
	}
	in.at(90)
	for _, h := range first {
		in.delAs(sdkClient, h) // 10 s late: the message ran twice
	}
	in.at(95)
	for _, h := range second {
		in.delAs(other, h)
	}
	in.at(200)
	in.receiveAs(sdkClient, 10)
	in.receiveAs(other, 10)
	r := in.report()
	if w := r.Window; w.Duplicates != 6 || w.DuplicatesStoreFailed != 3 || w.Late != 3 {
		t.Errorf("window %+v: want 6 duplicates, 3 of them the store's, 3 late completions", w)
	}
	short := finding(r, ledger.DiagnosisLeaseTooShort)
	if !strings.Contains(short.Evidence, "3 late completions, 3 confirmed duplicate executions") {
		t.Errorf("lease-too-short evidence %q: want the 3 duplicates of its late completions", short.Evidence)
	}
	if f := finding(r, ledger.DiagnosisStoreFailed); f.Leases != 3 {
		t.Errorf("store-failed finding %+v: want 3 leases", f)
	}
}
