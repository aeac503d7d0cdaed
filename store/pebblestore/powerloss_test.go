package pebblestore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/testutil/skipnote"
	"github.com/baton-sqs/baton/store/pebblestore"
)

// The power-loss test runs the engine over the embedded store on a file
// system in memory that keeps, when the power is cut, only what was synced
// (and, in some cuts, a random part of what was not: pages the disk wrote
// in its own time). A random workload of sends, batch sends, receives,
// visibility changes, deletes, purges and queue creations and deletions
// runs from several goroutines, advancing a fake clock; at a random moment,
// calls in flight, the power is cut (the file system is cloned as a crash
// would leave it). A store opened on the clone must hold what a client was
// acknowledged: every call that had returned before the cut is
// acknowledged; one in flight, or failed for a reason other than a refusal,
// may or may not have happened. The checks (powerloss_check_test.go) are:
//
//   - every acknowledged send is received in the drain that follows the
//     cut, unless a delete, a purge or its queue's deletion may have taken
//     it (lost);
//   - no message is received after an acknowledged delete of it, or an
//     acknowledged purge of its queue that began after its send was
//     acknowledged (back);
//   - no lease ends early: a message received with visibility V is not
//     received again before V after that receive began, nor before the
//     end an acknowledged visibility change gave its lease;
//   - FIFO: no message of a group is received while an earlier one whose
//     send was acknowledged may not have been deleted; a send under the
//     deduplication id of an acknowledged send within five minutes
//     returns that send's message id, and its body is never received;
//     sequence numbers given after the cut are above those acknowledged;
//   - a queue whose creation was acknowledged, with no deletion tried, is
//     there; one whose deletion was acknowledged is not, and cannot be
//     created again within the minute.
//
// The same checks hold for the calls before the cut, in the world that
// went on until it. Each cut is reproducible from its seed as far as the
// seed fixes every choice of the workload and the cut's moment (after the
// k-th call returns); the interleaving of the concurrent calls is the
// scheduler's, so BATON_POWERLOSS_SEED replays one seed many times.

const (
	plAccount = "000000000000"
	plStd     = "std"
	plPurged  = "purged"
	plFIFO    = "jobs.fifo"
	// plDedupWindow is how long a deduplication id holds, on the clock.
	plDedupWindow = 5 * time.Minute
)

var (
	plKey  = bytes.Repeat([]byte{0x5a}, 32)
	plBase = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
)

func ref(name string) engine.QueueRef { return engine.QueueRef{Account: plAccount, Name: name} }

func TestPowerLoss(t *testing.T) {
	t.Parallel()
	// 100 cuts with the long suites (BATON_LONG_TESTS=1, as in CI), 20
	// for the README's test command; BATON_POWERLOSS_CUTS sets any other.
	cuts := 100
	if !skipnote.Long() || testing.Short() {
		cuts = 20
	}
	cuts = envInt(t, "BATON_POWERLOSS_CUTS", cuts)
	t.Logf("%d power cuts (%s=1 runs 100, BATON_POWERLOSS_CUTS any number)", cuts, skipnote.LongEnv)
	first := int64(1)
	if v := os.Getenv("BATON_POWERLOSS_SEED"); v != "" {
		seed, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("BATON_POWERLOSS_SEED=%q: want a number", v)
		}
		// One seed, replayed: its interleavings vary from run to run.
		first, cuts = seed, envInt(t, "BATON_POWERLOSS_CUTS", 50)
	}
	// BATON_POWERLOSS_DURABILITY=relaxed runs the cuts on a relaxed store,
	// to see what it loses: the test then fails.
	d, err := pebblestore.ParseDurability(os.Getenv("BATON_POWERLOSS_DURABILITY"))
	if err != nil {
		t.Fatalf("BATON_POWERLOSS_DURABILITY: %v", err)
	}
	start := time.Now()
	var total plTally
	for i := range cuts {
		seed := first + int64(i)
		if os.Getenv("BATON_POWERLOSS_SEED") != "" {
			seed = first
		}
		tally, problems := powerCut(t, seed, d)
		total.add(tally)
		if len(problems) > 0 {
			for _, p := range problems[:min(len(problems), 20)] {
				t.Error(p)
			}
			t.Fatalf("power cut, durability %s, seed %d: %d problems (%s; %d shown); replay with BATON_POWERLOSS_DURABILITY=%s BATON_POWERLOSS_SEED=%d go test ./store/pebblestore -run 'TestPowerLoss$' -count=1",
				d, seed, len(problems), countKinds(problems), min(len(problems), 20), d, seed)
		}
	}
	t.Logf("%d power cuts in %v: %s; 0 lost, 0 back, 0 leases ended early, 0 out of order, 0 duplicates",
		cuts, time.Since(start).Round(time.Millisecond), total.describe("the cuts"))
}

// countKinds counts problems by the word they start with (LOST, BACK, …).
func countKinds(problems []string) string {
	n := map[string]int{}
	var kinds []string
	for _, p := range problems {
		k, _, _ := strings.Cut(p, ":")
		if n[k] == 0 {
			kinds = append(kinds, k)
		}
		n[k]++
	}
	var b strings.Builder
	for i, k := range kinds {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d %s", n[k], k)
	}
	return b.String()
}

// envInt reads a positive number from the environment, or returns def.
func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

// plTally counts what the checks of cuts covered.
type plTally struct {
	calls, sends, receives, deletes, changes, purges, queueOps, inFlight, drained int
}

func (a *plTally) add(b plTally) {
	a.calls += b.calls
	a.sends += b.sends
	a.receives += b.receives
	a.deletes += b.deletes
	a.changes += b.changes
	a.purges += b.purges
	a.queueOps += b.queueOps
	a.inFlight += b.inFlight
	a.drained += b.drained
}

// describe says what the tally counts, for snapshots that were what:
// "the cuts", "the backups".
func (a plTally) describe(what string) string {
	return fmt.Sprintf("%d acknowledged calls checked (%d messages sent, %d received, %d deletes, %d visibility changes, %d purges, %d queue creations and deletions), %d calls in flight at %s, %d messages received after them",
		a.calls, a.sends, a.receives, a.deletes, a.changes, a.purges, a.queueOps, a.inFlight, what, a.drained)
}

// plWorld is one store, its engine and what the clients saw of them.
type plWorld struct {
	clk *clock.Fake
	eng *engine.Engine
	st  *pebblestore.Store

	seq    atomic.Int64 // orders the calls' starts and returns
	mu     sync.Mutex
	events []*plEvent
	// returned counts the calls that returned; reached is closed when
	// the count reaches cutAfter.
	returned atomic.Int64
	cutAfter int64
	reached  chan struct{}
	once     sync.Once
	bodies   atomic.Int64
	seed     int64
}

// plDir is the data directory of the power-loss tests.
const plDir = "/baton-data"

// plOpen opens the store in plDir and an engine over it on fs.
func plOpen(fs vfs.FS, d pebblestore.Durability, clk *clock.Fake) (*pebblestore.Store, *engine.Engine, error) {
	return plOpenDir(fs, plDir, d, clk)
}

func plOpenDir(fs vfs.FS, dir string, d pebblestore.Durability, clk *clock.Fake) (*pebblestore.Store, *engine.Engine, error) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := pebblestore.Open(context.Background(), dir, pebblestore.Options{FS: fs, Durability: d, Logger: log})
	if err != nil {
		return nil, nil, err
	}
	eng, err := engine.New(engine.Config{Store: st, Clock: clk, ReceiptKey: plKey, Logger: log})
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return st, eng, nil
}

// powerCut runs one cut and returns what its checks covered and the
// problems they found.
func powerCut(t *testing.T, seed int64, d pebblestore.Durability) (plTally, []string) {
	return plRun(t, seed, d, func(w *plWorld, fs *vfs.MemFS, rng *rand.Rand) (plSnapshot, error) {
		// The fraction of the unsynced writes the crash keeps is 0 in
		// half the cuts.
		keep := 0
		if rng.IntN(2) == 0 {
			keep = 1 + rng.IntN(100)
		}
		cut := w.seq.Add(1)
		crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: keep, RNG: rand.New(rand.NewPCG(uint64(w.seed), 7))})
		return plSnapshot{fs: crashed, dir: plDir, from: cut, to: math.MaxInt64}, nil
	})
}

// plSnapshot is what a cut or a backup left: a data directory on a file
// system, holding every call acknowledged before from and none begun
// after to.
type plSnapshot struct {
	fs       vfs.FS
	dir      string
	from, to int64
}

// plRun runs the workload on a new store, takes a snapshot at a random
// moment, and checks the store opened on it.
func plRun(t *testing.T, seed int64, d pebblestore.Durability, snapshot func(*plWorld, *vfs.MemFS, *rand.Rand) (plSnapshot, error)) (plTally, []string) {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15))
	fs := vfs.NewCrashableMem()
	w := &plWorld{clk: clock.NewFake(plBase), reached: make(chan struct{}), seed: seed}
	var err error
	if w.st, w.eng, err = plOpen(fs, d, w.clk); err != nil {
		t.Fatalf("seed %d: open: %v", seed, err)
	}
	for _, q := range []struct {
		name  string
		attrs map[string]string
	}{
		{plStd, map[string]string{"VisibilityTimeout": "3"}},
		{plPurged, nil},
		{plFIFO, map[string]string{"FifoQueue": "true"}},
	} {
		start, at := w.begin()
		_, err := w.eng.CreateQueue(context.Background(), engine.CreateQueueParams{Account: plAccount, Name: q.name, Attributes: q.attrs})
		w.finish(err, &plEvent{kind: plCreateQueue, queue: q.name, start: start, startAt: at})
		if err != nil {
			t.Fatalf("seed %d: create %s: %v", seed, q.name, err)
		}
	}
	// The snapshot comes after a random number of calls have returned,
	// up to about as many as the workload makes.
	w.cutAfter = w.returned.Load() + 1 + int64(rng.IntN(plWorkers*plCalls))
	ctx, cancel := context.WithCancel(context.Background())
	var workers sync.WaitGroup
	for i, work := range []func(context.Context, *rand.Rand){w.sendStandard, w.sendFIFO, w.receive, w.receive, w.churnQueues} {
		r := rand.New(rand.NewPCG(uint64(seed), uint64(i+1)))
		workers.Go(func() { work(ctx, r) })
	}
	allDone := make(chan struct{})
	go func() { workers.Wait(); close(allDone) }()
	select {
	case <-w.reached:
	case <-allDone:
	}
	snap, err := snapshot(w, fs, rng)
	cancel()
	<-allDone
	w.eng.Close()
	w.st.Close()
	if err != nil {
		return plTally{}, []string{err.Error()}
	}

	// The restart, on what the cut or backup left.
	after := &plWorld{clk: w.clk, seed: seed, reached: make(chan struct{})}
	after.seq.Store(w.seq.Load() + 1)
	if after.st, after.eng, err = plOpenDir(snap.fs, snap.dir, d, w.clk); err != nil {
		return plTally{}, []string{fmt.Sprintf("reopen on what the cut or backup left: %v", err)}
	}
	defer after.st.Close()
	defer after.eng.Close()
	// Calls begun after the snapshot never happened, for its store.
	events := slices.DeleteFunc(w.events, func(e *plEvent) bool { return e.start > snap.to })
	c := newPLCheck(events, snap.from)
	c.afterCut(after)
	c.events = append(c.events, after.events...)
	c.index()
	c.checkAll()
	return c.tally(), c.problems
}

// Sizes of the workload: workers, and the calls each makes at most.
const (
	plWorkers = 5
	plCalls   = 120
)

// begin returns the order and clock of a call's start.
func (w *plWorld) begin() (int64, time.Time) { return w.seq.Add(1), w.clk.Now() }

// finish records the return of a call and its events.
func (w *plWorld) finish(err error, evs ...*plEvent) {
	end, at := w.seq.Add(1), w.clk.Now()
	w.mu.Lock()
	for _, e := range evs {
		e.end, e.endAt = end, at
		if e.err == nil {
			e.err = err
		}
		w.events = append(w.events, e)
	}
	w.mu.Unlock()
	if w.returned.Add(1) == w.cutAfter {
		w.once.Do(func() { close(w.reached) })
	}
}

// tick advances the clock, now and then, by up to 400 ms.
func (w *plWorld) tick(r *rand.Rand) {
	if r.IntN(3) == 0 {
		w.clk.Advance(time.Duration(r.IntN(400)) * time.Millisecond)
	}
}

func (w *plWorld) body() string {
	return fmt.Sprintf("s%d-b%d", w.seed, w.bodies.Add(1))
}

// sendStandard sends to the standard queues, one or a batch at a time,
// and now and then purges one.
func (w *plWorld) sendStandard(ctx context.Context, r *rand.Rand) {
	for range plCalls {
		if ctx.Err() != nil {
			return
		}
		w.tick(r)
		queue := plStd
		if r.IntN(3) == 0 {
			queue = plPurged
		}
		if r.IntN(25) == 0 {
			start, at := w.begin()
			err := w.eng.PurgeQueue(ctx, ref(plPurged))
			w.finish(err, &plEvent{kind: plPurge, queue: plPurged, start: start, startAt: at})
			continue
		}
		n := 1 + r.IntN(10)
		evs := make([]*plEvent, n)
		entries := make([]engine.SendParams, n)
		for i := range evs {
			evs[i] = &plEvent{kind: plSend, queue: queue, body: w.body()}
			entries[i] = engine.SendParams{ID: strconv.Itoa(i), Body: evs[i].body}
		}
		w.send(ctx, r, evs, entries)
	}
}

// send sends entries, the messages of evs, one at a time or as a batch,
// and records the results.
func (w *plWorld) send(ctx context.Context, r *rand.Rand, evs []*plEvent, entries []engine.SendParams) {
	start, at := w.begin()
	for _, e := range evs {
		e.start, e.startAt = start, at
	}
	if len(entries) == 1 && r.IntN(2) == 0 {
		res, err := w.eng.SendMessage(ctx, ref(evs[0].queue), entries[0])
		if err == nil {
			evs[0].id, evs[0].seqNo = res.MessageID, res.SequenceNumber
		}
		w.finish(err, evs[0])
		return
	}
	ok, failed, err := w.eng.SendMessageBatch(ctx, ref(evs[0].queue), entries)
	for _, res := range ok {
		i, _ := strconv.Atoi(res.ID)
		evs[i].id, evs[i].seqNo = res.MessageID, res.SequenceNumber
	}
	for _, f := range failed {
		i, _ := strconv.Atoi(f.ID)
		evs[i].err = f.Err
	}
	w.finish(err, evs...)
}

// sendFIFO sends to three groups of the FIFO queue, in order, and now and
// then again under the deduplication id of an earlier send.
func (w *plWorld) sendFIFO(ctx context.Context, r *rand.Rand) {
	next := map[string]int{}
	var sent []*plEvent // acknowledged, for deduplication
	for range plCalls {
		if ctx.Err() != nil {
			return
		}
		w.tick(r)
		n := 1 + r.IntN(4)
		evs := make([]*plEvent, n)
		entries := make([]engine.SendParams, n)
		for i := range evs {
			e := &plEvent{kind: plSend, queue: plFIFO, body: w.body(), group: "g" + strconv.Itoa(r.IntN(3))}
			e.dedup = "d-" + e.body
			if len(sent) > 0 && r.IntN(6) == 0 {
				orig := sent[r.IntN(len(sent))]
				if w.clk.Now().Before(orig.startAt.Add(plDedupWindow - time.Minute)) {
					e.dedup, e.group, e.dupOf = orig.dedup, orig.group, orig
				}
			}
			if e.dupOf == nil {
				e.index = next[e.group]
				next[e.group]++
			}
			evs[i] = e
			entries[i] = engine.SendParams{ID: strconv.Itoa(i), Body: e.body, GroupID: e.group, DedupID: e.dedup}
		}
		w.send(ctx, r, evs, entries)
		for _, e := range evs {
			if e.err == nil && e.dupOf == nil {
				sent = append(sent, e)
			}
		}
	}
}

// receive receives from a random queue and deletes, changes the
// visibility of, or leaves each message, one at a time or in batches.
func (w *plWorld) receive(ctx context.Context, r *rand.Rand) {
	queues := []string{plStd, plStd, plPurged, plFIFO, plFIFO}
	for range plCalls {
		if ctx.Err() != nil {
			return
		}
		w.tick(r)
		queue := queues[r.IntN(len(queues))]
		got := w.receiveFrom(ctx, r, queue)
		var changes, deletes []*plEvent
		for _, g := range got {
			switch k := r.IntN(10); {
			case k < 3:
				changes = append(changes, &plEvent{kind: plChange, queue: queue, body: g.body, handle: g.handle, vis: r.IntN(8)})
			case k < 8:
				deletes = append(deletes, &plEvent{kind: plDelete, queue: queue, body: g.body, handle: g.handle})
			}
		}
		w.tick(r)
		w.change(ctx, r, queue, changes)
		w.tick(r)
		w.delete(ctx, r, queue, deletes)
	}
}

// receiveFrom makes one receive and returns its events.
func (w *plWorld) receiveFrom(ctx context.Context, r *rand.Rand, queue string) []*plEvent {
	// No long polls: the clock moves only when a worker moves it.
	max, vis, wait := 1+r.IntN(10), r.IntN(6), 0
	start, at := w.begin()
	msgs, err := w.eng.ReceiveMessage(ctx, ref(queue), engine.ReceiveParams{MaxNumberOfMessages: &max, VisibilityTimeout: &vis, WaitTimeSeconds: &wait})
	evs := make([]*plEvent, len(msgs))
	call := &plCall{}
	for i, m := range msgs {
		evs[i] = &plEvent{kind: plReceive, queue: queue, body: m.Body, id: m.MessageID, handle: m.ReceiptHandle, vis: vis,
			start: start, startAt: at, call: call, pos: i}
	}
	call.got = evs
	if err != nil || len(evs) == 0 {
		// An empty receive is recorded as a call, for the count.
		w.finish(err, &plEvent{kind: plReceive, queue: queue, start: start, startAt: at, empty: true})
		return nil
	}
	w.finish(nil, evs...)
	return evs
}

// change changes the visibility of evs' messages, one by one or in a batch.
func (w *plWorld) change(ctx context.Context, r *rand.Rand, queue string, evs []*plEvent) {
	if len(evs) == 0 {
		return
	}
	if r.IntN(2) == 0 {
		for _, e := range evs {
			e.start, e.startAt = w.begin()
			err := w.eng.ChangeMessageVisibility(ctx, ref(queue), e.handle, &e.vis)
			w.finish(err, e)
		}
		return
	}
	start, at := w.begin()
	entries := make([]engine.VisibilityEntry, len(evs))
	for i, e := range evs {
		e.start, e.startAt = start, at
		entries[i] = engine.VisibilityEntry{ID: strconv.Itoa(i), ReceiptHandle: e.handle, VisibilityTimeout: &e.vis}
	}
	_, failed, err := w.eng.ChangeMessageVisibilityBatch(ctx, ref(queue), entries)
	for _, f := range failed {
		i, _ := strconv.Atoi(f.ID)
		evs[i].err = f.Err
	}
	w.finish(err, evs...)
}

// delete deletes evs' messages, one by one or in a batch.
func (w *plWorld) delete(ctx context.Context, r *rand.Rand, queue string, evs []*plEvent) {
	if len(evs) == 0 {
		return
	}
	if r.IntN(2) == 0 {
		for _, e := range evs {
			e.start, e.startAt = w.begin()
			err := w.eng.DeleteMessage(ctx, ref(queue), e.handle)
			w.finish(err, e)
		}
		return
	}
	start, at := w.begin()
	entries := make([]engine.HandleEntry, len(evs))
	for i, e := range evs {
		e.start, e.startAt = start, at
		entries[i] = engine.HandleEntry{ID: strconv.Itoa(i), ReceiptHandle: e.handle}
	}
	_, failed, err := w.eng.DeleteMessageBatch(ctx, ref(queue), entries)
	for _, f := range failed {
		i, _ := strconv.Atoi(f.ID)
		evs[i].err = f.Err
	}
	w.finish(err, evs...)
}

// churnQueues creates queues, sends to them and deletes some.
func (w *plWorld) churnQueues(ctx context.Context, r *rand.Rand) {
	for i := range plCalls / 3 {
		if ctx.Err() != nil {
			return
		}
		w.tick(r)
		name := fmt.Sprintf("churn-%d", i)
		start, at := w.begin()
		_, err := w.eng.CreateQueue(ctx, engine.CreateQueueParams{Account: plAccount, Name: name})
		w.finish(err, &plEvent{kind: plCreateQueue, queue: name, start: start, startAt: at})
		if err != nil {
			continue
		}
		w.tick(r)
		e := &plEvent{kind: plSend, queue: name, body: w.body()}
		w.send(ctx, r, []*plEvent{e}, []engine.SendParams{{ID: "0", Body: e.body}})
		if r.IntN(2) == 0 {
			w.tick(r)
			start, at := w.begin()
			err := w.eng.DeleteQueue(ctx, ref(name))
			w.finish(err, &plEvent{kind: plDeleteQueue, queue: name, start: start, startAt: at})
		}
	}
}

// afterCut runs the calls of the check on the restarted store: sends
// under the deduplication ids of acknowledged FIFO sends, a send for its
// sequence number, the queue checks, then a drain of every queue.
func (c *plCheck) afterCut(w *plWorld) {
	ctx := context.Background()
	now := w.clk.Now()
	for _, s := range c.events {
		if s.kind != plSend || s.queue != plFIFO || s.dupOf != nil || !c.acked(s) || !now.Before(s.startAt.Add(plDedupWindow-time.Minute)) {
			continue
		}
		e := &plEvent{kind: plSend, queue: plFIFO, body: w.body() + "-again", group: s.group, dedup: s.dedup, dupOf: s}
		w.send(ctx, rand.New(rand.NewPCG(0, 0)), []*plEvent{e}, []engine.SendParams{{ID: "0", Body: e.body, GroupID: e.group, DedupID: e.dedup}})
	}
	next := &plEvent{kind: plSend, queue: plFIFO, body: w.body() + "-next", group: "after", dedup: "after"}
	w.send(ctx, rand.New(rand.NewPCG(0, 0)), []*plEvent{next}, []engine.SendParams{{ID: "0", Body: next.body, GroupID: next.group, DedupID: next.dedup}})
	c.nextSeq = next
	queues := []string{plStd, plPurged, plFIFO}
	for _, name := range c.churned() {
		start, at := w.begin()
		_, err := w.eng.GetQueue(ctx, ref(name))
		w.finish(err, &plEvent{kind: plGetQueue, queue: name, start: start, startAt: at})
		if err == nil {
			queues = append(queues, name)
			continue
		}
		start, at = w.begin()
		_, err = w.eng.CreateQueue(ctx, engine.CreateQueueParams{Account: plAccount, Name: name})
		w.finish(err, &plEvent{kind: plRecreateQueue, queue: name, start: start, startAt: at})
		if err == nil {
			queues = append(queues, name)
		}
	}
	for _, q := range queues {
		c.drain(w, q)
	}
}

// drain receives and deletes every message of queue, moving the clock on
// past every lease and delay, until a receive after that finds nothing.
func (c *plCheck) drain(w *plWorld, queue string) {
	ctx := context.Background()
	max, vis, wait := 10, 3600, 0
	for round := 0; round < 1000; round++ {
		start, at := w.begin()
		msgs, err := w.eng.ReceiveMessage(ctx, ref(queue), engine.ReceiveParams{MaxNumberOfMessages: &max, VisibilityTimeout: &vis, WaitTimeSeconds: &wait})
		if err != nil {
			c.problemf("drain %s: receive: %v", queue, err)
			return
		}
		if len(msgs) == 0 {
			if c.drainedAt[queue].Equal(w.clk.Now()) {
				return
			}
			// Past every lease the workload gave (the drain deletes
			// what it receives): ten minutes a queue keep the whole
			// check well within the messages' retention.
			w.clk.Advance(10 * time.Minute)
			c.drainedAt[queue] = w.clk.Now()
			continue
		}
		call := &plCall{}
		evs := make([]*plEvent, len(msgs))
		entries := make([]engine.HandleEntry, len(msgs))
		for i, m := range msgs {
			evs[i] = &plEvent{kind: plReceive, queue: queue, body: m.Body, id: m.MessageID, handle: m.ReceiptHandle, vis: vis,
				start: start, startAt: at, call: call, pos: i, drained: true}
			entries[i] = engine.HandleEntry{ID: strconv.Itoa(i), ReceiptHandle: m.ReceiptHandle}
		}
		call.got = evs
		w.finish(nil, evs...)
		del := make([]*plEvent, len(msgs))
		start, at = w.begin()
		for i, e := range evs {
			del[i] = &plEvent{kind: plDelete, queue: queue, body: e.body, handle: e.handle, start: start, startAt: at}
		}
		_, failed, err := w.eng.DeleteMessageBatch(ctx, ref(queue), entries)
		for _, f := range failed {
			i, _ := strconv.Atoi(f.ID)
			del[i].err = f.Err
		}
		w.finish(err, del...)
		if err != nil || len(failed) > 0 {
			c.problemf("drain %s: delete: %v %v", queue, err, failed)
			return
		}
	}
	c.problemf("drain %s: still not empty after 1000 receives", queue)
}

// isRefusal reports whether err is an answer that the call changed
// nothing: an error of the client's. Any other failure may or may not
// have taken effect.
func isRefusal(err error) bool {
	var be *baton.Error
	return errors.As(err, &be) && !be.Code.Spec().Receiver
}

// TestPowerLossRelaxed shows what --durability relaxed gives up: sends it
// acknowledged are lost when the power is cut before the system wrote
// them to the disk (here, never), where full keeps every one.
func TestPowerLossRelaxed(t *testing.T) {
	t.Parallel()
	const sends = 20
	for _, d := range []pebblestore.Durability{pebblestore.DurabilityFull, pebblestore.DurabilityRelaxed} {
		fs := vfs.NewCrashableMem()
		clk := clock.NewFake(plBase)
		st, eng, err := plOpen(fs, d, clk)
		if err != nil {
			t.Fatal(err)
		}
		ctx := t.Context()
		if _, err := eng.CreateQueue(ctx, engine.CreateQueueParams{Account: plAccount, Name: plStd}); err != nil {
			t.Fatal(err)
		}
		for i := range sends {
			if _, err := eng.SendMessage(ctx, ref(plStd), engine.SendParams{Body: strconv.Itoa(i)}); err != nil {
				t.Fatal(err)
			}
		}
		crashed := fs.CrashClone(vfs.CrashCloneCfg{})
		eng.Close()
		st.Close()

		st, eng, err = plOpen(crashed, d, clk)
		if err != nil {
			t.Fatalf("%s: reopen after the cut: %v", d, err)
		}
		kept := 0
		max, vis := 10, 60
		for {
			msgs, err := eng.ReceiveMessage(ctx, ref(plStd), engine.ReceiveParams{MaxNumberOfMessages: &max, VisibilityTimeout: &vis})
			if err != nil || len(msgs) == 0 {
				break // an error: the queue's creation was lost too
			}
			kept += len(msgs)
		}
		eng.Close()
		st.Close()
		t.Logf("durability %s: %d of %d acknowledged sends kept through a power cut", d, kept, sends)
		switch {
		case d == pebblestore.DurabilityFull && kept != sends:
			t.Errorf("durability full lost %d acknowledged sends in a power cut", sends-kept)
		case d == pebblestore.DurabilityRelaxed && kept == sends:
			t.Errorf("durability relaxed kept every acknowledged send through a power cut: the cut does not drop what was not synced")
		}
	}
}

// TestBackupUnderLoad takes a backup while the workload of the power-loss
// test runs, calls in flight, and checks the store opened on the backup
// as the power-loss test checks the store after a cut: it holds every
// call acknowledged before the backup began, and nothing of those begun
// after it returned (a message sent after it is a phantom, one deleted
// after it must be there).
func TestBackupUnderLoad(t *testing.T) {
	t.Parallel()
	for _, d := range []pebblestore.Durability{pebblestore.DurabilityFull, pebblestore.DurabilityRelaxed} {
		var total plTally
		for seed := int64(1); seed <= 8; seed++ {
			tally, problems := plRun(t, seed, d, func(w *plWorld, fs *vfs.MemFS, rng *rand.Rand) (plSnapshot, error) {
				dest := "/backups/" + strconv.FormatInt(seed, 10)
				from := w.seq.Add(1)
				err := w.st.Backup(t.Context(), dest)
				to := w.seq.Add(1)
				// Only what was synced: the backup says it is durable
				// when it returns.
				return plSnapshot{fs: fs.CrashClone(vfs.CrashCloneCfg{}), dir: dest, from: from, to: to}, err
			})
			total.add(tally)
			if len(problems) > 0 {
				for _, p := range problems[:min(len(problems), 20)] {
					t.Error(p)
				}
				t.Fatalf("backup, durability %s, seed %d: %d problems (%s)", d, seed, len(problems), countKinds(problems))
			}
		}
		t.Logf("durability %s: 8 backups under load: %s", d, total.describe("the backups"))
	}
}
