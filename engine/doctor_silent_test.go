package engine_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/baton-sqs/baton/engine/ledger"
)

// The classic overrun by workers that make no request while they work:
// each receives one message and works 90 s on a 30 s lease. Once their
// leases have lapsed 25 s, their silence is that of a stopped consumer as
// much as of one still working: the doctor says both, and the fix for
// each, never that they stopped as a fact; their late deletes then show
// the timeout too short.
func TestDoctorSilentSlowHoldersNotStopped(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "classic", map[string]string{"VisibilityTimeout": "30"})
	in.quickLeases(sdkClient, 5, 0)
	in.send(3)
	held := map[ledger.Client]string{}
	for i := range 3 {
		c := ledger.Client{Addr: "10.0.3." + strconv.Itoa(i+1), UserAgent: sdkClient.UserAgent}
		in.at(10)
		for _, h := range in.receiveAs(c, 1) {
			held[c] = h
		}
	}
	in.at(66)
	r := in.report()
	expect(t, r, ledger.DiagnosisHoldersStopped, ledger.DiagnosisHoldersStopped)
	if strings.Contains(r.Advice, "because their holders stopped") || strings.Contains(r.Advice, "never came back") {
		t.Errorf("a stop said as a fact: %s", r.Advice)
	}
	f := finding(r, ledger.DiagnosisHoldersStopped)
	contains(t, f.Evidence, "3 leases lapsed and 3 holders (10.0.3.1", "made no request on the queue since before those leases ended",
		"Either they stopped (a deploy, a scale-in, a crash) without releasing, or they are still working on them past their lease", "the server cannot tell which")
	contains(t, f.Fix, "release what they hold as they stop", "If they are still working, the timeout is shorter than their handlers take",
		"renew the lease while the handler works")
	in.at(99)
	for c, h := range held {
		_ = in.e.DeleteMessage(as(c), in.ref, h) // late
	}
	expect(t, in.report(), ledger.DiagnosisLeaseTooShort, ledger.DiagnosisLeaseTooShort)
}
