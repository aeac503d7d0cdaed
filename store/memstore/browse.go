package memstore

import (
	"bytes"
	"context"
	"math"
	"slices"
	"strings"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/leaf/ids"
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
// index filters by body this way. keep is called with a message's id, under
// the queue's lock, for messages that pass p's other filters; it must not
// call back into the Store.
func (s *Store) MessageBrowseFunc(_ context.Context, p baton.MessageBrowseParams, keep func(id string) bool) (baton.MessageBrowsePage, error) {
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
	states := p.States
	if states == 0 {
		states = baton.AllStates
	}
	qs.mu.Lock()
	defer qs.mu.Unlock()
	// before reports whether a comes before b in the order asked for.
	before := func(a, b *entry) bool { return cmpEntries(a, b) < 0 }
	if p.Newest {
		before = func(a, b *entry) bool { return cmpEntries(a, b) > 0 }
	}
	now := nanos(p.Now)
	top := browseHeap{before: before, max: p.Limit + 1}
	// consider offers e to the heap if it passes the filters. It reports
	// false when e is not wanted because the heap is full: stop, if
	// nothing after e can do better.
	consider := func(e *entry) bool {
		if after != nil {
			c := after.cmp(e)
			if c >= 0 && !p.Newest || c <= 0 && p.Newest {
				return true // not past the cursor
			}
		}
		if !top.wants(e) {
			return false
		}
		if states&entryState(e, now) == 0 ||
			p.BodyContains != "" && (e.x == nil || !strings.Contains(e.x.body, p.BodyContains)) ||
			keep != nil && !keep(e.id()) {
			return true
		}
		top.offer(e)
		return true
	}
	if states&baton.StateVisible == 0 {
		// Only hidden messages: they are all in the hidden heap (which
		// may also hold some that became visible since the last read).
		for _, e := range qs.hidden {
			consider(e)
		}
	} else {
		// Each group is walked from the end the page starts at, and
		// left once the heap is full and no message further on can be
		// sent early (late) enough to beat its last: the first page of a
		// queue whose messages arrive about in send order costs about
		// the page, not the queue.
		for _, g := range qs.groups {
			if p.Newest {
				for e := g.tail; e != nil; e = e.gprev {
					if !consider(e) && top.beyond(e, g.lag, true) {
						break
					}
				}
				continue
			}
			for e := g.head; e != nil; e = e.gnext {
				if !consider(e) && top.beyond(e, g.lag, false) {
					break
				}
			}
		}
	}
	picked := top.sorted()
	var page baton.MessageBrowsePage
	if len(picked) > p.Limit {
		picked = picked[:p.Limit]
		last := picked[len(picked)-1]
		page.Next = baton.BrowseKey{SentAt: timeOf(last.sentAt), ID: last.id()}.Cursor()
	}
	page.Messages = make([]*baton.Message, len(picked))
	for i, e := range picked {
		m := qs.message(e, e.id())
		m.Attributes = cloneAttributes(m.Attributes)
		page.Messages[i] = &m
	}
	return page, nil
}

// entryState is e's state at now (nanos).
func entryState(e *entry, now int64) baton.MessageState {
	switch {
	case e.visibleAt <= now:
		return baton.StateVisible
	case e.isLeased:
		return baton.StateInFlight
	}
	return baton.StateDelayed
}

// cmpEntries orders entries by send time, then id, as baton.BrowseKey
// does. A UUID's 16 bytes compare as its lowercase text does.
func cmpEntries(a, b *entry) int {
	if a.sentAt != b.sentAt {
		if a.sentAt < b.sentAt {
			return -1
		}
		return 1
	}
	if !a.strID && !b.strID {
		return bytes.Compare(a.key[:], b.key[:])
	}
	return strings.Compare(a.id(), b.id())
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

// cmp compares the position with e's, as cmpEntries would.
func (p *position) cmp(e *entry) int {
	if p.sentAt != e.sentAt {
		if p.sentAt < e.sentAt {
			return -1
		}
		return 1
	}
	if p.uuid && !e.strID {
		return bytes.Compare(p.key[:], e.key[:])
	}
	return strings.Compare(p.id, e.id())
}

// browseHeap keeps the max entries that come first by before: a heap whose
// root is the last of those kept, so an entry that comes after it is
// turned away with one comparison.
type browseHeap struct {
	before func(a, b *entry) bool
	max    int
	es     []*entry
}

// beyond reports whether, the heap being full, every message of e's group
// after e in walking order is worse than the heap's last: sent more than
// lag after it (before it, newest first), so later than the last kept.
func (h *browseHeap) beyond(e *entry, lag int64, newest bool) bool {
	if len(h.es) < h.max || lag == math.MaxInt64 {
		return false
	}
	last := h.es[0].sentAt
	if newest {
		// Messages before e were sent at most lag after it.
		bound := last - lag
		return bound <= last && e.sentAt < bound
	}
	// Messages after e were sent at most lag before it.
	bound := last + lag
	return bound >= last && e.sentAt > bound
}

// wants reports whether offer would keep e.
func (h *browseHeap) wants(e *entry) bool {
	return len(h.es) < h.max || h.before(e, h.es[0])
}

func (h *browseHeap) offer(e *entry) {
	if len(h.es) < h.max {
		h.es = append(h.es, e)
		h.up(len(h.es) - 1)
		return
	}
	if !h.before(e, h.es[0]) {
		return
	}
	h.es[0] = e
	h.down(0)
}

// last reports whether a should be nearer the root than b: it comes later.
func (h *browseHeap) last(a, b *entry) bool { return h.before(b, a) }

func (h *browseHeap) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !h.last(h.es[i], h.es[parent]) {
			return
		}
		h.es[i], h.es[parent] = h.es[parent], h.es[i]
		i = parent
	}
}

func (h *browseHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h.es) {
			return
		}
		c := l
		if r := l + 1; r < len(h.es) && h.last(h.es[r], h.es[l]) {
			c = r
		}
		if !h.last(h.es[c], h.es[i]) {
			return
		}
		h.es[i], h.es[c] = h.es[c], h.es[i]
		i = c
	}
}

// sorted returns the kept entries in order.
func (h *browseHeap) sorted() []*entry {
	out := slices.Clone(h.es)
	slices.SortFunc(out, func(a, b *entry) int {
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
