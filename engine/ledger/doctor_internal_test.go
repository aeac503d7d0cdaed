package ledger

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
)

// The doctor's rules where they live: events applied straight to a ledger,
// in seconds (ms) after applyBase, and the report read back at a given
// time. No clock is read.

func ms(n int) time.Time { return applyBase.Add(time.Duration(n) * time.Millisecond) }

var (
	consumerA = Client{Addr: "10.1.0.1", UserAgent: "aws-sdk-go-v2/1.36.3 os/linux"}
	consumerB = Client{Addr: "10.1.0.2", UserAgent: "aws-sdk-go-v2/1.36.3 os/linux"}
	cli       = Client{Addr: "10.1.0.9", UserAgent: "aws-cli/1.45.11 Python/3.11.7 Linux/6.18 botocore/1.43.11"}
)

// doc is one queue's ledger driven by events.
type doc struct {
	t   *testing.T
	l   *Ledger
	vis int
	n   int
}

func newDoc(t *testing.T, vis int) *doc { return &doc{t: t, l: &Ledger{}, vis: vis} }

// receive leases messages ids at ms as c, together when several.
func (d *doc) receive(c Client, at int, epoch uint32, ids ...string) {
	var batch uint64
	if len(ids) > 1 {
		d.n++
		batch = uint64(d.n)
	}
	for _, id := range ids {
		d.l.applyLocal(Event{Kind: KindReceive, QueueID: applyQueue, MessageID: id, Epoch: epoch, At: ms(at),
			Deadline: ms(at + d.vis*1000), ReceiveCount: int(epoch), Client: c, Batch: batch, N: len(ids)})
	}
}

func (d *doc) del(c Client, id string, epoch uint32, leased, at int) {
	d.l.applyLocal(Event{Kind: KindDelete, QueueID: applyQueue, MessageID: id, Epoch: epoch, At: ms(at), LeasedAt: ms(leased),
		Result: baton.LeaseCurrent, StoreEpoch: epoch, Removed: true, Client: c})
}

func (d *doc) change(c Client, id string, epoch uint32, leased, at, until int, shortened, progress bool) {
	d.l.applyLocal(Event{Kind: KindChange, QueueID: applyQueue, MessageID: id, Epoch: epoch, At: ms(at), Deadline: ms(until),
		LeasedAt: ms(leased), Result: baton.LeaseCurrent, StoreEpoch: epoch, Client: c, Shortened: shortened, Progress: progress})
}

// quick completes n leases of 100 ms from ms at, as c.
func (d *doc) quick(c Client, n, at int) {
	for i := range n {
		id := "quick-" + strconv.Itoa(at+i)
		d.receive(c, at+200*i, 1, id)
		d.del(c, id, 1, at+200*i, at+200*i+100)
	}
}

func (d *doc) report(at int) *LeaseReport {
	return d.l.Report(Queue{ID: applyQueue, Name: "q", VisibilityTimeout: d.vis}, ms(at))
}

func findingKinds(r *LeaseReport) []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, f.Kind)
	}
	return out
}

func wantFindings(t *testing.T, r *LeaseReport, diagnosis string, kinds ...string) {
	t.Helper()
	if got := findingKinds(r); !slices.Equal(got, kinds) || r.Diagnosis != diagnosis {
		t.Errorf("diagnosis %s, findings %v; want %s, %v\n%s", r.Diagnosis, got, diagnosis, kinds, r.Advice)
	}
}

// A running lease is held far beyond the p99 at 10 × the p99 and 5 s, not
// before; renewed before it had been held the p99 it is not renewed since.
func TestDoctorHeldFarBeyond(t *testing.T) {
	t.Parallel()
	d := newDoc(t, 3600)
	d.quick(consumerA, 5, 0) // p99 100 ms
	d.receive(consumerA, 2000, 1, "stalled")
	d.change(consumerA, "stalled", 1, 2000, 2050, 2050+3600_000, false, false) // renewed within the p99
	d.receive(consumerA, 2000, 1, "renewed")
	d.receive(consumerA, 2000, 1, "progress")
	for s := 1; s <= 6; s++ {
		d.change(consumerA, "renewed", 1, 2000, 2000+1000*s, 2000+1000*s+3600_000, false, false)
		d.change(consumerA, "progress", 1, 2000, 2000+1000*s, 2000+1000*s+3600_000, false, true)
	}
	wantFindings(t, d.report(6999), DiagnosisHealthy) // held 4.999 s: under the 5 s floor
	r := d.report(7000)
	wantFindings(t, r, DiagnosisHeldUnrenewed, DiagnosisHeldUnrenewed, DiagnosisHeldRenewed, DiagnosisLongJob)
	for i, want := range []string{"stalled", "renewed", "progress"} {
		if f := r.Findings[i]; len(f.Held) != 1 || f.Held[0].MessageID != want || f.Held[0].Held != 5*time.Second || f.Leases != 5 {
			t.Errorf("%s: %+v", f.Kind, f)
		}
	}
	if !r.Findings[2].Held[0].Progress || r.Findings[1].Held[0].Progress {
		t.Errorf("progress flags %+v %+v", r.Findings[1].Held, r.Findings[2].Held)
	}
	var m QueueMetrics
	d.l.Metrics(applyQueue, ms(7000), &m)
	// The stalled lease, renewed once by a holder that went on making
	// requests, may be a message given back with a delay: not counted.
	if m.HungLeases != 1 {
		t.Errorf("metrics: %d leases with no sign of progress, want 1 (neither the long job nor the lease renewed once is one)", m.HungLeases)
	}
}

// A lapsed lease is judged by what its holder did after: a holder seen
// since is alive (its handler failed); one unseen for holderGrace stopped;
// before that, nobody knows; a person's tool is an inspection; an unknown
// client counts as a failing handler, as before.
func TestDoctorLapsedHolders(t *testing.T) {
	t.Parallel()
	d := newDoc(t, 30)
	d.receive(consumerA, 0, 1, "alive")
	d.receive(consumerB, 0, 1, "stopped")
	d.receive(cli, 0, 1, "looked")
	d.receive(Client{}, 0, 1, "unknown")
	d.l.applyLocal(Event{Kind: KindSeen, QueueID: applyQueue, At: ms(31_000), Client: consumerA})
	l := d.l.lapsedHolders(applyQueue, ms(40_000), time.Time{}, time.Time{}, nil)
	if l.alive != 1 || l.stopped != 0 || l.waiting != 1 || l.inspected != 1 {
		t.Errorf("at 40 s: %+v", l)
	}
	l = d.l.lapsedHolders(applyQueue, ms(60_000), time.Time{}, time.Time{}, nil)
	if l.alive != 1 || l.stopped != 1 || l.waiting != 0 || l.inspected != 1 || !slices.Equal(l.holders, []Client{consumerB}) ||
		!slices.Equal(l.stoppedMsgs, []string{"stopped"}) || !slices.Equal(l.tools, []Client{cli}) {
		t.Errorf("at 60 s: %+v", l)
	}
	// A client seen again within seenEvery is seen here, but not told the
	// other nodes again.
	if _, ok := d.l.applyLocal(Event{Kind: KindSeen, QueueID: applyQueue, At: ms(31_500), Client: consumerA}); ok {
		t.Error("a client seen 500 ms after the last time was published again")
	}
	if last := d.l.queue(applyQueue).seen[consumerA]; !last.Equal(ms(31_500)) {
		t.Errorf("last seen %v, want 31.5 s", last)
	}
	if _, ok := d.l.applyLocal(Event{Kind: KindSeen, QueueID: applyQueue, At: ms(32_000), Client: consumerA}); !ok {
		t.Error("a client seen a second after it was last published was not published")
	}
}

// Stopped holders make a finding of their own, which says when they
// stopped and how to release; the same lapses of a holder that goes on
// polling are a failing handler.
func TestDoctorStoppedHolders(t *testing.T) {
	t.Parallel()
	d := newDoc(t, 30)
	d.receive(consumerA, 0, 1, "a1", "a2")
	d.receive(consumerB, 100, 1, "b1")
	r := d.report(60_000)
	wantFindings(t, r, DiagnosisHoldersStopped, DiagnosisHoldersStopped)
	for _, want := range []string{"3 leases lapsed and 2 holders (10.1.0.1 aws-sdk-go-v2/1.36.3; 10.1.0.2 aws-sdk-go-v2/1.36.3)",
		"within 100ms of each other", "messages a1, a2, b1", "release what they hold as they stop", "ChangeMessageVisibility 0"} {
		if !strings.Contains(r.Advice, want) {
			t.Errorf("advice lacks %q: %s", want, r.Advice)
		}
	}
	live := newDoc(t, 30)
	live.receive(consumerA, 0, 1, "a1", "a2", "a3")
	live.l.applyLocal(Event{Kind: KindSeen, QueueID: applyQueue, At: ms(45_000), Client: consumerA})
	wantFindings(t, live.report(60_000), DiagnosisHandlerFailing, DiagnosisHandlerFailing)
}

// A receive of several messages fails whole when every lease of it ends
// unfinished, lapsed (its holder going on) or released with a delay, and
// at least one lapsed. Twice in a row for three messages is a finding;
// releases at once, leases that lease nothing (VisibilityTimeout 0) and a
// person's receives are not; nor are receives whose every message its
// holder released with a delay: each retried with a back-off, which the
// retry-loop finding judges.
func TestDoctorBatchesFailWhole(t *testing.T) {
	t.Parallel()
	ids := []string{"m0", "m1", "m2", "m3"}
	// run receives the four messages together at 0 and 40 s; until(round,
	// i) is the delay message i is released with, or -1 for a lapse.
	run := func(t *testing.T, c Client, until func(round, i int) int) *LeaseReport {
		d := newDoc(t, 30)
		for round := range 2 {
			at := 40_000 * round
			d.receive(c, at, uint32(round+1), ids...)
			for i, id := range ids {
				if u := until(round, i); u >= 0 {
					d.change(c, id, uint32(round+1), at, at+500, at+500+u, true, false)
				}
			}
		}
		d.l.applyLocal(Event{Kind: KindSeen, QueueID: applyQueue, At: ms(75_000), Client: c}) // the holder went on
		return d.report(75_000)
	}
	r := run(t, consumerA, func(int, int) int { return -1 })
	wantFindings(t, r, DiagnosisBatchFailsWhole, DiagnosisBatchFailsWhole)
	if b := r.Findings[0]; b.Leases != 4 || !strings.Contains(b.Evidence, "2 receives of several messages (up to 4)") ||
		!strings.Contains(b.Evidence, "up to 2 times in a row; messages m0, m1, m2 and 1 more") {
		t.Errorf("finding %+v", b)
	}
	// One message of each batch released with a delay, the others lapsed:
	// the batch still failed whole.
	wantFindings(t, run(t, consumerA, func(_, i int) int { return []int{1000, -1, -1, -1}[i] }), DiagnosisBatchFailsWhole, DiagnosisBatchFailsWhole)
	// Every message released with a delay (the retry back-off): no batch
	// failing whole; two releases in a row are no retry loop yet.
	if r := run(t, consumerA, func(int, int) int { return 1000 }); slices.Contains(findingKinds(r), DiagnosisBatchFailsWhole) {
		t.Errorf("batches whose every message was released with a delay failed whole: %s", r.Advice)
	}
	// Released at once in the first round ("not ready", or a stop): no run
	// of two.
	wantFindings(t, run(t, consumerA, func(round, _ int) int { return []int{0, -1}[round] }), DiagnosisHandlerFailing, DiagnosisHandlerFailing)
	wantFindings(t, run(t, cli, func(int, int) int { return -1 }), DiagnosisInspection, DiagnosisInspection)

	// One message of the batch completed: the batch did not fail whole.
	d := newDoc(t, 30)
	for round := range 2 {
		at := 40_000 * round
		d.receive(consumerA, at, uint32(round+1), ids...)
		if round == 1 {
			d.del(consumerA, "m0", 2, at, at+100)
		}
	}
	d.l.applyLocal(Event{Kind: KindSeen, QueueID: applyQueue, At: ms(75_000), Client: consumerA})
	if r := d.report(75_000); slices.Contains(findingKinds(r), DiagnosisBatchFailsWhole) {
		t.Errorf("a batch with a completed message failed whole: %s", r.Advice)
	}
}

// Renewals the 12-hour ceiling refused are counted, kept in the history,
// and named from the third on.
func TestDoctorCeilingRefusals(t *testing.T) {
	t.Parallel()
	d := newDoc(t, 60)
	d.receive(consumerA, 0, 1, "m")
	refuse := func(s int) {
		d.l.applyLocal(Event{Kind: KindRefused, QueueID: applyQueue, MessageID: "m", Epoch: 1, At: ms(1000 * s),
			Deadline: ms(1000 * (s + 43200)), LeasedAt: ms(0), Client: consumerA})
	}
	refuse(1)
	refuse(2)
	if r := d.report(2500); r.Window.RefusedRenewals != 2 || slices.Contains(findingKinds(r), DiagnosisCeilingRefused) {
		t.Errorf("two refusals: %d counted, findings %v", r.Window.RefusedRenewals, findingKinds(r))
	}
	refuse(3)
	r := d.report(3500)
	wantFindings(t, r, DiagnosisCeilingRefused, DiagnosisCeilingRefused)
	if f := r.Findings[0]; len(f.Held) != 1 || f.Held[0].Refusals != 3 || !strings.Contains(f.Fix, "message m in 11h59m57s") {
		t.Errorf("finding %+v", f)
	}
	if h, _ := d.l.history(applyQueue, "m", ms(3500)); len(h) != 4 || h[3].Kind != EventRefused {
		t.Errorf("history %+v", h)
	}
}

// The recommended timeout comes from a p99 only: shorter than a timeout
// many times what the completed leases took, and nothing without one.
func TestDoctorRecommendation(t *testing.T) {
	t.Parallel()
	d := newDoc(t, 43200)
	d.quick(consumerA, 5, 0)
	r := d.report(2000)
	if r.Diagnosis != DiagnosisHealthy || r.RecommendedVisibilityTimeout != 1 ||
		!strings.Contains(r.Advice, "The visibility timeout of 43200s is 432000× the p99 of the leases completed without renewal (0.1s)") {
		t.Errorf("recommended %d s: %s", r.RecommendedVisibilityTimeout, r.Advice)
	}
	short := newDoc(t, 60) // 60 s is long, but under minLongTimeout
	short.quick(consumerA, 5, 0)
	if r := short.report(2000); r.RecommendedVisibilityTimeout != 60 || strings.Contains(r.Advice, "stalls") {
		t.Errorf("60 s: recommended %d s: %s", r.RecommendedVisibilityTimeout, r.Advice)
	}
	none := newDoc(t, 43200)
	none.receive(consumerA, 0, 1, "m")
	if r := none.report(3600_000); r.Diagnosis != DiagnosisTooFewLeases || r.RecommendedVisibilityTimeout != 43200 ||
		!strings.Contains(r.Advice, "message m has been held at least 1h0m0s, never renewed") {
		t.Errorf("no p99: %s, recommended %d s: %s", r.Diagnosis, r.RecommendedVisibilityTimeout, r.Advice)
	}
}

// A queue whose messages were sent and never leased is not judged
// healthy: no lease shows its consumers working. Its first completed
// lease is; one that began and runs is not yet nothing.
func TestDoctorNoLeasesIsNotHealthy(t *testing.T) {
	t.Parallel()
	d := newDoc(t, 30)
	d.l.applyLocal(Event{Kind: KindSent, QueueID: applyQueue, At: ms(0), N: 3})
	r := d.report(60_000)
	wantFindings(t, r, DiagnosisNoLeases)
	if r.SinceStart.Sent != 3 || r.Advice != "No lease seen yet: nothing to judge." {
		t.Errorf("sent %d, advice %q", r.SinceStart.Sent, r.Advice)
	}
	d.receive(consumerA, 61_000, 1, "waiting-0")
	if r := d.report(61_500); r.Diagnosis == DiagnosisNoLeases {
		t.Errorf("a lease running: diagnosis %s (%s)", r.Diagnosis, r.Advice)
	}
	d.del(consumerA, "waiting-0", 1, 61_000, 61_200)
	wantFindings(t, d.report(62_000), DiagnosisHealthy)
}

// Two consumers of one queue with different bugs: A's handler fails
// without releasing (its leases lapse, A polls on), B shortens its leases
// and crashes. B's leases, which ended at the end it set, are
// holders-stopped's, and no lapse besides: A's lapses are still named.
func TestDoctorShortenedByAStoppedHolderHideNoLapse(t *testing.T) {
	t.Parallel()
	d := newDoc(t, 30)
	for i, id := range []string{"a1", "a2", "a3"} {
		d.receive(consumerA, 100*i, 1, id)
	}
	// B's pods take B's messages in turn, each shortening its lease to
	// 10 s and crashing on the message.
	for pod := range 3 {
		c := Client{Addr: "10.1.0." + strconv.Itoa(10+pod), UserAgent: consumerB.UserAgent}
		at := 1000 + 15_000*pod
		for i, id := range []string{"b1", "b2", "b3"} {
			d.receive(c, at+100*i, uint32(pod+1), id)
			d.change(c, id, uint32(pod+1), at+100*i, at+1000, at+11_000, true, false)
		}
	}
	d.l.applyLocal(Event{Kind: KindSeen, QueueID: applyQueue, At: ms(80_000), Client: consumerA})
	r := d.report(80_000)
	wantFindings(t, r, DiagnosisHandlerFailing, DiagnosisHandlerFailing, DiagnosisHoldersStopped)
	if f := r.Findings[0]; f.Leases != 3 {
		t.Errorf("handler-failing on %d leases, want A's 3", f.Leases)
	}
	if f := r.Findings[1]; f.Leases != 3 {
		t.Errorf("holders-stopped on %d leases, want the 3 B's last pod left in a run of releases", f.Leases)
	}
}

// One message of a retry loop received with its whole batch is said in
// the singular.
func TestRetryBatchedTextOneMessage(t *testing.T) {
	got := retryBatchedText(retries{leases: 3, batched: 1, msgs: []string{"a", "b"}})
	if !strings.Contains(got, " 1 of those messages was received with every other message of a receive") {
		t.Errorf("got %q", got)
	}
	if got := retryBatchedText(retries{leases: 3, batched: 1, msgs: []string{"a"}}); !strings.HasPrefix(got, " That message was received") {
		t.Errorf("got %q", got)
	}
}

// A renewal within a second of its receive reads in its own figure: it
// read "last renewed 0s after its receive".
func TestRenewedSinceUnderASecond(t *testing.T) {
	begin := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	h := HeldLease{Begin: begin, Renewals: 1, LastRenewal: begin.Add(300 * time.Millisecond)}
	if got := renewedSince(h); got != "last renewed 0.3s after its receive" {
		t.Errorf("renewedSince = %q", got)
	}
	h.LastRenewal = begin.Add(90 * time.Second)
	if got := renewedSince(h); got != "last renewed 1m30s after its receive" {
		t.Errorf("renewedSince = %q", got)
	}
}
