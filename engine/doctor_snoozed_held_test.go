package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/baton-sqs/baton/engine"
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

// Baton's consumer gives a failed message back with its retry policy's
// back-off (1 s doubling to 15 min), by a ChangeMessageVisibility that may
// reach past the lease's end: one change, that reads as a renewal. Three
// handlers fail fast (within the p99) and back off 10 minutes, and their
// consumer polls on. Those leases are held far beyond the p99, but no
// heartbeat keeps them, and their holder is not gone: baton_lease_hung
// must not count them (a LeaseHungHandler alert on a retrying consumer is
// a lie), and the finding says the back-off reading, not only an error
// path that never released. A lease renewed once whose holder made no
// request since still counts (a holder gone), and so does one renewed
// again (a heartbeat).
func TestDoctorBackOffIsNoHungLease(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "backoff", map[string]string{"VisibilityTimeout": "30"})
	ms := in.quickLeases(sdkClient, 5, 0)
	in.send(5)
	in.atMs(ms)
	backedOff := map[string]string{}
	for range 3 {
		for id, h := range in.receiveAs(sdkClient, 1) {
			backedOff[id] = h
		}
	}
	gone := ledger.Client{Addr: "10.0.0.30", UserAgent: sdkClient.UserAgent}
	heartbeat := ledger.Client{Addr: "10.0.0.31", UserAgent: sdkClient.UserAgent}
	goneH, beatH := in.receiveAs(gone, 1), in.receiveAs(heartbeat, 1)
	in.atMs(ms + 100) // failed fast, within the p99
	for _, h := range backedOff {
		in.changeAs(sdkClient, h, 600)
	}
	for _, h := range goneH {
		in.changeAs(gone, h, 600) // and never heard from again
	}
	for _, s := range []int{15, 30, 45, 60} {
		in.atMs(ms + 1000*s)
		for _, h := range beatH {
			in.changeAs(heartbeat, h, 30)
		}
		in.receiveAs(sdkClient, 1) // polls on: nothing visible
	}
	r := in.report()
	f := finding(r, ledger.DiagnosisHeldUnrenewed)
	contains(t, f.Fix, "a holder that gave the message back with a delay longer than its lease had left")
	qs, err := in.e.QueueMetrics(context.Background())
	if err != nil || len(qs) != 1 || qs[0].HungLeases != 2 {
		t.Errorf("metrics %+v, %v; want 2 leases held with no sign of progress (the heartbeat's, the gone holder's), not the 3 backed off", qs, err)
	}
}

// A FIFO receive retried with its ReceiveRequestAttemptId (the SDK's retry
// of a receive whose answer was lost) hands out the same leases again,
// reset to a new end: a receive again, not a renewal by their holder. A
// handler that then hangs, without a heartbeat, while its consumer polls
// on holds its lease unrenewed: baton_lease_hung counts it, as it counts
// any lease held so; the replay does not read as a back-off's one change.
func TestDoctorReplayedReceiveIsNoRenewal(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "jobs.fifo", map[string]string{"VisibilityTimeout": "30", "FifoQueue": "true"})
	send := func(i int) {
		p := engine.SendParams{Body: "job", GroupID: "g", DedupID: fmt.Sprint("d", i)}
		if _, err := in.e.SendMessage(context.Background(), in.ref, p); err != nil {
			t.Fatal(err)
		}
	}
	ms := 0
	for i := range 5 {
		in.atMs(ms)
		send(i)
		for _, h := range in.receiveAs(sdkClient, 1) {
			in.atMs(ms + 200)
			in.delAs(sdkClient, h)
		}
		ms += 300 + i
	}
	in.atMs(ms)
	send(5)
	p := engine.ReceiveParams{MaxNumberOfMessages: ptr(1), ReceiveRequestAttemptID: "attempt-1"}
	first, err := in.e.ReceiveMessage(as(sdkClient), in.ref, p)
	if err != nil || len(first) != 1 {
		t.Fatalf("receive: %d, %v", len(first), err)
	}
	in.atMs(ms + 100)
	again, err := in.e.ReceiveMessage(as(sdkClient), in.ref, p) // the SDK's retry
	if err != nil || len(again) != 1 || again[0].ReceiptHandle != first[0].ReceiptHandle {
		t.Fatalf("replayed receive: %+v, %v", again, err)
	}
	for _, s := range []int{10, 20, 28} {
		in.atMs(ms + 1000*s)
		in.receiveAs(sdkClient, 1) // polls on; the handler hangs
	}
	r := in.report()
	if r.Window.Renewals != 0 {
		t.Errorf("renewals %d, want none: the replay is the receive again", r.Window.Renewals)
	}
	qs, err := in.e.QueueMetrics(context.Background())
	if err != nil || len(qs) != 1 || qs[0].HungLeases != 1 {
		t.Errorf("metrics %+v, %v; want the hung lease counted", qs, err)
	}
}

// A consumer that extends each lease to an hour as it receives it, then
// crashes: its only requests after the receives were those extensions.
// The finding must not say its holder went on making requests since (it
// is not gone): a holder's own change of a lease is no sign of life after
// it. The leases count as hung.
func TestDoctorExtendedThenCrashedIsNotSeen(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "jobs", map[string]string{"VisibilityTimeout": "30"})
	ms := in.quickLeases(sdkClient, 5, 0)
	crashed := ledger.Client{Addr: "10.0.0.40", UserAgent: sdkClient.UserAgent}
	in.send(3)
	in.atMs(ms)
	got := in.receiveAs(crashed, 10)
	if len(got) != 3 {
		t.Fatalf("received %d", len(got))
	}
	in.atMs(ms + 100)
	for _, h := range got {
		in.changeAs(crashed, h, 3600)
	}
	in.atMs(ms + 60_000)
	in.receiveAs(sdkClient, 1) // another consumer polls on
	r := in.report()
	f := finding(r, ledger.DiagnosisHeldUnrenewed)
	contains(t, f.Fix, "Their holder is gone (crashed, killed, or stopped without releasing) or hung without a heartbeat")
	if strings.Contains(f.Fix, "went on making requests") {
		t.Errorf("says the crashed holder went on making requests: %s", f.Fix)
	}
	qs, err := in.e.QueueMetrics(context.Background())
	if err != nil || len(qs) != 1 || qs[0].HungLeases != 3 {
		t.Errorf("metrics %+v, %v; want the 3 leases counted", qs, err)
	}
}
