package memstore

import (
	"bytes"
	"context"
	"math"
	"slices"
	"strings"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/ids"
)

// MessageBrowse lists a page of the queue's messages without changing
// them; see baton.Store. A page is a pass over the queue's groups that
// keeps the Limit+1 first past the cursor in a bounded heap. Each group
// holds its messages in arrival order, which is send order give or take
// the group's lag (concurrent sends; a move may bring in a much older
// message); a group is walked from the page's end and left once no message
// further on can make the page, so a first page costs about its length.
// Filters, and pages far from the end they start at, read on until they
// have the page: at worst the whole queue.
func (s *Store) MessageBrowse(ctx context.Context, p baton.MessageBrowseParams) (baton.MessageBrowsePage, error) {
	return s.MessageBrowseFunc(ctx, p, nil)
}

// MessageBrowseFunc is MessageBrowse listing only the messages that keep,
// if not nil, accepts besides: a durable store whose bodies are not in the
// index filters by body this way. keep is called with a message's id and
// key (SetKey), under the queue's lock, for messages that pass p's other
// filters; it must not call back into the Store.
func (s *Store) MessageBrowseFunc(_ context.Context, p baton.MessageBrowseParams, keep func(id string, key uint64) bool) (baton.MessageBrowsePage, error) {
	qs := s.lookupID(p.QueueID)
	if qs == nil {
		return baton.MessageBrowsePage{}, baton.ErrNotFound
	}
	var after *position
	if p.Cursor != "" {
		k, err := baton.ParseCursor(p.Cursor)
		if err != nil {
			return baton.MessageBrowsePage{}, err
		}
		after = positionOf(k)
	}
	if p.Limit <= 0 {
		return baton.MessageBrowsePage{}, nil
	}
	qs.mu.Lock()
	defer qs.mu.Unlock()
	b := newBrowsePass(qs, p, after, keep)
	b.walk()
	return b.page(), nil
}

// browsePass is one page's pass over a queue, under the queue's lock: what
// the page asks for, and the heap of the entries that make it so far.
type browsePass struct {
	qs     *queueState
	p      baton.MessageBrowseParams
	after  *position // the cursor's, or nil for a first page
	states baton.MessageState
	now    int64
	keep   func(id string, key uint64) bool
	top    browseHeap
}

// newBrowsePass begins the pass for p's page past after (nil: from the
// start), keeping the Limit+1 first entries in the order p asks for.
func newBrowsePass(qs *queueState, p baton.MessageBrowseParams, after *position, keep func(id string, key uint64) bool) *browsePass {
	states := p.States
	if states == 0 {
		states = baton.AllStates
	}
	// before reports whether a comes before b in the order asked for.
	before := func(a, b ref) bool { return qs.cmpEntries(a, b) < 0 }
	if p.Newest {
		before = func(a, b ref) bool { return qs.cmpEntries(a, b) > 0 }
	}
	return &browsePass{
		qs: qs, p: p, after: after, states: states, now: nanos(p.Now), keep: keep,
		top: browseHeap{es: &qs.es, before: before, max: p.Limit + 1},
	}
}

// consider offers r to the heap if it passes the filters. It reports
// false when r is not wanted because the heap is full: stop, if
// nothing after r can do better.
func (b *browsePass) consider(r ref) bool {
	qs, p := b.qs, &b.p
	if b.after != nil {
		c := b.after.cmp(qs, r)
		if c >= 0 && !p.Newest || c <= 0 && p.Newest {
			return true // not past the cursor
		}
	}
	if !b.top.wants(r) {
		return false
	}
	e := qs.es.at(r)
	if b.states&entryState(e, b.now) == 0 ||
		p.BodyContains != "" && !strings.Contains(qs.bodyOf(e), p.BodyContains) ||
		b.keep != nil && !b.keep(qs.id(e), e.key) {
		return true
	}
	b.top.offer(r)
	return true
}

// walk considers the entries that can make the page.
func (b *browsePass) walk() {
	qs := b.qs
	if b.states&baton.StateVisible == 0 {
		// Only hidden messages: they are all in the hidden timeline
		// (which may also hold some that became visible since the last
		// read).
		qs.hidden.each(&qs.es, func(r ref) { b.consider(r) })
		return
	}
	// Each group is walked from the end the page starts at, and left once
	// the heap is full and no message further on can be sent early (late)
	// enough to beat its last: the first page of a queue whose messages
	// arrive about in send order costs about the page, not the queue.
	for _, g := range qs.groups {
		if b.p.Newest {
			for r := g.tail; r != none; r = qs.es.at(r).links[inGroup].prev {
				if !b.consider(r) && b.top.beyond(r, g.lag, true) {
					break
				}
			}
			continue
		}
		for r := g.head; r != none; r = nextIn(&qs.es, inGroup, r) {
			if !b.consider(r) && b.top.beyond(r, g.lag, false) {
				break
			}
		}
	}
}

// page is the pass's page: the messages of the first Limit entries it
// kept, in order, and the next page's cursor if it kept more.
func (b *browsePass) page() baton.MessageBrowsePage {
	qs := b.qs
	picked := b.top.sorted()
	var page baton.MessageBrowsePage
	if len(picked) > b.p.Limit {
		picked = picked[:b.p.Limit]
		last := qs.es.at(picked[len(picked)-1])
		page.Next = baton.BrowseKey{SentAt: timeOf(last.sentAt), ID: qs.id(last)}.Cursor()
	}
	page.Messages = make([]*baton.Message, len(picked))
	for i, r := range picked {
		e := qs.es.at(r)
		m := qs.message(e, qs.id(e))
		m.Attributes = cloneAttributes(m.Attributes)
		page.Messages[i] = &m
	}
	return page
}

// entryState is e's state at now (nanos).
func entryState(e *entry, now int64) baton.MessageState {
	switch {
	case e.visibleAt <= now:
		return baton.StateVisible
	case e.is(fLeased):
		return baton.StateInFlight
	}
	return baton.StateDelayed
}

// bodyOf returns e's body, if the index holds it.
func (qs *queueState) bodyOf(e *entry) string {
	if x := qs.extras.get(e.x); x != nil {
		return x.body
	}
	return ""
}

// cmpEntries orders entries by send time, then id, as baton.BrowseKey
// does. A UUID's 16 bytes compare as its lowercase text does.
func (qs *queueState) cmpEntries(ra, rb ref) int {
	a, b := qs.es.at(ra), qs.es.at(rb)
	if a.sentAt != b.sentAt {
		if a.sentAt < b.sentAt {
			return -1
		}
		return 1
	}
	if !a.is(fStrID) && !b.is(fStrID) {
		return bytes.Compare(a.uuid[:], b.uuid[:])
	}
	return strings.Compare(qs.id(a), qs.id(b))
}

// position is a browse cursor's key as the index compares it.
type position struct {
	sentAt int64
	key    [16]byte
	uuid   bool
	id     string
}

func positionOf(k baton.BrowseKey) *position {
	p := &position{sentAt: nanos(k.SentAt), id: k.ID}
	p.key, p.uuid = ids.ParseUUID(k.ID)
	return p
}

// cmp compares the position with r's, as cmpEntries would.
func (p *position) cmp(qs *queueState, r ref) int {
	e := qs.es.at(r)
	if p.sentAt != e.sentAt {
		if p.sentAt < e.sentAt {
			return -1
		}
		return 1
	}
	if p.uuid && !e.is(fStrID) {
		return bytes.Compare(p.key[:], e.uuid[:])
	}
	return strings.Compare(p.id, qs.id(e))
}

// browseHeap keeps the max entries that come first by before: a heap whose
// root is the last of those kept, so an entry that comes after it is
// turned away with one comparison.
type browseHeap struct {
	es     *slab
	before func(a, b ref) bool
	max    int
	rs     []ref
}

// beyond reports whether, the heap being full, every message of r's group
// after r in walking order is worse than the heap's last: sent more than
// lag after it (before it, newest first), so later than the last kept.
func (h *browseHeap) beyond(r ref, lag int64, newest bool) bool {
	if len(h.rs) < h.max || lag == math.MaxInt64 {
		return false
	}
	last, sent := h.es.at(h.rs[0]).sentAt, h.es.at(r).sentAt
	if newest {
		// Messages before r were sent at most lag after it.
		bound := last - lag
		return bound <= last && sent < bound
	}
	// Messages after r were sent at most lag before it.
	bound := last + lag
	return bound >= last && sent > bound
}

// wants reports whether offer would keep r.
func (h *browseHeap) wants(r ref) bool {
	return len(h.rs) < h.max || h.before(r, h.rs[0])
}

func (h *browseHeap) offer(r ref) {
	if len(h.rs) < h.max {
		h.rs = append(h.rs, r)
		h.up(len(h.rs) - 1)
		return
	}
	if !h.before(r, h.rs[0]) {
		return
	}
	h.rs[0] = r
	h.down(0)
}

// last reports whether a should be nearer the root than b: it comes later.
func (h *browseHeap) last(a, b ref) bool { return h.before(b, a) }

func (h *browseHeap) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !h.last(h.rs[i], h.rs[parent]) {
			return
		}
		h.rs[i], h.rs[parent] = h.rs[parent], h.rs[i]
		i = parent
	}
}

func (h *browseHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h.rs) {
			return
		}
		c := l
		if r := l + 1; r < len(h.rs) && h.last(h.rs[r], h.rs[l]) {
			c = r
		}
		if !h.last(h.rs[c], h.rs[i]) {
			return
		}
		h.rs[i], h.rs[c] = h.rs[c], h.rs[i]
		i = c
	}
}

// sorted returns the kept entries in order.
func (h *browseHeap) sorted() []ref {
	out := slices.Clone(h.rs)
	slices.SortFunc(out, func(a, b ref) int {
		if h.before(a, b) {
			return -1
		}
		if h.before(b, a) {
			return 1
		}
		return 0
	})
	return out
}
