package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/baton-sqs/baton/engine/ledger"
)

// A 90 s handler on a 30 s lease, and the fix applied mid-window: the
// queue's VisibilityTimeout raised to 135 s. The leases that overran had
// the queue's timeout of the time; no receive asked for less. The doctor
// says the timeout was raised and covers them, recommends what is in
// force (never one second more), and names no receive that asked.
func TestDoctorRaisedTimeoutMidWindow(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "raised", map[string]string{"VisibilityTimeout": "30"})
	in.send(3)
	first := in.receive(10, nil)
	in.at(31)
	second := in.receive(10, nil)
	in.at(90)
	for _, h := range first {
		in.del(h)
	}
	in.at(121)
	for _, h := range second {
		in.del(h)
	}
	r := in.report()
	expect(t, r, ledger.DiagnosisLeaseTooShort, ledger.DiagnosisLeaseTooShort)
	if r.RecommendedVisibilityTimeout != 135 {
		t.Fatalf("recommended %d s before the fix, want 135", r.RecommendedVisibilityTimeout)
	}
	if err := in.e.SetQueueAttributes(context.Background(), in.ref, map[string]string{"VisibilityTimeout": "135"}); err != nil {
		t.Fatal(err)
	}
	r = in.report()
	expect(t, r, ledger.DiagnosisLeaseTooShort, ledger.DiagnosisLeaseTooShort)
	f := finding(r, ledger.DiagnosisLeaseTooShort)
	contains(t, f.Evidence, "given at most 30.0s, the queue's VisibilityTimeout when they were received: it has been raised to 135s since")
	contains(t, f.Fix, "The 135s now in force covers them (the p99 × 1.5 is 135s)")
	if strings.Contains(r.Advice, "asked for") || strings.Contains(r.Advice, "Ask for") {
		t.Errorf("advice blames receives that asked for nothing: %s", r.Advice)
	}
	if r.RecommendedVisibilityTimeout != 135 {
		t.Errorf("recommended %d s with 135 s in force and covering the p99 × 1.5, want 135", r.RecommendedVisibilityTimeout)
	}

	// Raised, but not enough: the figure is still given.
	if err := in.e.SetQueueAttributes(context.Background(), in.ref, map[string]string{"VisibilityTimeout": "60"}); err != nil {
		t.Fatal(err)
	}
	r = in.report()
	f = finding(r, ledger.DiagnosisLeaseTooShort)
	contains(t, f.Fix, "The 60s now in force is still short of them: set VisibilityTimeout to 135s")
	if r.RecommendedVisibilityTimeout != 135 {
		t.Errorf("recommended %d s, want 135", r.RecommendedVisibilityTimeout)
	}
}

// Receives that asked for a 30 s lease on a 135 s queue are still told to
// ask for more: the reading above is only for the queue's own timeout.
func TestDoctorRaisedNotForAskedLeases(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "asked", map[string]string{"VisibilityTimeout": "135"})
	in.send(3)
	first := in.receive(10, ptr(30))
	in.at(31)
	second := in.receive(10, ptr(30))
	in.at(90)
	for _, h := range first {
		in.del(h)
	}
	in.at(121)
	for _, h := range second {
		in.del(h)
	}
	r := in.report()
	expect(t, r, ledger.DiagnosisLeaseTooShort, ledger.DiagnosisLeaseTooShort)
	contains(t, r.Advice, "the VisibilityTimeout their receive or last renewal asked for", "Ask for at least 135s")
	if strings.Contains(r.Advice, "raised") {
		t.Errorf("advice says the timeout was raised: %s", r.Advice)
	}
}
