package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
)

// testTopicDedup: a FIFO topic's publish records are kept per topic and
// key, a second record of a live key is refused with the first, an
// expired one is replaced, and a topic's records go with it.
func testTopicDedup(t *testing.T, s TopicsStore) {
	ctx := context.Background()
	if _, err := s.TopicDedupPut(ctx, Region, Account, "missing.fifo", &baton.PublishRecord{Key: "k", At: at(0)}, at(-1)); !errors.Is(err, baton.ErrNotFound) {
		t.Errorf("TopicDedupPut on a missing topic: got %v, want ErrNotFound", err)
	}
	MustCreateTopic(t, s, "t.fifo", map[string]string{"FifoTopic": "true"})
	MustCreateTopic(t, s, "u.fifo", map[string]string{"FifoTopic": "true"})
	window := 5 * time.Minute
	first := &baton.PublishRecord{Key: "k", MessageID: "m1", SequenceNumber: "10000000000000000001", At: at(0)}
	if old, err := s.TopicDedupPut(ctx, Region, Account, "t.fifo", first, at(0).Add(-window)); err != nil || old != nil {
		t.Fatalf("first TopicDedupPut: %v, %v", old, err)
	}
	got, err := s.TopicDedupGet(ctx, Region, Account, "t.fifo", "k", at(0).Add(-window))
	if err != nil || !samePublish(got, first) {
		t.Errorf("TopicDedupGet: %+v, %v, want %+v", got, err, first)
	}
	// Another topic, another key: apart.
	if _, err := s.TopicDedupGet(ctx, Region, Account, "u.fifo", "k", at(0).Add(-window)); !errors.Is(err, baton.ErrNotFound) {
		t.Errorf("TopicDedupGet of another topic: %v, want ErrNotFound", err)
	}
	if _, err := s.TopicDedupGet(ctx, Region, Account, "t.fifo", "other", at(0).Add(-window)); !errors.Is(err, baton.ErrNotFound) {
		t.Errorf("TopicDedupGet of another key: %v, want ErrNotFound", err)
	}
	if old, err := s.TopicDedupPut(ctx, Region, Account, "u.fifo", &baton.PublishRecord{Key: "k", MessageID: "u1", At: at(1)}, at(1).Add(-window)); err != nil || old != nil {
		t.Errorf("TopicDedupPut of the same key on another topic: %v, %v", old, err)
	}
	// A second record within the window is refused with the first.
	second := &baton.PublishRecord{Key: "k", MessageID: "m2", SequenceNumber: "10000000000000000002", At: at(2)}
	old, err := s.TopicDedupPut(ctx, Region, Account, "t.fifo", second, at(2).Add(-window))
	if !errors.Is(err, baton.ErrExists) || !samePublish(old, first) {
		t.Errorf("second TopicDedupPut within the window: %+v, %v, want %+v and ErrExists", old, err, first)
	}
	// Past the window, the key is free again.
	later := at(0).Add(window + time.Second)
	if _, err := s.TopicDedupGet(ctx, Region, Account, "t.fifo", "k", later.Add(-window)); !errors.Is(err, baton.ErrNotFound) {
		t.Errorf("TopicDedupGet past the window: %v, want ErrNotFound", err)
	}
	third := &baton.PublishRecord{Key: "k", MessageID: "m3", SequenceNumber: "10000000000000000003", At: later}
	if old, err := s.TopicDedupPut(ctx, Region, Account, "t.fifo", third, later.Add(-window)); err != nil || old != nil {
		t.Errorf("TopicDedupPut past the window: %v, %v", old, err)
	}
	if got, err := s.TopicDedupGet(ctx, Region, Account, "t.fifo", "k", later.Add(-window)); err != nil || !samePublish(got, third) {
		t.Errorf("TopicDedupGet of the new record: %+v, %v, want %+v", got, err, third)
	}
	// A deleted topic's records go with it.
	if err := s.TopicDelete(ctx, Region, Account, "t.fifo"); err != nil {
		t.Fatal(err)
	}
	MustCreateTopic(t, s, "t.fifo", map[string]string{"FifoTopic": "true"})
	if _, err := s.TopicDedupGet(ctx, Region, Account, "t.fifo", "k", later.Add(-window)); !errors.Is(err, baton.ErrNotFound) {
		t.Errorf("TopicDedupGet after the topic was deleted and created again: %v, want ErrNotFound", err)
	}
}

// samePublish compares records, their times to the microsecond (as
// PostgreSQL keeps them).
func samePublish(a, b *baton.PublishRecord) bool {
	return a != nil && b != nil && a.Key == b.Key && a.MessageID == b.MessageID && a.SequenceNumber == b.SequenceNumber &&
		a.At.Truncate(time.Microsecond).Equal(b.At.Truncate(time.Microsecond))
}

// testTopicSequence: a FIFO topic's SequenceNumbers come from one count
// per topic, each the larger of the one asked for and one above the last,
// as large as a SequenceNumber gets; the count goes with its topic.
func testTopicSequence(t *testing.T, s TopicsStore) {
	ctx := context.Background()
	if _, err := s.TopicSequenceNext(ctx, Region, Account, "missing.fifo", 1); !errors.Is(err, baton.ErrNotFound) {
		t.Errorf("TopicSequenceNext on a missing topic: got %v, want ErrNotFound", err)
	}
	MustCreateTopic(t, s, "t.fifo", map[string]string{"FifoTopic": "true"})
	MustCreateTopic(t, s, "u.fifo", map[string]string{"FifoTopic": "true"})
	const big = 18_000_000_000_000_000_000 // 20 digits, beyond PostgreSQL's bigint
	next := func(topic string, atLeast uint64) uint64 {
		t.Helper()
		n, err := s.TopicSequenceNext(ctx, Region, Account, topic, atLeast)
		if err != nil {
			t.Fatalf("TopicSequenceNext(%s, %d): %v", topic, atLeast, err)
		}
		return n
	}
	for _, c := range []struct {
		topic         string
		atLeast, want uint64
	}{
		{"t.fifo", big, big},         // the first: as asked
		{"t.fifo", big + 5, big + 5}, // above the last: as asked
		{"t.fifo", big - 9, big + 6}, // below the last: one above it
		{"t.fifo", big + 6, big + 7}, // the last: one above it
		{"u.fifo", 7, 7},             // another topic: a count of its own
	} {
		if got := next(c.topic, c.atLeast); got != c.want {
			t.Errorf("TopicSequenceNext(%s, %d) = %d, want %d", c.topic, c.atLeast, got, c.want)
		}
	}
	if err := s.TopicDelete(ctx, Region, Account, "t.fifo"); err != nil {
		t.Fatal(err)
	}
	MustCreateTopic(t, s, "t.fifo", map[string]string{"FifoTopic": "true"})
	if got := next("t.fifo", 3); got != 3 {
		t.Errorf("TopicSequenceNext after the topic was deleted and created again = %d, want 3", got)
	}
}
