package pebblestore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	iofs "io/fs"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/record"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// ErrDamaged marks the errors of Open and Check that find the data
// directory damaged: its files contradict each other or fail their
// checksums.
var ErrDamaged = errors.New("the data directory is damaged")

// Pebble keeps two logs of records: the MANIFEST, which lists the tables
// and write-ahead logs that make up the log, and the write-ahead logs
// themselves. It reads both up to the first record it cannot read and
// takes the rest for a write a crash cut short. That is right for the end
// of a log, where an unsynced write may be torn, but a record that fails
// its checksum with records after it that were written later is damage:
// what follows it, tables or acknowledged changes, would vanish without a
// word. checkLogFiles looks for that before Pebble opens the log.
//
// The record format (a chunk: checksum, length, type and, in write-ahead
// logs, the log's number and the offset synced before the chunk was
// written; in 32 KiB blocks) is Pebble's, read here only to find chunks
// after a damaged one.
const (
	chunkBlock     = 32 << 10
	legacyHeader   = 7
	walSyncHeader  = 19
	walSyncFirstID = 9 // the first of the four chunk types that carry a synced offset
)

// checkLogFiles checks the current MANIFEST of the log in logDir and, when
// its writes were synced (full durability), its newest write-ahead log.
func checkLogFiles(fs vfs.FS, logDir string, d Durability) error {
	desc, err := pebble.Peek(logDir, fs)
	if err != nil {
		return nil // no log yet, or one Pebble itself refuses to open
	}
	if !desc.Exists {
		return checkNoData(fs, logDir)
	}
	if desc.FormatMajorVersion == pebble.FormatDefault {
		return missingFormatMarker(fs, logDir, desc.OptionsFilename)
	}
	if err := checkManifest(fs, desc.ManifestFilename); err != nil {
		return err
	}
	if err := checkOptions(fs, desc.OptionsFilename); err != nil {
		return err
	}
	if d == DurabilityRelaxed {
		// Pebble believes the unsynced write-ahead log synced: the
		// offsets its chunks claim synced are not.
		return nil
	}
	return checkNewestWAL(fs, logDir)
}

// checkNoData refuses a log without a current MANIFEST (its marker file,
// marker.manifest.*, names it) that holds tables, write-ahead logs or
// manifests: Pebble would take it for a new log and delete them.
func checkNoData(fs vfs.FS, logDir string) error {
	names, err := fs.List(logDir)
	if err != nil {
		return err
	}
	var data []string
	for _, n := range names {
		if strings.HasSuffix(n, ".sst") || strings.HasSuffix(n, ".log") || strings.HasPrefix(n, "MANIFEST-") {
			data = append(data, n)
		}
	}
	if len(data) == 0 {
		return nil
	}
	return fmt.Errorf("%w: the log in %s has no marker naming its current MANIFEST (marker.manifest.*), "+
		"yet holds %s: opened, it would be taken for a new log and those files deleted. "+
		"See `baton store check` and `baton store salvage`", ErrDamaged, logDir, strings.Join(data, ", "))
}

// MissingFormatMarkerError is the refusal of a log that has a current
// MANIFEST but no marker of its format (marker.format-version.*, an empty
// file whose name holds the format's number). Pebble will not open such a
// log (it takes it for a creation cut short: "database already exists
// and is not pristine"), nor can `baton store salvage` read it; yet
// nothing it holds is lost, and the marker, made again, opens it. It
// wraps ErrDamaged.
type MissingFormatMarkerError struct {
	LogDir string
	// Marker is the file to make again: its number is the one the last
	// start wrote into the OPTIONS file, else the one each start of this
	// release moves the log to (From says which).
	Marker, From string
}

func (e *MissingFormatMarkerError) Error() string {
	return fmt.Sprintf("%v: the log in %s has a MANIFEST but no marker of its format (marker.format-version.*, "+
		"an empty file): Pebble will not open it, for a start or for `baton store salvage`. Nothing it holds is lost: "+
		"make the marker again, `touch %s` (%s), and start again", ErrDamaged, e.LogDir, e.Marker, e.From)
}

func (e *MissingFormatMarkerError) Unwrap() error { return ErrDamaged }

func missingFormatMarker(fs vfs.FS, logDir, optionsPath string) error {
	vers, from := pebble.FormatNewest, "the format each start of this release moves the log to"
	if b, err := readFile(fs, optionsPath); err == nil {
		o := &pebble.Options{}
		if o.Parse(string(b), nil) == nil && o.FormatMajorVersion != pebble.FormatDefault {
			vers, from = o.FormatMajorVersion, "the format "+filepath.Base(optionsPath)+" names"
		}
	}
	return &MissingFormatMarkerError{LogDir: logDir, Marker: formatMarker(fs, logDir, vers), From: from}
}

// formatMarker is the path of a marker of the log's format vers in
// logDir, to make again when it is missing (an empty file: Pebble reads
// the format from its name, and takes the highest iteration).
func formatMarker(fs vfs.FS, logDir string, vers pebble.FormatMajorVersion) string {
	return fs.PathJoin(logDir, fmt.Sprintf("%sformat-version.000001.%s", markerPrefix, vers))
}

// checkOptions refuses an OPTIONS file (the settings the log was last
// opened with, which Pebble reads at open and writes anew) that does not
// parse, and says what to do: it holds no data.
func checkOptions(fs vfs.FS, path string) error {
	if path == "" {
		return nil
	}
	b, err := readFile(fs, path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if err := (&pebble.Options{}).Parse(string(b), nil); err != nil {
		return fmt.Errorf("%w: %s does not parse (%v). It holds only the log's settings, no data: "+
			"delete it and the next start writes it anew", ErrDamaged, path, err)
	}
	return nil
}

// checkManifest refuses a MANIFEST with a damaged record followed by
// others, or missing.
func checkManifest(fs vfs.FS, path string) error {
	b, err := readFile(fs, path)
	if errors.Is(err, iofs.ErrNotExist) {
		return fmt.Errorf("%w: %s, the MANIFEST its marker names (the list of the log's tables), is missing: "+
			"without it nothing the log holds can be read, by a start or by `baton store salvage`. "+
			"Put it back if you have it, or start a server on the latest backup", ErrDamaged, path)
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	bad, ok := firstBadRecord(b, 0)
	if ok {
		return nil
	}
	if later, found := nextChunk(b, bad, func(typ byte, _ []byte) bool { return typ >= 1 && typ <= 4 }); found {
		return fmt.Errorf("%w: %s has a damaged record at offset %d, followed by an intact one at offset %d: "+
			"the tables it lists after the damage would be lost. See `baton store check` and `baton store salvage`",
			ErrDamaged, path, bad, later)
	}
	return nil
}

// checkNewestWAL refuses a newest write-ahead log with a damaged record
// that a later record says was synced.
func checkNewestWAL(fs vfs.FS, logDir string) error {
	names := logFiles(fs, logDir, func(n string) bool { return strings.HasSuffix(n, ".log") })
	if len(names) == 0 {
		return nil
	}
	path := names[len(names)-1]
	num, err := strconv.ParseUint(strings.TrimSuffix(filepath.Base(path), ".log"), 10, 32)
	if err != nil {
		return nil // not a write-ahead log's name
	}
	b, err := readFile(fs, path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	bad, ok := firstBadRecord(b, num)
	if ok {
		return nil
	}
	later, found := nextChunk(b, bad, func(typ byte, h []byte) bool {
		return typ >= walSyncFirstID && typ < walSyncFirstID+4 && len(h) >= walSyncHeader &&
			uint64(binary.LittleEndian.Uint32(h[7:11])) == num && binary.LittleEndian.Uint64(h[11:19]) > uint64(bad)
	})
	if !found {
		return nil // the end of the log, cut short: what it held was never acknowledged
	}
	return fmt.Errorf("%w: %s has a damaged record at offset %d, and the record at offset %d says it was synced: "+
		"acknowledged changes after the damage would be lost. See `baton store check` and `baton store salvage`",
		ErrDamaged, path, bad, later)
}

// firstBadRecord reads b's records; it reports where the first one it
// cannot read begins, or ok if it reads them all.
func firstBadRecord(b []byte, logNum uint64) (bad int64, ok bool) {
	r := newRecordReader(record.NewReader, bytes.NewReader(b), logNum)
	for {
		at := r.Offset()
		rec, err := r.Next()
		if err == nil {
			_, err = io.Copy(io.Discard, rec)
		}
		if errors.Is(err, io.EOF) {
			return 0, true
		}
		if err != nil {
			return at, false
		}
	}
}

// newRecordReader calls newReader with the log's number in the type it
// takes, which Pebble does not export.
func newRecordReader[N ~uint64](newReader func(io.Reader, N) *record.Reader, r io.Reader, logNum uint64) *record.Reader {
	return newReader(r, N(logNum))
}

// nextChunk finds the first chunk starting after offset from whose
// checksum holds and whose type and header match wants.
func nextChunk(b []byte, from int64, wants func(typ byte, header []byte) bool) (int64, bool) {
	for p := int(from) + 1; p+legacyHeader <= len(b); p++ {
		n := int(binary.LittleEndian.Uint16(b[p+4 : p+6]))
		typ := b[p+6]
		hdr := legacyHeader
		if typ >= walSyncFirstID {
			hdr = walSyncHeader
		} else if typ > 4 {
			hdr = legacyHeader + 4
		}
		end := p + hdr + n
		if n == 0 || end > len(b) || p/chunkBlock != (end-1)/chunkBlock || !wants(typ, b[p:p+hdr]) {
			continue
		}
		if binary.LittleEndian.Uint32(b[p:p+4]) == maskedCRC(b[p+6:end]) {
			return int64(p), true
		}
	}
	return 0, false
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// maskedCRC is a chunk's checksum: CRC-32C, masked as the format masks it.
func maskedCRC(b []byte) uint32 {
	c := crc32.Checksum(b, castagnoli)
	return (c>>15 | c<<17) + 0xa282ead8
}
