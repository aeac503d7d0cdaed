package engine_test

import (
	"strings"
	"testing"

	"github.com/baton-sqs/baton/engine/ledger"
)

// "Not ready" consumers on a queue whose RedrivePolicy has maxReceiveCount
// 1: each message is released at once (ChangeMessageVisibility 0) after
// its one receive, and the next receive moves it to the dead-letter queue.
// No release follows a release, yet every message reached the dead-letter
// queue without a lease of it lapsing: the doctor names the loop, never
// healthy.
func TestDoctorLoopReleaseThenDeadLettered(t *testing.T) {
	t.Parallel()
	in := newRedriveIncident(t, "once", 1)
	in.send(5)
	for i := range 3 {
		in.at(i)
		for _, h := range in.receive(10, nil) {
			in.change(h, 0)
		}
	}
	r := in.report()
	expect(t, r, ledger.DiagnosisReleaseLoop, ledger.DiagnosisReleaseLoop)
	if s := r.Window; s.DeadLettered != 5 || s.DeadLetteredAfterRelease != 5 || s.ReleaseLoopLeases != 5 {
		t.Errorf("window %+v; want 5 messages dead-lettered right after a release at once", s)
	}
	f := finding(r, ledger.DiagnosisReleaseLoop)
	if f.Leases != 5 {
		t.Errorf("finding rests on %d leases, want 5", f.Leases)
	}
	contains(t, f.Evidence, "5 messages were moved to the dead-letter queue at the receive right after one that gave them straight back")
	contains(t, f.Fix, "a message is moved to once-dlq after 1 receive that gave it straight back", "the server cannot see")
}

// A look with ReceiveMessage VisibilityTimeout 0 counts toward
// maxReceiveCount as on SQS: on a maxReceiveCount of 1, the consumers'
// next receive moves every message looked at to the dead-letter queue.
func TestDoctorLoopPeekThenDeadLettered(t *testing.T) {
	t.Parallel()
	in := newRedriveIncident(t, "peeked", 1)
	in.send(4)
	in.receive(10, ptr(0))
	in.at(1)
	if got := in.receive(10, nil); len(got) != 0 {
		t.Fatalf("received %d, want every message moved", len(got))
	}
	r := in.report()
	expect(t, r, ledger.DiagnosisReleaseLoop, ledger.DiagnosisReleaseLoop)
	contains(t, r.Advice, "4 messages were moved to the dead-letter queue", "received with VisibilityTimeout 0")
}

// One message so moved is too few for a finding, but not healthy.
func TestDoctorLoopOneDeadLetteredTooFew(t *testing.T) {
	t.Parallel()
	in := newRedriveIncident(t, "one", 1)
	in.send(1)
	for i := range 2 {
		in.at(i)
		for _, h := range in.receive(10, nil) {
			in.change(h, 0)
		}
	}
	r := in.report()
	expect(t, r, ledger.DiagnosisTooFewLeases)
	contains(t, r.Advice, "1 message was moved to the dead-letter queue", "too few to name a problem")
}

// A person's look on a queue with a RedrivePolicy: the advice does not
// offer a receive with VisibilityTimeout 0 as a harmless look, since it
// counts toward maxReceiveCount as every receive does.
func TestDoctorLoopInspectionOnRedriveQueue(t *testing.T) {
	t.Parallel()
	in := newRedriveIncident(t, "looked", 3)
	ms := in.quickLeases(sdkClient, 5, 0)
	in.send(5)
	in.atMs(ms)
	if got := in.receiveAs(awsCLI, 5); len(got) != 5 {
		t.Fatalf("received %d", len(got))
	}
	in.at(40)
	for _, h := range in.receiveAs(sdkClient, 10) {
		in.delAs(sdkClient, h)
	}
	in.at(100)
	r := in.report()
	expect(t, r, ledger.DiagnosisInspection, ledger.DiagnosisInspection)
	f := finding(r, ledger.DiagnosisInspection)
	contains(t, f.Fix, "counted toward the RedrivePolicy's maxReceiveCount (3)", "a ReceiveMessage with VisibilityTimeout 0 still counts")
	if strings.Contains(f.Fix, "(or ReceiveMessage with VisibilityTimeout 0)") {
		t.Errorf("fix offers a receive that counts toward maxReceiveCount as a look: %s", f.Fix)
	}
}
