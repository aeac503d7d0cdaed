package memstore

import (
	"container/heap"
	"container/list"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/baton-sqs/baton"
)

// Store is an in-memory baton.Store, safe for concurrent use.
//
// Lock order: Store.mu before queueState.mu.
type Store struct {
	mu      sync.RWMutex
	queues  map[queueKey]*queueState
	byID    map[uint64]*queueState
	deleted map[queueKey]time.Time

	// tasks are the move tasks by Handle; guarded by tasksMu.
	tasksMu sync.Mutex
	tasks   map[string]baton.MoveTask

	expiredFunc func(queueID uint64, messageID string)
}

type queueKey struct{ account, name string }

// New returns an empty store.
func New() *Store { return NewWithOptions(Options{}) }

// Options configure a Store for use as the index of a durable store.
type Options struct {
	// ExpiredFunc, if set, is called for every message that MessageReceive
	// or MessageExpire drops as past retention, while the queue's lock is
	// held: a durable store built on this one learns of the drops in order
	// with its own changes. It must not call back into the Store.
	ExpiredFunc func(queueID uint64, messageID string)
}

// NewWithOptions returns an empty store configured by o.
func NewWithOptions(o Options) *Store {
	return &Store{
		queues:      make(map[queueKey]*queueState),
		byID:        make(map[uint64]*queueState),
		deleted:     make(map[queueKey]time.Time),
		tasks:       make(map[string]baton.MoveTask),
		expiredFunc: o.ExpiredFunc,
	}
}

var _ baton.Store = (*Store)(nil)

// queueState is one queue with its messages. Visible messages wait in ready,
// in the order they became visible; hidden ones (delayed or in flight) wait
// in hidden, a heap ordered by VisibleAt.
type queueState struct {
	mu     sync.Mutex
	q      baton.Queue
	msgs   map[string]*entry
	ready  *list.List
	hidden hiddenHeap
	// leasedHidden counts the hidden messages that are in flight; the rest
	// are delayed.
	leasedHidden int

	// groups holds every message in send order per GroupID ("" for
	// messages without one); order lists the groups for round-robin
	// receives, next is where the next receive starts.
	groups map[string]*list.List
	order  []string
	next   int

	fifo  bool
	seq   uint64
	dedup map[string]dedupEntry

	expiredFunc func(queueID uint64, messageID string)
}

type dedupEntry struct {
	messageID string
	seq       string
	at        time.Time
}

type entry struct {
	m       baton.Message
	elem    *list.Element // in ready, or nil
	heapIdx int           // in hidden, or -1
	gelem   *list.Element // in its group's list
}

func (s *Store) newQueueState(q *baton.Queue) *queueState {
	return &queueState{
		q: cloneQueue(q), msgs: make(map[string]*entry), ready: list.New(),
		groups: make(map[string]*list.List), fifo: q.IsFIFO(), dedup: make(map[string]dedupEntry),
		expiredFunc: s.expiredFunc,
	}
}

// add stores a new entry: in its group and hidden until promoted.
func (qs *queueState) add(e *entry) {
	qs.msgs[e.m.ID] = e
	g, ok := qs.groups[e.m.GroupID]
	if !ok {
		g = list.New()
		qs.groups[e.m.GroupID] = g
		qs.order = append(qs.order, e.m.GroupID)
	}
	e.gelem = g.PushBack(e)
	qs.hide(e)
}

func (s *Store) QueueCreate(_ context.Context, p baton.QueueCreateParams) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := queueKey{p.Queue.Account, p.Queue.Name}
	if _, ok := s.queues[k]; ok {
		return baton.ErrExists
	}
	if at, ok := s.deleted[k]; ok && at.After(p.DeletedCutoff) {
		return baton.ErrDeletedRecently
	}
	qs := s.newQueueState(p.Queue)
	s.queues[k] = qs
	s.byID[p.Queue.ID] = qs
	return nil
}

func (s *Store) QueueGet(_ context.Context, account, name string) (*baton.Queue, error) {
	qs := s.lookup(account, name)
	if qs == nil {
		return nil, baton.ErrNotFound
	}
	qs.mu.Lock()
	defer qs.mu.Unlock()
	q := cloneQueue(&qs.q)
	return &q, nil
}

func (s *Store) lookup(account, name string) *queueState {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.queues[queueKey{account, name}]
}

func (s *Store) lookupID(id uint64) *queueState {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.byID[id]
}

func (s *Store) QueueList(_ context.Context, p baton.QueueListParams) ([]*baton.Queue, error) {
	s.mu.RLock()
	var states []*queueState
	for k, qs := range s.queues {
		if (p.Account == "" || k.account == p.Account) && strings.HasPrefix(k.name, p.Prefix) && (p.After == "" || k.name > p.After) {
			states = append(states, qs)
		}
	}
	s.mu.RUnlock()
	sort.Slice(states, func(i, j int) bool {
		a, b := &states[i].q, &states[j].q
		return a.Name < b.Name || a.Name == b.Name && a.Account < b.Account
	})
	if p.Limit > 0 && len(states) > p.Limit {
		states = states[:p.Limit]
	}
	out := make([]*baton.Queue, len(states))
	for i, qs := range states {
		qs.mu.Lock()
		q := cloneQueue(&qs.q)
		qs.mu.Unlock()
		out[i] = &q
	}
	return out, nil
}

func (s *Store) QueueUpdate(_ context.Context, p baton.QueueUpdateParams) (*baton.Queue, error) {
	qs := s.lookup(p.Account, p.Name)
	if qs == nil {
		return nil, baton.ErrNotFound
	}
	qs.mu.Lock()
	defer qs.mu.Unlock()
	if p.Attributes != nil {
		qs.q.Attributes = *p.Attributes
	}
	if len(p.TagsSet) > 0 || len(p.TagsDelete) > 0 {
		tags := make(map[string]string, len(qs.q.Tags)+len(p.TagsSet))
		for k, v := range qs.q.Tags {
			tags[k] = v
		}
		for k, v := range p.TagsSet {
			tags[k] = v
		}
		for _, k := range p.TagsDelete {
			delete(tags, k)
		}
		qs.q.Tags = tags
	}
	if !p.ModifiedAt.IsZero() {
		qs.q.ModifiedAt = p.ModifiedAt
	}
	q := cloneQueue(&qs.q)
	return &q, nil
}

func (s *Store) QueueDelete(_ context.Context, account, name string, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := queueKey{account, name}
	qs, ok := s.queues[k]
	if !ok {
		return baton.ErrNotFound
	}
	delete(s.queues, k)
	delete(s.byID, qs.q.ID)
	s.deleted[k] = now
	return nil
}

func (s *Store) QueuePurge(_ context.Context, p baton.QueuePurgeParams) error {
	qs := s.lookup(p.Account, p.Name)
	if qs == nil {
		return baton.ErrNotFound
	}
	qs.mu.Lock()
	defer qs.mu.Unlock()
	if qs.q.PurgedAt.After(p.PurgedCutoff) {
		return baton.ErrPurgedRecently
	}
	fresh := s.newQueueState(&qs.q)
	fresh.q.PurgedAt = p.Now
	fresh.seq = qs.seq
	qs.q, qs.msgs, qs.ready, qs.hidden, qs.leasedHidden = fresh.q, fresh.msgs, fresh.ready, nil, 0
	qs.groups, qs.order, qs.next, qs.dedup = fresh.groups, nil, 0, fresh.dedup
	return nil
}

func (s *Store) MessageSend(_ context.Context, p baton.MessageSendParams) ([]baton.MessageSent, error) {
	qs := s.lookupID(p.QueueID)
	if qs == nil {
		return nil, baton.ErrNotFound
	}
	qs.mu.Lock()
	defer qs.mu.Unlock()
	out := make([]baton.MessageSent, len(p.Messages))
	for i, m := range p.Messages {
		e := &entry{m: cloneMessage(m), heapIdx: -1}
		if qs.fifo {
			key := p.DedupKeys[i]
			if d, ok := qs.dedup[key]; ok && d.at.After(p.DedupCutoff) {
				out[i] = baton.MessageSent{MessageID: d.messageID, SequenceNumber: d.seq, Duplicate: true}
				continue
			}
			qs.seq++
			e.m.SequenceNumber = formatSeq(qs.seq)
			qs.dedup[key] = dedupEntry{messageID: e.m.ID, seq: e.m.SequenceNumber, at: e.m.SentAt}
		}
		qs.add(e)
		out[i] = baton.MessageSent{MessageID: e.m.ID, SequenceNumber: e.m.SequenceNumber}
	}
	qs.forgetDedup(p.DedupCutoff)
	return out, nil
}

// forgetDedup drops deduplication entries past the window, a few at a time
// so no send pays for all of them.
func (qs *queueState) forgetDedup(cutoff time.Time) {
	n := 0
	for k, d := range qs.dedup {
		if n++; n > 16 {
			return
		}
		if !d.at.After(cutoff) {
			delete(qs.dedup, k)
		}
	}
}

// formatSeq renders a sequence number as SQS does: a large decimal that
// grows with every message (fixed width keeps text order numeric).
func formatSeq(n uint64) string { return fmt.Sprintf("%020d", seqBase+n) }

// seqBase makes sequence numbers look like SQS's 20-digit ones.
const seqBase = 10000000000000000000

// hide puts e in the hidden heap; messages due now are moved to ready by
// promote on the next read.
func (qs *queueState) hide(e *entry) {
	heap.Push(&qs.hidden, e)
	if e.m.Leased {
		qs.leasedHidden++
	}
}

func (qs *queueState) unhide(e *entry) {
	heap.Remove(&qs.hidden, e.heapIdx)
	if e.m.Leased {
		qs.leasedHidden--
	}
}

// promote moves the hidden messages that are visible at now to ready.
func (qs *queueState) promote(now time.Time) {
	for len(qs.hidden) > 0 && !qs.hidden[0].m.VisibleAt.After(now) {
		e := qs.hidden[0]
		qs.unhide(e)
		e.elem = qs.ready.PushBack(e)
	}
}

func (qs *queueState) remove(e *entry) {
	if e.elem != nil {
		qs.ready.Remove(e.elem)
		e.elem = nil
	} else if e.heapIdx >= 0 {
		qs.unhide(e)
	}
	g := qs.groups[e.m.GroupID]
	g.Remove(e.gelem)
	if g.Len() == 0 {
		delete(qs.groups, e.m.GroupID)
		i := slices.Index(qs.order, e.m.GroupID)
		qs.order = slices.Delete(qs.order, i, i+1)
		if qs.next > i {
			qs.next--
		}
	}
	delete(qs.msgs, e.m.ID)
}

func (s *Store) MessageReceive(_ context.Context, p baton.MessageReceiveParams) ([]*baton.Message, error) {
	qs := s.lookupID(p.QueueID)
	if qs == nil {
		return nil, baton.ErrNotFound
	}
	qs.mu.Lock()
	defer qs.mu.Unlock()
	qs.promote(p.Now)
	var taken []*entry
	switch {
	case qs.fifo:
		taken = qs.pickFIFO(p)
	case len(qs.groups) > 1:
		taken = qs.pickFair(p)
	default:
		taken = qs.pickReady(p)
	}
	out := make([]*baton.Message, 0, len(taken))
	var stayVisible []*entry
	for _, e := range taken {
		qs.ready.Remove(e.elem)
		e.elem = nil
		m := &e.m
		m.ReceiveCount++
		m.Epoch++
		if m.FirstReceivedAt.IsZero() {
			m.FirstReceivedAt = p.Now
		}
		m.Leased = true
		m.LeasedAt = p.Now
		m.VisibleAt = p.VisibleAt
		if p.VisibleAt.After(p.Now) {
			qs.hide(e)
		} else {
			stayVisible = append(stayVisible, e)
		}
		c := cloneMessage(m)
		out = append(out, &c)
	}
	for _, e := range stayVisible {
		e.elem = qs.ready.PushBack(e)
	}
	return out, nil
}

// expired drops e if it is past retention and reports whether it did.
func (qs *queueState) expired(e *entry, p baton.MessageReceiveParams) bool {
	if e.m.SentAt.Before(p.RetentionCutoff) {
		qs.dropExpired(e)
		return true
	}
	return false
}

// dropExpired removes e as past retention and tells expiredFunc.
func (qs *queueState) dropExpired(e *entry) {
	qs.remove(e)
	if qs.expiredFunc != nil {
		qs.expiredFunc(qs.q.ID, e.m.ID)
	}
}

// pickReady takes visible messages in the order they became visible.
func (qs *queueState) pickReady(p baton.MessageReceiveParams) []*entry {
	var taken []*entry
	for el := qs.ready.Front(); el != nil && len(taken) < p.Max; {
		e := el.Value.(*entry)
		el = el.Next()
		if !qs.expired(e, p) {
			taken = append(taken, e)
		}
	}
	return taken
}

// pickFair takes one visible message from each group in turn, starting
// where the last receive stopped.
func (qs *queueState) pickFair(p baton.MessageReceiveParams) []*entry {
	var taken []*entry
	for progress := true; progress && len(taken) < p.Max; {
		progress = false
		for n := len(qs.order); n > 0 && len(taken) < p.Max; n-- {
			qs.next %= len(qs.order)
			g := qs.groups[qs.order[qs.next]]
			qs.next++
			for el := g.Front(); el != nil; {
				e := el.Value.(*entry)
				el = el.Next()
				if e.elem == nil || slices.Contains(taken, e) || qs.expired(e, p) {
					continue
				}
				taken = append(taken, e)
				progress = true
				break
			}
			if len(qs.order) == 0 {
				return taken
			}
		}
	}
	return taken
}

// pickFIFO takes, group by group, the visible messages that come before each
// group's first in-flight message, in send order. Delayed messages that were
// never received do not block their group.
func (qs *queueState) pickFIFO(p baton.MessageReceiveParams) []*entry {
	var taken []*entry
	for n := len(qs.order); n > 0 && len(taken) < p.Max && len(qs.order) > 0; n-- {
		qs.next %= len(qs.order)
		g := qs.groups[qs.order[qs.next]]
		qs.next++
		for el := g.Front(); el != nil && len(taken) < p.Max; {
			e := el.Value.(*entry)
			el = el.Next()
			if e.elem == nil {
				if e.m.Leased {
					break // in flight: the rest of the group waits
				}
				continue // delayed
			}
			if !qs.expired(e, p) {
				taken = append(taken, e)
			}
		}
	}
	return taken
}

// leaseOf finds the message and tells whether the receipt's epoch names its
// current, unexpired lease.
func (qs *queueState) leaseOf(id string, epoch uint32, now time.Time) (*entry, baton.LeaseResult) {
	e, ok := qs.msgs[id]
	if !ok {
		return nil, baton.LeaseGone
	}
	if e.m.Epoch != epoch || !e.m.Leased || !e.m.VisibleAt.After(now) {
		return e, baton.LeaseLapsed
	}
	return e, baton.LeaseCurrent
}

func (s *Store) MessageDelete(_ context.Context, p baton.MessageDeleteParams) (baton.LeaseOutcome, error) {
	qs := s.lookupID(p.QueueID)
	if qs == nil {
		return baton.LeaseOutcome{}, baton.ErrNotFound
	}
	qs.mu.Lock()
	defer qs.mu.Unlock()
	e, res := qs.leaseOf(p.MessageID, p.Epoch, p.Now)
	if e == nil {
		return baton.LeaseOutcome{Result: res}, nil
	}
	before := e.m
	if res == baton.LeaseCurrent || !p.RequireLive {
		qs.remove(e)
	}
	return baton.LeaseOutcome{Result: res, Message: &before}, nil
}

func (s *Store) MessageChangeVisibility(_ context.Context, p baton.MessageChangeVisibilityParams) (baton.LeaseOutcome, error) {
	qs := s.lookupID(p.QueueID)
	if qs == nil {
		return baton.LeaseOutcome{}, baton.ErrNotFound
	}
	qs.mu.Lock()
	defer qs.mu.Unlock()
	e, res := qs.leaseOf(p.MessageID, p.Epoch, p.Now)
	if e == nil {
		return baton.LeaseOutcome{Result: res}, nil
	}
	before := e.m
	if res == baton.LeaseCurrent {
		qs.unhide(e)
		e.m.VisibleAt = p.VisibleAt
		if p.VisibleAt.After(p.Now) {
			qs.hide(e)
		} else {
			e.elem = qs.ready.PushBack(e)
		}
	}
	return baton.LeaseOutcome{Result: res, Message: &before}, nil
}

func (s *Store) MessageMove(_ context.Context, p baton.MessageMoveParams) (baton.LeaseOutcome, error) {
	s.mu.RLock()
	from, to := s.byID[p.QueueID], s.byID[p.ToQueueID]
	s.mu.RUnlock()
	if from == nil || to == nil {
		return baton.LeaseOutcome{}, baton.ErrNotFound
	}
	if from == to {
		return baton.LeaseOutcome{}, errors.New("memstore: move within one queue")
	}
	// Lock order between queues: lower id first.
	first, second := from, to
	if first.q.ID > second.q.ID {
		first, second = second, first
	}
	first.mu.Lock()
	defer first.mu.Unlock()
	second.mu.Lock()
	defer second.mu.Unlock()

	e, ok := from.msgs[p.MessageID]
	if !ok {
		return baton.LeaseOutcome{Result: baton.LeaseGone}, nil
	}
	before := e.m
	res := baton.LeaseCurrent
	if p.Epoch != 0 {
		if _, res = from.leaseOf(p.MessageID, p.Epoch, p.Now); res != baton.LeaseCurrent {
			return baton.LeaseOutcome{Result: res, Message: &before}, nil
		}
	}
	from.remove(e)
	m := e.m
	m.VisibleAt = p.Now
	m.Leased = false
	m.ReceiveCount = p.ReceiveCount
	m.DeadLetterSourceARN = p.DeadLetterSourceARN
	if p.ResetSentAt {
		m.SentAt = p.Now
	}
	to.add(&entry{m: m, heapIdx: -1})
	return baton.LeaseOutcome{Result: res, Message: &before}, nil
}

func (s *Store) MessageStats(_ context.Context, p baton.MessageStatsParams) (baton.MessageStats, error) {
	qs := s.lookupID(p.QueueID)
	if qs == nil {
		return baton.MessageStats{}, baton.ErrNotFound
	}
	qs.mu.Lock()
	defer qs.mu.Unlock()
	qs.promote(p.Now)
	st := baton.MessageStats{
		Visible:  qs.ready.Len(),
		InFlight: qs.leasedHidden,
		Delayed:  len(qs.hidden) - qs.leasedHidden,
	}
	if len(qs.hidden) > 0 {
		st.NextVisibleAt = qs.hidden[0].m.VisibleAt
	}
	// Each group is in send order, so the oldest message heads a group.
	for _, g := range qs.groups {
		if at := g.Front().Value.(*entry).m.SentAt; st.OldestSentAt.IsZero() || at.Before(st.OldestSentAt) {
			st.OldestSentAt = at
		}
	}
	return st, nil
}

func (s *Store) MessageExpire(_ context.Context, queueID uint64, cutoff time.Time) (int, error) {
	qs := s.lookupID(queueID)
	if qs == nil {
		return 0, baton.ErrNotFound
	}
	qs.mu.Lock()
	defer qs.mu.Unlock()
	n := 0
	for _, e := range qs.msgs {
		if e.m.SentAt.Before(cutoff) {
			qs.dropExpired(e)
			n++
		}
	}
	return n, nil
}

// Close does nothing: memory needs no release.
func (s *Store) Close() error { return nil }

func cloneQueue(q *baton.Queue) baton.Queue {
	c := *q
	if q.Tags != nil {
		c.Tags = make(map[string]string, len(q.Tags))
		for k, v := range q.Tags {
			c.Tags[k] = v
		}
	}
	return c
}

// cloneMessage copies m deeply, so that neither the caller of MessageSend nor
// the receiver of a returned message shares its attribute map or binary
// values with the store.
func cloneMessage(m *baton.Message) baton.Message {
	c := *m
	if m.Attributes != nil {
		c.Attributes = make(map[string]baton.MessageAttribute, len(m.Attributes))
		for k, a := range m.Attributes {
			if a.BinaryValue != nil {
				a.BinaryValue = append([]byte(nil), a.BinaryValue...)
			}
			c.Attributes[k] = a
		}
	}
	return c
}

// hiddenHeap orders hidden messages by the time they become visible.
type hiddenHeap []*entry

func (h hiddenHeap) Len() int { return len(h) }
func (h hiddenHeap) Less(i, j int) bool {
	return h[i].m.VisibleAt.Before(h[j].m.VisibleAt)
}
func (h hiddenHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx = i
	h[j].heapIdx = j
}
func (h *hiddenHeap) Push(x any) {
	e := x.(*entry)
	e.heapIdx = len(*h)
	*h = append(*h, e)
}
func (h *hiddenHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	e.heapIdx = -1
	return e
}

// MoveTaskSave stores the task, replacing the one of the same Handle.
func (s *Store) MoveTaskSave(_ context.Context, t baton.MoveTask) error {
	s.tasksMu.Lock()
	defer s.tasksMu.Unlock()
	s.tasks[t.Handle] = t
	return nil
}

// MoveTaskList returns every stored task, in no particular order.
func (s *Store) MoveTaskList(context.Context) ([]baton.MoveTask, error) {
	s.tasksMu.Lock()
	defer s.tasksMu.Unlock()
	out := make([]baton.MoveTask, 0, len(s.tasks))
	for _, t := range s.tasks {
		out = append(out, t)
	}
	return out, nil
}
