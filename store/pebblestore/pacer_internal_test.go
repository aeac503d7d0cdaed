package pebblestore

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/baton-sqs/baton/engine"
)

// fakeCompactionDB is Pebble's side of the scheduler: allowed compactions
// may run at once, waiting are picked and waiting to run, and onLook, if
// set, runs (once) when the scheduler looks for one, as a call of
// Pebble's may run meanwhile.
type fakeCompactionDB struct {
	mu        sync.Mutex
	allowed   int
	waiting   int
	scheduled int
	onLook    func()
}

func (f *fakeCompactionDB) GetAllowedWithoutPermission() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.allowed
}

func (f *fakeCompactionDB) GetWaitingCompaction() (bool, pebble.WaitingCompaction) {
	f.mu.Lock()
	look := f.onLook
	f.onLook = nil
	waiting := f.waiting > 0
	f.mu.Unlock()
	if look != nil {
		look()
	}
	return waiting, pebble.WaitingCompaction{}
}

func (f *fakeCompactionDB) Schedule(pebble.CompactionGrantHandle) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.waiting == 0 {
		return false
	}
	f.waiting--
	f.scheduled++
	return true
}

// testPacer is a pacer scheduling db's compactions, its granter not
// started (the test grants), and a count of its pauses.
func testPacer(db pebble.DBForCompaction) (*pacer, *health, *int) {
	h := newHealth(slog.New(slog.DiscardHandler), time.Second)
	p := newPacer(h)
	p.db = db
	pauses := new(int)
	p.pause = func(time.Duration) { *pauses++ }
	return p, h, pauses
}

// Pebble asks the scheduler to run a compaction (TrySchedule) whenever a
// flush or compaction ends, and when refused remembers it as waiting and
// asks no more: the scheduler must come back for it. A TrySchedule made
// while the pacer looked for a waiting compaction (on a compaction's end,
// a flush's, or its tick) was refused, a slot free, as if the look had
// already started one; the compaction then waited for the next tick. As
// Pebble's own scheduler, the pacer refuses only for want of a slot.
func TestPacerGrantsWhileLooking(t *testing.T) {
	db := &fakeCompactionDB{allowed: 1}
	p, _, _ := testPacer(db)
	var granted bool
	db.onLook = func() { granted, _ = p.TrySchedule() }
	if p.grantOne() {
		t.Error("the pacer started a compaction while none waited")
	}
	if !granted {
		t.Error("a compaction asked for while the pacer looked for a waiting one was refused, no compaction running")
	}
	if ok, _ := p.TrySchedule(); ok {
		t.Error("a second compaction granted while the one slot is taken")
	}
}

// The granter starts waiting compactions while there are slots, and no
// more.
func TestPacerGrantsWaitingUpToAllowed(t *testing.T) {
	db := &fakeCompactionDB{allowed: 2, waiting: 5}
	p, _, _ := testPacer(db)
	for p.grantOne() {
	}
	if db.scheduled != 2 {
		t.Fatalf("started %d of 5 waiting compactions with 2 slots, want 2", db.scheduled)
	}
	if ok, _ := p.TrySchedule(); ok {
		t.Error("a compaction granted with both slots taken")
	}
}

// A compaction that failed on a damaged table holds its place a while;
// one that ran meanwhile, or began after, and worked, does not: it held
// its slot a second too, and with the damaged one retried every second,
// healthy compactions ran at most one a second. Nor does a failure on a
// damaged table that was no compaction's (Pebble's loading of a table's
// statistics reports one for each flush or compaction that follows).
func TestPacerPausesOnlyTheDamagedCompaction(t *testing.T) {
	db := &fakeCompactionDB{allowed: 2}
	p, h, pauses := testPacer(db)
	l := h.listener()
	damage := fmt.Errorf("pebble: file 000005: block 8106/447: crc32c checksum mismatch: %w", pebble.ErrCorruption)

	_, healthy := p.TrySchedule()
	_, damaged := p.TrySchedule()
	// Pebble's order for a compaction that failed: its end, the
	// background error, then Done.
	l.CompactionEnd(pebble.CompactionInfo{Done: true, Err: damage})
	l.BackgroundError(damage)
	damaged.Done()
	if *pauses != 1 {
		t.Fatalf("the damaged compaction paused %d times, want once", *pauses)
	}
	l.CompactionEnd(pebble.CompactionInfo{Done: true})
	healthy.Done()
	if *pauses != 1 {
		t.Errorf("a compaction that worked, running while one failed on damage, paused (%d pauses in all, want 1)", *pauses)
	}

	_, next := p.TrySchedule()
	l.BackgroundError(damage) // no compaction's
	l.CompactionEnd(pebble.CompactionInfo{Done: true})
	next.Done()
	if *pauses != 1 {
		t.Errorf("a compaction that worked paused after a failure that was no compaction's (%d pauses in all, want 1)", *pauses)
	}

	_, again := p.TrySchedule()
	l.CompactionEnd(pebble.CompactionInfo{Done: true, Err: damage})
	l.BackgroundError(damage)
	again.Done()
	if *pauses != 2 {
		t.Errorf("the damaged compaction tried again paused %d times in all, want 2", *pauses)
	}
}

// optionsFaultFS fails to create the temporary file Pebble writes its
// OPTIONS to, which it does once registered with the scheduler, while
// armed is set.
type optionsFaultFS struct {
	vfs.FS
	armed *atomic.Bool
}

func (fs optionsFaultFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	if fs.armed.Load() && strings.HasSuffix(name, ".dbtmp") {
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EACCES}
	}
	return fs.FS.Create(name, c)
}

// granters counts the pacers' granter goroutines.
func granters() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "pebblestore.(*pacer).granter(")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// An opening Pebble fails once registered with the pacer (here: writing
// its OPTIONS) never unregisters it: the pacer's granter ran on, every
// 100 ms for good, asking the half-opened log for compactions to start.
// A failed opening stops it.
func TestFailedOpenStopsThePacer(t *testing.T) {
	dir := t.TempDir()
	armed := &atomic.Bool{}
	opts := Options{FS: optionsFaultFS{FS: vfs.Default, armed: armed}, Logger: slog.New(slog.DiscardHandler)}
	s, err := Open(t.Context(), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	before := granters()
	armed.Store(true)
	if s, err := Open(t.Context(), dir, opts); err == nil {
		s.Close()
		t.Fatal("opened while Pebble cannot write its OPTIONS")
	}
	deadline := time.Now().Add(30 * time.Second)
	for granters() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := granters(); n > before {
		t.Errorf("%d pacer granters after a failed opening, %d before", n, before)
	}
}

// A log whose format check fails once Pebble opened it is closed, which
// unregisters the pacer, and then the failed opening unregisters it
// again; an opening that failed before Pebble registered it unregisters
// it without Register. Neither panics nor waits, and nothing is granted
// after.
func TestPacerUnregisterTwice(t *testing.T) {
	p, _, _ := testPacer(nil)
	p.Unregister()
	p.Unregister()

	db := &fakeCompactionDB{allowed: 1}
	h := newHealth(slog.New(slog.DiscardHandler), time.Second)
	p = newPacer(h)
	p.Register(2, db)
	p.Unregister()
	p.Unregister()
	if ok, _ := p.TrySchedule(); ok {
		t.Error("a compaction granted after Unregister")
	}
}

// With the pacer scheduling them, compactions keep up with a burst of
// flushes: once the burst is over, level 0 goes back below the sublevels
// that make Pebble compact it. (Pebble, refused a compaction, asks for it
// no more: a pacer that did not come back for it would leave level 0
// growing with every flush.)
func TestPacerKeepsLevelZeroDown(t *testing.T) {
	s, err := Open(t.Context(), t.TempDir(), Options{Durability: DurabilityRelaxed, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	// stalled is set when Pebble holds the burst's writes for good: the
	// store cannot be closed then.
	stalled := false
	defer func() {
		if !stalled {
			s.Close()
		}
	}()
	e, err := engine.New(engine.Config{Store: s})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if !stalled {
			e.Close()
		}
	}()
	ref := engine.QueueRef{Account: "000000000000", Name: "burst"}
	if _, err := e.CreateQueue(t.Context(), engine.CreateQueueParams{Account: ref.Account, Name: ref.Name}); err != nil {
		t.Fatal(err)
	}
	body := strings.Repeat("l", 8<<10)
	entries := make([]engine.SendParams, 10)
	for i := range entries {
		entries[i] = engine.SendParams{ID: strconv.Itoa(i), Body: body}
	}
	var maxSub atomic.Int32
	burst := make(chan error, 1)
	go func() {
		for range 60 {
			for range 3 {
				if _, _, err := e.SendMessageBatch(context.Background(), ref, entries); err != nil {
					burst <- err
					return
				}
			}
			if _, err := s.db.AsyncFlush(); err != nil {
				burst <- err
				return
			}
			maxSub.Store(max(maxSub.Load(), s.db.Metrics().Levels[0].Sublevels))
		}
		burst <- nil
	}()
	select {
	case err := <-burst:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute):
		stalled = true
		m := s.db.Metrics()
		t.Fatalf("the burst's writes held for good: level 0 has %d sublevels (%d tables); %d compactions, %d running",
			m.Levels[0].Sublevels, m.Levels[0].TablesCount, m.Compact.Count, m.Compact.NumInProgress)
	}
	o := logOptions(Options{})
	o.EnsureDefaults()
	threshold := int32(o.L0CompactionThreshold)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		m := s.db.Metrics()
		if m.Levels[0].Sublevels < threshold && m.Compact.NumInProgress == 0 {
			t.Logf("level 0: %d sublevels at most during the burst, %d after; %d compactions", maxSub.Load(), m.Levels[0].Sublevels, m.Compact.Count)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("level 0 still has %d sublevels (%d tables), Pebble compacts it from %d; %d compactions, %d running",
				m.Levels[0].Sublevels, m.Levels[0].TablesCount, threshold, m.Compact.Count, m.Compact.NumInProgress)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
