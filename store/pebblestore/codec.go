package pebblestore

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/baton-sqs/baton"
)

// Times are stored as Unix nanoseconds, the zero time as 0.
func encTime(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func decTime(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// encodeAttributes writes message attributes as a count followed by, for
// each, its name, data type, string value and binary value, every one
// length-prefixed. No attributes encode as nil.
func encodeAttributes(attrs map[string]baton.MessageAttribute) []byte {
	if len(attrs) == 0 {
		return nil
	}
	size := binary.MaxVarintLen64
	for name, a := range attrs {
		size += 4*binary.MaxVarintLen64 + len(name) + len(a.DataType) + len(a.StringValue) + len(a.BinaryValue)
	}
	b := make([]byte, 0, size)
	b = binary.AppendUvarint(b, uint64(len(attrs)))
	field := func(s []byte) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	for name, a := range attrs {
		field([]byte(name))
		field([]byte(a.DataType))
		field([]byte(a.StringValue))
		field(a.BinaryValue)
	}
	return b
}

var errBadAttributes = errors.New("pebblestore: malformed message attributes")

// decodeAttributes undoes encodeAttributes into a new map.
func decodeAttributes(b []byte) (map[string]baton.MessageAttribute, error) {
	if len(b) == 0 {
		return nil, nil
	}
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return nil, errBadAttributes
	}
	b = b[k:]
	field := func() ([]byte, bool) {
		l, k := binary.Uvarint(b)
		if k <= 0 || l > uint64(len(b)-k) {
			return nil, false
		}
		f := b[k : k+int(l)]
		b = b[k+int(l):]
		return f, true
	}
	out := make(map[string]baton.MessageAttribute, n)
	for range n {
		name, ok1 := field()
		dt, ok2 := field()
		sv, ok3 := field()
		bv, ok4 := field()
		if !ok1 || !ok2 || !ok3 || !ok4 {
			return nil, errBadAttributes
		}
		a := baton.MessageAttribute{DataType: string(dt), StringValue: string(sv)}
		if len(bv) > 0 {
			a.BinaryValue = append([]byte(nil), bv...)
		}
		out[string(name)] = a
	}
	return out, nil
}

// stateVersion is the first byte of an encoded message state.
const stateVersion = 1

// appendState appends a message's metadata and lease state (every field
// but its id and payload) to b: a version byte; group id, deduplication id, sequence
// number, sender id and dead-letter source as length-prefixed strings; send
// time, visibility time, first receive time and lease start as varint Unix
// nanoseconds (0 for the zero time); receive count and epoch as uvarints;
// and whether it is leased.
func appendState(b []byte, m *baton.Message) []byte {
	b = append(b, stateVersion)
	for _, s := range []string{m.GroupID, m.DedupID, m.SequenceNumber, m.SenderID, m.DeadLetterSourceARN} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	for _, t := range []time.Time{m.SentAt, m.VisibleAt, m.FirstReceivedAt, m.LeasedAt} {
		b = binary.AppendVarint(b, encTime(t))
	}
	b = binary.AppendUvarint(b, uint64(m.ReceiveCount))
	b = binary.AppendUvarint(b, uint64(m.Epoch))
	leased := byte(0)
	if m.Leased {
		leased = 1
	}
	return append(b, leased)
}

var errBadState = errors.New("pebblestore: malformed message state")

// decodeState undoes appendState into m. intern, if set, may return a
// shared copy of a string.
func decodeState(b []byte, m *baton.Message, intern func([]byte) string) error {
	if len(b) == 0 || b[0] != stateVersion {
		return errBadState
	}
	b = b[1:]
	str := func(share bool) (string, bool) {
		l, k := binary.Uvarint(b)
		if k <= 0 || l > uint64(len(b)-k) {
			return "", false
		}
		f := b[k : k+int(l)]
		b = b[k+int(l):]
		if share && intern != nil {
			return intern(f), true
		}
		return string(f), true
	}
	for i, dst := range []*string{&m.GroupID, &m.DedupID, &m.SequenceNumber, &m.SenderID, &m.DeadLetterSourceARN} {
		s, ok := str(i != 1 && i != 2) // deduplication ids and sequence numbers are unique
		if !ok {
			return errBadState
		}
		*dst = s
	}
	for _, dst := range []*time.Time{&m.SentAt, &m.VisibleAt, &m.FirstReceivedAt, &m.LeasedAt} {
		n, k := binary.Varint(b)
		if k <= 0 {
			return errBadState
		}
		*dst = decTime(n)
		b = b[k:]
	}
	count, k := binary.Uvarint(b)
	if k <= 0 {
		return errBadState
	}
	b = b[k:]
	epoch, k := binary.Uvarint(b)
	if k <= 0 || epoch > 1<<32-1 || len(b) != k+1 || b[k] > 1 {
		return errBadState
	}
	m.ReceiveCount, m.Epoch, m.Leased = int(count), uint32(epoch), b[k] == 1
	return nil
}
