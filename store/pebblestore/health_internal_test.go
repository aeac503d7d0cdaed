package pebblestore

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/internal/testutil/logbuf"
	"github.com/baton-sqs/baton/internal/testutil/poll"
)

// lines counts the lines written to b.
func lines(b *logbuf.Buffer) int { return strings.Count(b.String(), "\n") }

func bufferLogger() (*slog.Logger, *logbuf.Buffer) {
	b := &logbuf.Buffer{}
	return slog.New(slog.NewTextHandler(b, nil)), b
}

// Background writes failing in a loop, as Pebble retries a flush on a full
// disk: one line when they begin, one a minute with the count, one when
// they work again; each failure waits longer, up to backoffMax; Ping
// names the problem meanwhile.
func TestBackgroundFailuresLoggedOnce(t *testing.T) {
	log, buf := bufferLogger()
	h := newHealth(log, time.Second)
	fake := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	h.clock = fake
	full := fmt.Errorf("write 000123.sst: %w", syscall.ENOSPC)
	var last time.Duration
	for i := range 1000 {
		h.backgroundFailed(full)
		if d := h.backoff(); d < last || d > backoffMax {
			t.Fatalf("failure %d: backoff %v after %v, want growing up to %v", i, d, last, backoffMax)
		} else {
			last = d
		}
		fake.Advance(150 * time.Millisecond) // 150 s in all
	}
	if last != backoffMax {
		t.Errorf("backoff after 1000 failures = %v, want %v", last, backoffMax)
	}
	if got := h.bgFailures.Load(); got != 1000 {
		t.Errorf("bgFailures = %d, want 1000", got)
	}
	// The first, and one at 60 s and 120 s.
	if n := lines(buf); n != 3 {
		t.Errorf("%d lines for 1000 failures over 150 s, want 3:\n%s", n, buf)
	}
	if !strings.Contains(buf.String(), `problem="disk full"`) || !strings.Contains(buf.String(), "failures=400") {
		t.Errorf("the lines do not name the problem and count the failures:\n%s", buf)
	}
	if p := joinProblems(h.problems(time.Second)); !strings.Contains(p, "disk full: background writes failing for 2m30s (1000 failures)") {
		t.Errorf("problems = %q, want the failing writes named", p)
	}
	h.backgroundSucceeded()
	if n := lines(buf); n != 4 || !strings.Contains(buf.String(), "background writes work again") {
		t.Errorf("no line saying they work again:\n%s", buf)
	}
	if p := h.problems(time.Second); len(p) != 0 {
		t.Errorf("problems after a success = %q, want none", p)
	}
	if d := h.backoff(); d != backoffMin {
		t.Errorf("backoff after a success = %v, want %v", d, backoffMin)
	}
}

// usageFS reports the free space a test sets.
type usageFS struct {
	vfs.FS
	mu   sync.Mutex
	free uint64
}

func (fs *usageFS) set(free uint64) {
	fs.mu.Lock()
	fs.free = free
	fs.mu.Unlock()
}

func (fs *usageFS) GetDiskUsage(string) (vfs.DiskUsage, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return vfs.DiskUsage{AvailBytes: fs.free, TotalBytes: 1 << 40}, nil
}

// Below diskHeadroom free, changes are refused with ErrUnavailable, and
// taken again once there is room; each turn is logged once.
func TestSpaceRefusal(t *testing.T) {
	log, buf := bufferLogger()
	h := newHealth(log, time.Second)
	fake := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	h.clock = fake
	fs := &usageFS{FS: vfs.NewMem(), free: 1 << 30}
	h.fs, h.dir = fs, "/data"
	if err := h.spaceRefusal(); err != nil {
		t.Fatalf("with 1 GiB free: %v", err)
	}
	fs.set(diskHeadroom - 1)
	if err := h.spaceRefusal(); err != nil {
		t.Fatalf("looked again before spaceEvery: %v", err)
	}
	fake.Advance(spaceEvery)
	for range 3 {
		err := h.spaceRefusal()
		if !errors.Is(err, baton.ErrUnavailable) || !strings.Contains(err.Error(), "disk full") {
			t.Fatalf("below the headroom: %v, want ErrUnavailable naming the full disk", err)
		}
	}
	if p := joinProblems(h.problems(time.Second)); !strings.Contains(p, "disk full") {
		t.Errorf("problems = %q", p)
	}
	fs.set(1 << 30)
	fake.Advance(spaceEvery)
	if err := h.spaceRefusal(); err != nil {
		t.Fatalf("with room again: %v", err)
	}
	if n := lines(buf); n != 2 || !strings.Contains(buf.String(), "refusing calls") || !strings.Contains(buf.String(), "room again") {
		t.Errorf("want one line when the disk fills and one when it has room:\n%s", buf)
	}
}

// stallFS is a file system whose Sync waits while stalled.
type stallFS struct {
	vfs.FS
	gate *sync.RWMutex // write-locked while stalled
}

func (fs stallFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, c)
	if err != nil {
		return nil, err
	}
	return stallFile{f, fs.gate}, nil
}

type stallFile struct {
	vfs.File
	gate *sync.RWMutex
}

func (f stallFile) Sync() error {
	f.gate.RLock()
	defer f.gate.RUnlock()
	return f.File.Sync()
}

// A stalled fsync is reported while it lasts (Pebble's disk-health checks
// look every 2 s) and logged when it ends, and counted.
func TestStalledSyncReported(t *testing.T) {
	log, buf := bufferLogger()
	h := newHealth(log, 100*time.Millisecond)
	gate := &sync.RWMutex{}
	fs, checks := watchDisk(stallFS{FS: vfs.NewMem(), gate: gate}, h)
	defer checks.Close()
	f, err := fs.Create("000001.log", walCategory)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("record")); err != nil {
		t.Fatal(err)
	}
	gate.Lock()
	synced := make(chan error, 1)
	go func() { synced <- f.Sync() }()
	poll.For(t, 20*time.Second, func() error {
		if p := joinProblems(h.problems(time.Hour)); !strings.Contains(p, "disk slow: sync on 000001.log") {
			return fmt.Errorf("problems = %q", p)
		}
		// The line follows the report, outside health's lock.
		if !strings.Contains(buf.String(), "a disk operation is slow, still waiting") {
			return fmt.Errorf("no line while the sync waits:\n%s", buf)
		}
		return nil
	})
	gate.Unlock()
	if err := <-synced; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "a slow disk operation ended") {
		t.Errorf("no line when the sync ended:\n%s", buf)
	}
	if p := h.problems(time.Hour); len(p) != 0 {
		t.Errorf("problems after the sync = %q, want none", p)
	}
	if n := h.slowOps.Load(); n != 1 {
		t.Errorf("slowOps = %d, want 1", n)
	}
}

// A write of the log that failed, which the store holds for good, is no
// slow disk: nothing says "a disk operation is slow" or counts it so.
// Before, five seconds after each such failure (a file size limit, a
// file system gone read-only) the log said `a disk operation is slow,
// still waiting` and baton_store_slow_disk_operations_total counted it.
func TestFailedLogWriteNotSlow(t *testing.T) {
	log, buf := bufferLogger()
	h := newHealth(log, 100*time.Millisecond)
	var armed atomic.Bool
	fs, checks := watchDisk(failSyncFS{FS: vfs.NewMem(), armed: &armed}, h)
	defer checks.Close()
	f, err := fs.Create("000001.log", walCategory)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("record")); err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	go f.Sync() // fails, and is held for good
	poll.For(t, 20*time.Second, func() error {
		if h.wal.refusal() == nil {
			return errors.New("the failed sync is not refused yet")
		}
		return nil
	})
	// Pebble's disk-health checks look every 2 s: give them three looks.
	time.Sleep(3 * diskHealthLook)
	if strings.Contains(buf.String(), "slow") || h.slowOps.Load() != 0 {
		t.Errorf("a failed write held for good was taken for a slow disk (slowOps %d):\n%s", h.slowOps.Load(), buf)
	}
}

// diskHealthLook is how often Pebble's disk-health checks look.
const diskHealthLook = 2 * time.Second

// failSyncFS fails every sync of its files once armed.
type failSyncFS struct {
	vfs.FS
	armed *atomic.Bool
}

func (fs failSyncFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, c)
	return failSyncFile{File: f, armed: fs.armed}, err
}

type failSyncFile struct {
	vfs.File
	armed *atomic.Bool
}

func (f failSyncFile) Sync() error {
	if f.armed.Load() {
		return syscall.EIO
	}
	return f.File.Sync()
}

// A commit the disk does not take: the call waiting for it fails with
// ErrUnavailable after the write timeout, later changes are refused at
// once, before they change anything, reads are answered, Ping says why;
// once the commit goes through, changes are taken again and nothing
// acknowledged is lost.
func TestStuckCommit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// The store's one write timeout also bounds its Close at the end,
	// which flushes and syncs: 300 ms was too little for that with the
	// machine's cores and disk busy (a full CI run beside other work).
	const timeout = 2 * time.Second
	s, err := Open(t.Context(), dir, Options{WriteTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	q := &baton.Queue{ID: 1, Region: "us-east-1", Account: "000000000000", Name: "orders", Attributes: baton.DefaultQueueAttributes(), CreatedAt: base, ModifiedAt: base}
	if err := s.QueueCreate(t.Context(), baton.QueueCreateParams{Queue: q}); err != nil {
		t.Fatal(err)
	}
	send := func(id string) error {
		_, err := s.MessageSend(t.Context(), baton.MessageSendParams{QueueID: q.ID, Messages: []*baton.Message{{ID: id, Body: id, SentAt: base, VisibleAt: base}}})
		return err
	}
	if err := send("before"); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	held, _ := HoldCommits(s, release)
	start := time.Now()
	if err := send("waited"); !errors.Is(err, baton.ErrUnavailable) {
		t.Fatalf("send while the commit is stuck: %v, want ErrUnavailable", err)
	}
	<-held
	if took := time.Since(start); took < timeout {
		t.Errorf("answered after %v, before the write timeout (%v)", took, timeout)
	}
	// The refusal begins once the round has waited the timeout, a moment
	// after the call that queued it.
	poll.For(t, 10*time.Second, func() error {
		if s.w.refusal() == nil {
			return errors.New("no refusal yet")
		}
		return nil
	})
	start = time.Now()
	if err := send("refused"); !errors.Is(err, baton.ErrUnavailable) || !strings.Contains(err.Error(), "writes refused") {
		t.Fatalf("send once the commit has waited the timeout: %v, want refused", err)
	}
	if took := time.Since(start); took >= timeout {
		t.Errorf("refusal took %v, want at once", took)
	}
	if _, err := s.QueueGet(t.Context(), q.Region, q.Account, q.Name); err != nil {
		t.Errorf("QueueGet while the commit is stuck: %v", err)
	}
	if _, err := s.MessageStats(t.Context(), baton.MessageStatsParams{QueueID: q.ID, Now: base}); err != nil {
		t.Errorf("MessageStats while the commit is stuck: %v", err)
	}
	if err := s.Ping(t.Context()); err == nil || !strings.Contains(err.Error(), "writes refused") {
		t.Errorf("Ping while the commit is stuck: %v", err)
	}
	if got := s.Stats().Unavailable; got != 2 {
		t.Errorf("Stats().Unavailable = %d, want 2", got)
	}

	s.w.beforeCommit.Store(nil)
	close(release)
	poll.For(t, 10*time.Second, func() error { return s.writable() })
	if err := send("after"); err != nil {
		t.Fatalf("send once the commit went through: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(t.Context(), dir, Options{}); err != nil {
		t.Fatal(err)
	}
	got, err := s.MessageReceive(t.Context(), baton.MessageReceiveParams{QueueID: q.ID, Now: base, Max: 10, VisibleAt: base.Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, m := range got {
		ids[m.ID] = true
	}
	// The send that waited may still have happened; the refused one did
	// not.
	if !ids["before"] || !ids["after"] || ids["refused"] {
		t.Errorf("after reopening: %v, want before and after, not refused", ids)
	}
}

// Close while the disk does not take the last commit returns, with an
// error, within the write timeout.
func TestCloseStuck(t *testing.T) {
	t.Parallel()
	const timeout = 300 * time.Millisecond
	s, err := Open(t.Context(), t.TempDir(), Options{WriteTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	defer close(release)
	held, _ := HoldCommits(s, release)
	s.w.enqueue([]change{&moveTaskPut{t: baton.MoveTask{Handle: "h"}}}, nil)
	<-held
	start := time.Now()
	if err := s.Close(); !errors.Is(err, errStuck) {
		t.Errorf("Close: %v, want errStuck", err)
	}
	if took := time.Since(start); took > 10*timeout {
		t.Errorf("Close took %v", took)
	}
}

// While a queue's creation waits for a commit the disk does not take,
// reads of other queues are answered at once; reads that could see the
// new queue wait for its commit, and fail with ErrUnavailable.
func TestReadsBesideStuckQueueChange(t *testing.T) {
	t.Parallel()
	const timeout = 300 * time.Millisecond
	s, err := Open(t.Context(), t.TempDir(), Options{WriteTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	defer func() {
		s.w.beforeCommit.Store(nil)
		close(release)
		s.Close()
	}()
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	queue := func(id uint64, name string) *baton.Queue {
		return &baton.Queue{ID: id, Region: "us-east-1", Account: "000000000000", Name: name, Attributes: baton.DefaultQueueAttributes(), CreatedAt: base, ModifiedAt: base}
	}
	if err := s.QueueCreate(t.Context(), baton.QueueCreateParams{Queue: queue(1, "orders")}); err != nil {
		t.Fatal(err)
	}
	HoldCommits(s, release)
	if err := s.QueueCreate(t.Context(), baton.QueueCreateParams{Queue: queue(2, "invoices")}); !errors.Is(err, baton.ErrUnavailable) {
		t.Fatalf("create while the commit is stuck: %v, want ErrUnavailable", err)
	}
	start := time.Now()
	if _, err := s.QueueGet(t.Context(), "us-east-1", "000000000000", "orders"); err != nil {
		t.Errorf("QueueGet of a committed queue: %v", err)
	}
	if qs, err := s.QueueList(t.Context(), baton.QueueListParams{Prefix: "ord"}); err != nil || len(qs) != 1 {
		t.Errorf("QueueList of committed queues: %v, %v", qs, err)
	}
	if took := time.Since(start); took >= timeout {
		t.Errorf("reads of committed queues took %v, want at once", took)
	}
	if _, err := s.QueueGet(t.Context(), "us-east-1", "000000000000", "invoices"); !errors.Is(err, baton.ErrUnavailable) {
		t.Errorf("QueueGet of the queue whose creation is not committed: %v, want ErrUnavailable", err)
	}
	if _, err := s.QueueList(t.Context(), baton.QueueListParams{}); !errors.Is(err, baton.ErrUnavailable) {
		t.Errorf("QueueList that could list it: %v, want ErrUnavailable", err)
	}
}

// A background failure is named for its cause: a damaged table that every
// compaction trips over is not a full disk.
func TestDiskProblemNames(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("write 000019.sst: %w", syscall.ENOSPC), "disk full"},
		{fmt.Errorf("open: %w", syscall.EMFILE), "out of file descriptors"},
		{fmt.Errorf("pebble: file 000005: block 8106/447: crc32c checksum mismatch: %w", pebble.ErrCorruption), "log damaged (run `baton store check`)"},
		{fmt.Errorf("open 000004.log: %w", syscall.EACCES), "permission denied (the data directory's owner, mode or attributes changed?)"},
		{fmt.Errorf("write 000040.log: %w", syscall.EFBIG), "file too large: the process's file size limit (ulimit -f, LimitFSIZE=) is reached"},
		{errors.New("something else"), "disk write failed"},
	} {
		if got := diskProblem(c.err); got != c.want {
			t.Errorf("diskProblem(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

// A write of the log that fails for the process's file size limit
// (EFBIG) is refused naming the limit, not the disk. Before, the refusal
// said "Check the disk (its kernel log)", and the log line
// problem="disk write failed", where the kernel log holds nothing.
func TestFileSizeLimitNamed(t *testing.T) {
	t.Parallel()
	log, buf := bufferLogger()
	h := newHealth(log, time.Second)
	h.wal.failed("000040.log", "write", &os.PathError{Op: "write", Path: "000040.log", Err: syscall.EFBIG})
	err := h.wal.refusal()
	if err == nil || !strings.Contains(err.Error(), "file size limit") || strings.Contains(err.Error(), "Check the disk") {
		t.Errorf("refusal after a write failed with EFBIG: %v, want the file size limit named, not the disk", err)
	}
	if !strings.Contains(buf.String(), "file size limit") {
		t.Errorf("log after a write failed with EFBIG, want the file size limit named:\n%s", buf)
	}
}

// A disk full with bytes to spare is out of inodes: the failing writes
// say so, where "disk full" alone contradicted df -h. Before, an ext4
// image with no inode left and 205 MiB free answered `disk full:
// background writes failing … no space left on device`, nothing more.
func TestOutOfInodesNamed(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		free   int64
		inodes bool
	}{{200 << 20, true}, {1 << 20, false}} {
		log, buf := bufferLogger()
		h := newHealth(log, time.Second)
		h.free.Store(c.free)
		h.backgroundFailed(fmt.Errorf("open 000103.sst: %w", syscall.ENOSPC))
		p := joinProblems(h.problems(time.Hour))
		if got := strings.Contains(p, "out of inodes"); got != c.inodes || !strings.Contains(p, "disk full") {
			t.Errorf("%d bytes free: problems %q, want disk full, out of inodes named: %v", c.free, p, c.inodes)
		}
		if got := strings.Contains(buf.String(), "out of inodes"); got != c.inodes {
			t.Errorf("%d bytes free: log, want out of inodes named: %v:\n%s", c.free, c.inodes, buf)
		}
	}
}

// flakyOpenFS fails to create files of the write-ahead log with EMFILE
// while out is set.
type flakyOpenFS struct {
	vfs.FS
	out *atomic.Bool
}

func (fs flakyOpenFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	if fs.out.Load() && c == walCategory {
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EMFILE}
	}
	return fs.FS.Create(name, c)
}

// ReuseForWrite fails as Create does: Pebble reuses an obsolete
// write-ahead log file for its next one when it has one.
func (fs flakyOpenFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	if fs.out.Load() && c == walCategory {
		return nil, &os.PathError{Op: "open", Path: newname, Err: syscall.EMFILE}
	}
	return fs.FS.ReuseForWrite(oldname, newname, c)
}

// Opening the next write-ahead log file without a file descriptor to
// spare waits (Pebble would stop the process on the error) until one is
// free, and Ping names the problem meanwhile; one line when the wait
// begins, one when it ends.
func TestLogFileWaitsForFileDescriptors(t *testing.T) {
	log, buf := bufferLogger()
	h := newHealth(log, time.Minute)
	out := &atomic.Bool{}
	out.Store(true)
	fs, checks := watchDisk(flakyOpenFS{FS: vfs.NewMem(), out: out}, h)
	defer checks.Close()
	opened := make(chan error, 1)
	go func() {
		f, err := fs.Create("000002.log", walCategory)
		if err == nil {
			err = f.Close()
		}
		opened <- err
	}()
	poll.For(t, 20*time.Second, func() error {
		p := joinProblems(h.problems(time.Hour))
		if !strings.Contains(p, "out of file descriptors: the next write-ahead log file cannot be opened") {
			return fmt.Errorf("problems = %q", p)
		}
		return nil
	})
	select {
	case err := <-opened:
		t.Fatalf("the open returned while no descriptor was free: %v", err)
	case <-time.After(3 * backoffMax):
	}
	out.Store(false)
	select {
	case err := <-opened:
		if err != nil {
			t.Fatalf("open once a descriptor is free: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the open still waits 20 s after a descriptor was free")
	}
	if p := h.problems(time.Hour); len(p) != 0 {
		t.Errorf("problems once open = %q, want none", p)
	}
	if n := lines(buf); n != 2 || !strings.Contains(buf.String(), "commits go on") {
		t.Errorf("want one line when the wait began and one when it ended:\n%s", buf)
	}
	// Another error fails the log for good, as Pebble cannot go on from
	// it: the create never returns, and changes are refused.
	go fs.Create("x/000003.log", walCategory)
	deadline := time.Now().Add(20 * time.Second)
	for h.wal.refusal() == nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := h.wal.refusal(); err == nil || !strings.Contains(err.Error(), "000003.log") {
		t.Errorf("a create in a missing directory: refusal %v, want one naming it", err)
	}
}

// fullFS fails every create with ENOSPC while full is set.
type fullFS struct {
	vfs.FS
	full *atomic.Bool
}

func (fs fullFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	if fs.full.Load() {
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.ENOSPC}
	}
	return fs.FS.Create(name, c)
}

// A run of failed background writes that nothing retries (a compaction
// Pebble set aside) is not named for ever: once none has failed for
// staleAfter the disk is tested, and the run goes on while the test write
// fails, and ends when it works, with a line saying so.
func TestStaleFailuresProbed(t *testing.T) {
	log, buf := bufferLogger()
	h := newHealth(log, time.Minute)
	fake := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	h.clock = fake
	full := &atomic.Bool{}
	full.Store(true)
	h.fs, h.dir = fullFS{FS: vfs.NewMem(), full: full}, ""
	h.backgroundFailed(fmt.Errorf("compaction: write 000042.sst: %w", syscall.ENOSPC))

	fake.Advance(staleAfter - time.Second)
	h.probeIfStale()
	if n := h.bgFailures.Load(); n != 1 {
		t.Fatalf("probed %v after the last failure: %d failures, want 1", staleAfter-time.Second, n)
	}
	fake.Advance(time.Second)
	h.probeIfStale()
	if n := h.bgFailures.Load(); n != 2 {
		t.Fatalf("the probe on a full disk: %d failures, want 2", n)
	}
	if p := joinProblems(h.problems(time.Hour)); !strings.Contains(p, "a test write beside the log") {
		t.Errorf("problems = %q, want the failed test write named", p)
	}
	fake.Advance(time.Second)
	h.probeIfStale() // the failed probe is the last failure now
	if n := h.bgFailures.Load(); n != 2 {
		t.Fatalf("probed again 1 s after a failed probe: %d failures", n)
	}

	full.Store(false)
	fake.Advance(staleAfter)
	h.probeIfStale()
	if p := h.problems(time.Hour); len(p) != 0 {
		t.Errorf("problems after a test write worked = %q, want none", p)
	}
	if !strings.Contains(buf.String(), "the disk takes writes again") {
		t.Errorf("no line saying the disk takes writes again:\n%s", buf)
	}
	if names, _ := h.fs.List(""); len(names) != 0 {
		t.Errorf("the probe left %v", names)
	}
}

// A log whose next write-ahead log file cannot be opened (no file
// descriptor to spare) when the server stops: Close gives up within the
// write timeout, saying so, rather than wait for the disk for ever.
func TestCloseWhileLogFileWaits(t *testing.T) {
	t.Parallel()
	const timeout = 300 * time.Millisecond
	out := &atomic.Bool{}
	// In memory, and never given a descriptor back: the store is left
	// open and waiting, and must not meet its files removed after the test
	// (Pebble stops the process when its new log file is missing).
	s, err := Open(t.Context(), "/data", Options{FS: flakyOpenFS{FS: vfs.NewMem(), out: out}, WriteTimeout: timeout, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	out.Store(true)
	go s.db.AsyncFlush() // rotates the write-ahead log, and waits for its next file
	poll.For(t, 20*time.Second, func() error {
		if p := joinProblems(s.health.problems(time.Hour)); !strings.Contains(p, "cannot be opened") {
			return fmt.Errorf("problems = %q", p)
		}
		return nil
	})
	start := time.Now()
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		if !errors.Is(err, errCloseStuck) {
			t.Errorf("Close: %v, want errCloseStuck", err)
		}
		t.Logf("Close gave up after %v: %v", time.Since(start).Round(time.Millisecond), err)
	case <-time.After(30 * time.Second):
		t.Fatal("Close still waits 30 s after it began")
	}
}

// A failure on a damaged table is logged as what it was: Pebble's loading
// of a table's statistics (a background error with no compaction's end
// before it), or a compaction (its end, then the same error again as a
// background error), each once, and each counted once. Before, the first
// of either was logged as "background work (a compaction, or Pebble's
// reading of a table's statistics)", and the other never.
func TestDamageLoggedByItsCause(t *testing.T) {
	log, buf := bufferLogger()
	h := newHealth(log, time.Second)
	l := h.listener()
	stats := fmt.Errorf("pebble: file 000005: block 812/40: crc32c checksum mismatch: %w", pebble.ErrCorruption)
	for range 3 {
		l.BackgroundError(stats)
	}
	const statsLine, compactionLine = "Pebble's loading of a table's statistics failed on a damaged table", "a compaction failed on a damaged table"
	if n := strings.Count(buf.String(), statsLine); n != 1 || strings.Contains(buf.String(), compactionLine) {
		t.Errorf("three failed loadings of statistics logged %d lines saying so, want 1 (and no compaction):\n%s", n, buf.String())
	}
	for range 3 {
		compaction := fmt.Errorf("pebble: file 000005: block 8106/447: crc32c checksum mismatch: %w", pebble.ErrCorruption)
		l.CompactionEnd(pebble.CompactionInfo{Done: true, Err: compaction})
		l.BackgroundError(compaction)
	}
	if n := strings.Count(buf.String(), compactionLine); n != 1 {
		t.Errorf("three failed compactions logged %d lines saying so, want 1:\n%s", n, buf.String())
	}
	if n := strings.Count(buf.String(), statsLine); n != 1 {
		t.Errorf("after the failed compactions, %d lines say a loading of statistics failed, want still 1:\n%s", n, buf.String())
	}
	if n, d, c := h.bgFailures.Load(), h.damagedFailures.Load(), h.unreadCompactions.Load(); n != 6 || d != 6 || c != 3 {
		t.Errorf("counted %d background failures, %d on damage, %d failed compactions; want 6, 6, 3", n, d, c)
	}
	if strings.Contains(buf.String(), "background write") {
		t.Errorf("damage logged as a failing write:\n%s", buf.String())
	}
}
