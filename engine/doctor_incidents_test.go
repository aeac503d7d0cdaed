package engine_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/engine/ledger"
	"github.com/baton-sqs/baton/internal/testutil"
)

// Scripted lease incidents on the fake clock, each with the findings the
// doctor must give and those it must not.

// incident drives one queue of an engine through a script, in seconds
// after testutil.Epoch.
type incident struct {
	t     *testing.T
	e     *engine.Engine
	clock *clock.Fake
	ref   engine.QueueRef
}

func newIncident(t *testing.T, queue string, attrs map[string]string) *incident {
	t.Helper()
	e, clock := newEngine(t)
	in := &incident{t: t, e: e, clock: clock, ref: engine.QueueRef{Account: "000000000000", Name: queue}}
	in.queue(queue, attrs)
	return in
}

// newRedriveIncident is newIncident for a queue with a 30 s lease whose
// RedrivePolicy moves a message to queue-dlq after maxReceiveCount receives.
func newRedriveIncident(t *testing.T, queue string, maxReceiveCount int) *incident {
	t.Helper()
	e, clock := newEngine(t)
	in := &incident{t: t, e: e, clock: clock, ref: engine.QueueRef{Account: "000000000000", Name: queue}}
	in.queue(queue+"-dlq", nil)
	in.queue(queue, map[string]string{"VisibilityTimeout": "30", "RedrivePolicy": `{"deadLetterTargetArn":"` +
		e.ARN(in.ref.Account, queue+"-dlq") + `","maxReceiveCount":"` + strconv.Itoa(maxReceiveCount) + `"}`})
	return in
}

func (in *incident) queue(name string, attrs map[string]string) engine.QueueRef {
	in.t.Helper()
	ref := engine.QueueRef{Account: in.ref.Account, Name: name}
	if _, err := in.e.CreateQueue(context.Background(), engine.CreateQueueParams{Account: ref.Account, Name: name, Attributes: attrs}); err != nil {
		in.t.Fatal(err)
	}
	return ref
}

func (in *incident) at(sec int) { in.clock.Set(testutil.Epoch.Add(time.Duration(sec) * time.Second)) }

func (in *incident) send(n int) []string {
	in.t.Helper()
	var ids []string
	for range n {
		out, err := in.e.SendMessage(context.Background(), in.ref, engine.SendParams{Body: "job"})
		if err != nil {
			in.t.Fatal(err)
		}
		ids = append(ids, out.MessageID)
	}
	return ids
}

// receive receives up to n messages, by message id; vt, if not nil, is the
// request's VisibilityTimeout.
func (in *incident) receive(n int, vt *int) map[string]string {
	in.t.Helper()
	msgs, err := in.e.ReceiveMessage(context.Background(), in.ref, engine.ReceiveParams{MaxNumberOfMessages: ptr(n), VisibilityTimeout: vt})
	if err != nil {
		in.t.Fatal(err)
	}
	out := make(map[string]string, len(msgs))
	for _, m := range msgs {
		out[m.MessageID] = m.ReceiptHandle
	}
	return out
}

func (in *incident) receiveOne() (id, handle string) {
	in.t.Helper()
	for id, h := range in.receive(1, nil) {
		return id, h
	}
	in.t.Fatal("nothing to receive")
	return "", ""
}

// overrun plays the classic incident's receives: one message taken at 0,
// 31 and 62 s by three workers, each lease the queue's 30 s lapsing before
// the next; it returns their receipts in order.
func (in *incident) overrun() (a, b, c string) {
	in.t.Helper()
	_, a = in.receiveOne()
	in.at(31)
	_, b = in.receiveOne()
	in.at(62)
	_, c = in.receiveOne()
	return a, b, c
}

// releaseRounds plays a "not ready" consumer: at seconds 0 to rounds-1 it
// receives up to ten messages and gives each straight back
// (VisibilityTimeout 0).
func (in *incident) releaseRounds(rounds int) {
	in.t.Helper()
	for i := range rounds {
		in.at(i)
		for _, h := range in.receive(10, nil) {
			in.change(h, 0)
		}
	}
}

func (in *incident) del(handle string) {
	in.t.Helper()
	if err := in.e.DeleteMessage(context.Background(), in.ref, handle); err != nil {
		in.t.Fatal(err)
	}
}

func (in *incident) change(handle string, vt int) {
	in.t.Helper()
	if err := in.e.ChangeMessageVisibility(context.Background(), in.ref, handle, &vt); err != nil {
		in.t.Fatal(err)
	}
}

func (in *incident) report() *ledger.LeaseReport {
	in.t.Helper()
	r, err := in.e.LeaseReport(context.Background(), in.ref)
	if err != nil {
		in.t.Fatal(err)
	}
	return r
}

func kinds(r *ledger.LeaseReport) []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, f.Kind)
	}
	return out
}

// expect checks the report's findings, in order, and its diagnosis.
func expect(t *testing.T, r *ledger.LeaseReport, diagnosis string, findings ...string) {
	t.Helper()
	if got := kinds(r); !slices.Equal(got, findings) || r.Diagnosis != diagnosis {
		t.Errorf("diagnosis %s, findings %v; want %s, %v\nadvice: %s", r.Diagnosis, got, diagnosis, findings, r.Advice)
	}
}

func finding(r *ledger.LeaseReport, kind string) ledger.Finding {
	for _, f := range r.Findings {
		if f.Kind == kind {
			return f
		}
	}
	return ledger.Finding{}
}

// The classic: a 90 s handler on a 30 s lease, three workers.
func TestDoctorIncidentOverrun(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "overrun", map[string]string{"VisibilityTimeout": "30"})
	in.send(1)
	a, b, c := in.overrun()
	in.at(90)
	in.del(a)
	// B and C are still at work: their lapsed leases are no sign of a
	// failing handler yet.
	r := in.report()
	expect(t, r, ledger.DiagnosisLeaseTooShort, ledger.DiagnosisLeaseTooShort)
	in.at(121)
	in.del(b)
	in.at(152)
	in.del(c)
	r = in.report()
	expect(t, r, ledger.DiagnosisLeaseTooShort, ledger.DiagnosisLeaseTooShort)
	f := finding(r, ledger.DiagnosisLeaseTooShort)
	if f.Leases != 3 || r.RecommendedVisibilityTimeout < 135 || !strings.Contains(f.Evidence, "3 of 3 leases") ||
		!strings.Contains(f.Fix, "Set VisibilityTimeout to") {
		t.Errorf("finding %+v, recommended %d s; want it on 3 leases, at least 135 s", f, r.RecommendedVisibilityTimeout)
	}
}

// Handlers that throw before DeleteMessage: the same duplicates, but no
// holder ever comes back.
func TestDoctorIncidentErrorPath(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "throws", map[string]string{"VisibilityTimeout": "30"})
	in.send(3)
	in.receive(3, nil) // every handler throws
	in.at(31)
	for _, h := range in.receive(3, nil) {
		in.del(h) // the retry succeeds quickly
	}
	in.at(40)
	r := in.report()
	expect(t, r, ledger.DiagnosisHandlerFailing, ledger.DiagnosisHandlerFailing)
	f := finding(r, ledger.DiagnosisHandlerFailing)
	if f.Leases != 3 || !strings.Contains(f.Fix, "A RedrivePolicy stops a poison message") || r.RecommendedVisibilityTimeout != 30 {
		t.Errorf("finding %+v, recommended %d s", f, r.RecommendedVisibilityTimeout)
	}
}

// A queue that has a RedrivePolicy is not told to get one.
func TestDoctorIncidentErrorPathWithRedrive(t *testing.T) {
	t.Parallel()
	in := newRedriveIncident(t, "throws", 5)
	in.send(3)
	for range 3 {
		in.receive(1, nil) // one at a time: received together, they would be a batch that fails whole
	}
	in.at(31)
	in.receive(1, nil) // a request after the lapses
	in.at(62)
	r := in.report()
	expect(t, r, ledger.DiagnosisHandlerFailing, ledger.DiagnosisHandlerFailing)
	if f := finding(r, ledger.DiagnosisHandlerFailing); strings.Contains(f.Fix, "A RedrivePolicy") ||
		!strings.Contains(f.Fix, "The RedrivePolicy moves a message to throws-dlq after 5 receives") {
		t.Errorf("fix %q advises the RedrivePolicy the queue has", f.Fix)
	}
}

// Some handlers overrun, others throw: both problems, each with its own
// evidence and fix.
func TestDoctorIncidentMixed(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "mixed", map[string]string{"VisibilityTimeout": "30"})
	slow, failing := in.send(3), in.send(3)
	first := in.receive(10, nil)
	in.at(31)
	second := in.receive(10, nil)
	in.at(33)
	for _, id := range failing {
		in.del(second[id]) // the retry of a thrown handler succeeds
	}
	in.at(45)
	for _, id := range slow {
		in.del(first[id]) // 15 s late: the message runs twice
	}
	in.at(50)
	for _, id := range slow {
		in.del(second[id])
	}
	in.at(200)
	r := in.report()
	expect(t, r, ledger.DiagnosisLeaseTooShort, ledger.DiagnosisLeaseTooShort, ledger.DiagnosisHandlerFailing)
	short, failed := finding(r, ledger.DiagnosisLeaseTooShort), finding(r, ledger.DiagnosisHandlerFailing)
	if !strings.Contains(short.Evidence, "3 late completions, 3 confirmed duplicate executions") || !strings.Contains(short.Fix, "VisibilityTimeout") {
		t.Errorf("lease-too-short: %+v", short)
	}
	if failed.Leases != 3 || !strings.Contains(failed.Evidence, "3 leases lapsed and their holders have not come back with a late completion") || !strings.Contains(failed.Fix, "consumers' errors") {
		t.Errorf("handler-failing: %+v", failed)
	}
}

// A handler whose heartbeat renews its lease every 20 s, with no word of
// progress, reads as held and renewed, not healthy, once held far beyond
// the p99 of the leases that completed: the doctor gives both readings (a
// long job, a hung handler) and states neither as a fact.
func TestDoctorIncidentHungHeartbeat(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "hung", map[string]string{"VisibilityTimeout": "30"})
	in.send(5)
	for i := range 5 {
		in.at(10 * i)
		_, h := in.receiveOne()
		in.at(10*i + 8)
		in.del(h)
	}
	hung := in.send(1)[0]
	in.at(100)
	_, h := in.receiveOne()
	for s := 120; s <= 700; s += 20 {
		in.at(s)
		in.change(h, 30)
		if s == 140 {
			// Held 40 s, renewed twice: long, but not yet far beyond the
			// 8 s p99 (10 times it).
			expect(t, in.report(), ledger.DiagnosisHealthy)
		}
	}
	in.at(710)
	r := in.report()
	expect(t, r, ledger.DiagnosisHeldRenewed, ledger.DiagnosisHeldRenewed)
	f := finding(r, ledger.DiagnosisHeldRenewed)
	if len(f.Held) != 1 || f.Held[0].MessageID != hung || f.Held[0].Held != 610*time.Second || f.Held[0].Renewals != 30 ||
		f.Held[0].CeilingIn != 12*time.Hour-610*time.Second || f.Leases != 5 || f.Held[0].Progress {
		t.Fatalf("finding %+v", f)
	}
	for _, want := range []string{hung, "held 10m10s", "76× the p99", "renewed 30 times", "with no word that its handler progressed",
		"a long job kept by its heartbeat", "or a hung handler kept alive by a heartbeat", "tie the heartbeat to the work", "12h0m0s after its receive"} {
		if !strings.Contains(r.Advice, want) {
			t.Errorf("advice lacks %q: %s", want, r.Advice)
		}
	}
	if strings.Contains(r.Advice, "A heartbeat is keeping a hung handler's lease alive") {
		t.Errorf("advice states a guess as a fact: %s", r.Advice)
	}
	qs, err := in.e.QueueMetrics(context.Background())
	if err != nil || len(qs) != 1 || qs[0].HungLeases != 1 || qs[0].OldestLease != 610*time.Second || qs[0].VisibilityTimeout != 30 {
		t.Errorf("metrics %+v, %v; want one hung lease, held 610 s, timeout 30 s", qs, err)
	}
	// The heartbeat stops (the process is killed): the lease lapses and
	// is hung no more.
	in.at(760)
	if r := in.report(); slices.Contains(kinds(r), ledger.DiagnosisHeldRenewed) {
		t.Errorf("after the lapse: %v", kinds(r))
	}
}

// Long jobs whose heartbeat renews them, within the p99 of their kind, are
// healthy: and a renewed lease is not said to be within the timeout.
func TestDoctorIncidentRenewedHealthy(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "renewing", map[string]string{"VisibilityTimeout": "30"})
	in.send(4)
	for i := range 4 {
		start := 100 * i
		in.at(start)
		_, h := in.receiveOne()
		for s := 20; s < 90; s += 20 {
			in.at(start + s)
			in.change(h, 30)
		}
		if i < 3 {
			in.at(start + 90)
			in.del(h)
		}
	}
	in.at(380)
	r := in.report()
	expect(t, r, ledger.DiagnosisHealthy)
	if strings.Contains(r.Advice, "within the 30s visibility timeout") || !strings.Contains(r.Advice, "3 of 3 completed leases were renewed") {
		t.Errorf("advice %q", r.Advice)
	}
}

// An operator receives from a dead-letter queue to look at what failed,
// twice, and lets every lease lapse.
func TestDoctorIncidentDeadLetterInspection(t *testing.T) {
	t.Parallel()
	e, clock := newEngine(t)
	in := &incident{t: t, e: e, clock: clock, ref: engine.QueueRef{Account: "000000000000", Name: "orders-dlq"}}
	in.queue("orders-dlq", nil)
	in.queue("orders", map[string]string{
		"RedrivePolicy": `{"deadLetterTargetArn":"` + e.ARN(in.ref.Account, "orders-dlq") + `","maxReceiveCount":"3"}`})
	in.send(4)
	in.receive(10, nil)
	in.at(40)
	second := in.receive(10, nil)
	in.at(100)
	r := in.report()
	expect(t, r, ledger.DiagnosisHealthy)
	if r.Window.Expired != 8 || !strings.Contains(r.Advice, "dead-letter queue of orders") {
		t.Errorf("expired %d, advice %q", r.Window.Expired, r.Advice)
	}
	// Then, done reading, deletes them: a minute late.
	for _, h := range second {
		in.del(h)
	}
	r = in.report()
	expect(t, r, ledger.DiagnosisHealthy)
	if r.Window.Late != 4 || !strings.Contains(r.Advice, "no handler or timeout is judged here") {
		t.Errorf("late %d, advice %q", r.Window.Late, r.Advice)
	}
}

// Two leases are too few for any finding, however they went.
func TestDoctorIncidentTwoLeases(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "two", map[string]string{"VisibilityTimeout": "30"})
	in.send(2)
	in.receive(2, nil)
	in.at(100)
	r := in.report()
	expect(t, r, ledger.DiagnosisTooFewLeases)
	if !strings.Contains(r.Advice, "at least 3") {
		t.Errorf("advice %q", r.Advice)
	}

	slow := newIncident(t, "two-slow", map[string]string{"VisibilityTimeout": "30"})
	slow.send(2)
	got := slow.receive(2, nil)
	slow.at(90)
	for _, h := range got {
		slow.del(h)
	}
	expect(t, slow.report(), ledger.DiagnosisTooFewLeases)
}

// Receives with VisibilityTimeout=0 lease nothing: the message stays
// visible. Deleting by such a receipt later, after others received the
// message, is no late completion.
func TestDoctorIncidentVisibilityTimeoutZero(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "peek", map[string]string{"VisibilityTimeout": "30"})
	in.send(3)
	var first map[string]string
	for i := range 5 {
		in.at(10 * i)
		got := in.receive(10, ptr(0))
		if i == 0 {
			first = got
		}
	}
	in.at(300)
	for _, h := range first {
		in.del(h)
	}
	r := in.report()
	expect(t, r, ledger.DiagnosisHealthy)
	if s := r.Window; s.Expired != 0 || s.Late != 0 || s.Received != 15 || s.Completed != 0 {
		t.Errorf("window %+v", s)
	}
}

// "Not ready": a handler releases its lease at once (ChangeMessageVisibility
// 0), or with a delay (a snooze shorter than the lease had left), and
// another worker takes the message later.
func TestDoctorIncidentRelease(t *testing.T) {
	t.Parallel()
	in := newIncident(t, "release", map[string]string{"VisibilityTimeout": "30"})
	in.send(3)
	for _, h := range in.receive(10, nil) {
		in.change(h, 0)
	}
	in.at(2)
	for _, h := range in.receive(10, nil) {
		in.change(h, 10) // back in 10 s, not 28: a release with a delay
	}
	in.at(5)
	if got := in.receive(10, nil); len(got) != 0 {
		t.Fatalf("received %d during the delay", len(got))
	}
	in.at(13)
	got := in.receive(10, nil)
	in.at(15)
	for _, h := range got {
		in.del(h)
	}
	in.at(100)
	r := in.report()
	expect(t, r, ledger.DiagnosisHealthy)
	if s := r.Window; s.Releases != 6 || s.Renewals != 0 || s.Expired != 0 || s.RedeliveriesNeverReturned != 0 || s.Completed != 3 {
		t.Errorf("window %+v; want 6 releases, no renewal, lapse or redelivery", s)
	}
	var ks []string
	events, _, _ := in.e.MessageHistory(context.Background(), in.ref, slices.Collect(func(yield func(string) bool) {
		for id := range got {
			yield(id)
			return
		}
	})[0])
	for _, ev := range events {
		ks = append(ks, ev.Kind)
	}
	if want := []string{"receive", "release", "receive", "release", "receive", "delete"}; !slices.Equal(ks, want) {
		t.Errorf("history %v, want %v", ks, want)
	}
}

func historyKinds(t *testing.T, in *incident, id string) []string {
	t.Helper()
	events, _, err := in.e.MessageHistory(context.Background(), in.ref, id)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range events {
		out = append(out, ev.Kind)
	}
	return out
}

// A change that brings a lease's end forward is a release with a delay
// only if the holder then lets the message go: a holder that works on
// under the shorter lease, renews it again or comes back late after the
// message was handed on was never releasing it.
func TestLedgerShortenedLease(t *testing.T) {
	t.Parallel()
	t.Run("worked on", func(t *testing.T) {
		t.Parallel()
		in := newIncident(t, "tighter", map[string]string{"VisibilityTimeout": "300"})
		id := in.send(1)[0]
		_, h := in.receiveOne()
		in.at(1)
		in.change(h, 60) // a tighter lease of its own
		in.at(30)
		in.del(h)
		s := in.report().Window
		if s.Completed != 1 || s.Releases != 0 || s.Renewals != 0 || s.Expired != 0 {
			t.Errorf("window %+v; want one completion, no release", s)
		}
		if got, want := historyKinds(t, in, id), []string{"receive", "renew", "delete"}; !slices.Equal(got, want) {
			t.Errorf("history %v, want %v", got, want)
		}
	})
	t.Run("renewed after", func(t *testing.T) {
		t.Parallel()
		in := newIncident(t, "renewed", map[string]string{"VisibilityTimeout": "30"})
		id := in.send(1)[0]
		_, h := in.receiveOne()
		in.at(1)
		in.change(h, 10)
		in.at(5)
		in.change(h, 30)
		in.at(20)
		if s := in.report().Window; s.Releases != 0 || s.Renewals != 1 || s.Expired != 0 {
			t.Errorf("window %+v; want one renewal, no release or lapse", s)
		}
		in.del(h)
		if got, want := historyKinds(t, in, id), []string{"receive", "renew", "renew", "delete"}; !slices.Equal(got, want) {
			t.Errorf("history %v, want %v", got, want)
		}
	})
	t.Run("came back late", func(t *testing.T) {
		t.Parallel()
		in := newIncident(t, "overran", map[string]string{"VisibilityTimeout": "300"})
		id := in.send(1)[0]
		_, a := in.receiveOne()
		in.at(1)
		in.change(a, 60)
		in.at(62)
		in.receiveOne()
		if s := in.report().Window; s.Releases != 1 || s.Expired != 0 {
			t.Errorf("at the end it set: %+v; want a release", s)
		}
		in.at(90)
		in.del(a) // A was still working
		s := in.report().Window
		if s.Releases != 0 || s.Expired != 1 || s.Late != 1 || s.Duplicates != 1 || s.RedeliveriesLapsedWhileWorking != 1 || s.LapsedReturned != 1 {
			t.Errorf("window %+v; want the release taken back for a lapse while working", s)
		}
		if got, want := historyKinds(t, in, id), []string{"receive", "renew", "expire", "receive", "late-delete", "removed"}; !slices.Equal(got, want) {
			t.Errorf("history %v, want %v", got, want)
		}
	})
}

// "Not ready": handlers that release at once, again and again, burn
// maxReceiveCount; the doctor says to release with a delay.
func TestDoctorIncidentReleaseLoop(t *testing.T) {
	t.Parallel()
	in := newRedriveIncident(t, "loop", 10)
	in.send(2)
	in.releaseRounds(3)
	r := in.report()
	expect(t, r, ledger.DiagnosisReleaseLoop, ledger.DiagnosisReleaseLoop)
	f := finding(r, ledger.DiagnosisReleaseLoop)
	if f.Leases != 4 || !strings.Contains(f.Fix, "Release with a delay") || !strings.Contains(f.Fix, "a message is moved to loop-dlq after 10 receives that each gave it straight back") {
		t.Errorf("finding %+v", f)
	}
}
