package engine_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine/ledger"
	"github.com/baton-sqs/baton/internal/testutil"
)

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
	in, s, handles := threeLeased(t, fifo)
	in.at(25)
	s.mode.Store(answerNotMade)
	if err := in.deleteAll(sdkClient, handles, false); !errors.Is(err, baton.ErrUnavailable) {
		t.Fatalf("delete the store failed: %v, want ErrUnavailable", err)
	}
	s.mode.Store(answerKept)
	other := ledger.Client{Addr: "10.0.0.21", UserAgent: sdkClient.UserAgent}
	in.at(35) // the lease lapsed in the store: the messages go to another consumer
	again := in.receiveAs(other, 10)
	if len(again) != 3 {
		t.Fatalf("received again %d, want the 3 the store did not delete", len(again))
	}
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
	if w := r.Window; w.Duplicates != 3 || w.Late != 0 {
		t.Errorf("window %+v: want 3 duplicate executions, no late completion", w)
	}
	for id := range handles {
		h := in.history(id)
		failed := false
		for _, ev := range h {
			failed = failed || ev.Kind == ledger.EventDelete && ev.Epoch == 1 && ev.Duplicate &&
				ev.StoreFailedAt.Equal(testutil.Epoch.Add(25*time.Second))
		}
		if !failed {
			t.Errorf("history of %s: %+v, want its first lease's delete marked failed by the store at 25s, a duplicate", id, h)
		}
	}
}
