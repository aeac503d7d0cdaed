package pebblestore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// MarkFile, in the data directory, says how far the log had come when the
// store last opened or closed: a generation that Open and Close each raise,
// in the log (markKey) and then in this file, synced.
//
// Pebble takes a write-ahead log that ends in a damaged or missing record
// for one whose last write a crash cut short, which is what it usually is;
// but a log truncated, zeroed or deleted by a failing disk or a careless
// copy looks just the same, and the changes it held vanish without a word.
// The mark tells the two apart where it can: after a clean stop the close's
// mark is the log's last record, so a log that lost any of its end lacks
// it; after a crash the log must still hold the mark of the last start.
// A log behind its mark refuses to open (checkMark).
const MarkFile = "log.mark"

// markKey holds the log's copy of the mark's generation.
var markKey = []byte{kindMark}

// logMark is the content of MarkFile.
type logMark struct {
	// Gen is the generation the log held when the file was written.
	Gen uint64
	// Closed says the store was closed cleanly then, rather than opened.
	Closed bool
	// WAL is the number of the newest write-ahead log then. Pebble never
	// deletes its newest write-ahead log, so one at least as new must be
	// there at the next open.
	WAL uint64
}

// markPrefix begins a mark file; a checksum of what precedes it ends it.
const markPrefix = "baton log mark "

func (m logMark) encode() []byte {
	body := fmt.Sprintf("%sgeneration=%d closed=%t wal=%d", markPrefix, m.Gen, m.Closed, m.WAL)
	return fmt.Appendf(nil, "%s crc=%08x\n", body, crc32.Checksum([]byte(body), crc32.MakeTable(crc32.Castagnoli)))
}

// readMark reads dir's mark file; ok is false if there is none.
func readMark(fs vfs.FS, dir string) (m logMark, ok bool, err error) {
	path := filepath.Join(dir, MarkFile)
	b, err := readFile(fs, path)
	if errors.Is(err, os.ErrNotExist) {
		return logMark{}, false, nil
	}
	if err != nil {
		return logMark{}, false, err
	}
	body, sum, found := strings.Cut(strings.TrimSuffix(string(b), "\n"), " crc=")
	want, perr := strconv.ParseUint(sum, 16, 32)
	if !found || perr != nil || uint32(want) != crc32.Checksum([]byte(body), crc32.MakeTable(crc32.Castagnoli)) {
		return logMark{}, false, fmt.Errorf("%w: %s is damaged (its checksum does not match): it cannot say how far the log had come; "+
			"if the log is known to be intact (`baton store check`), remove the file", ErrDamaged, path)
	}
	if _, err := fmt.Sscanf(body, markPrefix+"generation=%d closed=%t wal=%d", &m.Gen, &m.Closed, &m.WAL); err != nil {
		return logMark{}, false, fmt.Errorf("%s: %w", path, err)
	}
	return m, true, nil
}

// writeMark replaces dir's mark file with m, durably.
func writeMark(fs vfs.FS, dir string, m logMark) error {
	tmp := filepath.Join(dir, MarkFile+".tmp")
	f, err := fs.Create(tmp, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	_, err = f.Write(m.encode())
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := fs.Rename(tmp, filepath.Join(dir, MarkFile)); err != nil {
		return err
	}
	return syncDir(fs, dir)
}

// readFile reads the file at path on fs.
func readFile(fs vfs.FS, path string) ([]byte, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// logGen reads the log's generation: 0 if it has none.
func logGen(db *pebble.DB) (uint64, error) {
	v, closer, err := db.Get(markKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read the log's mark: %w", err)
	}
	defer closer.Close()
	if len(v) != 8 {
		return 0, fmt.Errorf("the log's mark is %d bytes long, want 8", len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// checkMark compares the log's generation with the mark file's: a log
// behind the file lost writes it had made durable. wal names the newest
// write-ahead log found before the log was opened. It returns the
// generation to go on from, and whether the mark file was there to
// compare with.
func checkMark(fs vfs.FS, dir string, db *pebble.DB, wal string) (gen uint64, marked bool, err error) {
	m, ok, err := readMark(fs, dir)
	if err != nil {
		return 0, false, err
	}
	if left := walNumber(wal); ok && left < m.WAL {
		return 0, true, fmt.Errorf("%w: %s says the log's newest write-ahead log was %s when the store was %s, "+
			"but the newest left in %s is %s: write-ahead logs were deleted, with the changes they held. "+
			"See `baton store check` and `baton store salvage`",
			ErrDamaged, filepath.Join(dir, MarkFile), walName(m.WAL), markWhen(m), filepath.Join(dir, LogDir), filepath.Base(wal))
	}
	got, err := logGen(db)
	if err != nil || !ok || got >= m.Gen {
		return max(got, m.Gen), ok, err
	}
	when := "last started (the log has lost everything written since)"
	if m.Closed {
		when = "last stopped cleanly (the log has lost its end)"
	}
	return 0, true, fmt.Errorf("%w: the log in %s holds mark %d, but %s says it reached mark %d when the store was %s: "+
		"its newest write-ahead log (%s) was truncated, zeroed, deleted or damaged, or its MANIFEST lost tables; "+
		"acknowledged messages may be gone. See `baton store check` and `baton store salvage`",
		ErrDamaged, filepath.Join(dir, LogDir), got, filepath.Join(dir, MarkFile), m.Gen, when, wal)
}

// advanceMark raises the generation to gen in the log, durably, and then
// in the mark file.
func (s *Store) advanceMark(gen uint64, closed bool, durability Durability) error {
	if err := s.db.Set(markKey, binary.BigEndian.AppendUint64(nil, gen), pebble.Sync); err != nil {
		return fmt.Errorf("write the log's mark: %w", err)
	}
	if durability == DurabilityRelaxed {
		// The write-ahead log is not synced: the mark is durable once
		// flushed to a table.
		if err := s.db.Flush(); err != nil {
			return fmt.Errorf("flush the log's mark: %w", err)
		}
	}
	wal := walNumber(newestWAL(s.fs, filepath.Join(s.dir, LogDir)))
	if err := writeMark(s.fs, s.dir, logMark{Gen: gen, Closed: closed, WAL: wal}); err != nil {
		return fmt.Errorf("write %s: %w", MarkFile, err)
	}
	s.gen = gen
	return nil
}

// markWhen says when a mark was written.
func markWhen(m logMark) string {
	if m.Closed {
		return "last stopped cleanly"
	}
	return "last started"
}

// walNumber is the number of the write-ahead log at path (0 if path is
// not one).
func walNumber(path string) uint64 {
	n, err := strconv.ParseUint(strings.TrimSuffix(filepath.Base(path), ".log"), 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// walName is the file name of write-ahead log n.
func walName(n uint64) string { return fmt.Sprintf("%06d.log", n) }

// newestWAL names the newest write-ahead log file in logDir, or says there
// is none.
func newestWAL(fs vfs.FS, logDir string) string {
	names := logFiles(fs, logDir, func(n string) bool { return strings.HasSuffix(n, ".log") })
	if len(names) == 0 {
		return "none is left in " + logDir
	}
	return names[len(names)-1]
}

// logFiles lists the paths of the files in logDir whose names match, in
// name order.
func logFiles(fs vfs.FS, logDir string, match func(name string) bool) []string {
	names, _ := fs.List(logDir)
	slices.Sort(names)
	var out []string
	for _, n := range names {
		if match(n) {
			out = append(out, filepath.Join(logDir, n))
		}
	}
	return out
}
