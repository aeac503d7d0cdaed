package engine_test

import (
	"strings"
	"testing"
	"time"

	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/engine/ledger"
)

// Two consumers of one queue with different bugs: one handler came back
// ten minutes late on a 30 s lease, while another consumer throws before
// DeleteMessage on every message and goes on polling. The throwing
// consumer's lapses may be slow handlers that come back late, for as long
// as the late one took; but they are never left out of the report, as if
// the longer timeout recommended covered them: the doctor says both
// readings, then names the failing handlers once that time has passed.
func TestDoctorPendingLapsesAreSaid(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "pending", map[string]string{"VisibilityTimeout": "30"})
	failing := ledger.Client{Addr: "10.0.0.21", UserAgent: "aws-sdk-go-v2/1.36.3 os/linux lang/go#1.24 api/sqs#1.38.1"}
	in.send(1)
	slow := in.receiveAs(sdkClient, 1)
	in.at(100)
	in.send(5)
	for s := 100; s <= 600; s += 20 {
		in.at(s)
		in.receiveAs(failing, 1) // the handler throws: nothing deleted, nothing released
	}
	in.at(600)
	for _, h := range slow {
		in.delAs(sdkClient, h) // ten minutes late
	}
	in.at(605)
	r := in.report()
	lacks(t, r)
	if r.Window.Expired < 10 {
		t.Fatalf("window %+v; want the failing consumer's lapses", r.Window)
	}
	contains(t, r.Advice, "have not come back yet", "failing before DeleteMessage if not (a longer timeout would not help those)")

	// Past ten minutes after their receive, the lapses the failing
	// consumer never came back for are named.
	for s := 620; s <= 800; s += 20 {
		in.at(s)
		in.receiveAs(failing, 1)
	}
	r = in.report()
	f := finding(r, ledger.DiagnosisHandlerFailing)
	if f.Leases < ledger.MinFindingLeases {
		t.Errorf("no handler-failing finding once the lapses are older than the late holder took: %s", r.Advice)
	}
	// Its latest lapse is of those named: the lease received at 200 s,
	// ten minutes before the report, lapsed at 230 s; those received since
	// lapsed later, but their holder may yet come back late.
	lastIs(t, r, ledger.DiagnosisHandlerFailing, "lapse", 230, 570*time.Second, "last lapse 9m30s ago")
}

// Three consumers with different bugs: one came back 90 s late on a 30 s
// lease, one throws on three messages and goes on polling, and one crashed
// holding three others. The crashed consumer's lapses are holders-stopped's
// (which says they may still be working); they are no lapses "not come
// back yet" as well, and they do not hide the throwing consumer's, older
// than the late holder took: those are a failing handler.
func TestDoctorPendingLapsesOfStoppedHolders(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "mix", map[string]string{"VisibilityTimeout": "30"})
	slow := ledger.Client{Addr: "10.0.0.1", UserAgent: sdkClient.UserAgent}
	failing := ledger.Client{Addr: "10.0.0.2", UserAgent: sdkClient.UserAgent}
	crashed := ledger.Client{Addr: "10.0.0.3", UserAgent: sdkClient.UserAgent}
	in.send(1)
	late := in.receiveAs(slow, 1)
	in.send(3)
	for range 3 {
		in.receiveAs(failing, 1)
	}
	for s := 35; s <= 170; s += 5 {
		in.at(s)
		switch s {
		case 90:
			for _, h := range late {
				in.delAs(slow, h) // 60 s late
			}
		case 100:
			in.send(3)
			for range 3 {
				in.receiveAs(crashed, 1)
			}
		}
		// The failing consumer polls on, taking nothing for long.
		if _, err := in.e.ReceiveMessage(as(failing), in.ref, engine.ReceiveParams{MaxNumberOfMessages: ptr(1), VisibilityTimeout: ptr(0)}); err != nil {
			t.Fatal(err)
		}
	}
	r := in.report()
	expect(t, r, ledger.DiagnosisLeaseTooShort, ledger.DiagnosisLeaseTooShort, ledger.DiagnosisHandlerFailing, ledger.DiagnosisHoldersStopped)
	if f := finding(r, ledger.DiagnosisHandlerFailing); f.Leases != 3 {
		t.Errorf("handler-failing on %d leases, want the failing consumer's 3: %s", f.Leases, f.Evidence)
	}
	if f := finding(r, ledger.DiagnosisHoldersStopped); f.Leases != 3 {
		t.Errorf("holders-stopped on %d leases, want the crashed consumer's 3: %s", f.Leases, f.Evidence)
	}
	if strings.Contains(r.Advice, "have not come back yet") {
		t.Errorf("the stopped holders' lapses said pending too: %s", r.Advice)
	}
}

// Lapses of leases begun before the 15 minutes judged, that lapsed in
// them, whose holder goes on polling while another holder came back 40
// minutes late: they may be slow too, and are said so, not named failing.
func TestDoctorPendingLapsesBegunBeforeTheWindow(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "long", map[string]string{"VisibilityTimeout": "1200"})
	slow := ledger.Client{Addr: "10.0.0.1", UserAgent: sdkClient.UserAgent}
	polling := ledger.Client{Addr: "10.0.0.2", UserAgent: sdkClient.UserAgent}
	in.send(1)
	late := in.receiveAs(slow, 1)
	in.at(1500)
	in.send(3)
	for range 4 {
		// The three, and the slow holder's message, lapsed at 1200 s,
		// which its late delete takes back: three lapse at 2700 s, in the
		// 15 minutes before 2900 s.
		in.receiveAs(polling, 1)
	}
	in.at(2400)
	for _, h := range late {
		in.delAs(slow, h) // 20 minutes late, 40 minutes after its receive
	}
	for s := 2750; s <= 2900; s += 50 {
		in.at(s)
		if _, err := in.e.ReceiveMessage(as(polling), in.ref, engine.ReceiveParams{MaxNumberOfMessages: ptr(1), VisibilityTimeout: ptr(0)}); err != nil {
			t.Fatal(err)
		}
	}
	r := in.report()
	if finding(r, ledger.DiagnosisHandlerFailing).Kind != "" {
		t.Errorf("lapses whose holder may yet come back late named failing: %s", r.Advice)
	}
	contains(t, r.Advice, "3 leases received in the last 40m0s lapsed and their holders have not come back yet")
}

// A failing consumer's three lapses and a crashed consumer's three, all six
// messages received again and deleted by a third: handler-failing says
// three of its own lapses were received again, not the six of the queue
// (it said "6 received again since", counting the crashed consumer's,
// which are holders-stopped's).
func TestDoctorFailingCountsItsOwnReceivedAgain(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "again", map[string]string{"VisibilityTimeout": "30"})
	failing := ledger.Client{Addr: "10.0.0.2", UserAgent: sdkClient.UserAgent}
	crashed := ledger.Client{Addr: "10.0.0.3", UserAgent: sdkClient.UserAgent}
	rescuer := ledger.Client{Addr: "10.0.0.4", UserAgent: sdkClient.UserAgent}
	in.send(6)
	for range 3 {
		in.receiveAs(failing, 1)
		in.receiveAs(crashed, 1)
	}
	in.at(40)
	again := in.receiveAs(rescuer, 10)
	if len(again) != 6 {
		t.Fatalf("received again %d, want the 6 lapsed", len(again))
	}
	for _, h := range again {
		in.delAs(rescuer, h)
	}
	for s := 45; s <= 170; s += 5 {
		in.at(s)
		// The failing consumer polls on, finding nothing.
		if _, err := in.e.ReceiveMessage(as(failing), in.ref, engine.ReceiveParams{MaxNumberOfMessages: ptr(1)}); err != nil {
			t.Fatal(err)
		}
	}
	r := in.report()
	f := finding(r, ledger.DiagnosisHandlerFailing)
	if f.Leases != 3 || !strings.Contains(f.Evidence, "3 leases lapsed and their holders have not come back with a late completion (3 of them received again since") {
		t.Errorf("handler-failing on %d leases: %s\nwant its 3 lapses, the 3 of them received again", f.Leases, f.Evidence)
	}
	if f := finding(r, ledger.DiagnosisHoldersStopped); f.Leases != 3 {
		t.Errorf("holders-stopped on %d leases, want the crashed consumer's 3: %s", f.Leases, f.Evidence)
	}
}
