package pebblestore

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/baton-sqs/baton"
)

// payload is the part of a message kept on disk only.
type payload struct {
	body    string
	bodyMD5 string // empty in messages stored before releases recorded it
	attrs   []byte // encodeAttributes
	trace   string
}

func payloadOf(m *baton.Message) payload {
	return payload{body: m.Body, bodyMD5: m.BodyMD5, attrs: encodeAttributes(m.Attributes), trace: m.TraceHeader}
}

// fill puts p into m.
func (p payload) fill(m *baton.Message) error {
	attrs, err := decodeAttributes(p.attrs)
	if err != nil {
		return fmt.Errorf("message %s: %w", m.ID, err)
	}
	m.Body, m.BodyMD5, m.Attributes, m.TraceHeader = p.body, p.bodyMD5, attrs, p.trace
	return nil
}

// committed forgets the pending payloads of committed messages, by pos.
func (s *Store) committed(rows []int64) {
	if len(rows) == 0 {
		return
	}
	s.pendMu.Lock()
	for _, pos := range rows {
		delete(s.pending, pos)
	}
	s.pendMu.Unlock()
}

// row names a message's records in its queue.
type row struct {
	id  string
	pos int64
}

// payloads finds the payloads of messages of a queue: pending ones first,
// the rest in the log. A message found in neither is gone and is missing
// from the result, which is keyed by pos. A payload the log cannot read (a
// damaged table) fails the call with baton.ErrUnavailable, which clients
// see as 503 and may try again, and is logged with the message's id, once.
func (s *Store) payloads(queueID uint64, rs []row) (map[int64]payload, error) {
	out := make(map[int64]payload, len(rs))
	var rest []row
	s.pendMu.Lock()
	for _, r := range rs {
		if p, ok := s.pending[r.pos]; ok {
			out[r.pos] = p
		} else {
			rest = append(rest, r)
		}
	}
	s.pendMu.Unlock()
	// A payload leaves pending only after its commit, so a message not
	// pending now is in the log, or gone.
	var key []byte
	for _, r := range rest {
		key = appendQueueKey(key[:0], kindPayload, queueID, uint64(r.pos))
		v, closer, err := s.db.Get(key)
		if errors.Is(err, pebble.ErrNotFound) {
			continue
		}
		var p payload
		if err == nil {
			p, err = decodePayload(v)
			closer.Close()
		}
		if err != nil {
			// Once per message: each receive meets it again, as long as
			// it stays in the queue.
			if _, logged := s.unreadable.LoadOrStore(r.pos, true); !logged {
				s.logger.Error("pebblestore: cannot read a message's body; its receives fail (503). "+unreadableAdvice(err),
					"queue_id", queueID, "message", r.id, "err", firstLine(err))
			}
			return nil, fmt.Errorf("%w: pebblestore: read the body of message %s: %w", baton.ErrUnavailable, r.id, err)
		}
		out[r.pos] = p
	}
	return out, nil
}

// withPayloads gives msgs, found at rs, their payloads, and returns those
// that still have one (not purged, their queue not deleted, meanwhile).
func (s *Store) withPayloads(queueID uint64, msgs []*baton.Message, rs []row) ([]*baton.Message, error) {
	pays, err := s.payloads(queueID, rs)
	if err != nil {
		return nil, err
	}
	out := make([]*baton.Message, 0, len(msgs))
	for j, m := range msgs {
		pay, ok := pays[rs[j].pos]
		if !ok {
			continue
		}
		if err := pay.fill(m); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}
