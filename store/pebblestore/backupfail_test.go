package pebblestore_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/testutil/logbuf"
	"github.com/baton-sqs/baton/store/pebblestore"
)

// backupDirFaultFS fails each sync of the log's directory of a backup
// under /backups (EIO).
type backupDirFaultFS struct{ vfs.FS }

func (fs backupDirFaultFS) OpenDir(name string) (vfs.File, error) {
	f, err := fs.FS.OpenDir(name)
	if err != nil || !strings.HasPrefix(name, "/backups/") || !strings.HasSuffix(name, "/pebble") {
		return f, err
	}
	return failingDirFile{File: f, name: name}, nil
}

type failingDirFile struct {
	vfs.File
	name string
}

func (f failingDirFile) Sync() error {
	return &os.PathError{Op: "sync", Path: f.name, Err: syscall.EIO}
}

// A backup whose directory the disk does not sync (EIO) fails with the
// error, and the store serves on, and backs up elsewhere. (Pebble
// panicked when it could not sync the directory of the marker naming the
// copy's format: the server answered 500, or stopped.)
func TestBackupDirSyncFails(t *testing.T) {
	t.Parallel()
	s, err := pebblestore.Open(t.Context(), "/data", pebblestore.Options{FS: backupDirFaultFS{FS: vfs.NewMem()}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	q := removedQueue(t, s, 1, "before")
	err = s.Backup(t.Context(), "/backups/b1")
	if err == nil || !errors.Is(err, syscall.EIO) {
		t.Errorf("backup onto a directory that does not sync: %v, want the EIO", err)
	}
	if err := removedSend(t, s, q, "after"); err != nil {
		t.Errorf("send after the failed backup: %v", err)
	}
	if err := s.Backup(t.Context(), "/elsewhere/b2"); err != nil {
		t.Errorf("backup elsewhere after the failed one: %v", err)
	}
}

// fullBackupFS fails, with ENOSPC, the creation of each file a backup
// copies beside its log (after Pebble's copy of the log: its tables hard
// links to the store's), as a disk that fills during the backup does.
type fullBackupFS struct{ vfs.FS }

func (fs fullBackupFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	if strings.HasPrefix(name, "/backups/") && strings.HasSuffix(filepath.Dir(name), ".partial") {
		return nil, &os.PathError{Op: "open", Path: name, Err: syscall.ENOSPC}
	}
	return fs.FS.Create(name, c)
}

// A backup that fails removes what it copied: its tables, hard links to
// the store's, would keep on the disk for good the tables the store
// compacts away (before, it left them in DEST.partial, and the error did
// not say so).
func TestBackupFailureRemovesItsCopy(t *testing.T) {
	t.Parallel()
	mem := vfs.NewMem()
	s, err := pebblestore.Open(t.Context(), "/data", pebblestore.Options{FS: fullBackupFS{FS: mem}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	q := removedQueue(t, s, 1, "before")
	pebblestore.Flush(t, s)
	err = s.Backup(t.Context(), "/backups/b1")
	if !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("backup onto a full disk: %v, want the ENOSPC", err)
	}
	for _, dir := range []string{"/backups/b1", "/backups/b1.partial"} {
		if _, err := mem.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after the failed backup: %v, want it absent", dir, err)
		}
	}
	if err := removedSend(t, s, q, "after"); err != nil {
		t.Errorf("send after the failed backup: %v", err)
	}
}

// readOnlyBackupFS is a read-only file system under /backups: each
// creation and removal there fails (EROFS), that of a name it does not
// hold included, as Linux's do.
type readOnlyBackupFS struct{ vfs.FS }

func (fs readOnlyBackupFS) MkdirAll(dir string, perm os.FileMode) error {
	if strings.HasPrefix(dir, "/backups/") {
		return &os.PathError{Op: "mkdir", Path: dir, Err: syscall.EROFS}
	}
	return fs.FS.MkdirAll(dir, perm)
}

func (fs readOnlyBackupFS) RemoveAll(name string) error {
	if strings.HasPrefix(name, "/backups/") {
		return &os.PathError{Op: "unlinkat", Path: name, Err: syscall.EROFS}
	}
	return fs.FS.RemoveAll(name)
}

// A backup onto a read-only file system fails with EROFS, and says only
// that: it made nothing. Before, it said its unfinished copy could not be
// removed and was to be removed by hand, holding tables on the disk: the
// removal of the copy it never made had failed with EROFS too.
func TestBackupOntoReadOnlyDisk(t *testing.T) {
	t.Parallel()
	s, err := pebblestore.Open(t.Context(), "/data", pebblestore.Options{FS: readOnlyBackupFS{FS: vfs.NewMem()}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	removedQueue(t, s, 1, "before")
	err = s.Backup(t.Context(), "/backups/b1")
	if !errors.Is(err, syscall.EROFS) || strings.Contains(err.Error(), "could not be removed") {
		t.Errorf("backup onto a read-only disk: %v, want the EROFS of its creation alone", err)
	}
}

// slowBackupFS makes each file a backup creates under /backups take a
// while, as a slow backup disk, or a large store, does.
type slowBackupFS struct{ vfs.FS }

func (fs slowBackupFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	if strings.HasPrefix(name, "/backups/") {
		time.Sleep(time.Second)
	}
	return fs.FS.Create(name, c)
}

// A store closed while a backup runs (the server stopped in the middle
// of one) waits for it a while, and if it still runs leaves Pebble open
// for it, saying so; the backup ends whole, later ones are refused, and
// the store opens again on what it acknowledged. Before, Close closed
// Pebble under the backup and reported "leaked iterators", the backup's
// hold on the log.
func TestCloseDuringBackup(t *testing.T) {
	t.Parallel()
	mem := vfs.NewMem()
	s, err := pebblestore.Open(t.Context(), "/data", pebblestore.Options{FS: slowBackupFS{FS: mem}, WriteTimeout: time.Second,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	q := removedQueue(t, s, 1, "before")
	pebblestore.Flush(t, s)
	done := make(chan error, 1)
	go func() { done <- s.Backup(t.Context(), "/backups/b1") }()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := mem.Stat("/backups/b1.partial"); err == nil {
			break
		}
	}
	err = s.Close()
	if err != nil && !strings.Contains(err.Error(), "a backup was still running") {
		t.Errorf("Close during a backup: %v, want nil or that a backup still ran", err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("the backup the store closed under: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the backup the store closed under did not end")
	}
	if err := s.Backup(t.Context(), "/backups/b2"); !errors.Is(err, baton.ErrUnavailable) {
		t.Errorf("backup after Close: %v, want ErrUnavailable", err)
	}
	for _, dir := range []string{"/backups/b1", "/data"} {
		r, err := pebblestore.Open(t.Context(), dir, pebblestore.Options{FS: mem, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Errorf("open %s: %v", dir, err)
			continue
		}
		if got := idsOf(receive(t, r, q.ID, base, at(lease), 10)); len(got) != 1 || got[0] != "before" {
			t.Errorf("%s holds %v, want before", dir, got)
		}
		r.Close()
	}
}

// awaitPath waits, a minute at most, for path to exist on fs.
func awaitPath(t *testing.T, fs vfs.FS, path string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := fs.Stat(path); err == nil {
			return
		}
	}
	t.Fatalf("%s did not appear", path)
}

// writePartial makes dir, a directory named like an unfinished backup,
// holding a file, and, unless owner is "", the mark naming owner's data
// directory.
func writePartial(t *testing.T, fs vfs.FS, dir, owner string) {
	t.Helper()
	files := map[string]string{"x": "x"}
	if owner != "" {
		files[pebblestore.UnfinishedBackupFile] = owner + "\n"
	}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range files {
		f, err := fs.Create(filepath.Join(dir, name), vfs.WriteCategoryUnspecified)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte(data)); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// A process stopped in the middle of a backup (here, the machine lost
// its power) leaves DEST.partial, its tables hard links to the store's:
// the next backup, or the server's start (RemoveUnfinishedBackups),
// removes it, saying so, and leaves alone, saying so, what is not
// provably an unfinished copy of this data directory's. Before, it was
// left for good, and nobody was told.
func TestUnfinishedBackupRemoved(t *testing.T) {
	t.Parallel()
	mem := vfs.NewCrashableMem()
	s, err := pebblestore.Open(t.Context(), "/data", pebblestore.Options{FS: slowBackupFS{FS: mem}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	q := removedQueue(t, s, 1, "before")
	pebblestore.Flush(t, s)
	done := make(chan error, 1)
	go func() { done <- s.Backup(t.Context(), "/backups/b1") }()
	awaitPath(t, mem, "/backups/b1.partial/pebble")
	crashed := []*vfs.MemFS{mem.CrashClone(vfs.CrashCloneCfg{}), mem.CrashClone(vfs.CrashCloneCfg{})}
	if err := <-done; err != nil {
		t.Errorf("the backup the machine crashed under: %v", err)
	}
	s.Close()

	for i, how := range []string{"the next backup", "RemoveUnfinishedBackups"} {
		fs := crashed[i]
		if _, err := fs.Stat("/backups/b1.partial/pebble"); err != nil {
			t.Fatalf("the unfinished copy after the crash: %v, want it there", err)
		}
		writePartial(t, fs, "/backups/unmarked.partial", "")
		writePartial(t, fs, "/backups/another.partial", "/elsewhere")
		writePartial(t, fs, "/backups/notpartial", "/data")
		var buf logbuf.Buffer
		r, err := pebblestore.Open(t.Context(), "/data", pebblestore.Options{FS: fs, Logger: slog.New(slog.NewTextHandler(&buf, nil))})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if err := r.Backup(t.Context(), "/backups/b2"); err != nil {
				t.Errorf("%s: %v", how, err)
			}
		} else {
			r.RemoveUnfinishedBackups("/backups")
		}
		if _, err := fs.Stat("/backups/b1.partial"); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("after %s, the unfinished copy: %v, want it removed", how, err)
		}
		for _, dir := range []string{"/backups/unmarked.partial/x", "/backups/another.partial/x", "/backups/notpartial/x"} {
			if _, err := fs.Stat(dir); err != nil {
				t.Errorf("after %s, %s: %v, want it left alone", how, dir, err)
			}
		}
		log := buf.String()
		for _, want := range []string{
			`removed the unfinished copy of a backup a stopped process left" path=/backups/b1.partial`,
			`it is not marked as one" path=/backups/unmarked.partial`,
			`another data directory's backup" path=/backups/another.partial of=/elsewhere`,
		} {
			if !strings.Contains(log, want) {
				t.Errorf("after %s, the log lacks %q:\n%s", how, want, log)
			}
		}
		if got := idsOf(receive(t, r, q.ID, base, at(lease), 10)); len(got) != 1 || got[0] != "before" {
			t.Errorf("after %s, the store holds %v, want before", how, got)
		}
		r.Close()
	}
}

// A backup whose caller gives up (the HTTP request cancelled) stops, and
// returns the context's error once it has removed its copy: nothing of it
// is left. Before, it ran on to its end, and left a backup nobody was
// told of.
func TestBackupGivenUpByItsCaller(t *testing.T) {
	t.Parallel()
	mem := vfs.NewMem()
	s, err := pebblestore.Open(t.Context(), "/data", pebblestore.Options{FS: slowBackupFS{FS: mem}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	removedQueue(t, s, 1, "before")
	pebblestore.Flush(t, s)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Backup(ctx, "/backups/b1") }()
	awaitPath(t, mem, "/backups/b1.partial")
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("backup whose caller gave up: %v, want context.Canceled", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the backup whose caller gave up did not return")
	}
	for _, dir := range []string{"/backups/b1", "/backups/b1.partial"} {
		if _, err := mem.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s after its caller gave up: %v, want it absent", dir, err)
		}
	}
	if err := s.Backup(t.Context(), "/backups/b2"); err != nil {
		t.Errorf("backup after one given up: %v", err)
	}
}
