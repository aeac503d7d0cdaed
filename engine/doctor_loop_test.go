package engine_test

import (
	"strconv"
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
	in.releaseRounds(3)
	r := in.report()
	expect(t, r, ledger.DiagnosisReleaseLoop, ledger.DiagnosisReleaseLoop)
	if s := r.Window; s.DeadLettered != 5 || s.DeadLetteredAfterRelease != 5 {
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
	in.releaseRounds(2)
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

// releaseAs releases the leases of handles at once, as c.
func (in *incident) releaseAs(c ledger.Client, handles map[string]string) {
	in.t.Helper()
	for _, h := range handles {
		if err := in.e.ChangeMessageVisibility(as(c), in.ref, h, ptr(0)); err != nil {
			in.t.Fatal(err)
		}
	}
}

// A rolling deploy of consumers that release what they hold as they stop,
// as the holders-stopped advice tells them to: the same messages go from
// one stopping consumer to the next, each releasing them at once. That is
// no release loop (no back-off would be right there), and the queue is
// healthy. The same releases by consumers that go on polling are one.
func TestDoctorLoopRollingDeployIsNoLoop(t *testing.T) {
	t.Parallel()
	for _, polls := range []bool{false, true} {
		in := newIncident(t, "rolling", map[string]string{"VisibilityTimeout": "30"})
		in.quickLeases(sdkClient, 5, 0)
		in.send(4)
		var held map[string]string
		var c, prev ledger.Client
		for i := range 4 {
			c = ledger.Client{Addr: "10.0.1." + strconv.Itoa(i+1), UserAgent: "aws-sdk-go-v2/1.36.3 os/linux lang/go#1.24 api/sqs#1.38.1"}
			in.at(10 + 10*i)
			held = in.receiveAs(c, 10)
			if len(held) != 4 {
				t.Fatalf("consumer %d received %d", i, len(held))
			}
			if polls && i > 0 {
				in.atMs((10+10*i)*1000 + 1)
				in.receiveAs(prev, 10) // it did not stop: the messages were not ready
			}
			if i == 3 {
				break
			}
			in.atMs((10+10*i)*1000 + 9000)
			in.releaseAs(c, held) // stopping: it gives back what it holds
			prev = c
		}
		in.at(45)
		for _, h := range held {
			in.delAs(c, h)
		}
		in.at(100)
		r := in.report()
		if !polls {
			expect(t, r, ledger.DiagnosisHealthy)
			// Its figures are releases, none of them a loop's: no count
			// of the report says otherwise.
			for _, s := range []ledger.LeaseStats{r.Window, r.SinceStart} {
				s.P50, s.P90, s.P99, s.Max, s.UnrenewedP99 = 0, 0, 0, 0, 0
				if want := (ledger.LeaseStats{Sent: 9, Received: 21, Completed: 9, UnrenewedCompleted: 9, Releases: 12}); s != want {
					t.Errorf("figures %+v, want %+v", s, want)
				}
			}
			continue
		}
		expect(t, r, ledger.DiagnosisReleaseLoop, ledger.DiagnosisReleaseLoop)
		contains(t, r.Advice, "8 leases were released at once", "by holders that went on making requests")
	}
}

// "Not ready" consumers on a queue without a RedrivePolicy: the release
// loop's evidence says what each receive counts in, and does not speak of
// a maxReceiveCount the queue does not have; with a RedrivePolicy it names
// the queue's.
func TestDoctorLoopReceivesCountWithoutRedrive(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "not-ready", map[string]string{"VisibilityTimeout": "30"})
	in.send(3)
	in.releaseRounds(4)
	f := finding(in.report(), ledger.DiagnosisReleaseLoop)
	contains(t, f.Evidence, "every receive counts in the message's ApproximateReceiveCount", "the queue has no RedrivePolicy")
	if strings.Contains(f.Evidence, "counts toward maxReceiveCount") {
		t.Errorf("a maxReceiveCount the queue does not have: %s", f.Evidence)
	}

	rd := newRedriveIncident(t, "not-ready-redrive", 5)
	rd.send(3)
	rd.releaseRounds(4)
	f = finding(rd.report(), ledger.DiagnosisReleaseLoop)
	contains(t, f.Evidence, "every receive counts toward the RedrivePolicy's maxReceiveCount (5)")
}
