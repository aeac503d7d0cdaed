package consumer_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/baton-sqs/baton/consumer"
	"github.com/baton-sqs/baton/consumer/consumertest"
	"github.com/baton-sqs/baton/internal/testutil/logbuf"
	"github.com/baton-sqs/baton/internal/testutil/poll"
)

// wantLines checks that each want appears in a line of the log (all its
// fragments in one line).
func wantLines(t *testing.T, log string, want ...[]string) {
	t.Helper()
	for _, frags := range want {
		found := false
		for _, line := range strings.Split(log, "\n") {
			ok := true
			for _, f := range frags {
				ok = ok && strings.Contains(line, f)
			}
			found = found || ok
		}
		if !found {
			t.Errorf("no log line with %q in:\n%s", frags, log)
		}
	}
}

// With no observer, the runtime logs to slog.Default: the start-up
// warnings, an overrun handler, a stuck slot and the shutdown summary. Not
// parallel: it swaps the default logger.
func TestLogsToSlogDefaultWithoutObserver(t *testing.T) {
	var buf logbuf.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	defer slog.SetDefault(old)
	bubble(t, func(t *testing.T) {
		clock := consumertest.NewClock(time.Time{})
		fake := consumertest.NewSQS(clock)
		url := fake.CreateQueue("logged", map[string]string{"VisibilityTimeout": "30"})
		fake.Send(url, "x", "")
		g := newGate()
		defer g.open()
		c, err := consumer.New(fake, url, g.waiter(nil), consumer.WithClock(clock), consumer.WithConcurrency(1), consumer.WithAttemptTimeout(20*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { _, err := c.Run(context.Background()); done <- err }()
		poll.For(t, 5*time.Second, func() error {
			if len(fake.Calls("ReceiveMessage")) < 1 {
				return fmt.Errorf("no receive yet")
			}
			return nil
		})
		for i := 0; i < 30; i++ {
			synctest.Wait()
			clock.Advance(time.Second)
		}
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
		defer cancel()
		r := c.Shutdown(ctx)
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
		if c.Report() != r {
			t.Errorf("Report() = %+v, want Shutdown's %+v", c.Report(), r)
		}
	})
	wantLines(t, buf.String(),
		[]string{"level=WARN", "start-up check", "check=redrive", "queue=logged"},
		[]string{"level=WARN", "start-up check", "six times the attempt timeout"},
		[]string{"level=WARN", "overran its attempt timeout", "attempt=1"},
		[]string{"level=ERROR", "did not return within the grace"},
		[]string{"level=WARN", "shut down", "stuck=1"},
	)
}

// An explicit logger gets the events even with an observer: here a lost
// lease and the late delete of its message.
func TestLoggerWithObserver(t *testing.T) {
	t.Parallel()
	var buf logbuf.Buffer
	bubble(t, func(t *testing.T) {
		h := newHarness(t, "lostlog", nil)
		h.sqs.Send(h.url, "x", "")
		h.sqs.SetFaults(throttle("ChangeMessageVisibilityBatch", allCalls))
		g := newGate()
		defer g.open()
		h.start(holdUntil(h.clock, g, nil, nil), consumer.WithVisibilityTimeout(30*time.Second), consumer.WithConcurrency(1),
			consumer.WithLogger(slog.New(slog.NewTextHandler(&buf, nil))))
		h.advance(30*time.Second, 500*time.Millisecond)
		g.open()
		poll.For(t, 5*time.Second, func() error {
			if h.obs.Count(consumer.EventLateDelete) != 1 {
				return fmt.Errorf("no late delete yet")
			}
			return nil
		})
		h.stop()
	})
	wantLines(t, buf.String(),
		[]string{"level=WARN", "lease lost", "attempt=1"},
		[]string{"level=WARN", "deleted with the stale receipt"},
		// The receive in flight waits on the fake clock, standing still:
		// it is cut off, which the summary warns of.
		[]string{"level=WARN", "shut down", "receives_cancelled=1"},
	)
}

// A queue whose leases last hours: a crashed consumer stalls its messages
// that long. Run says so at start, at WARN.
func TestRunWarnsOfHoursLongLeases(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		var buf logbuf.Buffer
		h := newHarness(t, "longlease", map[string]string{"VisibilityTimeout": "43200", "RedrivePolicy": redrive})
		h.sqs.CreateQueue("dlq", nil)
		h.start(consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error { return nil }),
			consumer.WithLogger(slog.New(slog.NewTextHandler(&buf, nil))))
		wantLines(t, buf.String(), []string{"level=WARN", "start-up check", "check=visibility", "leases of 12h0m0s",
			"crashes or is killed without Shutdown, the messages it holds stay hidden that long"})
	})
}

// A handler that runs without calling Progress is renewed by the 5-minute
// auto-renew budget alone. Once it has run ten times the handlers' p99 (a
// hundred handlers took no time: p99 under a second, so ten seconds), the
// runtime says so at WARN, once, long before the budget ends.
func TestWarnsOfHandlerWithoutProgress(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		var buf logbuf.Buffer
		h := newHarness(t, "noprogress", map[string]string{"VisibilityTimeout": "30"})
		for i := 0; i < 100; i++ {
			h.sqs.Send(h.url, "quick", "")
		}
		g := newGate()
		defer g.open()
		h.start(consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
			if d.Body() == "slow" {
				select {
				case <-g.ch:
				case <-ctx.Done():
				}
			}
			return nil
		}), consumer.WithLogger(slog.New(slog.NewTextHandler(&buf, nil))))
		h.advanceUntil(time.Minute, time.Second, func() error {
			if p, ok := h.c.HandlerP99(); !ok || p != 0 {
				return fmt.Errorf("p99 %v trusted %v, want 0 and trusted", p, ok)
			}
			return nil
		})
		h.sqs.Send(h.url, "slow", "")
		h.advanceUntil(time.Minute, time.Second, func() error {
			if h.obs.Count(consumer.EventHandled) != 100 || len(h.sqs.Calls("ReceiveMessage")) == 0 {
				return fmt.Errorf("not started")
			}
			for _, m := range h.states() {
				if m.Body == "slow" && m.InFlight {
					return nil
				}
			}
			return fmt.Errorf("slow message not received")
		})
		start := h.clock.Now()
		h.advance(9*time.Second, time.Second)
		if n := h.obs.Count(consumer.EventNoProgress); n != 0 {
			t.Fatalf("no-progress events after 9 s: %d, want none yet", n)
		}
		h.advanceUntil(2*time.Minute, time.Second, func() error {
			if h.obs.Count(consumer.EventNoProgress) == 0 {
				return fmt.Errorf("no EventNoProgress")
			}
			return nil
		})
		if ran := h.clock.Now().Sub(start); ran > 12*time.Second {
			t.Errorf("reported after %v, want about 10 s", ran)
		}
		h.advance(time.Minute, time.Second)
		if n := h.obs.Count(consumer.EventNoProgress); n != 1 {
			t.Errorf("no-progress events %d, want one", n)
		}
		wantLines(t, buf.String(), []string{"level=WARN", "handler has run ten times its p99 without progress", "p99=0s", "budget_left=4m5"})
		g.open()
	})
}

// An outage of the queue fails receive after receive, each retried after
// a backoff: the log says so when they start failing and when they succeed
// again, not once per failed receive, and all of it goes to the logger
// given, none to slog.Default. Not parallel: it swaps the default logger.
func TestFailedReceivesLoggedTwice(t *testing.T) {
	var def, buf logbuf.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&def, nil)))
	defer slog.SetDefault(old)
	const failed = 50
	bubble(t, func(t *testing.T) {
		h := newHarness(t, "outage", map[string]string{"VisibilityTimeout": "30"})
		h.sqs.SetFaults(throttle("ReceiveMessage", failed))
		h.sqs.Send(h.url, "after", "")
		handled := make(chan struct{}, 1)
		h.start(consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
			handled <- struct{}{}
			return nil
		}), consumer.WithLogger(slog.New(slog.NewTextHandler(&buf, nil))))
		h.advanceUntil(time.Hour, time.Second, func() error {
			select {
			case <-handled:
				return nil
			default:
				return fmt.Errorf("%d receive errors, the message not handled", h.obs.Count(consumer.EventError))
			}
		})
		if n := h.obs.Count(consumer.EventError); n != failed {
			t.Errorf("%d receive errors observed, want %d", n, failed)
		}
		h.stop()
	})
	var receiveLines []string
	for _, line := range strings.Split(buf.String(), "\n") {
		if strings.Contains(line, "op=ReceiveMessage") || strings.Contains(line, `msg="consumer: receives`) {
			receiveLines = append(receiveLines, line)
		}
	}
	if len(receiveLines) > 2 {
		t.Errorf("%d failed receives logged %d lines, want at most 2:\n%s", failed, len(receiveLines), strings.Join(receiveLines, "\n"))
	}
	wantLines(t, buf.String(),
		[]string{"level=WARN", "consumer: receives failing", "queue=outage", "err="},
		[]string{"level=INFO", "consumer: receives succeed again", "queue=outage", fmt.Sprintf("failed_receives=%d", failed), "failing_for="},
	)
	if def.String() != "" {
		t.Errorf("slog.Default got lines while a logger was given:\n%s", def.String())
	}
}
