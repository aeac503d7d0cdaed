package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/pgtest"
)

// TestTransient: the failures a failover or a restart brings are retried;
// others are not.
func TestTransient(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{&pgconn.PgError{Code: "40001"}, true},
		{&pgconn.PgError{Code: "40P01"}, true},
		{&pgconn.PgError{Code: "57P01"}, true},
		{&pgconn.PgError{Code: "57P02"}, true},
		{&pgconn.PgError{Code: "57P03"}, true},
		{&pgconn.PgError{Code: "08006"}, true},
		{&pgconn.PgError{Code: "25006"}, true},
		{&pgconn.PgError{Code: "57014"}, true},
		{&pgconn.PgError{Code: "55P03"}, true},
		{&pgconn.PgError{Code: "57P05"}, true},
		{&pgconn.PgError{Code: "25P03"}, true},
		{&pgconn.PgError{Code: "23505"}, false},
		{&pgconn.PgError{Code: "42P01"}, false},
		{io.ErrUnexpectedEOF, true},
		{pgconn.ErrConnClosed, true},
		{context.Canceled, false},
		{context.DeadlineExceeded, false},
		{errors.New("something else"), false},
		{nil, false},
	} {
		if _, got := transient(tt.err); got != tt.want {
			t.Errorf("transient(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// TestCannotConnectNowNamedTruly: PostgreSQL refuses a connection with
// 57P03 while it starts up, shuts down or recovers from a crash, and the
// name /healthz and the log give it claims none of these states over the
// others: a node whose database is shutting down said "database starting
// up", beside PostgreSQL's own "the database system is shutting down".
func TestCannotConnectNowNamedTruly(t *testing.T) {
	t.Parallel()
	for _, msg := range []string{
		"the database system is starting up",
		"the database system is shutting down",
		"the database system is in recovery mode",
		"the database system is not yet accepting connections",
	} {
		what, ok := transient(&pgconn.PgError{Severity: "FATAL", Code: "57P03", Message: msg})
		if !ok {
			t.Fatalf("57P03 (%s) is not transient", msg)
		}
		for _, state := range []string{"starting up", "shutting down", "recover"} {
			if !strings.Contains(what, state) {
				t.Errorf("57P03 (%s) is named %q, which leaves out %q: it claims the other states", msg, what, state)
			}
		}
	}
}

// TestConnectTimeoutIsTransient: a database that accepts a connection and
// never answers (a frozen primary: the kernel completes the handshake)
// fails the connection attempt by its connect timeout, and that is an
// outage like a refused connection: transient, retried, and in the end
// ServiceUnavailable (503), not an InternalError (500).
func TestConnectTimeoutIsTransient(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var held []net.Conn // accepted and never answered
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	}()
	url := fmt.Sprintf("postgres://baton@%s/baton?sslmode=disable&connect_timeout=1", ln.Addr())
	_, connErr := pgconn.Connect(context.Background(), url)
	if connErr == nil {
		t.Fatal("connected to a listener that never answers")
	}
	if what, ok := transient(connErr); !ok || what != "database not answering" {
		t.Errorf("transient(%v) = %q, %v; want \"database not answering\", true", connErr, what, ok)
	}
	if outcomeUnknown(connErr) {
		t.Errorf("outcomeUnknown(%v) = true; a connection never made ran nothing", connErr)
	}
	s := &Store{log: slog.New(slog.NewTextHandler(io.Discard, nil)), retryFor: 2 * time.Second}
	err = s.retryWrite(context.Background(), func(ctx context.Context) error {
		_, err := pgconn.Connect(ctx, url)
		return err
	}, nil)
	if !errors.Is(err, baton.ErrUnavailable) || baton.AsError(err).Code != baton.ErrServiceUnavailable {
		t.Errorf("a write that never reached the database: %v; want ServiceUnavailable", err)
	}
	if e := baton.AsError(err); e == errOutcomeUnknown {
		t.Errorf("a write that never reached the database is answered %q; want the plain 503 (not carried out)", e.Message)
	}
}

// lostAnswer is the error of a connection that broke after the server
// committed: the outcome is unknown to the store.
var lostAnswer = &pgconn.PgError{Severity: "FATAL", Code: "08006", Message: "connection failure (injected)"}

// openFaulty opens a store on a database of its own whose writes named op
// lose their answer once, after committing.
func openFaulty(t *testing.T, op string) (*Store, *atomic.Int32) {
	t.Helper()
	s, err := Open(context.Background(), pgtest.MustDatabase(t), Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var left atomic.Int32
	s.faultHook = func(o string) error {
		if o == op && left.Add(-1) >= 0 {
			return lostAnswer
		}
		return nil
	}
	return s, &left
}

// mustQueue creates a queue and returns its id.
func mustQueue(t *testing.T, s *Store, name string, fifo bool) uint64 {
	t.Helper()
	ctx := context.Background()
	q := &baton.Queue{ID: uint64(time.Now().UnixNano()), Region: "us-east-1", Account: "000000000000", Name: name,
		Attributes: baton.QueueAttributes{FifoQueue: fifo}, CreatedAt: time.Now(), ModifiedAt: time.Now()}
	if err := s.QueueCreate(ctx, baton.QueueCreateParams{Queue: q}); err != nil {
		t.Fatal(err)
	}
	got, err := s.QueueGet(ctx, q.Region, q.Account, q.Name)
	if err != nil {
		t.Fatal(err)
	}
	return got.ID
}

func countMessages(t *testing.T, s *Store, queueID uint64) int {
	t.Helper()
	var n int
	if err := s.pool.QueryRow(context.Background(), `SELECT count(*) FROM baton_messages WHERE queue_id = $1`, int64(queueID)).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func testMessage(id string, now time.Time) *baton.Message {
	return &baton.Message{ID: id, Body: "body of " + id, SentAt: now, VisibleAt: now, BodyMD5: "x"}
}

// TestSendAfterLostCommitNotDuplicated: a send whose commit's answer is
// lost runs again, finds its messages stored and succeeds, with each
// message stored once.
func TestSendAfterLostCommitNotDuplicated(t *testing.T) {
	t.Parallel()
	s, left := openFaulty(t, "send")
	qid := mustQueue(t, s, "lost-send", false)
	now := time.Now()
	left.Store(1)
	out, err := s.MessageSend(context.Background(), baton.MessageSendParams{QueueID: qid,
		Messages: []*baton.Message{testMessage("m-1", now), testMessage("m-2", now)}})
	if err != nil {
		t.Fatalf("send after a lost commit answer: %v", err)
	}
	if left.Load() > 0 {
		t.Fatal("the fault was not injected")
	}
	if len(out) != 2 || out[0].MessageID != "m-1" || out[1].MessageID != "m-2" {
		t.Errorf("send answered %+v", out)
	}
	if n := countMessages(t, s, qid); n != 2 {
		t.Errorf("%d messages stored, want 2", n)
	}
}

// TestSendAfterLostCommitNotResurrected: a send whose commit's answer is
// lost runs again; meanwhile a consumer received its message and deleted
// it. The rerun finds the send's token and succeeds without storing the
// message again: an acknowledged delete does not come back.
func TestSendAfterLostCommitNotResurrected(t *testing.T) {
	t.Parallel()
	s, left := openFaulty(t, "send")
	qid := mustQueue(t, s, "lost-send-deleted", false)
	inject := s.faultHook
	s.faultHook = func(o string) error {
		err := inject(o)
		if err != nil {
			// What a consumer's receive and delete leave behind.
			if _, err := s.pool.Exec(context.Background(), `DELETE FROM baton_messages WHERE queue_id = $1`, int64(qid)); err != nil {
				t.Error(err)
			}
		}
		return err
	}
	left.Store(1)
	if _, err := s.MessageSend(context.Background(), baton.MessageSendParams{QueueID: qid,
		Messages: []*baton.Message{testMessage("d-1", time.Now())}}); err != nil {
		t.Fatalf("send after a lost commit answer: %v", err)
	}
	if left.Load() > 0 {
		t.Fatal("the fault was not injected")
	}
	if n := countMessages(t, s, qid); n != 0 {
		t.Errorf("%d messages stored after the only one was deleted, want 0: the rerun stored it again", n)
	}
}

// TestSendTokensForgotten: a send forgets the tokens of sends older than
// sendTokenTTL, and keeps its own.
func TestSendTokensForgotten(t *testing.T) {
	t.Parallel()
	s, _ := openFaulty(t, "none")
	qid := mustQueue(t, s, "tokens", false)
	now := time.Now()
	if _, err := s.pool.Exec(context.Background(), `INSERT INTO baton_send_tokens (token, sent_at) VALUES ('old', $1), ('recent', $2)`,
		now.Add(-sendTokenTTL-time.Minute), now.Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MessageSend(context.Background(), baton.MessageSendParams{QueueID: qid,
		Messages: []*baton.Message{testMessage("t-1", now)}}); err != nil {
		t.Fatal(err)
	}
	var tokens []string
	rows, err := s.pool.Query(context.Background(), `SELECT token FROM baton_send_tokens ORDER BY token`)
	if err == nil {
		tokens, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil {
		t.Fatal(err)
	}
	want := []string{fmt.Sprint(qid) + "/t-1", "recent"} // a token names its queue
	if !slices.Equal(tokens, want) {
		t.Errorf("send tokens %q, want %q", tokens, want)
	}
}

// TestFIFOSendAfterLostCommitNotDuplicated: the same for a FIFO send, which
// finds its deduplication keys and answers with the ids stored.
func TestFIFOSendAfterLostCommitNotDuplicated(t *testing.T) {
	t.Parallel()
	s, left := openFaulty(t, "tx")
	qid := mustQueue(t, s, "lost-send.fifo", true)
	now := time.Now()
	m := testMessage("f-1", now)
	m.GroupID = "g"
	left.Store(1)
	out, err := s.MessageSend(context.Background(), baton.MessageSendParams{QueueID: qid,
		Messages: []*baton.Message{m}, DedupKeys: []string{"k"}, DedupCutoff: now.Add(-5 * time.Minute)})
	if err != nil {
		t.Fatalf("send after a lost commit answer: %v", err)
	}
	if left.Load() > 0 {
		t.Fatal("the fault was not injected")
	}
	if len(out) != 1 || out[0].MessageID != "f-1" {
		t.Errorf("send answered %+v", out)
	}
	if n := countMessages(t, s, qid); n != 1 {
		t.Errorf("%d messages stored, want 1", n)
	}
}

// TestDeleteAfterLostCommit: a delete whose commit's answer is lost runs
// again and finds the message gone: LeaseGone, which the engine answers as
// a success, not an error.
func TestDeleteAfterLostCommit(t *testing.T) {
	t.Parallel()
	s, left := openFaulty(t, "delete")
	ctx := context.Background()
	qid := mustQueue(t, s, "lost-delete", false)
	now := time.Now()
	if _, err := s.MessageSend(ctx, baton.MessageSendParams{QueueID: qid, Messages: []*baton.Message{testMessage("d-1", now)}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.MessageReceive(ctx, baton.MessageReceiveParams{QueueID: qid, Now: now, VisibleAt: now.Add(time.Minute), Max: 1,
		RetentionCutoff: now.Add(-time.Hour)})
	if err != nil || len(got) != 1 {
		t.Fatalf("receive: %d, %v", len(got), err)
	}
	left.Store(1)
	out, err := s.MessageDelete(ctx, baton.MessageDeleteParams{QueueID: qid, MessageID: "d-1", Epoch: got[0].Epoch, Now: now, RequireLive: true})
	if err != nil {
		t.Fatalf("delete after a lost commit answer: %v", err)
	}
	if out.Result != baton.LeaseGone {
		t.Errorf("delete result %v, want LeaseGone", out.Result)
	}
	if n := countMessages(t, s, qid); n != 0 {
		t.Errorf("%d messages left, want 0", n)
	}
}

// TestChangeVisibilityAfterLostCommit: a visibility change whose commit's
// answer is lost runs again, and the rerun answers what the ledger reads
// it by (engine/ledger, lostRelease; the engine's reading of a shortened
// lease): a release finds the lease no longer live (LeaseLapsed), a
// renewal finds the lease live, ending where the first run set it (to the
// microsecond the database keeps).
func TestChangeVisibilityAfterLostCommit(t *testing.T) {
	t.Parallel()
	s, left := openFaulty(t, "change visibility")
	ctx := context.Background()
	qid := mustQueue(t, s, "lost-change", false)
	now := time.Now()
	msgs := []*baton.Message{testMessage("c-1", now), testMessage("c-2", now)}
	if _, err := s.MessageSend(ctx, baton.MessageSendParams{QueueID: qid, Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	got, err := s.MessageReceive(ctx, baton.MessageReceiveParams{QueueID: qid, Now: now, VisibleAt: now.Add(time.Minute), Max: 2,
		RetentionCutoff: now.Add(-time.Hour)})
	if err != nil || len(got) != 2 {
		t.Fatalf("receive: %d, %v", len(got), err)
	}
	for _, m := range got {
		end, want := now.Add(5*time.Minute), baton.LeaseCurrent // a renewal
		if m.ID == "c-1" {
			end, want = now, baton.LeaseLapsed // a release
		}
		left.Store(1)
		out, err := s.MessageChangeVisibility(ctx, baton.MessageChangeVisibilityParams{QueueID: qid, MessageID: m.ID, Epoch: m.Epoch,
			Now: now, VisibleAt: end, AnyLease: true})
		if err != nil {
			t.Fatalf("change of %s after a lost commit answer: %v", m.ID, err)
		}
		if left.Load() > 0 {
			t.Fatal("the fault was not injected")
		}
		if out.Result != want {
			t.Errorf("change of %s: result %v, want %v", m.ID, out.Result, want)
		}
		// The database keeps microseconds.
		if want == baton.LeaseCurrent && (out.Message == nil || out.Message.VisibleAt.Sub(end).Abs() >= time.Microsecond) {
			t.Errorf("renewal of %s rerun: found %+v, want the lease ending at %v, as the first run set it", m.ID, out.Message, end)
		}
	}
}

// TestRetryGivesUp: a failure that persists past the bound is
// baton.ErrUnavailable, naming the problem; the context's deadline bounds
// the retries too.
func TestRetryGivesUp(t *testing.T) {
	t.Parallel()
	s := &Store{log: slog.New(slog.NewTextHandler(io.Discard, nil)), retryFor: 300 * time.Millisecond}
	runs := 0
	start := time.Now()
	err := s.retry(context.Background(), func(context.Context) error { runs++; return lostAnswer })
	if !errors.Is(err, baton.ErrUnavailable) || !errors.Is(err, lostAnswer) {
		t.Fatalf("err = %v; want ErrUnavailable wrapping the cause", err)
	}
	if runs < 2 {
		t.Errorf("ran %d times, want retries", runs)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("gave up after %v", d)
	}
	if want := "store unavailable: database unreachable"; len(err.Error()) < len(want) || err.Error()[:len(want)] != want {
		t.Errorf("err = %q; want it to start %q", err, want)
	}
	s.retryFor = time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start = time.Now()
	err = s.retry(ctx, func(ctx context.Context) error { return lostAnswer })
	if !errors.Is(err, baton.ErrUnavailable) {
		t.Errorf("err = %v; want ErrUnavailable", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("gave up %v after the deadline", d)
	}
	if err := s.retry(ctx, func(ctx context.Context) error { return &pgconn.PgError{Code: "23505"} }); errors.Is(err, baton.ErrUnavailable) {
		t.Errorf("a unique violation was retried: %v", err)
	}
}

// TestRetryCutAfterRefusalsNamesThem: a write whose runs the database
// refused as read-only, the last of them cut by the bound instead (a
// loaded machine), gives up naming the refusals beside the cut, not
// "database not answering" alone, which hid the cause.
func TestRetryCutAfterRefusalsNamesThem(t *testing.T) {
	t.Parallel()
	// A bound of 2 s: the two refused runs and the pauses after them take
	// milliseconds, and a loaded machine must not use the rest before the
	// third begins.
	s := &Store{log: slog.New(slog.NewTextHandler(io.Discard, nil)), retryFor: 2 * time.Second}
	runs := 0
	err := s.retryWrite(context.Background(), func(ctx context.Context) error {
		if runs++; runs <= 2 {
			return &pgconn.PgError{Code: "25006", Message: "cannot execute INSERT in a read-only transaction"}
		}
		<-ctx.Done() // the third run is cut by the bound
		return ctx.Err()
	}, nil)
	if !errors.Is(err, baton.ErrUnavailable) || !strings.Contains(err.Error(), "database not answering; an earlier run was refused: database is read-only") {
		t.Errorf("err = %v; want ErrUnavailable naming the cut and the read-only refusal before it", err)
	}
}

// TestRetryRunsToTheBound: an operation keeps retrying a quick failure
// until the bound is near, not giving up while a long pause would still
// leave time for a run: a database back within the bound is met. The pause
// before the last run is shortened so that the run starts in time.
func TestRetryRunsToTheBound(t *testing.T) {
	t.Parallel()
	const bound = 300 * time.Millisecond
	s := &Store{log: slog.New(slog.NewTextHandler(io.Discard, nil)), retryFor: bound}
	for i := range 20 {
		var last time.Time
		start := time.Now()
		err := s.retry(context.Background(), func(context.Context) error { last = time.Now(); return lostAnswer })
		if !errors.Is(err, baton.ErrUnavailable) {
			t.Fatalf("call %d: err = %v; want ErrUnavailable", i, err)
		}
		// Load only makes the calls later; an early give-up is not load.
		if d := last.Sub(start); d < bound-100*time.Millisecond {
			t.Fatalf("call %d: the last run began %v after the first, with the bound %v away: gave up early", i, d, bound)
		}
	}
}

// TestQueueDeleteAndPurgeAfterLostCommit: a purge whose commit's answer is
// lost is not refused as purged recently by its own rerun, and a queue
// delete's rerun does not find the queue missing.
func TestQueueDeleteAndPurgeAfterLostCommit(t *testing.T) {
	t.Parallel()
	s, left := openFaulty(t, "tx")
	ctx := context.Background()
	mustQueue(t, s, "lost-purge", false)
	now := time.Now()
	left.Store(1)
	if err := s.QueuePurge(ctx, baton.QueuePurgeParams{Region: "us-east-1", Account: "000000000000", Name: "lost-purge",
		Now: now, PurgedCutoff: now.Add(-time.Minute)}); err != nil {
		t.Errorf("purge after a lost commit answer: %v", err)
	}
	if left.Load() > 0 {
		t.Fatal("the fault was not injected")
	}
	// A second purge within the minute is still refused.
	if err := s.QueuePurge(ctx, baton.QueuePurgeParams{Region: "us-east-1", Account: "000000000000", Name: "lost-purge",
		Now: now.Add(time.Second), PurgedCutoff: now.Add(-59 * time.Second)}); !errors.Is(err, baton.ErrPurgedRecently) {
		t.Errorf("second purge: %v, want ErrPurgedRecently", err)
	}
	left.Store(1)
	if err := s.QueueDelete(ctx, "us-east-1", "000000000000", "lost-purge", now); err != nil {
		t.Errorf("queue delete after a lost commit answer: %v", err)
	}
	if _, err := s.QueueGet(ctx, "us-east-1", "000000000000", "lost-purge"); !errors.Is(err, baton.ErrNotFound) {
		t.Errorf("queue after delete: %v, want ErrNotFound", err)
	}
	if err := s.QueueDelete(ctx, "us-east-1", "000000000000", "lost-purge", now); !errors.Is(err, baton.ErrNotFound) {
		t.Errorf("deleting a deleted queue: %v, want ErrNotFound", err)
	}
}

// TestSendThroughReadOnlyPrimary stands in for a failover that leaves the
// store connected to a demoted primary: the database turns read-only
// (default_transaction_read_only) and its connections break. A send
// meanwhile keeps retrying its 25006 errors, Ping says the database is
// read-only, and once the database takes writes again (and the read-only
// connections break too) the send succeeds, stored once.
func TestSendThroughReadOnlyPrimary(t *testing.T) {
	t.Parallel()
	url := pgtest.MustDatabase(t)
	ctx := context.Background()
	s, err := Open(ctx, url, Options{RetryFor: time.Minute, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	qid := mustQueue(t, s, "read-only", false)
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	var db string
	if err := admin.QueryRow(ctx, `SELECT current_database()`).Scan(&db); err != nil {
		t.Fatal(err)
	}
	exec := func(sql string) {
		t.Helper()
		if _, err := admin.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	breakConnections := func() {
		t.Helper()
		exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`)
	}
	exec(`ALTER DATABASE ` + pgx.Identifier{db}.Sanitize() + ` SET default_transaction_read_only = on`)
	breakConnections()

	sent := make(chan error, 1)
	go func() {
		_, err := s.MessageSend(ctx, baton.MessageSendParams{QueueID: qid, Messages: []*baton.Message{testMessage("ro-1", time.Now())}})
		sent <- err
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := s.Ping(ctx)
		if err != nil && strings.Contains(err.Error(), "read-only") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Ping on a read-only database: %v; want it to say read-only", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	select {
	case err := <-sent:
		t.Fatalf("send on a read-only database returned: %v", err)
	case <-time.After(500 * time.Millisecond):
	}

	exec(`ALTER DATABASE ` + pgx.Identifier{db}.Sanitize() + ` RESET default_transaction_read_only`)
	breakConnections()
	select {
	case err := <-sent:
		if err != nil {
			t.Fatalf("send once the database takes writes again: %v", err)
		}
	case <-time.After(45 * time.Second):
		t.Fatal("send still waiting 45 s after the database took writes again")
	}
	if n := countMessages(t, s, qid); n != 1 {
		t.Errorf("%d messages stored, want 1", n)
	}
	if err := s.Ping(ctx); err != nil {
		t.Errorf("Ping after: %v", err)
	}
}
