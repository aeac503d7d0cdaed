package pebblestore

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/testutil/poll"
)

// compactionFaultFS fails to create the next table a compaction writes
// once armed, and counts the failures.
type compactionFaultFS struct {
	vfs.FS
	armed  *atomic.Bool
	faults *atomic.Int64
}

func (fs compactionFaultFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	if c == "pebble-compaction" && fs.armed.CompareAndSwap(true, false) {
		fs.faults.Add(1)
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.EIO}
	}
	return fs.FS.Create(name, c)
}

// slowCompactionFS makes each write of a table a compaction writes take
// a while once armed, as a slow disk under a large compaction does.
type slowCompactionFS struct {
	vfs.FS
	armed *atomic.Bool
}

func (fs slowCompactionFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, c)
	if err != nil || c != "pebble-compaction" || !fs.armed.Load() {
		return f, err
	}
	return slowFile{File: f}, nil
}

type slowFile struct{ vfs.File }

func (f slowFile) Write(p []byte) (int, error) {
	time.Sleep(time.Second)
	return f.File.Write(p)
}

// twoLevels writes a table below and one in level 0 over it that nothing
// compacts but the idle compaction: both hold the queue's record.
func twoLevels(t *testing.T, s *Store) {
	t.Helper()
	q := &baton.Queue{ID: 1, Region: "us-east-1", Account: "000000000000", Name: "idle"}
	if err := s.QueueCreate(t.Context(), baton.QueueCreateParams{Queue: q}); err != nil {
		t.Fatal(err)
	}
	write := func(id string) {
		t.Helper()
		m := &baton.Message{ID: id, Body: "body"}
		if _, err := s.MessageSend(t.Context(), baton.MessageSendParams{QueueID: q.ID, Messages: []*baton.Message{m}}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.QueueUpdate(t.Context(), baton.QueueUpdateParams{Region: q.Region, Account: q.Account, Name: q.Name,
			TagsSet: map[string]string{"last": id}}); err != nil {
			t.Fatal(err)
		}
		if err := s.db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	write("a")
	if err := s.db.Compact(t.Context(), []byte{0}, []byte{0xff}, false); err != nil {
		t.Fatal(err)
	}
	write("b")
	poll.For(t, 20*time.Second, func() error {
		if m := s.db.Metrics(); m.Compact.NumInProgress != 0 || m.Levels[0].TablesCount != 1 {
			return fmt.Errorf("%d compactions running, %d tables in level 0; want none, and 1", m.Compact.NumInProgress, m.Levels[0].TablesCount)
		}
		return nil
	})
}

// An idle compaction that does not end within its time (a slow disk, a
// large log) is no failed write: nothing failed, and Pebble finishes the
// compaction it began. It is logged as what it is, and /healthz stays 200
// (before, it counted a failed background write, logged "a background
// write failed; it is tried again", and /healthz answered 503 "disk write
// failed: background writes failing" until the next flush).
func TestIdleCompactionOutOfTimeIsNoFailure(t *testing.T) {
	t.Parallel()
	armed := &atomic.Bool{}
	log, buf := bufferLogger()
	s, err := Open(t.Context(), "/data", Options{FS: slowCompactionFS{FS: vfs.NewMem(), armed: armed}, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	twoLevels(t, s)
	armed.Store(true)
	s.compactIdleWithin(t.Context(), 50*time.Millisecond)
	if err := s.Ping(t.Context()); err != nil {
		t.Errorf("Ping after an idle compaction out of time: %v, want nil", err)
	}
	if n := s.health.bgFailures.Load(); n != 0 {
		t.Errorf("an idle compaction out of time counted %d failed background writes, want 0", n)
	}
	if strings.Contains(buf.String(), "background write failed") || !strings.Contains(buf.String(), "the idle compaction did not end within") {
		t.Errorf("an idle compaction out of time is not logged as that:\n%s", buf.String())
	}
}

// An idle compaction that fails is one failed background write: Pebble
// reports it, as any compaction's. The idle compaction used to report it
// again, and the counters counted two.
func TestIdleCompactionFailureCountedOnce(t *testing.T) {
	t.Parallel()
	armed, faults := &atomic.Bool{}, &atomic.Int64{}
	s, err := Open(t.Context(), "/data", Options{FS: compactionFaultFS{FS: vfs.NewMem(), armed: armed, faults: faults}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	twoLevels(t, s)
	armed.Store(true)
	s.compactIdle(t.Context())
	if armed.Load() || faults.Load() != 1 {
		t.Fatalf("the idle compaction wrote no table (%d failed)", faults.Load())
	}
	// Pebble hands the manual compaction its error holding its lock, and
	// reports the failure before it lets go: once the lock is had again,
	// it has.
	s.db.Metrics()
	if n := s.health.bgFailures.Load(); n != 1 {
		t.Errorf("one failed idle compaction counted %d failed background writes, want 1", n)
	}
}
