package engine_test

import (
	"testing"

	"github.com/baton-sqs/baton/engine/ledger"
)

// batchFailingWhole is a queue with 30 s leases (and quick ones of
// sdkClient's before) whose three messages a function takes together at
// 10, 41 and 72 s and fails whole each time: the leases lapse.
func batchFailingWhole(t *testing.T) (*incident, ledger.Client) {
	t.Helper()
	in := newIncident(t, "two-bugs", map[string]string{"VisibilityTimeout": "30"})
	fn := ledger.Client{Addr: "10.0.3.1", UserAgent: "aws-lambda-go/1.0"}
	in.quickLeases(sdkClient, 5, 0)
	in.send(3)
	for round := range 3 {
		in.at(10 + 31*round)
		if got := in.receiveAs(fn, 10); len(got) != 3 {
			t.Fatalf("round %d: the function received %d", round, len(got))
		}
	}
	return in, fn
}

// Two consumers of one queue with different bugs: a function that fails
// its batches whole (their leases lapse, the function polls on), and a
// consumer that retries every message it takes with a back-off, none ever
// completing. Each is named: the batch finding first, and the retry loop
// of the other consumer's messages beside it, not hidden by it.
func TestDoctorBatchFailingWholeBesideARetryLoop(t *testing.T) {
	t.Parallel()
	in, fn := batchFailingWhole(t)
	// Meanwhile the retrying consumer's own three messages go round,
	// while the function holds its batch.
	in.at(73)
	in.send(3)
	for round := range 3 {
		s := 74 + 10*round
		in.at(s)
		got := map[string]string{}
		for range 3 {
			for id, h := range in.receiveAs(sdkClient, 1) {
				got[id] = h
			}
		}
		if len(got) != 3 {
			t.Fatalf("round %d: the retrying consumer received %d", round, len(got))
		}
		in.at(s + 1)
		for _, h := range got {
			in.changeAs(sdkClient, h, 5)
		}
		in.at(s + 2)
		in.receiveAs(sdkClient, 1) // polls on: nothing visible
	}
	in.at(110)
	in.receiveAs(fn, 10) // the function polls on, after its last batch lapsed at 102
	in.at(112)
	r := in.report()
	expect(t, r, ledger.DiagnosisBatchFailsWhole, ledger.DiagnosisBatchFailsWhole, ledger.DiagnosisRetryLoop)
	if f := finding(r, ledger.DiagnosisRetryLoop); f.Leases != 3 {
		t.Errorf("retry-loop on %d leases, want the retrying consumer's 3", f.Leases)
	}
}

// The same function beside a "not ready" consumer that gives each message
// straight back (ChangeMessageVisibility 0) again and again: its release
// loop is named beside the batch finding, not hidden by it.
func TestDoctorBatchFailingWholeBesideAReleaseLoop(t *testing.T) {
	t.Parallel()
	in, fn := batchFailingWhole(t)
	in.at(73)
	in.send(3)
	for round := range 3 {
		in.at(74 + round)
		for range 3 {
			for _, h := range in.receiveAs(sdkClient, 1) {
				in.changeAs(sdkClient, h, 0)
			}
		}
	}
	in.at(80)
	in.receiveAs(sdkClient, 1) // polls on
	in.at(110)
	in.receiveAs(fn, 10) // the function polls on, after its last batch lapsed at 102
	in.at(112)
	r := in.report()
	expect(t, r, ledger.DiagnosisBatchFailsWhole, ledger.DiagnosisBatchFailsWhole, ledger.DiagnosisReleaseLoop)
}
