package pebblestore_test

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/testutil/logbuf"
	"github.com/baton-sqs/baton/store/pebblestore"
)

// failingSyncFS fails the next sync of a write-ahead log file with EIO
// once armed, as a disk whose writeback failed does.
type failingSyncFS struct {
	vfs.FS
	armed *atomic.Bool
}

func (fs failingSyncFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	return fs.wrap(f, err, name)
}

func (fs failingSyncFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, category)
	return fs.wrap(f, err, newname)
}

func (fs failingSyncFS) wrap(f vfs.File, err error, name string) (vfs.File, error) {
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return failingSyncFile{File: f, name: name, armed: fs.armed}, nil
}

type failingSyncFile struct {
	vfs.File
	name  string
	armed *atomic.Bool
}

func (f failingSyncFile) fail() error {
	if f.armed.CompareAndSwap(true, false) {
		return &os.PathError{Op: "sync", Path: f.name, Err: syscall.EIO}
	}
	return nil
}

func (f failingSyncFile) Sync() error {
	if err := f.fail(); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f failingSyncFile) SyncData() error {
	if err := f.fail(); err != nil {
		return err
	}
	return f.File.SyncData()
}

func (f failingSyncFile) SyncTo(length int64) (bool, error) {
	if err := f.fail(); err != nil {
		return false, err
	}
	return f.File.SyncTo(length)
}

// An fsync of the write-ahead log failing once (EIO): the kernel may have
// dropped the pages it could not write, so a later sync that works proves
// nothing. The store must not answer the commit as done, nor take changes
// after it as if the log were whole, nor stop the process (Pebble panics or
// exits when its log fails): the call waiting is answered ErrUnavailable
// within the write timeout, every change after it is refused, Ping says
// why, reads are answered, Close returns, and what was acknowledged before
// is there after a restart that keeps only what was synced.
func TestWALSyncFailureRefusesChanges(t *testing.T) {
	t.Parallel()
	mem := vfs.NewCrashableMem()
	var armed atomic.Bool
	const timeout = 2 * time.Second
	s, err := pebblestore.Open(t.Context(), "/data", pebblestore.Options{FS: failingSyncFS{FS: mem, armed: &armed}, WriteTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	q := removedQueue(t, s, 1, "before")

	armed.Store(true)
	start := time.Now()
	err = removedSend(t, s, q, "during")
	took := time.Since(start)
	if armed.Load() {
		t.Fatal("no sync of the write-ahead log was made")
	}
	if !errors.Is(err, baton.ErrUnavailable) {
		t.Errorf("send whose sync failed: %v, want ErrUnavailable", err)
	}
	if took > timeout+10*time.Second {
		t.Errorf("send whose sync failed answered after %v, want about the write timeout (%v)", took, timeout)
	}
	// The disk syncs again; the store must still refuse.
	start = time.Now()
	if err := removedSend(t, s, q, "after"); !errors.Is(err, baton.ErrUnavailable) || !strings.Contains(err.Error(), "input/output error") {
		t.Errorf("send after the failed sync: %v, want ErrUnavailable naming the failure", err)
	}
	if took := time.Since(start); took > timeout/2 {
		t.Errorf("send after the failed sync refused after %v, want at once", took)
	}
	if err := s.Ping(t.Context()); err == nil || !strings.Contains(err.Error(), "input/output error") || strings.Contains(err.Error(), "disk slow") {
		t.Errorf("Ping after the failed sync: %v, want it named (and no slow disk)", err)
	}
	if _, err := s.QueueGet(t.Context(), q.Region, q.Account, q.Name); err != nil {
		t.Errorf("QueueGet after the failed sync: %v", err)
	}
	closeWithin(t, s, 3*timeout+10*time.Second)

	// A restart on what was synced.
	if s, err = pebblestore.Open(t.Context(), "/data", pebblestore.Options{FS: mem.CrashClone(vfs.CrashCloneCfg{})}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := idsOf(receive(t, s, q.ID, base, at(lease), 10))
	if len(got) == 0 || got[0] != "before" || len(got) > 2 || strings.Contains(strings.Join(got, " "), "after") {
		t.Errorf("after a restart: %v, want before (and perhaps during)", got)
	}
}

// A backup asked for once a write of the log failed is refused at once,
// naming the failure (it waited for good, its call never answered: the
// copy begins by flushing the log, behind the failed write).
func TestBackupAfterLogFailure(t *testing.T) {
	t.Parallel()
	var armed atomic.Bool
	s, err := pebblestore.Open(t.Context(), "/data", pebblestore.Options{FS: failingSyncFS{FS: vfs.NewCrashableMem(), armed: &armed},
		WriteTimeout: time.Second, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	q := removedQueue(t, s, 1, "before")
	armed.Store(true)
	if err := removedSend(t, s, q, "during"); !errors.Is(err, baton.ErrUnavailable) {
		t.Fatalf("send whose sync failed: %v, want ErrUnavailable", err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Backup(t.Context(), "/backups/b1") }()
	select {
	case err := <-done:
		if !errors.Is(err, baton.ErrUnavailable) || !strings.Contains(err.Error(), "input/output error") {
			t.Errorf("backup after the failed write: %v, want ErrUnavailable naming it", err)
		}
	case <-time.After(time.Minute):
		t.Error("the backup did not return")
	}
	closeWithin(t, s, 20*time.Second)
}

// A backup begun just before a write of the log fails (its own flush of
// the log is the write that fails) answers within a bound, naming the
// failure, and leaves no copy at its destination: the flush waits for good
// behind the failed write (before, so did the backup's caller, and every
// backup asked for after it on the server), and its unfinished copy is
// removed.
func TestBackupBegunBeforeLogFailure(t *testing.T) {
	t.Parallel()
	var armed atomic.Bool
	fs := failingSyncFS{FS: vfs.NewCrashableMem(), armed: &armed}
	s, err := pebblestore.Open(t.Context(), "/data", pebblestore.Options{FS: fs,
		WriteTimeout: time.Second, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	q := removedQueue(t, s, 1, "before")
	armed.Store(true)
	done := make(chan error, 1)
	go func() { done <- s.Backup(t.Context(), "/backups/b1") }()
	select {
	case err := <-done:
		if !errors.Is(err, baton.ErrUnavailable) || !strings.Contains(err.Error(), "input/output error") {
			t.Errorf("backup whose flush of the log failed: %v, want ErrUnavailable naming the failure", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the backup whose flush of the log failed did not return")
	}
	if armed.Load() {
		t.Fatal("no sync of the write-ahead log was made")
	}
	for _, dir := range []string{"/backups/b1", "/backups/b1.partial"} {
		if _, err := fs.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after the backup was given up: %v, want it absent", dir, err)
		}
	}
	if err := removedSend(t, s, q, "after"); !errors.Is(err, baton.ErrUnavailable) {
		t.Errorf("send after the failed flush: %v, want ErrUnavailable", err)
	}
	closeWithin(t, s, 20*time.Second)
}

// logFaultFS fails, once armed, one kind of write of the log that Pebble
// cannot go on from: a sync of the log's directory (after it creates a
// write-ahead log), the creation of a write-ahead log (the file system
// read-only, or the directory gone: ENOENT), the close of one, a sync of
// the MANIFEST, the creation of the next MANIFEST, or the creation or
// close of the marker file naming the current MANIFEST.
type logFaultFS struct {
	vfs.FS
	// "dir sync", "wal create", "wal create enoent", "wal close",
	// "manifest sync", "manifest create", "marker create" or
	// "marker close"
	fault string
	armed *atomic.Bool
}

func (fs logFaultFS) err(op, name string, errno syscall.Errno) error {
	if fs.armed.Load() {
		return &os.PathError{Op: op, Path: name, Err: errno}
	}
	return nil
}

func (fs logFaultFS) OpenDir(name string) (vfs.File, error) {
	f, err := fs.FS.OpenDir(name)
	if err != nil || fs.fault != "dir sync" {
		return f, err
	}
	return logFaultFile{File: f, name: name, fs: fs}, nil
}

func (fs logFaultFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	base := filepath.Base(name)
	created := map[string]bool{
		"wal create":        strings.HasSuffix(base, ".log"),
		"wal create enoent": strings.HasSuffix(base, ".log"),
		"manifest create":   strings.HasPrefix(base, "MANIFEST-"),
		"marker create":     strings.HasPrefix(base, "marker.manifest."),
	}
	if created[fs.fault] {
		if err := fs.err("open", name, fs.createErrno()); err != nil {
			return nil, err
		}
	}
	f, err := fs.FS.Create(name, category)
	switch {
	case err != nil:
		return f, err
	case fs.fault == "manifest sync" && strings.HasPrefix(base, "MANIFEST-"), fs.fault == "marker close" && strings.HasPrefix(base, "marker.manifest."),
		fs.fault == "wal close" && strings.HasSuffix(base, ".log"):
		return logFaultFile{File: f, name: name, fs: fs}, nil
	}
	return f, err
}

// createErrno is the error of a failing creation.
func (fs logFaultFS) createErrno() syscall.Errno {
	if fs.fault == "wal create enoent" {
		return syscall.ENOENT
	}
	return syscall.EROFS
}

func (fs logFaultFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	if strings.HasPrefix(fs.fault, "wal create") {
		if err := fs.err("open", newname, fs.createErrno()); err != nil {
			return nil, err
		}
	}
	f, err := fs.FS.ReuseForWrite(oldname, newname, category)
	if err == nil && fs.fault == "wal close" {
		return logFaultFile{File: f, name: newname, fs: fs}, nil
	}
	return f, err
}

type logFaultFile struct {
	vfs.File
	name string
	fs   logFaultFS
}

func (f logFaultFile) Sync() error {
	if f.fs.fault == "wal close" {
		return f.File.Sync()
	}
	if err := f.fs.err("sync", f.name, syscall.EIO); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f logFaultFile) SyncData() error { return f.Sync() }

func (f logFaultFile) Close() error {
	if f.fs.fault != "marker close" && f.fs.fault != "wal close" {
		return f.File.Close()
	}
	if err := f.fs.err("close", f.name, syscall.EIO); err != nil {
		f.File.Close()
		return err
	}
	return f.File.Close()
}

// A write of the log that Pebble cannot go on from, failing while the
// store serves (a sync of the log's directory or the creation of the next
// write-ahead log, both made when the memtable is flushed; a sync of the
// MANIFEST, which records the flush; and, where the flush starts a new
// MANIFEST, its creation or that of the marker file naming it): Pebble
// panicked on the first two and stopped the process on the marker's. Now,
// as for a failed fsync of the write-ahead log, every change after it is
// refused, Ping names the file and the error, the log says it once,
// reads are answered, Close returns, and what was acknowledged before is
// there after a restart.
func TestLogFaultsWhileServing(t *testing.T) {
	for _, c := range []struct {
		fault, file, errno string
	}{
		{"dir sync", "/data/pebble ", "input/output error"},
		{"wal create", ".log", "read-only file system"},
		{"wal create enoent", ".log", "no such file or directory"},
		{"wal close", ".log", "input/output error"},
		{"manifest sync", "MANIFEST-", "input/output error"},
		{"manifest create", "MANIFEST-", "read-only file system"},
		{"marker create", "marker.manifest.", "read-only file system"},
		{"marker close", "marker.manifest.", "input/output error"},
	} {
		t.Run(c.fault, func(t *testing.T) {
			t.Parallel()
			mem := vfs.NewCrashableMem()
			var armed atomic.Bool
			var log logbuf.Buffer
			const timeout = time.Second
			opts := pebblestore.Options{FS: logFaultFS{FS: mem, fault: c.fault, armed: &armed},
				WriteTimeout: timeout, Logger: slog.New(slog.NewTextHandler(&log, nil))}
			if strings.HasPrefix(c.fault, "manifest create") || strings.HasPrefix(c.fault, "marker") {
				opts = pebblestore.RotatingManifest(opts)
			}
			s, err := pebblestore.Open(t.Context(), "/data", opts)
			if err != nil {
				t.Fatal(err)
			}
			q := removedQueue(t, s, 1, "before")
			armed.Store(true)
			// The flush meets the failure and never returns: as the idle
			// flush would, it runs on its own.
			go pebblestore.FlushAsync(s)
			deadline := time.Now().Add(time.Minute)
			for s.Ping(t.Context()) == nil && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			armed.Store(false) // the disk works again; the store must still refuse
			for _, want := range []string{"writes refused", "the disk failed", c.file, c.errno} {
				if err := s.Ping(t.Context()); err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("Ping after the failure: %v, want it to say %q", err, want)
				}
			}
			if err := removedSend(t, s, q, "after"); !errors.Is(err, baton.ErrUnavailable) {
				t.Errorf("send after the failure: %v, want ErrUnavailable", err)
			}
			if _, err := s.QueueGet(t.Context(), q.Region, q.Account, q.Name); err != nil {
				t.Errorf("QueueGet after the failure: %v", err)
			}
			closeWithin(t, s, 3*timeout+10*time.Second)
			if n := strings.Count(log.String(), "a write of the log failed"); n != 1 {
				t.Errorf("the failure logged %d times, want once:\n%s", n, log.String())
			}

			if s, err = pebblestore.Open(t.Context(), "/data", pebblestore.Options{FS: mem.CrashClone(vfs.CrashCloneCfg{})}); err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if got := idsOf(receive(t, s, q.ID, base, at(lease), 10)); len(got) != 1 || got[0] != "before" {
				t.Errorf("after a restart: %v, want before", got)
			}
		})
	}
}

// A start whose first sync of the write-ahead log fails (EIO) ends with
// an error naming it, rather than hang for good (as it did) on the write
// that never returns.
func TestOpenOnFailingLogSync(t *testing.T) {
	t.Parallel()
	mem := storeWithMessage(t)
	var armed atomic.Bool
	armed.Store(true)
	err := openEnds(t, pebblestore.Options{FS: failingSyncFS{FS: mem, armed: &armed}})
	if err == nil || !strings.Contains(err.Error(), "input/output error") || !strings.Contains(err.Error(), "check the disk") ||
		strings.Contains(err.Error(), "failed a read") {
		t.Errorf("start on a failing sync: %v, want an error naming the failed write and what to do", err)
	}
}

// storeWithMessage returns an in-memory file system holding, at /data, a
// closed store whose queue 1 holds the message "before".
func storeWithMessage(t *testing.T) *vfs.MemFS {
	t.Helper()
	mem := vfs.NewCrashableMem()
	s, err := pebblestore.Open(t.Context(), "/data", pebblestore.Options{FS: mem})
	if err != nil {
		t.Fatal(err)
	}
	removedQueue(t, s, 1, "before")
	mustClose(t, s)
	return mem
}

// openEnds opens the store at /data with opts, closes it if it opened, and
// returns the opening's error; it fails the test if the start has not
// ended within a minute (a start that hangs on a write that never returns).
func openEnds(t *testing.T, opts pebblestore.Options) error {
	t.Helper()
	opened := make(chan error, 1)
	go func() {
		s, err := pebblestore.Open(t.Context(), "/data", opts)
		if err == nil {
			s.Close()
		}
		opened <- err
	}()
	select {
	case err := <-opened:
		return err
	case <-time.After(time.Minute):
		t.Fatal("the start did not end")
		return nil
	}
}

// A start that meets a failing write of the log Pebble cannot go on from
// (the creation of its new MANIFEST or of the marker naming it, on a file
// system gone read-only; the sync of the MANIFEST, the close of the
// marker, the sync of the log's directory, failing with EIO; the creation
// of its write-ahead log, read-only or with ENOENT) ends with an error
// naming the file and the failure, rather than stop the process (as it
// did on the marker's creation) or hang.
func TestOpenOnLogFaults(t *testing.T) {
	for _, c := range []struct{ fault, file, errno string }{
		{"manifest create", "MANIFEST-", "read-only file system"},
		{"manifest sync", "MANIFEST-", "input/output error"},
		{"marker create", "marker.manifest.", "read-only file system"},
		{"marker close", "marker.manifest.", "input/output error"},
		{"dir sync", "sync /data", "input/output error"},
		{"wal create", ".log", "read-only file system"},
		{"wal create enoent", ".log", "no such file or directory"},
	} {
		t.Run(c.fault, func(t *testing.T) {
			t.Parallel()
			mem := storeWithMessage(t)
			var armed atomic.Bool
			armed.Store(true)
			err := openEnds(t, pebblestore.Options{FS: logFaultFS{FS: mem, fault: c.fault, armed: &armed},
				Logger: slog.New(slog.DiscardHandler)})
			for _, want := range []string{c.file, c.errno, "then start again"} {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("start on a failing %s: %v, want it to say %q", c.fault, err, want)
				}
			}
			// The failed start left its write waiting; the next is
			// another process's, on what the disk holds.
			s, err := pebblestore.Open(t.Context(), "/data", pebblestore.Options{FS: mem.CrashClone(vfs.CrashCloneCfg{})})
			if err != nil {
				t.Fatalf("start once the disk works: %v", err)
			}
			defer s.Close()
			if got := idsOf(receive(t, s, 1, base, at(lease), 10)); len(got) != 1 || got[0] != "before" {
				t.Errorf("start once the disk works: %v, want before", got)
			}
		})
	}
}

// closeWithin closes s, whose log failed, and fails the test if Close does
// not return within d: a failed write never returns, and Close must not
// wait for it.
func closeWithin(t *testing.T, s *pebblestore.Store, d time.Duration) {
	t.Helper()
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		t.Logf("Close: %v", err)
	case <-time.After(d):
		t.Fatal("Close did not return")
	}
}

// stallingSyncFS makes, once armed, each sync of a write-ahead log file
// wait until release is closed, as a device that stops answering does.
type stallingSyncFS struct {
	vfs.FS
	armed   *atomic.Bool
	release chan struct{}
}

func (fs stallingSyncFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return stallingSyncFile{File: f, fs: fs}, nil
}

type stallingSyncFile struct {
	vfs.File
	fs stallingSyncFS
}

func (f stallingSyncFile) stall() {
	if f.fs.armed.Load() {
		<-f.fs.release
	}
}

func (f stallingSyncFile) Sync() error     { f.stall(); return f.File.Sync() }
func (f stallingSyncFile) SyncData() error { f.stall(); return f.File.SyncData() }
func (f stallingSyncFile) SyncTo(length int64) (bool, error) {
	f.stall()
	return f.File.SyncTo(length)
}

// A backup whose flush of the log the disk does not answer (a device
// that stops answering) is given up after the write timeout, saying so,
// as a commit is; nothing of it is left, nor written once the disk
// answers again, and a backup then works (before, its caller waited for
// as long as the disk did: for good, for a device that never answers).
func TestBackupOnStalledDisk(t *testing.T) {
	t.Parallel()
	armed, release := &atomic.Bool{}, make(chan struct{})
	fs := stallingSyncFS{FS: vfs.NewMem(), armed: armed, release: release}
	const timeout = time.Second
	s, err := pebblestore.Open(t.Context(), "/data", pebblestore.Options{FS: fs, WriteTimeout: timeout,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	defer s.Close()
	defer free()
	removedQueue(t, s, 1, "before")
	armed.Store(true)
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- s.Backup(t.Context(), "/backups/b1") }()
	select {
	case err := <-done:
		if took := time.Since(start); !errors.Is(err, baton.ErrUnavailable) || !strings.Contains(err.Error(), "waited") || took > timeout+10*time.Second {
			t.Errorf("backup on a disk that does not answer: %v after %v, want ErrUnavailable saying it waited, after about %v", err, took, timeout)
		}
	case <-time.After(time.Minute):
		t.Fatal("the backup on a disk that does not answer did not return")
	}
	armed.Store(false)
	free()
	if err := s.Backup(t.Context(), "/backups/b2"); err != nil {
		t.Errorf("backup once the disk answers: %v", err)
	}
	for _, dir := range []string{"/backups/b1", "/backups/b1.partial"} {
		if _, err := fs.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s, given up: %v, want it absent", dir, err)
		}
	}
}

// stallingManifestFS makes, once armed, each sync of a MANIFEST of the log
// in /data wait until release is closed, as a device that stops answering
// does; stalled is closed as the first waits.
type stallingManifestFS struct {
	vfs.FS
	armed     *atomic.Bool
	release   chan struct{}
	stalled   chan struct{}
	onceStall *sync.Once
}

func (fs stallingManifestFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	if err != nil || !strings.HasPrefix(name, "/data/") || !strings.Contains(filepath.Base(name), "MANIFEST") {
		return f, err
	}
	return stallingManifestFile{File: f, fs: fs}, nil
}

type stallingManifestFile struct {
	vfs.File
	fs stallingManifestFS
}

func (f stallingManifestFile) Sync() error {
	if f.fs.armed.Load() {
		f.fs.onceStall.Do(func() { close(f.fs.stalled) })
		<-f.fs.release
	}
	return f.File.Sync()
}

// A backup begun while a write of the MANIFEST waits for a disk that does
// not answer (here, a flush's) is given up after the write timeout,
// saying so, as a backup whose flush of the log waits is: its checkpoint
// waits for the MANIFEST's write before it copies anything. Nothing of it
// is left, nor written once the disk answers again, and a backup then
// works (before, its caller waited for as long as the disk did).
func TestBackupBehindStalledManifest(t *testing.T) {
	t.Parallel()
	fs := stallingManifestFS{FS: vfs.NewMem(), armed: &atomic.Bool{}, release: make(chan struct{}),
		stalled: make(chan struct{}), onceStall: &sync.Once{}}
	const timeout = time.Second
	s, err := pebblestore.Open(t.Context(), "/data", pebblestore.Options{FS: fs, WriteTimeout: timeout,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	free := func() { once.Do(func() { close(fs.release) }) }
	defer s.Close()
	defer free()
	removedQueue(t, s, 1, "before")
	fs.armed.Store(true)
	flushed := make(chan error, 1)
	go func() { flushed <- pebblestore.FlushLog(s) }()
	select {
	case <-fs.stalled:
	case <-time.After(time.Minute):
		t.Fatal("the flush wrote no MANIFEST")
	}
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- s.Backup(t.Context(), "/backups/b1") }()
	select {
	case err := <-done:
		if took := time.Since(start); !errors.Is(err, baton.ErrUnavailable) || !strings.Contains(err.Error(), "waited") || took > timeout+10*time.Second {
			t.Errorf("backup behind a MANIFEST the disk does not write: %v after %v, want ErrUnavailable saying it waited, after about %v", err, took, timeout)
		}
	case <-time.After(timeout + 20*time.Second):
		t.Error("the backup behind a MANIFEST the disk does not write did not return within the write timeout and 20 s")
	}
	fs.armed.Store(false)
	free()
	if err := <-flushed; err != nil {
		t.Errorf("the flush, once the disk answers: %v", err)
	}
	if err := s.Backup(t.Context(), "/backups/b2"); err != nil {
		t.Errorf("backup once the disk answers: %v", err)
	}
	for _, dir := range []string{"/backups/b1", "/backups/b1.partial"} {
		if _, err := fs.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s, given up: %v, want it absent", dir, err)
		}
	}
}
