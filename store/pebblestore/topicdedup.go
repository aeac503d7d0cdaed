package pebblestore

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/baton-sqs/baton"
)

// kindPublish + region, account, topic, key (length-prefixed): a FIFO
// topic's publish record (publishRecord), kept for deduplication. A record
// is deleted when a later publish of its topic finds it expired, or with
// its topic.
const kindPublish = 'V'

// publishRecord is a baton.PublishRecord as the log keeps it.
type publishRecord struct {
	Region         string `json:"r"`
	Account        string `json:"a"`
	Topic          string `json:"tp"`
	Key            string `json:"k"`
	MessageID      string `json:"m"`
	SequenceNumber string `json:"s"`
	At             int64  `json:"at"` // Unix nanoseconds
}

func publishKey(region, account, topic, key string) []byte {
	return namedKey(kindPublish, region, account, topic, key)
}

// TopicDedupGet answers from memory, once what it saw is committed.
func (s *Store) TopicDedupGet(ctx context.Context, region, account, topic, key string, cutoff time.Time) (*baton.PublishRecord, error) {
	r, err := s.index.TopicDedupGet(ctx, region, account, topic, key, cutoff)
	return r, s.committedOr(ctx, err)
}

// TopicDedupPut records r, and deletes the expired records it finds, in
// one change; it returns once the change is committed.
func (s *Store) TopicDedupPut(ctx context.Context, region, account, topic string, r *baton.PublishRecord, cutoff time.Time) (*baton.PublishRecord, error) {
	val, err := json.Marshal(publishRecord{Region: region, Account: account, Topic: topic, Key: r.Key, MessageID: r.MessageID,
		SequenceNumber: r.SequenceNumber, At: encTime(r.At)})
	if err != nil {
		return nil, fmt.Errorf("pebblestore: encode publish record: %w", err)
	}
	var old *baton.PublishRecord
	err = s.topicWrite(ctx, func() (change, error) {
		var pruned []string
		var err error
		old, pruned, err = s.index.TopicDedupPutPruning(ctx, region, account, topic, r, cutoff)
		var cs changes
		if len(pruned) > 0 {
			d := &drop{}
			for _, k := range pruned {
				d.keys = append(d.keys, publishKey(region, account, topic, k))
			}
			cs = append(cs, d)
		}
		if err == nil {
			cs = append(cs, &put{key: publishKey(region, account, topic, r.Key), val: val})
		}
		if len(cs) == 0 {
			return nil, err
		}
		return cs, err
	})
	return old, err
}

// dropRange deletes the keys in [start, end).
type dropRange struct{ start, end []byte }

func (c *dropRange) apply(t *txn) error { return t.b.DeleteRange(c.start, c.end, nil) }

// publishRecordsDrop deletes every publish record of a topic: their keys
// begin with the topic's parts, which no other topic's keys begin with.
func publishRecordsDrop(region, account, topic string) change {
	start := namedKey(kindPublish, region, account, topic)
	return &dropRange{start: start, end: prefixEnd(start)}
}

// prefixEnd is the least key above every key that begins with prefix.
func prefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	for len(end) > 0 && end[len(end)-1] == 0xff {
		end = end[:len(end)-1]
	}
	if len(end) == 0 {
		return nil // no bound: not reached, a key begins with its kind
	}
	end[len(end)-1]++
	return end
}

// changes applies several changes in order.
type changes []change

func (cs changes) apply(t *txn) error {
	for _, c := range cs {
		if err := c.apply(t); err != nil {
			return err
		}
	}
	return nil
}

// loadPublishRecords puts the log's publish records into the index, after
// their topics, in the order they were made and with no cutoff: the index
// forgets none of them until a new record of their topic finds them
// expired.
func (s *Store) loadPublishRecords(ctx context.Context) error {
	var rs []publishRecord
	lo, hi := span(kindPublish)
	err := s.scan(lo, hi, func(k, v []byte) error {
		var r publishRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("publish record %q: %w", k, err)
		}
		rs = append(rs, r)
		return nil
	})
	if err != nil {
		return fmt.Errorf("load publish records: %w", err)
	}
	// In the order they were made, the order the index forgets them in.
	slices.SortStableFunc(rs, func(a, b publishRecord) int { return cmp.Compare(a.At, b.At) })
	for _, r := range rs {
		_, _, err := s.index.TopicDedupPutPruning(ctx, r.Region, r.Account, r.Topic,
			&baton.PublishRecord{Key: r.Key, MessageID: r.MessageID, SequenceNumber: r.SequenceNumber, At: decTime(r.At)}, time.Time{})
		if errors.Is(err, baton.ErrNotFound) {
			return fmt.Errorf("load publish records: the record of topic %q key %q: its topic is not in the log", r.Topic, r.Key)
		}
		if err != nil && !errors.Is(err, baton.ErrExists) {
			return fmt.Errorf("load publish records: %w", err)
		}
	}
	return nil
}

// TopicSequenceNext hands out the topic's next SequenceNumber from memory:
// no other server shares the store, and after a restart the numbers go on
// from the clock, which has moved on.
func (s *Store) TopicSequenceNext(ctx context.Context, region, account, topic string, atLeast uint64) (uint64, error) {
	n, err := s.index.TopicSequenceNext(ctx, region, account, topic, atLeast)
	return n, s.committedOr(ctx, err)
}
