package pebblestore

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/baton-sqs/baton"
)

// Pebble's memory, bounded: its block cache, and the memtables that take
// writes until they are flushed to tables (writes wait while the maximum
// are full). At most logCacheSize + logMemTableSize*logMemTables, 24 MiB,
// whatever the store holds; the index of the messages is the store's own.
// A memtable holds a few seconds of sends at full load, and a message
// deleted before its memtable is flushed never has its body written to a
// table.
const (
	logCacheSize    = 8 << 20
	logMemTableSize = 4 << 20
	logMemTables    = 4
)

// walCategory is the category of the files Pebble writes its write-ahead
// log to.
const walCategory vfs.DiskWriteCategory = "pebble-wal"

// openLog opens (or creates) the log in dir and checks its format.
func openLog(dir string, opts Options) (*pebble.DB, error) {
	return openWith(dir, logOptions(opts), opts)
}

// openWith opens the log in dir with Pebble's options o and checks its
// format.
func openWith(dir string, o *pebble.Options, opts Options) (*pebble.DB, error) {
	db, err := pebble.Open(dir, o)
	if tableMissing(err) {
		return nil, fmt.Errorf("%w: open the log: %s: a table of the log is missing or cut short, and without it Pebble cannot open the log, "+
			"for a start or for `baton store salvage`. Put it back if you have it, or start a server on the latest backup", ErrDamaged, firstLine(err))
	}
	if damagedOpen(err) {
		return nil, fmt.Errorf("%w: open the log: %s. See `baton store check` and `baton store salvage`", ErrDamaged, firstLine(err))
	}
	if lockHeld(err) {
		// The data directory's lock was free: its file was removed (and
		// made anew by this start) under a process that has the log open.
		return nil, fmt.Errorf("%w: its log's own lock (%s) is held, although the directory's was free: "+
			"its lock file was removed while a process had it open: stop that process first: %w",
			ErrLocked, o.FS.PathJoin(dir, "LOCK"), err)
	}
	if err != nil {
		return nil, fmt.Errorf("open the log: %w", err)
	}
	if err := checkFormat(db, o.FS, dir, opts.readOnly); err != nil {
		db.Close()
		return nil, damagedRead(err)
	}
	return db, nil
}

// createLog creates a new log in dir, and closes it. Pebble writes a new
// log's first write-ahead log before it raises the log to its format:
// that file's records lack the synced offsets that tell damage in its
// middle from an end cut short (checkNewestWAL), and a start after a
// crash would drop what follows a damaged record without a word. Opened
// again, the log writes to a new write-ahead log, in its format.
func createLog(dir string, opts Options) error {
	db, err := pebble.Open(dir, logOptions(opts))
	if err != nil {
		return fmt.Errorf("create the log: %w", err)
	}
	return db.Close()
}

// logOptions are the options of Pebble for a log.
func logOptions(opts Options) *pebble.Options {
	o := &pebble.Options{
		CacheSize:                   logCacheSize,
		MemTableSize:                logMemTableSize,
		MemTableStopWritesThreshold: logMemTables,
		FormatMajorVersion:          pebble.FormatNewest,
		Logger:                      logger{opts.Logger},
		EventListener:               stallListener(opts.Logger),
		// A second compaction when one is not enough to keep up: with one,
		// BenchmarkSend (relaxed, 8 and 64 senders, ~50-70k sends/s) had
		// Pebble stall writes for 100-300 ms at a time.
		CompactionConcurrencyRange: func() (int, int) { return 1, 2 },
	}
	o.FS = opts.FS
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if opts.Durability == DurabilityRelaxed {
		o.FS = relaxedFS{o.FS}
	}
	o.ReadOnly = opts.readOnly
	if opts.manifestSize > 0 {
		o.MaxManifestFileSize = opts.manifestSize
	}
	o.EventListener.DataCorruption = corruptionListener(opts.Logger)
	return o
}

// damagedOpen reports whether Pebble refused to open the log because its
// files are damaged: a record failing its checksum, a marker file lost (a
// log without its format version marker looks new but is not), or a table
// the MANIFEST lists missing or of another size than it says (Pebble's
// consistency check at open, which marks these errors only by their text;
// TestOpenRefusesMissingTable pins it).
func damagedOpen(err error) bool {
	return err != nil && (pebble.IsCorruptionError(err) || errors.Is(err, pebble.ErrDBNotPristine) || tableMissing(err))
}

// tableMissing reports whether Pebble's open failed for a table the
// MANIFEST lists that is gone or shorter than it was written: no open of
// the log, read-only ones included, gets past it.
func tableMissing(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "unknown to the objstorage provider") || strings.Contains(msg, "object size mismatch")
}

// damagedRead marks an error of a read that met a record or block failing
// its checksum as ErrDamaged, in one line.
func damagedRead(err error) error {
	if !pebble.IsCorruptionError(err) || errors.Is(err, ErrDamaged) {
		return err
	}
	return fmt.Errorf("%w: %s. See `baton store check` and `baton store salvage`", ErrDamaged, firstLine(err))
}

// ioFailed adds to err, if the disk failed an operation (EIO), what to
// do: a read lost what it could not read, any other operation (a write
// of Pebble's OPTIONS file, say) nothing yet.
func ioFailed(err error) error {
	if !errors.Is(err, syscall.EIO) || errors.Is(err, baton.ErrUnavailable) { // a failed write of the log says what to do
		return err
	}
	if readFault(err) {
		return fmt.Errorf("%w. The disk failed a read: check it (its kernel log); `baton store check` lists what it cannot read, "+
			"and `baton store salvage` copies the rest to a new data directory", err)
	}
	op := "an operation"
	var pe *fs.PathError
	if errors.As(err, &pe) {
		op = "a " + pe.Op + " of " + pe.Path
	}
	return fmt.Errorf("%w. The disk failed %s: check it (its kernel log), then start again", err, op)
}

// firstLine is the first line of err's message: Pebble's errors of damage
// go on with their details on lines of their own.
func firstLine(err error) string {
	if err == nil {
		return ""
	}
	line, _, _ := strings.Cut(err.Error(), "\n")
	return line
}

// checkFormat refuses a log of a later format, and marks a new one unless
// readOnly. A log without its format record is new only if it holds
// nothing at all and no mark says it held something (mark.go).
func checkFormat(db *pebble.DB, fs vfs.FS, dir string, readOnly bool) error {
	v, closer, err := db.Get(formatKey)
	if errors.Is(err, pebble.ErrNotFound) {
		if err := checkEmpty(db, fs, dir); err != nil || readOnly {
			return err
		}
		return db.Set(formatKey, []byte{format}, pebble.Sync)
	}
	if err != nil {
		return fmt.Errorf("read the log's format: %w", err)
	}
	defer closer.Close()
	if len(v) != 1 || v[0] > format {
		return fmt.Errorf("the log's format %v is newer than this baton knows (%d): upgrade baton", v, format)
	}
	return nil
}

// checkEmpty refuses a log that lacks its format record but is not new.
func checkEmpty(db *pebble.DB, fs vfs.FS, dir string) error {
	it, err := db.NewIter(nil)
	if err != nil {
		return err
	}
	some := it.First()
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return fmt.Errorf("read the log: %w", err)
	}
	if some {
		return fmt.Errorf("%w: the log in %s holds records but not its format record, which every log begins with: "+
			"the file that held it (a table or write-ahead log) was lost. See `baton store check` and `baton store salvage`", ErrDamaged, dir)
	}
	m, ok, err := readMark(fs, filepath.Dir(dir))
	if err != nil || !ok {
		return err
	}
	return fmt.Errorf("%w: the log in %s is empty, but %s says it reached mark %d: its files were deleted or lost",
		ErrDamaged, dir, filepath.Join(filepath.Dir(dir), MarkFile), m.Gen)
}

// relaxedFS is the file system of a log with DurabilityRelaxed: its
// write-ahead log files skip fsync, so that a commit is done once written
// to the operating system. Every other file (tables, the manifest) is
// synced as usual, and a log file is obsolete once the memtable it backs is
// flushed to a table.
type relaxedFS struct{ vfs.FS }

func (fs relaxedFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	return relaxed(f, name, category), err
}

func (fs relaxedFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(oldname, newname, category)
	return relaxed(f, newname, category), err
}

func relaxed(f vfs.File, name string, category vfs.DiskWriteCategory) vfs.File {
	if f == nil || category != walCategory && !strings.HasSuffix(name, ".log") {
		return f
	}
	return unsyncedFile{f}
}

// unsyncedFile is a write-ahead log file of a relaxed log.
type unsyncedFile struct{ vfs.File }

func (unsyncedFile) Sync() error                { return nil }
func (unsyncedFile) SyncData() error            { return nil }
func (unsyncedFile) SyncTo(int64) (bool, error) { return false, nil }

// stallListener reports when Pebble holds writes back, because flushes or
// compactions are behind, and when it lets them go again: every commit
// waits meanwhile, so calls that change something are slow, and the log
// says why and for how long.
func stallListener(l *slog.Logger) *pebble.EventListener {
	var began atomic.Int64
	return &pebble.EventListener{
		WriteStallBegin: func(info pebble.WriteStallBeginInfo) {
			began.Store(time.Now().UnixNano())
			l.Warn("pebblestore: writes held back until the log catches up", "reason", info.Reason)
		},
		WriteStallEnd: func() {
			l.Warn("pebblestore: writes go on", "held", time.Duration(time.Now().UnixNano()-began.Load()).Round(time.Millisecond))
		},
	}
}

// corruptionListener reports a table that fails its checksum, once per
// file (every read that meets it fails, compactions included): the read
// fails, and a receive answers 503, where by default Pebble would stop the
// process.
func corruptionListener(l *slog.Logger) func(pebble.DataCorruptionInfo) {
	var mu sync.Mutex
	seen := make(map[string]bool)
	return func(info pebble.DataCorruptionInfo) {
		mu.Lock()
		first := !seen[info.Path]
		seen[info.Path] = true
		mu.Unlock()
		if first {
			l.Error("pebblestore: a file of the log is damaged; reads of what it holds fail. Run `baton store check`", "file", info.Path,
				"from", describeKey(info.Bounds.Start), "to", describeKey(info.Bounds.End.Key), "err", firstLine(info.Details))
		}
	}
}

// logger passes Pebble's messages on: errors as errors, the rest as debug.
type logger struct{ l *slog.Logger }

func (l logger) Infof(format string, args ...any) {
	l.l.Debug("pebble: " + fmt.Sprintf(format, args...))
}

func (l logger) Errorf(format string, args ...any) {
	l.l.Error("pebble: " + fmt.Sprintf(format, args...))
}

// Fatalf reports an error Pebble cannot go on from (it does not return):
// the process stops, and the next start recovers from the log.
func (l logger) Fatalf(format string, args ...any) {
	l.l.Error("pebble: fatal: " + fmt.Sprintf(format, args...))
	os.Exit(1)
}
