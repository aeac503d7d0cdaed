package engine_test

import (
	"strings"
	"testing"
	"time"

	"github.com/baton-sqs/baton/engine/ledger"
)

// A consumer that receives ten at a time and deletes none of a batch when
// one of its messages fails, without partial batch responses (a function
// on the queue, as Lambda runs it): the batch's leases lapse together,
// and the consumer goes on polling. One batch that lapsed whole cannot
// tell a handler failing on each message from one failing message taking
// the batch with it: the finding says both, with both fixes. Once the
// messages fail with their whole batch again, the batch finding is the
// diagnosis and rests on those lapses alone; a second consumer failing
// single messages is still a failing handler beside it.
func TestDoctorLambdaBatchLapsesWhole(t *testing.T) {
	t.Parallel()
	in := newRedriveIncident(t, "lambda", 5)
	in.send(10)
	for _, h := range in.receiveAs(sdkClient, 10) {
		in.at(1)
		in.delAs(sdkClient, h) // a good batch
	}
	in.send(10) // one of them poison
	polls := func(from, to int) {
		for s := from; s <= to; s += 5 {
			in.at(s)
			in.receiveAs(sdkClient, 10) // finds nothing: the consumer is alive
		}
	}
	in.at(2)
	if got := in.receiveAs(sdkClient, 10); len(got) != 10 {
		t.Fatalf("received %d", len(got))
	}
	polls(7, 27) // the batch lapses at 32 s
	in.at(33)
	if got := in.receiveAs(sdkClient, 10); len(got) != 10 { // the same ten, to fail whole again
		t.Fatalf("received %d again", len(got))
	}
	r := in.report()
	expect(t, r, ledger.DiagnosisHandlerFailing, ledger.DiagnosisHandlerFailing)
	f := finding(r, ledger.DiagnosisHandlerFailing)
	contains(t, f.Evidence, "10 leases lapsed", "All of them lapsed with every other message of the receive that handed them out",
		"either each of those messages fails, or one failing message takes its batch with it", "the server cannot tell which")
	contains(t, f.Fix, "Look at the consumers' errors", "If the consumer fails a batch whole when one of its messages fails, report partial batch responses")

	polls(38, 58)
	in.at(64)
	in.receiveAs(sdkClient, 10) // the third receive, after the second lapse at 63 s
	r = in.report()
	expect(t, r, ledger.DiagnosisBatchFailsWhole, ledger.DiagnosisBatchFailsWhole)
	contains(t, r.Advice, "10 messages failed with their whole batch again and again", "Either every message of those batches fails (the consumers' errors tell)",
		"report partial batch responses")

	// Another consumer's handler fails the single messages it receives.
	other := ledger.Client{Addr: "10.0.0.21", UserAgent: sdkClient.UserAgent}
	in.send(3)
	in.at(64)
	for range 3 {
		if got := in.receiveAs(other, 1); len(got) != 1 {
			t.Fatalf("other consumer received %d", len(got))
		}
	}
	in.at(100)
	in.receiveAs(other, 1) // alive after its leases lapsed at 94 s
	r = in.report()
	expect(t, r, ledger.DiagnosisBatchFailsWhole, ledger.DiagnosisBatchFailsWhole, ledger.DiagnosisHandlerFailing)
	if f := finding(r, ledger.DiagnosisHandlerFailing); f.Leases != 3 || strings.Contains(f.Evidence, "with every other message of the receive") {
		t.Errorf("handler-failing on %d leases, want the other consumer's 3 alone: %s", f.Leases, f.Evidence)
	}
	lastIs(t, r, ledger.DiagnosisHandlerFailing, "lapse", 94, 6*time.Second, "last lapse 6s ago")
}
