package engine_test

import (
	"testing"

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
