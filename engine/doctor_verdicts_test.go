package engine_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/engine/ledger"
	"github.com/baton-sqs/baton/internal/testutil"
)

// Issue 31's incidents on the fake clock: the doctor never calls a failing
// queue healthy, and never blames the wrong cause. Each test checks the
// finding the doctor must give and those it must not.

// Clients as the ledger sees them.
var (
	sdkClient    = ledger.Client{Addr: "10.0.0.20", UserAgent: "aws-sdk-go-v2/1.36.3 os/linux lang/go#1.24 api/sqs#1.38.1"}
	awsCLI       = ledger.Client{Addr: "10.0.0.30", UserAgent: "aws-cli/2.15.30 Python/3.11.8 Linux/6.5 exe/x86_64.ubuntu.24 prompt/off command/sqs.receive-message"}
	batonReceive = ledger.Client{Addr: "10.0.0.31", UserAgent: "aws-sdk-go-v2/1.36.3 ua/2.1 os/linux lang/go#1.24 api/sqs#1.38.1 m/E app/baton-receive"}
)

// atMs sets the clock to ms milliseconds after testutil.Epoch.
func (in *incident) atMs(ms int) {
	in.clock.Set(testutil.Epoch.Add(time.Duration(ms) * time.Millisecond))
}

// as returns a context whose requests come from c.
func as(c ledger.Client) context.Context { return ledger.WithClient(context.Background(), c) }

// receiveAs receives up to n messages as c, by message id.
func (in *incident) receiveAs(c ledger.Client, n int) map[string]string {
	in.t.Helper()
	msgs, err := in.e.ReceiveMessage(as(c), in.ref, engine.ReceiveParams{MaxNumberOfMessages: ptr(n)})
	if err != nil {
		in.t.Fatal(err)
	}
	out := make(map[string]string, len(msgs))
	for _, m := range msgs {
		out[m.MessageID] = m.ReceiptHandle
	}
	return out
}

func (in *incident) delAs(c ledger.Client, handle string) {
	in.t.Helper()
	if err := in.e.DeleteMessage(as(c), in.ref, handle); err != nil {
		in.t.Fatal(err)
	}
}

// quickLeases completes n leases of 200 ms as c, one after another from
// ms, and returns when the last ended (in ms).
func (in *incident) quickLeases(c ledger.Client, n, ms int) int {
	in.t.Helper()
	in.atMs(ms)
	in.send(n)
	for range n {
		in.atMs(ms)
		for _, h := range in.receiveAs(c, 1) {
			in.atMs(ms + 200)
			in.delAs(c, h)
		}
		ms += 300
	}
	return ms
}

// lacks checks that the report gives none of the findings named, and is
// not healthy.
func lacks(t *testing.T, r *ledger.LeaseReport, findings ...string) {
	t.Helper()
	if r.Diagnosis == ledger.DiagnosisHealthy {
		t.Errorf("diagnosis healthy: %s", r.Advice)
	}
	for _, k := range findings {
		if slices.Contains(kinds(r), k) {
			t.Errorf("finding %s given: %s", k, r.Advice)
		}
	}
}

func contains(t *testing.T, text string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(text, w) {
			t.Errorf("lacks %q: %s", w, text)
		}
	}
}

// Item 1: a consumer killed holding three messages on a 43,200 s queue,
// its earlier leases 0.2 s. Before the crash the doctor already names the
// timeout as the stall a crash causes; after it, the held leases are a
// finding of their own, and the recommendation is what the leases need,
// never 43200.
func TestDoctorVerdictCrashOnLongLease(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "long", map[string]string{"VisibilityTimeout": "43200"})
	ms := in.quickLeases(sdkClient, 5, 0)
	r := in.report()
	expect(t, r, ledger.DiagnosisHealthy)
	contains(t, r.Advice, "The visibility timeout of 43200s is", "a consumer that crashes holding messages stalls them that long", "Set VisibilityTimeout to 1s")
	if r.RecommendedVisibilityTimeout != 1 {
		t.Errorf("recommended %d s before the crash, want 1 (0.2 s × 1.5, rounded up)", r.RecommendedVisibilityTimeout)
	}
	held := in.send(3)
	in.atMs(ms)
	if got := in.receiveAs(sdkClient, 10); len(got) != 3 {
		t.Fatalf("received %d", len(got))
	}
	// The consumer is killed: no renewal, no delete, no release.
	in.atMs(ms + 3000) // held 3 s: 15× the p99, but not yet the 5 s floor
	expect(t, in.report(), ledger.DiagnosisHealthy)
	in.atMs(ms + 60_000)
	r = in.report()
	expect(t, r, ledger.DiagnosisHeldUnrenewed, ledger.DiagnosisHeldUnrenewed)
	lacks(t, r, ledger.DiagnosisHandlerFailing, ledger.DiagnosisHeldRenewed)
	f := finding(r, ledger.DiagnosisHeldUnrenewed)
	if len(f.Held) != 3 || f.Held[0].Held != time.Minute || f.Held[0].Renewals != 0 {
		t.Fatalf("held %+v", f.Held)
	}
	for _, h := range f.Held {
		if !slices.Contains(held, h.MessageID) {
			t.Errorf("held lease of message %s, not one of the three", h.MessageID)
		}
	}
	contains(t, r.Advice, "3 leases held far beyond the queue's p99 and not renewed since", "the longest held 1m0s", "never renewed",
		"they come back when their leases end, from 11h59m0s to 11h59m0s from now", "holder is gone", "hung without a heartbeat",
		"a consumer that crashes holding messages stalls them that long", "renew the lease while the handler makes progress")
	if r.RecommendedVisibilityTimeout != 1 {
		t.Errorf("recommended %d s, want 1: never a timeout the completed leases do not need", r.RecommendedVisibilityTimeout)
	}
	qs, err := in.e.QueueMetrics(context.Background())
	if err != nil || len(qs) != 1 || qs[0].HungLeases != 3 {
		t.Errorf("metrics %+v, %v; want 3 leases held with no sign of progress", qs, err)
	}
}

// Item 2: `baton worker` without partial batch responses, one bad message
// in a batch of ten: the whole batch is released with a back-off, three
// times, then dead-lettered. None completed. Each message released with a
// delay is what a consumer retrying each message it fails leaves as well
// (one with several slots, failing every message): a retry loop, with
// both readings, and partial batch responses for the batch one. A batch
// that fails whole by lapsing is batch-fails-whole's
// (doctor_batch_lapse_test.go).
func TestDoctorVerdictWorkerBatchReleasedWhole(t *testing.T) {
	t.Parallel()
	in := newRedriveIncident(t, "orders", 3)
	e := in.e
	in.send(10)
	for round := range 3 {
		in.at(10 * round)
		got := in.receiveAs(sdkClient, 10)
		if len(got) != 10 {
			t.Fatalf("round %d received %d", round, len(got))
		}
		in.at(10*round + 1)
		for _, h := range got {
			if err := e.ChangeMessageVisibility(as(sdkClient), in.ref, h, ptr(1+round)); err != nil { // the retry back-off
				t.Fatal(err)
			}
		}
	}
	in.at(40)
	if got := in.receiveAs(sdkClient, 10); len(got) != 0 { // moves all ten to the dead-letter queue
		t.Fatalf("received %d after maxReceiveCount", len(got))
	}
	r := in.report()
	expect(t, r, ledger.DiagnosisRetryLoop, ledger.DiagnosisRetryLoop)
	lacks(t, r, ledger.DiagnosisReleaseLoop, ledger.DiagnosisHandlerFailing, ledger.DiagnosisBatchFailsWhole)
	contains(t, r.Advice, "10 leases were released with a delay", "right before the message's move to the dead-letter queue",
		"All of those messages were received with every other message of a receive, all released with a delay and none completed",
		"one failing message takes its batch with it", "The RedrivePolicy moves a message to orders-dlq after 3 receives", "--report-batch-item-failures")
}

// Item 3: an 80 s job among 0.3 s ones, renewed every second by Baton's
// consumer on its handler's progress, is a long job at work; the same
// renewed by a blind heartbeat gets both readings. Neither is HEALTHY from
// 10 times the p99 on, before the old hung finding's minute.
func TestDoctorVerdictLongJobOnProgress(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		progress bool
		want     string
		other    string
	}{
		{"on progress", true, ledger.DiagnosisLongJob, ledger.DiagnosisHeldRenewed},
		{"blind heartbeat", false, ledger.DiagnosisHeldRenewed, ledger.DiagnosisLongJob},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := newIncident(t, "jobs", map[string]string{"VisibilityTimeout": "2"})
			ms := in.quickLeases(sdkClient, 5, 0)
			in.send(1)
			in.atMs(ms)
			var h string
			for _, handle := range in.receiveAs(sdkClient, 1) {
				h = handle
			}
			ctx := as(sdkClient)
			if tc.progress {
				ctx = ledger.WithProgress(ctx)
			}
			for s := 1; s <= 80; s++ {
				in.atMs(ms + 1000*s)
				if err := in.e.ChangeMessageVisibility(ctx, in.ref, h, ptr(2)); err != nil {
					t.Fatal(err)
				}
				if s == 10 || s == 80 {
					r := in.report()
					expect(t, r, tc.want, tc.want)
					lacks(t, r, tc.other, ledger.DiagnosisHandlerFailing, ledger.DiagnosisHeldUnrenewed)
					if strings.Contains(r.Advice, "A heartbeat is keeping a hung handler's lease alive") {
						t.Errorf("a guess stated as a fact: %s", r.Advice)
					}
					if tc.progress {
						contains(t, r.Advice, "renewed on its handler's progress", "A long job at work, not a hung one")
					} else {
						contains(t, r.Advice, "with no word that its handler progressed", "a long job kept by its heartbeat",
							"or a hung handler kept alive by a heartbeat")
					}
				}
			}
			qs, _ := in.e.QueueMetrics(context.Background())
			if want := map[bool]int{true: 0, false: 1}[tc.progress]; len(qs) != 1 || qs[0].HungLeases != want {
				t.Errorf("metrics %+v; want %d leases with no sign of progress", qs, want)
			}
		})
	}
}

// Item 4: an operator's `aws sqs receive-message --max-number-of-messages
// 5` (and `baton receive`) on a live queue, left to lapse, is an
// inspection, not a failing handler.
func TestDoctorVerdictInspection(t *testing.T) {
	t.Parallel()
	for _, tool := range []ledger.Client{awsCLI, batonReceive} {
		in := newIncident(t, "live", map[string]string{"VisibilityTimeout": "30"})
		ms := in.quickLeases(sdkClient, 5, 0)
		in.send(5)
		in.atMs(ms)
		if got := in.receiveAs(tool, 5); len(got) != 5 {
			t.Fatalf("received %d", len(got))
		}
		in.at(40) // the look's leases lapse; the consumer takes the messages
		for _, h := range in.receiveAs(sdkClient, 10) {
			in.delAs(sdkClient, h)
		}
		in.at(100)
		r := in.report()
		expect(t, r, ledger.DiagnosisInspection, ledger.DiagnosisInspection)
		lacks(t, r, ledger.DiagnosisHandlerFailing, ledger.DiagnosisHoldersStopped)
		want := map[ledger.Client]string{awsCLI: "5 leases taken by the AWS CLI lapsed", batonReceive: "5 leases taken by baton receive lapsed"}[tool]
		contains(t, r.Advice, want, "an inspection by a person, not a handler failure", "baton peek")
	}
}

// Item 5: four consumers stopped together by a deploy that does not
// release; the new ones take the messages when their leases lapse. The
// holders stopped: no handler threw. A consumer that goes on polling while
// its handler throws is still a failing handler.
func TestDoctorVerdictStoppedFleet(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "fleet", map[string]string{"VisibilityTimeout": "30"})
	in.send(8)
	for i := range 4 {
		in.atMs(100 * i)
		old := ledger.Client{Addr: "10.0.1." + string(rune('1'+i)), UserAgent: sdkClient.UserAgent}
		if got := in.receiveAs(old, 2); len(got) != 2 {
			t.Fatalf("consumer %d received %d", i, len(got))
		}
	}
	// The deploy stops them at 1 s; the new consumers start.
	fresh := ledger.Client{Addr: "10.0.2.1", UserAgent: sdkClient.UserAgent}
	for s := 2; s <= 40; s += 2 {
		in.at(s)
		for _, h := range in.receiveAs(fresh, 10) {
			in.delAs(fresh, h)
		}
	}
	in.at(70)
	r := in.report()
	expect(t, r, ledger.DiagnosisHoldersStopped, ledger.DiagnosisHoldersStopped)
	lacks(t, r, ledger.DiagnosisHandlerFailing)
	if strings.Contains(r.Advice, "throw") {
		t.Errorf("blames throwing handlers: %s", r.Advice)
	}
	contains(t, r.Advice, "8 leases lapsed and 4 holders (10.0.1.1 aws-sdk-go-v2/1.36.3;",
		"together: their last requests came within 300ms of each other", "ChangeMessageVisibility 0", "as Baton's consumer and baton worker do")

	// The contrast: one consumer whose handler throws goes on polling.
	live := newIncident(t, "throws", map[string]string{"VisibilityTimeout": "30"})
	live.send(3)
	for range 3 {
		live.receiveAs(sdkClient, 1) // one at a time: no batch that fails whole
	}
	for s := 5; s <= 60; s += 5 {
		live.at(s)
		live.receiveAs(sdkClient, 10) // empty until the lapse, then the same three, which throw again
	}
	live.at(62)
	r = live.report()
	if !slices.Contains(kinds(r), ledger.DiagnosisHandlerFailing) || slices.Contains(kinds(r), ledger.DiagnosisHoldersStopped) {
		t.Errorf("a live consumer's throwing handler: %v, %s", kinds(r), r.Advice)
	}
	contains(t, r.Advice, "went on making requests on the queue afterward")
}

// Item 6: a heartbeat asking for 43,200 s every second is refused by the
// 12-hour ceiling each time, as on SQS; the doctor counts and names the
// refusals, and says the message comes back at the ceiling.
func TestDoctorVerdictCeilingRefused(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "ceiling", map[string]string{"VisibilityTimeout": "60"})
	id := in.send(1)[0]
	_, h := in.receiveOne()
	for s := 1; s <= 5; s++ {
		in.at(s)
		err := in.e.ChangeMessageVisibility(as(sdkClient), in.ref, h, ptr(43200))
		var be *baton.Error
		if !errors.As(err, &be) || be.Code != baton.ErrInvalidParameterValue {
			t.Fatalf("renewal past the ceiling: %v; want InvalidParameterValue", err)
		}
	}
	r := in.report()
	expect(t, r, ledger.DiagnosisCeilingRefused, ledger.DiagnosisCeilingRefused)
	if r.Window.RefusedRenewals != 5 {
		t.Errorf("refused renewals %d, want 5", r.Window.RefusedRenewals)
	}
	contains(t, r.Advice, "5 renewals were refused by the 12-hour ceiling, on 1 lease (message "+id+", refused 5 times)",
		"come back at the ceiling whatever the heartbeat does: message "+id+" in 11h59m55s")
	if events, _, _ := in.e.MessageHistory(context.Background(), in.ref, id); len(events) != 6 || events[1].Kind != ledger.EventRefused {
		t.Errorf("history %+v; want the receive and 5 refusals", events)
	}
}

// Item 7: with no completed lease there is no p99: the doctor says how long
// the running lease has been held at least, and gives no figure.
func TestDoctorVerdictNoP99(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "fresh", map[string]string{"VisibilityTimeout": "43200"})
	id := in.send(1)[0]
	in.receiveAs(sdkClient, 1)
	in.at(600)
	r := in.report()
	expect(t, r, ledger.DiagnosisTooFewLeases)
	contains(t, r.Advice, "0 leases have completed (a p99 needs 3), so there is no p99 to judge the running leases by: message "+id+
		" has been held at least 10m0s, never renewed.")
	if r.RecommendedVisibilityTimeout != 43200 {
		t.Errorf("recommended %d s; want no figure but the timeout in force", r.RecommendedVisibilityTimeout)
	}
}

// Item 8: where duplicate executions happened, the advice says that
// redelivery stays possible even with the right timeout, and names the
// consumer's idempotency middleware and lease epochs.
func TestDoctorVerdictDuplicatesNameIdempotence(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "overrun", map[string]string{"VisibilityTimeout": "30"})
	in.send(1)
	a, b, c := in.overrun()
	for i, h := range []string{a, b, c} {
		in.at(90 + 31*i)
		in.del(h)
	}
	r := in.report()
	expect(t, r, ledger.DiagnosisLeaseTooShort, ledger.DiagnosisLeaseTooShort)
	f := finding(r, ledger.DiagnosisLeaseTooShort)
	contains(t, f.Fix, "Set VisibilityTimeout to", "Messages ran twice (2 confirmed duplicate executions)",
		"Even with the right timeout a message can be delivered again", "consumer.Idempotency", "lease epochs (Lease.Epoch)")
}
