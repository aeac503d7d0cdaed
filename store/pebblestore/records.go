package pebblestore

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"time"

	"github.com/baton-sqs/baton"
)

// The values of the store's keys (see keys.go).

var errBadRecord = errors.New("pebblestore: malformed record")

// encodeRecord is the value of a message's state key: its id,
// length-prefixed, then its state (appendState).
func encodeRecord(id string, m *baton.Message) []byte {
	b := make([]byte, 0, 80+len(id)+len(m.GroupID)+len(m.DedupID)+len(m.SequenceNumber)+len(m.SenderID)+len(m.DeadLetterSourceARN))
	b = binary.AppendUvarint(b, uint64(len(id)))
	return appendState(append(b, id...), m)
}

// recordOf is encodeRecord of a state already encoded.
func recordOf(id string, state []byte) []byte {
	b := make([]byte, 0, binary.MaxVarintLen64+len(id)+len(state))
	b = binary.AppendUvarint(b, uint64(len(id)))
	return append(append(b, id...), state...)
}

// decodeRecord undoes encodeRecord into m; intern is as for decodeState.
func decodeRecord(b []byte, m *baton.Message, intern func([]byte) string) error {
	id, rest, ok := field(b)
	if !ok {
		return errBadRecord
	}
	m.ID = string(id)
	return decodeState(rest, m, intern)
}

// field splits a length-prefixed field off b.
func field(b []byte) (f, rest []byte, ok bool) {
	l, k := binary.Uvarint(b)
	if k <= 0 || l > uint64(len(b)-k) {
		return nil, nil, false
	}
	return b[k : k+int(l)], b[k+int(l):], true
}

// appendPayload appends the value of a message's payload key to b: body,
// body MD5, attributes (encodeAttributes) and trace header, each
// length-prefixed.
func appendPayload(b []byte, p *payload) []byte {
	for _, f := range []string{p.body, p.bodyMD5, string(p.attrs), p.trace} {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	return b
}

// decodePayload undoes appendPayload, copying what it keeps.
func decodePayload(b []byte) (payload, error) {
	var fs [4][]byte
	for i := range fs {
		f, rest, ok := field(b)
		if !ok {
			return payload{}, errBadRecord
		}
		fs[i], b = f, rest
	}
	if len(b) != 0 {
		return payload{}, errBadRecord
	}
	p := payload{body: string(fs[0]), bodyMD5: string(fs[1]), trace: string(fs[3])}
	if len(fs[2]) > 0 {
		p.attrs = append([]byte(nil), fs[2]...)
	}
	return p, nil
}

// queueRecord is a queue as stored, times as Unix nanoseconds.
type queueRecord struct {
	Region, Account, Name string
	Attributes            baton.QueueAttributes
	Tags                  map[string]string `json:",omitempty"`
	Created, Modified     int64
	Purged                int64  `json:",omitempty"`
	DedupScope            string `json:",omitempty"`
}

func encodeQueue(q *baton.Queue) ([]byte, error) {
	return json.Marshal(queueRecord{Region: q.Region, Account: q.Account, Name: q.Name, Attributes: q.Attributes, Tags: q.Tags,
		Created: encTime(q.CreatedAt), Modified: encTime(q.ModifiedAt), Purged: encTime(q.PurgedAt), DedupScope: q.DedupScope})
}

func decodeQueue(id uint64, b []byte) (*baton.Queue, error) {
	var r queueRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	return &baton.Queue{ID: id, Region: r.Region, Account: r.Account, Name: r.Name, Attributes: r.Attributes, Tags: r.Tags,
		CreatedAt: decTime(r.Created), ModifiedAt: decTime(r.Modified), PurgedAt: decTime(r.Purged), DedupScope: r.DedupScope}, nil
}

// encodeDedup is the value of a deduplication key: the message id and
// sequence number it was accepted for, length-prefixed.
func encodeDedup(messageID, seq string) []byte {
	b := make([]byte, 0, 2*binary.MaxVarintLen64+len(messageID)+len(seq))
	for _, f := range []string{messageID, seq} {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	return b
}

func decodeDedup(b []byte) (messageID, seq string, err error) {
	id, rest, ok1 := field(b)
	s, rest, ok2 := field(rest)
	if !ok1 || !ok2 || len(rest) != 0 {
		return "", "", errBadRecord
	}
	return string(id), string(s), nil
}

// decodeTombstoneKey undoes tombstoneKey.
func decodeTombstoneKey(k []byte) (region, account, name string, err error) {
	var fs [3]string
	b := k[1:]
	for i := range fs {
		f, rest, ok := field(b)
		if !ok {
			return "", "", "", errBadRecord
		}
		fs[i], b = string(f), rest
	}
	return fs[0], fs[1], fs[2], nil
}

// encodeNanos and decodeNanos are the value of a tombstone: a time.
func encodeNanos(t time.Time) []byte { return binary.AppendVarint(nil, encTime(t)) }

func decodeNanos(b []byte) (time.Time, error) {
	n, k := binary.Varint(b)
	if k <= 0 || k != len(b) {
		return time.Time{}, errBadRecord
	}
	return decTime(n), nil
}

// taskRecord is a move task as stored (its handle is its key).
type taskRecord struct {
	Source, Destination string `json:",omitempty"`
	MaxPerSecond        int    `json:",omitempty"`
	Status              string
	Moved, ToMove       int64
	FailureReason       string `json:",omitempty"`
	Started             int64
}

func encodeTask(t *baton.MoveTask) ([]byte, error) {
	return json.Marshal(taskRecord{Source: t.SourceARN, Destination: t.DestinationARN, MaxPerSecond: t.MaxPerSecond,
		Status: t.Status, Moved: t.Moved, ToMove: t.ToMove, FailureReason: t.FailureReason, Started: encTime(t.StartedAt)})
}

func decodeTask(handle string, b []byte) (baton.MoveTask, error) {
	var r taskRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return baton.MoveTask{}, err
	}
	return baton.MoveTask{Handle: handle, SourceARN: r.Source, DestinationARN: r.Destination, MaxPerSecond: r.MaxPerSecond,
		Status: r.Status, Moved: r.Moved, ToMove: r.ToMove, FailureReason: r.FailureReason, StartedAt: decTime(r.Started)}, nil
}
