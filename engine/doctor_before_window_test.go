package engine_test

import (
	"strings"
	"testing"

	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/engine/ledger"
)

// A pod that crashed holding three messages on a 10-minute lease, received
// before the 15-minute window and lapsed in it, its holder not seen since;
// another consumer works on. The window counts the three lapses, so the
// doctor must say what their holder did: it stopped (or works on without a
// request), not a handler failing while its consumer went on.
func TestDoctorLapsesOfLeasesBegunBeforeTheWindowAreSorted(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "long", map[string]string{"VisibilityTimeout": "600"})
	pod := ledger.Client{Addr: "10.0.2.1", UserAgent: sdkClient.UserAgent}
	in.send(3)
	in.at(10)
	for range 3 {
		if got := in.receiveAs(pod, 1); len(got) != 1 {
			t.Fatalf("received %d", len(got))
		}
	}
	// The pod crashes; another consumer's leases go well, in the window.
	ms := in.quickLeases(sdkClient, 5, 900_000)
	in.atMs(ms + 100_000)
	r := in.report()
	if r.JudgedSinceStart || r.Window.Expired != 3 || r.Window.Received != 5 {
		t.Fatalf("window %+v, judged since start %v: want the 3 lapses and the 5 quick leases", r.Window, r.JudgedSinceStart)
	}
	expect(t, r, ledger.DiagnosisHoldersStopped, ledger.DiagnosisHoldersStopped)
	lacks(t, r, ledger.DiagnosisHandlerFailing)
	contains(t, finding(r, ledger.DiagnosisHoldersStopped).Evidence, "3 leases lapsed and 1 holder (10.0.2.1 aws-sdk-go-v2/1.36.3)")
}

// Handlers that take 100 s under receives asking for a 10 s lease (the
// queue's is 300 s), received just before the 15-minute window, their late
// deletes in it (each message was deleted meanwhile by the receiver it
// went to): the leases that overran are judged against the 10 s they were
// given, not the queue's 300 s, which they did not overrun. Said against
// the queue's, the doctor read "ended within their lease" of leases that
// overran it, and gave no figure to ask for.
func TestDoctorOverrunOfAskedLeasesBegunBeforeTheWindow(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "asked", map[string]string{"VisibilityTimeout": "300"})
	in.send(3)
	in.at(890)
	first := map[string]string{}
	for range 3 {
		msgs, err := in.e.ReceiveMessage(as(sdkClient), in.ref, engine.ReceiveParams{MaxNumberOfMessages: ptr(1), VisibilityTimeout: ptr(10)})
		if err != nil || len(msgs) != 1 {
			t.Fatalf("receive: %d, %v", len(msgs), err)
		}
		first[msgs[0].MessageID] = msgs[0].ReceiptHandle
	}
	in.at(901)
	for _, h := range in.receiveAs(sdkClient, 10) {
		in.delAs(sdkClient, h)
	}
	in.at(990)
	for _, h := range first {
		in.delAs(sdkClient, h) // 100 s after its receive, 90 s late
	}
	in.at(1800) // the window begins after the receives, before the late deletes
	r := in.report()
	if r.JudgedSinceStart || r.Window.LateLeases != 3 || r.Window.Received != 0 {
		t.Fatalf("window %+v: want the 3 late leases and none of the receives", r.Window)
	}
	expect(t, r, ledger.DiagnosisLeaseTooShort, ledger.DiagnosisLeaseTooShort)
	f := finding(r, ledger.DiagnosisLeaseTooShort)
	contains(t, f.Evidence, "the leases that overran were given at most 10.0s")
	contains(t, f.Fix, "Ask for at least 150s")
	if strings.Contains(f.Evidence, "ended within their lease") {
		t.Errorf("leases that overran said to end within their lease: %s", f.Evidence)
	}
}
