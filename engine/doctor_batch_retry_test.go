package engine_test

import (
	"testing"

	"github.com/baton-sqs/baton/engine/ledger"
)

// Baton's consumer with several slots, whose handler fails every message:
// each receive takes several messages, each handled on its own slot, and
// each failure is released for a retry with a back-off of its own
// (ChangeMessageVisibility to a later time). No lease lapses; the
// messages come back, are received together again, and fail again. That
// is a retry loop, whatever the receives' sizes: named batch-fails-whole,
// its headline fix (partial batch responses) would do nothing. As the
// server cannot tell it from a consumer that releases a whole batch when
// one message fails, the batch reading is said beside it.
func TestDoctorBatchesReleasedWithADelayAreARetryLoop(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "slots", map[string]string{"VisibilityTimeout": "30"})
	in.quickLeases(sdkClient, 5, 0)
	in.send(4)
	for round := range 4 {
		s := 10 + 10*round
		in.at(s)
		got := in.receiveAs(sdkClient, 4)
		if len(got) != 4 {
			t.Fatalf("round %d received %d, want the 4 messages together", round, len(got))
		}
		i := 0
		for _, h := range got {
			in.atMs(s*1000 + 200 + 100*i) // each slot's handler fails in its own time
			in.changeAs(sdkClient, h, 3+i%2)
			i++
		}
		in.at(s + 2)
		in.receiveAs(sdkClient, 4) // the slots poll on: nothing visible yet
	}
	in.at(60)
	r := in.report()
	expect(t, r, ledger.DiagnosisRetryLoop, ledger.DiagnosisRetryLoop)
	lacks(t, r, ledger.DiagnosisBatchFailsWhole, ledger.DiagnosisHandlerFailing)
	f := finding(r, ledger.DiagnosisRetryLoop)
	if f.Leases != 8 {
		t.Errorf("retry-loop on %d leases, want the 8 released after two releases", f.Leases)
	}
	contains(t, f.Evidence, "8 leases were released with a delay", "a handler that fails and retries with a back-off",
		"All of those messages were received with every other message of a receive, all released with a delay and none completed",
		"one failing message takes its batch with it",
		// baton worker releases a batch its target throttles the same way
		"or what the consumer hands its batches to refused them whole (a throttled target")
	contains(t, f.Fix, "Look at the consumers' errors", "If the consumer fails a batch whole when one of its messages fails, report partial batch responses",
		"If its target throttles (429 or 503 with Retry-After")
}
