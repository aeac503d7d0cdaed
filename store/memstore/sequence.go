package memstore

import (
	"context"

	"github.com/baton-sqs/baton"
)

// TopicSequenceNext hands out the topic's next SequenceNumber as
// baton.TopicStore promises; the handles of a Cluster share the count.
func (s *Store) TopicSequenceNext(_ context.Context, region, account, topic string, atLeast uint64) (uint64, error) {
	ts := &s.topics
	ts.mu.Lock()
	defer ts.mu.Unlock()
	k := queueKey{region, account, topic}
	if _, ok := ts.topics[k]; !ok {
		return 0, baton.ErrNotFound
	}
	if ts.sequences == nil {
		ts.sequences = make(map[queueKey]uint64)
	}
	n := max(atLeast, ts.sequences[k]+1)
	ts.sequences[k] = n
	return n, nil
}
