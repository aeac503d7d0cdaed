package pgstore

import (
	"encoding/binary"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// A round's statements take their rows as arrays (round.go), text and
// timestamptz arrays most of all: a send statement's bodies, ids and times.
// pgx encodes an array element by element, each through an interface value
// (an allocation for every string and time), into one buffer for all of a
// statement's parameters that it grows as the elements come, by a quarter
// at a time once it is large: a round's bodies were copied about five times
// over before they reached the wire. A connection's arrays of text and of
// timestamptz given as Go slices ([]string, []*string, []time.Time,
// []*time.Time) are encoded here instead, in PostgreSQL's binary array
// format (as pgx writes it, byte for byte), after growing the buffer once
// for the whole array; any other value goes to pgx's own encoding.

// encodeArraysIn makes a connection's type map encode its text and
// timestamptz arrays with arrayCodec.
func encodeArraysIn(m *pgtype.Map) {
	for _, oid := range []uint32{pgtype.TextArrayOID, pgtype.TimestamptzArrayOID} {
		t, ok := m.TypeForOID(oid)
		if !ok {
			continue
		}
		if ac, ok := t.Codec.(*pgtype.ArrayCodec); ok {
			m.RegisterType(&pgtype.Type{Name: t.Name, OID: t.OID, Codec: arrayCodec{ac}})
		}
	}
}

// arrayCodec is pgx's codec of an array type, but that it encodes the
// slices of arrayPlan's kinds in binary itself.
type arrayCodec struct {
	*pgtype.ArrayCodec
}

func (c arrayCodec) PlanEncode(m *pgtype.Map, oid uint32, format int16, value any) pgtype.EncodePlan {
	if format == pgtype.BinaryFormatCode {
		if p := (arrayPlan{elem: c.ElementType.OID}); p.handles(value) {
			return p
		}
	}
	return c.ArrayCodec.PlanEncode(m, oid, format, value)
}

// arrayPlan encodes a one-dimensional array of elem (text or timestamptz)
// in binary: NULL for a nil slice, a NULL element for a nil pointer.
type arrayPlan struct {
	elem uint32
}

func (p arrayPlan) handles(value any) bool {
	switch value.(type) {
	case []string, []*string:
		return p.elem == pgtype.TextOID
	case []time.Time, []*time.Time:
		return p.elem == pgtype.TimestamptzOID
	}
	return false
}

func (p arrayPlan) Encode(value any, buf []byte) ([]byte, error) {
	switch v := value.(type) {
	case []string:
		if v == nil {
			return nil, nil
		}
		return encodeArray(buf, p.elem, v, func(s string) (int, bool) { return len(s), true },
			func(b []byte, s string) []byte { return append(b, s...) }), nil
	case []*string:
		if v == nil {
			return nil, nil
		}
		return encodeArray(buf, p.elem, v, func(s *string) (int, bool) { return lenOf(s), s != nil },
			func(b []byte, s *string) []byte { return append(b, *s...) }), nil
	case []time.Time:
		if v == nil {
			return nil, nil
		}
		return encodeArray(buf, p.elem, v, func(time.Time) (int, bool) { return 8, true }, appendTimestamptz), nil
	case []*time.Time:
		if v == nil {
			return nil, nil
		}
		return encodeArray(buf, p.elem, v, func(t *time.Time) (int, bool) { return 8, t != nil },
			func(b []byte, t *time.Time) []byte { return appendTimestamptz(b, *t) }), nil
	}
	return nil, nil // not reached: PlanEncode chose the plan for value's kind
}

// encodeArray appends vs as a binary array of elem: its header (one
// dimension, whether an element is NULL, elem, the length, lower bound
// 1), then each element's length and bytes (size: how many, and false for
// NULL, which is length -1 and no bytes).
func encodeArray[T any](buf []byte, elem uint32, vs []T, size func(T) (int, bool), put func([]byte, T) []byte) []byte {
	need, null := 20, int32(0)
	for _, v := range vs {
		n, ok := size(v)
		if !ok {
			null = 1
		}
		need += 4 + n
	}
	buf = grow(buf, need)
	buf = binary.BigEndian.AppendUint32(buf, 1)
	buf = binary.BigEndian.AppendUint32(buf, uint32(null))
	buf = binary.BigEndian.AppendUint32(buf, elem)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(vs)))
	buf = binary.BigEndian.AppendUint32(buf, 1)
	for _, v := range vs {
		n, ok := size(v)
		if !ok {
			buf = binary.BigEndian.AppendUint32(buf, ^uint32(0)) // -1
			continue
		}
		buf = binary.BigEndian.AppendUint32(buf, uint32(n))
		buf = put(buf, v)
	}
	return buf
}

// grow makes room for n more bytes in buf, at least doubling its capacity
// when it grows, so that the parameters after this one fit in the room
// left as a rule.
func grow(buf []byte, n int) []byte {
	if cap(buf)-len(buf) >= n {
		return buf
	}
	out := make([]byte, len(buf), max(2*cap(buf), len(buf)+n))
	copy(out, buf)
	return out
}

// appendTimestamptz appends t as a binary timestamptz: microseconds since
// 2000-01-01 UTC.
func appendTimestamptz(buf []byte, t time.Time) []byte {
	const unixToY2K = 946_684_800 * 1_000_000
	us := t.Unix()*1_000_000 + int64(t.Nanosecond())/1000 - unixToY2K
	return binary.BigEndian.AppendUint64(buf, uint64(us))
}

// lenOf is len(*s), or 0 for nil.
func lenOf(s *string) int {
	if s == nil {
		return 0
	}
	return len(*s)
}
