package memstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/baton-sqs/baton"
)

// A Cluster is one in-memory state that several handles share, as several
// servers share one PostgreSQL database: each handle (Open) is a
// baton.SharedStore, and what one handle does the others see at once. It
// keeps in process what the PostgreSQL store keeps in the database: the
// wake-ups of the other handles' long polls, task locks (held until
// released or until their handle closes, as a session's advisory locks
// die with it), receive attempts and the lease-ledger relay. It serves
// tests of several engines acting as one queue without a database, and
// store/storetest.RunShared holds it to the PostgreSQL store's behaviour.
//
// Unlike the database's NOTIFY, wake-ups and ledger batches are delivered
// before the call that made them returns, on its goroutine, and are never
// lost; a write made on a handle's embedded Store directly wakes nobody,
// as if the link to the other servers were down.
//
// Lock order: Cluster.mu before a Store's locks; no subscriber runs under
// Cluster.mu.
type Cluster struct {
	store *Store

	mu       sync.Mutex
	handles  []*Shared // open, in the order opened
	locks    map[string]*clusterLock
	turns    groupTurns
	attempts baton.AttemptLog
}

// NewCluster returns an empty shared state with no handle open.
func NewCluster() *Cluster {
	return &Cluster{store: New(), locks: make(map[string]*clusterLock)}
}

// Open returns a new handle on the cluster's state: one more server.
func (c *Cluster) Open() *Shared {
	h := &Shared{Store: c.store, c: c}
	c.mu.Lock()
	c.handles = append(c.handles, h)
	c.mu.Unlock()
	return h
}

// Shared is a handle on a Cluster. Its embedded Store is the state every
// handle shares.
type Shared struct {
	*Store
	c *Cluster

	// Guarded by c.mu.
	subs       []func(queueID uint64)
	ledgerSubs []func(batch []byte, gap baton.LedgerGap)
	closed     bool
}

var _ baton.SharedStore = (*Shared)(nil)

var errClosed = errors.New("memstore: handle closed")

// Close closes the handle, as its server dies: its locks are free for the
// other handles at once and it hears nothing more. The shared state stays.
// Closing twice is fine.
func (h *Shared) Close() error {
	c := h.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if h.closed {
		return nil
	}
	h.closed = true
	h.subs, h.ledgerSubs = nil, nil
	c.handles = slices.DeleteFunc(c.handles, func(o *Shared) bool { return o == h })
	for key, l := range c.locks {
		if l.h == h {
			delete(c.locks, key)
		}
	}
	c.turns.drop(h)
	return nil
}

// Ping fails once the handle is closed.
func (h *Shared) Ping(context.Context) error {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	if h.closed {
		return errClosed
	}
	return nil
}

// Subscribe registers f for the queues into which another handle made
// messages receivable: a send, a release, a move, the delete of a FIFO
// group's live head.
func (h *Shared) Subscribe(f func(queueID uint64)) {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	if !h.closed {
		h.subs = append(h.subs, f)
	}
}

// wake tells the other open handles' subscribers of queueID.
func (h *Shared) wake(queueID uint64) {
	c := h.c
	c.mu.Lock()
	var fs []func(uint64)
	for _, o := range c.handles {
		if o != h {
			fs = append(fs, o.subs...)
		}
	}
	c.mu.Unlock()
	for _, f := range fs {
		f(queueID)
	}
}

// MessageSend sends as Store.MessageSend does and wakes the other handles
// if it stored a message.
func (h *Shared) MessageSend(ctx context.Context, p baton.MessageSendParams) ([]baton.MessageSent, error) {
	out, err := h.Store.MessageSend(ctx, p)
	if err == nil && slices.ContainsFunc(out, func(m baton.MessageSent) bool { return !m.Duplicate }) {
		h.wake(p.QueueID)
	}
	return out, err
}

// MessageDelete deletes as Store.MessageDelete does; deleting a live
// lease of a FIFO queue (p.RequireLive) unblocks its group, and wakes the
// other handles.
func (h *Shared) MessageDelete(ctx context.Context, p baton.MessageDeleteParams) (baton.LeaseOutcome, error) {
	out, err := h.Store.MessageDelete(ctx, p)
	if err == nil && p.RequireLive && out.Result == baton.LeaseCurrent {
		h.wake(p.QueueID)
	}
	return out, err
}

// MessageDeleteBatch deletes as Store.MessageDeleteBatch does, and wakes
// as MessageDelete.
func (h *Shared) MessageDeleteBatch(ctx context.Context, p baton.MessageDeleteBatchParams) ([]baton.LeaseOutcome, error) {
	outs, err := h.Store.MessageDeleteBatch(ctx, p)
	if err == nil && p.RequireLive && slices.ContainsFunc(outs, func(o baton.LeaseOutcome) bool { return o.Result == baton.LeaseCurrent }) {
		h.wake(p.QueueID)
	}
	return outs, err
}

// MessageChangeVisibility changes as Store.MessageChangeVisibility does; a
// release (VisibleAt not after Now) wakes the other handles.
func (h *Shared) MessageChangeVisibility(ctx context.Context, p baton.MessageChangeVisibilityParams) (baton.LeaseOutcome, error) {
	out, err := h.Store.MessageChangeVisibility(ctx, p)
	if err == nil && out.Result.Changed() && !p.VisibleAt.After(p.Now) {
		h.wake(p.QueueID)
	}
	return out, err
}

// MessageChangeVisibilityBatch changes as Store.MessageChangeVisibilityBatch
// does, and wakes as MessageChangeVisibility.
func (h *Shared) MessageChangeVisibilityBatch(ctx context.Context, p baton.MessageChangeVisibilityBatchParams) ([]baton.LeaseOutcome, error) {
	outs, err := h.Store.MessageChangeVisibilityBatch(ctx, p)
	if err != nil {
		return outs, err
	}
	for i, o := range outs {
		if o.Result.Changed() && !p.Entries[i].VisibleAt.After(p.Now) {
			h.wake(p.QueueID)
			break
		}
	}
	return outs, nil
}

// MessageMove moves as Store.MessageMove does, counts the move in the
// task p.MoveTask, if any, and wakes the other handles on the destination.
func (h *Shared) MessageMove(ctx context.Context, p baton.MessageMoveParams) (baton.LeaseOutcome, error) {
	out, err := h.Store.MessageMove(ctx, p)
	if err != nil || out.Result != baton.LeaseCurrent {
		return out, err
	}
	if p.MoveTask != "" {
		s := h.Store
		s.tasksMu.Lock()
		if t, ok := s.tasks[p.MoveTask]; ok {
			t.Moved++
			s.tasks[p.MoveTask] = t
		}
		s.tasksMu.Unlock()
	}
	h.wake(p.ToQueueID)
	return out, nil
}

// MoveTaskSave saves as the servers sharing a store agree
// (baton.TaskLocker): one active task per source, a finished task never
// replaced, a CANCELLING one never turned back to RUNNING, Moved never
// lowered.
func (h *Shared) MoveTaskSave(_ context.Context, t baton.MoveTask) error {
	s := h.Store
	s.tasksMu.Lock()
	defer s.tasksMu.Unlock()
	old, ok := s.tasks[t.Handle]
	keep := ok && (old.Finished() || old.Status == "CANCELLING" && t.Status == "RUNNING")
	if !keep {
		if !t.Finished() {
			for _, o := range s.tasks {
				if o.Handle != t.Handle && o.SourceARN == t.SourceARN && !o.Finished() {
					return baton.ErrExists
				}
			}
		}
		if ok {
			t.Moved = max(t.Moved, old.Moved)
		}
		s.tasks[t.Handle] = t
	}
	s.pruneTasks(t.SourceARN)
	return nil
}

// TaskLock takes the lock named key if no handle holds it.
func (h *Shared) TaskLock(_ context.Context, key string) (baton.TaskLock, error) {
	c := h.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if h.closed {
		return nil, fmt.Errorf("memstore: task lock: %w", errClosed)
	}
	if _, held := c.locks[key]; held {
		return nil, nil
	}
	l := &clusterLock{h: h, key: key}
	c.locks[key] = l
	return l, nil
}

// clusterLock is a held task lock.
type clusterLock struct {
	h   *Shared
	key string
}

// held reports whether l is still the lock of its key.
func (l *clusterLock) held() bool {
	c := l.h.c
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.locks[l.key] == l
}

// MoveTaskSave saves through the lock, failing once it is released or its
// handle closed.
func (l *clusterLock) MoveTaskSave(ctx context.Context, t baton.MoveTask) error {
	if !l.held() {
		return errors.New("memstore: save move task: lock released")
	}
	return l.h.MoveTaskSave(ctx, t)
}

// Release frees the lock; safe more than once.
func (l *clusterLock) Release() {
	c := l.h.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.locks[l.key] == l {
		delete(c.locks, l.key)
	}
}

// AttemptPut records a receive attempt for every handle (baton.AttemptLog
// keeps them).
func (h *Shared) AttemptPut(ctx context.Context, p baton.Attempt) error {
	return h.c.attempts.AttemptPut(ctx, p)
}

// AttemptGet returns the attempt of queueID named id leased at or after
// since, whichever handle recorded it.
func (h *Shared) AttemptGet(ctx context.Context, queueID uint64, id string, since time.Time) (baton.Attempt, bool, error) {
	return h.c.attempts.AttemptGet(ctx, queueID, id, since)
}

// PublishLedger hands each batch, in order, to every open handle's ledger
// subscribers, this one's included, before it returns. It refuses a batch
// over baton.MaxLedgerBatch.
func (h *Shared) PublishLedger(_ context.Context, batches [][]byte) error {
	for _, b := range batches {
		if len(b) > baton.MaxLedgerBatch {
			return fmt.Errorf("memstore: lease-ledger batch of %d bytes is over %d", len(b), baton.MaxLedgerBatch)
		}
	}
	c := h.c
	c.mu.Lock()
	if h.closed {
		c.mu.Unlock()
		return fmt.Errorf("memstore: publish: %w", errClosed)
	}
	var fs []func([]byte, baton.LedgerGap)
	for _, o := range c.handles {
		fs = append(fs, o.ledgerSubs...)
	}
	c.mu.Unlock()
	for _, b := range batches {
		for _, f := range fs {
			f(b, baton.LedgerNoGap)
		}
	}
	return nil
}

// SubscribeLedger registers f for every batch published on the cluster.
func (h *Shared) SubscribeLedger(f func(batch []byte, gap baton.LedgerGap)) {
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	if !h.closed {
		h.ledgerSubs = append(h.ledgerSubs, f)
	}
}
