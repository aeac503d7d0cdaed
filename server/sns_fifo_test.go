package server_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/batontest"
	"github.com/baton-sqs/baton/internal/pgtest"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/store/pebblestore"
	"github.com/baton-sqs/baton/store/pgstore"
)

func mustCreateFIFOTopic(tb testing.TB, c *awssns.Client, name string, attrs map[string]string) string {
	tb.Helper()
	all := map[string]string{"FifoTopic": "true"}
	for k, v := range attrs {
		all[k] = v
	}
	out, err := c.CreateTopic(context.Background(), &awssns.CreateTopicInput{Name: aws.String(name), Attributes: all})
	if err != nil {
		tb.Fatalf("CreateTopic %s: %v", name, err)
	}
	return *out.TopicArn
}

// receiveAll receives what a queue holds (up to ten messages), with their
// system attributes.
func receiveAll(tb testing.TB, c *sqs.Client, queueURL string) []sqstypes.Message {
	tb.Helper()
	out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL),
		MaxNumberOfMessages: 10, MessageAttributeNames: []string{"All"},
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{"All"}})
	if err != nil {
		tb.Fatalf("ReceiveMessage %s: %v", queueURL, err)
	}
	return out.Messages
}

// TestSNSFIFOTopicAttributes pins a FIFO topic's attributes as AWS shows
// them (FifoTopic, and ContentBasedDeduplication always, "false" unless
// set), its settable ones (ContentBasedDeduplication,
// FifoThroughputScope), CreateTopic's idempotency over them, and the
// subscriptions it takes: SQS queues, FIFO or standard (since 2025), and
// no other protocol, with AWS's text.
func TestSNSFIFOTopicAttributes(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	topic := mustCreateFIFOTopic(t, c, "orders.fifo", nil)
	if topic != topicARN("orders.fifo") {
		t.Errorf("TopicArn = %q", topic)
	}
	attrs := func() map[string]string {
		t.Helper()
		out, err := c.GetTopicAttributes(ctx, &awssns.GetTopicAttributesInput{TopicArn: aws.String(topic)})
		if err != nil {
			t.Fatal(err)
		}
		return out.Attributes
	}
	a := attrs()
	if a["FifoTopic"] != "true" || a["ContentBasedDeduplication"] != "false" {
		t.Errorf("FifoTopic = %q, ContentBasedDeduplication = %q; want true, false", a["FifoTopic"], a["ContentBasedDeduplication"])
	}
	if _, ok := a["FifoThroughputScope"]; ok {
		t.Errorf("FifoThroughputScope shown before it was set: %q", a["FifoThroughputScope"])
	}
	// Stating the default again is the same topic.
	if again := mustCreateFIFOTopic(t, c, "orders.fifo", map[string]string{"ContentBasedDeduplication": "false"}); again != topic {
		t.Errorf("CreateTopic again = %q", again)
	}
	for name, v := range map[string]string{"ContentBasedDeduplication": "true", "FifoThroughputScope": "MessageGroup"} {
		if _, err := c.SetTopicAttributes(ctx, &awssns.SetTopicAttributesInput{TopicArn: aws.String(topic),
			AttributeName: aws.String(name), AttributeValue: aws.String(v)}); err != nil {
			t.Fatalf("SetTopicAttributes %s: %v", name, err)
		}
	}
	if a := attrs(); a["ContentBasedDeduplication"] != "true" || a["FifoThroughputScope"] != "MessageGroup" {
		t.Errorf("after Set: ContentBasedDeduplication = %q, FifoThroughputScope = %q", a["ContentBasedDeduplication"], a["FifoThroughputScope"])
	}
	_, err := c.CreateTopic(ctx, &awssns.CreateTopicInput{Name: aws.String("orders.fifo"),
		Attributes: map[string]string{"FifoTopic": "true", "ContentBasedDeduplication": "false"}})
	wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: Attributes Reason: Topic already exists with different attributes")

	// The name and FifoTopic go together.
	_, err = c.CreateTopic(ctx, &awssns.CreateTopicInput{Name: aws.String("plain"), Attributes: map[string]string{"FifoTopic": "true"}})
	wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: Topic Name")
	_, err = c.CreateTopic(ctx, &awssns.CreateTopicInput{Name: aws.String("plain.fifo")})
	wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: Topic Name")

	// A standard topic takes no FIFO attribute (AWS's text not known).
	std := mustCreateTopic(t, c, "std")
	_, err = c.SetTopicAttributes(ctx, &awssns.SetTopicAttributesInput{TopicArn: aws.String(std),
		AttributeName: aws.String("ContentBasedDeduplication"), AttributeValue: aws.String("true")})
	wantAPIError(t, err, "InvalidParameter", 400)

	// Subscriptions: FIFO and standard queues; no other protocol.
	srv.MustCreateQueue(t, "q.fifo", map[string]string{"FifoQueue": "true"})
	srv.MustCreateQueue(t, "q", nil)
	mustSubscribe(t, c, topic, snsQueueARN("q.fifo"), nil)
	mustSubscribe(t, c, topic, snsQueueARN("q"), nil)
	for _, p := range []struct{ protocol, endpoint string }{{"email", "a@example.com"}, {"https", "https://example.com/hook"},
		{"lambda", "arn:aws:lambda:us-east-1:" + testutil.Account + ":function:f"}} {
		_, err := c.Subscribe(ctx, &awssns.SubscribeInput{TopicArn: aws.String(topic), Protocol: aws.String(p.protocol), Endpoint: aws.String(p.endpoint)})
		wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: Invalid protocol type: "+p.protocol)
	}
}

// TestSNSFIFOPublishRefusals pins AWS's answers to a FIFO publish without
// a message group, or without a deduplication id on a topic that does not
// derive one; in a PublishBatch either refuses the whole batch.
func TestSNSFIFOPublishRefusals(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	topic := mustCreateFIFOTopic(t, c, "t.fifo", nil)
	_, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("m"), MessageDeduplicationId: aws.String("d")})
	wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: The MessageGroupId parameter is required for FIFO topics")
	_, err = c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("m"), MessageGroupId: aws.String("g")})
	wantSNSError(t, err, "InvalidParameter", 400,
		"Invalid parameter: The topic should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly")
	ok := batchEntry("ok", "m")
	ok.MessageGroupId, ok.MessageDeduplicationId = aws.String("g"), aws.String("d1")
	noGroup := batchEntry("nogroup", "m")
	noGroup.MessageDeduplicationId = aws.String("d2")
	_, err = c.PublishBatch(ctx, &awssns.PublishBatchInput{TopicArn: aws.String(topic), PublishBatchRequestEntries: []snstypes.PublishBatchRequestEntry{ok, noGroup}})
	wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: The MessageGroupId parameter is required for FIFO topics")
}

// TestSNSFIFOFanOut publishes to a FIFO topic with two FIFO queue
// subscriptions (one raw) and a standard one, on every store: each queue
// gets every message once, in order within its group; a duplicate (same
// MessageDeduplicationId within five minutes, in Publish or in a batch) is
// answered with the first's MessageId and SequenceNumber and delivered to
// no queue; the envelope carries the SequenceNumber the publish was
// answered and no signature (AWS signs no FIFO envelope); a FIFO queue's
// copy keeps the MessageGroupId and the deduplication id, a standard
// queue's has no group (AWS forwards none to standard queues).
func TestSNSFIFOFanOut(t *testing.T) {
	onEveryStore(t, snsFIFOFanOut)
}

func snsFIFOFanOut(t *testing.T, srv *testutil.Server) {
	c, ctx := srv.SNSClient(), context.Background()
	topic := mustCreateFIFOTopic(t, c, "orders.fifo", nil)
	envURL := srv.MustCreateQueue(t, "env.fifo", map[string]string{"FifoQueue": "true"})
	rawURL := srv.MustCreateQueue(t, "raw.fifo", map[string]string{"FifoQueue": "true"})
	stdURL := srv.MustCreateQueue(t, "std", nil)
	envSub := mustSubscribe(t, c, topic, snsQueueARN("env.fifo"), nil)
	mustSubscribe(t, c, topic, snsQueueARN("raw.fifo"), map[string]string{"RawMessageDelivery": "true"})
	mustSubscribe(t, c, topic, snsQueueARN("std"), nil)

	type sent struct{ group, dedup, body, id, seq string }
	var order []sent
	publish := func(group, dedup, body string) (string, string) {
		t.Helper()
		out, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String(body),
			MessageGroupId: aws.String(group), MessageDeduplicationId: aws.String(dedup)})
		if err != nil {
			t.Fatalf("Publish %s: %v", body, err)
		}
		if out.SequenceNumber == nil || len(*out.SequenceNumber) != 20 {
			t.Fatalf("Publish %s: SequenceNumber = %v, want 20 digits", body, out.SequenceNumber)
		}
		return *out.MessageId, *out.SequenceNumber
	}
	for _, m := range []sent{{group: "g1", dedup: "a1", body: "a-one"}, {group: "g2", dedup: "b1", body: "b-one"},
		{group: "g1", dedup: "a2", body: "a-two"}} {
		m.id, m.seq = publish(m.group, m.dedup, m.body)
		if n := len(order); n > 0 && m.seq <= order[n-1].seq {
			t.Errorf("SequenceNumber %s after %s: not increasing", m.seq, order[n-1].seq)
		}
		order = append(order, m)
	}
	// A duplicate is answered as the first and not delivered.
	if id, seq := publish("g1", "a1", "a-one again"); id != order[0].id || seq != order[0].seq {
		t.Errorf("duplicate answered %s/%s, want the first's %s/%s", id, seq, order[0].id, order[0].seq)
	}
	// A batch: in entry order, its duplicate (of an earlier entry, and
	// of an earlier publish) answered as the first.
	entry := func(id, group, dedup, body string) snstypes.PublishBatchRequestEntry {
		e := batchEntry(id, body)
		e.MessageGroupId, e.MessageDeduplicationId = aws.String(group), aws.String(dedup)
		return e
	}
	bout, err := c.PublishBatch(ctx, &awssns.PublishBatchInput{TopicArn: aws.String(topic), PublishBatchRequestEntries: []snstypes.PublishBatchRequestEntry{
		entry("e1", "g2", "b2", "b-two"), entry("e2", "g2", "b2", "b-two again"), entry("e3", "g2", "b1", "b-one again")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(bout.Successful) != 3 || len(bout.Failed) != 0 {
		t.Fatalf("PublishBatch: %d successful, %d failed", len(bout.Successful), len(bout.Failed))
	}
	e1, e2, e3 := bout.Successful[0], bout.Successful[1], bout.Successful[2]
	if e1.SequenceNumber == nil || *e1.SequenceNumber <= order[2].seq {
		t.Errorf("batch entry SequenceNumber %v, want one after %s", e1.SequenceNumber, order[2].seq)
	}
	if *e2.MessageId != *e1.MessageId || *e2.SequenceNumber != *e1.SequenceNumber {
		t.Errorf("duplicate entry answered %s/%s, want %s/%s", *e2.MessageId, *e2.SequenceNumber, *e1.MessageId, *e1.SequenceNumber)
	}
	if *e3.MessageId != order[1].id || *e3.SequenceNumber != order[1].seq {
		t.Errorf("entry duplicating a publish answered %s/%s, want %s/%s", *e3.MessageId, *e3.SequenceNumber, order[1].id, order[1].seq)
	}
	order = append(order, sent{group: "g2", dedup: "b2", body: "b-two", id: *e1.MessageId, seq: *e1.SequenceNumber})

	byGroup := func(ms []sqstypes.Message, body func(sqstypes.Message) string) map[string][]string {
		out := map[string][]string{}
		for _, m := range ms {
			out[m.Attributes["MessageGroupId"]] = append(out[m.Attributes["MessageGroupId"]], body(m))
		}
		return out
	}
	want := map[string][]string{"g1": {"a-one", "a-two"}, "g2": {"b-one", "b-two"}}
	raw := receiveAll(t, srv.Client, rawURL)
	if got := byGroup(raw, func(m sqstypes.Message) string { return *m.Body }); !equalGroups(got, want) {
		t.Errorf("raw FIFO queue holds %v, want %v", got, want)
	}
	for _, m := range raw {
		for _, s := range order {
			if *m.Body == s.body && m.Attributes["MessageDeduplicationId"] != s.dedup {
				t.Errorf("raw copy %s: MessageDeduplicationId = %q, want %q", s.body, m.Attributes["MessageDeduplicationId"], s.dedup)
			}
		}
	}
	env := receiveAll(t, srv.Client, envURL)
	got := byGroup(env, func(m sqstypes.Message) string { return envelopeFields(t, m)["Message"].(string) })
	if !equalGroups(got, want) {
		t.Errorf("enveloped FIFO queue holds %v, want %v", got, want)
	}
	for _, m := range env {
		f := envelopeFields(t, m)
		var s sent
		for _, x := range order {
			if x.body == f["Message"] {
				s = x
			}
		}
		wantBody := "{\n" +
			`  "Type" : "Notification",` + "\n" +
			`  "MessageId" : "` + s.id + `",` + "\n" +
			`  "SequenceNumber" : "` + s.seq + `",` + "\n" +
			`  "TopicArn" : "` + topic + `",` + "\n" +
			`  "Message" : "` + s.body + `",` + "\n" +
			`  "Timestamp" : "2026-01-02T03:04:05.000Z",` + "\n" +
			`  "UnsubscribeURL" : "` + srv.URL + `/?Action=Unsubscribe&SubscriptionArn=` + envSub + `"` + "\n" +
			"}"
		if *m.Body != wantBody {
			t.Errorf("envelope:\n%s\nwant:\n%s", *m.Body, wantBody)
		}
	}
	std := receiveAll(t, srv.Client, stdURL)
	if len(std) != 4 {
		t.Errorf("standard queue holds %d copies, want 4 (no duplicate)", len(std))
	}
	for _, m := range std {
		if g, ok := m.Attributes["MessageGroupId"]; ok {
			t.Errorf("standard queue's copy has MessageGroupId %q, want none", g)
		}
	}
}

func equalGroups(a, b map[string][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if strings.Join(v, "\x00") != strings.Join(b[k], "\x00") {
			return false
		}
	}
	return true
}

// TestSNSFIFODeduplication pins the deduplication window and its scopes:
// with ContentBasedDeduplication the id is the SHA-256 of the Message
// (AWS's vector: "Test"), passed on to the FIFO queue; a duplicate five
// minutes later is a new message; with FifoThroughputScope MessageGroup one
// id in two groups is two messages.
func TestSNSFIFODeduplication(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	topic := mustCreateFIFOTopic(t, c, "content.fifo", map[string]string{"ContentBasedDeduplication": "true"})
	qURL := srv.MustCreateQueue(t, "q.fifo", map[string]string{"FifoQueue": "true", "DeduplicationScope": "messageGroup",
		"FifoThroughputLimit": "perMessageGroupId"})
	mustSubscribe(t, c, topic, snsQueueARN("q.fifo"), map[string]string{"RawMessageDelivery": "true"})
	publish := func(group string) string {
		t.Helper()
		out, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("Test"), MessageGroupId: aws.String(group)})
		if err != nil {
			t.Fatal(err)
		}
		return *out.MessageId
	}
	first := publish("g")
	if again := publish("g"); again != first {
		t.Errorf("same content within the window: MessageId %s, want %s", again, first)
	}
	// Scope Topic (the default): another group, same content, a duplicate.
	if other := publish("h"); other != first {
		t.Errorf("same content in another group, topic scope: MessageId %s, want %s", other, first)
	}
	ms := receiveAll(t, srv.Client, qURL)
	if len(ms) != 1 || ms[0].Attributes["MessageDeduplicationId"] != "532eaabd9574880dbf76b9b8cc00832c20a6ec113d682299550d7a6e0f345e25" {
		t.Fatalf("queue holds %d messages (%v), want 1 with the SHA-256 of Test as its deduplication id", len(ms), ms)
	}
	srv.Clock.Advance(5*time.Minute + time.Second)
	if later := publish("g"); later == first {
		t.Errorf("same content past the window: the first's MessageId again")
	}
	if _, err := c.SetTopicAttributes(ctx, &awssns.SetTopicAttributesInput{TopicArn: aws.String(topic),
		AttributeName: aws.String("FifoThroughputScope"), AttributeValue: aws.String("MessageGroup")}); err != nil {
		t.Fatal(err)
	}
	a, b := publish("x"), publish("y")
	if a == b {
		t.Errorf("one content in two groups, MessageGroup scope: one MessageId %s, want two", a)
	}
}

// TestSNSFIFODedupSurvivesRestart: on the embedded store a FIFO topic's
// deduplication outlives the server, as its queues' does: a publish
// repeated after a restart is answered as the first and delivered to no
// queue, a standard one included (whose own store keeps no deduplication);
// a new publish's SequenceNumber is above those given before, the clock
// having moved on.
func TestSNSFIFODedupSurvivesRestart(t *testing.T) {
	t.Parallel()
	dir, ctx := t.TempDir(), context.Background()
	start := func() *batontest.Server { return startEmbedded(t, dir) }
	srv := start()
	c := srv.SNSClient()
	topic := mustCreateFIFOTopic(t, c, "durable.fifo", nil)
	std, err := srv.Client().CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("std")})
	if err != nil {
		t.Fatal(err)
	}
	mustSubscribe(t, c, topic, snsQueueARN("std"), map[string]string{"RawMessageDelivery": "true"})
	in := &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("once"), MessageGroupId: aws.String("g"),
		MessageDeduplicationId: aws.String("d")}
	first, err := c.Publish(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}

	srv = start()
	defer srv.Close()
	c = srv.SNSClient()
	again, err := c.Publish(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if *again.MessageId != *first.MessageId || *again.SequenceNumber != *first.SequenceNumber {
		t.Errorf("after restart the duplicate is answered %s/%s, want %s/%s", *again.MessageId, *again.SequenceNumber,
			*first.MessageId, *first.SequenceNumber)
	}
	// SequenceNumbers follow the clock across a restart, which takes
	// time: here a second.
	srv.Clock().Advance(time.Second)
	next, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("next"),
		MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("d2")})
	if err != nil {
		t.Fatal(err)
	}
	if *next.SequenceNumber <= *first.SequenceNumber {
		t.Errorf("SequenceNumber after restart %s, not above %s", *next.SequenceNumber, *first.SequenceNumber)
	}
	out, err := srv.Client().ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: std.QueueUrl, MaxNumberOfMessages: 10})
	if err != nil {
		t.Fatal(err)
	}
	var bodies []string
	for _, m := range out.Messages {
		bodies = append(bodies, *m.Body)
	}
	if strings.Join(sorted(bodies...), ",") != "next,once" {
		t.Errorf("standard queue holds %q, want once and next", bodies)
	}
}

// TestSNSFIFODedupTwoNodes: two servers of one store deduplicate a FIFO
// topic's publishes together, the records being the store's: a publish
// repeated on the other node is answered as the first and delivered to no
// queue. On handles of a memstore.Cluster and on two PostgreSQL stores of
// one database.
func TestSNSFIFODedupTwoNodes(t *testing.T) {
	onTwoNodes(t, snsFIFODedupTwoNodes)
}

func snsFIFODedupTwoNodes(t *testing.T, a, b baton.Store) {
	ctx := context.Background()
	nodes := []*batontest.Server{startNode(t, a), startNode(t, b)}
	topic := mustCreateFIFOTopic(t, nodes[0].SNSClient(), "shared.fifo", nil)
	std, err := nodes[0].Client().CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("std")})
	if err != nil {
		t.Fatal(err)
	}
	mustSubscribe(t, nodes[0].SNSClient(), topic, snsQueueARN("std"), map[string]string{"RawMessageDelivery": "true"})
	in := &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("once"), MessageGroupId: aws.String("g"),
		MessageDeduplicationId: aws.String("d")}
	first, err := nodes[0].SNSClient().Publish(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	again, err := nodes[1].SNSClient().Publish(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if *again.MessageId != *first.MessageId || *again.SequenceNumber != *first.SequenceNumber {
		t.Errorf("the other node answered %s/%s, want the first's %s/%s", *again.MessageId, *again.SequenceNumber,
			*first.MessageId, *first.SequenceNumber)
	}
	out, err := nodes[1].Client().ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: std.QueueUrl, MaxNumberOfMessages: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) != 1 {
		t.Errorf("the standard queue holds %d copies, want 1", len(out.Messages))
	}
}

// TestSNSFIFOSequenceTwoNodes: the SequenceNumbers of a message group
// increase across two servers of one store, as AWS's increase within a
// group, whichever server a publish reaches: when their clocks agree to
// the nanosecond, and when the one published to second is behind the
// other by a minute. Each server numbered its publishes from its own
// clock, and then the second answered a number equal to or below the
// first's. On handles of a memstore.Cluster and on two PostgreSQL stores
// of one database.
func TestSNSFIFOSequenceTwoNodes(t *testing.T) {
	onTwoNodes(t, snsFIFOSequenceTwoNodes)
}

func snsFIFOSequenceTwoNodes(t *testing.T, a, b baton.Store) {
	ctx := context.Background()
	nodes := []*batontest.Server{startNode(t, a), startNode(t, b)}
	topic := mustCreateFIFOTopic(t, nodes[0].SNSClient(), "numbered.fifo", map[string]string{"ContentBasedDeduplication": "true"})
	var last string
	publish := func(n int, body string) {
		t.Helper()
		out, err := nodes[n].SNSClient().Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String(body),
			MessageGroupId: aws.String("g")})
		if err != nil {
			t.Fatalf("Publish %s on node %d: %v", body, n, err)
		}
		if seq := aws.ToString(out.SequenceNumber); len(seq) != 20 || seq <= last {
			t.Errorf("Publish %s on node %d: SequenceNumber %s, want 20 digits above the one before, %s", body, n, seq, last)
		} else {
			last = seq
		}
	}
	publish(0, "one") // both clocks at batontest.Epoch
	publish(1, "two")
	nodes[0].Clock().Advance(time.Minute)
	publish(0, "three") // node 1 is a minute behind
	publish(1, "four")
	publish(1, "five")
	publish(0, "six")
}

// TestSNSFairQueueGroups: a standard topic passes a publish's
// MessageGroupId on to its standard queues, enveloped or raw, from Publish
// and from PublishBatch, as AWS does for SQS fair queues since 2025.
func TestSNSFairQueueGroups(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	topic := mustCreateTopic(t, c, "tenants")
	envURL, rawURL := srv.MustCreateQueue(t, "fair-env", nil), srv.MustCreateQueue(t, "fair-raw", nil)
	mustSubscribe(t, c, topic, snsQueueARN("fair-env"), nil)
	mustSubscribe(t, c, topic, snsQueueARN("fair-raw"), map[string]string{"RawMessageDelivery": "true"})
	if _, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("one"),
		MessageGroupId: aws.String("tenant-a")}); err != nil {
		t.Fatal(err)
	}
	e := batchEntry("b", "two")
	e.MessageGroupId = aws.String("tenant-b")
	if _, err := c.PublishBatch(ctx, &awssns.PublishBatchInput{TopicArn: aws.String(topic),
		PublishBatchRequestEntries: []snstypes.PublishBatchRequestEntry{e}}); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{envURL, rawURL} {
		groups := map[string]bool{}
		for _, m := range receiveAll(t, srv.Client, u) {
			groups[m.Attributes["MessageGroupId"]] = true
		}
		if len(groups) != 2 || !groups["tenant-a"] || !groups["tenant-b"] {
			t.Errorf("%s: copies' MessageGroupIds %v, want tenant-a and tenant-b", u, groups)
		}
	}
}

// BenchmarkSNSPublishFIFO publishes as BenchmarkSNSPublish does to a FIFO
// topic with 1 and 5 raw FIFO queue subscriptions, each publish of its own
// group and deduplication id; each publish also writes its deduplication
// record (a second commit) after its copies.
func BenchmarkSNSPublishFIFO(b *testing.B) {
	open := map[string]func(b *testing.B) (baton.Store, error){
		"embedded": func(b *testing.B) (baton.Store, error) {
			return pebblestore.Open(context.Background(), b.TempDir(), pebblestore.Options{})
		},
		"postgres": func(b *testing.B) (baton.Store, error) {
			return pgstore.Open(context.Background(), pgtest.MustDatabase(b), pgstore.Options{})
		},
	}
	for _, store := range []string{"embedded", "postgres"} {
		for _, n := range []int{1, 5} {
			b.Run(fmt.Sprintf("store=%s/queues=%d", store, n), func(b *testing.B) {
				benchSNSPublishFIFO(b, open[store], n)
			})
		}
	}
}

// benchSNSPublishFIFO publishes to a FIFO topic with n FIFO queues
// subscribed, each publish in a message group of its own, from 8 clients.
func benchSNSPublishFIFO(b *testing.B, open func(b *testing.B) (baton.Store, error), n int) {
	st, err := open(b)
	if err != nil {
		b.Fatal(err)
	}
	srv := batontest.New(b, batontest.WithStore(st))
	c, ctx := srv.SNSClient(), context.Background()
	topic := mustCreateFIFOTopic(b, c, "bench.fifo", nil)
	for i := range n {
		q := fmt.Sprintf("q%d.fifo", i)
		if _, err := srv.Client().CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(q),
			Attributes: map[string]string{"FifoQueue": "true"}}); err != nil {
			b.Fatal(err)
		}
		mustSubscribe(b, c, topic, snsQueueARN(q), map[string]string{"RawMessageDelivery": "true"})
	}
	var seq atomic.Int64
	b.SetParallelism(4) // 8 clients on 2 processors
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := strconv.FormatInt(seq.Add(1), 10)
			if _, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic),
				Message: aws.String("a message of some 40 bytes, as events are"), MessageGroupId: aws.String("g" + id),
				MessageDeduplicationId: aws.String(id)}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	s := b.Elapsed().Seconds()
	b.ReportMetric(float64(b.N)/s, "publishes/s")
	b.ReportMetric(float64(b.N*n)/s, "copies/s")
}
