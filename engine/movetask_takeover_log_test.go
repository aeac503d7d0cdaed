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
// a database outage; it counts the attempts.
type unlistableTasks struct {
	*memstore.Shared
	lists atomic.Int64
}

func (s *unlistableTasks) MoveTaskList(context.Context) ([]baton.MoveTask, error) {
	s.lists.Add(1)
	return nil, fmt.Errorf("list move tasks: %w: database unreachable", baton.ErrUnavailable)
}

// TestTakeoverListFailureLoggedOnce: the takeover loop of a node on a
// shared store runs every second; while the database is away each run
// fails. The log says so at once, then at most once every 10 s with the
// count of the others, not once a second as it did.
func TestTakeoverListFailureLoggedOnce(t *testing.T) {
	t.Parallel()
	store := &unlistableTasks{Shared: memstore.NewCluster().Open()}
	clk := clock.NewFake(testutil.Epoch)
	logs := &logbuf.Buffer{}
	e, err := engine.New(engine.Config{Store: store, Clock: clk, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	// Thirty seconds of runs, each waited for before the clock moves.
	for i := int64(1); i <= 30; i++ {
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
	lines := strings.Count(logs.String(), "move task takeover: list failed")
	if lines < 1 || lines > 4 {
		t.Errorf("%d runs failed in 30 s, logged %d times; want once, then at most once every 10 s:\n%s", store.lists.Load(), lines, logs)
	}
	if !strings.Contains(logs.String(), "failed_unlogged=") {
		t.Errorf("no line says how many failures were not logged:\n%s", logs)
	}
}
