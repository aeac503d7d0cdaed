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

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/pgtest"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/internal/testutil/logbuf"
	"github.com/baton-sqs/baton/internal/testutil/poll"
	"github.com/baton-sqs/baton/internal/testutil/skipnote"
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

// TestShared runs the shared suite on two stores of one database, as two
// servers hold them.
func TestShared(t *testing.T) {
	t.Parallel()
	storetest.RunShared(t, func(t *testing.T) (baton.SharedStore, baton.SharedStore) {
		url := pgtest.MustDatabase(t)
		a, b := mustOpen(t, url), mustOpen(t, url)
		// What the other notifies before a store listens is lost: start
		// both listeners, with a subscriber that ignores what it hears.
		for _, s := range []*pgstore.Store{a, b} {
			s.Subscribe(func(uint64) {})
			select {
			case <-s.Listening():
			case <-time.After(10 * time.Second):
				t.Fatal("the listener never listened")
			}
		}
		return a, b
	})
}

// TestLedgerBatchTooLarge: a lease-ledger batch over the NOTIFY payload
// limit is refused.
func TestLedgerBatchTooLarge(t *testing.T) {
	t.Parallel()
	s := mustOpen(t, pgtest.MustDatabase(t))
	if err := s.PublishLedger(t.Context(), [][]byte{make([]byte, 6000)}); err == nil {
		t.Error("a batch over the NOTIFY limit was accepted")
	}
}

// TestOpenWaitsForDatabase opens a database that does not exist yet: Open
// retries until it is created.
func TestOpenWaitsForDatabase(t *testing.T) {
	t.Parallel()
	admin := pgtest.MustConnect(t, pgtest.MustDatabase(t))
	name := fmt.Sprintf("late_%d", time.Now().UnixNano())
	t.Cleanup(func() { admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") })
	u, err := neturl.Parse(admin.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name

	logs := &logbuf.Buffer{}
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
	admin := pgtest.MustConnect(t, pgtest.MustDatabase(t))
	name := fmt.Sprintf("icu_%d", time.Now().UnixNano())
	if _, err := admin.Exec(t.Context(), "CREATE DATABASE "+name+" TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US'"); err != nil {
		skipnote.Skip(t, "PostgreSQL built with ICU", "no ICU collation to test against: %v", err)
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

// Servers starting together on a fresh database: while one's insert of the
// receipt key is not committed, another's ReceiptKey waits for it and
// returns that key (it used to read neither row and fail, and `baton
// serve` exited).
func TestReceiptKeyWhileAnotherCreatesIt(t *testing.T) {
	t.Parallel()
	url := pgtest.MustDatabase(t)
	s := mustOpen(t, url)
	other := pgtest.MustConnect(t, url)
	watch := pgtest.MustConnect(t, url)
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
	poll.For(t, 10*time.Second, func() error {
		var waiting int
		if err := watch.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting == 0 {
			return errors.New("the store's ReceiptKey is not waiting on the other insert")
		}
		return nil
	})
	if err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || !bytes.Equal(r.key, want) {
		t.Errorf("ReceiptKey while another server created it: %x, %v; want that server's key", r.key, r.err)
	}
}
