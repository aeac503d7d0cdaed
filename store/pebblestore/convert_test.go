package pebblestore_test

import (
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/store/pebblestore"
	"github.com/baton-sqs/baton/store/storetest"
)

// The fixture is a data directory as the SQLite store of the release before
// the Pebble log left it when killed: commits in its write-ahead log, dead
// rows of a purged and a deleted queue not reclaimed yet. It was written by
// the test TestWriteFixture of store/sqlitestore, at the commit that added
// testdata/sqlite-fixture; fixtureBase is the base time it used.
const fixture = "testdata/sqlite-fixture"

var fixtureBase = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func fixtureAt(d time.Duration) time.Time { return fixtureBase.Add(d) }

// copyFixture copies the fixture to a new directory and returns it.
func copyFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(fixture)); err != nil {
		t.Fatal(err)
	}
	return dir
}

// checkFixture checks that s holds what the fixture's store held, by
// receiving its messages: call it once per store.
func checkFixture(t *testing.T, s *pebblestore.Store) {
	t.Helper()
	acct := storetest.Account
	queue := func(region, name string) *baton.Queue {
		t.Helper()
		q, err := s.QueueGet(t.Context(), region, acct, name)
		if err != nil {
			t.Fatalf("queue %s/%s after the conversion: %v", region, name, err)
		}
		return q
	}
	orders, jobs, purged := queue("us-east-1", "orders"), queue("us-east-1", "jobs.fifo"), queue("us-east-1", "purged")
	dlq, west := queue("us-east-1", "dlq"), queue("eu-west-1", "orders")
	if orders.Attributes.VisibilityTimeout != 45 || !maps.Equal(orders.Tags, map[string]string{"team": "billing"}) ||
		!orders.CreatedAt.Equal(fixtureBase) {
		t.Errorf("queue orders: %+v", orders)
	}
	if !jobs.IsFIFO() || jobs.DedupScope != "queue" || !purged.PurgedAt.Equal(fixtureAt(8*time.Second)) {
		t.Errorf("queues jobs.fifo %+v, purged %+v", jobs, purged)
	}
	if _, err := s.QueueGet(t.Context(), "us-east-1", acct, "gone"); !errors.Is(err, baton.ErrNotFound) {
		t.Errorf("the deleted queue: got %v, want ErrNotFound", err)
	}
	again := storetest.NewQueue(storetest.QueueID(9), "gone")
	err := s.QueueCreate(t.Context(), baton.QueueCreateParams{Queue: again, DeletedCutoff: fixtureBase})
	if !errors.Is(err, baton.ErrDeletedRecently) {
		t.Errorf("re-create the deleted queue within the minute: got %v, want ErrDeletedRecently", err)
	}

	recv := func(q *baton.Queue, now time.Time) []*baton.Message {
		return receive(t, s, q.ID, now, now.Add(10*time.Hour), 10) // past every check
	}
	// want compares the messages got with those numbered ns, in order if
	// ordered.
	want := func(what string, got []*baton.Message, ordered bool, ns ...int) {
		t.Helper()
		var ids []string
		for _, n := range ns {
			ids = append(ids, storetest.MessageID(n))
		}
		g := idsOf(got)
		if !ordered {
			slices.Sort(g)
		}
		if !slices.Equal(g, ids) {
			t.Errorf("%s: got %v, want %v", what, g, ids)
		}
	}
	// 1 and 2 leased until 1h, 3 delayed to 10 min, 4 deleted, 5 released,
	// 6 moved to dlq.
	want("orders at 5 min", recv(orders, fixtureAt(5*time.Minute)), false, 5)
	want("orders at 11 min", recv(orders, fixtureAt(11*time.Minute)), false, 3)
	got := recv(orders, fixtureAt(2*time.Hour))
	want("orders at 2 h", got, false, 1, 2)
	if len(got) == 2 {
		m1, m2 := got[0], got[1]
		if m1.ID != storetest.MessageID(1) {
			m1, m2 = m2, m1
		}
		binary := make([]byte, 256)
		for i := range binary {
			binary[i] = byte(i)
		}
		if m1.Body != "tab\tnewline\ncr\r ünïcödé 🚀 <&>\"'" || m1.TraceHeader != "Root=1-5759e988-bd862e3fe1be46a994272793" ||
			m1.Attributes["s"].StringValue != "välue ✓" || m1.Attributes["n"].DataType != "Number.int" ||
			!slices.Equal(m1.Attributes["b"].BinaryValue, binary) || m1.BodyMD5 != engine.MD5OfBody(m1.Body) || m1.ReceiveCount != 2 {
			t.Errorf("message 1 after the conversion: body %.40q, trace %q, attributes %v, MD5 %q, receive count %d",
				m1.Body, m1.TraceHeader, m1.Attributes, m1.BodyMD5, m1.ReceiveCount)
		}
		if m2.Body != strings.Repeat("0123456789abcdef", 256) || m2.BodyMD5 != engine.MD5OfBody(m2.Body) {
			t.Errorf("message 2 after the conversion: %d-byte body, MD5 %q", len(m2.Body), m2.BodyMD5)
		}
	}
	got = recv(dlq, fixtureAt(time.Minute))
	want("dlq", got, false, 6)
	if len(got) == 1 && (got[0].DeadLetterSourceARN == "" || got[0].ReceiveCount != 2) {
		t.Errorf("moved message: %+v", got[0])
	}
	want("purged queue", recv(purged, fixtureAt(time.Minute)), false, 23)
	want("eu-west-1 orders", recv(west, fixtureAt(time.Minute)), false, 41)

	// FIFO: 11 (group g1) is leased until 1 h, so g1 waits; g2 comes in order.
	want("jobs.fifo at 1 min", recv(jobs, fixtureAt(time.Minute)), true, 14, 15)
	dup := storetest.NewGroupMessage(17, "g1", fixtureAt(time.Minute))
	dup.DedupID = storetest.MessageID(11)
	sent := storetest.MustSendFIFO(t, s, jobs.ID, fixtureAt(time.Minute), dup)
	if !sent[0].Duplicate || sent[0].MessageID != storetest.MessageID(11) {
		t.Errorf("send under the deduplication id of 11: %+v, want a duplicate of 11", sent[0])
	}
	next := storetest.MustSendFIFO(t, s, jobs.ID, fixtureAt(time.Minute), storetest.NewGroupMessage(18, "g3", fixtureAt(time.Minute)))
	// At 30 min, 11's lease is not over yet: g1 waits.
	want("jobs.fifo at 30 min", recv(jobs, fixtureAt(30*time.Minute)), true, 18)
	// At 1 h 30 s, it is.
	got = recv(jobs, fixtureAt(time.Hour+30*time.Second))
	want("jobs.fifo at 1 h 30 s", got, true, 11, 12, 13)
	for _, m := range got {
		if m.SequenceNumber == "" || len(m.SequenceNumber) == len(next[0].SequenceNumber) && m.SequenceNumber >= next[0].SequenceNumber {
			t.Errorf("sequence number %q of %s not below the next send's %q", m.SequenceNumber, m.ID, next[0].SequenceNumber)
		}
	}

	tasks, err := s.MoveTaskList(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(tasks, func(a, b baton.MoveTask) int { return strings.Compare(a.Handle, b.Handle) })
	if len(tasks) != 2 || tasks[0].Handle != "done" || tasks[0].Moved != 4 || tasks[1].Handle != "running" ||
		tasks[1].Status != "RUNNING" || tasks[1].MaxPerSecond != 5 || !tasks[1].StartedAt.Equal(fixtureAt(time.Minute)) {
		t.Errorf("move tasks after the conversion: %+v", tasks)
	}
}

// textLogger logs to w.
func textLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

// checkConverted checks that dir holds a log and nothing left of the
// SQLite store but what is not its own (the receipt key).
func checkConverted(t *testing.T, dir string) {
	t.Helper()
	for _, name := range []string{"baton.db", "baton.db-wal", "baton.db-shm", pebblestore.LogDir + ".converting"} {
		if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s after the conversion: %v, want it gone", name, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "receipt.key")); err != nil || string(b) != strings.Repeat("k", 32) {
		t.Errorf("receipt key after the conversion: %q, %v", b, err)
	}
}

func TestConvertFixture(t *testing.T) {
	dir := copyFixture(t)
	var logs strings.Builder
	s, err := pebblestore.Open(t.Context(), dir, pebblestore.Options{Logger: textLogger(&logs)})
	if err != nil {
		t.Fatal(err)
	}
	checkConverted(t, dir)
	if !strings.Contains(logs.String(), "converted the SQLite store") || !strings.Contains(logs.String(), "queues=5") ||
		!strings.Contains(logs.String(), "messages=12") {
		t.Errorf("the log of the conversion does not say what it converted:\n%s", logs.String())
	}
	checkFixture(t, s)
	mustClose(t, s)
	logs.Reset()
	s = MustOpen(t, dir)
	defer s.Close()
	if st := storetest.MustStats(t, s, storetest.QueueID(3), fixtureAt(90*time.Second)); st.InFlight != 1 {
		t.Errorf("purged queue after reopen: %+v, want its one message, received", st)
	}
}

// A conversion that stops at any step (a crash, a full disk) leaves a
// directory the next Open converts, or finishes converting, with nothing
// lost.
// conversionSteps are the steps of a conversion (convert.go), in order.
var conversionSteps = []string{"read", "batch", "written", "synced", "renamed", "removed baton.db"}

func TestConvertStoppedAtEachStep(t *testing.T) {
	for _, at := range conversionSteps {
		t.Run(at, func(t *testing.T) {
			dir := copyFixture(t)
			stop := errors.New("stopped at " + at)
			restore := pebblestore.FailConversionAt(at, stop)
			_, err := pebblestore.Open(t.Context(), dir, pebblestore.Options{Logger: textLogger(&strings.Builder{})})
			restore()
			if !errors.Is(err, stop) {
				t.Fatalf("open stopped at %s: got %v, want the step's error", at, err)
			}
			s := MustOpen(t, dir)
			defer s.Close()
			checkConverted(t, dir)
			checkFixture(t, s)
		})
	}
}

// Environment of the process TestConvertKilledAtEachStep starts: the step
// to be killed at and the data directory to convert.
const (
	killAtEnv  = "BATON_TEST_CONVERT_KILL_AT"
	killDirEnv = "BATON_TEST_CONVERT_DIR"
)

// TestConvertKilledAtEachStep: a process converting the fixture is killed
// (kill -9) at each step of the conversion; the next Open, in this process,
// finds a store holding everything the fixture held, whichever side of the
// rename the kill fell on.
func TestConvertKilledAtEachStep(t *testing.T) {
	if at := os.Getenv(killAtEnv); at != "" {
		// The process to be killed.
		pebblestore.KillConversionAt(at)
		_, err := pebblestore.Open(t.Context(), os.Getenv(killDirEnv), pebblestore.Options{Logger: textLogger(io.Discard)})
		t.Fatalf("the conversion was not killed at %s: Open returned %v", at, err)
	}
	for _, at := range conversionSteps {
		t.Run(at, func(t *testing.T) {
			dir := copyFixture(t)
			cmd := exec.Command(os.Args[0], "-test.run=^TestConvertKilledAtEachStep$")
			cmd.Env = append(os.Environ(), killAtEnv+"="+at, killDirEnv+"="+dir)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ProcessState.Exited() {
				t.Fatalf("the converting process was not killed at %s: %v\n%s", at, err, out)
			}
			s := MustOpen(t, dir)
			defer s.Close()
			checkConverted(t, dir)
			checkFixture(t, s)
		})
	}
}

// TestConvertOlderSchema: a data directory written before the body_md5
// column and before queues had a region converts too: its queues and
// deleted names get the region Open is told is the default, the one they
// were served in, and its messages no digest (the engine then computes it).
func TestConvertOlderSchema(t *testing.T) {
	dir := copyFixture(t)
	// Queues had no region: there was one namespace.
	if err := pebblestore.ExecSQLite(filepath.Join(dir, "baton.db"), `DELETE FROM queues WHERE region = 'eu-west-1'`); err != nil {
		t.Fatal(err)
	}
	if err := pebblestore.UndoBodyMD5(filepath.Join(dir, "baton.db")); err != nil {
		t.Fatal(err)
	}
	st, err := pebblestore.Open(t.Context(), dir, pebblestore.Options{DefaultRegion: "eu-central-1", Logger: textLogger(&strings.Builder{})})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	q, err := st.QueueGet(t.Context(), "eu-central-1", storetest.Account, "orders")
	if err != nil {
		t.Fatalf("the queue in the default region: %v", err)
	}
	got := receive(t, st, q.ID, fixtureAt(5*time.Minute), fixtureAt(time.Hour), 10)
	if len(got) != 1 || got[0].BodyMD5 != "" || got[0].Body != "message 5" {
		t.Errorf("receive from the converted older queue: %+v", got)
	}
	again := storetest.NewQueue(storetest.QueueID(9), "gone")
	again.Region = "eu-central-1"
	if err := st.QueueCreate(t.Context(), baton.QueueCreateParams{Queue: again, DeletedCutoff: fixtureBase}); !errors.Is(err, baton.ErrDeletedRecently) {
		t.Errorf("re-create the deleted queue in the default region: got %v, want ErrDeletedRecently", err)
	}
}

// A database of a schema newer than this baton knows is left alone.
func TestConvertRefusesNewerSchema(t *testing.T) {
	dir := copyFixture(t)
	if err := pebblestore.SetSchemaVersion(filepath.Join(dir, "baton.db"), 999); err != nil {
		t.Fatal(err)
	}
	_, err := pebblestore.Open(t.Context(), dir, pebblestore.Options{Logger: textLogger(&strings.Builder{})})
	if err == nil || !strings.Contains(err.Error(), "newer") {
		t.Errorf("open a database of a newer schema: got %v, want an error saying it is newer", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "baton.db")); err != nil {
		t.Errorf("the database after the refusal: %v", err)
	}
}
