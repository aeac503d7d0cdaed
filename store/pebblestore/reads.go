package pebblestore

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// A disk that fails a read of a table (an I/O error: a bad sector, a
// failing device) fails the call that read it, which answers 503, and the
// compactions that read it, which Pebble tries again at once (the pacer
// holds each failed try a while): the table is logged once and named by
// Ping while its reads fail (health.go).

// failingReads is what the store knows of a table whose reads the disk fails:
// since when, how often, the last error, and where in the file the reads
// that failed were (spans).
type failingReads struct {
	since, last time.Time
	count       int64
	err         error
	spans       []byteSpan
}

// byteSpan is a range of a file's bytes: n of them from off.
type byteSpan struct{ off, n int64 }

// maxProbeSpans is how many spans of a table's failed reads the store
// keeps apart; beyond them it keeps one span covering them all.
const maxProbeSpans = 16

// add records a failed read of sp.
func (r *failingReads) add(sp byteSpan) {
	if sp.n <= 0 || slices.Contains(r.spans, sp) {
		return
	}
	if len(r.spans) < maxProbeSpans {
		r.spans = append(r.spans, sp)
		return
	}
	lo, hi := sp.off, sp.off+sp.n
	for _, o := range r.spans {
		lo, hi = min(lo, o.off), max(hi, o.off+o.n)
	}
	r.spans = []byteSpan{{off: lo, n: hi - lo}}
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

// readFailed is told of a read of file, a table, that failed with err
// (sp: the bytes it asked for): it logs the first, and Ping names the file
// until probeReads reads them again.
func (h *health) readFailed(file string, sp byteSpan, err error) {
	now := h.clock.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	if r, ok := h.reads[file]; ok {
		r.count++
		r.last, r.err = now, err
		r.add(sp)
		return
	}
	if h.reads == nil {
		h.reads = make(map[string]*failingReads)
	}
	r := &failingReads{since: now, last: now, count: 1, err: err}
	r.add(sp)
	h.reads[file] = r
	h.log.Error("pebblestore: the disk failed a read of a table of the log; the calls and compactions that read what it holds fail (503) while it does",
		"file", file, "problem", diskProblem(err), "err", err.Error())
}

// probeReads reads again, for each table whose reads failed but none for
// staleAfter, the bytes whose reads failed: reads that work (or a table
// gone, compacted away) end its failure, and one that fails keeps it
// named. Nothing else may read the table again (a receive that met it
// once, nothing since), and Ping must not name a failure that is over,
// nor stop naming one that is not. Only those bytes are read (a block
// or a compaction's read-ahead, not the table: a table of the last level
// can be 128 MiB, read whole every staleAfter from a failing disk); a
// read of other bytes that fails names the table again.
func (h *health) probeReads() { h.probeReadsOlder(staleAfter) }

// probeReadsOlder probes the tables whose last failed read is at least age
// old.
func (h *health) probeReadsOlder(age time.Duration) {
	now := h.clock.Now()
	h.mu.Lock()
	stale := make(map[string][]byteSpan)
	for file, r := range h.reads {
		if now.Sub(r.last) >= age {
			stale[file] = slices.Clone(r.spans)
		}
	}
	h.mu.Unlock()
	for file, spans := range stale {
		sp, err := readSpans(h.fs, file, spans)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			h.readFailed(file, sp, err)
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

// readSpans reads the spans of the file name through fsys; the span
// whose read failed, and why, if one did. A span that ends past the end
// of the file is read to its end.
func readSpans(fsys vfs.FS, name string, spans []byteSpan) (byteSpan, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return byteSpan{}, err
	}
	defer f.Close()
	if len(spans) == 0 { // not known: the whole file
		spans = []byteSpan{{off: 0, n: 1 << 62}}
	}
	for _, sp := range spans {
		_, err := io.Copy(io.Discard, io.NewSectionReader(f, sp.off, sp.n))
		if err != nil {
			return sp, err
		}
	}
	return byteSpan{}, nil
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

// tableFile is a table open to read; pos is where Read reads next.
type tableFile struct {
	vfs.File
	h    *health
	name string
	pos  atomic.Int64
}

func (f *tableFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	f.check(byteSpan{off: off, n: int64(len(p))}, err)
	return n, err
}

func (f *tableFile) Read(p []byte) (int, error) {
	off := f.pos.Load()
	n, err := f.File.Read(p)
	f.pos.Add(int64(n))
	f.check(byteSpan{off: off, n: int64(len(p))}, err)
	return n, err
}

func (f *tableFile) check(sp byteSpan, err error) {
	if err != nil && !errors.Is(err, io.EOF) {
		f.h.readFailed(f.name, sp, err)
	}
}
