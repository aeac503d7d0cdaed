package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/testutil/logbuf"
	"github.com/baton-sqs/baton/internal/testutil/poll"
	"github.com/baton-sqs/baton/protocol"
	"github.com/baton-sqs/baton/store/memstore"
)

// lines waits until log holds n lines, and returns them.
func lines(t *testing.T, log *logbuf.Buffer, n int) []string {
	t.Helper()
	var got []string
	poll.For(t, 30*time.Second, func() error {
		if got = strings.Split(strings.TrimSpace(log.String()), "\n"); len(got) != n {
			return fmt.Errorf("%d lines, want %d:\n%s", len(got), n, log)
		}
		return nil
	})
	return got
}

// waitCount waits until fake has a timer pending at at: the count of
// lines held back is said once their interval has passed.
func waitCount(t *testing.T, fake *clock.Fake, at time.Time) {
	t.Helper()
	poll.For(t, 30*time.Second, func() error {
		if next, ok := fake.NextDeadline(); !ok || !next.Equal(at) {
			return fmt.Errorf("no timer pending at %v for the count held back", at)
		}
		return nil
	})
}

// An outage under load logs a line every unavailableEvery with the count
// of the requests it did not log, not one line per request.
func TestUnavailableLogged(t *testing.T) {
	var buf logbuf.Buffer
	fake := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	u := newUnavailableLog(slog.New(slog.NewTextHandler(&buf, nil)), fake)
	defer u.pace.Close()
	err := errors.New("store unavailable: disk full")
	for range 1000 { // 100 a second for 10 s
		u.note("r", "SendMessage", err)
		fake.Advance(10 * time.Millisecond)
	}
	u.note("r", "SendMessage", err)
	// The count of the 999 between is said by the line at 10 s or, if it
	// came first, once their interval had passed.
	if l := lines(t, &buf, 2); !strings.Contains(l[1], "more_answered_503=999") {
		t.Errorf("the second line does not count the 999 requests between: %s", l[1])
	}
}

// The requests answered 503 in a burst that ended within the interval are
// counted once it has passed, saying since when; the next outage's first
// line, an hour later, counts none. They were counted by that next line,
// an hour late, or never if none came.
func TestUnavailableBurstCountedOnceItEnds(t *testing.T) {
	var buf logbuf.Buffer
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	fake := clock.NewFake(start)
	u := newUnavailableLog(slog.New(slog.NewTextHandler(&buf, nil)), fake)
	defer u.pace.Close()
	err := errors.New("store unavailable: database refused this server's password")
	for range 300 { // a 3 s outage, 100 requests a second
		u.note("r", "SendMessage", err)
		fake.Advance(10 * time.Millisecond)
	}
	waitCount(t, fake, start.Add(unavailableEvery))
	fake.Set(start.Add(unavailableEvery))
	l := lines(t, &buf, 2)
	if !strings.Contains(l[1], "more_answered_503=299 since="+start.Format(time.RFC3339)) {
		t.Errorf("the burst's count, once its interval passed: %s; want the 299 held back since %v", l[1], start)
	}
	fake.Advance(time.Hour) // the next outage
	u.note("r", "SendMessage", errors.New("store unavailable: database denied this server permission"))
	if l = lines(t, &buf, 3); strings.Contains(l[2], "more_answered_503") {
		t.Errorf("the next outage's line counts requests already counted: %s", l[2])
	}
}

// Health checks many times a second while the store is not ready log the
// first finding, the count of those between once the interval has passed,
// and one line when the server is ready again; checks while ready log
// nothing.
func TestReadinessLogged(t *testing.T) {
	var buf logbuf.Buffer
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	fake := clock.NewFake(start)
	r := newReadinessLog(slog.New(slog.NewTextHandler(&buf, nil)), fake)
	defer r.pace.Close()
	r.saw(nil)
	for range 999 { // 100 a second for 10 s
		r.saw(errors.New("disk full: background writes failing"))
		fake.Advance(10 * time.Millisecond)
	}
	waitCount(t, fake, start.Add(unavailableEvery))
	fake.Set(start.Add(unavailableEvery))
	lines(t, &buf, 2)
	r.saw(errors.New("disk full: background writes failing"))
	r.saw(nil)
	r.saw(nil)
	l := lines(t, &buf, 4)
	for i, want := range []string{`msg="not ready"`, `msg="still not ready" err="disk full: background writes failing" for=10s checks_failed_unlogged=998 last_check=`,
		`msg="health checks failed before the server was ready again" checks_failed_unlogged=1 last_err="disk full: background writes failing" last_check=`, `msg="ready again"`} {
		if !strings.Contains(l[i], want) {
			t.Errorf("line %d = %s, want %s", i+1, l[i], want)
		}
	}
}

// TestReadinessCountSaidWhenReadyAgain: failed health checks held back
// since the last line, the server then ready again within the interval,
// are counted before the line that says it is ready again. They were
// dropped: the log said one check failed where five had.
func TestReadinessCountSaidWhenReadyAgain(t *testing.T) {
	var buf logbuf.Buffer
	fake := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	r := newReadinessLog(slog.New(slog.NewTextHandler(&buf, nil)), fake)
	defer r.pace.Close()
	for range 5 {
		r.saw(errors.New("database not answering"))
		fake.Advance(100 * time.Millisecond)
	}
	r.saw(nil)
	l := lines(t, &buf, 3)
	for i, want := range []string{`msg="not ready"`, `msg="health checks failed before the server was ready again" checks_failed_unlogged=4 last_err="database not answering" last_check=`, `msg="ready again"`} {
		if !strings.Contains(l[i], want) {
			t.Errorf("line %d = %s, want %s", i+1, l[i], want)
		}
	}
}

// A call whose client hung up (its context cancelled) is not an internal
// error: nothing failed, and nobody reads the answer.
func TestAbandonedCallNotAnInternalError(t *testing.T) {
	var buf bytes.Buffer
	eng, err := engine.New(engine.Config{Store: memstore.New()})
	if err != nil {
		t.Fatal(err)
	}
	s := New(Config{Engine: eng, Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	op := protocol.Operation{Name: "ReceiveMessage", Call: func(ctx context.Context, _ any) (any, error) {
		<-ctx.Done()
		return nil, fmt.Errorf("receive messages: %w", ctx.Err())
	}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.call(ctx, op, nil, "r1"); err == nil {
		t.Fatal("no error")
	}
	if strings.Contains(buf.String(), "ERROR") {
		t.Errorf("an abandoned call logged as an error:\n%s", buf.String())
	}
	// The same error from a call whose client is still there is one.
	op.Call = func(context.Context, any) (any, error) {
		return nil, fmt.Errorf("receive messages: %w", context.Canceled)
	}
	s.call(context.Background(), op, nil, "r2")
	if !strings.Contains(buf.String(), `level=ERROR msg="internal error" request_id=r2`) {
		t.Errorf("a failed call with its client there is not logged as an internal error:\n%s", buf.String())
	}
}
