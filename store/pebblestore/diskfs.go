package pebblestore

import (
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// diskFS is the file system the log runs on: the given one, whose writes
// it times (health logs those slower than its threshold when they end),
// and whose failed background writes (flushes, compactions) it makes wait
// before they fail, longer each time (health.backoff): Pebble tries a
// failed flush again at once, for ever.
//
// Pebble's disk-health checks wrap it (watchDisk), reporting an operation
// while it is still slow.
type diskFS struct {
	vfs.FS
	h *health
}

// watchDisk returns fs as the log sees it, and the closer of its
// disk-health checks, to be closed after the log.
func watchDisk(fs vfs.FS, h *health) (vfs.FS, io.Closer) {
	return vfs.WithDiskHealthChecks(diskFS{FS: fs, h: h}, h.slowAfter, nil, h.slowOngoing)
}

// background reports whether files of category are written by flushes and
// compactions, in the background, rather than for a commit (the
// write-ahead log) or once at the log's opening.
func background(category vfs.DiskWriteCategory) bool {
	switch category {
	case "pebble-memtable-flush", "pebble-compaction", "pebble-blob-file-rewrite":
		return true
	}
	return false
}

func (fs diskFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	if err != nil && category == walCategory {
		f, err = fs.awaitLogFile(name, err, func() (vfs.File, error) { return fs.FS.Create(name, category) })
	}
	wf := fs.walOpened(f, err, name, category)
	fs.logOpenFailed(err, name, category)
	return fs.wrap(f, err, name, category, wf)
}

func (fs diskFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, category)
	if err != nil && category == walCategory {
		f, err = fs.awaitLogFile(newname, err, func() (vfs.File, error) {
			// The rename may be done and only the open have failed.
			if _, serr := fs.FS.Stat(newname); serr == nil {
				return fs.FS.OpenReadWrite(newname, category)
			}
			return fs.FS.ReuseForWrite(oldname, newname, category)
		})
	}
	wf := fs.walOpened(f, err, newname, category)
	fs.logOpenFailed(err, newname, category)
	return fs.wrap(f, err, newname, category, wf)
}

// logOpenFailed is told of each file opened to write: a file of the log
// (ofLog) that cannot be created (err, other than a lack awaitLogFile
// waits out: an I/O error, a file system gone read-only) is a failed
// write of the log (logFailed), which Pebble cannot go on from (it
// panics, or stops the process).
func (fs diskFS) logOpenFailed(err error, name string, category vfs.DiskWriteCategory) {
	if err != nil && fs.ofLog(name, category) {
		fs.logFailed(name, "create", err)
	}
}

// ofLog reports whether name, opened to write with category, is a file of
// the log whose failed write Pebble cannot go on from: a write-ahead log,
// a MANIFEST, or a marker of the log's directory. Pebble names its current
// MANIFEST (and the log's format) by an empty file it creates and closes,
// marker.manifest.000002.MANIFEST-000005, and stops the process when
// either fails. (A backup writes its own markers, in its own directory:
// its failure is the backup's.)
func (fs diskFS) ofLog(name string, category vfs.DiskWriteCategory) bool {
	if category == walCategory || category == manifestCategory {
		return true
	}
	return strings.HasPrefix(filepath.Base(name), markerPrefix) && filepath.Dir(filepath.Clean(name)) == filepath.Clean(fs.h.dir)
}

// markerPrefix begins the name of each of Pebble's marker files.
const markerPrefix = "marker."

// OpenDir opens a directory: that of the log is synced after each file
// of the log is created, and a sync of it that fails is a failed write of
// the log (logFailed): Pebble panics when it cannot sync it for its next
// write-ahead log.
func (fs diskFS) OpenDir(name string) (vfs.File, error) {
	f, err := fs.FS.OpenDir(name)
	if err != nil || filepath.Clean(name) != filepath.Clean(fs.h.dir) {
		return f, err
	}
	return &diskFile{File: f, fs: fs, name: name, log: true}, nil
}

// walOpened tells the store's walWatch of a write-ahead log file opened
// to write, and returns what it knows of it (nil for another file).
func (fs diskFS) walOpened(f vfs.File, err error, name string, category vfs.DiskWriteCategory) *walFile {
	if err == nil && category == walCategory {
		return fs.h.wal.opened(fs.FS, name, f)
	}
	return nil
}

// awaitLogFile tries open again, with growing pauses, while opening the
// next write-ahead log file fails for want of something that comes back
// (file descriptors, space): Pebble stops the process when it cannot open
// it, so the commit waits instead, like any commit the disk does not take
// (see health.go), and Ping names the problem meanwhile. Any other error
// is returned at once.
func (fs diskFS) awaitLogFile(name string, err error, open func() (vfs.File, error)) (vfs.File, error) {
	if !exhausted(err) {
		return nil, err
	}
	fs.h.logFileWaiting(name, err)
	for wait := backoffMin; ; wait = min(2*wait, backoffMax) {
		time.Sleep(wait)
		f, err := open()
		if err == nil || !exhausted(err) {
			fs.h.logFileDone(err)
			return f, err
		}
	}
}

func (fs diskFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.OpenReadWrite(name, category, opts...)
	return fs.wrap(f, err, name, category, nil)
}

// manifestCategory is the category of Pebble's MANIFEST files.
const manifestCategory vfs.DiskWriteCategory = "pebble-manifest"

func (fs diskFS) wrap(f vfs.File, err error, name string, category vfs.DiskWriteCategory, wal *walFile) (vfs.File, error) {
	bg := background(category)
	if err != nil {
		if bg {
			fs.pause()
		}
		return f, err
	}
	return &diskFile{File: f, fs: fs, name: name, bg: bg, log: fs.ofLog(name, category), wal: wal}, nil
}

// pause makes a failed background write wait before it returns.
func (fs diskFS) pause() { time.Sleep(fs.h.backoff()) }

// diskFile is a file of diskFS open for writing.
type diskFile struct {
	vfs.File
	fs   diskFS
	name string
	// bg is set for a file a flush or compaction writes; log for a file
	// of the log whose failed write Pebble cannot go on from (ofLog).
	bg, log bool
	// wal is set for a write-ahead log file: it is told how far Pebble
	// wrote it.
	wal *walFile
}

// timed runs a write operation, reports it if it was slow, and makes it
// wait if it failed in the background; a failed write of the log never
// returns (logFailed).
func (f *diskFile) timed(op vfs.OpType, do func() error) error {
	start := f.fs.h.clock.Now()
	err := do()
	if took := f.fs.h.clock.Now().Sub(start); took > f.fs.h.slowAfter {
		f.fs.h.slowDone(op, f.name, took, err)
	}
	if err != nil && f.bg {
		f.fs.pause()
	}
	if err != nil && f.log && op != vfs.OpTypePreallocate {
		f.logFailed(op.String(), err)
	}
	return err
}

// logFailed is a write, sync or close of a file of the log (ofLog) that
// failed with err. Pebble cannot go on from it: handed the error, it
// panics or stops the process, and a sync tried again may succeed
// although the kernel dropped the pages it could not write. So the
// store's walWatch refuses every change from now on, saying why, and the
// failed operation never returns: the commit waiting on it is answered
// unavailable after the write timeout, and nothing after it is written.
func (f *diskFile) logFailed(op string, err error) { f.fs.logFailed(f.name, op, err) }

func (fs diskFS) logFailed(name, op string, err error) {
	fs.h.wal.failed(name, op, err)
	select {}
}

func (f *diskFile) Close() error {
	err := f.File.Close()
	if err != nil && f.log {
		f.logFailed("close", err)
	}
	return err
}

func (f *diskFile) Write(p []byte) (n int, err error) {
	var tail [tailLen]byte
	if f.wal != nil {
		// Copied before the write: a file system may scribble on p once
		// it has written it (Pebble's in-memory one does, in race builds).
		copy(tail[:], p[len(p)-min(len(p), tailLen):])
	}
	err = f.timed(vfs.OpTypeWrite, func() error {
		n, err = f.File.Write(p)
		return err
	})
	if f.wal != nil {
		f.wal.wrote(tail[:min(len(p), tailLen)], p, n)
	}
	return n, err
}

func (f *diskFile) WriteAt(p []byte, off int64) (n int, err error) {
	err = f.timed(vfs.OpTypeWrite, func() error {
		n, err = f.File.WriteAt(p, off)
		return err
	})
	return n, err
}

func (f *diskFile) Sync() error {
	return f.timed(vfs.OpTypeSync, f.File.Sync)
}

func (f *diskFile) SyncData() error {
	return f.timed(vfs.OpTypeSyncData, f.File.SyncData)
}

func (f *diskFile) SyncTo(length int64) (full bool, err error) {
	err = f.timed(vfs.OpTypeSyncTo, func() error {
		full, err = f.File.SyncTo(length)
		return err
	})
	return full, err
}

func (f *diskFile) Preallocate(off, length int64) error {
	return f.timed(vfs.OpTypePreallocate, func() error { return f.File.Preallocate(off, length) })
}
