package engine_test

import (
	"strings"
	"testing"

	"github.com/baton-sqs/baton/engine/ledger"
)

// Two consumer fleets on one queue with different handlers: one fast, one
// slower than the lease. The overrun is named with the holders whose
// leases overran and those whose every lease completed in time, and both
// readings (a slower handler there, or slow messages that fell to them):
// the server sees holders, not handlers. One fleet alone: no such line.
func TestDoctorTwoFleetsOverrunByHolder(t *testing.T) {
	t.Parallel()
	for _, two := range []bool{true, false} {
		in := newIncident(t, "mixed", map[string]string{"VisibilityTimeout": "30"})
		fast := ledger.Client{Addr: "10.0.0.1", UserAgent: sdkClient.UserAgent}
		slow := ledger.Client{Addr: "10.0.0.2", UserAgent: "aws-sdk-java/2.25.0 ua/2.0 os/linux lang/java app/reports"}
		if !two {
			slow = fast
		}
		ms := in.quickLeases(fast, 20, 0)
		in.atMs(ms)
		in.send(3)
		held := in.receiveAs(slow, 3) // 45 s handlers under a 30 s lease
		in.atMs(ms + 31000)
		for _, h := range in.receiveAs(fast, 3) { // redelivered after the lapse
			in.atMs(ms + 31200)
			in.delAs(fast, h)
		}
		in.atMs(ms + 45000)
		for _, h := range held {
			in.e.DeleteMessage(as(slow), in.ref, h) // late: found already deleted
		}
		ms = in.quickLeases(fast, 20, ms+50000)
		in.atMs(ms + 1000)
		r := in.report()
		expect(t, r, ledger.DiagnosisLeaseTooShort, ledger.DiagnosisLeaseTooShort)
		ev := finding(r, ledger.DiagnosisLeaseTooShort).Evidence
		said := strings.Contains(ev, "The leases that overran were all held by 1 holder (10.0.0.2 aws-sdk-java/2.25.0), "+
			"while 1 holder (10.0.0.1 "+strings.Fields(sdkClient.UserAgent)[0]+") completed every lease in time")
		if said != two || two && !strings.Contains(ev, "or the slow messages happened to fall to them; the server cannot tell which") {
			t.Errorf("two fleets %v: evidence %s", two, ev)
		}
	}
}
