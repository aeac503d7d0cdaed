package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/baton-sqs/baton/engine/ledger"
)

// The doctor at the edges where it could say more than its leases show:
// leases longer or shorter than the queue's timeout, a slow tail beyond
// the p99, release loops too short for a finding.

// Receives that ask for a longer lease (ReceiveMessage VisibilityTimeout
// 120 on a 30 s queue) and complete within it overran nothing: no
// lease-too-short, and no "within the 30s visibility timeout" either.
func TestDoctorEdgeLongerLeaseOnReceive(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "override", map[string]string{"VisibilityTimeout": "30"})
	in.send(5)
	got := in.receive(10, ptr(120))
	in.at(90)
	for _, h := range got {
		in.del(h)
	}
	r := in.report()
	expect(t, r, ledger.DiagnosisHealthy)
	if strings.Contains(r.Advice, "overran") || strings.Contains(r.Advice, "within the 30s visibility timeout") {
		t.Errorf("advice says more than the leases show: %s", r.Advice)
	}
	contains(t, r.Advice, "no lease lapsed or completed late", "p99 90.0s", "longer than the 30s visibility timeout now in force",
		"received with a longer VisibilityTimeout, or before the queue's was lowered")
	if r.RecommendedVisibilityTimeout != 135 {
		t.Errorf("recommended %d s, want 135 (the p99 × 1.5)", r.RecommendedVisibilityTimeout)
	}
}

// Leases of 90 s within a 120 s timeout, then the timeout lowered to 30 s:
// those leases did not overrun, and the doctor says that at 30 s they
// would.
func TestDoctorEdgeTimeoutLowered(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "lowered", map[string]string{"VisibilityTimeout": "120"})
	in.send(5)
	got := in.receive(10, nil)
	in.at(90)
	for _, h := range got {
		in.del(h)
	}
	expect(t, in.report(), ledger.DiagnosisHealthy)
	if err := in.e.SetQueueAttributes(context.Background(), in.ref, map[string]string{"VisibilityTimeout": "30"}); err != nil {
		t.Fatal(err)
	}
	r := in.report()
	expect(t, r, ledger.DiagnosisHealthy)
	if strings.Contains(r.Advice, "overran their lease") || strings.Contains(r.Advice, "within the 30s") {
		t.Errorf("advice says more than the leases show: %s", r.Advice)
	}
	contains(t, r.Advice, "longer than the 30s visibility timeout now in force", "at 30s such leases would overrun")
}

// A timeout sized from the mean: 300 handlers of 1 s and three of 45 s on
// a 30 s lease. The p99 fits the timeout; the tail overruns it. The fix
// covers the tail, never "the p99 × 1.5" of a p99 the overruns are beyond.
func TestDoctorEdgeTailBeyondP99(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "tail", map[string]string{"VisibilityTimeout": "30"})
	in.send(300)
	sec := 0
	for i := range 300 {
		in.at(sec)
		_, h := in.receiveOne()
		in.at(sec + 1)
		in.del(h)
		sec++
		if i%100 == 50 {
			in.send(1)
			in.at(sec)
			_, slow := in.receiveOne()
			in.at(sec + 45)
			in.del(slow)
			sec += 46
		}
	}
	r := in.report()
	expect(t, r, ledger.DiagnosisLeaseTooShort, ledger.DiagnosisLeaseTooShort)
	f := finding(r, ledger.DiagnosisLeaseTooShort)
	if strings.Contains(f.Fix, "the p99 × 1.5") {
		t.Errorf("fix sizes the timeout from a p99 the overruns are beyond: %s", f.Fix)
	}
	contains(t, f.Evidence, "3 of 303 leases", "lease p99 is 1.0s")
	contains(t, f.Fix, "the slowest leases overran it", "the longest took 45.0s", "renew the lease while the handler works",
		"set VisibilityTimeout to 68s (the longest × 1.5)")
	if r.RecommendedVisibilityTimeout != 68 {
		t.Errorf("recommended %d s, want 68 (45 s × 1.5)", r.RecommendedVisibilityTimeout)
	}
}

// One "not ready" message released at once on every receive until its
// RedrivePolicy dead-letters it: too few leases for a finding, but not
// healthy.
func TestDoctorEdgeReleaseLoopTooFew(t *testing.T) {
	t.Parallel()
	in := newRedriveIncident(t, "loop", 3)
	in.send(1)
	in.releaseRounds(4)
	r := in.report()
	expect(t, r, ledger.DiagnosisTooFewLeases)
	contains(t, r.Advice, "2 leases were released at once", "too few to name a problem")
}

// A 12-hour timeout as a blanket fix, and a handler that throws before
// DeleteMessage: its lease runs on for hours while its holder goes on
// polling. The held leases' holder is not gone: the doctor says so, and
// names the error path among the readings.
func TestDoctorEdgeHeldByLiveHolder(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "blanket", map[string]string{"VisibilityTimeout": "43200"})
	ms := in.quickLeases(sdkClient, 5, 0)
	in.send(3)
	in.atMs(ms)
	if got := in.receiveAs(sdkClient, 10); len(got) != 3 {
		t.Fatalf("received %d", len(got))
	}
	for s := 5; s <= 60; s += 5 { // the handlers threw; the consumer polls on
		in.atMs(ms + 1000*s)
		in.receiveAs(sdkClient, 10)
	}
	r := in.report()
	expect(t, r, ledger.DiagnosisHeldUnrenewed, ledger.DiagnosisHeldUnrenewed)
	if strings.Contains(r.Advice, "Their holder is gone") {
		t.Errorf("says the holder is gone though it went on polling: %s", r.Advice)
	}
	contains(t, r.Advice, "Their holder went on making requests on the queue since it received them (the last 0s ago): it is not gone, unless another consumer shares its address and user agent",
		"failed without deleting or releasing the message (an error path)", "hung without a heartbeat",
		"a consumer that crashes holding messages stalls them that long")
}

// Held leases of a live holder beside those of one that stopped: each
// reading is given for the leases it fits.
func TestDoctorEdgeHeldByLiveAndStoppedHolders(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "blanket", map[string]string{"VisibilityTimeout": "43200"})
	ms := in.quickLeases(sdkClient, 5, 0)
	stopped := ledger.Client{Addr: "10.0.0.21", UserAgent: sdkClient.UserAgent}
	in.send(5)
	in.atMs(ms)
	if got := in.receiveAs(stopped, 2); len(got) != 2 {
		t.Fatalf("received %d", len(got))
	}
	if got := in.receiveAs(sdkClient, 10); len(got) != 3 {
		t.Fatalf("received %d", len(got))
	}
	for s := 5; s <= 60; s += 5 {
		in.atMs(ms + 1000*s)
		in.receiveAs(sdkClient, 10)
	}
	r := in.report()
	expect(t, r, ledger.DiagnosisHeldUnrenewed, ledger.DiagnosisHeldUnrenewed)
	contains(t, r.Advice, "5 leases held far beyond", "The holders of 3 of them went on making requests on the queue since they received them",
		"an error path", "the others' holders made no request since: gone (crashed, killed, or stopped without releasing) or hung whole")
}

// Receives that ask for a shorter lease than the queue's (VisibilityTimeout
// 10 on a 300 s queue) and overrun it: the leases overran the 10 s they
// asked for, so the fix is to ask for more, not a queue timeout above the
// 300 s they never had.
func TestDoctorEdgeShorterLeaseOnReceive(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "asks-less", map[string]string{"VisibilityTimeout": "300"})
	in.send(5)
	got := in.receive(10, ptr(10))
	in.at(20)
	for _, h := range got {
		in.del(h)
	}
	r := in.report()
	expect(t, r, ledger.DiagnosisLeaseTooShort, ledger.DiagnosisLeaseTooShort)
	f := finding(r, ledger.DiagnosisLeaseTooShort)
	for _, wrong := range []string{"Set VisibilityTimeout to 301s", "ended within the timeout"} {
		if strings.Contains(r.Advice, wrong) {
			t.Errorf("advice says %q: %s", wrong, r.Advice)
		}
	}
	contains(t, f.Evidence, "5 of 5 leases", "the leases that overran were given at most 10.0s",
		"shorter than the queue's 300s")
	contains(t, f.Fix, "Ask for at least 30s", "(the p99 × 1.5)", "or leave it out for the queue's 300s")
	if r.RecommendedVisibilityTimeout != 300 {
		t.Errorf("recommended %d s; want the queue's 300 s, which covers the leases", r.RecommendedVisibilityTimeout)
	}
}
