package pebblestore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/logfilter"
)

// Report is what Check or Salvage found in a data directory.
type Report struct {
	// Queues and Messages count the queues and the messages found intact
	// (for Salvage: copied).
	Queues, Messages int
	// Problems each name a file, or the records, and what is wrong.
	Problems []string
	// Lost are the messages known to be lost or unreadable.
	Lost []LostMessage
	// Unlisted are tables on disk that the MANIFEST does not list: left
	// by a crash in the middle of a compaction (Pebble deletes them at the
	// next start), or dropped by a damaged MANIFEST. Not counted as damage.
	Unlisted []string
	// Unopened: Pebble could not open the log (a table or the MANIFEST it
	// names gone): nothing of it was read, so Queues and Messages count
	// nothing found, not nothing there, and nothing can be salvaged.
	Unopened bool
	// MissingMarker, when set, is the marker of the log's format to make
	// again (MissingFormatMarkerError): the log then opens with everything
	// it holds, and nothing needs salvaging.
	MissingMarker string
}

// Damaged reports whether the check found anything wrong.
func (r *Report) Damaged() bool { return len(r.Problems) > 0 || len(r.Lost) > 0 }

// LostMessage is a message the log cannot give back whole.
type LostMessage struct {
	// Queue is region/account/name, or "queue id N" for a queue whose
	// own record is lost.
	Queue string
	// ID is the message's id, empty if its record is the part lost.
	ID string
	// Pos is its place in the log (keys.go).
	Pos uint64
	// Why says what is missing.
	Why string
}

func (l LostMessage) String() string {
	id := l.ID
	if id == "" {
		id = "(id unknown)"
	}
	return fmt.Sprintf("queue %s, message %s (pos %d): %s", l.Queue, id, l.Pos, l.Why)
}

// Check reads every record of the log in dir and every block of its
// tables (checking their checksums), and the consistency of what they
// hold: the checks Open makes, the decoding of each record, each message's
// body present with its record. It takes the directory's lock, so it fails
// with ErrLocked while a server has the directory open, and writes
// nothing. An error means the check could not run; damage is in the
// Report.
func Check(ctx context.Context, dir string) (*Report, error) {
	return inspect(ctx, dir, nil)
}

// Salvage copies what is intact in the data directory from into a new
// store in to (which must not exist or be empty): queues, deleted queue
// names, move tasks, SNS topics, subscriptions and signing key, and every
// message whose record and body both read back, with its queue's. The Report lists what could not be copied. The
// new store is opened once, to check it and mark it, before Salvage
// returns. from is only read. A log in from that Pebble cannot open (a
// table or the MANIFEST it names deleted) has nothing to copy: Salvage
// fails with ErrDamaged, and makes nothing.
//
// Should the disk of to fail a write of a table of the new log (a flush:
// the disk full), Salvage returns at once with the error, leaving to as it
// is (Pebble would try the flush again at once and for ever, and the
// salvage never end); what writes there is left to the process's end.
func Salvage(ctx context.Context, from, to string) (*Report, error) {
	if entries, err := os.ReadDir(to); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("salvage into %s: the directory is not empty", to)
	}
	// The source is opened first: a log Pebble cannot open gives nothing
	// to copy, and an empty store made of it would serve as if it held
	// everything.
	in, err := openInspection(ctx, from)
	if err != nil {
		return nil, err
	}
	if in.db == nil {
		in.release()
		return in.r, unopenedSalvage(in.r, from, to)
	}
	if err := os.MkdirAll(filepath.Join(to, LogDir), 0o700); err != nil {
		in.release()
		return nil, err
	}
	quiet := salvageLog()
	failed := make(chan error, 1)
	listener := &pebble.EventListener{BackgroundError: func(err error) {
		if !errors.Is(err, pebble.ErrCancelledCompaction) {
			select {
			case failed <- err:
			default:
			}
		}
	}}
	out, err := pebble.Open(filepath.Join(to, LogDir), &pebble.Options{FS: salvageFS, FormatMajorVersion: pebble.FormatNewest,
		Logger: logger{quiet}, EventListener: listener})
	if err != nil {
		in.release()
		return nil, fmt.Errorf("create the log in %s: %w", to, err)
	}
	in.out = out
	type copied struct {
		r   *Report
		err error
	}
	done := make(chan copied, 1)
	go func() { // it owns in: the salvage may return before it ends
		r, err := in.run()
		in.release()
		if cerr := closeCopy(out, err); err == nil {
			err = cerr
		}
		done <- copied{r, err}
	}()
	var c copied
	select {
	case c = <-done:
	case err := <-failed:
		select {
		case c = <-done: // it ended meanwhile: the flush was tried again, and worked
		default:
			return nil, fmt.Errorf("salvage into %s: the disk failed a write of the new log (%w): "+
				"nothing is copied; free space, or use another directory, and start again (remove %s first)", to, err, to)
		}
	}
	if c.err != nil {
		return c.r, c.err
	}
	s, err := Open(ctx, to, Options{Logger: quiet})
	if err != nil {
		return c.r, fmt.Errorf("open the salvaged store: %w", err)
	}
	return c.r, s.Close()
}

// salvageFS is the file system Salvage writes the new log on (tests
// fail its writes).
var salvageFS = vfs.Default

// salvageLog is the log of Salvage's writes: errors only, to the default
// logger. Pebble stops the process when the disk fails a write of the new
// log's write-ahead log or MANIFEST, and says why only there.
func salvageLog() *slog.Logger {
	return slog.New(logfilter.AtLeast(slog.Default().Handler(), slog.LevelError))
}

// closeCopy finishes the salvaged log: its format record, flushed to a
// table, then closed.
func closeCopy(db *pebble.DB, failed error) error {
	if failed == nil {
		failed = db.Set(formatKey, []byte{format}, pebble.Sync)
	}
	if failed == nil {
		failed = db.Flush()
	}
	return errors.Join(failed, db.Close())
}

// inspection is the state of one Check or Salvage.
type inspection struct {
	ctx    context.Context
	dir    string
	logDir string
	// lock is the directory's, held until release; wal the newest
	// write-ahead log as the inspection began.
	lock io.Closer
	wal  string
	db   *pebble.DB
	out  *pebble.DB // the salvaged log, or nil
	r    *Report
	// corrupt is the latest damaged table Pebble reported.
	corrupt *pebble.DataCorruptionInfo
	// probe, if set, returns the first key after from that a scan past
	// damage should try; damaged says a scan met damage.
	probe   func(from []byte) []byte
	damaged bool
	// queues are the queues' names by id; states and bodies the pos of
	// the messages whose record and body read back, by queue id.
	queues         map[uint64]string
	states, bodies map[uint64]map[uint64]string
}

func inspect(ctx context.Context, dir string, out *pebble.DB) (*Report, error) {
	in, err := openInspection(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer in.release()
	in.out = out
	return in.run()
}

// openInspection takes dir's lock and opens its log, read only. A log
// Pebble cannot open is a problem of the Report, and leaves in.db nil.
// The caller releases the inspection.
func openInspection(ctx context.Context, dir string) (*inspection, error) {
	// A directory that holds no log (mistyped, empty, not a directory)
	// is refused before the lock, whose file would be the first thing
	// written into it.
	logDir := filepath.Join(dir, LogDir)
	if _, err := os.Stat(logDir); err != nil {
		return nil, fmt.Errorf("%s holds no log: %w", dir, err)
	}
	lock, err := lockDir(filepath.Join(dir, LockFile))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	in := &inspection{ctx: ctx, dir: dir, logDir: logDir, lock: lock, r: &Report{},
		queues: make(map[uint64]string), states: make(map[uint64]map[uint64]string), bodies: make(map[uint64]map[uint64]string)}
	if err := checkLogFiles(vfs.Default, in.logDir, DurabilityFull); err != nil {
		in.problem("%v", err)
		if m := (*MissingFormatMarkerError)(nil); errors.As(err, &m) {
			in.r.MissingMarker = m.Marker
		}
	}
	listener := &pebble.EventListener{DataCorruption: func(info pebble.DataCorruptionInfo) {
		in.corrupt = &info
	}}
	in.wal = newestWAL(vfs.Default, in.logDir)
	in.db, err = pebble.Open(in.logDir, &pebble.Options{ReadOnly: true, Logger: logger{slog.New(slog.DiscardHandler)}, EventListener: listener})
	if err != nil {
		in.db, in.r.Unopened = nil, true
		in.problem("Pebble cannot open the log in %s: %s", in.logDir, firstLine(err))
	}
	return in, nil
}

// unopenedSalvage is Salvage's refusal of a log that Pebble cannot open
// (r.Unopened): nothing can be copied, and what to do instead.
func unopenedSalvage(r *Report, from, to string) error {
	if m := r.MissingMarker; m != "" {
		return fmt.Errorf("%s: %w: nothing can be salvaged, as Pebble cannot open its log without the marker of its format; %s is not made. "+
			"Nothing is lost and nothing needs salvaging: `touch %s`, and the store starts with everything it holds", from, ErrDamaged, to, m)
	}
	return fmt.Errorf("%s: %w: nothing can be salvaged, as Pebble cannot open its log (%s); %s is not made. "+
		"Put back the file the error names, if you have it, or start a server on the latest backup", from, ErrDamaged,
		strings.Join(r.Problems, "; "), to)
}

// release closes the log and gives the directory's lock back.
func (in *inspection) release() {
	if in.db != nil {
		in.db.Close()
	}
	in.lock.Close()
}

// run reads the log, copying what is intact into in.out if set.
func (in *inspection) run() (*Report, error) {
	if in.db == nil {
		return in.r, nil
	}
	if _, _, err := checkMark(vfs.Default, in.dir, in.db, in.wal); err != nil {
		in.problem("%v", err)
	}
	in.unlisted()
	in.walk()
	in.account()
	return in.r, in.ctx.Err()
}

// unlisted notes the tables on disk that the log does not list.
func (in *inspection) unlisted() {
	levels, err := in.db.SSTables()
	if err != nil {
		in.problem("list the log's tables: %s", firstLine(err))
		return
	}
	listed := make(map[string]bool)
	for _, level := range levels {
		for _, t := range level {
			listed[t.BackingSSTNum.String()+".sst"] = true
		}
	}
	names, _ := filepath.Glob(filepath.Join(in.logDir, "*.sst"))
	for _, name := range names {
		if !listed[filepath.Base(name)] {
			in.r.Unlisted = append(in.r.Unlisted, name)
		}
	}
}

func (in *inspection) problem(format string, args ...any) {
	p := fmt.Sprintf(format, args...)
	if !slices.Contains(in.r.Problems, p) {
		in.r.Problems = append(in.r.Problems, p)
	}
}

// walk reads every record, kind by kind.
func (in *inspection) walk() {
	found := false
	in.scan(formatKey, []byte{kindFormat + 1})(func(k, v []byte) {
		found = len(k) == 1
	})
	if !found {
		in.problem("the log in %s has no format record", in.logDir)
	}
	in.scan(span(kindQueue))(func(k, v []byte) {
		id := queueIDOf(k)
		q, err := decodeQueue(id, v)
		if len(k) != 9 || err != nil {
			in.problem("the record of queue id %d does not decode: %v", id, err)
			return
		}
		in.queues[id] = q.Region + "/" + q.Account + "/" + q.Name
		in.copy(k, v)
	})
	for _, kind := range []byte{kindSeq, kindDedup} {
		orphaned := map[uint64]int{}
		in.scan(span(kind))(func(k, v []byte) {
			if id := queueIDOf(k); in.queues[id] == "" {
				orphaned[id]++
				return
			}
			in.copy(k, v)
		})
		for id, n := range orphaned {
			in.problem("%d %s records of queue id %d, which the log has no record of", n, kindNames[kind], id)
		}
	}
	for _, kind := range []byte{kindTombstone, kindTask, kindTopic, kindSubscription, kindSigningKey, kindPublish} {
		in.scan(span(kind))(in.copy)
	}
	// A damaged table is skipped from the first block that fails to
	// its end, unless the scan knows of keys past the block to try: the
	// messages' records are tried at the places of the bodies read, and
	// the bodies, again, at the places of the records read.
	in.scan(span(kindPayload))(in.body)
	damaged := in.damaged
	in.probe = in.after(kindState, in.bodies)
	in.scan(span(kindState))(in.state)
	if damaged {
		in.probe = in.after(kindPayload, in.states)
		in.scan(span(kindPayload))(in.body)
	}
	in.probe = nil
}

// body notes a message body read back.
func (in *inspection) body(k, v []byte) {
	id, pos, ok := parseQueueKey(k)
	if _, err := decodePayload(v); !ok || err != nil {
		in.problem("a message body (key %x) does not decode", k)
		return
	}
	notePlace(in.bodies, id, pos, "")
}

// state notes a message record read back.
func (in *inspection) state(k, v []byte) {
	id, pos, ok := parseQueueKey(k)
	var m baton.Message
	if !ok || decodeRecord(v, &m, func(b []byte) string { return string(b) }) != nil {
		in.problem("a message record (key %x) does not decode", k)
		return
	}
	notePlace(in.states, id, pos, m.ID)
}

// scan calls fn with every record of [lo, hi) that reads back; a damaged
// table is reported, with the records it holds, and skipped.
func (in *inspection) scan(lo, hi []byte) func(fn func(k, v []byte)) {
	return func(fn func(k, v []byte)) {
		for lower := lo; lower != nil && in.ctx.Err() == nil; {
			lower = in.scanFrom(lower, hi, fn)
		}
	}
}

// scanFrom scans [lower, hi) up to the first damaged table, and returns
// where to go on after it (nil when done): the next key in.probe knows of
// (the record of the next message whose body was read), or past the
// table.
func (in *inspection) scanFrom(lower, hi []byte, fn func(k, v []byte)) []byte {
	in.corrupt = nil
	from := lower
	it, err := in.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: hi})
	if err == nil {
		for valid := it.First(); valid && in.ctx.Err() == nil; valid = it.Next() {
			v, verr := it.ValueAndErr()
			if verr != nil {
				break
			}
			fn(it.Key(), v)
			from = append(bytes.Clone(it.Key()), 0)
		}
		err = errors.Join(it.Error(), it.Close())
	}
	if err == nil {
		return nil
	}
	c := in.corrupt
	if c == nil {
		in.problem("reading the log from %s: %v", describeKey(from), err)
		return nil
	}
	in.damaged = true
	in.problem("%s is damaged (%v): records it holds, from %s to %s, cannot be read",
		c.Path, firstLine(c.Details), describeKey(c.Bounds.Start), describeKey(c.Bounds.End.Key))
	next := c.Bounds.End.Key
	if c.Bounds.End.Kind == 1 { // inclusive: go on just past it
		next = append(bytes.Clone(next), 0)
	}
	if in.probe != nil {
		if k := in.probe(from); k != nil && bytes.Compare(k, next) < 0 {
			next = k
		}
	}
	if bytes.Compare(next, from) < 0 || bytes.Equal(next, lower) {
		return nil
	}
	return next
}

// after returns a probe (see inspection.probe): the first key of kind,
// after from, at the place (queue id and pos) of a message in known.
func (in *inspection) after(kind byte, known map[uint64]map[uint64]string) func(from []byte) []byte {
	return func(from []byte) []byte {
		var best []byte
		for id, places := range known {
			for p := range places {
				k := queueKey(kind, id, p)
				if bytes.Compare(k, from) > 0 && (best == nil || bytes.Compare(k, best) < 0) {
					best = k
				}
			}
		}
		return best
	}
}

// copy writes a record into the salvaged log.
func (in *inspection) copy(k, v []byte) {
	if in.out == nil {
		return
	}
	if err := in.out.Set(k, v, pebble.NoSync); err != nil {
		in.problem("write %x into the salvaged log: %v", k, err)
	}
}

// account pairs message records with bodies, lists what is lost and, when
// salvaging, copies the messages that are whole.
func (in *inspection) account() {
	in.r.Queues = len(in.queues)
	for qid, states := range in.states {
		queue, ok := in.queues[qid]
		if !ok {
			queue = fmt.Sprintf("id %d", qid)
		}
		for pos, id := range states {
			switch _, body := in.bodies[qid][pos]; {
			case !ok:
				in.lose(queue, id, pos, "its queue's record is lost")
			case !body:
				in.lose(queue, id, pos, "its body is lost or unreadable")
			default:
				in.r.Messages++
				in.copyMessage(qid, pos)
			}
		}
	}
	for qid, bodies := range in.bodies {
		for pos := range bodies {
			if _, ok := in.states[qid][pos]; !ok {
				queue, ok := in.queues[qid]
				if !ok {
					queue = fmt.Sprintf("id %d", qid)
				}
				in.lose(queue, "", pos, "its record is lost or unreadable (its body is intact)")
			}
		}
	}
	sort.Slice(in.r.Lost, func(i, j int) bool {
		a, b := in.r.Lost[i], in.r.Lost[j]
		return a.Queue < b.Queue || a.Queue == b.Queue && a.Pos < b.Pos
	})
}

func (in *inspection) lose(queue, id string, pos uint64, why string) {
	in.r.Lost = append(in.r.Lost, LostMessage{Queue: queue, ID: id, Pos: pos, Why: why})
}

// copyMessage copies a whole message's record and body.
func (in *inspection) copyMessage(qid, pos uint64) {
	if in.out == nil {
		return
	}
	for _, kind := range []byte{kindState, kindPayload} {
		k := queueKey(kind, qid, pos)
		v, closer, err := in.db.Get(k)
		if err != nil {
			in.problem("read %s again: %v", describeKey(k), err)
			return
		}
		in.copy(k, v)
		closer.Close()
	}
}

// notePlace records id at qid/pos in m.
func notePlace(m map[uint64]map[uint64]string, qid, pos uint64, id string) {
	if m[qid] == nil {
		m[qid] = make(map[uint64]string)
	}
	m[qid][pos] = id
}

// describeKey says in words what record a key is of.
func describeKey(k []byte) string {
	if len(k) == 0 {
		return "the start"
	}
	name, ok := kindNames[k[0]]
	switch {
	case k[0] == kindQueue:
		name, ok = "queue", true
	case k[0] == kindTombstone:
		return "the deleted queue names"
	case k[0] == kindTask:
		return "the move tasks"
	case k[0] == kindFormat || k[0] == kindMark:
		return "the log's own records"
	}
	if !ok {
		return fmt.Sprintf("key %x", k)
	}
	if id, pos, ok := parseQueueKey(k); ok {
		return fmt.Sprintf("the %s at pos %d of queue id %d", name, pos, id)
	}
	return fmt.Sprintf("the %s records of queue id %d", name, queueIDOf(k))
}
