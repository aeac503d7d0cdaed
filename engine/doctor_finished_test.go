package engine_test

import (
	"testing"

	"github.com/baton-sqs/baton/engine/ledger"
)

// Handlers that overran a 60 s lease, each message worked twice: the
// receiver it went to after the lapse deleted it in time, and the first
// holder's late delete found it already deleted. Their receives and lapses
// fell before the 15-minute window, their late deletes in it, beside one
// lease completed in time: three leases whose handlers finished in the
// period judged, two of which overran. The finding rests on the leases the
// handlers finished, not on the completed ones alone: counted by those,
// two leases read too-few-leases while messages ran twice.
func TestDoctorOverrunEndingInDeletesOfMessagesAlreadyDeleted(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "twice-late", map[string]string{"VisibilityTimeout": "60"})
	in.send(3)
	first := map[string]string{}
	for range 2 {
		for id, h := range in.receiveAs(sdkClient, 1) {
			first[id] = h
		}
	}
	in.at(61)
	second := in.receiveAs(sdkClient, 10)
	if len(second) != 3 {
		t.Fatalf("received %d, want the two lapsed messages and the third", len(second))
	}
	in.at(62)
	var third string
	for id, h := range second {
		if _, again := first[id]; again {
			in.delAs(sdkClient, h)
		} else {
			third = h
		}
	}
	in.at(116) // in the window judged at 1000 s (its minute begins at 115 s), within the lease
	in.delAs(sdkClient, third)
	in.at(1000)
	for _, h := range first {
		in.delAs(sdkClient, h) // late, the message already deleted: succeeds, as on SQS
	}
	r := in.report()
	s := r.Window
	if s.Received != 0 || s.Completed != 1 || s.AlreadyDeleted != 2 || s.Finished() != 3 || s.LateLeases != 2 || s.Duplicates != 2 {
		t.Fatalf("window %+v: want no receive, 1 completed, 2 deletes of messages already deleted, 2 leases late, 2 duplicates", s)
	}
	expect(t, r, ledger.DiagnosisLeaseTooShort, ledger.DiagnosisLeaseTooShort)
	f := finding(r, ledger.DiagnosisLeaseTooShort)
	if f.Leases != 3 {
		t.Errorf("lease-too-short rests on %d leases, want the 3 whose handlers finished", f.Leases)
	}
	contains(t, f.Evidence, "overran their lease (2 of 3 leases)", "2 confirmed duplicate executions", "2 deletes found their message already deleted")
	if r.RecommendedVisibilityTimeout < 1400 {
		t.Errorf("recommended %d s, want the 939 s handlers × 1.5", r.RecommendedVisibilityTimeout)
	}
}
