package engine_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/engine/ledger"
)

// retryRounds plays a consumer whose handler fails (or is not ready) on
// every message it takes: from second from, every 10 s for rounds rounds,
// it receives up to n messages one at a time and a second later releases
// each with a back-off of 5 s (ChangeMessageVisibility 5), as Baton's
// consumer releases a failed message for its retry, and polls on a second
// later (finding nothing visible); it returns the last round's receipts.
func (in *incident) retryRounds(from, rounds, n int) map[string]string {
	in.t.Helper()
	var got map[string]string
	for round := range rounds {
		s := from + 10*round
		in.at(s)
		got = map[string]string{}
		for range n {
			for id, h := range in.receiveAs(sdkClient, 1) {
				got[id] = h
			}
		}
		in.at(s + 1)
		for _, h := range got {
			in.changeAs(sdkClient, h, 5)
		}
		in.at(s + 2)
		in.receiveAs(sdkClient, 1)
	}
	return got
}

func (in *incident) changeAs(c ledger.Client, handle string, vt int) {
	in.t.Helper()
	if err := in.e.ChangeMessageVisibility(as(c), in.ref, handle, &vt); err != nil {
		in.t.Fatal(err)
	}
}

// A handler that fails every message, in a consumer that releases each
// failure with a back-off (no lease lapses): the messages go round for
// ever, none completed. The doctor must not read that healthy; it says
// both readings (failing, or not ready) and where to look.
func TestDoctorRetryLoopIsNotHealthy(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "retrying", map[string]string{"VisibilityTimeout": "30"})
	in.quickLeases(sdkClient, 5, 0)
	in.send(3)
	in.retryRounds(10, 6, 3)
	in.at(75)
	r := in.report()
	expect(t, r, ledger.DiagnosisRetryLoop, ledger.DiagnosisRetryLoop)
	f := finding(r, ledger.DiagnosisRetryLoop)
	if f.Leases != 12 {
		t.Errorf("retry-loop on %d leases, want the 12 released after two releases", f.Leases)
	}
	contains(t, f.Evidence, "12 leases were released with a delay", "none of their 3 messages has been completed since",
		"a handler that fails and retries with a back-off", "or messages not ready", "the server cannot tell which",
		"No lease lapsed for them, so they show in no other finding")
	contains(t, f.Fix, "Look at the consumers' errors", "A RedrivePolicy")
	lastIs(t, r, ledger.DiagnosisRetryLoop, "release with a delay", 61, 14e9, "last release with a delay 14s ago")
}

// Retries that succeed are no loop: a message released with a back-off
// twice and then completed went round as a retry should.
func TestDoctorRetriesThatSucceedAreHealthy(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "recovering", map[string]string{"VisibilityTimeout": "30"})
	in.quickLeases(sdkClient, 5, 0)
	in.send(3)
	in.retryRounds(10, 3, 3)
	in.at(40)
	for range 3 {
		for _, h := range in.receiveAs(sdkClient, 1) {
			in.delAs(sdkClient, h)
		}
	}
	in.at(50)
	r := in.report()
	expect(t, r, ledger.DiagnosisHealthy)
}

// The same consumer on a queue whose RedrivePolicy has a maxReceiveCount
// of 2: each message is released with a back-off twice, then moved to the
// dead-letter queue at its third receive. Nothing completed, every message
// dead-lettered: not healthy.
func TestDoctorRetriesUntilDeadLettered(t *testing.T) {
	t.Parallel()
	in := newRedriveIncident(t, "retry-dlq", 2)
	in.quickLeases(sdkClient, 5, 0)
	in.send(3)
	in.retryRounds(10, 2, 3)
	in.at(30)
	if got := in.receiveAs(sdkClient, 10); len(got) != 0 {
		t.Fatalf("received %d, want every message moved", len(got))
	}
	r := in.report()
	if r.Window.DeadLettered != 3 {
		t.Fatalf("%d dead-lettered, want 3", r.Window.DeadLettered)
	}
	expect(t, r, ledger.DiagnosisRetryLoop, ledger.DiagnosisRetryLoop)
	contains(t, finding(r, ledger.DiagnosisRetryLoop).Evidence, "3 leases were released with a delay", "right before the message's move to the dead-letter queue")
	contains(t, finding(r, ledger.DiagnosisRetryLoop).Fix, "The RedrivePolicy moves a message to retry-dlq-dlq after 2 receives")
}

// A FIFO group whose head fails every time, in a consumer that releases
// the head with a back-off and the messages behind it at once, to keep
// their order (Baton's consumer does so on a queue without a
// RedrivePolicy). The followers go round released at once, but not
// because they are not ready: the head's retry loop comes first, and the
// release loop says the FIFO reading, whose fix is the head's.
func TestDoctorFifoFollowersOfAFailingHead(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "skip.fifo", map[string]string{"VisibilityTimeout": "30", "FifoQueue": "true", "ContentBasedDeduplication": "true"})
	for i := range 3 {
		if _, err := in.e.SendMessage(context.Background(), in.ref, engine.SendParams{Body: "m" + strconv.Itoa(i), GroupID: "g"}); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 5 {
		in.at(10 * round)
		msgs, err := in.e.ReceiveMessage(as(sdkClient), in.ref, engine.ReceiveParams{MaxNumberOfMessages: ptr(10)})
		if err != nil || len(msgs) != 3 {
			t.Fatalf("round %d: %d messages, %v", round, len(msgs), err)
		}
		in.at(10*round + 1)
		for i, m := range msgs {
			in.changeAs(sdkClient, m.ReceiptHandle, []int{5, 0, 0}[i])
		}
	}
	in.at(55)
	in.receiveAs(sdkClient, 1)
	r := in.report()
	expect(t, r, ledger.DiagnosisRetryLoop, ledger.DiagnosisRetryLoop, ledger.DiagnosisReleaseLoop)
	contains(t, finding(r, ledger.DiagnosisRetryLoop).Evidence, "3 leases were released with a delay", "its message has not been completed since")
	contains(t, finding(r, ledger.DiagnosisReleaseLoop).Fix, "On a FIFO queue a consumer releases the messages behind one that failed in their group",
		"releasing them with a delay would not help")
}
