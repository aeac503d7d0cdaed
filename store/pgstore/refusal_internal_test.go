package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/internal/lograte"
	"github.com/baton-sqs/baton/internal/pgtest"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/internal/testutil/logbuf"
)

// A database can answer and still refuse the work for a reason a rerun
// within the bound would not change: its disk full (53100), the schema's
// tables dropped (42P01), this server's password changed (28P01). Each is
// an outage: the call is answered 503 ServiceUnavailable at once, which
// clients retry, with the plain message (nothing was changed); Ping, the
// node's /healthz, says why while it lasts, though its own query still
// passes; and the log says it once, not once per failed call. Each used
// to be an InternalError (500) logged per request, with /healthz passing
// through a full disk and dropped tables.

// refusalStore opens a store on url that logs to logs, holds refusals by
// a fake clock it returns, and paces its log lines by that clock.
func refusalStore(t *testing.T, url string, logs io.Writer) (*Store, *clock.Fake) {
	t.Helper()
	now := clock.NewFake(time.Now())
	s, err := Open(context.Background(), url, Options{RetryFor: time.Minute, Logger: slog.New(slog.NewTextHandler(logs, nil)), Clock: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, now
}

// wantRefusalOutage checks that err is a 503 with the plain message naming
// what, returned without retrying to the bound.
func wantRefusalOutage(t *testing.T, op string, err error, took time.Duration, what string) {
	t.Helper()
	if !errors.Is(err, baton.ErrUnavailable) || baton.AsError(err).Code != baton.ErrServiceUnavailable {
		t.Errorf("%s: %v; want ServiceUnavailable", op, err)
		return
	}
	if e := baton.AsError(err); e == errOutcomeUnknown {
		t.Errorf("%s: answered %q; the database refused it, so nothing was changed", op, e.Message)
	}
	if !strings.Contains(err.Error(), what) {
		t.Errorf("%s: %v; want it to say %q", op, err, what)
	}
	// The retry bound is a minute: a refusal is not run again.
	if took > 30*time.Second {
		t.Errorf("%s: answered after %v; a refusal is not retried", op, took)
	}
}

func TestRefusedWorkIsAnOutage(t *testing.T) {
	t.Parallel()
	url := pgtest.MustDatabase(t)
	logs := &logbuf.Buffer{}
	s, now := refusalStore(t, url, logs)
	ctx := context.Background()
	qid := mustQueue(t, s, "refused", false)
	exec := adminExec(t, url)

	// The disk full: PostgreSQL's own answer to a file it cannot extend,
	// raised by a trigger (the e2e tests fill a real one).
	exec(`CREATE FUNCTION refuse_disk_full() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = 'disk_full'; END $$`)
	exec(`CREATE TRIGGER disk_full BEFORE INSERT ON baton_messages FOR EACH STATEMENT EXECUTE FUNCTION refuse_disk_full()`)
	for i := range 20 {
		start := time.Now()
		_, err := s.MessageSend(ctx, baton.MessageSendParams{QueueID: qid, Messages: []*baton.Message{testMessage("full-"+string(rune('a'+i)), time.Now())}})
		wantRefusalOutage(t, "send to a full disk", err, time.Since(start), "database disk full")
	}
	if err := s.Ping(ctx); err == nil || !strings.Contains(err.Error(), "database disk full") {
		t.Errorf("Ping while sends are refused for a full disk: %v; want it to say so", err)
	}
	if n := strings.Count(logs.String(), "PostgreSQL operation failed"); n != 1 {
		t.Errorf("20 sends refused, %d log lines of it; want 1:\n%s", n, logs)
	}
	exec(`DROP TRIGGER disk_full ON baton_messages`)
	if _, err := s.MessageSend(ctx, baton.MessageSendParams{QueueID: qid, Messages: []*baton.Message{testMessage("room", time.Now())}}); err != nil {
		t.Fatalf("send once there is room: %v", err)
	}
	now.Advance(refusalHeld)
	if err := s.Ping(ctx); err != nil {
		t.Errorf("Ping %v after the last refusal: %v", refusalHeld, err)
	}

	// The schema's tables dropped under the running store.
	exec(`DROP SCHEMA public CASCADE`)
	exec(`CREATE SCHEMA public`)
	start := time.Now()
	_, err := s.QueueGet(ctx, "us-east-1", "000000000000", "refused")
	wantRefusalOutage(t, "queue read with the tables dropped", err, time.Since(start), "database schema missing")
	if err := s.Ping(ctx); err == nil || !strings.Contains(err.Error(), "database schema missing") {
		t.Errorf("Ping with the tables dropped: %v; want it to say so", err)
	}
}

func TestLoginRefusedWhileServing(t *testing.T) {
	t.Parallel()
	pg := pgtest.MustStart(t)
	ctx := context.Background()
	if err := pg.RequirePasswords(ctx, "baton_pw", "right"); err != nil {
		t.Fatal(err)
	}
	db := pgtest.DatabaseName(pg.MustDatabase(t))
	exec := adminExec(t, pg.URL(db))
	exec(`GRANT ALL ON SCHEMA public TO baton_pw`)
	s, _ := refusalStore(t, strings.Replace(pg.URL(db), "postgres@", "baton_pw:right@", 1), io.Discard)
	mustQueue(t, s, "login", false)

	// The password changed, and the connections made with the old one
	// gone (a restart, their lifetime's end).
	exec(`ALTER ROLE baton_pw PASSWORD 'changed'`)
	exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'baton_pw'`)
	testutil.CheckFor(t, 30*time.Second, func() error {
		start := time.Now()
		_, err := s.QueueGet(ctx, "us-east-1", "000000000000", "login")
		if errors.Is(err, baton.ErrUnavailable) && !strings.Contains(err.Error(), "28P01") {
			return err // a pooled connection not yet closed
		}
		wantRefusalOutage(t, "queue read with the password changed", err, time.Since(start), "database refused this server's password")
		return nil
	})
	if err := s.Ping(ctx); err == nil || !strings.Contains(err.Error(), "database refused this server's password") {
		t.Errorf("Ping with the password changed: %v; want it to say so", err)
	}
}

// TestReadOnlyGivesUpSayingSo: a send to a database that stays read-only
// past the bound is answered 503 saying so, with the plain message: every
// run was refused before it changed anything; the sends that give up so
// are logged once. It used to be answered that
// the database did not answer and the change may have been made: the last
// run started at the bound, and failed for the want of time.
func TestReadOnlyGivesUpSayingSo(t *testing.T) {
	t.Parallel()
	url := pgtest.MustDatabase(t)
	ctx := context.Background()
	logs := &logbuf.Buffer{}
	// A bound of 3 s, not 1: each run after the backends were ended opens
	// a connection, which on a loaded machine can take much of a second.
	s, err := Open(ctx, url, Options{RetryFor: 3 * time.Second, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	s.paced = lograte.NewPaced(clock.NewFake(time.Now()), pacedLogEvery)
	qid := mustQueue(t, s, "read-only-bound", false)
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	for _, sql := range []string{
		`DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET default_transaction_read_only = on', current_database()); END $$`,
		`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`,
	} {
		if _, err := admin.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	for i := range 3 {
		_, err := s.MessageSend(ctx, baton.MessageSendParams{QueueID: qid, Messages: []*baton.Message{testMessage("ro-"+string(rune('a'+i)), time.Now())}})
		if !errors.Is(err, baton.ErrUnavailable) || !strings.Contains(err.Error(), "database is read-only") {
			t.Errorf("send %d to a read-only database: %v; want ServiceUnavailable saying it is read-only", i, err)
		}
		// On a loaded machine the last run can be cut by the bound instead
		// of refused, its outcome then unknown: the answer must still name
		// the refusals before it.
		if baton.AsError(err) == errOutcomeUnknown && !strings.Contains(err.Error(), "an earlier run was refused: database is read-only") {
			t.Errorf("send %d to a read-only database answered %v; its runs were refused read-only, and it does not say so", i, err)
		}
	}
	// One line a kind of giving up (its problem and whether the outcome is
	// known): one for the three sends, unless the bound cut a last run.
	kindOf := regexp.MustCompile(`problem=("[^"]*"|\S+)|outcome_unknown=\w+`)
	lines, kinds := 0, map[string]bool{}
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "PostgreSQL operation failed") {
			lines++
			kinds[strings.Join(kindOf.FindAllString(l, -1), " ")] = true
		}
	}
	if lines == 0 || lines != len(kinds) {
		t.Errorf("3 sends gave up on a read-only database, %d log lines of %d kinds; want one a kind:\n%s", lines, len(kinds), logs)
	}
}

// TestReadOnlyLiftedServesAgain: an operator makes the database read-only
// for new sessions (ALTER DATABASE … SET default_transaction_read_only),
// the node's connections are ended and made again read-only, then the
// operator sets it back. Sessions keep the setting they connected with,
// and the pool's were kept for their lifetime (30 minutes): every send was
// refused as read-only, and Ping said so, long after the database took
// writes again. Now a refusal for read-only makes the pool connect afresh:
// sends are taken again within seconds, by an operation's retry or, with
// no traffic, by the health check.
func TestReadOnlyLiftedServesAgain(t *testing.T) {
	t.Parallel()
	for _, by := range []string{"send", "ping"} {
		t.Run(by, func(t *testing.T) {
			t.Parallel()
			url := pgtest.MustDatabase(t)
			ctx := context.Background()
			s, err := Open(ctx, url, Options{RetryFor: 3 * time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			qid := mustQueue(t, s, "read-only-lifted", false)
			send := func(id string) error {
				_, err := s.MessageSend(ctx, baton.MessageSendParams{QueueID: qid, Messages: []*baton.Message{testMessage(id, time.Now())}})
				return err
			}
			// The admin's session connected before the setting: it keeps
			// taking writes.
			exec := adminExec(t, url)
			exec(`DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET default_transaction_read_only = on', current_database()); END $$`)
			exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`)
			switch by {
			case "send":
				// Refused as read-only at least once before the setting is
				// lifted. A send on a loaded machine may instead find its
				// last run short of time (TestReadOnlyGivesUpSayingSo is
				// the test of that answer): sent again, for up to 30 s.
				deadline := time.Now().Add(30 * time.Second)
				for err := send("refused"); !errors.Is(err, baton.ErrUnavailable) || !strings.Contains(err.Error(), "database is read-only"); err = send("refused") {
					if !errors.Is(err, baton.ErrUnavailable) || time.Now().After(deadline) {
						t.Fatalf("send to a read-only database: %v; want ServiceUnavailable saying it is read-only", err)
					}
				}
			case "ping":
				deadline := time.Now().Add(30 * time.Second)
				for err := s.Ping(ctx); err == nil || !strings.Contains(err.Error(), "default_transaction_read_only is on"); err = s.Ping(ctx) {
					if time.Now().After(deadline) {
						t.Fatalf("Ping on a read-only database: %v; want it to say default_transaction_read_only is on", err)
					}
					time.Sleep(50 * time.Millisecond)
				}
			}
			exec(`DO $$ BEGIN EXECUTE format('ALTER DATABASE %I RESET default_transaction_read_only', current_database()); END $$`)
			deadline := time.Now().Add(30 * time.Second)
			for i := 0; ; i++ {
				var err error
				if by == "send" {
					err = send(fmt.Sprint("after-", i))
				} else {
					err = s.Ping(ctx)
				}
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s still failing 30 s after the database took writes again: %v", by, err)
				}
				time.Sleep(100 * time.Millisecond)
			}
			if err := send("last"); err != nil {
				t.Fatalf("send after the database took writes again: %v", err)
			}
		})
	}
}

// TestOperatorTimeoutsAreOutages: a statement_timeout or a lock_timeout
// the operator set on the database cancels the node's statements under a
// load or behind another's lock. Such a statement was rolled back; it is
// run again, and answered 503 naming the timeout if it keeps failing, as
// for any outage. They were answered 500 InternalError.
//
// The bound and the statement_timeout leave a loaded machine room: a run
// must be answered within the bound for its refusal to be named (a run
// the bound cut short is "did not answer in time", which is true), and
// the first run connects afresh (the sessions were ended to take the
// settings); with a bound of 1 s, that failed 3 times in 24 at load 20.
// Only the trigger's sleep has to outlast statement_timeout.
func TestOperatorTimeoutsAreOutages(t *testing.T) {
	t.Parallel()
	url := pgtest.MustDatabase(t)
	ctx := context.Background()
	s, err := Open(ctx, url, Options{RetryFor: DefaultRetryFor, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	qid := mustQueue(t, s, "timeouts", false)
	exec := adminExec(t, url)
	exec(`DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET statement_timeout = ''2s''', current_database());
		EXECUTE format('ALTER DATABASE %I SET lock_timeout = ''20ms''', current_database()); END $$`)
	exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`)
	send := func(id string) error {
		_, err := s.MessageSend(ctx, baton.MessageSendParams{QueueID: qid, Messages: []*baton.Message{testMessage(id, time.Now())}})
		return err
	}

	exec(`BEGIN`)
	exec(`LOCK TABLE baton_messages IN ACCESS EXCLUSIVE MODE`)
	err = send("behind-a-lock")
	exec(`COMMIT`)
	if !errors.Is(err, baton.ErrUnavailable) || !strings.Contains(err.Error(), "lock_timeout") || baton.AsError(err) == errOutcomeUnknown {
		t.Errorf("send behind a lock held past the bound, with lock_timeout set: %v; want the plain 503 naming lock_timeout", err)
	}

	exec(`CREATE FUNCTION slow_send() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(5); RETURN NULL; END $$`)
	exec(`CREATE TRIGGER slow_send BEFORE INSERT ON baton_messages FOR EACH STATEMENT EXECUTE FUNCTION slow_send()`)
	err = send("slow")
	exec(`DROP TRIGGER slow_send ON baton_messages`)
	if !errors.Is(err, baton.ErrUnavailable) || !strings.Contains(err.Error(), "statement_timeout") || baton.AsError(err) == errOutcomeUnknown {
		t.Errorf("send slower than statement_timeout: %v; want the plain 503 naming statement_timeout", err)
	}
	if err := send("after"); err != nil {
		t.Errorf("send once nothing holds it up: %v", err)
	}
	if n := countMessages(t, s, qid); n != 1 {
		t.Errorf("%d messages stored, want 1 (the refused sends were rolled back)", n)
	}
}

// adminExec connects to the database at url as its owner, for the test's
// length, and returns a function that runs one statement on it, failing
// the test if it fails.
func adminExec(t *testing.T, url string) func(sql string) {
	t.Helper()
	admin, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close(context.Background()) })
	return func(sql string) {
		t.Helper()
		if _, err := admin.Exec(context.Background(), sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
}

// TestUndefinedObjectIsAnOutageOnlyWithTheSchemaGone: a statement naming a
// table or function the database does not have is an outage (503 naming
// what is missing, /healthz failing) when Baton's schema lost it, and a
// fault in the statement (InternalError, 500, saying the schema is whole
// and the statement's error) when the schema is whole. Every such failure
// used to be answered 503 "database schema missing", and /healthz failed,
// so that a wrong name in a statement read as an outage.
func TestUndefinedObjectIsAnOutageOnlyWithTheSchemaGone(t *testing.T) {
	t.Parallel()
	url := pgtest.MustDatabase(t)
	s, now := refusalStore(t, url, io.Discard)
	ctx := context.Background()
	qid := mustQueue(t, s, "undefined", false)
	exec := adminExec(t, url)

	for _, sql := range []string{
		`SELECT count(*) FROM baton_mesages`,               // a table's name misspelt
		`SELECT baton_lock_queue(ARRAY[1]::bigint[])`,      // a function's
		`SELECT count(*) FROM batonn.baton_messages`,       // a schema's
		`SELECT count(*) FROM baton_messages WHERE nope()`, // a function that never was
	} {
		start := time.Now()
		err := s.retry(ctx, func(ctx context.Context) error {
			_, err := s.pool.Exec(ctx, sql)
			return err
		})
		if time.Since(start) > 30*time.Second {
			t.Errorf("%s: answered after %v; a statement's fault is not retried", sql, time.Since(start))
		}
		if errors.Is(err, baton.ErrUnavailable) || baton.AsError(err).Code != baton.ErrInternal {
			t.Errorf("%s with the schema whole: %v; want an InternalError", sql, err)
			continue
		}
		if !errors.Is(err, errSchemaFault) || !strings.Contains(err.Error(), "does not exist") {
			t.Errorf("%s with the schema whole: %v; want it to say the schema is whole, and the statement's error", sql, err)
		}
	}
	if err := s.Ping(ctx); err != nil {
		t.Errorf("Ping after statements' faults, with the schema whole: %v", err)
	}

	// A function of the schema dropped: the sends' round calls it.
	exec(`DROP FUNCTION baton_lock_queues(bigint[])`)
	now.Advance(schemaCheckHeld)
	start := time.Now()
	_, err := s.MessageSend(ctx, baton.MessageSendParams{QueueID: qid, Messages: []*baton.Message{testMessage("no-function", time.Now())}})
	wantRefusalOutage(t, "send with baton_lock_queues dropped", err, time.Since(start), "database schema missing: baton_lock_queues(bigint[]) not there")
	if err := s.Ping(ctx); err == nil || !strings.Contains(err.Error(), "database schema missing") {
		t.Errorf("Ping with a function of the schema dropped: %v; want it to say so", err)
	}

	// A table dropped.
	exec(`DROP TABLE baton_receive_attempts`)
	now.Advance(schemaCheckHeld)
	start = time.Now()
	err = s.retry(ctx, func(ctx context.Context) error {
		_, err := s.pool.Exec(ctx, `SELECT count(*) FROM baton_receive_attempts`)
		return err
	})
	wantRefusalOutage(t, "read with baton_receive_attempts dropped", err, time.Since(start),
		"database schema missing: baton_receive_attempts, baton_lock_queues(bigint[]) not there")
}
