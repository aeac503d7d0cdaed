package pebblestore

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/baton-sqs/baton/clock"
)

// filesWatch finds a file of the log other than its write-ahead log
// removed under the running server: a table, the current MANIFEST (the
// list of the tables) or the marker that names it (a cleanup job, an rm
// of a file of the data directory). Pebble keeps the files it has open,
// and goes on reading and writing them, so nothing fails while the
// server runs; but the next start cannot open the log without them, and
// every change acknowledged, before the removal and after it, is out of
// reach (`baton store salvage` cannot read a log Pebble cannot open),
// while /healthz answered 200. Once one is gone walWatch refuses every
// change, for good, as when the write-ahead log is removed.
//
// A look is one listing of the log's directory, and Pebble's list of its
// tables. One is made whenever the directory's modification time has
// changed since the last (a file created, removed or renamed in it: one
// stat, made with each look at the write-ahead log, so after each commit
// under DurabilityFull), at a Ping, and at least once each
// filesCheckEvery (after a commit, and on the idle loop's tick): a
// directory's time is kept coarsely (to the kernel's tick), so a file
// removed within the tick of the last look is found only then. A change
// acknowledged before the removal is found is lost with the rest.
type filesWatch struct {
	fs  vfs.FS
	dir string
	// checked is when the files were last looked at, in Unix nanoseconds;
	// stamp the directory's modification time then.
	checked atomic.Int64
	stamp   atomic.Int64
	// mu is held by a look, and by stop: db is nil once the log closes.
	mu sync.Mutex
	db *pebble.DB
	// noFormat is, while the last look found the marker of the log's
	// format (marker.format-version.*) gone, the one to make again.
	// Pebble never reads it again while it runs, so nothing fails, and
	// nothing is lost; but the next start refuses the log without it
	// (missingFormatMarker): Ping names it, and changes go on.
	noFormat atomic.Pointer[string]
}

// filesCheckEvery is how often the log's files are looked at, at most.
const filesCheckEvery = time.Second

// due reports whether it is time to look again, and claims the look;
// with stat, also whether the log's directory changed since the last.
func (f *filesWatch) due(stat bool) bool {
	now := clock.System{}.Now().UnixNano()
	last := f.checked.Load()
	if now-last >= int64(filesCheckEvery) && f.checked.CompareAndSwap(last, now) {
		return true
	}
	return stat && f.modified() != f.stamp.Load()
}

// modified is the log's directory's modification time, in Unix
// nanoseconds (0 if it cannot be had).
func (f *filesWatch) modified() int64 {
	info, err := f.fs.Stat(f.dir)
	if err != nil {
		return 0
	}
	return info.ModTime().UnixNano()
}

// stop ends the looks, before the log closes.
func (f *filesWatch) stop() {
	if f == nil {
		return
	}
	f.mu.Lock()
	f.db = nil
	f.mu.Unlock()
}

// missing returns a file of the log gone from its directory, and what it
// is; "" if none is (or it cannot tell: the disk's own trouble, or the
// directory itself gone, is found apart).
func (f *filesWatch) missing() (name, what string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.db == nil {
		return "", ""
	}
	stamp := f.modified()
	present, manifest, ok := f.list()
	if !ok {
		return "", ""
	}
	f.lookFormat(present)
	if manifest == "" {
		// A listing taken while Pebble moves the marker (it writes the
		// next, then removes the one before) may miss both: gone only if
		// the next listing finds none either.
		if present, manifest, ok = f.list(); !ok {
			return "", ""
		}
		if manifest == "" {
			return f.fs.PathJoin(f.dir, markerPrefix+"manifest.…"), "the marker naming the current MANIFEST"
		}
	}
	if !present[manifest] && f.gone(manifest) {
		// The marker moves to a new MANIFEST before the old one is
		// removed: gone only if it still names it.
		if _, again, ok := f.list(); ok && again == manifest {
			return f.fs.PathJoin(f.dir, manifest), "the current MANIFEST (the list of the log's tables)"
		}
	}
	for _, t := range f.tables() {
		if !present[t] && f.gone(t) && f.live(t) {
			return f.fs.PathJoin(f.dir, t), "a table of the log"
		}
	}
	f.stamp.Store(stamp)
	return "", ""
}

// lookFormat notes whether the marker of the log's format is among the
// names present (noFormat).
func (f *filesWatch) lookFormat(present map[string]bool) {
	for n := range present {
		if strings.HasPrefix(n, markerPrefix+"format-version.") {
			f.noFormat.Store(nil)
			return
		}
	}
	marker := formatMarker(f.fs, f.dir, f.db.FormatMajorVersion())
	f.noFormat.Store(&marker)
}

// formatProblem names the marker of the log's format gone, for Ping; ""
// while it is there.
func (f *filesWatch) formatProblem() string {
	if f == nil {
		return ""
	}
	m := f.noFormat.Load()
	if m == nil {
		return ""
	}
	return fmt.Sprintf("the marker of the log's format was removed while the server runs: the next start would refuse "+
		"the log. Nothing is lost: make it again, `touch %s`", *m)
}

// list returns the names in the log's directory, and the MANIFEST its
// marker names ("" if there is no marker).
func (f *filesWatch) list() (present map[string]bool, manifest string, ok bool) {
	names, err := f.fs.List(f.dir)
	if err != nil {
		return nil, "", false
	}
	present = make(map[string]bool, len(names))
	iter := ""
	for _, n := range names {
		present[n] = true
		// marker.manifest.000005.MANIFEST-000028: the highest iteration
		// is the marker (Pebble writes the next before removing it).
		if rest, found := strings.CutPrefix(n, markerPrefix+"manifest."); found {
			if i, m, found := strings.Cut(rest, "."); found && i > iter {
				iter, manifest = i, m
			}
		}
	}
	return present, manifest, true
}

// tables returns the names of the log's tables.
func (f *filesWatch) tables() []string {
	levels, err := f.db.SSTables()
	if err != nil {
		return nil
	}
	var out []string
	for _, level := range levels {
		for _, t := range level {
			out = append(out, t.BackingSSTNum.String()+".sst")
		}
	}
	return out
}

// gone reports whether name is not in the log's directory now: a listing
// taken while a file was created may miss it.
func (f *filesWatch) gone(name string) bool {
	_, err := f.fs.Stat(f.fs.PathJoin(f.dir, name))
	return errors.Is(err, os.ErrNotExist)
}

// live reports whether the table name is still one of the log's: one
// compacted away since the listing is removed by Pebble itself.
func (f *filesWatch) live(name string) bool {
	for _, t := range f.tables() {
		if t == name {
			return true
		}
	}
	return false
}
