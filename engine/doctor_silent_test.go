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

// The classic overrun by a consumer that polls while its slow handlers
// work (a pool of workers): its leases lapse and it goes on making
// requests, which a failing handler does too. Until the late deletes
// come, the doctor says both, never "not slow"; a handler whose message
// was completed in time once received again failed, and is said so.
func TestDoctorPollingSlowHoldersNotFailing(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "pool", map[string]string{"VisibilityTimeout": "30"})
	in.quickLeases(sdkClient, 5, 0)
	in.send(3)
	in.at(10)
	var first []string
	for range 3 {
		for _, h := range in.receiveAs(sdkClient, 1) {
			first = append(first, h)
		}
	}
	for s := 15; s <= 70; s += 5 {
		in.at(s)
		in.receiveAs(sdkClient, 1) // polls while it works; takes the lapsed messages again, as slow
	}
	r := in.report()
	f := finding(r, ledger.DiagnosisHandlerFailing) // beside the re-received leases, held far beyond the quick ones' p99
	if strings.Contains(f.Evidence, "not slow") {
		t.Errorf("a slow handler said not slow: %s", f.Evidence)
	}
	contains(t, f.Evidence, "went on making requests on the queue afterward", "the handlers are failing (an error path or a crash before DeleteMessage), "+
		"or their holders are still working past their lease", "the server cannot tell which yet")
	contains(t, f.Fix, "If they are still working, the timeout is shorter than their handlers take")
	in.at(100)
	for _, h := range first {
		_ = in.e.DeleteMessage(as(sdkClient), in.ref, h) // late
	}
	if r := in.report(); r.Diagnosis != ledger.DiagnosisLeaseTooShort {
		t.Errorf("after the late deletes: %s, %v", r.Diagnosis, kinds(r))
	}

	// Handlers that throw: each message is completed in time once received
	// again, so the lapses were no handler still at work.
	in = newIncident(t, "throws", map[string]string{"VisibilityTimeout": "30"})
	in.send(3)
	for range 3 {
		in.receiveAs(sdkClient, 1)
	}
	in.at(31)
	for range 3 {
		for _, h := range in.receiveAs(sdkClient, 1) {
			in.delAs(sdkClient, h)
		}
	}
	in.at(40)
	r = in.report()
	expect(t, r, ledger.DiagnosisHandlerFailing, ledger.DiagnosisHandlerFailing)
	f = finding(r, ledger.DiagnosisHandlerFailing)
	contains(t, f.Evidence, "the handlers are failing (an error path or a crash before DeleteMessage), not slow: each message was completed in time once received again")
	if strings.Contains(f.Fix, "If they are still working") {
		t.Errorf("fix for a slow handler where none is: %s", f.Fix)
	}
}
