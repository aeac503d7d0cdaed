package pebblestore

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// A disk that fails a read of a table (an I/O error: a bad sector, a
// failing device) fails the call that read it, which answers 503, and the
// compactions that read it, which Pebble tries again at once (the pacer
// holds each failed try a while): the table is logged once and named by
// Ping while its reads fail (health.go).

// failingReads is what the store knows of a table whose reads the disk fails:
// since when, how often, and the last error.
type failingReads struct {
	since, last time.Time
	count       int64
	err         error
}

// readFault reports whether err is, or wraps, a read of a file that the
// disk failed (not a checksum: that is damage, pebble.IsCorruptionError).
func readFault(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && pe.Op == "read"
}

// unreadableAdvice is what the log line of a read that failed with err
// tells the operator to do: a disk failing reads is to be checked (Ping
// names the table), a damaged table is found by `baton store check`.
func unreadableAdvice(err error) string {
	if readFault(err) {
		return "The disk is failing reads: check it (its kernel log); /healthz names the table"
	}
	return "Run `baton store check`"
}

// readFailed is told of a read of file, a table, that failed with err: it
// logs the first, and Ping names the file until probeReads reads it whole.
func (h *health) readFailed(file string, err error) {
	now := h.clock.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	if r, ok := h.reads[file]; ok {
		r.count++
		r.last, r.err = now, err
		return
	}
	if h.reads == nil {
		h.reads = make(map[string]*failingReads)
	}
	h.reads[file] = &failingReads{since: now, last: now, count: 1, err: err}
	h.log.Error("pebblestore: the disk failed a read of a table of the log; the calls and compactions that read what it holds fail (503) while it does",
		"file", file, "problem", diskProblem(err), "err", err.Error())
}

// probeReads reads again, whole, each table whose reads failed but none
// for staleAfter: a read that works (or a table gone, compacted away)
// ends its failure, and one that fails keeps it named. Nothing else may
// read the table again (a receive that met it once, nothing since), and
// Ping must not name a failure that is over, nor stop naming one that is
// not.
func (h *health) probeReads() { h.probeReadsOlder(staleAfter) }

// probeReadsOlder probes the tables whose last failed read is at least age
// old.
func (h *health) probeReadsOlder(age time.Duration) {
	now := h.clock.Now()
	h.mu.Lock()
	var stale []string
	for file, r := range h.reads {
		if now.Sub(r.last) >= age {
			stale = append(stale, file)
		}
	}
	h.mu.Unlock()
	for _, file := range stale {
		err := readWhole(h.fs, file)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			h.readFailed(file, err)
			continue
		}
		h.mu.Lock()
		r := h.reads[file]
		delete(h.reads, file)
		h.mu.Unlock()
		why := "pebblestore: the disk reads the table again"
		if err != nil {
			why = "pebblestore: the table whose reads failed is no longer in the log"
		}
		h.log.Warn(why, "file", file, "failures", r.count, "after", now.Sub(r.since).Round(time.Millisecond))
	}
}

// readWhole reads the file name through fsys, to its end.
func readWhole(fsys vfs.FS, name string) error {
	f, err := fsys.Open(name)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, io.NewSectionReader(f, 0, 1<<62))
	return errors.Join(err, f.Close())
}

// Open opens a file to read: a table's failed reads are told to health
// (readFailed).
func (fs diskFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.Open(name, opts...)
	if err != nil || !strings.HasSuffix(name, ".sst") {
		return f, err
	}
	return &tableFile{File: f, h: fs.h, name: name}, nil
}

// tableFile is a table open to read.
type tableFile struct {
	vfs.File
	h    *health
	name string
}

func (f *tableFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	f.check(err)
	return n, err
}

func (f *tableFile) Read(p []byte) (int, error) {
	n, err := f.File.Read(p)
	f.check(err)
	return n, err
}

func (f *tableFile) check(err error) {
	if err != nil && !errors.Is(err, io.EOF) {
		f.h.readFailed(f.name, err)
	}
}
