package pebblestore

import (
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/baton-sqs/baton"
)

// partialSuffix names the directory a backup is written into before it is
// renamed to its destination.
const partialSuffix = ".partial"

// Backup writes into dest, a directory that must not exist, a copy of the
// data directory as it stands during the call, which Open opens as any
// data directory: the log with every change committed before Backup was
// called (and perhaps some committed while it ran), and the directory's
// other files, the receipt key among them. The store serves meanwhile. The
// log's tables are hard links to the store's where the file system allows
// (tables never change once written), else copies. Every file of the copy
// is synced, and dest appears, by a rename, only once complete. It is
// written in dest+".partial", which a failed backup removes: its hard
// links would keep on the disk, for good, the tables the store compacts
// away (the error names it if the disk fails its removal too). Each
// backup first removes the unfinished copies a stopped process left
// beside dest (RemoveUnfinishedBackups).
//
// A backup whose ctx ends before its copy is renamed into place is given
// up: it stops at its next step, removes its copy, and returns the
// context's error once it has.
//
// The checkpoint's steps on the log, its flush of it and its wait for any
// write of the MANIFEST under way, wait for good behind a write of the
// log that failed (walwatch.go), and as long as the disk does not
// answer. Once a write failed Backup refuses at once, and a backup begun
// before the failure returns as soon as it fails, with the failure, or
// once its steps on the log have waited the write timeout, and removes
// the unfinished copy. The goroutine writing it is left waiting behind
// the disk (behind a failed write, until the process ends, as Pebble
// is), and never renames what it wrote: should it ever go on, it removes
// it.
func (s *Store) Backup(ctx context.Context, dest string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.health.wal.refusal(); err != nil {
		return fmt.Errorf("pebblestore: backup to %s: %w", dest, err)
	}
	b := &backupRun{dest: filepath.Clean(dest), onLog: make(chan struct{}), offLog: make(chan struct{})}
	if !s.backups.begin(b) {
		return fmt.Errorf("%w: pebblestore: backup to %s: the store is closing", baton.ErrUnavailable, dest)
	}
	done := make(chan error, 1)
	go func() {
		err := s.backup(b)
		s.backups.end(b) // before the answer: a Close it held is done with
		done <- err
	}()
	if err := s.awaitBackup(ctx, b, done); err != nil {
		return fmt.Errorf("pebblestore: backup to %s: %w", dest, err)
	}
	return nil
}

// awaitBackup waits for b, done once it ended. It gives it up once a
// write of the log failed, or when its steps on the log have waited the
// write timeout for the disk (a device that does not answer): what waits
// behind the disk could wait for good; it removes the unfinished copy
// itself. It gives it up too when ctx ends, and then waits for it to end,
// removing its copy as it does.
func (s *Store) awaitBackup(ctx context.Context, b *backupRun, done <-chan error) error {
	onLog, offLog, ctxDone := b.onLog, b.offLog, ctx.Done()
	var (
		t         *time.Timer
		timeout   <-chan time.Time
		cancelled error
	)
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	for {
		var why error
		select {
		case err := <-done:
			if cancelled != nil && err != nil {
				return fmt.Errorf("given up: %w (%w)", cancelled, err)
			}
			return err
		case <-onLog:
			onLog = nil
			t = time.NewTimer(s.w.timeout)
			timeout = t.C
			continue
		case <-offLog:
			onLog, offLog, timeout = nil, nil, nil
			continue
		case <-ctxDone:
			ctxDone = nil
			if b.abandon() {
				cancelled = ctx.Err()
			}
			continue // it ends soon, removing its copy (or renaming it: it is whole)
		case <-timeout:
			why = fmt.Errorf("%w: pebblestore: the backup's steps on the log (its flush, and its wait for a write of the MANIFEST under way) have waited %v for the disk", baton.ErrUnavailable, s.w.timeout)
		case <-s.health.wal.failedWrites():
			why = s.health.wal.refusal()
		}
		if !b.abandon() {
			return <-done // it was renaming: the copy is whole
		}
		return s.removePartial(b.dest+partialSuffix, fmt.Errorf("given up: %w", why))
	}
}

// backupRun is a backup under way: where it goes, and whether it may
// still be renamed into place.
type backupRun struct {
	dest string
	// onLog is closed as the backup's steps on the log begin: the
	// checkpoint, which first flushes the log.
	onLog chan struct{}
	// offLog is closed once the backup's steps on the log are done: its
	// checkpoint has created the copy's directory of the log
	// (checkpointFS), having flushed the log and waited for any write of
	// the MANIFEST under way.
	offLog     chan struct{}
	offLogOnce sync.Once
	state      atomic.Int32
}

// The states of a backupRun: it copies; it renames the complete copy into
// place; or it was given up (its caller answered without it, or gone),
// and it is not to be renamed.
const (
	backupCopying = iota
	backupRenaming
	backupAbandoned
)

// abandon gives b up, and reports true, unless it is renaming its copy
// into place.
func (b *backupRun) abandon() bool {
	return b.state.CompareAndSwap(backupCopying, backupAbandoned) || b.state.Load() == backupAbandoned
}

// leftLog tells b its checkpoint is done with the log, and refuses the
// rest of the checkpoint if b was given up.
func (b *backupRun) leftLog() error {
	b.offLogOnce.Do(func() { close(b.offLog) })
	if b.state.Load() == backupAbandoned {
		return errBackupAbandoned
	}
	return nil
}

func (s *Store) backup(b *backupRun) error {
	dest := b.dest
	tmp := dest + partialSuffix
	s.removeUnfinished(filepath.Dir(dest), b)
	for _, p := range []string{dest, tmp} {
		switch _, err := s.fs.Stat(p); {
		case err == nil:
			return fmt.Errorf("%s exists", p)
		case !errors.Is(err, iofs.ErrNotExist):
			return err
		}
	}
	if err := makeDir(s.fs, tmp); err != nil {
		return s.removePartial(tmp, err)
	}
	if err := s.writeOwner(tmp); err != nil {
		return s.removePartial(tmp, err)
	}
	if err := s.writeCopy(b, tmp); err != nil {
		return s.removePartial(tmp, err)
	}
	if !b.state.CompareAndSwap(backupCopying, backupRenaming) {
		return s.removePartial(tmp, errBackupAbandoned)
	}
	if err := s.fs.Rename(tmp, dest); err != nil {
		return s.removePartial(tmp, err)
	}
	return syncDir(s.fs, filepath.Dir(dest))
}

// removePartial removes tmp, the copy of a backup that failed with err,
// and returns err, saying so if the removal failed too. A copy never made
// is no failure to remove (a read-only file system fails the removal of a
// name it does not hold, EROFS, as it failed the copy's creation).
func (s *Store) removePartial(tmp string, err error) error {
	if _, serr := s.fs.Stat(tmp); errors.Is(serr, iofs.ErrNotExist) {
		return err
	}
	if rerr := s.fs.RemoveAll(tmp); rerr != nil {
		return fmt.Errorf("%w (and its unfinished copy could not be removed: %v; remove %s, whose links keep on the disk tables the store no longer needs)",
			err, rerr, tmp)
	}
	return err
}

// errBackupAbandoned is the end of a backup given up before it ended.
var errBackupAbandoned = errors.New("the backup was given up before it ended")

// writeCopy writes the copy of the data directory into tmp, every file
// of it synced, for b.
func (s *Store) writeCopy(b *backupRun, tmp string) error {
	if b.state.Load() == backupAbandoned {
		return errBackupAbandoned
	}
	close(b.onLog)
	if err := s.checkpoint(filepath.Join(tmp, LogDir)); err != nil {
		return err
	}
	if err := s.copyOtherFiles(tmp); err != nil {
		return err
	}
	// A relaxed log's files skip fsync: sync the copy's through the file
	// system itself.
	if err := syncFiles(s.fs, filepath.Join(tmp, LogDir)); err != nil {
		return err
	}
	// Complete: no longer an unfinished copy, nor a file of the data
	// directory the copy is.
	if err := s.fs.Remove(filepath.Join(tmp, UnfinishedBackupFile)); err != nil {
		return err
	}
	return syncDir(s.fs, tmp)
}

// checkpoint writes into dir a copy of the log, flushed and synced first:
// it holds every commit made so far, whatever the durability. Pebble
// panics when the disk fails a sync of the copy's directory, made as it
// writes the marker naming the copy's MANIFEST or format (it holds none
// of its locks then): that is the backup's failure, returned as its
// error, not the server's. Any other panic goes on.
func (s *Store) checkpoint(dir string) (err error) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		var perr *iofs.PathError
		if rerr, ok := r.(error); ok && errors.As(rerr, &perr) && filepath.Clean(perr.Path) == dir {
			err = fmt.Errorf("write the copy of the log: %w", rerr)
			return
		}
		panic(r)
	}()
	return s.db.Checkpoint(dir, pebble.WithFlushedWAL())
}

// copyOtherFiles copies into dir, synced, the regular files of the data
// directory but the lock: the receipt key, which the server keeps there.
func (s *Store) copyOtherFiles(dir string) error {
	names, err := s.fs.List(s.dir)
	if err != nil {
		return err
	}
	for _, name := range names {
		if name == LockFile || name == LogDir {
			continue
		}
		path := filepath.Join(s.dir, name)
		st, err := s.fs.Stat(path)
		if err != nil {
			return err
		}
		if !st.Mode().IsRegular() {
			continue
		}
		if err := copyFile(s.fs, path, filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}

// copyFile copies src to dst, a new file, and syncs it.
func copyFile(fs vfs.FS, src, dst string) error {
	in, err := fs.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := fs.Create(dst, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// syncFiles syncs every file in dir.
func syncFiles(fs vfs.FS, dir string) error {
	names, err := fs.List(dir)
	if err != nil {
		return err
	}
	for _, name := range names {
		f, err := fs.OpenReadWrite(filepath.Join(dir, name), vfs.WriteCategoryUnspecified)
		if err != nil {
			return err
		}
		err = f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("sync %s: %w", name, err)
		}
	}
	return nil
}

// backupSet counts the backups running, for Close to wait for them: the
// copy holds parts of the log until it ends. It knows each by its copy's
// directory, for checkpointFS and removeUnfinished.
type backupSet struct {
	mu      sync.Mutex
	running map[*backupRun]struct{}
	closing bool
	// idle is closed once none runs after close; then, if set, runs then.
	idle chan struct{}
	then func()
}

// begin counts b beginning; false once the store is closing.
func (b *backupSet) begin(r *backupRun) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closing {
		return false
	}
	if b.running == nil {
		b.running = make(map[*backupRun]struct{})
	}
	b.running[r] = struct{}{}
	return true
}

// end counts r ended.
func (b *backupSet) end(r *backupRun) {
	b.mu.Lock()
	delete(b.running, r)
	var then func()
	if len(b.running) == 0 && b.idle != nil {
		close(b.idle)
		b.idle, then, b.then = nil, b.then, nil
	}
	b.mu.Unlock()
	if then != nil {
		then()
	}
}

// writing returns the backup running, other than but, whose copy is
// written in partial (dest+".partial"), or nil.
func (b *backupSet) writing(partial string, but *backupRun) *backupRun {
	b.mu.Lock()
	defer b.mu.Unlock()
	for r := range b.running {
		if r != but && r.dest+partialSuffix == partial {
			return r
		}
	}
	return nil
}

// afterLast has f run once the last backup running ends, and reports
// true; false, with f not run, if none runs.
func (b *backupSet) afterLast(f func()) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.running) == 0 {
		return false
	}
	b.then = f
	return true
}

// close refuses backups from now on, and returns a channel closed once
// none runs.
func (b *backupSet) close() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closing = true
	idle := make(chan struct{})
	if len(b.running) == 0 {
		close(idle)
	} else {
		b.idle = idle
	}
	return idle
}

// checkpointFS is the file system the log is written through. It tells a
// running backup when its checkpoint creates the copy's directory of the
// log: Pebble's checkpoint has then flushed the log and waited for any
// write of the MANIFEST under way, and is done with the log. A backup
// given up meanwhile has its checkpoint refused there.
type checkpointFS struct {
	vfs.FS
	backups *backupSet
}

func (fs checkpointFS) MkdirAll(dir string, perm os.FileMode) error {
	if filepath.Base(dir) == LogDir {
		if r := fs.backups.writing(filepath.Dir(filepath.Clean(dir)), nil); r != nil {
			if err := r.leftLog(); err != nil {
				return err
			}
		}
	}
	return fs.FS.MkdirAll(dir, perm)
}
