package engine_test

import (
	"testing"

	"github.com/baton-sqs/baton/engine/ledger"
)

// A consumer that gives back three messages with a delay of two minutes
// on a 30 s lease (a retry's back-off, or "not ready") and polls on: the
// change moves each lease's end later, which the server cannot tell from
// a heartbeat's renewal, and the leases are held far beyond the p99. The
// finding must not say only a long job or a hung handler: renewed once,
// they may as well be messages given back with a delay.
func TestDoctorHeldRenewedOnceSaysTheBackOffReading(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "snoozed", map[string]string{"VisibilityTimeout": "30"})
	in.quickLeases(sdkClient, 5, 0)
	in.send(3)
	in.at(10)
	got := map[string]string{}
	for range 3 {
		for id, h := range in.receiveAs(sdkClient, 1) {
			got[id] = h
		}
	}
	in.at(11)
	for _, h := range got {
		in.changeAs(sdkClient, h, 120)
	}
	in.at(60)
	in.receiveAs(sdkClient, 1) // polls on: nothing visible
	r := in.report()
	f := finding(r, ledger.DiagnosisHeldRenewed)
	contains(t, f.Fix, "a long job kept by its heartbeat", "For them, a third: a holder that gave the message back with a delay longer than its lease had left")
}
