package engine_test

import (
	"strings"
	"testing"

	"github.com/baton-sqs/baton/engine/ledger"
)

// A consumer that gives a failed message back with a back-off longer than
// its lease has left, and polls on: the change reads as a renewal, and the
// lease ends at the back-off's end as a lapse. Baton's consumer does so
// with its default retry policy (1 s doubling to 15 min), and `baton
// worker` too, after renewing the lease while its target worked. The
// handlers did fail, but no error path left the messages to lapse: the
// handler-failing finding must say the back-off reading (or messages not
// ready) beside the error path, not the error path alone. Leases never
// renewed that lapse while their holder polls on are no such reading.
func TestDoctorBackOffPastTheLeaseSaysSo(t *testing.T) {
	t.Parallel()
	const reading = "a holder that gave its message back with a delay longer than its lease had left (a retry's back-off, or not ready"
	for _, heartbeats := range []int{0, 2} {
		in := newIncident(t, "backoff-lapse", map[string]string{"VisibilityTimeout": "30"})
		ms := in.quickLeases(sdkClient, 5, 0)
		in.send(4)
		in.atMs(ms)
		held := map[string]string{}
		for range 4 {
			for id, h := range in.receiveAs(sdkClient, 1) {
				held[id] = h
			}
		}
		for i := range heartbeats { // as baton worker renews while its target works
			in.atMs(ms + 10_000*(i+1))
			for _, h := range held {
				in.changeAs(sdkClient, h, 30)
			}
		}
		start := ms + 10_000*heartbeats + 100
		in.atMs(start) // failed
		for _, h := range held {
			in.changeAs(sdkClient, h, 60)
		}
		for s := 10; s <= 50; s += 10 {
			in.atMs(start + 1000*s)
			in.receiveAs(sdkClient, 1) // polls on: nothing visible until the back-offs end
		}
		in.atMs(start + 61_000) // the retries succeed
		for range 4 {
			for _, h := range in.receiveAs(sdkClient, 1) {
				in.atMs(start + 61_200)
				in.delAs(sdkClient, h)
			}
		}
		in.atMs(start + 90_000)
		in.receiveAs(sdkClient, 1)
		r := in.report()
		f := finding(r, ledger.DiagnosisHandlerFailing)
		contains(t, f.Evidence, "4 leases lapsed",
			"All of them lapsed at the end their holder's last renewal had set, and their holders went on making requests without renewing again", reading)
		contains(t, f.Fix, "So does a consumer that gives it back with a back-off longer than its lease has left")
	}

	// An error path: never renewed, the leases lapse while the consumer
	// polls on. No back-off reading.
	in := newIncident(t, "error-path", map[string]string{"VisibilityTimeout": "30"})
	ms := in.quickLeases(sdkClient, 5, 0)
	in.send(3)
	in.atMs(ms)
	for range 3 {
		in.receiveAs(sdkClient, 1)
	}
	for s := 10; s <= 50; s += 10 {
		in.atMs(ms + 1000*s)
		in.receiveAs(sdkClient, 1)
	}
	r := in.report()
	f := finding(r, ledger.DiagnosisHandlerFailing)
	if f.Leases == 0 {
		t.Fatalf("no handler-failing finding: %s", r.Advice)
	}
	if text := f.Evidence + " " + f.Fix; strings.Contains(text, "back-off") {
		t.Errorf("leases never renewed read as a back-off: %s", text)
	}
}
