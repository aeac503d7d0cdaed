package memstore

// A queue's entries live in a slab: chunks of up to chunkSize entries,
// each entry addressed by a ref, its chunk's number and its slot in it. An
// entry holds no pointers, so neither does a chunk's array: the collector
// marks it without reading it, and a message costs no allocation of its
// own. Refs stay valid while the entry lives, but an entry's address does
// not: a chunk made while its slab is small grows by copying, so a *entry
// is not kept across an alloc on the same slab.

// ref addresses an entry in its queue's slab; none (0) is no entry, so
// zeroed links are empty.
type ref uint32

const none ref = 0

const (
	chunkShift = 10
	chunkSize  = 1 << chunkShift
	chunkMask  = chunkSize - 1
	// firstChunk is the capacity a slab's chunk starts with while the
	// slab is small: a queue of a few messages holds a few entries, not a
	// whole chunk.
	firstChunk = 8
)

// chunk is one array of entries and the bookkeeping of its free slots.
type chunk struct {
	// es are the slots handed out so far; a chunk fills up from the
	// start, then reuses its freed slots.
	es   []entry
	live int
	// free is the first freed slot, the rest linked through the next of
	// their entries' inList link.
	free ref
	// partial reports that the chunk is on its slab's partial stack.
	partial bool
}

// slab hands out and takes back the entries of one queue. Freed slots of a
// chunk at most half full are handed out again before new ones, so that a
// slab grows only while its chunks are more than half full; a chunk left
// empty is let go, and so is the whole slab. Entries never move: slots
// freed in a chunk that keeps a few live ones wait to be reused, as a
// queue drained in about the order it was filled leaves few such chunks.
type slab struct {
	chunks []chunk
	// cur is the chunk new slots are taken from once no partial chunk
	// has free ones.
	cur int
	// spare are the numbers of chunks let go, for reuse.
	spare []int
	// partial are chunks at most half full, most recent last; a number
	// may be stale (the chunk filled up or was let go since): its
	// partial flag says.
	partial []int
	n       int
}

// at returns the entry of r, valid until the next alloc.
func (s *slab) at(r ref) *entry {
	return &s.chunks[r>>chunkShift].es[r&chunkMask]
}

// alloc returns a new zero entry, live.
func (s *slab) alloc() ref {
	s.n++
	for len(s.partial) > 0 {
		c := s.partial[len(s.partial)-1]
		ch := &s.chunks[c]
		if ch.partial && ch.free != none {
			r := ch.free
			e := s.at(r)
			ch.free = e.links[inList].next
			*e = entry{flags: fLive}
			ch.live++
			return r
		}
		ch.partial = false
		s.partial = s.partial[:len(s.partial)-1]
	}
	if len(s.chunks) == 0 || len(s.chunks[s.cur].es) == chunkSize {
		s.cur = s.newChunk()
	}
	ch := &s.chunks[s.cur]
	if len(ch.es) == cap(ch.es) {
		ch.es = append(make([]entry, 0, min(2*cap(ch.es), chunkSize)), ch.es...)
	}
	r := ref(s.cur<<chunkShift | len(ch.es))
	ch.es = append(ch.es, entry{flags: fLive})
	ch.live++
	return r
}

// newChunk makes an empty chunk, small while the slab is, and returns its
// number. Slot 0 of chunk 0 is none's: never handed out.
func (s *slab) newChunk() int {
	c := len(s.chunks)
	if len(s.spare) > 0 {
		c = s.spare[len(s.spare)-1]
		s.spare = s.spare[:len(s.spare)-1]
	} else {
		s.chunks = append(s.chunks, chunk{})
	}
	size := chunkSize
	if s.n < chunkSize {
		size = firstChunk
	}
	s.chunks[c] = chunk{es: make([]entry, 0, size)}
	if c == 0 {
		s.chunks[c].es = s.chunks[c].es[:1]
	}
	return c
}

// free takes back the entry of r.
func (s *slab) free(r ref) {
	s.n--
	if s.n == 0 {
		*s = slab{}
		return
	}
	c := int(r >> chunkShift)
	ch := &s.chunks[c]
	*s.at(r) = entry{}
	s.at(r).links[inList].next = ch.free
	ch.free = r
	ch.live--
	switch {
	case ch.live == 0 && c != s.cur:
		s.chunks[c] = chunk{}
		s.spare = append(s.spare, c)
	case !ch.partial && ch.live <= len(ch.es)/2:
		ch.partial = true
		s.partial = append(s.partial, c)
	}
}

// each calls f with every live entry's ref; f may free entries, not
// alloc them.
func (s *slab) each(f func(r ref)) {
	for c := 0; c < len(s.chunks); c++ {
		for i := 0; c < len(s.chunks) && i < len(s.chunks[c].es); i++ {
			if s.chunks[c].es[i].flags&fLive != 0 {
				f(ref(c<<chunkShift | i))
			}
		}
	}
}
