package engine_test

import (
	"strings"
	"testing"

	"github.com/baton-sqs/baton/engine/ledger"
)

// backOffRounds plays a consumer that fails every message and gives each
// back with a back-off doubling from 1 s, as Baton's consumer does by
// default and `baton worker` on a queue without a RedrivePolicy: on a
// 30 s lease the back-offs of 1 to 16 s end within it (releases with a
// delay), those of 32 s and 64 s past it (a change past the lease's end
// reads as a renewal, and the lease lapses at the end it set). It polls
// on between rounds, and returns when the last back-off ended (in ms).
func (in *incident) backOffRounds(ms, n int, delays ...int) int {
	in.t.Helper()
	for _, d := range delays {
		in.atMs(ms)
		held := map[string]string{}
		for range n {
			for id, h := range in.receiveAs(sdkClient, 1) {
				held[id] = h
			}
		}
		in.atMs(ms + 100) // failed
		for _, h := range held {
			in.changeAs(sdkClient, h, d)
		}
		in.atMs(ms + 100 + d*500)
		in.receiveAs(sdkClient, 1) // polls on: nothing visible until the back-offs end
		ms += 100 + d*1000 + 100
	}
	return ms
}

// A worker's back-offs on failing messages go first as releases with a
// delay (retry-loop), then, grown past the lease, as lapses
// (handler-failing): the same messages' retries. Each finding says the
// other holds the rest of them; retry-loop no longer says its messages
// show in no other finding.
func TestDoctorBackOffsJoinedAcrossFindings(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "backoff-joined", map[string]string{"VisibilityTimeout": "30"})
	ms := in.quickLeases(sdkClient, 5, 0)
	in.send(3)
	ms = in.backOffRounds(ms, 3, 1, 2, 4, 8, 16, 32, 64)
	in.atMs(ms)
	in.receiveAs(sdkClient, 1)
	r := in.report()
	loop, failing := finding(r, ledger.DiagnosisRetryLoop), finding(r, ledger.DiagnosisHandlerFailing)
	if loop.Leases == 0 || failing.Leases == 0 {
		t.Fatalf("want both retry-loop and handler-failing: %+v", r.Findings)
	}
	if strings.Contains(loop.Evidence, "they show in no other finding") {
		t.Errorf("retry-loop says its messages show in no other finding, though handler-failing holds their later lapses: %s", loop.Evidence)
	}
	// 3 messages: 9 releases within the lease after two before (4, 8 and
	// 16 s), then 6 lapses (32 and 64 s).
	if loop.Leases != 9 || failing.Leases != 6 {
		t.Errorf("retry-loop on %d leases, handler-failing on %d: want 9 and 6", loop.Leases, failing.Leases)
	}
	contains(t, loop.Evidence, "6 other leases of 3 of those messages lapsed at the end a change past the lease's end had set", "(handler-failing's count), the same retries")
	contains(t, failing.Evidence, "6 of those lapses are of messages the retry-loop finding names", "their back-off grown longer than the lease had left")
	// The one consumer received them again: no other receiver.
	if strings.Contains(failing.Evidence, "another receiver") {
		t.Errorf("handler-failing names another receiver, though one consumer received every message: %s", failing.Evidence)
	}
}
