package pebblestore

import (
	"context"

	"github.com/baton-sqs/baton"
)

// MessageSend stores the messages, their deduplication keys and the
// queue's sequence counter, and returns once they are committed. A
// duplicate returns once its original is.
func (s *Store) MessageSend(ctx context.Context, p baton.MessageSendParams) ([]baton.MessageSent, error) {
	if err := s.writable(); err != nil {
		return nil, err
	}
	// The index gets the messages without their payloads.
	bare := make([]*baton.Message, len(p.Messages))
	pays := make([]payload, len(p.Messages))
	for i, m := range p.Messages {
		c := *m
		c.Body, c.BodyMD5, c.Attributes, c.TraceHeader = "", "", nil, ""
		bare[i] = &c
		pays[i] = payloadOf(m)
	}
	ip := p
	ip.Messages = bare

	i := s.lockQueue(p.QueueID)
	sl := held{unlock: s.stripes[i].Unlock}
	defer sl.release()
	sent, err := s.index.MessageSend(ctx, ip)
	if err != nil {
		sl.release()
		return nil, err
	}
	changes := make([]change, 0, len(sent)+1)
	inserted := make([]int64, 0, len(sent))
	// The engine passes deduplication keys for FIFO queues only.
	isFIFO := len(p.DedupKeys) == len(p.Messages)
	var fifo *fifoSent
	s.pendMu.Lock()
	for j, st := range sent {
		if st.Duplicate {
			continue
		}
		m := bare[j]
		m.SequenceNumber = st.SequenceNumber
		pos := s.pos.Add(1)
		s.remember(p.QueueID, m.ID, pos)
		changes = append(changes, &msgInsert{pos: pos, queueID: p.QueueID, rec: encodeRecord(m.ID, m), pay: pays[j]})
		inserted = append(inserted, pos)
		s.pending[pos] = pays[j]
		if isFIFO {
			if fifo == nil {
				fifo = &fifoSent{queueID: p.QueueID, cutoff: p.DedupCutoff}
			}
			fifo.lastSeq = st.SequenceNumber
			fifo.keys = append(fifo.keys, dedupRow{key: p.DedupKeys[j], messageID: m.ID, seq: st.SequenceNumber, at: m.SentAt})
		}
	}
	s.pendMu.Unlock()
	if fifo != nil {
		changes = append(changes, fifo)
	}
	b := s.w.enqueue(changes, inserted)
	sl.release()
	if err := b.wait(ctx); err != nil {
		return nil, err
	}
	return sent, nil
}
