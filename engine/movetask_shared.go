package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/baton-sqs/baton"
)

// Move tasks on a store several servers share (baton.TaskLocker).
//
// A task runs on the server holding its lock, named by its handle; the lock
// dies with that server's process or its link to the store. The store is the
// one truth: it keeps at most one active task per source, lists the tasks
// for every server alike, and counts each move in the operation that makes
// it, so that a server taking a task over carries on from the exact count.
// Every server runs the takeover loop: once a second it lists the active
// tasks and tries the lock of each one not running here; whoever gets it
// resumes the task, or ends it CANCELLED if it was cancelling. A task
// cancelled through another server is marked CANCELLING in the store, and
// the loop of the server running it stops it.
//
// A message is never moved twice: the runner leases a batch of messages and
// moves each only while its lease is current, in one store operation, so
// that a server dying midway leaves its unmoved messages leased for
// moveLease, after which any runner moves them.

// takeoverEvery is how often a server looks for tasks to take over and for
// its tasks cancelled elsewhere.
const takeoverEvery = time.Second

// takeoverLogEvery is how often, at most, the takeover loop logs that it
// cannot list the tasks: during a database outage every run fails so.
const takeoverLogEvery = 10 * time.Second

// startSharedMoveTask locks the new task, saves it (the store refuses a
// second active task of the source) and runs it here.
func (e *Engine) startSharedMoveTask(ctx context.Context, t *moveTask, src, dest *baton.Queue) (string, error) {
	lock, err := e.locker.TaskLock(ctx, t.Handle)
	if err != nil {
		return "", fmt.Errorf("lock move task: %w", err)
	}
	if lock == nil {
		return "", errors.New("lock move task: a new task's lock is held")
	}
	t.lock = lock
	if err := e.saveTask(ctx, t); err != nil {
		lock.Release()
		if errors.Is(err, baton.ErrExists) {
			return "", errTaskRunning()
		}
		return "", fmt.Errorf("save move task: %w", err)
	}
	e.runHere(t, src, dest)
	return t.Handle, nil
}

// runHere registers a locked task as running on this server and runs it.
func (e *Engine) runHere(t *moveTask, src, dest *baton.Queue) {
	tasks := &e.tasks
	tasks.mu.Lock()
	tasks.byID[t.Handle] = t
	tasks.mu.Unlock()
	e.goRunMoveTask(t, src, dest)
}

// dropMoveTask forgets a task that stops running here and releases its
// lock.
func (e *Engine) dropMoveTask(t *moveTask) {
	e.tasks.mu.Lock()
	if e.tasks.byID[t.Handle] == t {
		delete(e.tasks.byID, t.Handle)
	}
	e.tasks.mu.Unlock()
	t.lock.Release()
}

// cancelSharedMoveTask cancels a task that does not run here: a RUNNING
// task becomes CANCELLING in the store.
func (e *Engine) cancelSharedMoveTask(ctx context.Context, handle string) (int64, error) {
	mt, ok, err := e.storedMoveTask(ctx, handle)
	if err != nil {
		return 0, err
	}
	if !ok || mt.Status != TaskRunning {
		return 0, errNoSuchTask()
	}
	mt.Status = TaskCancelling
	if err := e.store.MoveTaskSave(ctx, mt); err != nil {
		return 0, fmt.Errorf("save move task: %w", err)
	}
	return mt.Moved, nil
}

// listSharedMoveTasks returns up to limit of the source's tasks from the
// store, newest first.
func (e *Engine) listSharedMoveTasks(ctx context.Context, sourceARN string, limit int) ([]MoveTask, error) {
	stored, err := e.store.MoveTaskList(ctx)
	if err != nil {
		return nil, fmt.Errorf("list move tasks: %w", err)
	}
	var out []MoveTask
	for _, mt := range stored {
		if mt.SourceARN == sourceARN {
			out = append(out, mt)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !a.StartedAt.Equal(b.StartedAt) {
			return a.StartedAt.After(b.StartedAt)
		}
		return a.Handle < b.Handle
	})
	return out[:min(limit, len(out))], nil
}

// storedMoveTask returns the store's task of the handle; ok is false if
// there is none.
func (e *Engine) storedMoveTask(ctx context.Context, handle string) (mt MoveTask, ok bool, err error) {
	stored, err := e.store.MoveTaskList(ctx)
	if err != nil {
		return MoveTask{}, false, fmt.Errorf("list move tasks: %w", err)
	}
	for _, mt := range stored {
		if mt.Handle == handle {
			return mt, true, nil
		}
	}
	return MoveTask{}, false, nil
}

// superviseMoveTasks runs the takeover loop until the engine closes.
func (e *Engine) superviseMoveTasks() {
	for {
		e.takeOverMoveTasks(context.Background())
		timer := e.clock.NewTimer(takeoverEvery)
		select {
		case <-timer.C():
		case <-e.closing:
			timer.Stop()
			return
		}
	}
}

// takeoverUnlogged logs the count of the takeover loop's failed lists
// held back since the line before, written at since.
func (e *Engine) takeoverUnlogged(held int, since time.Time) {
	e.log.Warn("move task takeover: list failed", failedUnlogged(held, since)...)
}

// failedUnlogged are the attributes of a takeover line that counts the
// failed lists held back since the one before, written at since.
func failedUnlogged(held int, since time.Time) []any {
	if held == 0 {
		return nil
	}
	return []any{"failed_unlogged", held, "since", since.UTC().Format(time.RFC3339)}
}

// takeOverMoveTasks stops this server's tasks that were cancelled elsewhere
// and takes over the active tasks nobody holds.
func (e *Engine) takeOverMoveTasks(ctx context.Context) {
	stored, err := e.store.MoveTaskList(ctx)
	if err != nil {
		e.takeoverLogs.Note("", func(held int, since time.Time) {
			e.log.Warn("move task takeover: list failed", append([]any{"err", err}, failedUnlogged(held, since)...)...)
		}, e.takeoverUnlogged)
		return
	}
	// The failures held back are said now, as what came before the list
	// worked again, and the next is news.
	e.takeoverLogs.End("", func(held int, since time.Time) {
		e.log.Info("move task takeover: list works again", failedUnlogged(held, since)...)
	})
	for _, mt := range stored {
		if mt.Status != TaskRunning && mt.Status != TaskCancelling {
			continue
		}
		select {
		case <-e.closing:
			return
		default:
		}
		e.tasks.mu.Lock()
		t, here := e.tasks.byID[mt.Handle]
		if here && mt.Status == TaskCancelling && t.Status == TaskRunning {
			t.Status = TaskCancelling
			close(t.cancel)
		}
		e.tasks.mu.Unlock()
		if !here {
			e.takeOver(ctx, mt.Handle)
		}
	}
}

// takeOver takes the task's lock if nobody holds it, then resumes the task
// or, if it was cancelling, ends it CANCELLED.
func (e *Engine) takeOver(ctx context.Context, handle string) {
	lock, err := e.locker.TaskLock(ctx, handle)
	if err != nil {
		e.log.Warn("move task takeover: lock failed", "err", err)
		return
	}
	if lock == nil {
		return
	}
	// Read again under the lock: its last holder may have finished the
	// task since the list.
	mt, ok, err := e.storedMoveTask(ctx, handle)
	if err != nil || !ok || (mt.Status != TaskRunning && mt.Status != TaskCancelling) {
		lock.Release()
		return
	}
	t := &moveTask{MoveTask: mt, cancel: make(chan struct{}), savedMoved: mt.Moved, lock: lock}
	if mt.Status == TaskCancelling {
		t.Status = TaskCancelled
		if err := e.saveTask(ctx, t); err != nil {
			e.log.Warn("move task takeover: save failed", "source", mt.SourceARN, "err", err)
		}
		lock.Release()
		return
	}
	src, dest, failure, err := e.moveTaskQueues(ctx, mt)
	if err != nil {
		e.log.Warn("move task takeover: queue lookup failed", "source", mt.SourceARN, "err", err)
		lock.Release()
		return
	}
	if failure != "" {
		t.Status, t.FailureReason = TaskFailed, failure
		if err := e.saveTask(ctx, t); err != nil {
			e.log.Warn("move task takeover: save failed", "source", mt.SourceARN, "err", err)
		}
		lock.Release()
		return
	}
	e.log.Info("move task taken over", "source", mt.SourceARN, "moved", mt.Moved, "to_move", mt.ToMove)
	e.runHere(t, src, dest)
}

// moveTaskQueues looks up a stored task's source and destination queues.
// failure is set if one no longer exists.
func (e *Engine) moveTaskQueues(ctx context.Context, mt MoveTask) (src, dest *baton.Queue, failure string, err error) {
	get := func(arn string) (*baton.Queue, error) {
		a, ok := parseARN(arn)
		if !ok {
			return nil, baton.ErrNotFound
		}
		return e.store.QueueGet(ctx, a.region, a.account, a.name)
	}
	const gone = "AWS.SimpleQueueService.NonExistentQueue"
	src, err = get(mt.SourceARN)
	if errors.Is(err, baton.ErrNotFound) {
		return nil, nil, gone, nil
	}
	if err != nil {
		return nil, nil, "", err
	}
	if mt.DestinationARN != "" {
		dest, err = get(mt.DestinationARN)
		if errors.Is(err, baton.ErrNotFound) {
			return nil, nil, gone, nil
		}
		if err != nil {
			return nil, nil, "", err
		}
	}
	return src, dest, "", nil
}
