package memstore

// A timeline holds entries in order of one of their times: the ready
// messages by send time (SQS hands out a message whose lease lapsed before
// messages sent after it), the hidden ones by the time they become
// visible. Most join in that order, a send's at its send time: they wait
// in a list, linked through the entries (a chain), each no earlier than
// the one before it, appended in constant time. An entry that joins out of
// order (a lapsed or released lease, a delay) waits in late, a heap. The
// first is whichever head, of the list or of late, comes first, so a
// backlog costs nothing, made visible or restored, and an entry out of
// order log(len(late)).
type timeline struct {
	list chain
	late []ref
	n    int
	// flag is the entry flag of the timeline's members: fReady orders by
	// send time, fHidden by visibility.
	flag uint8
}

// time returns the time e is ordered by.
func (t *timeline) time(e *entry) int64 {
	if t.flag == fHidden {
		return e.visibleAt
	}
	return e.sentAt
}

// push adds r: last in the list if no earlier than its tail, otherwise in
// late. Of hidden entries only those visible at their send time (neither
// delayed nor leased) join the list: one whose lease ends later would
// leave every send after it out of order.
func (t *timeline) push(es *slab, r ref) {
	e := es.at(r)
	e.flags |= t.flag
	t.n++
	if t.list.tail != none && t.time(e) < t.time(es.at(t.list.tail)) || t.flag == fHidden && e.visibleAt != e.sentAt {
		e.heapIdx = int32(len(t.late))
		t.late = append(t.late, r)
		t.up(es, len(t.late)-1)
		return
	}
	e.heapIdx = -1
	t.list.pushBack(es, inList, r)
}

// first returns the entry that comes first, or none.
func (t *timeline) first(es *slab) ref {
	if len(t.late) > 0 && (t.list.head == none || t.time(es.at(t.late[0])) < t.time(es.at(t.list.head))) {
		return t.late[0]
	}
	return t.list.head
}

// remove takes r out.
func (t *timeline) remove(es *slab, r ref) {
	e := es.at(r)
	e.flags &^= t.flag
	t.n--
	if e.heapIdx >= 0 {
		t.removeLate(es, int(e.heapIdx))
		return
	}
	t.list.remove(es, inList, r)
}

// each calls f with every entry, in no particular order.
func (t *timeline) each(es *slab, f func(r ref)) {
	for r := t.list.head; r != none; r = nextIn(es, inList, r) {
		f(r)
	}
	for _, r := range t.late {
		f(r)
	}
}

// The moves of late are container/heap's, on refs: an entry's heapIdx is
// its place, so that removeLate finds it without a search.

func (t *timeline) less(es *slab, i, j int) bool {
	return t.time(es.at(t.late[i])) < t.time(es.at(t.late[j]))
}

func (t *timeline) swap(es *slab, i, j int) {
	t.late[i], t.late[j] = t.late[j], t.late[i]
	es.at(t.late[i]).heapIdx = int32(i)
	es.at(t.late[j]).heapIdx = int32(j)
}

func (t *timeline) up(es *slab, j int) {
	for {
		i := (j - 1) / 2 // parent
		if i == j || !t.less(es, j, i) {
			return
		}
		t.swap(es, i, j)
		j = i
	}
}

func (t *timeline) down(es *slab, i0, n int) bool {
	i := i0
	for {
		j1 := 2*i + 1
		if j1 >= n || j1 < 0 { // j1 < 0 after int overflow
			break
		}
		j := j1 // left child
		if j2 := j1 + 1; j2 < n && t.less(es, j2, j1) {
			j = j2 // right child
		}
		if !t.less(es, j, i) {
			break
		}
		t.swap(es, i, j)
		i = j
	}
	return i > i0
}

// removeLate takes the entry at place i out of late. A heap that had
// grown large and is mostly empty again gives back its array.
func (t *timeline) removeLate(es *slab, i int) {
	n := len(t.late) - 1
	if n != i {
		t.swap(es, i, n)
		if !t.down(es, i, n) {
			t.up(es, i)
		}
	}
	es.at(t.late[n]).heapIdx = -1
	t.late = t.late[:n]
	if c := cap(t.late); c > 1024 && n < c/4 {
		t.late = append(make([]ref, 0, c/2), t.late...)
	}
}
