package engine_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/engine/ledger"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/store/memstore"
)

// Leases taken before the server started: the store knows them, and so
// must the doctor after a restart.

// newRestartIncident is newIncident on a store that outlives its engine:
// restart replaces the engine with a new one on the same store and clock.
func newRestartIncident(t *testing.T, queue string, attrs map[string]string) (*incident, baton.Store) {
	t.Helper()
	st := memstore.New()
	in := &incident{t: t, clock: clock.NewFake(testutil.Epoch), ref: engine.QueueRef{Account: "000000000000", Name: queue}}
	in.restart(st)
	in.queue(queue, attrs)
	return in, st
}

// restart closes the incident's engine, if any, and starts a new one on st.
func (in *incident) restart(st baton.Store) {
	in.t.Helper()
	if in.e != nil {
		in.e.Close()
	}
	e, err := engine.New(engine.Config{Store: st, Clock: in.clock})
	if err != nil {
		in.t.Fatal(err)
	}
	in.t.Cleanup(e.Close)
	in.e = e
}

// A consumer crashed holding three messages under a 12-hour timeout, and
// the server restarted: new traffic flows and completes quickly, but the
// three messages stay in flight for hours. The doctor names them, held
// since before the restart by a holder it does not know; it never reads
// healthy, nor says the holder is gone.
func TestDoctorRestartHeldBeforeStart(t *testing.T) {
	t.Parallel()
	in, st := newRestartIncident(t, "stalled", map[string]string{"VisibilityTimeout": "43200"})
	held := in.send(3)
	if got := in.receiveAs(sdkClient, 10); len(got) != 3 {
		t.Fatalf("received %d", len(got))
	}
	const restartMs = 2 * 3600 * 1000 // the consumer crashed; the server restarts two hours later
	in.atMs(restartMs)
	in.restart(st)
	end := in.quickLeases(sdkClient, 5, restartMs)
	in.atMs(end)
	r := in.report()
	lacks(t, r)
	expect(t, r, ledger.DiagnosisHeldUnrenewed, ledger.DiagnosisHeldUnrenewed)
	if len(r.Findings) == 0 {
		t.Fatalf("no finding: %s", r.Advice)
	}
	f := r.Findings[0]
	if len(f.Held) != 3 {
		t.Fatalf("held leases %+v, want the 3 leased before the restart", f.Held)
	}
	for _, h := range f.Held {
		if !h.Seeded || h.Client != (ledger.Client{}) || h.Held < 2*time.Hour || !strings.Contains(strings.Join(held, " "), h.MessageID) {
			t.Errorf("held lease %+v: want one of %v, seeded, held 2 h, holder unknown", h, held)
		}
	}
	contains(t, r.Advice, "3 leases held far beyond the queue's p99", "the longest held 2h0m",
		"all leased before this server started; their holders are not known", "not renewed since this server started",
		"The holders of the leases leased before this server started are not known", "the server cannot tell which")
	for _, never := range []string{"holder is gone", "never renewed"} {
		if strings.Contains(r.Advice, never) {
			t.Errorf("says %q of leases it did not see begin: %s", never, r.Advice)
		}
	}
	if r.Window.Received != 5 || r.SinceStart.Received != 5 {
		t.Errorf("receives %d in the window, %d since start; want the 5 made since the restart", r.Window.Received, r.SinceStart.Received)
	}
}

// A lease seeded at start is no receive of the period judged, and its
// lapse counts as one lapse.
func TestDoctorRestartSeedLapses(t *testing.T) {
	t.Parallel()
	in, st := newRestartIncident(t, "lapsing", map[string]string{"VisibilityTimeout": "60"})
	in.send(1)
	if got := in.receiveAs(sdkClient, 1); len(got) != 1 {
		t.Fatalf("received %d", len(got))
	}
	in.at(10)
	in.restart(st)
	r := in.report()
	if r.Window.Received != 0 || r.SinceStart.Received != 0 || r.SinceStart.Expired != 0 {
		t.Errorf("after the restart: window %+v, since start %+v; want no receive, no lapse", r.Window, r.SinceStart)
	}
	in.at(61)
	r = in.report()
	if r.Window.Received != 0 || r.SinceStart.Received != 0 {
		t.Errorf("the seed counted as a receive: window %d, since start %d", r.Window.Received, r.SinceStart.Received)
	}
	if r.Window.Expired != 1 || r.SinceStart.Expired != 1 {
		t.Errorf("lapses %d in the window, %d since start; want 1", r.Window.Expired, r.SinceStart.Expired)
	}
	lacks(t, r)
	contains(t, r.Advice, "1 lease lapsed")
	in.at(62)
	if r := in.report(); r.SinceStart.Expired != 1 {
		t.Errorf("lapses %d since start after another look; want 1", r.SinceStart.Expired)
	}
}

// Three leases taken before the restart lapse after it: three lapses,
// whose holder the doctor does not know, so it does not say their
// handlers are failing as a fact.
func TestDoctorRestartSeedsLapseUnknown(t *testing.T) {
	t.Parallel()
	in, st := newRestartIncident(t, "lapsing", map[string]string{"VisibilityTimeout": "60"})
	in.send(3)
	if got := in.receiveAs(sdkClient, 3); len(got) != 3 {
		t.Fatalf("received %d", len(got))
	}
	in.at(10)
	in.restart(st)
	in.at(120)
	r := in.report()
	if r.Window.Expired != 3 || r.Window.Received != 0 {
		t.Errorf("window: %d lapses, %d receives; want 3 and 0", r.Window.Expired, r.Window.Received)
	}
	expect(t, r, ledger.DiagnosisHandlerFailing, ledger.DiagnosisHandlerFailing)
	contains(t, r.Advice, "3 leases lapsed", "all were leased before this server started, by holders not known", "the server cannot tell which")
	if strings.Contains(r.Advice, "the handlers are failing") {
		t.Errorf("says the handlers are failing though their holders are not known: %s", r.Advice)
	}
}

// Three leases taken before the restart and one after lapse, its holder
// polling on: one lapse of a known holder is too few to say that the
// handlers are failing, and the three others' holders are not known.
func TestDoctorRestartSeedsOutnumberKnownLapses(t *testing.T) {
	t.Parallel()
	in, st := newRestartIncident(t, "mixed", map[string]string{"VisibilityTimeout": "60"})
	in.send(4)
	if got := in.receiveAs(sdkClient, 3); len(got) != 3 {
		t.Fatalf("received %d", len(got))
	}
	in.at(10)
	in.restart(st)
	in.at(11)
	if got := in.receiveAs(sdkClient, 1); len(got) != 1 {
		t.Fatalf("received %d after the restart", len(got))
	}
	in.at(80)
	in.receiveAs(sdkClient, 10) // the holder polls on, and takes the lapsed messages again
	in.at(81)
	r := in.report()
	if r.Window.Expired != 4 {
		t.Errorf("window: %d lapses, want 4", r.Window.Expired)
	}
	contains(t, r.Advice, "3 of them were leased before this server started, by holders not known", "the server cannot tell which")
	if strings.Contains(r.Advice, "the handlers are failing") {
		t.Errorf("says the handlers are failing on one lapse of a known holder: %s", r.Advice)
	}
}

// A rolling restart cuts the connections of requests in flight: deletes
// and releases the node committed lose their answer, and the SDK retries
// them on the restarted node (one receipt key for both). The deletes'
// retries find their messages gone, the releases' their leases no longer
// live. The restarted ledger never saw those leases (they ended before it
// started, so none was in flight to seed) nor the first attempts: a retry
// of a delete or release made in time reads the same as a late one after
// the lease lapsed. So they are no late completions, no deletes of
// messages already deleted, no handler time: the doctor judges the leases
// it saw, and the queue reads healthy.
func TestDoctorRestartLostAnswerRetried(t *testing.T) {
	t.Parallel()
	for _, release := range []bool{false, true} {
		t.Run(fmt.Sprintf("release=%v", release), func(t *testing.T) {
			t.Parallel()
			testRestartLostAnswerRetried(t, release)
		})
	}
}

func testRestartLostAnswerRetried(t *testing.T, release bool) {
	st := memstore.New()
	key := []byte("one receipt key for every node..")
	in := &incident{t: t, clock: clock.NewFake(testutil.Epoch), ref: engine.QueueRef{Account: "000000000000", Name: "jobs"}}
	start := func() {
		if in.e != nil {
			in.e.Close()
		}
		e, err := engine.New(engine.Config{Store: st, Clock: in.clock, ReceiptKey: key})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(e.Close)
		in.e = e
	}
	end := func(h string) {
		if release {
			in.changeAs(sdkClient, h, 0)
		} else {
			in.delAs(sdkClient, h)
		}
	}
	start()
	in.queue("jobs", map[string]string{"VisibilityTimeout": "30"})
	in.send(3)
	handles := in.receiveAs(sdkClient, 10)
	in.at(5)
	for _, h := range handles {
		end(h) // committed; the answer lost as the node stops
	}
	in.at(6)
	start()
	in.at(8)
	for _, h := range handles {
		end(h) // the SDK's retry, on the restarted node
	}
	ms := in.quickLeases(sdkClient, 5, 10_000)
	in.atMs(ms + 60_000)
	in.receiveAs(sdkClient, 10)
	r := in.report()
	expect(t, r, ledger.DiagnosisHealthy)
	if s := r.Window; s.Late != 0 || s.LateLeases != 0 || s.AlreadyDeleted != 0 || s.Completed != 5 || s.Max > time.Second {
		t.Errorf("window %+v: want the 5 leases completed, none late or already deleted, no handler time of those before the restart", s)
	}
}
