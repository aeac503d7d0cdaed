package engine_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/baton-sqs/baton/engine/ledger"
)

// A consumer that crashes on a batch (a poison message kills it) leaves
// the batch's leases to lapse together, as one that fails the batch whole
// does; but it makes no request afterward. Two consumers that each crash
// on the same batch and never come back are holders that stopped (or
// still work past their lease), not a batch failing whole: reporting
// partial batch responses would fix nothing. Within the grace a long poll
// takes, the second batch's holder is not yet known stopped, nor alive.
func TestDoctorBatchCrashIsNoBatchFailure(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "crash", map[string]string{"VisibilityTimeout": "30"})
	in.send(4)
	for i, s := range []int{0, 31} {
		in.at(s)
		c := ledger.Client{Addr: "10.0.5." + strconv.Itoa(i+1), UserAgent: sdkClient.UserAgent}
		if got := in.receiveAs(c, 10); len(got) != 4 {
			t.Fatalf("consumer %d received %d", i+1, len(got))
		}
	}
	in.at(70) // the second batch lapsed 9 s ago
	if r := in.report(); r.Diagnosis == ledger.DiagnosisBatchFailsWhole || strings.Contains(r.Advice, "partial batch") {
		t.Errorf("within the grace: %s, %v\n%s", r.Diagnosis, kinds(r), r.Advice)
	}
	in.at(100)
	r := in.report()
	expect(t, r, ledger.DiagnosisHoldersStopped, ledger.DiagnosisHoldersStopped)
	if strings.Contains(r.Advice, "partial batch") {
		t.Errorf("advises partial batch responses for consumers that crashed: %s", r.Advice)
	}
	if f := finding(r, ledger.DiagnosisHoldersStopped); f.Leases != 8 || !strings.Contains(f.Evidence, "and 1 more)") {
		t.Errorf("holders-stopped on %d leases, want 8 of 4 messages, each named once: %s", f.Leases, f.Evidence)
	}
}

// One consumer crashes on a batch, restarts under the same address and
// user agent, receives the batch again and crashes for good. The first
// batch's holder went on making requests: it failed its batch whole (a
// crash and restart reads the same), said with both readings; the second
// batch's holder made none since: it stopped. No batch failed whole twice
// in a row by a holder that went on.
func TestDoctorBatchCrashRestartOnce(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "restart", map[string]string{"VisibilityTimeout": "30"})
	in.send(4)
	in.receiveAs(sdkClient, 10)
	for s := 10; s <= 25; s += 5 {
		in.at(s)
		in.receiveAs(sdkClient, 10) // restarted: polls, finds the batch in flight
	}
	in.at(31)
	if got := in.receiveAs(sdkClient, 10); len(got) != 4 {
		t.Fatalf("received %d again", len(got))
	}
	in.at(100)
	r := in.report()
	expect(t, r, ledger.DiagnosisHandlerFailing, ledger.DiagnosisHandlerFailing, ledger.DiagnosisHoldersStopped)
	contains(t, finding(r, ledger.DiagnosisHandlerFailing).Evidence, "4 leases lapsed", "lapsed with every other message of the receive",
		"the server cannot tell which")
	if f := finding(r, ledger.DiagnosisHoldersStopped); f.Leases != 4 {
		t.Errorf("holders-stopped on %d leases, want the second batch's 4: %s", f.Leases, f.Evidence)
	}
}

// A consumer that crashes on a batch and restarts under the same address
// and user agent, again and again (a supervisor restarting it): the server
// sees the holder come back after each lapse, as it sees a consumer that
// fails its batches whole, and cannot tell the two apart. The batch
// finding says both, and that partial batch responses do not help a crash.
func TestDoctorBatchCrashRestartLoop(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "crashloop", map[string]string{"VisibilityTimeout": "30"})
	in.send(4)
	for _, s := range []int{0, 31, 62} {
		in.at(s)
		if got := in.receiveAs(sdkClient, 10); len(got) != 4 {
			t.Fatalf("at %d s received %d", s, len(got))
		}
		for p := s + 10; p < s+30; p += 5 {
			in.at(p)
			in.receiveAs(sdkClient, 10) // restarted: polls while the batch is in flight
		}
	}
	in.at(70)
	r := in.report()
	expect(t, r, ledger.DiagnosisBatchFailsWhole, ledger.DiagnosisBatchFailsWhole)
	contains(t, finding(r, ledger.DiagnosisBatchFailsWhole).Fix, "report partial batch responses",
		"Or a consumer crashes on one of their messages and restarts", "partial batch responses do not help a crash")
}
