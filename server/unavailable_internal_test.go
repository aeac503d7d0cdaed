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
	"github.com/baton-sqs/baton/protocol"
	"github.com/baton-sqs/baton/store/memstore"
)

// An outage under load logs a line every unavailableEvery with the count
// of the requests it did not log, not one line per request.
func TestUnavailableLogged(t *testing.T) {
	var buf bytes.Buffer
	fake := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	u := newUnavailableLog(slog.New(slog.NewTextHandler(&buf, nil)), fake)
	err := errors.New("store unavailable: disk full")
	for range 1000 { // 100 a second for 10 s
		u.note("r", "SendMessage", err)
		fake.Advance(10 * time.Millisecond)
	}
	u.note("r", "SendMessage", err)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines for 1001 requests over 10 s, want 2:\n%s", len(lines), buf.String())
	}
	if !strings.Contains(lines[1], "more_answered_503=999") {
		t.Errorf("the second line does not count the 999 requests between: %s", lines[1])
	}
}

// The requests answered 503 in an outage that ended are counted by the
// first line of the next outage, which says since when: it said "in=10s",
// as if they had all come in the 10 s before it.
func TestUnavailableCountSaysSinceWhen(t *testing.T) {
	var buf bytes.Buffer
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	fake := clock.NewFake(start)
	u := newUnavailableLog(slog.New(slog.NewTextHandler(&buf, nil)), fake)
	err := errors.New("store unavailable: database refused this server's password")
	for range 300 { // a 3 s outage, 100 requests a second
		u.note("r", "SendMessage", err)
		fake.Advance(10 * time.Millisecond)
	}
	fake.Advance(time.Hour) // the next outage
	u.note("r", "SendMessage", errors.New("store unavailable: database denied this server permission"))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(lines), buf.String())
	}
	if !strings.Contains(lines[1], "more_answered_503=299") || !strings.Contains(lines[1], "since="+start.Format(time.RFC3339)) {
		t.Errorf("the next outage's line does not count the 299 held back since %v: %s", start, lines[1])
	}
	if strings.Contains(lines[1], "in=10s") {
		t.Errorf("the next outage's line says the 299 came in the 10 s before it, an hour after they did: %s", lines[1])
	}
}

// Health checks many times a second while the store is not ready log the
// first finding, one line every unavailableEvery with the count between,
// and one when the server is ready again; checks while ready log nothing.
func TestReadinessLogged(t *testing.T) {
	var buf bytes.Buffer
	fake := clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	r := newReadinessLog(slog.New(slog.NewTextHandler(&buf, nil)), fake)
	r.saw(nil)
	for range 1000 { // 100 a second for 10 s
		r.saw(errors.New("disk full: background writes failing"))
		fake.Advance(10 * time.Millisecond)
	}
	r.saw(errors.New("disk full: background writes failing"))
	r.saw(nil)
	r.saw(nil)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines for 1001 failed checks over 10 s and two good ones, want 3:\n%s", len(lines), buf.String())
	}
	for i, want := range []string{`msg="not ready"`, "checks_failed_unlogged=999", `msg="ready again"`} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d = %s, want %s", i+1, lines[i], want)
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
