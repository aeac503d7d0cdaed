package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
)

// TopicsStore is a Store that also keeps SNS topics.
type TopicsStore interface {
	baton.Store
	baton.TopicStore
}

// RunTopics runs the conformance suite of baton.TopicStore against the
// stores open returns, as Run does for baton.Store: each subtest opens an
// empty store of its own, in parallel with the others, and RunTopics closes
// it when the subtest ends.
func RunTopics(t *testing.T, open func(t *testing.T) TopicsStore) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s TopicsStore)
	}{
		{"TopicCreateGet", testTopicCreateGet},
		{"TopicList", testTopicList},
		{"TopicUpdate", testTopicUpdate},
		{"TopicDeleteTakesSubscriptions", testTopicDelete},
		{"SubscriptionCreateGet", testSubscriptionCreateGet},
		{"SubscriptionList", testSubscriptionList},
		{"SubscriptionUpdateDelete", testSubscriptionUpdateDelete},
		{"CopiesAreApart", testTopicCopies},
		{"SigningKey", testSigningKey},
		{"TopicDedup", testTopicDedup},
		{"TopicSequence", testTopicSequence},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			if s == nil {
				t.Fatal("open returned a nil store")
			}
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("close store: %v", err)
				}
			})
			tc.fn(t, s)
		})
	}
}

// MustCreateTopic stores a topic of Region and Account named name, with
// attrs, and fails the test on error.
func MustCreateTopic(tb testing.TB, s baton.TopicStore, name string, attrs map[string]string) *baton.Topic {
	tb.Helper()
	t := &baton.Topic{Region: Region, Account: Account, Name: name, Attributes: attrs, CreatedAt: at(0)}
	if err := s.TopicCreate(context.Background(), t); err != nil {
		tb.Fatalf("create topic %s: %v", name, err)
	}
	return t
}

// MustSubscribe stores a confirmed sqs subscription of topic and fails the
// test on error.
func MustSubscribe(tb testing.TB, s baton.TopicStore, topic, id, endpoint string) *baton.Subscription {
	tb.Helper()
	sub := &baton.Subscription{Region: Region, Account: Account, Topic: topic, ID: id, Protocol: "sqs", Endpoint: endpoint,
		Owner: Account, Principal: "arn:aws:iam::" + Account + ":user/test", Attributes: map[string]string{"RawMessageDelivery": "true"},
		CreatedAt: at(0)}
	if err := s.SubscriptionCreate(context.Background(), sub); err != nil {
		tb.Fatalf("subscribe %s to %s: %v", id, topic, err)
	}
	return sub
}

func testTopicCreateGet(t *testing.T, s TopicsStore) {
	ctx := context.Background()
	want := MustCreateTopic(t, s, "orders", map[string]string{"DisplayName": "Orders"})
	want.Tags = nil
	got, err := s.TopicGet(ctx, Region, Account, "orders")
	if err != nil {
		t.Fatalf("TopicGet: %v", err)
	}
	checkTopic(t, got, want)
	if err := s.TopicCreate(ctx, &baton.Topic{Region: Region, Account: Account, Name: "orders"}); !errors.Is(err, baton.ErrExists) {
		t.Errorf("second TopicCreate: got %v, want ErrExists", err)
	}
	// A topic's identity is (region, account, name).
	for _, other := range []*baton.Topic{
		{Region: OtherRegion, Account: Account, Name: "orders"},
		{Region: Region, Account: OtherAccount, Name: "orders"},
	} {
		if _, err := s.TopicGet(ctx, other.Region, other.Account, other.Name); !errors.Is(err, baton.ErrNotFound) {
			t.Errorf("TopicGet(%s, %s) before create: got %v, want ErrNotFound", other.Region, other.Account, err)
		}
		if err := s.TopicCreate(ctx, other); err != nil {
			t.Errorf("TopicCreate(%s, %s): %v", other.Region, other.Account, err)
		}
	}
}

func testTopicList(t *testing.T, s TopicsStore) {
	ctx := context.Background()
	for _, n := range []string{"c", "a", "b", "d"} {
		MustCreateTopic(t, s, n, nil)
	}
	if err := s.TopicCreate(ctx, &baton.Topic{Region: OtherRegion, Account: Account, Name: "e"}); err != nil {
		t.Fatal(err)
	}
	if err := s.TopicCreate(ctx, &baton.Topic{Region: Region, Account: OtherAccount, Name: "f"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		p    baton.TopicListParams
		want []string
	}{
		{baton.TopicListParams{Region: Region, Account: Account}, []string{"a", "b", "c", "d"}},
		{baton.TopicListParams{Region: Region, Account: Account, Limit: 2}, []string{"a", "b"}},
		{baton.TopicListParams{Region: Region, Account: Account, After: "b", Limit: 10}, []string{"c", "d"}},
		{baton.TopicListParams{Region: OtherRegion, Account: Account}, []string{"e"}},
		{baton.TopicListParams{Region: Region, Account: OtherAccount}, []string{"f"}},
		// Every region's, eu-central-1 before us-east-1.
		{baton.TopicListParams{Account: Account}, []string{"e", "a", "b", "c", "d"}},
	} {
		ts, err := s.TopicList(ctx, tc.p)
		if err != nil {
			t.Fatalf("TopicList(%+v): %v", tc.p, err)
		}
		var got []string
		for _, tp := range ts {
			got = append(got, tp.Name)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("TopicList(%+v) = %v, want %v", tc.p, got, tc.want)
		}
	}
}

func testTopicUpdate(t *testing.T, s TopicsStore) {
	ctx := context.Background()
	tp := MustCreateTopic(t, s, "t", map[string]string{"DisplayName": "x", "Policy": "{}"})
	tp.Attributes = map[string]string{"DisplayName": "y"}
	tp.Tags = map[string]string{"team": "a"}
	if err := s.TopicUpdate(ctx, tp); err != nil {
		t.Fatalf("TopicUpdate: %v", err)
	}
	got, err := s.TopicGet(ctx, Region, Account, "t")
	if err != nil {
		t.Fatal(err)
	}
	checkTopic(t, got, tp)
	if err := s.TopicUpdate(ctx, &baton.Topic{Region: Region, Account: Account, Name: "gone"}); !errors.Is(err, baton.ErrNotFound) {
		t.Errorf("TopicUpdate of a missing topic: got %v, want ErrNotFound", err)
	}
}

func testTopicDelete(t *testing.T, s TopicsStore) {
	ctx := context.Background()
	MustCreateTopic(t, s, "t", nil)
	MustCreateTopic(t, s, "keep", nil)
	MustSubscribe(t, s, "t", "s1", "arn:aws:sqs:us-east-1:000000000000:q")
	MustSubscribe(t, s, "keep", "s2", "arn:aws:sqs:us-east-1:000000000000:q")
	if err := s.TopicDelete(ctx, Region, Account, "t"); err != nil {
		t.Fatalf("TopicDelete: %v", err)
	}
	if err := s.TopicDelete(ctx, Region, Account, "t"); !errors.Is(err, baton.ErrNotFound) {
		t.Errorf("second TopicDelete: got %v, want ErrNotFound", err)
	}
	if _, err := s.SubscriptionGet(ctx, Region, Account, "t", "s1"); !errors.Is(err, baton.ErrNotFound) {
		t.Errorf("subscription of a deleted topic: got %v, want ErrNotFound", err)
	}
	// Created again, the topic has no subscription.
	MustCreateTopic(t, s, "t", nil)
	subs, err := s.SubscriptionList(ctx, baton.SubscriptionListParams{Region: Region, Account: Account})
	if err != nil {
		t.Fatal(err)
	}
	if len(subs) != 1 || subs[0].ID != "s2" {
		t.Errorf("subscriptions after delete and create: %v, want only s2", subIDs(subs))
	}
}

func testSubscriptionCreateGet(t *testing.T, s TopicsStore) {
	ctx := context.Background()
	sub := &baton.Subscription{Region: Region, Account: Account, Topic: "missing", ID: "x", Protocol: "sqs"}
	if err := s.SubscriptionCreate(ctx, sub); !errors.Is(err, baton.ErrNotFound) {
		t.Errorf("SubscriptionCreate on a missing topic: got %v, want ErrNotFound", err)
	}
	MustCreateTopic(t, s, "t", nil)
	want := MustSubscribe(t, s, "t", "s1", "arn:aws:sqs:us-east-1:000000000000:q")
	got, err := s.SubscriptionGet(ctx, Region, Account, "t", "s1")
	if err != nil {
		t.Fatalf("SubscriptionGet: %v", err)
	}
	checkSubscription(t, got, want)
	if err := s.SubscriptionCreate(ctx, want); !errors.Is(err, baton.ErrExists) {
		t.Errorf("second SubscriptionCreate: got %v, want ErrExists", err)
	}
	// One subscription per protocol and endpoint, whatever its ID.
	twin := *want
	twin.ID = "s9"
	if err := s.SubscriptionCreate(ctx, &twin); !errors.Is(err, baton.ErrExists) {
		t.Errorf("SubscriptionCreate of the same endpoint under another ID: got %v, want ErrExists", err)
	}
	twin.Endpoint = "arn:aws:sqs:us-east-1:000000000000:other"
	if err := s.SubscriptionCreate(ctx, &twin); err != nil {
		t.Errorf("SubscriptionCreate of another endpoint: %v", err)
	}
	pending := &baton.Subscription{Region: Region, Account: Account, Topic: "t", ID: "s2", Protocol: "https",
		Endpoint: "https://example.com/hook", Owner: Account, Pending: true, CreatedAt: at(0)}
	if err := s.SubscriptionCreate(ctx, pending); err != nil {
		t.Fatal(err)
	}
	got, err = s.SubscriptionGet(ctx, Region, Account, "t", "s2")
	if err != nil {
		t.Fatal(err)
	}
	checkSubscription(t, got, pending)
}

func testSubscriptionList(t *testing.T, s TopicsStore) {
	ctx := context.Background()
	MustCreateTopic(t, s, "b", nil)
	MustCreateTopic(t, s, "a", nil)
	for _, p := range [][2]string{{"b", "2"}, {"a", "9"}, {"b", "1"}, {"a", "3"}} {
		MustSubscribe(t, s, p[0], p[1], "arn:aws:sqs:us-east-1:000000000000:q"+p[1])
	}
	if err := s.TopicCreate(ctx, &baton.Topic{Region: OtherRegion, Account: Account, Name: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SubscriptionCreate(ctx, &baton.Subscription{Region: OtherRegion, Account: Account, Topic: "a", ID: "0", Protocol: "sqs"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		p    baton.SubscriptionListParams
		want []string
	}{
		{baton.SubscriptionListParams{Region: Region, Account: Account}, []string{"a/3", "a/9", "b/1", "b/2"}},
		{baton.SubscriptionListParams{Region: Region, Account: Account, Limit: 3}, []string{"a/3", "a/9", "b/1"}},
		{baton.SubscriptionListParams{Region: Region, Account: Account, AfterTopic: "a", AfterID: "9"}, []string{"b/1", "b/2"}},
		{baton.SubscriptionListParams{Region: Region, Account: Account, Topic: "b"}, []string{"b/1", "b/2"}},
		{baton.SubscriptionListParams{Region: Region, Account: Account, Topic: "b", AfterTopic: "b", AfterID: "1"}, []string{"b/2"}},
		{baton.SubscriptionListParams{Region: OtherRegion, Account: Account}, []string{"a/0"}},
		{baton.SubscriptionListParams{Region: Region, Account: OtherAccount}, nil},
	} {
		subs, err := s.SubscriptionList(ctx, tc.p)
		if err != nil {
			t.Fatalf("SubscriptionList(%+v): %v", tc.p, err)
		}
		if got := subIDs(subs); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("SubscriptionList(%+v) = %v, want %v", tc.p, got, tc.want)
		}
	}
}

func testSubscriptionUpdateDelete(t *testing.T, s TopicsStore) {
	ctx := context.Background()
	MustCreateTopic(t, s, "t", nil)
	sub := MustSubscribe(t, s, "t", "s1", "arn:aws:sqs:us-east-1:000000000000:q")
	sub.Pending = true
	sub.Attributes = map[string]string{"FilterPolicy": `{"k":["v"]}`}
	if err := s.SubscriptionUpdate(ctx, sub); err != nil {
		t.Fatalf("SubscriptionUpdate: %v", err)
	}
	got, err := s.SubscriptionGet(ctx, Region, Account, "t", "s1")
	if err != nil {
		t.Fatal(err)
	}
	checkSubscription(t, got, sub)
	if err := s.SubscriptionDelete(ctx, Region, Account, "t", "s1"); err != nil {
		t.Fatalf("SubscriptionDelete: %v", err)
	}
	if err := s.SubscriptionDelete(ctx, Region, Account, "t", "s1"); !errors.Is(err, baton.ErrNotFound) {
		t.Errorf("second SubscriptionDelete: got %v, want ErrNotFound", err)
	}
	if err := s.SubscriptionUpdate(ctx, sub); !errors.Is(err, baton.ErrNotFound) {
		t.Errorf("SubscriptionUpdate after delete: got %v, want ErrNotFound", err)
	}
	if _, err := s.SubscriptionGet(ctx, Region, Account, "t", "s1"); !errors.Is(err, baton.ErrNotFound) {
		t.Errorf("SubscriptionGet after delete: got %v, want ErrNotFound", err)
	}
}

// testTopicCopies: what a caller does to a topic or subscription it gave
// or got does not change what the store keeps.
func testTopicCopies(t *testing.T, s TopicsStore) {
	ctx := context.Background()
	tp := MustCreateTopic(t, s, "t", map[string]string{"DisplayName": "x"})
	tp.Attributes["DisplayName"] = "changed"
	got, err := s.TopicGet(ctx, Region, Account, "t")
	if err != nil {
		t.Fatal(err)
	}
	got.Attributes["DisplayName"] = "changed too"
	again, err := s.TopicGet(ctx, Region, Account, "t")
	if err != nil {
		t.Fatal(err)
	}
	if v := again.Attributes["DisplayName"]; v != "x" {
		t.Errorf("DisplayName = %q after callers changed their copies, want x", v)
	}
	sub := MustSubscribe(t, s, "t", "s1", "arn:aws:sqs:us-east-1:000000000000:q")
	sub.Attributes["RawMessageDelivery"] = "false"
	gotSub, err := s.SubscriptionGet(ctx, Region, Account, "t", "s1")
	if err != nil {
		t.Fatal(err)
	}
	if v := gotSub.Attributes["RawMessageDelivery"]; v != "true" {
		t.Errorf("RawMessageDelivery = %q after the caller changed its copy, want true", v)
	}
}

func checkTopic(tb testing.TB, got, want *baton.Topic) {
	tb.Helper()
	if got.Region != want.Region || got.Account != want.Account || got.Name != want.Name || !got.CreatedAt.Equal(want.CreatedAt) ||
		!equalMaps(got.Attributes, want.Attributes) || !equalMaps(got.Tags, want.Tags) {
		tb.Errorf("topic = %+v, want %+v", got, want)
	}
}

func checkSubscription(tb testing.TB, got, want *baton.Subscription) {
	tb.Helper()
	g, w := *got, *want
	g.Attributes, w.Attributes = nil, nil
	g.CreatedAt, w.CreatedAt = time.Time{}, time.Time{}
	if !reflect.DeepEqual(g, w) || !got.CreatedAt.Equal(want.CreatedAt) || !equalMaps(got.Attributes, want.Attributes) {
		tb.Errorf("subscription = %+v, want %+v", got, want)
	}
}

// equalMaps treats nil and empty as equal.
func equalMaps(a, b map[string]string) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}

func subIDs(subs []*baton.Subscription) []string {
	var ids []string
	for _, s := range subs {
		ids = append(ids, fmt.Sprintf("%s/%s", s.Topic, s.ID))
	}
	return ids
}

// testSigningKey: the first call stores what generate makes; later calls
// return it without generating.
func testSigningKey(t *testing.T, s TopicsStore) {
	ctx := context.Background()
	calls := 0
	gen := func(b byte) func() ([]byte, error) {
		return func() ([]byte, error) {
			calls++
			return []byte{b, 1, 2, 3}, nil
		}
	}
	first, err := s.SigningKey(ctx, gen(7))
	if err != nil {
		t.Fatalf("SigningKey: %v", err)
	}
	again, err := s.SigningKey(ctx, gen(9))
	if err != nil {
		t.Fatalf("SigningKey again: %v", err)
	}
	if want := []byte{7, 1, 2, 3}; !reflect.DeepEqual(first, want) || !reflect.DeepEqual(again, want) {
		t.Errorf("SigningKey = %v then %v, want %v both times", first, again, want)
	}
	if calls != 1 {
		t.Errorf("generate called %d times, want 1", calls)
	}
	if _, err := s.SigningKey(ctx, func() ([]byte, error) { return nil, errors.New("not to be called") }); err != nil {
		t.Errorf("SigningKey with a failing generate, once a key is kept: %v", err)
	}
}
