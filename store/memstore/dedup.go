package memstore

import (
	"context"
	"time"

	"github.com/baton-sqs/baton"
)

// dedupRecords are one FIFO topic's publish records: by key, and the keys
// in the order they were recorded, so that the expired ones are dropped
// from the front.
type dedupRecords struct {
	byKey map[string]*baton.PublishRecord
	order []publishEntry
}

// publishEntry is one recording: the key and the time of its record then.
type publishEntry struct {
	key string
	at  time.Time
}

// TopicDedupGet returns a copy of the record of key made after cutoff.
func (s *Store) TopicDedupGet(_ context.Context, region, account, topic, key string, cutoff time.Time) (*baton.PublishRecord, error) {
	ts := &s.topics
	ts.mu.RLock()
	defer ts.mu.RUnlock()
	d := ts.dedup[queueKey{region, account, topic}]
	if d == nil {
		return nil, baton.ErrNotFound
	}
	r, ok := d.byKey[key]
	if !ok || !r.At.After(cutoff) {
		return nil, baton.ErrNotFound
	}
	c := *r
	return &c, nil
}

// TopicDedupPut records r as baton.TopicStore promises.
func (s *Store) TopicDedupPut(ctx context.Context, region, account, topic string, r *baton.PublishRecord, cutoff time.Time) (*baton.PublishRecord, error) {
	old, _, err := s.TopicDedupPutPruning(ctx, region, account, topic, r, cutoff)
	return old, err
}

// TopicDedupPutPruning is TopicDedupPut that also returns the keys whose
// records it forgot, expired at cutoff: the embedded store deletes them
// from its log.
func (s *Store) TopicDedupPutPruning(_ context.Context, region, account, topic string, r *baton.PublishRecord,
	cutoff time.Time) (*baton.PublishRecord, []string, error) {
	ts := &s.topics
	ts.mu.Lock()
	defer ts.mu.Unlock()
	k := queueKey{region, account, topic}
	if _, ok := ts.topics[k]; !ok {
		return nil, nil, baton.ErrNotFound
	}
	if ts.dedup == nil {
		ts.dedup = make(map[queueKey]*dedupRecords)
	}
	d := ts.dedup[k]
	if d == nil {
		d = &dedupRecords{byKey: make(map[string]*baton.PublishRecord)}
		ts.dedup[k] = d
	}
	pruned := d.prune(cutoff)
	if old, ok := d.byKey[r.Key]; ok && old.At.After(cutoff) {
		c := *old
		return &c, pruned, baton.ErrExists
	}
	c := *r
	d.byKey[r.Key] = &c
	d.order = append(d.order, publishEntry{key: r.Key, at: r.At})
	return nil, pruned, nil
}

// prune forgets the records made at or before cutoff and returns their
// keys.
func (d *dedupRecords) prune(cutoff time.Time) []string {
	var pruned []string
	n := 0
	for _, e := range d.order {
		if e.at.After(cutoff) {
			break
		}
		n++
		if r, ok := d.byKey[e.key]; ok && r.At.Equal(e.at) {
			delete(d.byKey, e.key)
			pruned = append(pruned, e.key)
		}
	}
	d.order = d.order[n:]
	return pruned
}
