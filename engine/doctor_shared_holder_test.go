package engine_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/baton-sqs/baton/engine/ledger"
)

// A deploy on one host: the old consumer process stops holding three
// messages without releasing them, and the new one, on the same host with
// the same SDK (the same address and user agent: the server tells holders
// apart by nothing else), polls on, takes them when their leases lapse and
// completes them in time. Nothing failed: a consumer stopped without
// releasing. The handler-failing finding the server must give (it cannot
// tell the two processes apart) says that reading too, with its fix,
// instead of calling the handlers failing as a fact.
func TestDoctorStoppedBesideASharedHolder(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "one-host-deploy", map[string]string{"VisibilityTimeout": "30"})
	ms := in.quickLeases(sdkClient, 5, 0)
	in.send(3)
	in.atMs(ms)
	for range 3 {
		in.receiveAs(sdkClient, 1) // the old process, which then stops
	}
	for _, s := range []int{10, 20, 29} {
		in.atMs(ms + 1000*s)
		in.receiveAs(sdkClient, 1) // the new one polls: nothing visible
	}
	in.atMs(ms + 31_000)
	for range 3 {
		for _, h := range in.receiveAs(sdkClient, 1) {
			in.atMs(ms + 31_200)
			in.delAs(sdkClient, h)
		}
	}
	in.atMs(ms + 60_000)
	in.receiveAs(sdkClient, 1)
	r := in.report()
	f := finding(r, ledger.DiagnosisHandlerFailing)
	contains(t, f.Evidence, "3 leases lapsed",
		"the same lapses come of a consumer that stopped without releasing them while another with the same address and user agent went on (a deploy on one host")
	contains(t, f.Fix, "If a consumer stopped while another on its host went on, those messages were stranded, not failed: Consumers that stop (a deploy, a scale-in) must release what they hold as they stop")
}

// A consumer receives four messages in one ReceiveMessage, fails three
// (they lapse at 30 s) and works on the fourth under a heartbeat. Whether
// the process that held the three stopped beside another with its address
// and user agent turns on when the fourth's receipt was last used: the
// same process holds every message of one receive, so a request by that
// receipt at the lapse or after it shows that process went on, and the
// reading of a consumer that stopped is ruled out (the old code said it
// whenever any holder was seen alive). Before the lapse, the process may
// have stopped since, and the reading stays.
func TestDoctorSharedHolderRuledOutByItsOwnReceive(t *testing.T) {
	t.Parallel()
	const stopped = "the same lapses come of a consumer that stopped without releasing them"
	for _, lastDelete := range []int{35, 5} {
		t.Run(fmt.Sprintf("fourth deleted at %ds", lastDelete), func(t *testing.T) {
			t.Parallel()
			in := newIncident(t, "one-receive", map[string]string{"VisibilityTimeout": "30"})
			in.send(4)
			got := in.receiveAs(sdkClient, 10)
			if len(got) != 4 {
				t.Fatalf("received %d, want 4 in one receive", len(got))
			}
			var fourth string
			for _, h := range got {
				fourth = h
				break
			}
			if lastDelete > 30 {
				in.at(20)
				in.changeAs(sdkClient, fourth, 30) // its heartbeat
			}
			in.at(lastDelete)
			in.delAs(sdkClient, fourth)
			in.at(40) // polls on; takes the lapsed ones back and completes them
			for _, h := range in.receiveAs(sdkClient, 10) {
				in.delAs(sdkClient, h)
			}
			for _, s := range []int{70, 100} {
				in.at(s)
				in.receiveAs(sdkClient, 10)
			}
			r := in.report()
			f := finding(r, ledger.DiagnosisHandlerFailing)
			if f.Kind == "" {
				t.Fatalf("no handler-failing finding: %s, %v\n%s", r.Diagnosis, kinds(r), r.Advice)
			}
			said := strings.Contains(f.Evidence, stopped) && strings.Contains(f.Fix, "If a consumer stopped while another on its host went on")
			if wantSaid := lastDelete < 30; said != wantSaid {
				t.Errorf("the reading of a consumer stopped beside another said %v, want %v\nevidence: %s\nfix: %s", said, wantSaid, f.Evidence, f.Fix)
			}
		})
	}
}
