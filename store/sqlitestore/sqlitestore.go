package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sqlite "modernc.org/sqlite" // also registers the "sqlite" database/sql driver

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/ids"
	"github.com/baton-sqs/baton/store/memstore"
)

// Files of a data directory.
const (
	// DatabaseFile is the SQLite database (with its -wal and -shm files).
	DatabaseFile = "baton.db"
	// LockFile is held locked by the process that has the directory open.
	LockFile = "lock"
)

// ErrLocked is returned by Open when another process has the data directory
// open.
var ErrLocked = errors.New("the data directory is in use by another baton process")

// Durability says when a commit counts as done.
type Durability int

const (
	// DurabilityFull fsyncs every commit (SQLite synchronous=FULL): an
	// acknowledged change survives a process crash and a power loss.
	DurabilityFull Durability = iota
	// DurabilityRelaxed leaves commits in the operating system's cache
	// (synchronous=NORMAL; the WAL is fsynced at checkpoints): an
	// acknowledged change survives a crash or kill of the process, but the
	// last commits before a power loss or kernel crash may be lost. The
	// database stays consistent either way.
	DurabilityRelaxed
)

// ParseDurability reads "full" or "relaxed".
func ParseDurability(s string) (Durability, error) {
	switch s {
	case "full", "":
		return DurabilityFull, nil
	case "relaxed":
		return DurabilityRelaxed, nil
	}
	return 0, fmt.Errorf("unknown durability %q: want full or relaxed", s)
}

// String returns "full" or "relaxed".
func (d Durability) String() string {
	if d == DurabilityRelaxed {
		return "relaxed"
	}
	return "full"
}

// Options configure Open.
type Options struct {
	// Durability defaults to DurabilityFull.
	Durability Durability
	// DefaultRegion is the region a data directory written before queues
	// had one gives its queues when Open migrates it (default us-east-1):
	// the region the server served them in, its --region.
	DefaultRegion string
}

// stripes is how many locks order the changes of queues: a queue's changes
// are made and queued under its stripe's lock.
const stripes = 64

// Store is the embedded durable baton.Store. It is safe for concurrent use.
//
// A call that changes something returns once the change is committed, and
// one that changed nothing once every change it may have seen is: no answer
// rests on state a crash could take back. A failed commit (a full or
// read-only disk) fails the calls waiting for it with an error; their
// changes stay applied in memory and are written with the next commit, so a
// call that failed may still take effect, as may any SQS call that errs.
//
// Lock order: qmu, then stripe locks (lower index first), then the index's
// own locks, then the writer's and pendMu.
type Store struct {
	dir   string
	index *memstore.Store
	wdb   *sql.DB // one connection: the writer's
	rdb   *sql.DB // readers of payloads
	w     *writer
	lock  *os.File
	// reclaim deletes the rows of purged and deleted queues' messages.
	reclaim *reclaimer

	// qmu orders the queue-level calls (create, update, delete, purge).
	qmu sync.Mutex
	// queueWrites counts the queue-level changes made in memory and not
	// committed yet (queueWrite): while there are any, reads of queues wait
	// for the latest commit, so that no caller is answered from a queue
	// whose creation, say, a crash would undo. It is raised under qmu
	// before the index changes.
	queueWrites atomic.Int64

	stripes [stripes]sync.Mutex
	// dropped collects, per stripe, the messages the index dropped as past
	// retention during the call holding the stripe's lock.
	dropped [stripes][]string
	// rows maps, per stripe, each queue's messages to their pos, the key
	// of their database row; guarded by the stripe's lock.
	rows [stripes]map[uint64]*ids.Map[int64]
	// pos numbers messages in the order they joined their queue.
	pos atomic.Int64

	// pending holds, by pos, the payloads of rows not committed yet: those
	// of queued inserts, and those of queued moves, whose row keeps its old
	// pos until the move commits. A receive may take such a message before
	// the commit.
	pendMu  sync.Mutex
	pending map[int64]payload

	readMu    sync.Mutex
	readStmts map[int]*sql.Stmt // payload reads by number of rows

	closeOnce sync.Once
	closeErr  error
}

var _ baton.Store = (*Store)(nil)

// payload is the part of a message kept on disk only.
type payload struct {
	body    string
	bodyMD5 string // empty in rows written before the column was
	attrs   []byte // encodeAttributes
	trace   string
}

func payloadOf(m *baton.Message) payload {
	return payload{body: m.Body, bodyMD5: m.BodyMD5, attrs: encodeAttributes(m.Attributes), trace: m.TraceHeader}
}

// fill puts p into m.
func (p payload) fill(m *baton.Message) error {
	attrs, err := decodeAttributes(p.attrs)
	if err != nil {
		return fmt.Errorf("message %s: %w", m.ID, err)
	}
	m.Body, m.BodyMD5, m.Attributes, m.TraceHeader = p.body, p.bodyMD5, attrs, p.trace
	return nil
}

// Open opens the store in dir, creating the directory and the database if
// needed, applies the schema's migrations and rebuilds the in-memory index.
// It returns an error wrapping ErrLocked if another process has dir open.
//
// Open switches SQLite, process-wide, to commit with fdatasync(2) instead of
// fsync(2) where the platform has it: as durable, and cheaper per commit.
func Open(ctx context.Context, dir string, opts Options) (*Store, error) {
	sqlite.Fdatasync(true) // fails only where unavailable: fsync it is, then
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("sqlitestore: data directory: %w", err)
	}
	lock, err := lockDir(filepath.Join(dir, LockFile))
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: %s: %w", dir, err)
	}
	s := &Store{dir: dir, lock: lock, pending: make(map[int64]payload), readStmts: make(map[int]*sql.Stmt)}
	for i := range s.rows {
		s.rows[i] = make(map[uint64]*ids.Map[int64])
	}
	s.index = memstore.NewWithOptions(memstore.Options{ExpiredFunc: s.expired})
	if err := s.open(ctx, opts); err != nil {
		s.closeDBs()
		lock.Close()
		return nil, fmt.Errorf("sqlitestore: %s: %w", dir, err)
	}
	return s, nil
}

func (s *Store) open(ctx context.Context, opts Options) error {
	sync := "FULL"
	if opts.Durability == DurabilityRelaxed {
		sync = "NORMAL"
	}
	path := filepath.Join(s.dir, DatabaseFile)
	if strings.Contains(path, "?") {
		return errors.New("the path of the data directory may not contain '?'")
	}
	// The driver takes the file name up to the '?' and its own
	// parameters after it.
	dsn := func(pragmas ...string) string {
		q := url.Values{}
		for _, p := range append([]string{"busy_timeout(10000)"}, pragmas...) {
			q.Add("_pragma", p)
		}
		return path + "?" + q.Encode()
	}
	var err error
	if s.wdb, err = sql.Open("sqlite", dsn("journal_mode(WAL)", "synchronous("+sync+")")); err != nil {
		return err
	}
	s.wdb.SetMaxOpenConns(1)
	s.wdb.SetConnMaxIdleTime(0)
	s.wdb.SetConnMaxLifetime(0)
	region := opts.DefaultRegion
	if region == "" {
		region = "us-east-1"
	}
	if !baton.ValidRegion(region) {
		return fmt.Errorf("%q is not a region name", region)
	}
	if err := migrate(ctx, s.wdb, region); err != nil {
		return err
	}
	if s.rdb, err = sql.Open("sqlite", dsn("query_only(1)")); err != nil {
		return err
	}
	s.rdb.SetMaxOpenConns(4)
	s.rdb.SetMaxIdleConns(4)
	jobs, err := s.load(ctx)
	if err != nil {
		return err
	}
	conn, err := s.wdb.Conn(ctx)
	if err != nil {
		return err
	}
	st, err := prepare(ctx, conn)
	if err != nil {
		conn.Close()
		return err
	}
	s.w = newWriter(conn, st, s.committed)
	s.w.start()
	s.reclaim = newReclaimer(s.w)
	for _, j := range jobs {
		s.reclaim.add(j)
	}
	s.reclaim.start()
	return nil
}

// Close commits what is queued and closes the database. Calls after Close
// fail with ErrClosed.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		if s.reclaim != nil {
			s.reclaim.stop()
		}
		if s.w != nil {
			s.closeErr = s.w.stop()
			s.w.st.close()
			s.w.conn.Close()
		}
		if err := s.closeDBs(); err != nil && s.closeErr == nil {
			s.closeErr = err
		}
		if err := s.lock.Close(); err != nil && s.closeErr == nil {
			s.closeErr = err
		}
	})
	return s.closeErr
}

func (s *Store) closeDBs() error {
	var errs []error
	for _, db := range []*sql.DB{s.rdb, s.wdb} {
		if db != nil {
			errs = append(errs, db.Close())
		}
	}
	return errors.Join(errs...)
}

// Stats are counters of the writer since Open.
type Stats struct {
	// Commits is how many transactions were committed.
	Commits int64
	// Changes is how many changes they held: one per message sent,
	// received, deleted, moved or changed, one per queue-level call.
	Changes int64
	// Failures is how many commits failed (and were tried again).
	Failures int64
	// CommitTime is the time spent committing, failed commits included.
	CommitTime time.Duration
}

// Stats returns the writer's counters.
func (s *Store) Stats() Stats {
	return Stats{Commits: s.w.commits.Load(), Changes: s.w.changes.Load(), Failures: s.w.failures.Load(),
		CommitTime: time.Duration(s.w.commitNanos.Load())}
}

// held is a lock a call releases by hand, before it waits for its commit,
// and also defers releasing: should the call panic (net/http recovers a
// handler's panic and serves on), a stripe left locked would hang every
// queue on it. release is idempotent.
type held struct {
	unlock func()
	done   bool
}

func (h *held) release() {
	if !h.done {
		h.done = true
		h.unlock()
	}
}

// stripe returns the index of the lock of queue id.
func stripe(id uint64) int { return int((id * 0x9E3779B97F4A7C15) >> 58) }

// lockQueue locks the stripe of queue id and returns its index.
func (s *Store) lockQueue(id uint64) int {
	i := stripe(id)
	s.stripes[i].Lock()
	return i
}

// expired is the index's ExpiredFunc; the caller holds the queue's stripe.
func (s *Store) expired(queueID uint64, messageID string) {
	i := stripe(queueID)
	s.dropped[i] = append(s.dropped[i], messageID)
}

// takeDropped returns the deletions of the messages of queueID the index
// dropped since the last call; the caller holds the queue's stripe i.
func (s *Store) takeDropped(i int, queueID uint64) []change {
	if len(s.dropped[i]) == 0 {
		return nil
	}
	out := make([]change, 0, len(s.dropped[i]))
	for _, id := range s.dropped[i] {
		if pos, ok := s.forget(i, queueID, id); ok {
			out = append(out, &msgDelete{pos: pos})
		}
	}
	s.dropped[i] = s.dropped[i][:0]
	return out
}

// remember records the pos of a message of queueID; the caller holds the
// queue's stripe i.
func (s *Store) remember(i int, queueID uint64, id string, pos int64) {
	q := s.rows[i][queueID]
	if q == nil {
		q = new(ids.Map[int64])
		s.rows[i][queueID] = q
	}
	q.Put(id, pos)
}

// rowOf returns the pos of a message of queueID, if it has one; the caller
// holds the queue's stripe i.
func (s *Store) rowOf(i int, queueID uint64, id string) (int64, bool) {
	q := s.rows[i][queueID]
	if q == nil {
		return 0, false
	}
	return q.Get(id)
}

// forget drops and returns the pos of a message of queueID; the caller
// holds the queue's stripe i.
func (s *Store) forget(i int, queueID uint64, id string) (int64, bool) {
	q := s.rows[i][queueID]
	if q == nil {
		return 0, false
	}
	pos, ok := q.Get(id)
	if ok {
		q.Delete(id)
	}
	return pos, ok
}

// committed forgets the pending payloads of committed rows.
func (s *Store) committed(rows []int64) {
	if len(rows) == 0 {
		return
	}
	s.pendMu.Lock()
	for _, pos := range rows {
		delete(s.pending, pos)
	}
	s.pendMu.Unlock()
}

// row names a message's database row.
type row struct {
	id  string
	pos int64
}

// payloads finds the payloads of messages: pending ones first, the rest in
// the database. A message found in neither is gone and is missing from the
// result, which is keyed by pos.
func (s *Store) payloads(ctx context.Context, rs []row) (map[int64]payload, error) {
	out := make(map[int64]payload, len(rs))
	var rest []int64
	s.pendMu.Lock()
	for _, r := range rs {
		if p, ok := s.pending[r.pos]; ok {
			out[r.pos] = p
		} else {
			rest = append(rest, r.pos)
		}
	}
	s.pendMu.Unlock()
	// A payload leaves pending only after its commit, so a message not
	// pending now is in the database, or gone.
	const chunk = baton.MaxBatchEntries
	for len(rest) > 0 {
		n := min(len(rest), chunk)
		if err := s.readPayloads(ctx, rest[:n], out); err != nil {
			return nil, err
		}
		rest = rest[n:]
	}
	return out, nil
}

func (s *Store) readPayloads(ctx context.Context, rows []int64, out map[int64]payload) error {
	stmt, err := s.readStmt(ctx, len(rows))
	if err != nil {
		return err
	}
	args := make([]any, len(rows))
	for i, pos := range rows {
		args[i] = pos
	}
	rs, err := stmt.QueryContext(ctx, args...)
	if err != nil {
		return fmt.Errorf("sqlitestore: read bodies: %w", err)
	}
	defer rs.Close()
	for rs.Next() {
		var pos int64
		var p payload
		if err := rs.Scan(&pos, &p.body, &p.attrs, &p.trace, &p.bodyMD5); err != nil {
			return fmt.Errorf("sqlitestore: read bodies: %w", err)
		}
		out[pos] = p
	}
	if err := rs.Err(); err != nil {
		return fmt.Errorf("sqlitestore: read bodies: %w", err)
	}
	return nil
}

// readStmt returns the prepared payload read of n rows.
func (s *Store) readStmt(ctx context.Context, n int) (*sql.Stmt, error) {
	s.readMu.Lock()
	defer s.readMu.Unlock()
	if st, ok := s.readStmts[n]; ok {
		return st, nil
	}
	q := `SELECT pos, body, attributes, trace_header, body_md5 FROM messages WHERE pos IN (?` + strings.Repeat(", ?", n-1) + `)`
	st, err := s.rdb.PrepareContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: prepare body read: %w", err)
	}
	s.readStmts[n] = st
	return st, nil
}

// ---------------------------------------------------------------------------
// Queues

// QueueCreate stores the queue and returns once it is committed.
func (s *Store) QueueCreate(ctx context.Context, p baton.QueueCreateParams) error {
	put, err := newQueuePut(p.Queue)
	if err != nil {
		return fmt.Errorf("sqlitestore: encode queue: %w", err)
	}
	s.qmu.Lock()
	qm := held{unlock: s.qmu.Unlock}
	defer qm.release()
	i := s.lockQueue(p.Queue.ID)
	sl := held{unlock: s.stripes[i].Unlock}
	defer sl.release()
	s.queueWrites.Add(1)
	err = s.index.QueueCreate(ctx, p)
	var changes []change
	if err == nil {
		changes = []change{s.queueWrite(put)}
	} else {
		s.queueWrites.Add(-1)
	}
	// A refusal waits too: it must not rest on an uncommitted queue.
	b := s.w.enqueue(changes, nil)
	sl.release()
	qm.release()
	if werr := b.wait(ctx); werr != nil {
		return werr
	}
	return err
}

// QueueGet answers from memory, once what it saw is committed.
func (s *Store) QueueGet(ctx context.Context, region, account, name string) (*baton.Queue, error) {
	q, err := s.index.QueueGet(ctx, region, account, name)
	if werr := s.queuesCommitted(ctx); werr != nil {
		return nil, werr
	}
	return q, err
}

// QueueList answers from memory, once what it saw is committed.
func (s *Store) QueueList(ctx context.Context, p baton.QueueListParams) ([]*baton.Queue, error) {
	qs, err := s.index.QueueList(ctx, p)
	if werr := s.queuesCommitted(ctx); werr != nil {
		return nil, werr
	}
	return qs, err
}

// queueWrite counts c, a queue-level change, as uncommitted until it
// commits; the caller raised queueWrites before changing the index.
func (s *Store) queueWrite(c change) change {
	return &queueWrite{change: c, pending: &s.queueWrites}
}

// queuesCommitted returns once every queue-level change a read may have
// seen in memory is committed: at once when none is pending, as almost
// always; else after the latest commit, which holds them all (they are
// queued under qmu, with the index change).
func (s *Store) queuesCommitted(ctx context.Context) error {
	if s.queueWrites.Load() == 0 {
		return nil
	}
	s.qmu.Lock()
	b := s.w.enqueue(nil, nil)
	s.qmu.Unlock()
	return b.wait(ctx)
}

// QueueUpdate changes the queue and returns once the change is committed.
func (s *Store) QueueUpdate(ctx context.Context, p baton.QueueUpdateParams) (*baton.Queue, error) {
	s.qmu.Lock()
	qm := held{unlock: s.qmu.Unlock}
	defer qm.release()
	s.queueWrites.Add(1)
	q, err := s.index.QueueUpdate(ctx, p)
	if err != nil {
		s.queueWrites.Add(-1)
		qm.release()
		return nil, err
	}
	put, err := newQueuePut(q)
	if err != nil {
		s.queueWrites.Add(-1)
		qm.release()
		return nil, fmt.Errorf("sqlitestore: encode queue: %w", err)
	}
	b := s.w.enqueue([]change{s.queueWrite(put)}, nil)
	qm.release()
	if err := b.wait(ctx); err != nil {
		return nil, err
	}
	return q, nil
}

// QueueDelete deletes the queue and its deduplication keys, and records
// when, in one change; the reclaimer deletes the rows of its messages
// afterwards.
func (s *Store) QueueDelete(ctx context.Context, region, account, name string, now time.Time) error {
	s.qmu.Lock()
	qm := held{unlock: s.qmu.Unlock}
	defer qm.release()
	q, err := s.index.QueueGet(ctx, region, account, name)
	if err != nil {
		qm.release()
		return err
	}
	i := s.lockQueue(q.ID)
	sl := held{unlock: s.stripes[i].Unlock}
	defer sl.release()
	s.queueWrites.Add(1)
	err = s.index.QueueDelete(ctx, region, account, name, now)
	var b *batch
	if err == nil {
		delete(s.rows[i], q.ID)
		b = s.w.enqueue([]change{s.queueWrite(&queueDrop{id: q.ID, region: region, account: account, name: name, at: now})}, nil)
	} else {
		s.queueWrites.Add(-1)
	}
	sl.release()
	qm.release()
	if err != nil {
		return err
	}
	// The reclaimer's deletes queue behind the drop, so they commit after
	// it or not at all; added now, the job is not lost when this call
	// stops waiting early (its context ends, the commit fails and is
	// retried).
	s.reclaim.add(reclaimJob{queueID: q.ID, through: dropped})
	return b.wait(ctx)
}

// QueuePurge deletes the queue's deduplication keys, records when and marks
// its messages dead, in one change; the reclaimer deletes their rows
// afterwards. The sequence counter goes on.
func (s *Store) QueuePurge(ctx context.Context, p baton.QueuePurgeParams) error {
	s.qmu.Lock()
	qm := held{unlock: s.qmu.Unlock}
	defer qm.release()
	q, err := s.index.QueueGet(ctx, p.Region, p.Account, p.Name)
	if err != nil {
		qm.release()
		return err
	}
	i := s.lockQueue(q.ID)
	sl := held{unlock: s.stripes[i].Unlock}
	defer sl.release()
	s.queueWrites.Add(1)
	err = s.index.QueuePurge(ctx, p)
	var b *batch
	var through int64
	if err != nil {
		s.queueWrites.Add(-1)
	} else {
		delete(s.rows[i], q.ID)
		// Every message the queue holds or had came in, by send or move,
		// under this stripe's lock with a pos taken from s.pos: they are
		// all at most through, and later ones above it.
		through = s.pos.Load()
		b = s.w.enqueue([]change{s.queueWrite(&queuePurge{id: q.ID, at: p.Now, through: through})}, nil)
	}
	sl.release()
	qm.release()
	if err != nil {
		return err
	}
	s.reclaim.add(reclaimJob{queueID: q.ID, through: through}) // as in QueueDelete
	return b.wait(ctx)
}

// ---------------------------------------------------------------------------
// Messages

// MessageSend stores the messages, their deduplication keys and the
// queue's sequence counter, and returns once they are committed. A
// duplicate returns once its original is.
func (s *Store) MessageSend(ctx context.Context, p baton.MessageSendParams) ([]baton.MessageSent, error) {
	// The index gets the messages without their payloads.
	bare := make([]*baton.Message, len(p.Messages))
	pays := make([]payload, len(p.Messages))
	for i, m := range p.Messages {
		c := *m
		c.Body, c.BodyMD5, c.Attributes, c.TraceHeader = "", "", nil, ""
		bare[i] = &c
		pays[i] = payloadOf(m)
	}
	ip := p
	ip.Messages = bare

	i := s.lockQueue(p.QueueID)
	sl := held{unlock: s.stripes[i].Unlock}
	defer sl.release()
	sent, err := s.index.MessageSend(ctx, ip)
	if err != nil {
		sl.release()
		return nil, err
	}
	changes := make([]change, 0, len(sent)+1)
	inserted := make([]int64, 0, len(sent))
	// The engine passes deduplication keys for FIFO queues only.
	isFIFO := len(p.DedupKeys) == len(p.Messages)
	var fifo *fifoSent
	s.pendMu.Lock()
	for j, st := range sent {
		if st.Duplicate {
			continue
		}
		m := bare[j]
		m.SequenceNumber = st.SequenceNumber
		pos := s.pos.Add(1)
		s.remember(i, p.QueueID, m.ID, pos)
		changes = append(changes, &msgInsert{pos: pos, queueID: p.QueueID, id: m.ID, state: encodeState(m), pay: pays[j]})
		inserted = append(inserted, pos)
		s.pending[pos] = pays[j]
		if isFIFO {
			if fifo == nil {
				fifo = &fifoSent{queueID: p.QueueID, cutoff: p.DedupCutoff}
			}
			fifo.lastSeq = st.SequenceNumber
			fifo.keys = append(fifo.keys, dedupRow{key: p.DedupKeys[j], messageID: m.ID, seq: st.SequenceNumber, at: m.SentAt})
		}
	}
	s.pendMu.Unlock()
	if fifo != nil {
		changes = append(changes, fifo)
	}
	b := s.w.enqueue(changes, inserted)
	sl.release()
	if err := b.wait(ctx); err != nil {
		return nil, err
	}
	return sent, nil
}

// MessageReceive leases messages in memory, reads their payloads from the
// database (or from memory, for sends not committed yet) while the leases
// commit, and returns once they are committed. Messages past retention are
// deleted in the same commit.
func (s *Store) MessageReceive(ctx context.Context, p baton.MessageReceiveParams) ([]*baton.Message, error) {
	i := s.lockQueue(p.QueueID)
	sl := held{unlock: s.stripes[i].Unlock}
	defer sl.release()
	msgs, err := s.index.MessageReceive(ctx, p)
	changes := s.takeDropped(i, p.QueueID)
	if err != nil {
		sl.release()
		return nil, err
	}
	if len(msgs) == 0 && len(changes) == 0 {
		// Nothing found, nothing claimed: no commit to wait for.
		sl.release()
		return msgs, nil
	}
	rs := make([]row, 0, len(msgs))
	for _, m := range msgs {
		pos, ok := s.rowOf(i, p.QueueID, m.ID)
		if !ok {
			sl.release()
			return nil, fmt.Errorf("sqlitestore: message %s has no row", m.ID)
		}
		rs = append(rs, row{m.ID, pos})
		changes = append(changes, stateOf(pos, m))
	}
	b := s.w.enqueue(changes, nil)
	sl.release()

	leases := make([]baton.VisibilityChange, len(msgs))
	for j, m := range msgs {
		leases[j] = baton.VisibilityChange{MessageID: m.ID, Epoch: m.Epoch, VisibleAt: p.Now}
	}
	// Read the bodies while the leases commit.
	out, err := s.withPayloads(ctx, msgs, rs)
	if err == nil {
		err = b.wait(ctx)
	}
	if err != nil {
		// Nobody will hold these leases: give them back rather than leave
		// the messages hidden for the whole visibility timeout. Best
		// effort; the receives stay counted, as for an answer lost on the
		// way.
		s.MessageChangeVisibilityBatch(context.WithoutCancel(ctx), baton.MessageChangeVisibilityBatchParams{
			QueueID: p.QueueID, Now: p.Now, Entries: leases,
		})
		return nil, err
	}
	return out, nil
}

// withPayloads gives msgs, found at rs, their payloads, and returns those
// that still have one (not purged, their queue not deleted, meanwhile).
func (s *Store) withPayloads(ctx context.Context, msgs []*baton.Message, rs []row) ([]*baton.Message, error) {
	pays, err := s.payloads(ctx, rs)
	if err != nil {
		return nil, err
	}
	out := make([]*baton.Message, 0, len(msgs))
	for j, m := range msgs {
		pay, ok := pays[rs[j].pos]
		if !ok {
			continue
		}
		if err := pay.fill(m); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// leaseCall runs a call that acts on one message by a receipt's lease. call
// applies it to the index, under the locks of queueIDs, and returns its
// outcome and the changes to queue; it gets the message's pos, if the
// message exists. The outcome's message gets its payload, read under the
// lock before the call.
func (s *Store) leaseCall(ctx context.Context, queueIDs []uint64, messageID string,
	call func(pos int64) (baton.LeaseOutcome, []change, error)) (baton.LeaseOutcome, error) {
	lk := held{unlock: s.lockQueues(queueIDs)}
	defer lk.release()
	i := stripe(queueIDs[0])
	pos, ok := s.rowOf(i, queueIDs[0], messageID)
	var pay payload
	if ok {
		pays, err := s.payloads(ctx, []row{{messageID, pos}})
		if err != nil {
			lk.release()
			return baton.LeaseOutcome{}, err
		}
		pay, ok = pays[pos]
	}
	out, changes, err := call(pos)
	if err != nil {
		lk.release()
		return baton.LeaseOutcome{}, err
	}
	// A moved message is at its new pos in the index at once, but its row
	// only once the move commits: until then a receive from the target
	// queue finds its payload pending, under the new pos.
	var moved []int64
	for _, c := range changes {
		if mv, isMove := c.(*msgMove); isMove && ok {
			s.pendMu.Lock()
			s.pending[mv.pos] = pay
			s.pendMu.Unlock()
			moved = append(moved, mv.pos)
		}
	}
	b := s.w.enqueue(changes, moved)
	lk.release()
	if out.Message != nil && ok {
		if err := pay.fill(out.Message); err != nil {
			return baton.LeaseOutcome{}, err
		}
	}
	if err := b.wait(ctx); err != nil {
		return baton.LeaseOutcome{}, err
	}
	return out, nil
}

// lockQueues locks the stripes of the queues, in index order, and returns
// the function that unlocks them.
func (s *Store) lockQueues(ids []uint64) func() {
	a := stripe(ids[0])
	if len(ids) == 1 || stripe(ids[1]) == a {
		s.stripes[a].Lock()
		return s.stripes[a].Unlock
	}
	b := stripe(ids[1])
	if b < a {
		a, b = b, a
	}
	s.stripes[a].Lock()
	s.stripes[b].Lock()
	return func() {
		s.stripes[b].Unlock()
		s.stripes[a].Unlock()
	}
}

// MessageDelete deletes by a receipt's lease; the outcome's message has
// its payload.
func (s *Store) MessageDelete(ctx context.Context, p baton.MessageDeleteParams) (baton.LeaseOutcome, error) {
	return s.leaseCall(ctx, []uint64{p.QueueID}, p.MessageID, func(pos int64) (baton.LeaseOutcome, []change, error) {
		out, err := s.index.MessageDelete(ctx, p)
		if err != nil || out.Message == nil {
			return out, nil, err
		}
		if out.Result == baton.LeaseCurrent || !p.RequireLive {
			s.forget(stripe(p.QueueID), p.QueueID, p.MessageID)
			return out, []change{&msgDelete{pos: pos}}, nil
		}
		return out, nil, nil
	})
}

// MessageChangeVisibility moves the end of a lease; the outcome's message
// has its payload.
func (s *Store) MessageChangeVisibility(ctx context.Context, p baton.MessageChangeVisibilityParams) (baton.LeaseOutcome, error) {
	return s.leaseCall(ctx, []uint64{p.QueueID}, p.MessageID, func(pos int64) (baton.LeaseOutcome, []change, error) {
		out, err := s.index.MessageChangeVisibility(ctx, p)
		if err != nil || !out.Result.Changed() {
			return out, nil, err
		}
		m := *out.Message
		m.VisibleAt = p.VisibleAt
		return out, []change{stateOf(pos, &m)}, nil
	})
}

// MessageMove moves a message to the end of another queue, keeping its
// payload where it is; the outcome's message has its payload.
func (s *Store) MessageMove(ctx context.Context, p baton.MessageMoveParams) (baton.LeaseOutcome, error) {
	return s.leaseCall(ctx, []uint64{p.QueueID, p.ToQueueID}, p.MessageID, func(pos int64) (baton.LeaseOutcome, []change, error) {
		out, err := s.index.MessageMove(ctx, p)
		if err != nil || out.Result != baton.LeaseCurrent {
			return out, nil, err
		}
		to := s.pos.Add(1)
		s.forget(stripe(p.QueueID), p.QueueID, p.MessageID)
		s.remember(stripe(p.ToQueueID), p.ToQueueID, p.MessageID, to)
		// The message as the index now holds it in the target queue.
		m := *out.Message
		m.VisibleAt, m.Leased, m.ReceiveCount, m.DeadLetterSourceARN = p.Now, false, p.ReceiveCount, p.DeadLetterSourceARN
		if p.ResetSentAt {
			m.SentAt = p.Now
		}
		return out, []change{&msgMove{from: pos, pos: to, toQueueID: p.ToQueueID, state: encodeState(&m)}}, nil
	})
}

// MessageStats answers from memory.
func (s *Store) MessageStats(ctx context.Context, p baton.MessageStatsParams) (baton.MessageStats, error) {
	return s.index.MessageStats(ctx, p)
}

// MessageExpire deletes the queue's messages sent before cutoff and
// returns once the deletions are committed.
func (s *Store) MessageExpire(ctx context.Context, queueID uint64, cutoff time.Time) (int, error) {
	i := s.lockQueue(queueID)
	sl := held{unlock: s.stripes[i].Unlock}
	defer sl.release()
	n, err := s.index.MessageExpire(ctx, queueID, cutoff)
	changes := s.takeDropped(i, queueID)
	if err != nil || len(changes) == 0 {
		sl.release()
		return n, err
	}
	b := s.w.enqueue(changes, nil)
	sl.release()
	if err := b.wait(ctx); err != nil {
		return 0, err
	}
	return n, nil
}

// MoveTaskSave queues the task's row and returns once it is committed.
// Saves of one task must not run concurrently: the last one queued wins.
func (s *Store) MoveTaskSave(ctx context.Context, t baton.MoveTask) error {
	return s.w.enqueue([]change{&moveTaskPut{t: t}}, nil).wait(ctx)
}

// MoveTaskList reads every task from the database: a save returns only
// once committed, so the database holds each one acknowledged.
func (s *Store) MoveTaskList(ctx context.Context) ([]baton.MoveTask, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT handle, source_arn, destination_arn, max_per_second,
		status, moved, to_move, failure_reason, started_at FROM move_tasks`)
	if err != nil {
		return nil, fmt.Errorf("sqlitestore: list move tasks: %w", err)
	}
	defer rows.Close()
	var out []baton.MoveTask
	for rows.Next() {
		var (
			t       baton.MoveTask
			rate    int64
			started int64
		)
		if err := rows.Scan(&t.Handle, &t.SourceARN, &t.DestinationARN, &rate, &t.Status, &t.Moved, &t.ToMove,
			&t.FailureReason, &started); err != nil {
			return nil, fmt.Errorf("sqlitestore: list move tasks: %w", err)
		}
		t.MaxPerSecond, t.StartedAt = int(rate), decTime(started)
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlitestore: list move tasks: %w", err)
	}
	return out, nil
}
