package ids

import "iter"

// Map maps message ids to values. The ids NewUUID makes are kept as their 16
// bytes rather than as 36-character strings (64 bytes with the string
// header), which matters in an index of millions of messages; any other id
// is kept as it is. The zero Map is empty and ready to use; it is not safe
// for concurrent use.
type Map[V any] struct {
	uuids  map[[16]byte]V
	others map[string]V
}

// NewMap returns a Map with room for hint UUIDs.
func NewMap[V any](hint int) Map[V] {
	return Map[V]{uuids: make(map[[16]byte]V, hint)}
}

// Get returns the value of id and whether there is one.
func (m *Map[V]) Get(id string) (V, bool) {
	if k, ok := ParseUUID(id); ok {
		v, ok := m.uuids[k]
		return v, ok
	}
	v, ok := m.others[id]
	return v, ok
}

// Put sets the value of id.
func (m *Map[V]) Put(id string, v V) {
	if k, ok := ParseUUID(id); ok {
		m.PutUUID(k, v)
		return
	}
	if m.others == nil {
		m.others = make(map[string]V)
	}
	m.others[id] = v
}

// PutUUID sets the value of the id whose ParseUUID is k.
func (m *Map[V]) PutUUID(k [16]byte, v V) {
	if m.uuids == nil {
		m.uuids = make(map[[16]byte]V)
	}
	m.uuids[k] = v
}

// Delete removes id.
func (m *Map[V]) Delete(id string) {
	if k, ok := ParseUUID(id); ok {
		delete(m.uuids, k)
		return
	}
	delete(m.others, id)
}

// DeleteUUID removes the id whose ParseUUID is k.
func (m *Map[V]) DeleteUUID(k [16]byte) { delete(m.uuids, k) }

// Len is the number of ids.
func (m *Map[V]) Len() int { return len(m.uuids) + len(m.others) }

// Values yields every value, in no particular order. The loop may delete
// ids as it goes, as it may with a map.
func (m *Map[V]) Values() iter.Seq[V] {
	return func(yield func(V) bool) {
		for _, v := range m.uuids {
			if !yield(v) {
				return
			}
		}
		for _, v := range m.others {
			if !yield(v) {
				return
			}
		}
	}
}
