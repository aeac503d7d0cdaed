package memstore

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/leaf/ids"
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

type queueKey struct{ region, account, name string }

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
// taken in send order; hidden ones (delayed or in flight) wait in hidden, a
// heap ordered by VisibleAt.
type queueState struct {
	mu     sync.Mutex
	q      baton.Queue
	msgs   ids.Map[*entry]
	ready  readyList
	hidden hiddenHeap
	// leasedHidden counts the hidden messages that are in flight; the rest
	// are delayed.
	leasedHidden int

	// groups holds every message in send order per GroupID ("" for
	// messages without one). The groups are also linked in a ring, in the
	// order they were made, for round-robin receives: first is the oldest,
	// next is where the next receive starts (both nil without groups). A
	// ring forgets an emptied group at once; a list searched for it cost a
	// pass over every group, n² to drain n groups.
	groups      map[string]*group
	first, next *group

	// senders are the distinct SenderIDs of the queue's messages, up to
	// maxSenders; senderIdx maps each to its entry.sender.
	senders   []string
	senderIdx map[string]uint8

	fifo  bool
	seq   uint64
	dedup map[string]dedupEntry

	expiredFunc func(queueID uint64, messageID string)
}

// dedupEntry is an accepted deduplication key: when, and the message it
// stored. The message's id and sequence number are kept parsed, as an
// entry's are; other holds them as given when they do not parse.
type dedupEntry struct {
	at    int64 // nanos(t)
	seq   uint64
	id    [16]byte
	other *dedupStrings
}

type dedupStrings struct{ messageID, seq string }

func newDedupEntry(messageID, seq string, at time.Time) dedupEntry {
	d := dedupEntry{at: nanos(at)}
	k, ok := ids.ParseUUID(messageID)
	n, err := parseSeq(seq)
	if ok && err == nil && seq != "" {
		d.id, d.seq = k, n
		return d
	}
	d.other = &dedupStrings{messageID: messageID, seq: seq}
	return d
}

func (d *dedupEntry) messageID() string {
	if d.other != nil {
		return d.other.messageID
	}
	return ids.FormatUUID(d.id)
}

func (d *dedupEntry) sequenceNumber() string {
	if d.other != nil {
		return d.other.seq
	}
	return formatSeq(d.seq)
}

func (s *Store) newQueueState(q *baton.Queue) *queueState {
	return &queueState{
		q: cloneQueue(q), groups: make(map[string]*group), fifo: q.IsFIFO(), dedup: make(map[string]dedupEntry),
		expiredFunc: s.expiredFunc,
	}
}

// add stores a new entry, of group groupID: in its group and hidden until
// promoted.
func (qs *queueState) add(e *entry, groupID string) {
	if e.strID {
		qs.msgs.Put(e.x.id, e)
	} else {
		qs.msgs.PutUUID(e.key, e)
	}
	g, ok := qs.groups[groupID]
	if !ok {
		g = &group{id: groupID}
		qs.groups[groupID] = g
		qs.link(g)
	}
	g.pushBack(e)
	qs.hide(e)
}

// link puts a new group last in the ring, before the oldest.
func (qs *queueState) link(g *group) {
	if qs.first == nil {
		g.oprev, g.onext = g, g
		qs.first, qs.next = g, g
		return
	}
	last := qs.first.oprev
	g.oprev, g.onext = last, qs.first
	last.onext, qs.first.oprev = g, g
}

// unlink takes an emptied group out of the ring; a receive that was to
// start at it starts at the group after it.
func (qs *queueState) unlink(g *group) {
	if g.onext == g {
		qs.first, qs.next = nil, nil
	} else {
		g.oprev.onext, g.onext.oprev = g.onext, g.oprev
		if qs.first == g {
			qs.first = g.onext
		}
		if qs.next == g {
			qs.next = g.onext
		}
	}
	g.oprev, g.onext = nil, nil
}

func (s *Store) QueueCreate(_ context.Context, p baton.QueueCreateParams) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := queueKey{p.Queue.Region, p.Queue.Account, p.Queue.Name}
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

func (s *Store) QueueGet(_ context.Context, region, account, name string) (*baton.Queue, error) {
	qs := s.lookup(region, account, name)
	if qs == nil {
		return nil, baton.ErrNotFound
	}
	qs.mu.Lock()
	defer qs.mu.Unlock()
	q := cloneQueue(&qs.q)
	return &q, nil
}

func (s *Store) lookup(region, account, name string) *queueState {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.queues[queueKey{region, account, name}]
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
		if (p.Region == "" || k.region == p.Region) && (p.Account == "" || k.account == p.Account) && strings.HasPrefix(k.name, p.Prefix) && (p.After == "" || k.name > p.After) {
			states = append(states, qs)
		}
	}
	s.mu.RUnlock()
	sort.Slice(states, func(i, j int) bool {
		a, b := &states[i].q, &states[j].q
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Account < b.Account || a.Account == b.Account && a.Region < b.Region
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
	qs := s.lookup(p.Region, p.Account, p.Name)
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

func (s *Store) QueueDelete(_ context.Context, region, account, name string, now time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := queueKey{region, account, name}
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
	qs := s.lookup(p.Region, p.Account, p.Name)
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
	qs.groups, qs.first, qs.next, qs.dedup = fresh.groups, nil, nil, fresh.dedup
	qs.senders, qs.senderIdx = nil, nil
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
		var seq string
		if qs.fifo {
			key := p.DedupKeys[i]
			if d, ok := qs.dedup[key]; ok && d.at > nanos(p.DedupCutoff) {
				out[i] = baton.MessageSent{MessageID: d.messageID(), SequenceNumber: d.sequenceNumber(), Duplicate: true}
				continue
			}
			qs.seq++
			seq = formatSeq(qs.seq)
			qs.dedup[key] = newDedupEntry(m.ID, seq, m.SentAt)
		}
		e := qs.newEntry(m)
		if seq != "" {
			e.extra().seq = seq
		} else {
			seq = m.SequenceNumber
		}
		qs.add(e, m.GroupID)
		out[i] = baton.MessageSent{MessageID: m.ID, SequenceNumber: seq}
	}
	qs.forgetDedup(p.DedupCutoff)
	return out, nil
}

// forgetDedup drops deduplication entries past the window, a few at a time
// so no send pays for all of them.
func (qs *queueState) forgetDedup(cutoff time.Time) {
	n, c := 0, nanos(cutoff)
	for k, d := range qs.dedup {
		if n++; n > 16 {
			return
		}
		if d.at <= c {
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
	if e.isLeased {
		qs.leasedHidden++
	}
}

func (qs *queueState) unhide(e *entry) {
	heap.Remove(&qs.hidden, int(e.heapIdx))
	if e.isLeased {
		qs.leasedHidden--
	}
}

// promote moves the hidden messages that are visible at now to ready.
func (qs *queueState) promote(now time.Time) {
	n := nanos(now)
	for len(qs.hidden) > 0 && qs.hidden[0].visibleAt <= n {
		e := qs.hidden[0]
		qs.unhide(e)
		qs.ready.push(e)
	}
}

func (qs *queueState) remove(e *entry) {
	if e.ready {
		qs.ready.remove(e)
	} else if e.heapIdx >= 0 {
		qs.unhide(e)
	}
	g := e.g
	g.remove(e)
	if g.n == 0 {
		delete(qs.groups, g.id)
		qs.unlink(g)
	}
	if e.strID {
		qs.msgs.Delete(e.x.id)
	} else {
		qs.msgs.DeleteUUID(e.key)
	}
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
	now, visibleAt := nanos(p.Now), nanos(p.VisibleAt)
	for _, e := range taken {
		if e.ready { // pickReady took its own out already
			qs.ready.remove(e)
		}
		if e.receiveCount < math.MaxInt32 {
			e.receiveCount++
		}
		e.epoch++
		if e.firstReceived == zeroNanos {
			e.firstReceived = now
		}
		e.isLeased = true
		e.leased = now
		e.visibleAt = visibleAt
		if p.VisibleAt.After(p.Now) {
			qs.hide(e)
		} else {
			stayVisible = append(stayVisible, e)
		}
		m := qs.message(e, e.id())
		m.Attributes = cloneAttributes(m.Attributes)
		out = append(out, &m)
	}
	for _, e := range stayVisible {
		qs.ready.push(e)
	}
	return out, nil
}

// expired drops e if it is past retention and reports whether it did.
func (qs *queueState) expired(e *entry, p baton.MessageReceiveParams) bool {
	if e.sentAt < nanos(p.RetentionCutoff) {
		qs.dropExpired(e)
		return true
	}
	return false
}

// dropExpired removes e as past retention and tells expiredFunc.
func (qs *queueState) dropExpired(e *entry) {
	qs.remove(e)
	if qs.expiredFunc != nil {
		qs.expiredFunc(qs.q.ID, e.id())
	}
}

// pickReady takes visible messages in send order, out of ready.
func (qs *queueState) pickReady(p baton.MessageReceiveParams) []*entry {
	var taken []*entry
	for len(taken) < p.Max {
		e := qs.ready.first()
		if e == nil {
			break
		}
		if qs.expired(e, p) { // dropped, out of ready
			continue
		}
		qs.ready.remove(e)
		taken = append(taken, e)
	}
	return taken
}

// pickFair takes one visible message from each group in turn, starting
// where the last receive stopped.
func (qs *queueState) pickFair(p baton.MessageReceiveParams) []*entry {
	var taken []*entry
	for progress := true; progress && len(taken) < p.Max; {
		progress = false
		for n := len(qs.groups); n > 0 && len(taken) < p.Max && qs.next != nil; n-- {
			g := qs.next
			qs.next = g.onext
			for e := g.head; e != nil; {
				next := e.gnext
				if !e.ready || slices.Contains(taken, e) || qs.expired(e, p) {
					e = next
					continue
				}
				taken = append(taken, e)
				progress = true
				break
			}
			if qs.next == nil {
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
	for n := len(qs.groups); n > 0 && len(taken) < p.Max && qs.next != nil; n-- {
		g := qs.next
		qs.next = g.onext
		for e := g.head; e != nil && len(taken) < p.Max; {
			next := e.gnext
			if !e.ready {
				if e.isLeased {
					break // in flight: the rest of the group waits
				}
				e = next
				continue // delayed
			}
			if !qs.expired(e, p) {
				taken = append(taken, e)
			}
			e = next
		}
	}
	return taken
}

// leaseOf finds the message and tells whether the receipt's epoch names its
// current, unexpired lease.
func (qs *queueState) leaseOf(id string, epoch uint32, now time.Time) (*entry, baton.LeaseResult) {
	e, ok := qs.msgs.Get(id)
	if !ok {
		return nil, baton.LeaseGone
	}
	if e.epoch != epoch || !e.isLeased || e.visibleAt <= nanos(now) {
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
	before := qs.message(e, p.MessageID)
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
	if res == baton.LeaseLapsed && p.AnyLease && e.epoch > p.Epoch && e.isLeased && e.visibleAt > nanos(p.Now) {
		res = baton.LeaseSuperseded // a later lease, live: the change is its
	}
	before := qs.message(e, p.MessageID)
	if res.Changed() {
		// A read at a later time than p.Now may have made it visible.
		if e.ready {
			qs.ready.remove(e)
		} else {
			qs.unhide(e)
		}
		e.visibleAt = nanos(p.VisibleAt)
		if p.VisibleAt.After(p.Now) {
			qs.hide(e)
		} else {
			qs.ready.push(e)
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

	e, ok := from.msgs.Get(p.MessageID)
	if !ok {
		return baton.LeaseOutcome{Result: baton.LeaseGone}, nil
	}
	before := from.message(e, p.MessageID)
	res := baton.LeaseCurrent
	if p.Epoch != 0 {
		if _, res = from.leaseOf(p.MessageID, p.Epoch, p.Now); res != baton.LeaseCurrent {
			return baton.LeaseOutcome{Result: res, Message: &before}, nil
		}
	}
	from.remove(e)
	m := before
	m.VisibleAt = p.Now
	m.Leased = false
	m.ReceiveCount = p.ReceiveCount
	m.DeadLetterSourceARN = p.DeadLetterSourceARN
	if p.ResetSentAt {
		m.SentAt = p.Now
	}
	to.add(to.newEntry(&m), m.GroupID)
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
		Visible:  qs.ready.n,
		InFlight: qs.leasedHidden,
		Delayed:  len(qs.hidden) - qs.leasedHidden,
	}
	if len(qs.hidden) > 0 {
		st.NextVisibleAt = timeOf(qs.hidden[0].visibleAt)
	}
	// Each group is in send order, so the oldest message heads a group.
	oldest, found := int64(0), false
	for _, g := range qs.groups {
		if at := g.head.sentAt; !found || at < oldest {
			oldest, found = at, true
		}
	}
	if found {
		st.OldestSentAt = timeOf(oldest)
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
	c := nanos(cutoff)
	for e := range qs.msgs.Values() {
		if e.sentAt < c {
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

// cloneAttributes copies attrs deeply, so that neither the caller of
// MessageSend nor the receiver of a returned message shares the attribute
// map or binary values with the store.
func cloneAttributes(attrs map[string]baton.MessageAttribute) map[string]baton.MessageAttribute {
	if attrs == nil {
		return nil
	}
	c := make(map[string]baton.MessageAttribute, len(attrs))
	for k, a := range attrs {
		if a.BinaryValue != nil {
			a.BinaryValue = append([]byte(nil), a.BinaryValue...)
		}
		c[k] = a
	}
	return c
}

// hiddenHeap orders hidden messages by the time they become visible.
type hiddenHeap []*entry

func (h hiddenHeap) Len() int { return len(h) }
func (h hiddenHeap) Less(i, j int) bool {
	return h[i].visibleAt < h[j].visibleAt
}
func (h hiddenHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx = int32(i)
	h[j].heapIdx = int32(j)
}
func (h *hiddenHeap) Push(x any) {
	e := x.(*entry)
	e.heapIdx = int32(len(*h))
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

// MoveTaskSave stores the task, replacing the one of the same Handle, and
// drops the finished tasks of its source beyond the newest
// baton.MaxMoveTasksKept.
func (s *Store) MoveTaskSave(_ context.Context, t baton.MoveTask) error {
	s.tasksMu.Lock()
	defer s.tasksMu.Unlock()
	s.tasks[t.Handle] = t
	s.pruneTasks(t.SourceARN)
	return nil
}

// pruneTasks drops the finished tasks of source beyond the newest
// baton.MaxMoveTasksKept; the caller holds tasksMu.
func (s *Store) pruneTasks(source string) {
	var same []baton.MoveTask
	for _, o := range s.tasks {
		if o.SourceARN == source {
			same = append(same, o)
		}
	}
	if len(same) <= baton.MaxMoveTasksKept {
		return
	}
	slices.SortFunc(same, baton.CompareMoveTasks)
	for _, o := range same[baton.MaxMoveTasksKept:] {
		if o.Finished() {
			delete(s.tasks, o.Handle)
		}
	}
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
