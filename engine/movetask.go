package engine

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/ids"
)

// Move task statuses.
const (
	TaskRunning    = "RUNNING"
	TaskCompleted  = "COMPLETED"
	TaskCancelling = "CANCELLING"
	TaskCancelled  = "CANCELLED"
	TaskFailed     = "FAILED"
)

const (
	maxMoveRate = 500
	// defaultMoveRate is the rate of a task that sets none ("system
	// optimised" on SQS).
	defaultMoveRate = 500
	// moveLease hides the messages a task is moving, should it stop midway.
	moveLease = 30 * time.Second
)

// MoveTask is a message move task's state as ListMessageMoveTasks reports
// it.
type MoveTask = baton.MoveTask

type moveTask struct {
	MoveTask
	cancel chan struct{}
	// saveMu orders the task's saves, so that the last one the store gets
	// holds its latest state.
	saveMu sync.Mutex
	// savedMoved is Moved as last saved; guarded by saveMu.
	savedMoved int64
	// lock, on a store several servers share, is the task's lock: the task
	// runs here while it is held, and is saved through it.
	lock baton.TaskLock
}

// internalFailure is the FailureReason of a task the store failed.
const internalFailure = "AWS.SimpleQueueService.InternalError"

// restartFailure is the FailureReason of a task that was unfinished when
// the server last stopped.
const restartFailure = "The server restarted before the task finished."

// loadMoveTasks fills the registry with the store's tasks, newest first per
// source. A task still RUNNING or CANCELLING was cut short by a restart: it
// becomes FAILED, and is saved so.
//
// On a store several servers share, the registry holds only the tasks
// running here and nothing is loaded: an unfinished task may be running on
// another server, and the takeover loop started here resumes those whose
// server died.
func (e *Engine) loadMoveTasks(ctx context.Context) error {
	if e.locker != nil {
		e.tasks.byID = make(map[string]*moveTask)
		e.tasks.bySource = make(map[string][]*moveTask)
		e.tasks.wg.Add(1)
		go func() {
			defer e.tasks.wg.Done()
			e.superviseMoveTasks()
		}()
		return nil
	}
	stored, err := e.store.MoveTaskList(ctx)
	if err != nil {
		return fmt.Errorf("engine: list move tasks: %w", err)
	}
	tasks := &e.tasks
	tasks.byID = make(map[string]*moveTask, len(stored))
	tasks.bySource = make(map[string][]*moveTask)
	for _, mt := range stored {
		if !mt.Finished() {
			mt.Status, mt.FailureReason = TaskFailed, restartFailure
			if err := e.store.MoveTaskSave(ctx, mt); err != nil {
				return fmt.Errorf("engine: save move task: %w", err)
			}
		}
		t := &moveTask{MoveTask: mt, cancel: make(chan struct{}), savedMoved: mt.Moved}
		tasks.byID[t.Handle] = t
		tasks.bySource[t.SourceARN] = append(tasks.bySource[t.SourceARN], t)
	}
	for src, list := range tasks.bySource {
		slices.SortStableFunc(list, func(a, b *moveTask) int { return baton.CompareMoveTasks(a.MoveTask, b.MoveTask) })
		tasks.bySource[src] = tasks.trim(list)
	}
	return nil
}

// trim drops from list, a source's tasks newest first, the finished ones
// beyond the newest baton.MaxMoveTasksKept, as the store does when it saves
// a task: no listing shows them again. The caller holds mu, or owns tasks.
func (tasks *moveTasks) trim(list []*moveTask) []*moveTask {
	if len(list) <= baton.MaxMoveTasksKept {
		return list
	}
	kept := list[:baton.MaxMoveTasksKept]
	for _, t := range list[baton.MaxMoveTasksKept:] {
		if t.Finished() {
			delete(tasks.byID, t.Handle)
		} else {
			kept = append(kept, t)
		}
	}
	clear(list[len(kept):])
	return kept
}

// saveTask stores the task's current state, through its lock if it has
// one.
func (e *Engine) saveTask(ctx context.Context, t *moveTask) error {
	t.saveMu.Lock()
	defer t.saveMu.Unlock()
	e.tasks.mu.Lock()
	snap := t.MoveTask
	e.tasks.mu.Unlock()
	save := e.store.MoveTaskSave
	if t.lock != nil {
		save = t.lock.MoveTaskSave
	}
	if err := save(ctx, snap); err != nil {
		return err
	}
	t.savedMoved = snap.Moved
	return nil
}

// saveTaskOrWarn saves the task and logs a failure: the task goes on, and
// a later save may yet store it.
func (e *Engine) saveTaskOrWarn(ctx context.Context, t *moveTask) {
	if err := e.saveTask(ctx, t); err != nil {
		e.log.Warn("move task save failed", "source", t.SourceARN, "err", err)
	}
}

// moveTasks is the engine's registry of tasks, newest first per source.
type moveTasks struct {
	mu       sync.Mutex
	bySource map[string][]*moveTask
	byID     map[string]*moveTask
	wg       sync.WaitGroup
}

type taskHandle struct {
	TaskID    string `json:"taskId"`
	SourceArn string `json:"sourceArn"`
}

// StartMessageMoveTaskParams are the arguments of StartMessageMoveTask.
type StartMessageMoveTaskParams struct {
	// Region and Account are the caller's: a queue of another region or
	// account does not exist for it. An empty Region is the default one.
	Region         string
	Account        string
	SourceARN      string
	DestinationARN string
	MaxPerSecond   *int
}

// StartMessageMoveTask starts moving the messages of a dead-letter queue to
// a destination queue, or each back to the queue it was dead-lettered from.
// One task may run per source queue.
func (e *Engine) StartMessageMoveTask(ctx context.Context, p StartMessageMoveTaskParams) (string, error) {
	src, dest, err := e.moveTaskEnds(ctx, p)
	if err != nil {
		return "", err
	}
	rate, err := moveRate(p.MaxPerSecond)
	if err != nil {
		return "", err
	}
	t, err := e.newMoveTask(ctx, p, src, rate)
	if err != nil {
		return "", err
	}
	if e.locker != nil {
		return e.startSharedMoveTask(ctx, t, src, dest)
	}
	return e.startLocalMoveTask(ctx, t, src, dest)
}

// moveTaskEnds returns a new task's source queue, which must be some
// queue's dead-letter queue, and its destination: nil to move each message
// back to its own source, else a queue other than the source and of its
// type.
func (e *Engine) moveTaskEnds(ctx context.Context, p StartMessageMoveTaskParams) (src, dest *baton.Queue, err error) {
	if p.SourceARN == "" {
		return nil, nil, baton.MissingParameter("SourceArn")
	}
	src, err = e.queueByARN(ctx, p.Region, p.Account, p.SourceARN, "SourceArn")
	if err != nil {
		return nil, nil, err
	}
	sources, err := e.sourcesOf(ctx, src)
	if err != nil {
		return nil, nil, err
	}
	if len(sources) == 0 {
		return nil, nil, baton.Errorf(baton.ErrInvalidParameterValue, "Source queue must be configured as a Dead Letter Queue.")
	}
	if p.DestinationARN == "" {
		return src, nil, nil
	}
	if dest, err = e.queueByARN(ctx, p.Region, p.Account, p.DestinationARN, "DestinationArn"); err != nil {
		return nil, nil, err
	}
	if dest.ID == src.ID {
		return nil, nil, baton.Errorf(baton.ErrInvalidParameterValue, "Source queue and destination queue must differ.")
	}
	// SQS Developer Guide, dead-letter queue redrive: the destination
	// must be of the dead-letter queue's type (its error's wording is
	// not published; docs/sqs-behaviour.md §2).
	if dest.IsFIFO() != src.IsFIFO() {
		return nil, nil, baton.Errorf(baton.ErrInvalidParameterValue,
			"Destination queue must be the same type of queue as the source queue.")
	}
	return src, dest, nil
}

// moveRate returns a task's MaxNumberOfMessagesPerSecond: 0 (no limit) if
// not given, an error if out of range.
func moveRate(maxPerSecond *int) (int, error) {
	if maxPerSecond == nil {
		return 0, nil
	}
	if *maxPerSecond < 1 || *maxPerSecond > maxMoveRate {
		return 0, baton.InvalidParameter("MaxNumberOfMessagesPerSecond", strconv.Itoa(*maxPerSecond),
			"MaxNumberOfMessagesPerSecond must be between 1 and 500.")
	}
	return *maxPerSecond, nil
}

// newMoveTask makes a running task of a new handle, to move the messages
// visible in src now.
func (e *Engine) newMoveTask(ctx context.Context, p StartMessageMoveTaskParams, src *baton.Queue, rate int) (*moveTask, error) {
	now := e.clock.Now()
	st, err := e.store.MessageStats(ctx, baton.MessageStatsParams{QueueID: src.ID, Now: now})
	if err != nil {
		return nil, storeErr(err, "message stats")
	}
	h, _ := json.Marshal(taskHandle{TaskID: ids.NewUUID(), SourceArn: p.SourceARN})
	return &moveTask{
		MoveTask: MoveTask{
			Handle: base64.StdEncoding.EncodeToString(h), SourceARN: p.SourceARN, DestinationARN: p.DestinationARN,
			MaxPerSecond: rate, Status: TaskRunning, ToMove: int64(st.Visible), StartedAt: now,
		},
		cancel: make(chan struct{}),
	}, nil
}

// startLocalMoveTask enters a new task in the registry, saves it (and
// forgets it again if the save fails) and runs it, on a store no other
// server shares.
func (e *Engine) startLocalMoveTask(ctx context.Context, t *moveTask, src, dest *baton.Queue) (string, error) {
	tasks := &e.tasks
	if !tasks.add(t) {
		return "", errTaskRunning()
	}
	if err := e.saveTask(ctx, t); err != nil {
		tasks.remove(t)
		return "", fmt.Errorf("save move task: %w", err)
	}
	tasks.mu.Lock()
	tasks.bySource[t.SourceARN] = tasks.trim(tasks.bySource[t.SourceARN])
	tasks.mu.Unlock()
	e.goRunMoveTask(t, src, dest)
	return t.Handle, nil
}

// goRunMoveTask runs a registered task in a goroutine of its own, which
// Close waits for.
func (e *Engine) goRunMoveTask(t *moveTask, src, dest *baton.Queue) {
	e.tasks.wg.Add(1)
	go func() {
		defer e.tasks.wg.Done()
		e.runMoveTask(t, src, dest)
	}()
}

// add enters t as its source's newest task, unless the source's newest
// task has not finished: then it reports false and enters nothing.
func (tasks *moveTasks) add(t *moveTask) bool {
	tasks.mu.Lock()
	defer tasks.mu.Unlock()
	if tasks.byID == nil {
		tasks.byID = make(map[string]*moveTask)
		tasks.bySource = make(map[string][]*moveTask)
	}
	if list := tasks.bySource[t.SourceARN]; len(list) > 0 && !list[0].Finished() {
		return false
	}
	tasks.byID[t.Handle] = t
	tasks.bySource[t.SourceARN] = append([]*moveTask{t}, tasks.bySource[t.SourceARN]...)
	return true
}

// remove forgets a task add entered.
func (tasks *moveTasks) remove(t *moveTask) {
	tasks.mu.Lock()
	defer tasks.mu.Unlock()
	delete(tasks.byID, t.Handle)
	list := tasks.bySource[t.SourceARN]
	if i := slices.Index(list, t); i >= 0 {
		tasks.bySource[t.SourceARN] = slices.Delete(list, i, i+1)
	}
}

func errTaskRunning() error {
	return baton.Errorf(baton.ErrInvalidParameterValue,
		"There is already a task running. Only one active task is allowed for a source queue arn at a given time.")
}

func errNoSuchTask() error {
	return baton.Errorf(baton.ErrResourceNotFound, "Task does not exist.")
}

// queueByARN returns the queue an ARN names, if it is one of the caller's
// region and account: SQS answers a request in one region, for that
// region's queues.
func (e *Engine) queueByARN(ctx context.Context, region, account, arn, param string) (*baton.Queue, error) {
	notFound := baton.Errorf(baton.ErrResourceNotFound,
		"The resource that you specified for the %s parameter doesn't exist.", param)
	a, ok := parseARN(arn)
	if !ok || a.account != account || a.region != e.regionOr(region) {
		return nil, notFound
	}
	q, err := e.store.QueueGet(ctx, a.region, a.account, a.name)
	if errors.Is(err, baton.ErrNotFound) {
		return nil, notFound
	}
	if err != nil {
		return nil, fmt.Errorf("get queue: %w", err)
	}
	return q, nil
}

// CancelMessageMoveTask stops a running task of the account in the region
// (empty: the default region); messages already moved stay moved. It
// returns how many were moved. A task of another account or region does not
// exist for the caller (ResourceNotFound). On a
// store several servers share, a task running on another server is marked
// CANCELLING in the store, and its server ends it CANCELLED within a second
// or so.
func (e *Engine) CancelMessageMoveTask(ctx context.Context, region, account, handle string) (int64, error) {
	if handle == "" {
		return 0, baton.MissingParameter("TaskHandle")
	}
	var h taskHandle
	b, err := base64.StdEncoding.DecodeString(handle)
	if err != nil || json.Unmarshal(b, &h) != nil || h.TaskID == "" || h.SourceArn == "" {
		return 0, baton.Errorf(baton.ErrInvalidParameterValue, "Value for parameter TaskHandle is invalid.")
	}
	if a, ok := parseARN(h.SourceArn); !ok || a.account != account || a.region != e.regionOr(region) {
		return 0, errNoSuchTask()
	}
	tasks := &e.tasks
	tasks.mu.Lock()
	t, ok := tasks.byID[handle]
	if !ok && e.locker != nil {
		tasks.mu.Unlock()
		return e.cancelSharedMoveTask(ctx, handle)
	}
	if !ok || t.Status != TaskRunning {
		tasks.mu.Unlock()
		return 0, errNoSuchTask()
	}
	t.Status = TaskCancelling
	close(t.cancel)
	moved := t.Moved
	tasks.mu.Unlock()
	// The task is cancelling whether or not this save succeeds; its runner
	// saves it again when it stops.
	e.saveTaskOrWarn(ctx, t)
	return moved, nil
}

// ListMessageMoveTasks returns up to maxResults (default 1, at most 10) of
// the source's most recent tasks, newest first.
func (e *Engine) ListMessageMoveTasks(ctx context.Context, region, account, sourceARN string, maxResults *int) ([]MoveTask, error) {
	if sourceARN == "" {
		return nil, baton.MissingParameter("SourceArn")
	}
	limit := 1
	if maxResults != nil {
		if *maxResults < 1 || *maxResults > baton.MaxMoveTasksKept {
			return nil, baton.InvalidParameter("MaxResults", strconv.Itoa(*maxResults), "MaxResults must be between 1 and 10.")
		}
		limit = *maxResults
	}
	if _, err := e.queueByARN(ctx, region, account, sourceARN, "SourceArn"); err != nil {
		return nil, err
	}
	if e.locker != nil {
		return e.listSharedMoveTasks(ctx, sourceARN, limit)
	}
	tasks := &e.tasks
	tasks.mu.Lock()
	defer tasks.mu.Unlock()
	var out []MoveTask
	for _, t := range tasks.bySource[sourceARN] {
		if len(out) == limit {
			break
		}
		out = append(out, t.MoveTask)
	}
	return out, nil
}

// runMoveTask moves up to the task's rate each second until the source has
// no visible messages, the task has moved what it set out to, or it is
// cancelled or fails.
func (e *Engine) runMoveTask(t *moveTask, src, dest *baton.Queue) {
	ctx := context.Background()
	rate := t.MaxPerSecond
	if rate == 0 {
		rate = defaultMoveRate
	}
	targets := map[string]*baton.Queue{}
	for {
		done, failure := e.moveBatch(ctx, t, src, dest, rate, targets)
		if failure == internalFailure && t.lock != nil {
			// Likely the store's trouble, not the task's: let go, and let
			// whichever server next takes the lock try again.
			e.log.Warn("move task stopped by a store failure; it will be resumed", "source", t.SourceARN)
			e.dropMoveTask(t)
			return
		}
		finished, moved := e.settleMoveRound(t, done, failure)
		if !e.saveMoveRound(ctx, t, finished, moved) || !e.awaitMoveRound(ctx, t) {
			return
		}
	}
}

// settleMoveRound sets the task's status after a round that found nothing
// left (done) or failed (failure), and returns whether the task is finished
// and how many it has moved.
func (e *Engine) settleMoveRound(t *moveTask, done bool, failure string) (finished bool, moved int64) {
	e.tasks.mu.Lock()
	defer e.tasks.mu.Unlock()
	switch {
	case failure != "":
		t.Status, t.FailureReason = TaskFailed, failure
	case t.Status == TaskCancelling:
		t.Status = TaskCancelled
	case done:
		t.Status = TaskCompleted
	}
	return t.Status != TaskRunning, t.Moved
}

// saveMoveRound saves the task after a round, and says whether it goes on.
func (e *Engine) saveMoveRound(ctx context.Context, t *moveTask, finished bool, moved int64) bool {
	if t.lock != nil {
		// Saved every round: the save through the lock is also the
		// check that this server still holds the task.
		if err := e.saveTask(ctx, t); err != nil {
			e.log.Warn("move task lost its lock; another server may take it over", "source", t.SourceARN, "err", err)
			e.dropMoveTask(t)
			return false
		}
		if finished {
			e.dropMoveTask(t)
		}
		return !finished
	}
	// t.saveMu guards savedMoved; only this goroutine and Cancel save.
	t.saveMu.Lock()
	changed := finished || moved != t.savedMoved
	t.saveMu.Unlock()
	if changed {
		e.saveTaskOrWarn(ctx, t)
	}
	return !finished
}

// awaitMoveRound waits a second, or less if the task is cancelled, and says
// whether the task goes on: a server shutting down ends it, left running in
// the store for another server when shared, else failed.
func (e *Engine) awaitMoveRound(ctx context.Context, t *moveTask) bool {
	timer := e.clock.NewTimer(time.Second)
	defer timer.Stop()
	select {
	case <-timer.C():
	case <-t.cancel:
	case <-e.closing:
		if t.lock != nil {
			// Left RUNNING in the store, for another server.
			e.dropMoveTask(t)
			return false
		}
		e.tasks.mu.Lock()
		t.Status, t.FailureReason = TaskFailed, "The server shut down before the task finished."
		e.tasks.mu.Unlock()
		e.saveTaskOrWarn(ctx, t)
		return false
	}
	return true
}

// moveBatch moves up to rate messages. done reports that nothing is left to
// move; failure is the reason the task cannot go on.
func (e *Engine) moveBatch(ctx context.Context, t *moveTask, src, dest *baton.Queue, rate int, targets map[string]*baton.Queue) (done bool, failure string) {
	for moved := 0; moved < rate; {
		select {
		case <-t.cancel:
			return false, ""
		default:
		}
		now := e.clock.Now()
		msgs, err := e.lease(ctx, baton.MessageReceiveParams{
			QueueID: src.ID, Now: now, Max: min(baton.MaxBatchEntries, rate-moved),
			VisibleAt:       now.Add(moveLease),
			RetentionCutoff: now.Add(-time.Duration(src.Attributes.MessageRetentionPeriod) * time.Second),
		})
		if errors.Is(err, baton.ErrNotFound) {
			return false, "AWS.SimpleQueueService.NonExistentQueue"
		}
		if err != nil {
			e.log.Warn("move task receive failed", "source", t.SourceARN, "err", err)
			return false, internalFailure
		}
		if len(msgs) == 0 {
			return true, ""
		}
		for i, m := range msgs {
			to, failure := e.moveTarget(ctx, m, src, dest, targets)
			if failure != "" {
				e.releaseUnmoved(ctx, src, msgs[i:], now)
				return false, failure
			}
			out, err := e.store.MessageMove(ctx, baton.MessageMoveParams{
				QueueID: src.ID, MessageID: m.ID, Epoch: m.Epoch, ToQueueID: to.ID, Now: now, MoveTask: t.Handle,
				// A redriven message is a new one to SQS: its retention
				// period starts again.
				ResetSentAt: true,
			})
			if errors.Is(err, baton.ErrNotFound) {
				return false, "AWS.SimpleQueueService.NonExistentQueue"
			}
			if err != nil {
				e.log.Warn("move task move failed", "source", t.SourceARN, "err", err)
				e.releaseUnmoved(ctx, src, msgs[i:], now)
				return false, internalFailure
			}
			if out.Result == baton.LeaseCurrent {
				e.notify(to.ID)
				moved++
				e.tasks.mu.Lock()
				t.Moved++
				reached := t.Moved >= t.ToMove
				e.tasks.mu.Unlock()
				if reached {
					e.releaseUnmoved(ctx, src, msgs[i+1:], now)
					return true, ""
				}
			}
		}
	}
	return false, ""
}

// moveTarget is where a task sends m: the task's destination, or the queue
// m was dead-lettered from.
func (e *Engine) moveTarget(ctx context.Context, m *baton.Message, src, dest *baton.Queue, cache map[string]*baton.Queue) (*baton.Queue, string) {
	if dest != nil {
		return dest, ""
	}
	if q, ok := cache[m.DeadLetterSourceARN]; ok {
		return q, ""
	}
	a, ok := parseARN(m.DeadLetterSourceARN)
	if !ok {
		return nil, "AWS.SimpleQueueService.NonExistentQueue"
	}
	q, err := e.store.QueueGet(ctx, a.region, a.account, a.name)
	if err != nil && !errors.Is(err, baton.ErrNotFound) {
		e.log.Warn("move task queue lookup failed", "source", src.Name, "err", err)
		return nil, internalFailure
	}
	if err != nil || q.ID == src.ID {
		return nil, "AWS.SimpleQueueService.NonExistentQueue"
	}
	cache[m.DeadLetterSourceARN] = q
	return q, ""
}

// releaseUnmoved gives back the messages of a batch the task leased and
// will not move (it failed, or reached its count), so that they are not
// hidden for the rest of the move lease.
func (e *Engine) releaseUnmoved(ctx context.Context, src *baton.Queue, msgs []*baton.Message, now time.Time) {
	if len(msgs) == 0 {
		return
	}
	entries := make([]baton.VisibilityChange, len(msgs))
	for i, m := range msgs {
		entries[i] = baton.VisibilityChange{MessageID: m.ID, Epoch: m.Epoch, VisibleAt: now}
	}
	if _, err := e.store.MessageChangeVisibilityBatch(ctx, baton.MessageChangeVisibilityBatchParams{
		QueueID: src.ID, Now: now, Entries: entries,
	}); err != nil {
		e.log.Warn("move task could not give back unmoved messages", "queue", src.Name, "err", err)
		return
	}
	e.notify(src.ID)
}
