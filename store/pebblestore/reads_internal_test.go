package pebblestore

import (
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// badSectorFS fails, while armed, every read of a file that meets its
// bad bytes (EIO), as a disk with a bad sector does, and counts the bytes
// its reads return.
type badSectorFS struct {
	vfs.FS
	bad, badLen int64
	armed       *atomic.Bool
	read        *atomic.Int64
}

func (fs badSectorFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.Open(name, opts...)
	if err != nil {
		return f, err
	}
	return badSectorFile{File: f, fs: fs, name: name}, nil
}

type badSectorFile struct {
	vfs.File
	fs   badSectorFS
	name string
}

func (f badSectorFile) ReadAt(p []byte, off int64) (int, error) {
	if f.fs.armed.Load() && off < f.fs.bad+f.fs.badLen && f.fs.bad < off+int64(len(p)) {
		return 0, &os.PathError{Op: "read", Path: f.name, Err: syscall.EIO}
	}
	n, err := f.File.ReadAt(p, off)
	f.fs.read.Add(int64(n))
	return n, err
}

// probeTable writes a table of size bytes for the read probe's tests, and
// returns the health watching it through fs, with one read of a block at
// off failed (EIO).
func probeTable(t testing.TB, size, bad int64) (*health, badSectorFS, string) {
	t.Helper()
	mem := vfs.NewMem()
	if err := mem.MkdirAll("/data/pebble", 0o755); err != nil {
		t.Fatal(err)
	}
	const name = "/data/pebble/000007.sst"
	f, err := mem.Create(name, vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	for written := int64(0); written < size; written += int64(len(chunk)) {
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	var armed atomic.Bool
	armed.Store(true)
	fs := badSectorFS{FS: mem, bad: bad, badLen: 4096, armed: &armed, read: new(atomic.Int64)}
	h := newHealth(slog.New(slog.DiscardHandler), time.Minute)
	h.fs, h.dir = fs, "/data/pebble"
	tf, err := diskFS{FS: fs, h: h}.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer tf.Close()
	// A read of the 32 KiB block holding the bad sector, as Pebble's.
	if _, err := tf.ReadAt(make([]byte, 32<<10), bad-1000); err == nil {
		t.Fatal("the read of the bad sector worked")
	}
	return h, fs, name
}

// The store's read of a table whose read failed, to learn whether the
// disk reads it again, reads the bytes that failed, not the table: a
// table of the last level is up to 128 MiB, read from a failing disk
// every staleAfter while it fails, and once more when it works (before,
// a bad sector near the end of a 64 MiB table cost 64 MiB each time).
// Ping names the table while those bytes fail, and not once they read.
func TestReadProbeReadsOnlyWhatFailed(t *testing.T) {
	t.Parallel()
	const size = 64 << 20
	h, fs, name := probeTable(t, size, size-100<<10)
	named := func() bool { return strings.Contains(joinProblems(h.problems(time.Second)), name) }
	if !named() {
		t.Fatalf("Ping after the failed read: %q, want it to name %s", joinProblems(h.problems(time.Second)), name)
	}
	const most = 1 << 20
	fs.read.Store(0)
	h.probeReadsOlder(0)
	t.Logf("probe while the sector fails: %d bytes read", fs.read.Load())
	if n := fs.read.Load(); n > most {
		t.Errorf("the probe while the sector fails read %d bytes of the %d-byte table, want at most %d", n, size, most)
	}
	if !named() {
		t.Error("Ping no longer names the table whose bad sector still fails")
	}
	fs.armed.Store(false)
	fs.read.Store(0)
	h.probeReadsOlder(0)
	t.Logf("probe once the sector reads: %d bytes read", fs.read.Load())
	if n := fs.read.Load(); n > most {
		t.Errorf("the probe once the sector reads read %d bytes of the %d-byte table, want at most %d", n, size, most)
	}
	if named() {
		t.Errorf("Ping still names the table once its failed bytes read: %q", joinProblems(h.problems(time.Second)))
	}
}

// More failed reads of a table than the probe keeps apart are read again
// as one span covering them all, and a probe that fails again keeps the
// table named.
func TestReadProbeManySpans(t *testing.T) {
	t.Parallel()
	h, fs, name := probeTable(t, 4<<20, 3<<20)
	tf, err := diskFS{FS: fs, h: h}.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer tf.Close()
	for i := range 3 * maxProbeSpans {
		if _, err := tf.ReadAt(make([]byte, 4096), 3<<20-4000+int64(i)*100); err == nil {
			t.Fatal("a read of the bad sector worked")
		}
	}
	h.mu.Lock()
	spans := len(h.reads[name].spans)
	h.mu.Unlock()
	if spans > maxProbeSpans {
		t.Errorf("%d spans kept, want at most %d", spans, maxProbeSpans)
	}
	h.probeReadsOlder(0)
	if !strings.Contains(joinProblems(h.problems(time.Second)), name) {
		t.Error("Ping no longer names the table whose bad sector still fails")
	}
	fs.armed.Store(false)
	h.probeReadsOlder(0)
	if p := joinProblems(h.problems(time.Second)); strings.Contains(p, name) {
		t.Errorf("Ping still names the table once it reads: %q", p)
	}
}

// BenchmarkReadProbe is the store's read of a 64 MiB table whose block
// near its end the disk fails to read, to learn whether it reads again
// (every staleAfter while it fails): bytes read and time for each.
func BenchmarkReadProbe(b *testing.B) {
	const size = 64 << 20
	h, fs, _ := probeTable(b, size, size-100<<10)
	fs.read.Store(0)
	for b.Loop() {
		h.probeReadsOlder(0)
	}
	b.ReportMetric(float64(fs.read.Load())/float64(b.N), "bytes_read/op")
}
