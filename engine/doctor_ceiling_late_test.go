package engine_test

import (
	"errors"
	"testing"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine/ledger"
)

// A heartbeat that keeps a long job's lease for nearly 12 hours, then asks
// for ten more minutes: the ceiling refuses, three times. The lease began
// hours before the 15-minute window, as every lease the ceiling refuses
// does; its refusals fall in the window, which counts them, and the doctor
// names them: the message comes back at the ceiling while its job runs.
// Other messages' leases in the window make it the period judged.
func TestDoctorCeilingRefusedOfALeaseBegunHoursAgo(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "long-job", map[string]string{"VisibilityTimeout": "60"})
	in.quickLeases(sdkClient, 5, 0)
	id := in.send(1)[0]
	in.at(10)
	var h string
	for got, hh := range in.receiveAs(sdkClient, 1) {
		if got != id {
			t.Fatalf("received %s, want %s", got, id)
		}
		h = hh
	}
	for s := 20; s < 42_600; s += 600 { // a heartbeat every 10 minutes, 15 minutes ahead
		in.at(s)
		in.changeAs(sdkClient, h, 900)
	}
	in.quickLeases(sdkClient, 3, 42_000_000) // other messages go well, in the window
	for s := 42_601; s <= 42_603; s++ {
		in.at(s)
		err := in.e.ChangeMessageVisibility(as(sdkClient), in.ref, h, ptr(900)) // past 12 h after the receive
		var be *baton.Error
		if !errors.As(err, &be) || be.Code != baton.ErrInvalidParameterValue {
			t.Fatalf("renewal past the ceiling: %v; want InvalidParameterValue", err)
		}
	}
	r := in.report()
	if r.JudgedSinceStart || r.Window.RefusedRenewals != 3 {
		t.Fatalf("window %+v: want its 3 refused renewals", r.Window)
	}
	f := finding(r, ledger.DiagnosisCeilingRefused)
	if f.Kind == "" {
		t.Fatalf("no ceiling-refused finding: %s %v: %s", r.Diagnosis, kinds(r), r.Advice)
	}
	contains(t, f.Evidence, "3 renewals were refused by the 12-hour ceiling, on 1 lease (message "+id)
}
