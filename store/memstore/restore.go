package memstore

import (
	"fmt"
	"strconv"
	"time"

	"github.com/baton-sqs/baton"
)

// A durable store keeps its working set in a memstore and rebuilds it when it
// opens. MessageSend cannot do that: it would number the messages again and
// deduplicate them. The methods of this file put back, exactly as they were
// saved, the state that the baton.Store methods build up.

// QueueRestoreParams are a queue and everything its sends and receives left
// behind, as a durable store saved them.
type QueueRestoreParams struct {
	Queue *baton.Queue
	// LastSequenceNumber is the SequenceNumber the queue gave last, "" if
	// none: sends continue above it.
	LastSequenceNumber string
	// Dedup are the deduplication keys the queue accepted.
	Dedup []DedupEntry
	// Messages, a hint, is how many messages MessageRestore will add: the
	// index is sized for them at once.
	Messages int
}

// DedupEntry is a deduplication key a FIFO queue accepted: MessageSend
// records one for each message it stores, at the message's SentAt.
type DedupEntry struct {
	Key            string
	MessageID      string
	SequenceNumber string
	At             time.Time
}

// QueueRestore adds a queue with its deduplication keys and sequence
// counter, and no messages: MessageRestore adds them. It returns
// baton.ErrExists if the name or id is taken, and an error if
// LastSequenceNumber is not one this package issues.
func (s *Store) QueueRestore(p QueueRestoreParams) error {
	seq, err := parseSeq(p.LastSequenceNumber)
	if err != nil {
		return err
	}
	qs := s.newQueueState(p.Queue)
	qs.ids.reserve(p.Messages)
	qs.seq = seq
	for _, d := range p.Dedup {
		qs.dedup[d.Key] = newDedupEntry(d.MessageID, d.SequenceNumber, d.At)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := queueKey{p.Queue.Region, p.Queue.Account, p.Queue.Name}
	if _, ok := s.queues[k]; ok {
		return baton.ErrExists
	}
	if _, ok := s.byID[p.Queue.ID]; ok {
		return baton.ErrExists
	}
	s.queues[k] = qs
	s.byID[p.Queue.ID] = qs
	return nil
}

// MessageRestore adds a copy of m, lease state and all, with the durable
// store's key (see SetKey), at the end of its queue's order: restore a
// queue's messages in the order MessageSend and MessageMove added them,
// which is the order of each FIFO or fair group. It returns
// baton.ErrNotFound if the queue does not exist.
func (s *Store) MessageRestore(queueID uint64, m *baton.Message, key uint64) error {
	qs := s.lookupID(queueID)
	if qs == nil {
		return baton.ErrNotFound
	}
	qs.mu.Lock()
	defer qs.mu.Unlock()
	r := qs.newEntry(m)
	qs.es.at(r).key = key
	qs.add(r, m.ID, m.GroupID)
	return nil
}

// SetKey records key, the durable store's own for message id of queue
// queueID (where it keeps the message), in the message's entry, so that a
// durable store built on this one keeps no map of its own: Key reads it
// back, MessageRestore sets it, MessageMove carries it to the target queue
// and ExpiredFunc is told it. It reports whether the queue holds the
// message.
func (s *Store) SetKey(queueID uint64, id string, key uint64) bool {
	return s.onEntry(queueID, id, func(e *entry) { e.key = key })
}

// Key returns the key SetKey recorded for message id of queue queueID (0
// if none was), and whether the queue holds the message.
func (s *Store) Key(queueID uint64, id string) (uint64, bool) {
	var key uint64
	ok := s.onEntry(queueID, id, func(e *entry) { key = e.key })
	return key, ok
}

// onEntry calls f, under the queue's lock, with the entry of message id
// of queue queueID, and reports whether there is one.
func (s *Store) onEntry(queueID uint64, id string, f func(e *entry)) bool {
	qs := s.lookupID(queueID)
	if qs == nil {
		return false
	}
	qs.mu.Lock()
	defer qs.mu.Unlock()
	r := qs.ids.get(&qs.es, id)
	if r != none {
		f(qs.es.at(r))
	}
	return r != none
}

// TombstoneRestore remembers that the queue region/account/name was
// deleted at deletedAt, for QueueCreate's DeletedCutoff.
func (s *Store) TombstoneRestore(region, account, name string, deletedAt time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deleted[queueKey{region, account, name}] = deletedAt
}

// parseSeq undoes formatSeq; "" is a queue that never numbered a message.
func parseSeq(s string) (uint64, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil || n < seqBase {
		return 0, fmt.Errorf("memstore: sequence number %q was not issued by memstore", s)
	}
	return n - seqBase, nil
}
