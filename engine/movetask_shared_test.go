package engine_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/pgtest"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/internal/testutil/skipnote"
	"github.com/baton-sqs/baton/store/pgstore"
)

// Move tasks on two engines sharing one PostgreSQL database, as two
// `baton serve` nodes do, on one fake clock. A node's death is its store
// closing: its connections end, and with them its task locks.

const sharedAccount = "000000000000"

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

// node is one engine on its own store.
type node struct {
	e     *engine.Engine
	store *pgstore.Store
}

// kill closes the node's store first, as a dying process drops its
// connections, and then stops its engine.
func (n *node) kill() {
	n.store.Close()
	n.e.Close()
}

// mustSharedNodes starts n engines on one new database and clock.
func mustSharedNodes(t *testing.T, n int) ([]*node, *clock.Fake) {
	t.Helper()
	url := pgtest.MustStart(t).MustDatabase(t)
	clock := clock.NewFake(testutil.Epoch)
	nodes := make([]*node, n)
	for i := range nodes {
		s, err := pgstore.Open(context.Background(), url, pgstore.Options{Logger: quietLog})
		if err != nil {
			t.Fatal(err)
		}
		e, err := engine.New(engine.Config{Store: s, Clock: clock, Logger: quietLog})
		if err != nil {
			t.Fatal(err)
		}
		nodes[i] = &node{e: e, store: s}
		t.Cleanup(func() { e.Close(); s.Close() })
	}
	return nodes, clock
}

// mustRedriveSetup creates "work", its dead-letter queue "work-dlq" and
// "dest", and puts n messages in work-dlq; it returns their bodies.
func mustRedriveSetup(t *testing.T, e *engine.Engine, n int) []string {
	t.Helper()
	ctx := t.Context()
	for _, q := range []engine.CreateQueueParams{
		{Name: "work-dlq"},
		{Name: "dest"},
		{Name: "work", Attributes: map[string]string{"RedrivePolicy": fmt.Sprintf(
			`{"deadLetterTargetArn":"%s","maxReceiveCount":"3"}`, e.ARN(sharedAccount, "work-dlq"))}},
	} {
		q.Account = sharedAccount
		if _, err := e.CreateQueue(ctx, q); err != nil {
			t.Fatalf("CreateQueue %s: %v", q.Name, err)
		}
	}
	var bodies []string
	for i := range n {
		body := fmt.Sprintf("m%02d", i)
		if _, err := e.SendMessage(ctx, engine.QueueRef{Account: sharedAccount, Name: "work-dlq"}, engine.SendParams{Body: body}); err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, body)
	}
	return bodies
}

func mustStartTask(t *testing.T, e *engine.Engine, rate int) string {
	t.Helper()
	h, err := e.StartMessageMoveTask(t.Context(), engine.StartMessageMoveTaskParams{
		Account: sharedAccount, SourceARN: e.ARN(sharedAccount, "work-dlq"),
		DestinationARN: e.ARN(sharedAccount, "dest"), MaxPerSecond: &rate,
	})
	if err != nil {
		t.Fatalf("StartMessageMoveTask: %v", err)
	}
	return h
}

// listTask returns the newest task of work-dlq as e lists it.
func listTask(t *testing.T, e *engine.Engine) engine.MoveTask {
	t.Helper()
	got, err := e.ListMessageMoveTasks(t.Context(), "", sharedAccount, e.ARN(sharedAccount, "work-dlq"), nil)
	if err != nil || len(got) != 1 {
		t.Fatalf("ListMessageMoveTasks: %v, %+v", err, got)
	}
	return got[0]
}

// awaitParked waits until the clock has at least want() timers: every loop
// that should be waiting on it is.
func awaitParked(t *testing.T, clock *clock.Fake, want func() int) {
	t.Helper()
	testutil.CheckFor(t, 10*time.Second, func() error {
		if got, n := clock.Timers(), want(); got < n {
			return fmt.Errorf("%d timers pending, want %d", got, n)
		}
		return nil
	})
}

// parked is awaitParked's want for n timers.
func parked(n int) func() int { return func() int { return n } }

// awaitTask waits until both engines list the task alike and cond holds.
func awaitTask(t *testing.T, nodes []*node, cond func(engine.MoveTask) error) engine.MoveTask {
	t.Helper()
	var last engine.MoveTask
	testutil.CheckFor(t, 10*time.Second, func() error {
		a, b := listTask(t, nodes[0].e), listTask(t, nodes[1].e)
		if !a.StartedAt.Equal(b.StartedAt) || a.Status != b.Status || a.Moved != b.Moved || a.Handle != b.Handle {
			return fmt.Errorf("engines disagree: %+v and %+v", a, b)
		}
		last = a
		return cond(a)
	})
	return last
}

// drain receives every message of the queue and returns the bodies.
func drain(t *testing.T, e *engine.Engine, name string) []string {
	t.Helper()
	var bodies []string
	ten, hide := 10, 600
	for {
		got, err := e.ReceiveMessage(t.Context(), engine.QueueRef{Account: sharedAccount, Name: name},
			engine.ReceiveParams{MaxNumberOfMessages: &ten, VisibilityTimeout: &hide})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 0 {
			slices.Sort(bodies)
			return bodies
		}
		for _, m := range got {
			bodies = append(bodies, m.Body)
		}
	}
}

// TestMoveTaskTakenOverWhenNodeDies starts a task on node 0, checks that
// node 1 never runs it while node 0 holds it, kills node 0 midway, and
// has node 1 take the task over and finish it: every message moved exactly
// once, the counts carried on.
func TestMoveTaskTakenOverWhenNodeDies(t *testing.T) {
	skipnote.SkipUnlessLong(t, "a move task taken over when its node dies")
	t.Parallel()
	nodes, clock := mustSharedNodes(t, 2)
	const n, rate = 20, 3
	bodies := mustRedriveSetup(t, nodes[0].e, n)
	h := mustStartTask(t, nodes[0].e, rate)

	// Node 0 runs the task; node 1's takeover loop finds it locked. Two
	// takeover loops and the runner park on the clock after each round.
	for round := 1; round <= 3; round++ {
		awaitTask(t, nodes, func(mt engine.MoveTask) error {
			if mt.Moved != int64(rate*round) {
				return fmt.Errorf("moved %d, want %d", mt.Moved, rate*round)
			}
			return nil
		})
		awaitParked(t, clock, parked(3))
		if got := engine.RunningMoveTasks(nodes[1].e); len(got) != 0 {
			t.Fatalf("node 1 runs %v while node 0 holds it", got)
		}
		if got := engine.RunningMoveTasks(nodes[0].e); !slices.Equal(got, []string{h}) {
			t.Fatalf("node 0 runs %v, want the task", got)
		}
		if round < 3 {
			clock.Advance(time.Second)
		}
	}
	_, err := nodes[1].e.StartMessageMoveTask(t.Context(), engine.StartMessageMoveTaskParams{
		Account: sharedAccount, SourceARN: nodes[1].e.ARN(sharedAccount, "work-dlq"),
	})
	var be *baton.Error
	if !errors.As(err, &be) || be.Code != baton.ErrInvalidParameterValue {
		t.Fatalf("second task of the source through node 1: %v, want InvalidParameterValue", err)
	}

	nodes[0].kill()
	done := false
	for i := 0; i < 40 && !done; i++ {
		// Node 1's takeover loop, and its runner once it has taken the
		// task over.
		awaitParked(t, clock, func() int { return 1 + len(engine.RunningMoveTasks(nodes[1].e)) })
		clock.Advance(time.Second)
		testutil.CheckFor(t, 10*time.Second, func() error {
			got, err := nodes[1].e.ListMessageMoveTasks(t.Context(), "", sharedAccount, nodes[1].e.ARN(sharedAccount, "work-dlq"), nil)
			if err != nil {
				return err
			}
			done = got[0].Status == engine.TaskCompleted
			return nil
		})
	}
	mt := listTask(t, nodes[1].e)
	if mt.Status != engine.TaskCompleted || mt.Moved != n || mt.ToMove != n || mt.Handle != h {
		t.Fatalf("task after takeover: %+v, want COMPLETED with %d of %d moved", mt, n, n)
	}
	if got := drain(t, nodes[1].e, "dest"); !slices.Equal(got, bodies) {
		t.Errorf("dest holds %v, want each of %v once", got, bodies)
	}
	if got := drain(t, nodes[1].e, "work-dlq"); len(got) != 0 {
		t.Errorf("work-dlq still holds %v", got)
	}
}

// TestMoveTaskCancelThroughOtherNode cancels a task running on node 0
// through node 1, which node 0 notices within a round, and a task whose
// node died through the survivor, which ends it itself. Another account's
// handle is refused as a missing task.
func TestMoveTaskCancelThroughOtherNode(t *testing.T) {
	t.Parallel()
	nodes, clock := mustSharedNodes(t, 2)
	mustRedriveSetup(t, nodes[0].e, 10)
	h := mustStartTask(t, nodes[0].e, 1)
	awaitTask(t, nodes, func(mt engine.MoveTask) error {
		if mt.Moved != 1 {
			return fmt.Errorf("moved %d, want 1", mt.Moved)
		}
		return nil
	})
	awaitParked(t, clock, parked(3))

	_, err := nodes[1].e.CancelMessageMoveTask(t.Context(), "", "111111111111", h)
	var be *baton.Error
	if !errors.As(err, &be) || be.Code != baton.ErrResourceNotFound {
		t.Fatalf("cancel by another account: %v, want ResourceNotFound", err)
	}
	moved, err := nodes[1].e.CancelMessageMoveTask(t.Context(), "", sharedAccount, h)
	if err != nil || moved != 1 {
		t.Fatalf("cancel through node 1: %d, %v; want 1 moved", moved, err)
	}
	clock.Advance(time.Second)
	mt := awaitTask(t, nodes, func(mt engine.MoveTask) error {
		if mt.Status != engine.TaskCancelled {
			return fmt.Errorf("status %s, want CANCELLED", mt.Status)
		}
		return nil
	})
	if mt.Moved > 2 {
		t.Errorf("moved %d after the cancel, want at most one more round", mt.Moved)
	}
	if got := engine.RunningMoveTasks(nodes[0].e); len(got) != 0 {
		t.Errorf("node 0 still runs %v", got)
	}

	// A task whose node died while it was cancelling is ended by the
	// survivor.
	h = mustStartTask(t, nodes[0].e, 1)
	awaitParked(t, clock, parked(3))
	nodes[0].kill()
	if _, err := nodes[1].e.CancelMessageMoveTask(t.Context(), "", sharedAccount, h); err != nil {
		t.Fatalf("cancel the dead node's task: %v", err)
	}
	testutil.CheckFor(t, 10*time.Second, func() error {
		if clock.Timers() >= 1 {
			clock.Advance(time.Second)
		}
		if mt := listTask(t, nodes[1].e); mt.Status != engine.TaskCancelled {
			return fmt.Errorf("status %s, want CANCELLED", mt.Status)
		}
		return nil
	})
	if got := engine.RunningMoveTasks(nodes[1].e); len(got) != 0 {
		t.Errorf("node 1 runs %v", got)
	}
}

// TestCancelMoveTaskOfAnotherAccount: on a one-server store too, another
// account's handle is a task that does not exist, and the task goes on.
func TestCancelMoveTaskOfAnotherAccount(t *testing.T) {
	t.Parallel()
	e, _ := newEngine(t)
	mustRedriveSetup(t, e, 3)
	h := mustStartTask(t, e, 1)
	_, err := e.CancelMessageMoveTask(t.Context(), "", "111111111111", h)
	var be *baton.Error
	if !errors.As(err, &be) || be.Code != baton.ErrResourceNotFound || be.Message != "Task does not exist." {
		t.Fatalf("cancel by another account: %v, want ResourceNotFound: Task does not exist.", err)
	}
	if mt := listTask(t, e); mt.Status != engine.TaskRunning {
		t.Fatalf("task %s after the refused cancel, want RUNNING", mt.Status)
	}
	if _, err := e.CancelMessageMoveTask(t.Context(), "", sharedAccount, h); err != nil {
		t.Fatalf("cancel by its account: %v", err)
	}
}
