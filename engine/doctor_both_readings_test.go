package engine_test

import (
	"strings"
	"testing"
)

// Every text on lapses whose holder may still come back says both
// readings: a holder that failed (or stopped, or crashed), and one still
// working past its lease; none says a holder "never came back" as a fact.
func TestDoctorLapseTextsSayBothReadings(t *testing.T) {
	t.Parallel()
	const stillWorking = "still working on them past their lease"
	t.Run("leased before a restart", func(t *testing.T) {
		t.Parallel()
		for _, known := range []int{0, 1} { // no lapse of a known holder; one, too few to say the handlers fail
			in, st := newRestartIncident(t, "restarted", map[string]string{"VisibilityTimeout": "60"})
			in.send(3 + known)
			in.receiveAs(sdkClient, 3)
			in.at(10)
			in.restart(st)
			in.at(11)
			if known > 0 {
				in.receiveAs(sdkClient, 1)
			}
			in.at(80)
			in.receiveAs(sdkClient, 10) // the holder polls on
			in.at(81)
			r := in.report()
			contains(t, r.Advice, "leased before this server started, by holders not known", stillWorking, "the server cannot tell which")
			if strings.Contains(r.Advice, "never came back") {
				t.Errorf("%d known: says a holder never came back: %s", known, r.Advice)
			}
		}
	})
	t.Run("too few", func(t *testing.T) {
		t.Parallel()
		in := newIncident(t, "two", map[string]string{"VisibilityTimeout": "30"})
		in.send(2)
		in.receiveAs(sdkClient, 1)
		in.receiveAs(sdkClient, 1)
		in.at(40)
		in.receiveAs(sdkClient, 10) // polls on after the lapses
		r := in.report()
		contains(t, r.Advice, "2 leases lapsed and their holders have not come back for them")
		if strings.Contains(r.Advice, "never came back") {
			t.Errorf("says a holder never came back: %s", r.Advice)
		}
	})
	t.Run("finding", func(t *testing.T) {
		t.Parallel()
		in := newIncident(t, "three", map[string]string{"VisibilityTimeout": "30"})
		in.send(3)
		for range 3 {
			in.receiveAs(sdkClient, 1)
		}
		in.at(40)
		in.receiveAs(sdkClient, 10)
		r := in.report()
		contains(t, r.Advice, "3 leases lapsed and their holders have not come back with a late completion", "or their holders are still working past their lease")
		if strings.Contains(r.Advice, "never came back") {
			t.Errorf("says a holder never came back: %s", r.Advice)
		}
	})
}
