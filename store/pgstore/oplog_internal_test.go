package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/internal/pgtest"
	"github.com/baton-sqs/baton/internal/testutil/logbuf"
	"github.com/baton-sqs/baton/internal/testutil/poll"
)

// openLogged opens a store on a database of its own whose log is logs and
// whose paced log lines go by fake's time.
func openLogged(t *testing.T, url string, logs io.Writer, fake clock.Clock, retryFor time.Duration) *Store {
	t.Helper()
	s, err := Open(context.Background(), url, Options{Logger: slog.New(slog.NewTextHandler(logs, nil)), Clock: fake, RetryFor: retryFor})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// waitTimer waits until a timer is pending on fake: a paced line's count
// (pacedLog) waits for the end of its interval.
func waitTimer(t *testing.T, fake *clock.Fake) {
	t.Helper()
	poll.For(t, 30*time.Second, func() error {
		if fake.Timers() == 0 {
			return errors.New("no timer pending on the store's clock")
		}
		return nil
	})
}

// TestRetriedSuccessesPaced: a burst of operations that each succeed after
// a retry (a connection limit, a restart) is logged as one line at once
// and one with the count of the others once the interval has passed, not
// a line each; a lone retry later still gets its line at once. Each used
// to log a line: a hundred lines for a hundred operations.
func TestRetriedSuccessesPaced(t *testing.T) {
	t.Parallel()
	logs := &logbuf.Buffer{}
	fake := clock.NewFake(time.Now())
	s := openLogged(t, pgtest.MustDatabase(t), logs, fake, 0)
	failOnce := func() func(context.Context) error {
		tries := 0
		return func(context.Context) error {
			if tries++; tries == 1 {
				return lostAnswer
			}
			return nil
		}
	}
	const burst = 100
	var wg sync.WaitGroup
	for range burst {
		wg.Go(func() {
			if err := s.retry(context.Background(), failOnce()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	const one = "msg=\"PostgreSQL operation succeeded after retries\""
	if n := strings.Count(logs.String(), one); n != 1 {
		t.Fatalf("%d operations that succeeded after a retry logged %d lines of their own; want 1 at once:\n%s", burst, n, logs)
	}
	waitTimer(t, fake)
	fake.Advance(pacedLogEvery)
	want := fmt.Sprintf("msg=\"PostgreSQL operations succeeded after retries\" count=%d since=", burst-1)
	poll.For(t, 30*time.Second, func() error {
		if !strings.Contains(logs.String(), want) {
			return fmt.Errorf("no line %s once the interval passed; log:\n%s", want, logs)
		}
		return nil
	})

	fake.Advance(pacedLogEvery)
	if err := s.retry(context.Background(), failOnce()); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(logs.String(), one); n != 2 {
		t.Fatalf("a lone operation that succeeded after a retry, an interval after the burst's count: %d lines of their own in all, want 2:\n%s", n, logs)
	}
	if strings.Contains(logs.String(), "more_succeeded_so") {
		t.Errorf("a line counts others held back, but the burst's count was said already:\n%s", logs)
	}
}

// TestGiveUpsBurstCounted: a burst of operations that give up on one
// problem (a disk full for a few seconds) is one line at once and one with
// the count of the others once the interval has passed. The count used to
// wait for the next failure of that problem, which may never come.
func TestGiveUpsBurstCounted(t *testing.T) {
	t.Parallel()
	logs := &logbuf.Buffer{}
	fake := clock.NewFake(time.Now())
	s := openLogged(t, pgtest.MustDatabase(t), logs, fake, 0)
	const burst = 50
	for range burst {
		err := s.retry(context.Background(), func(context.Context) error { return &pgconn.PgError{Code: "53100"} })
		if !errors.Is(err, baton.ErrUnavailable) {
			t.Fatalf("an operation refused for a full disk: %v; want ErrUnavailable", err)
		}
	}
	if n := strings.Count(logs.String(), `msg="PostgreSQL operation failed"`); n != 1 {
		t.Fatalf("%d operations gave up on a full disk, %d lines of their own; want 1 at once:\n%s", burst, n, logs)
	}
	waitTimer(t, fake)
	fake.Advance(pacedLogEvery)
	want := fmt.Sprintf(`msg="PostgreSQL operations failed" problem="database disk full" outcome_unknown=false count=%d since=`, burst-1)
	poll.For(t, 30*time.Second, func() error {
		if !strings.Contains(logs.String(), want) {
			return fmt.Errorf("no line %s once the interval passed; log:\n%s", want, logs)
		}
		return nil
	})
}

// TestListenLossAndReturnEachOneLine: the LISTEN connection cut, and not
// to be made again for a while (the database refuses connections), is one
// line when it is lost and one when it is back, saying for how long long
// polls fell back to polling and how many attempts failed; not a line for
// each failed attempt. It used to log each attempt and never its return.
// Lost again within the interval, it is counted, and said once the
// interval has passed. How long it was lost is by the store's clock (it
// was by the system's).
func TestListenLossAndReturnEachOneLine(t *testing.T) {
	t.Parallel()
	url := pgtest.MustDatabase(t)
	db := pgtest.DatabaseName(url)
	logs := &logbuf.Buffer{}
	fake := clock.NewFake(time.Now())
	s := openLogged(t, url, logs, fake, 0)
	s.Subscribe(func(uint64) {})
	<-s.Listening()
	// On another database of the cluster: a database's own sessions
	// cannot bar connections to it.
	admin := pgtest.MustConnect(t, pgtest.MustShared(t).URL("postgres"))
	exec := func(sql string) {
		t.Helper()
		if _, err := admin.Exec(context.Background(), sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	listener := func() int32 {
		t.Helper()
		var pid int32
		err := admin.QueryRow(context.Background(), `SELECT coalesce(max(pid), 0) FROM pg_stat_activity
			WHERE datname = $1 AND query LIKE 'LISTEN%'`, db).Scan(&pid)
		if err != nil {
			t.Fatal(err)
		}
		return pid
	}
	refusals := func() int {
		return strings.Count(pgtest.MustShared(t).Log(), fmt.Sprintf("database %q is not currently accepting connections", db))
	}
	before := refusals()
	exec(`ALTER DATABASE ` + pgx.Identifier{db}.Sanitize() + ` ALLOW_CONNECTIONS false`)
	exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '` + db + `' AND query LIKE 'LISTEN%'`)
	poll.For(t, 30*time.Second, func() error {
		if n := refusals() - before; n < 3 {
			return fmt.Errorf("the database refused %d connections since the LISTEN connection was cut; want 3 attempts", n)
		}
		return nil
	})
	// The outage lasts 7 s by the store's clock (within the interval of
	// the loss's line, for the loss again below): the return says so.
	const outage = 7 * time.Second
	fake.Advance(outage)
	exec(`ALTER DATABASE ` + pgx.Identifier{db}.Sanitize() + ` ALLOW_CONNECTIONS true`)
	backRE := regexp.MustCompile(`msg="PostgreSQL LISTEN connection back[^"]*" polled_for=(\S+) failed_attempts=(\d+)`)
	poll.For(t, 30*time.Second, func() error {
		if !backRE.MatchString(logs.String()) {
			return fmt.Errorf("no line said the LISTEN connection is back; log:\n%s", logs)
		}
		return nil
	})
	const lost = "msg=\"PostgreSQL LISTEN connection lost;"
	if n := strings.Count(logs.String(), lost); n != 1 {
		t.Errorf("the LISTEN connection lost once, with attempts to make it again refused: %d lines of its loss, want 1:\n%s", n, logs)
	}
	m := backRE.FindStringSubmatch(logs.String())
	if polled, err := time.ParseDuration(m[1]); err != nil || polled != outage {
		t.Errorf("the return says polled_for=%s; want %v, how long by the store's clock", m[1], outage)
	}
	if failed, _ := strconv.Atoi(m[2]); failed < 2 {
		t.Errorf("the return says failed_attempts=%s; the database refused at least 3 since the cut", m[2])
	}

	// Lost again within the interval: counted, said once it has passed.
	old := listener()
	exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '` + db + `' AND query LIKE 'LISTEN%'`)
	poll.For(t, 30*time.Second, func() error {
		if pid := listener(); pid == 0 || pid == old {
			return errors.New("the LISTEN connection is not made again")
		}
		return nil
	})
	if n, b := strings.Count(logs.String(), lost), len(backRE.FindAllString(logs.String(), -1)); n != 1 || b != 1 {
		t.Errorf("lost again within the interval: %d lines of loss and %d of return in all, want 1 and 1 (the second loss counted):\n%s", n, b, logs)
	}
	waitTimer(t, fake)
	fake.Advance(pacedLogEvery)
	againRE := regexp.MustCompile(`msg="PostgreSQL LISTEN connection lost again" times=1 since=\S+ lost_now=(\w+)`)
	poll.For(t, 30*time.Second, func() error {
		if !againRE.MatchString(logs.String()) {
			return fmt.Errorf("no line counted the loss held back once the interval passed; log:\n%s", logs)
		}
		return nil
	})
	// The count may come while the connection is being made again
	// (the LISTEN seen above, not yet the store's word of it): then it
	// says it is lost now, and its return is said too.
	backs := 1
	if againRE.FindStringSubmatch(logs.String())[1] == "true" {
		backs = 2
	}
	poll.For(t, 30*time.Second, func() error {
		if b := len(backRE.FindAllString(logs.String(), -1)); b != backs {
			return fmt.Errorf("%d lines of the return, want %d; log:\n%s", b, backs, logs)
		}
		return nil
	})
}

// renewalGoroutines counts the goroutines of renewSessions' check.
func renewalGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "renewSessions.func")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// TestCloseEndsSessionCheck: the check of a new session after a refusal
// for read-only (renewSessions), in flight against a server that accepts
// and never answers, is ended by Close, promptly, with no goroutine left
// and its connection closed. It used to outlive Close by the retry bound
// (a minute here), holding its connection.
func TestCloseEndsSessionCheck(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- c
		}
	}()
	s, err := Open(context.Background(), pgtest.MustDatabase(t), Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), RetryFor: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	hung, err := pgx.ParseConfig(fmt.Sprintf("postgres://baton@%s/baton?sslmode=disable", ln.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	s.connCfg = hung
	s.renewSessions()
	var conn net.Conn
	select {
	case conn = <-accepted:
		defer conn.Close()
	case <-time.After(30 * time.Second):
		s.Close()
		t.Fatal("the session check did not connect within 30s")
	}
	began := time.Now()
	s.Close()
	if took := time.Since(began); took > 10*time.Second {
		t.Errorf("Close took %v with a session check in flight; want it ended promptly", took)
	}
	poll.For(t, 10*time.Second, func() error {
		if n := renewalGoroutines(); n > 0 {
			return fmt.Errorf("%d goroutines of the session check left after Close", n)
		}
		return nil
	})
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Read(make([]byte, 4096)); !errors.Is(err, io.EOF) {
		// The startup message came first; the close follows.
		if _, err = conn.Read(make([]byte, 4096)); !errors.Is(err, io.EOF) {
			t.Errorf("the session check's connection after Close: %v; want it closed", err)
		}
	}
}
