package pgstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	neturl "net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/pgtest"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/store/memstore"
	"github.com/baton-sqs/baton/store/pgstore"
	"github.com/baton-sqs/baton/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// quiet is the stores' logger: the suite opens many, each migrating.
var quiet = pgstore.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}

// mustOpen opens a store on url; the store is closed when the test ends
// (before its database is dropped).
func mustOpen(t *testing.T, url string) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(context.Background(), url, quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestStore(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) baton.Store {
		s, err := pgstore.Open(context.Background(), pgtest.MustDatabase(t)+"&pool_max_conns=10", quiet)
		if err != nil {
			t.Fatal(err)
		}
		return s // storetest closes it
	})
}

// Tests of what the suite cannot see: several stores (as on several
// servers) on one database, notifications between them, opening and
// migrating, and byte-wise name order under a linguistic collation.

var base = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// TestFIFOGroupsAcrossStores has receivers on two stores race for the
// messages of a FIFO queue's groups: a receive must never take a group's
// messages while an earlier one of the group is still held, nor out of
// order, and every message is received exactly once.
func TestFIFOGroupsAcrossStores(t *testing.T) {
	t.Parallel()
	url := pgtest.MustDatabase(t)
	stores := []*pgstore.Store{mustOpen(t, url), mustOpen(t, url)}
	const groups, perGroup, receivers = 6, 40, 8
	q := storetest.NewFIFOQueue(storetest.QueueID(1), "race.fifo")
	storetest.MustCreateQueue(t, stores[0], q)
	index := make(map[string]int) // message id -> its place in its group
	n := 0
	for i := range perGroup {
		var batch []*baton.Message
		for g := range groups {
			n++
			m := storetest.NewGroupMessage(n, fmt.Sprintf("g%d", g), base)
			index[m.ID] = i
			batch = append(batch, m)
		}
		storetest.MustSendFIFO(t, stores[i%2], q.ID, base, batch...)
	}

	// next[g] is the place of the message group g must yield next. A
	// receiver moves it past its batch just before it deletes the batch's
	// last message: no other receive may see the group's next message before
	// that delete commits.
	var (
		mu   sync.Mutex
		next = make(map[string]int)
		seen = make(map[string]bool)
	)
	now := base.Add(time.Second)
	var wg sync.WaitGroup
	for r := range receivers {
		s := stores[r%2]
		wg.Go(func() {
			del := func(m *baton.Message) {
				out, err := s.MessageDelete(t.Context(), baton.MessageDeleteParams{
					QueueID: q.ID, MessageID: m.ID, Epoch: m.Epoch, Now: now, RequireLive: true,
				})
				if err != nil || out.Result != baton.LeaseCurrent {
					t.Errorf("receiver %d: delete %s: result %v, error %v; want the live lease", r, m.ID, out.Result, err)
				}
			}
			for empty := 0; empty < 50; {
				msgs, err := s.MessageReceive(t.Context(), baton.MessageReceiveParams{
					QueueID: q.ID, Now: now, Max: 1 + r%10, VisibleAt: now.Add(time.Hour), RetentionCutoff: base.Add(-time.Hour),
				})
				if err != nil {
					t.Errorf("receiver %d: %v", r, err)
					return
				}
				if len(msgs) == 0 {
					empty++
					continue
				}
				last := make(map[string]*baton.Message) // per group
				mu.Lock()
				for _, m := range msgs {
					if seen[m.ID] {
						t.Errorf("receiver %d: message %s received twice", r, m.ID)
					}
					seen[m.ID] = true
					if l := last[m.GroupID]; l != nil && index[m.ID] != index[l.ID]+1 {
						t.Errorf("receiver %d: group %s yielded message %d after %d", r, m.GroupID, index[m.ID], index[l.ID])
					}
					if l := last[m.GroupID]; l == nil && index[m.ID] != next[m.GroupID] {
						t.Errorf("receiver %d: got message %d of group %s while message %d is not yet deleted", r, index[m.ID], m.GroupID, next[m.GroupID])
					}
					last[m.GroupID] = m
				}
				mu.Unlock()
				for _, m := range msgs {
					if last[m.GroupID] != m {
						del(m)
					}
				}
				for g, m := range last {
					mu.Lock()
					next[g] = index[m.ID] + 1
					mu.Unlock()
					del(m)
				}
			}
		})
	}
	wg.Wait()
	if len(seen) != groups*perGroup {
		t.Errorf("received %d distinct messages, want %d", len(seen), groups*perGroup)
	}
	storetest.MustStats(t, stores[1], q.ID, now) // the queue is still there
	if st := storetest.MustStats(t, stores[0], q.ID, now); st.Visible+st.InFlight+st.Delayed != 0 {
		t.Errorf("stats after the race: %+v, want an empty queue", st)
	}
}

// TestDedupAcrossStores sends one deduplication key through two stores at
// once, many times: exactly one message is stored per key, and every send
// reports its id and sequence number.
func TestDedupAcrossStores(t *testing.T) {
	t.Parallel()
	url := pgtest.MustDatabase(t)
	stores := []*pgstore.Store{mustOpen(t, url), mustOpen(t, url)}
	q := storetest.NewFIFOQueue(storetest.QueueID(1), "dedup.fifo")
	storetest.MustCreateQueue(t, stores[0], q)
	const keys, senders = 20, 6
	results := make([][]baton.MessageSent, senders)
	var wg sync.WaitGroup
	for w := range senders {
		wg.Go(func() {
			for k := range keys {
				m := storetest.NewGroupMessage(1000*w+k, "g", base)
				m.DedupID = fmt.Sprintf("key-%d", k)
				sent, err := stores[w%2].MessageSend(t.Context(), baton.MessageSendParams{
					QueueID: q.ID, Messages: []*baton.Message{m}, DedupKeys: []string{m.DedupID}, DedupCutoff: base.Add(-5 * time.Minute),
				})
				if err != nil {
					t.Errorf("sender %d: %v", w, err)
					return
				}
				results[w] = append(results[w], sent[0])
			}
		})
	}
	wg.Wait()
	for k := range keys {
		var stored []baton.MessageSent
		ids := make(map[string]bool)
		for w := range senders {
			if k >= len(results[w]) {
				continue
			}
			r := results[w][k]
			ids[r.MessageID+"/"+r.SequenceNumber] = true
			if !r.Duplicate {
				stored = append(stored, r)
			}
		}
		if len(stored) != 1 || len(ids) != 1 {
			t.Errorf("key-%d: stored %d times, reported as %d different messages; want 1 and 1", k, len(stored), len(ids))
		}
	}
	if st := storetest.MustStats(t, stores[1], q.ID, base); st.Visible != keys {
		t.Errorf("visible after the sends: got %d, want %d", st.Visible, keys)
	}
}

// TestNotifyAcrossStores: a send through one store calls the subscribers
// of another on the same database, with the queue's id.
func TestNotifyAcrossStores(t *testing.T) {
	t.Parallel()
	url := pgtest.MustDatabase(t)
	a, b := mustOpen(t, url), mustOpen(t, url)
	var mu sync.Mutex
	var woken []uint64
	a.Subscribe(func(id uint64) {
		mu.Lock()
		woken = append(woken, id)
		mu.Unlock()
	})
	q := storetest.NewQueue(storetest.QueueID(7), "wake")
	storetest.MustCreateQueue(t, b, q)
	// The listener connects in the background: send until it hears one.
	n := 0
	testutil.CheckFor(t, 10*time.Second, func() error {
		n++
		storetest.MustSend(t, b, q.ID, storetest.NewMessage(n, base))
		mu.Lock()
		defer mu.Unlock()
		if len(woken) == 0 {
			return errors.New("no notification yet")
		}
		if woken[0] != q.ID {
			return fmt.Errorf("notified queue %#x, want %#x", woken[0], q.ID)
		}
		return nil
	})
}

// wakePair opens two stores on one fresh database and returns the second,
// to act on, and expect, which fails the test unless the first is woken
// next for queue want (what names the cause).
func wakePair(t *testing.T) (*pgstore.Store, func(what string, want uint64)) {
	t.Helper()
	url := pgtest.MustDatabase(t)
	a, b := mustOpen(t, url), mustOpen(t, url)
	woken := make(chan uint64, 100)
	a.Subscribe(func(id uint64) { woken <- id })
	select {
	case <-a.Listening():
	case <-time.After(10 * time.Second):
		t.Fatal("the listener never listened")
	}
	return b, func(what string, want uint64) {
		t.Helper()
		select {
		case got := <-woken:
			if got != want {
				t.Fatalf("%s: woken for queue %#x, want %#x", what, got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no wake-up", what)
		}
	}
}

// TestWakeAfterReleaseAndMove: besides sends, a release (one or in a
// batch) and a move wake the other servers' long polls on the queue that
// got a receivable message; a lease that only moves its end wakes nobody.
func TestWakeAfterReleaseAndMove(t *testing.T) {
	t.Parallel()
	b, expect := wakePair(t)
	q := storetest.NewQueue(storetest.QueueID(7), "wake")
	dlq := storetest.NewQueue(storetest.QueueID(8), "wake-dlq")
	storetest.MustCreateQueue(t, b, q)
	storetest.MustCreateQueue(t, b, dlq)
	storetest.MustSend(t, b, q.ID, storetest.NewMessage(1, base), storetest.NewMessage(2, base), storetest.NewMessage(3, base))
	expect("send", q.ID)
	got := storetest.MustReceive(t, b, baton.MessageReceiveParams{QueueID: q.ID, Now: base, Max: 3, VisibleAt: base.Add(time.Minute),
		RetentionCutoff: base.Add(-time.Hour)})
	if len(got) != 3 {
		t.Fatalf("received %d messages, want 3", len(got))
	}
	// Extending a lease makes nothing receivable: no wake-up, so the
	// next one heard is for the other queue's send.
	storetest.MustChangeVisibility(t, b, baton.MessageChangeVisibilityParams{QueueID: q.ID, MessageID: got[0].ID, Epoch: got[0].Epoch,
		Now: base, VisibleAt: base.Add(time.Hour)})
	storetest.MustSend(t, b, dlq.ID, storetest.NewMessage(4, base))
	expect("send to the other queue after an extension", dlq.ID)
	storetest.MustChangeVisibility(t, b, baton.MessageChangeVisibilityParams{QueueID: q.ID, MessageID: got[1].ID, Epoch: got[1].Epoch,
		Now: base, VisibleAt: base})
	expect("release", q.ID)
	if _, err := b.MessageChangeVisibilityBatch(t.Context(), baton.MessageChangeVisibilityBatchParams{QueueID: q.ID, Now: base,
		Entries: []baton.VisibilityChange{{MessageID: got[2].ID, Epoch: got[2].Epoch, VisibleAt: base}}}); err != nil {
		t.Fatal(err)
	}
	expect("release in a batch", q.ID)
	if _, err := b.MessageMove(t.Context(), baton.MessageMoveParams{QueueID: q.ID, MessageID: got[1].ID, ToQueueID: dlq.ID, Now: base}); err != nil {
		t.Fatal(err)
	}
	expect("move", dlq.ID)
}

// TestWakeAfterFIFODelete: deleting the in-flight head of a FIFO group
// makes the group's next message receivable, so it wakes the other
// servers' long polls on the queue; deleting a standard queue's message
// makes nothing receivable and wakes nobody.
func TestWakeAfterFIFODelete(t *testing.T) {
	t.Parallel()
	b, expect := wakePair(t)
	q := storetest.NewFIFOQueue(storetest.QueueID(7), "wake.fifo")
	std := storetest.NewQueue(storetest.QueueID(8), "wake-std")
	storetest.MustCreateQueue(t, b, q)
	storetest.MustCreateQueue(t, b, std)
	storetest.MustSendFIFO(t, b, q.ID, base, storetest.NewGroupMessage(1, "g", base), storetest.NewGroupMessage(2, "g", base))
	expect("FIFO send", q.ID)
	storetest.MustSend(t, b, std.ID, storetest.NewMessage(3, base))
	expect("standard send", std.ID)
	recv := func(id uint64) *baton.Message {
		t.Helper()
		got := storetest.MustReceive(t, b, baton.MessageReceiveParams{QueueID: id, Now: base, Max: 1, VisibleAt: base.Add(time.Minute),
			RetentionCutoff: base.Add(-time.Hour)})
		if len(got) != 1 {
			t.Fatalf("received %d messages, want 1", len(got))
		}
		return got[0]
	}
	head, m := recv(q.ID), recv(std.ID)
	if _, err := b.MessageDeleteBatch(t.Context(), baton.MessageDeleteBatchParams{QueueID: std.ID, Now: base,
		Entries: []baton.LeaseRef{{MessageID: m.ID, Epoch: m.Epoch}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.MessageDeleteBatch(t.Context(), baton.MessageDeleteBatchParams{QueueID: q.ID, Now: base, RequireLive: true,
		Entries: []baton.LeaseRef{{MessageID: head.ID, Epoch: head.Epoch}}}); err != nil {
		t.Fatal(err)
	}
	expect("FIFO delete of the group's head (after a standard delete, which wakes nobody)", q.ID)
}

// TestLedgerBusAcrossStores: a lease-ledger batch of the largest size,
// any bytes, published through one store reaches the subscribers of every
// store on the database, its own included, unchanged; a larger one is
// refused.
func TestLedgerBusAcrossStores(t *testing.T) {
	t.Parallel()
	url := pgtest.MustDatabase(t)
	a, b := mustOpen(t, url), mustOpen(t, url)
	var mu sync.Mutex
	got := map[string][][]byte{}
	for name, s := range map[string]*pgstore.Store{"a": a, "b": b} {
		s.SubscribeLedger(func(batch []byte) {
			mu.Lock()
			got[name] = append(got[name], bytes.Clone(batch))
			mu.Unlock()
		})
	}
	batch := make([]byte, baton.MaxLedgerBatch)
	for i := range batch {
		batch[i] = byte(i * 7)
	}
	ctx := context.Background()
	// The listeners connect in the background: publish until both hear.
	testutil.CheckFor(t, 10*time.Second, func() error {
		if err := a.PublishLedger(ctx, [][]byte{batch}); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, name := range []string{"a", "b"} {
			if len(got[name]) == 0 {
				return fmt.Errorf("store %s heard nothing yet", name)
			}
			if !bytes.Equal(got[name][0], batch) {
				return fmt.Errorf("store %s heard %d different bytes", name, len(got[name][0]))
			}
		}
		return nil
	})
	if err := a.PublishLedger(ctx, [][]byte{make([]byte, 6000)}); err == nil {
		t.Error("a batch over the NOTIFY limit was accepted")
	}
}

// TestOpenWaitsForDatabase opens a database that does not exist yet: Open
// retries until it is created.
func TestOpenWaitsForDatabase(t *testing.T) {
	t.Parallel()
	admin, err := pgx.Connect(t.Context(), pgtest.MustDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	name := fmt.Sprintf("late_%d", time.Now().UnixNano())
	t.Cleanup(func() { admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") })
	u, err := neturl.Parse(admin.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name

	logs := &syncBuffer{}
	type result struct {
		s   *pgstore.Store
		err error
	}
	opened := make(chan result, 1)
	go func() {
		s, err := pgstore.Open(context.Background(), u.String(), pgstore.Options{
			Logger: slog.New(slog.NewTextHandler(logs, nil)), ConnectTimeout: 30 * time.Second,
		})
		opened <- result{s, err}
	}()
	testutil.CheckFor(t, 10*time.Second, func() error {
		if !strings.Contains(logs.String(), "PostgreSQL unreachable") {
			return errors.New("no retry logged yet")
		}
		return nil
	})
	if _, err := admin.Exec(t.Context(), "CREATE DATABASE "+name+" TEMPLATE template0"); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-opened:
		if r.err != nil {
			t.Fatalf("open once the database exists: %v", r.err)
		}
		if err := r.s.Ping(t.Context()); err != nil {
			t.Errorf("ping: %v", err)
		}
		r.s.Close()
	case <-time.After(20 * time.Second):
		t.Fatal("open did not return 20s after the database was created")
	}
}

// TestOpenUnreachable: a database that never answers fails Open after the
// timeout with an error that names it but not its password.
func TestOpenUnreachable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir() // a socket directory with no server in it
	url := "postgres://baton:sekret@/nowhere?host=" + dir + "&port=5432"
	_, err := pgstore.Open(context.Background(), url, pgstore.Options{
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), ConnectTimeout: 300 * time.Millisecond,
	})
	if err == nil {
		t.Fatal("open succeeded with no server")
	}
	if msg := err.Error(); !strings.Contains(msg, "cannot reach PostgreSQL") || !strings.Contains(msg, "nowhere") || strings.Contains(msg, "sekret") {
		t.Errorf("open error %q: want it to say PostgreSQL cannot be reached, name the database, and hide the password", msg)
	}
}

// TestOpenConcurrently has several servers start on one new database at
// once: the migrations run once, and every store works.
func TestOpenConcurrently(t *testing.T) {
	t.Parallel()
	url := pgtest.MustDatabase(t)
	stores := make([]*pgstore.Store, 4)
	var wg sync.WaitGroup
	for i := range stores {
		wg.Go(func() {
			s, err := pgstore.Open(context.Background(), url, quiet)
			if err != nil {
				t.Error(err)
				return
			}
			t.Cleanup(func() { s.Close() })
			stores[i] = s
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for i, s := range stores {
		q := storetest.NewQueue(storetest.QueueID(i+1), fmt.Sprintf("q%d", i))
		storetest.MustCreateQueue(t, s, q)
		storetest.MustGetQueue(t, stores[(i+1)%len(stores)], q.Account, q.Name)
	}
	key0, err := stores[0].ReceiptKey(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range stores {
		key, err := s.ReceiptKey(t.Context())
		if err != nil || !bytes.Equal(key, key0) || len(key) != 32 {
			t.Errorf("store %d: receipt key %x, error %v; want the shared 32-byte key %x", i, key, err, key0)
		}
	}
}

// TestQueueListByteOrder lists queues on a database whose default collation
// is linguistic (ICU en-US, where "a_b" < "aB" < "ab" < "AB"): names still
// sort and page byte-wise, as in memstore.
func TestQueueListByteOrder(t *testing.T) {
	t.Parallel()
	admin, err := pgx.Connect(t.Context(), pgtest.MustDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	name := fmt.Sprintf("icu_%d", time.Now().UnixNano())
	if _, err := admin.Exec(t.Context(), "CREATE DATABASE "+name+" TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US'"); err != nil {
		t.Skipf("no ICU collation to test against: %v", err)
	}
	t.Cleanup(func() { admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") })
	u, err := neturl.Parse(admin.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	pg := mustOpen(t, u.String())
	mem := memstore.New()
	names := []string{"ab", "AB", "aB", "a_b", "a-b", "Ab", "b", "_z", "Z9", "a0"}
	for i, n := range names {
		storetest.MustCreateQueue(t, pg, storetest.NewQueue(storetest.QueueID(i+1), n))
		storetest.MustCreateQueue(t, mem, storetest.NewQueue(storetest.QueueID(i+1), n))
	}
	for _, p := range []baton.QueueListParams{
		{Account: storetest.Account},
		{Account: storetest.Account, After: "a_b"},
		{Account: storetest.Account, After: "AB", Limit: 3},
		{Account: storetest.Account, Prefix: "a"},
	} {
		got, want := listNames(t, pg, p), listNames(t, mem, p)
		if !slices.Equal(got, want) {
			t.Errorf("list %+v: got %v, want %v (memstore's byte order)", p, got, want)
		}
	}
}

func listNames(t *testing.T, s baton.Store, p baton.QueueListParams) []string {
	t.Helper()
	qs, err := s.QueueList(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, q := range qs {
		names = append(names, q.Name)
	}
	return names
}

// syncBuffer is a bytes.Buffer safe for a logger and a test to share.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Servers starting together on a fresh database: while one's insert of the
// receipt key is not committed, another's ReceiptKey waits for it and
// returns that key (it used to read neither row and fail, and `baton
// serve` exited).
func TestReceiptKeyWhileAnotherCreatesIt(t *testing.T) {
	t.Parallel()
	url := pgtest.MustDatabase(t)
	s := mustOpen(t, url)
	other, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(context.Background())
	watch, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close(context.Background())
	tx, err := other.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Repeat([]byte{42}, 32)
	if _, err := tx.Exec(t.Context(), `INSERT INTO baton_settings (name, value) VALUES ('receipt_key', $1)`, want); err != nil {
		t.Fatal(err)
	}
	type result struct {
		key []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		key, err := s.ReceiptKey(context.Background())
		done <- result{key, err}
	}()
	// Commit once the store's insert waits on the other's row.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var waiting int
		if err := watch.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the store's ReceiptKey never waited on the other insert")
		}
	}
	if err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || !bytes.Equal(r.key, want) {
		t.Errorf("ReceiptKey while another server created it: %x, %v; want that server's key", r.key, r.err)
	}
}
