package pebblestore

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
)

// walWatch refuses changes, for good, once the log cannot go on: its
// write-ahead log file removed, another file of it removed (filesWatch),
// or a write of the log failed.
//
// A write, sync or close of a write-ahead log or MANIFEST that fails
// (an I/O error, a full disk under Pebble), a creation of one that fails,
// a creation or close of the marker naming the current MANIFEST that
// fails, and a failed sync of the log's directory are reported by diskFS, and
// never return (diskFS.logFailed): Pebble panics or stops the process
// on such an error, and after a failed fsync the kernel may have dropped
// the pages it could not write, so a later sync that works proves nothing.
//
// The write-ahead log file Pebble writes must also stay the one the next
// start will read, and hold what was written to it (a file cut short,
// by `truncate` or a shell's `>`, loses what a start would replay). Removed under the running server (the
// data directory deleted, moved away or replaced by another), it takes
// commits and syncs them as before, to a file no start will find: on a
// file system each call would be acknowledged and lost at the next
// restart, with /healthz answering 200. After each commit the writer
// looks (one stat): once the file is gone the calls of that round are
// answered unavailable, and every call that would change something after
// it is refused, for good (the file the log writes to cannot come back);
// calls that only read are answered from memory, so that `baton export`
// can still save what the server holds.
//
// Under DurabilityRelaxed check looks at most once a relaxedWALCheckEvery:
// a commit there waits for no fsync, and the stat cost a lone sender's
// send about a third more CPU; a change acknowledged within that interval
// after the file went was lost as surely as everything the server wrote
// before it. Under DurabilityFull the stat is small beside the commit's
// fsync, and every commit is looked at.
type walWatch struct {
	log *slog.Logger
	// every is how often check looks at the file (0: at each call);
	// checked is when it last did, in Unix nanoseconds.
	every   time.Duration
	checked atomic.Int64
	// cur is the write-ahead log file opened last: Pebble writes to its
	// newest one only.
	cur atomic.Pointer[walFile]
	// gone is why changes are refused, once they are; failedFile is the
	// file whose write failed, if that is why.
	gone       atomic.Pointer[error]
	failedFile atomic.Pointer[string]
	// stuck is closed once a write of the log failed (newHealth makes
	// it): what waits behind that write waits for good.
	stuck     chan struct{}
	stuckOnce sync.Once
	// files watches the log's other files (filewatch.go), once it is
	// open; nil before.
	files *filesWatch
}

// walFile is a write-ahead log file as it was when opened, and how far
// Pebble has written it since (diskFile.Write).
type walFile struct {
	fs   vfs.FS
	name string
	info vfs.FileInfo
	file vfs.File

	mu sync.Mutex
	// written is how far Pebble wrote the file, and last the bytes it
	// wrote last, up to tailLen of them (fewer if it wrote fewer).
	written int64
	last    [tailLen]byte
	// seen is how far the file was written when check last found it
	// whole, and seenTail the bytes just before that point, to read back
	// (cut): a file cut short grows back at Pebble's next write to where
	// Pebble was, with zeros in the place of what it held, so a cut
	// anywhere before them zeroes them.
	seen     int64
	seenTail [tailLen]byte
}

// tailLen is how many bytes check reads back.
const tailLen = 8

// wrote is told of each write to the file, p, n bytes of it written;
// tail is p's last bytes (up to tailLen) as they were before the write.
func (f *walFile) wrote(tail, p []byte, n int) {
	if n <= 0 {
		return
	}
	if n < len(p) { // a short write (it failed): the bytes before n, as they are now
		tail = p[n-min(n, tailLen) : n]
	}
	k := len(tail)
	f.mu.Lock()
	copy(f.last[:], f.last[k:])
	copy(f.last[tailLen-k:], tail)
	f.written += int64(n)
	f.mu.Unlock()
}

// mark returns how far the file is written, and its last bytes.
func (f *walFile) mark() (int64, [tailLen]byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.written, f.last
}

// found records that check found the file whole up to written, whose
// last bytes are tail.
func (f *walFile) found(written int64, tail [tailLen]byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen, f.seenTail = written, tail
}

// cut reports whether the bytes before where check last found the file
// whole are gone.
func (f *walFile) cut() bool {
	f.mu.Lock()
	at, tail := f.seen, f.seenTail
	f.mu.Unlock()
	k := min(at, tailLen)
	if k == 0 {
		return false
	}
	want := tail[tailLen-k:]
	got := make([]byte, k)
	n, err := f.file.ReadAt(got, at-k)
	if err != nil && !errors.Is(err, io.EOF) {
		return false // cannot tell: the disk's own trouble is reported apart
	}
	return !bytes.Equal(got[:n], want)
}

// opened is told of each write-ahead log file Pebble opens to write, f;
// it returns the file, to be told of its writes.
func (w *walWatch) opened(fs vfs.FS, name string, f vfs.File) *walFile {
	if w == nil {
		return nil
	}
	info, err := f.Stat()
	if err != nil {
		info = nil // unknown: its name only is checked
	}
	wf := &walFile{fs: fs, name: name, info: info, file: f}
	w.cur.Store(wf)
	return wf
}

// check looks whether the write-ahead log file is still in its place, and
// returns the refusal if not.
func (w *walWatch) check() error {
	if w == nil {
		return nil
	}
	if err := w.refusal(); err != nil {
		return err
	}
	f := w.cur.Load()
	if f == nil || !w.due() {
		return w.checkFiles(false)
	}
	// What was written before the stat is in the file, unless it was cut.
	written, tail := f.mark()
	info, err := f.fs.Stat(f.name)
	var problem string
	switch {
	case errors.Is(err, os.ErrNotExist):
		problem = "was removed"
	case err != nil:
		return nil // cannot tell: the disk's own trouble is reported apart
	case f.info != nil && !sameFile(f.info, info):
		problem = "was replaced by another file"
	case info.Size() < written || f.cut():
		problem = "was truncated"
	default:
		f.found(written, tail)
		return w.checkFiles(true)
	}
	return w.lost(fmt.Sprintf("the write-ahead log %s %s while the server runs "+
		"(its data directory deleted, moved or replaced, or the file cut): the changes written to it would not be found at the next start",
		f.name, problem),
		"pebblestore: the write-ahead log was removed or cut under the running server; refusing calls that change something",
		"file", f.name, "problem", problem)
}

// checkFiles looks, if it is time to (with stat, also if the log's
// directory changed), whether the log's other files are still in its
// directory (filesWatch), and returns the refusal if not.
func (w *walWatch) checkFiles(stat bool) error {
	if w == nil {
		return nil
	}
	if err := w.refusal(); err != nil || w.files == nil || !w.files.due(stat) {
		return err
	}
	name, what := w.files.missing()
	if name == "" {
		return nil
	}
	return w.lost(fmt.Sprintf("%s, %s, was removed while the server runs (a file of its data directory deleted): "+
		"the next start cannot open the log without it, and would serve none of what the log holds", what, name),
		"pebblestore: a file of the log was removed under the running server; refusing calls that change something",
		"file", name, "is", what)
}

// lost refuses every change from now on, why being the reason, what the
// server holds being in its memory only; the first refusal is logged,
// msg with attrs.
func (w *walWatch) lost(why, msg string, attrs ...any) error {
	refused := fmt.Errorf("%w: pebblestore: writes refused: %s. "+
		"What the server holds is in its memory only: save it with `baton export` (for each account) before stopping it",
		baton.ErrUnavailable, why)
	if w.gone.CompareAndSwap(nil, &refused) {
		w.log.Error(msg, attrs...)
	}
	return w.refusal()
}

// relaxedWALCheckEvery is how often the write-ahead log file is looked at
// under DurabilityRelaxed.
const relaxedWALCheckEvery = 100 * time.Millisecond

// due reports whether check is to look at the file now (every).
func (w *walWatch) due() bool {
	if w.every == 0 {
		return true
	}
	now := clock.System{}.Now().UnixNano()
	last := w.checked.Load()
	return now-last >= int64(w.every) && w.checked.CompareAndSwap(last, now)
}

// failed is told that a write, sync or close (op) of name, a file of the
// log, failed with err.
func (w *walWatch) failed(name, op string, err error) {
	refused := fmt.Errorf("%w: pebblestore: writes refused: the disk failed a %s of %s (%w): what the log wrote since "+
		"its last sync may not be on the disk, and the log cannot go on. %s, then restart the server, "+
		"which reads what the log holds", baton.ErrUnavailable, op, name, err, failedAdvice(err))
	if w.gone.CompareAndSwap(nil, &refused) {
		w.failedFile.Store(&name)
		w.log.Error("pebblestore: a write of the log failed; refusing calls that change something until the server is restarted",
			"op", op, "file", name, "problem", diskProblem(err), "err", err.Error())
	}
	if w.stuck != nil {
		w.stuckOnce.Do(func() { close(w.stuck) })
	}
}

// failedAdvice is what to do before a restart once a write of the log
// failed with err: a file size limit is the process's, not the disk's.
func failedAdvice(err error) string {
	if errors.Is(err, syscall.EFBIG) {
		return "Raise the process's file size limit (ulimit -f, LimitFSIZE= in its systemd unit: none is best)"
	}
	return "Check the disk (its kernel log)"
}

// failedWrites returns a channel closed once a write of the log failed
// (nil, never closed, if w was not made by newHealth).
func (w *walWatch) failedWrites() <-chan struct{} { return w.stuck }

// failedWrite reports whether the write of name failed (and never ends).
func (w *walWatch) failedWrite(name string) bool {
	f := w.failedFile.Load()
	return f != nil && *f == name
}

// refusal returns the refusal once the log cannot go on, else nil.
func (w *walWatch) refusal() error {
	if w == nil {
		return nil
	}
	if err := w.gone.Load(); err != nil {
		return *err
	}
	return nil
}
