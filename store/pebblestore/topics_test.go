package pebblestore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/store/storetest"
)

func TestTopics(t *testing.T) {
	t.Parallel()
	storetest.RunTopics(t, func(t *testing.T) storetest.TopicsStore { return MustOpen(t, t.TempDir()) })
}

// TestTopicsSurviveReopen: topics and subscriptions, and their changes and
// deletions, are in the log: a store opened again on the directory has
// exactly what the first had when it closed.
func TestTopicsSurviveReopen(t *testing.T) {
	t.Parallel()
	ctx, dir := context.Background(), t.TempDir()
	s := MustOpen(t, dir)
	kept := storetest.MustCreateTopic(t, s, "kept", map[string]string{"DisplayName": "before"})
	storetest.MustCreateTopic(t, s, "gone", nil)
	storetest.MustSubscribe(t, s, "gone", "g1", "arn:aws:sqs:us-east-1:000000000000:q")
	sub := storetest.MustSubscribe(t, s, "kept", "k1", "arn:aws:sqs:us-east-1:000000000000:q")
	storetest.MustSubscribe(t, s, "kept", "k2", "arn:aws:sqs:us-east-1:000000000000:q2")
	key, err := s.SigningKey(ctx, func() ([]byte, error) { return []byte("the key"), nil })
	if err != nil || string(key) != "the key" {
		t.Fatalf("SigningKey = %q, %v", key, err)
	}
	kept.Attributes = map[string]string{"DisplayName": "after"}
	kept.Tags = map[string]string{"team": "a"}
	if err := s.TopicUpdate(ctx, kept); err != nil {
		t.Fatal(err)
	}
	sub.Attributes = map[string]string{"RawMessageDelivery": "false"}
	if err := s.SubscriptionUpdate(ctx, sub); err != nil {
		t.Fatal(err)
	}
	if err := s.SubscriptionDelete(ctx, storetest.Region, storetest.Account, "kept", "k2"); err != nil {
		t.Fatal(err)
	}
	if err := s.TopicDelete(ctx, storetest.Region, storetest.Account, "gone"); err != nil {
		t.Fatal(err)
	}
	mustClose(t, s)

	s = MustOpen(t, dir)
	defer mustClose(t, s)
	key, err = s.SigningKey(ctx, func() ([]byte, error) { return []byte("another key"), nil })
	if err != nil || string(key) != "the key" {
		t.Errorf("SigningKey after reopen = %q, %v; want the first key", key, err)
	}
	got, err := s.TopicGet(ctx, storetest.Region, storetest.Account, "kept")
	if err != nil {
		t.Fatalf("kept topic after reopen: %v", err)
	}
	if got.Attributes["DisplayName"] != "after" || got.Tags["team"] != "a" || !got.CreatedAt.Equal(kept.CreatedAt) {
		t.Errorf("kept topic after reopen: %+v", got)
	}
	if _, err := s.TopicGet(ctx, storetest.Region, storetest.Account, "gone"); !errors.Is(err, baton.ErrNotFound) {
		t.Errorf("deleted topic after reopen: %v, want ErrNotFound", err)
	}
	subs, err := s.SubscriptionList(ctx, baton.SubscriptionListParams{Region: storetest.Region, Account: storetest.Account})
	if err != nil {
		t.Fatal(err)
	}
	if len(subs) != 1 || subs[0].ID != "k1" || subs[0].Attributes["RawMessageDelivery"] != "false" ||
		subs[0].Endpoint != sub.Endpoint || subs[0].Principal != sub.Principal || !subs[0].CreatedAt.Equal(sub.CreatedAt) {
		t.Errorf("subscriptions after reopen: %+v", subs)
	}
}

// TestPublishRecordsSurviveReopen: a FIFO topic's publish records are in
// the log; one a later record found expired is deleted from it, and so
// are a deleted topic's (or the store would not open again).
func TestPublishRecordsSurviveReopen(t *testing.T) {
	t.Parallel()
	ctx, dir := context.Background(), t.TempDir()
	s := MustOpen(t, dir)
	storetest.MustCreateTopic(t, s, "t.fifo", nil)
	storetest.MustCreateTopic(t, s, "gone.fifo", nil)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	window := 5 * time.Minute
	put := func(topic, key, id string, at time.Time) {
		t.Helper()
		r := &baton.PublishRecord{Key: key, MessageID: id, SequenceNumber: "1", At: at}
		if _, err := s.TopicDedupPut(ctx, storetest.Region, storetest.Account, topic, r, at.Add(-window)); err != nil {
			t.Fatalf("TopicDedupPut %s %s: %v", topic, key, err)
		}
	}
	put("t.fifo", "old", "m-old", base)
	put("gone.fifo", "k", "m-gone", base)
	put("t.fifo", "new", "m-new", base.Add(window+time.Second)) // finds "old" expired
	put("t.fifo", "newer", "m-newer", base.Add(window+2*time.Second))
	if err := s.TopicDelete(ctx, storetest.Region, storetest.Account, "gone.fifo"); err != nil {
		t.Fatal(err)
	}
	mustClose(t, s)

	s = MustOpen(t, dir)
	defer mustClose(t, s)
	long := base.Add(-time.Hour) // a cutoff that would show every record kept
	for key, id := range map[string]string{"new": "m-new", "newer": "m-newer"} {
		if r, err := s.TopicDedupGet(ctx, storetest.Region, storetest.Account, "t.fifo", key, long); err != nil || r.MessageID != id {
			t.Errorf("record %s after reopen: %+v, %v", key, r, err)
		}
	}
	if _, err := s.TopicDedupGet(ctx, storetest.Region, storetest.Account, "t.fifo", "old", long); !errors.Is(err, baton.ErrNotFound) {
		t.Errorf("expired record after reopen: %v, want ErrNotFound (deleted from the log)", err)
	}
	storetest.MustCreateTopic(t, s, "gone.fifo", nil)
	if _, err := s.TopicDedupGet(ctx, storetest.Region, storetest.Account, "gone.fifo", "k", long); !errors.Is(err, baton.ErrNotFound) {
		t.Errorf("a deleted topic's record after reopen: %v, want ErrNotFound", err)
	}
}
