package ledger

// lru is a list of tracked messages, least recently active first, linked
// through the messages themselves: a queue's list through their queueLRU
// links, the ledger's through their ledgerLRU links. A message is in both
// while the ledger tracks it.
type lru struct {
	head, tail *trackedMessage
	n          int
	// queue: this is a queue's list (queueLedger's, made in
	// Ledger.queue); the zero value is the ledger's.
	queue bool
}

// lruLinks are a message's neighbours in one lru.
type lruLinks struct{ prev, next *trackedMessage }

func (l *lru) links(tm *trackedMessage) *lruLinks {
	if l.queue {
		return &tm.queueLRU
	}
	return &tm.ledgerLRU
}

// pushBack adds tm, which is not in l, as the most recently active.
func (l *lru) pushBack(tm *trackedMessage) {
	k := l.links(tm)
	k.prev, k.next = l.tail, nil
	if l.tail != nil {
		l.links(l.tail).next = tm
	} else {
		l.head = tm
	}
	l.tail = tm
	l.n++
}

// remove takes tm, which is in l, out of it.
func (l *lru) remove(tm *trackedMessage) {
	k := l.links(tm)
	if k.prev != nil {
		l.links(k.prev).next = k.next
	} else {
		l.head = k.next
	}
	if k.next != nil {
		l.links(k.next).prev = k.prev
	} else {
		l.tail = k.prev
	}
	*k = lruLinks{}
	l.n--
}

// moveToBack makes tm, which is in l, the most recently active.
func (l *lru) moveToBack(tm *trackedMessage) {
	if l.tail == tm {
		return
	}
	l.remove(tm)
	l.pushBack(tm)
}
