package engine_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/internal/testutil/logbuf"
	"github.com/baton-sqs/baton/store/memstore"
)

// unlistableTasks is a shared store that cannot list move tasks, as during
// a database outage, until back is set; it counts the attempts.
type unlistableTasks struct {
	*memstore.Shared
	lists atomic.Int64
	back  atomic.Bool
}

func (s *unlistableTasks) MoveTaskList(ctx context.Context) ([]baton.MoveTask, error) {
	defer s.lists.Add(1)
	if s.back.Load() {
		return s.Shared.MoveTaskList(ctx)
	}
	return nil, fmt.Errorf("list move tasks: %w: database unreachable", baton.ErrUnavailable)
}

// takeoverRig is an engine on an unlistableTasks store and a fake clock,
// logging to logs.
func takeoverRig(t *testing.T) (*unlistableTasks, *clock.Fake, *logbuf.Buffer) {
	t.Helper()
	store := &unlistableTasks{Shared: memstore.NewCluster().Open()}
	clk := clock.NewFake(testutil.Epoch)
	logs := &logbuf.Buffer{}
	e, err := engine.New(engine.Config{Store: store, Clock: clk, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return store, clk, logs
}

// runTakeovers lets the takeover loop run until its n-th run, each waited
// for before the clock moves a second.
func runTakeovers(t *testing.T, store *unlistableTasks, clk *clock.Fake, n int64) {
	t.Helper()
	for i := store.lists.Load() + 1; i <= n; i++ {
		testutil.CheckFor(t, 10*time.Second, func() error {
			if n := store.lists.Load(); n < i {
				return fmt.Errorf("%d runs of the takeover loop, want %d", n, i)
			}
			if at, ok := clk.NextDeadline(); !ok || at.After(clk.Now().Add(time.Second)) {
				return errors.New("the takeover loop's next run is not due yet")
			}
			return nil
		})
		clk.Advance(time.Second)
	}
}

// TestTakeoverListRecoveryCountsTheFailures: a database away for three
// seconds fails three runs of the takeover loop; the first is logged, and
// the two after it are counted by a line that says the list works again,
// and since when; not by one that reads as a failure now. They were dropped, the next failure being news.
func TestTakeoverListRecoveryCountsTheFailures(t *testing.T) {
	t.Parallel()
	store, clk, logs := takeoverRig(t)
	first := clk.Now()
	runTakeovers(t, store, clk, 3)
	store.back.Store(true)
	runTakeovers(t, store, clk, 4)
	testutil.CheckFor(t, 10*time.Second, func() error {
		if l := logs.String(); strings.Count(l, "move task takeover: list failed") != 1 ||
			!strings.Contains(l, `msg="move task takeover: list works again" failed_unlogged=2 since=`+first.UTC().Format(time.RFC3339)) {
			return fmt.Errorf("want the first failure and a line counting the 2 after it since %v:\n%s", first, l)
		}
		return nil
	})
}

// TestTakeoverListFailureLoggedOnce: the takeover loop of a node on a
// shared store runs every second; while the database is away each run
// fails. The log says so at once, then at most once every 10 s with the
// count of the others, not once a second as it did.
func TestTakeoverListFailureLoggedOnce(t *testing.T) {
	t.Parallel()
	store, clk, logs := takeoverRig(t)
	runTakeovers(t, store, clk, 30) // thirty seconds of runs
	lines := strings.Count(logs.String(), "move task takeover: list failed")
	if lines < 1 || lines > 4 {
		t.Errorf("%d runs failed in 30 s, logged %d times; want once, then at most once every 10 s:\n%s", store.lists.Load(), lines, logs)
	}
	if !strings.Contains(logs.String(), "failed_unlogged=") {
		t.Errorf("no line says how many failures were not logged:\n%s", logs)
	}
}
