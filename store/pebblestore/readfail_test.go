package pebblestore_test

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/testutil/logbuf"
	"github.com/baton-sqs/baton/store/pebblestore"
	"github.com/baton-sqs/baton/store/storetest"
)

// failingReadFS fails every read of a table with EIO while armed, as a
// disk with a bad sector under it does.
type failingReadFS struct {
	vfs.FS
	armed *atomic.Bool
}

func (fs failingReadFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.Open(name, opts...)
	if err != nil || !strings.HasSuffix(name, ".sst") {
		return f, err
	}
	return failingReadFile{File: f, name: name, armed: fs.armed}, nil
}

type failingReadFile struct {
	vfs.File
	name  string
	armed *atomic.Bool
}

func (f failingReadFile) ReadAt(p []byte, off int64) (int, error) {
	if f.armed.Load() {
		return 0, &os.PathError{Op: "read", Path: f.name, Err: syscall.EIO}
	}
	return f.File.ReadAt(p, off)
}

func (f failingReadFile) Read(p []byte) (int, error) {
	if f.armed.Load() {
		return 0, &os.PathError{Op: "read", Path: f.name, Err: syscall.EIO}
	}
	return f.File.Read(p)
}

// A disk that fails reads of a table (EIO): a receive that reads a body
// there is answered ErrUnavailable (503) and logged in one line, Ping
// names the table and the error (before, it answered nil: /healthz 200
// while receives failed), and all works again once the disk does; a
// start that meets the error refuses, naming the disk and what to run.
func TestTableReadEIO(t *testing.T) {
	t.Parallel()
	mem := vfs.NewMem()
	var armed atomic.Bool
	fs := failingReadFS{FS: mem, armed: &armed}
	var logs logbuf.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	s, err := pebblestore.Open(t.Context(), "/data", pebblestore.Options{FS: fs, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	q := storetest.NewQueue(storetest.QueueID(1), "bodies")
	storetest.MustCreateQueue(t, s, q)
	for i := range 20 {
		m := storetest.NewMessage(i, base)
		m.Body = strings.Repeat(fmt.Sprint(i), 500)
		storetest.MustSend(t, s, q.ID, m)
	}
	pebblestore.Flush(t, s)
	armed.Store(true)
	rp := baton.MessageReceiveParams{QueueID: q.ID, Now: base, VisibleAt: at(time.Hour), Max: 1}
	if _, err := s.MessageReceive(t.Context(), rp); !errors.Is(err, baton.ErrUnavailable) || !strings.Contains(err.Error(), "input/output error") {
		t.Errorf("receive while the table cannot be read: %v, want ErrUnavailable naming the I/O error", err)
	}
	if !strings.Contains(logs.String(), "cannot read a message's body") || strings.Contains(logs.String(), "stack trace") {
		t.Errorf("the failed read is not logged in one line:\n%s", logs.String())
	}
	// A disk failing reads is no damage: the line says to check the
	// disk, not to look for damaged tables.
	if !strings.Contains(logs.String(), "its receives fail (503). The disk is failing reads: check it (its kernel log)") {
		t.Errorf("the failed read's line does not say to check the disk:\n%s", logs.String())
	}
	err = s.Ping(t.Context())
	for _, want := range []string{"disk I/O error: reads of /data/pebble/", ".sst failing", "input/output error"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Ping while the table cannot be read: %v, want it to name %q", err, want)
		}
	}
	armed.Store(false)
	if got, err := s.MessageReceive(t.Context(), rp); err != nil || len(got) != 1 {
		t.Errorf("receive once the disk reads again: %d messages, %v", len(got), err)
	}
	pebblestore.ProbeReads(s)
	if err := s.Ping(t.Context()); err != nil {
		t.Errorf("Ping once the disk reads the table again: %v", err)
	}
	if !strings.Contains(logs.String(), "the disk reads the table again") {
		t.Errorf("the end of the failing reads is not logged:\n%s", logs.String())
	}
	mustClose(t, s)

	armed.Store(true)
	s, err = pebblestore.Open(t.Context(), "/data", pebblestore.Options{FS: fs, Logger: log})
	if err == nil {
		s.Close()
		t.Fatal("opened while its table cannot be read")
	}
	for _, want := range []string{"input/output error", ".sst", "baton store check"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("open while the table cannot be read: %v, want it to name %q", err, want)
		}
	}
}

// A compaction that reads a table the disk fails to read (EIO) fails,
// and Pebble tries one of level 0 again at once: each try holds its place
// a while (before, it failed 1,700 times a second, a core's worth), the
// failing reads are logged once, as reads, and Ping names the tables
// while they fail; a flush that works meanwhile says nothing of them
// (before, each flush logged "background writes work again", the next
// failure "a background write failed", and Ping answered nil in between).
func TestCompactionReadEIO(t *testing.T) {
	t.Parallel()
	var armed atomic.Bool
	fs := failingReadFS{FS: vfs.NewMem(), armed: &armed}
	var logs logbuf.Buffer
	s, err := pebblestore.Open(t.Context(), "/data", pebblestore.Options{FS: fs, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	q := storetest.NewQueue(storetest.QueueID(1), "bodies")
	storetest.MustCreateQueue(t, s, q)
	armed.Store(true)
	// Tables of level 0, written while no read works: enough of them for
	// Pebble to compact them, which reads them.
	const tables = 6
	for i := range tables {
		m := storetest.NewMessage(i, base)
		m.Body = strings.Repeat(fmt.Sprint(i), 500)
		storetest.MustSend(t, s, q.ID, m)
		pebblestore.Flush(t, s)
	}
	start := time.Now()
	for s.Stats().BackgroundFailures < 3 && time.Since(start) < 20*time.Second {
		time.Sleep(10 * time.Millisecond)
	}
	took := time.Since(start)
	storetest.MustSend(t, s, q.ID, storetest.NewMessage(tables, base))
	pebblestore.Flush(t, s) // a background write that works
	if n := s.Stats().BackgroundFailures; n < 3 || took < time.Second {
		t.Errorf("compactions meeting the failing reads failed %d times in %v, want 3, with a pause between tries", n, took.Round(time.Millisecond))
	}
	if err := s.Ping(t.Context()); err == nil || !strings.Contains(err.Error(), "disk I/O error: reads of /data/pebble/") {
		t.Errorf("Ping while tables cannot be read, after a flush worked: %v, want it to name them", err)
	}
	out := logs.String()
	if strings.Contains(out, "background write") || !strings.Contains(out, "the disk failed a read of a table") {
		t.Errorf("the failing reads were not logged as reads, or logged as failing writes:\n%s", out)
	}

	armed.Store(false)
	// A read begun while the disk failed may still end failing.
	var got []*baton.Message
	for deadline := time.Now().Add(10 * time.Second); len(got) == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		got, err = s.MessageReceive(t.Context(), baton.MessageReceiveParams{QueueID: q.ID, Now: base, VisibleAt: at(time.Hour), Max: 10})
	}
	if len(got) == 0 {
		t.Errorf("receive once the disk reads again: %v", err)
	}
	pebblestore.ProbeReads(s)
	if err := s.Ping(t.Context()); err != nil {
		t.Errorf("Ping once the disk reads again: %v", err)
	}
}

// walReadFS fails every read of a write-ahead log with EIO while armed.
type walReadFS struct {
	vfs.FS
	armed *atomic.Bool
}

func (fs walReadFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.Open(name, opts...)
	if err != nil || !strings.HasSuffix(name, ".log") || !fs.armed.Load() {
		return f, err
	}
	return walReadFile{File: f, name: name}, nil
}

type walReadFile struct {
	vfs.File
	name string
}

func (f walReadFile) ReadAt(p []byte, off int64) (int, error) {
	return 0, &os.PathError{Op: "read", Path: f.name, Err: syscall.EIO}
}
func (f walReadFile) Read(p []byte) (int, error) {
	return 0, &os.PathError{Op: "read", Path: f.name, Err: syscall.EIO}
}

// A disk that fails the reads of the write-ahead log at a start (EIO):
// the start refuses, naming the I/O error, the file and what to do, and
// does not start without what the log holds.
func TestWALReadEIOAtStart(t *testing.T) {
	t.Parallel()
	mem := vfs.NewMem()
	var armed atomic.Bool
	fs := walReadFS{FS: mem, armed: &armed}
	s, err := pebblestore.Open(t.Context(), "/data", pebblestore.Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	removedQueue(t, s, 1, "before")
	s.Close()
	armed.Store(true)
	s, err = pebblestore.Open(t.Context(), "/data", pebblestore.Options{FS: fs})
	if err == nil {
		s.Close()
		t.Fatal("opened while its write-ahead log cannot be read")
	}
	for _, want := range []string{"input/output error", ".log", "baton store check"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("open while the write-ahead log cannot be read: %v, want it to name %q", err, want)
		}
	}
}

// optionsWriteFS fails every write of the temporary file a start writes
// Pebble's OPTIONS to with EIO.
type optionsWriteFS struct{ vfs.FS }

func (fs optionsWriteFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, c)
	if err != nil || !strings.HasSuffix(name, ".dbtmp") {
		return f, err
	}
	return optionsWriteFile{File: f, name: name}, nil
}

type optionsWriteFile struct {
	vfs.File
	name string
}

func (f optionsWriteFile) Write([]byte) (int, error) {
	return 0, &os.PathError{Op: "write", Path: f.name, Err: syscall.EIO}
}

// A start whose write of Pebble's OPTIONS file fails (EIO) refuses, naming
// the failed write and what to do; before, it said the disk had failed a
// read and pointed at salvage, which the failed write does not call for.
func TestOptionsWriteEIOAtStart(t *testing.T) {
	t.Parallel()
	mem := vfs.NewMem()
	s, err := pebblestore.Open(t.Context(), "/data", pebblestore.Options{FS: mem})
	if err != nil {
		t.Fatal(err)
	}
	mustClose(t, s)
	s, err = pebblestore.Open(t.Context(), "/data", pebblestore.Options{FS: optionsWriteFS{mem}})
	if err == nil {
		s.Close()
		t.Fatal("opened while the disk fails its writes")
	}
	for _, want := range []string{"input/output error", "The disk failed a write of /data/pebble/temporary.", "then start again"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("open: %v, want it to name %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "failed a read") || strings.Contains(err.Error(), "salvage") {
		t.Errorf("open: %v, which calls the failed write a read", err)
	}
	s, err = pebblestore.Open(t.Context(), "/data", pebblestore.Options{FS: mem})
	if err != nil {
		t.Fatalf("open once the disk writes again: %v", err)
	}
	mustClose(t, s)
}

// removeFailFS fails every removal of a table with EIO while armed.
type removeFailFS struct {
	vfs.FS
	armed *atomic.Bool
}

func (fs removeFailFS) Remove(name string) error {
	if fs.armed.Load() && strings.HasSuffix(name, ".sst") {
		return &os.PathError{Op: "remove", Path: name, Err: syscall.EIO}
	}
	return fs.FS.Remove(name)
}

// A disk that fails the removal of tables a compaction left behind (EIO):
// the failure is logged, Ping names it while the files stay, and the store
// removes them once the disk does. Before, nothing said so, and the files
// stayed on the disk until the next start.
func TestRemoveFailsEIO(t *testing.T) {
	t.Parallel()
	var armed atomic.Bool
	mem := vfs.NewMem()
	var logs logbuf.Buffer
	s, err := pebblestore.Open(t.Context(), "/data", pebblestore.Options{FS: removeFailFS{FS: mem, armed: &armed},
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	q := storetest.NewQueue(storetest.QueueID(1), "bodies")
	storetest.MustCreateQueue(t, s, q)
	for i := range 3 {
		storetest.MustSend(t, s, q.ID, storetest.NewMessage(i, base))
		pebblestore.Flush(t, s)
	}
	armed.Store(true)
	pebblestore.CompactIdle(s) // leaves the three tables behind
	tables := func() int {
		names, err := mem.List("/data/pebble")
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, name := range names {
			if strings.HasSuffix(name, ".sst") {
				n++
			}
		}
		return n
	}
	var perr error
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if perr = s.Ping(t.Context()); perr != nil {
			break
		}
	}
	if perr == nil || !strings.Contains(perr.Error(), "could not be removed") || !strings.Contains(perr.Error(), "input/output error") {
		t.Fatalf("Ping while compacted tables cannot be removed: %v, want it to name them and the error", perr)
	}
	if !strings.Contains(logs.String(), "the disk failed to remove a file of the log") {
		t.Errorf("the failed removal is not logged:\n%s", logs.String())
	}
	left := tables()
	armed.Store(false)
	pebblestore.RetryRemovals(s)
	if err := s.Ping(t.Context()); err != nil {
		t.Errorf("Ping once the disk removes them: %v", err)
	}
	if n := tables(); n >= left {
		t.Errorf("%d tables on the disk once it removes files again, %d before", n, left)
	}
}

// optionsRemoveFailFS fails every removal of an OPTIONS file with EIO
// while armed.
type optionsRemoveFailFS struct {
	vfs.FS
	armed *atomic.Bool
}

func (fs optionsRemoveFailFS) Remove(name string) error {
	if fs.armed.Load() && strings.HasPrefix(filepath.Base(name), "OPTIONS-") {
		return &os.PathError{Op: "remove", Path: name, Err: syscall.EIO}
	}
	return fs.FS.Remove(name)
}

// A disk that fails the removal of the OPTIONS file an earlier start
// wrote (EIO), which Pebble removes at each start: the failure is logged,
// Ping names it while the file stays, and the store removes it once the
// disk does. Before, Pebble dropped the error: nothing said so, and each
// start left one more file.
func TestRemoveOptionsFailsEIO(t *testing.T) {
	t.Parallel()
	var armed atomic.Bool
	mem := vfs.NewMem()
	s, err := pebblestore.Open(t.Context(), "/data", pebblestore.Options{FS: mem, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	mustClose(t, s)
	optionsFiles := func() int {
		names, err := mem.List("/data/pebble")
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, name := range names {
			if strings.HasPrefix(name, "OPTIONS-") {
				n++
			}
		}
		return n
	}
	armed.Store(true)
	var logs logbuf.Buffer
	s, err = pebblestore.Open(t.Context(), "/data", pebblestore.Options{FS: optionsRemoveFailFS{FS: mem, armed: &armed},
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var perr error
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if perr = s.Ping(t.Context()); perr != nil {
			break
		}
	}
	if perr == nil || !strings.Contains(perr.Error(), "could not be removed") || !strings.Contains(perr.Error(), "OPTIONS-") ||
		!strings.Contains(perr.Error(), "input/output error") {
		t.Fatalf("Ping while the old OPTIONS file cannot be removed: %v, want it to name it and the error", perr)
	}
	if !strings.Contains(logs.String(), "the disk failed to remove a file of the log") {
		t.Errorf("the failed removal is not logged:\n%s", logs.String())
	}
	if n := optionsFiles(); n != 2 {
		t.Errorf("%d OPTIONS files while the removal fails, want 2", n)
	}
	armed.Store(false)
	pebblestore.RetryRemovals(s)
	if err := s.Ping(t.Context()); err != nil {
		t.Errorf("Ping once the disk removes it: %v", err)
	}
	if n := optionsFiles(); n != 1 {
		t.Errorf("%d OPTIONS files once the disk removes files again, want 1", n)
	}
}
