package engine_test

import (
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
