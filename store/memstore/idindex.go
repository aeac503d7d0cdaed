package memstore

import (
	"encoding/binary"

	"github.com/baton-sqs/baton/internal/ids"
)

// idIndex finds a queue's entries by message id. The ids the engine makes
// are UUIDs, which the entries keep as their 16 bytes: the index holds only
// refs, 4 bytes a slot, in open-addressing tables that compare a slot's
// entry's bytes, and hash them again when a table grows. Tables are at most
// maxTableRefs slots: a full one splits in two by one more bit of the hash
// (a directory of tables indexed by the hash's top bits, doubled when a
// table splits past it), so growing costs a pause of one small table, not
// of the whole index, however many messages the queue holds. Any other id
// is kept in a map, as it is.
type idIndex struct {
	dir []*idTable
	// depth is how many top bits of a hash pick its table: dir has
	// 1<<depth slots, a table taking 1<<(depth-t.depth) of them.
	depth  uint8
	n      int
	seed   uint64
	others map[string]ref
}

// idTable is one open-addressing table, probed linearly from a hash's low
// bits.
type idTable struct {
	refs []ref // a power of two of them, none where empty
	n    int
	// depth is how many top bits of a hash its entries share.
	depth uint8
}

const (
	minTableRefs = 8
	maxTableRefs = 1 << 13
)

// hash mixes a UUID's bytes with the index's seed.
func (x *idIndex) hash(k *[16]byte) uint64 {
	h := mix64(binary.LittleEndian.Uint64(k[:8]) ^ x.seed)
	return mix64(h ^ binary.LittleEndian.Uint64(k[8:]))
}

// mix64 scrambles the bits of v (the finalizer of the SplitMix64
// generator).
func mix64(v uint64) uint64 {
	v ^= v >> 30
	v *= 0xbf58476d1ce4e5b9
	v ^= v >> 27
	v *= 0x94d049bb133111eb
	return v ^ v>>31
}

// table returns the table of hash h.
func (x *idIndex) table(h uint64) *idTable {
	return x.dir[h>>(64-uint(x.depth))]
}

// reserve sizes an empty index for about n UUIDs at once, so that
// restoring them grows no table.
func (x *idIndex) reserve(n int) {
	depth := uint8(0)
	for n>>depth > maxTableRefs/2 {
		depth++
	}
	size := minTableRefs
	for size*3/4 < n>>depth+1 {
		size *= 2
	}
	x.init(depth, size)
}

// init makes the index's tables: 1<<depth of size refs.
func (x *idIndex) init(depth uint8, size int) {
	if x.seed == 0 {
		x.seed = ids.NewUint64()
	}
	x.depth = depth
	x.dir = make([]*idTable, 1<<depth)
	for i := range x.dir {
		x.dir[i] = &idTable{refs: make([]ref, size), depth: depth}
	}
}

// get returns the entry of id, or none.
func (x *idIndex) get(es *slab, id string) ref {
	k, ok := ids.ParseUUID(id)
	if !ok {
		return x.others[id]
	}
	if x.n == 0 {
		return none
	}
	h := x.hash(&k)
	t := x.table(h)
	mask := uint64(len(t.refs) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		r := t.refs[i]
		if r == none || es.at(r).uuid == k {
			return r
		}
	}
}

// put adds r, the entry of id (its uuid unless strID).
func (x *idIndex) put(es *slab, r ref, id string) {
	e := es.at(r)
	if e.flags&fStrID != 0 {
		if x.others == nil {
			x.others = make(map[string]ref)
		}
		x.others[id] = r
		return
	}
	if x.dir == nil {
		x.init(0, minTableRefs)
	}
	h := x.hash(&e.uuid)
	t := x.table(h)
	for (t.n+1)*4 > len(t.refs)*3 {
		x.grow(es, t)
		t = x.table(h)
	}
	t.place(h, r)
	x.n++
}

// place puts r, of hash h, in t's first empty slot from h.
func (t *idTable) place(h uint64, r ref) {
	mask := uint64(len(t.refs) - 1)
	i := h & mask
	for t.refs[i] != none {
		i = (i + 1) & mask
	}
	t.refs[i] = r
	t.n++
}

// grow doubles t, or splits it once it is as large as a table gets.
func (x *idIndex) grow(es *slab, t *idTable) {
	if len(t.refs) < maxTableRefs {
		old := t.refs
		t.refs, t.n = make([]ref, 2*len(old)), 0
		for _, r := range old {
			if r != none {
				t.place(x.hash(&es.at(r).uuid), r)
			}
		}
		return
	}
	if t.depth == x.depth {
		dir := make([]*idTable, 2*len(x.dir))
		for i := range dir {
			dir[i] = x.dir[i>>1]
		}
		x.dir, x.depth = dir, x.depth+1
	}
	// The entries whose hash has a 0 at bit t.depth from the top go to
	// a, the others to b, and so do the directory's slots.
	a := &idTable{refs: make([]ref, len(t.refs)), depth: t.depth + 1}
	b := &idTable{refs: make([]ref, len(t.refs)), depth: t.depth + 1}
	for _, r := range t.refs {
		if r == none {
			continue
		}
		h := x.hash(&es.at(r).uuid)
		if h<<t.depth>>63 == 0 {
			a.place(h, r)
		} else {
			b.place(h, r)
		}
	}
	shift := x.depth - t.depth - 1
	for i, o := range x.dir {
		if o != t {
			continue
		}
		if i>>shift&1 == 0 {
			x.dir[i] = a
		} else {
			x.dir[i] = b
		}
	}
}

// remove drops r, the entry of id.
func (x *idIndex) remove(es *slab, r ref, id string) {
	e := es.at(r)
	if e.flags&fStrID != 0 {
		delete(x.others, id)
		return
	}
	h := x.hash(&e.uuid)
	t := x.table(h)
	mask := uint64(len(t.refs) - 1)
	i := h & mask
	for t.refs[i] != r {
		i = (i + 1) & mask
	}
	// Shift back the entries after i that may sit at it: those whose
	// probe from their hash passes i before their slot j.
	for {
		t.refs[i] = none
		j := i
		for {
			j = (j + 1) & mask
			o := t.refs[j]
			if o == none {
				t.n--
				x.shrink()
				return
			}
			home := x.hash(&es.at(o).uuid) & mask
			if j > i && (home <= i || home > j) || j < i && home <= i && home > j {
				t.refs[i] = o
				i = j
				break
			}
		}
	}
}

// shrink lets go of the tables once the last UUID is gone; a queue drained
// of a large backlog keeps no index for it.
func (x *idIndex) shrink() {
	if x.n--; x.n == 0 {
		x.dir, x.depth = nil, 0
	}
}
