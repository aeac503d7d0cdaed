package server_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/internal/testutil"
)

func fifoAttrs(kv ...string) map[string]string {
	m := map[string]string{"FifoQueue": "true"}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func sendFIFO(tb testing.TB, c *sqs.Client, url, body, group, dedup string) *sqs.SendMessageOutput {
	tb.Helper()
	in := &sqs.SendMessageInput{QueueUrl: &url, MessageBody: &body, MessageGroupId: &group}
	if dedup != "" {
		in.MessageDeduplicationId = &dedup
	}
	out, err := c.SendMessage(ctx, in)
	if err != nil {
		tb.Fatalf("send %q: %v", body, err)
	}
	return out
}

func receiveBodies(tb testing.TB, c *sqs.Client, url string, max int32) []types.Message {
	tb.Helper()
	out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: max,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{"All"}})
	if err != nil {
		tb.Fatal(err)
	}
	return out.Messages
}

func bodies(ms []types.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, *m.Body)
	}
	return out
}

func sameOrder(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestFIFOQueueAttributes(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	url := srv.MustCreateQueue(t, "orders.fifo", fifoAttrs("ContentBasedDeduplication", "true"))
	out, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &url, AttributeNames: []types.QueueAttributeName{"All"}})
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true", "DeduplicationScope": "queue", "FifoThroughputLimit": "perQueue"} {
		if got := out.Attributes[k]; got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	tests := []struct {
		name  string
		queue string
		attrs map[string]string
		code  string
	}{
		{"fifo name without FifoQueue", "a.fifo", nil, "InvalidParameterValue"},
		{"FifoQueue without fifo name", "a", fifoAttrs(), "InvalidParameterValue"},
		{"FifoQueue false on a standard name", "a", map[string]string{"FifoQueue": "false"}, "InvalidAttributeName"},
		{"bad scope", "b.fifo", fifoAttrs("DeduplicationScope", "tenant"), "InvalidAttributeValue"},
		{"per-group throughput needs group scope", "c.fifo", fifoAttrs("FifoThroughputLimit", "perMessageGroupId"), "InvalidAttributeValue"},
		{"standard dead-letter queue", "d.fifo", fifoAttrs("RedrivePolicy", `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:std","maxReceiveCount":3}`), "InvalidParameterValue"},
	}
	srv.MustCreateQueue(t, "std", nil)
	for _, tt := range tests {
		_, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(tt.queue), Attributes: tt.attrs})
		if err == nil {
			t.Errorf("%s: no error", tt.name)
			continue
		}
		wantAPIError(t, err, tt.code, 400)
	}
	srv.MustCreateQueue(t, "ht.fifo", fifoAttrs("DeduplicationScope", "messageGroup", "FifoThroughputLimit", "perMessageGroupId"))
	_, err = c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: &url, Attributes: map[string]string{"FifoQueue": "false"}})
	wantAPIError(t, err, "InvalidAttributeValue", 400)
	if _, err := c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: &url, Attributes: map[string]string{"FifoQueue": "true"}}); err != nil {
		t.Errorf("FifoQueue=true on a FIFO queue is a no-op, got %v", err)
	}
}

func TestFIFOSendRules(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	url := srv.MustCreateQueue(t, "rules.fifo", fifoAttrs())
	_, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("x"), MessageDeduplicationId: aws.String("d")})
	wantAPIError(t, err, "MissingParameter", 400)
	_, err = c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("x"), MessageGroupId: aws.String("g")})
	wantAPIError(t, err, "InvalidParameterValue", 400) // no dedup id, no content-based dedup
	_, err = c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("x"), MessageGroupId: aws.String("g"),
		MessageDeduplicationId: aws.String("d"), DelaySeconds: 5})
	wantAPIError(t, err, "InvalidParameterValue", 400)
	_, err = c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("x"), MessageGroupId: aws.String("g"),
		MessageDeduplicationId: aws.String("has space")})
	wantAPIError(t, err, "InvalidParameterValue", 400)
	// In a batch a missing group fails the whole request.
	_, err = c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: &url, Entries: []types.SendMessageBatchRequestEntry{
		{Id: aws.String("ok"), MessageBody: aws.String("x"), MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("1")},
		{Id: aws.String("nogroup"), MessageBody: aws.String("y"), MessageDeduplicationId: aws.String("2")},
	}})
	wantAPIError(t, err, "InvalidParameterValue", 400)
	checkCounts(t, c, url, 0, 0, 0)

	a := sendFIFO(t, c, url, "a", "g", "1")
	b := sendFIFO(t, c, url, "b", "h", "2")
	if a.SequenceNumber == nil || b.SequenceNumber == nil || len(*a.SequenceNumber) != 20 || *b.SequenceNumber <= *a.SequenceNumber {
		t.Errorf("sequence numbers %v then %v, want 20-digit and increasing", aws.ToString(a.SequenceNumber), aws.ToString(b.SequenceNumber))
	}
	ms := receiveBodies(t, c, url, 10)
	for _, m := range ms {
		if m.Attributes["SequenceNumber"] == "" || m.Attributes["MessageGroupId"] == "" || m.Attributes["MessageDeduplicationId"] == "" {
			t.Errorf("FIFO system attributes missing: %v", m.Attributes)
		}
	}
}

// A group hands out only its visible messages before its first in-flight
// one; other groups keep flowing.
func TestFIFOGroupBlocking(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	url := srv.MustCreateQueue(t, "blocking.fifo", fifoAttrs("ContentBasedDeduplication", "true", "VisibilityTimeout", "30"))
	for i := 1; i <= 3; i++ {
		sendFIFO(t, c, url, "g1-m"+strconv.Itoa(i), "g1", "")
	}
	first := receiveBodies(t, c, url, 1)
	if got := bodies(first); !sameOrder(got, []string{"g1-m1"}) {
		t.Fatalf("first receive = %v, want g1-m1", got)
	}
	if got := bodies(receiveBodies(t, c, url, 10)); len(got) != 0 {
		t.Errorf("group g1 handed out %v while g1-m1 is in flight", got)
	}
	sendFIFO(t, c, url, "g2-m1", "g2", "")
	if got := bodies(receiveBodies(t, c, url, 10)); !sameOrder(got, []string{"g2-m1"}) {
		t.Errorf("other group = %v, want g2-m1 to flow", got)
	}
	srv.Clock.Advance(30 * time.Second) // g1-m1's and g2-m1's leases lapse
	again := receiveBodies(t, c, url, 10)
	var g1 []string
	for _, m := range again {
		if m.Attributes["MessageGroupId"] == "g1" {
			g1 = append(g1, *m.Body)
		}
	}
	if !sameOrder(g1, []string{"g1-m1", "g1-m2", "g1-m3"}) {
		t.Errorf("after the lapse g1 gave %v, want all three in order", g1)
	}

	// Received m1..m3, extend m2: when the others lapse only m1 comes back.
	var m2 types.Message
	for _, m := range again {
		if *m.Body == "g1-m2" {
			m2 = m
		}
	}
	if err := changeVisibility(c, url, m2.ReceiptHandle, 300); err != nil {
		t.Fatal(err)
	}
	srv.Clock.Advance(30 * time.Second)
	var got []string
	for _, m := range receiveBodies(t, c, url, 10) {
		if m.Attributes["MessageGroupId"] == "g1" {
			got = append(got, *m.Body)
		}
	}
	if !sameOrder(got, []string{"g1-m1"}) {
		t.Errorf("with g1-m2 extended, g1 gave %v; want only g1-m1", got)
	}
}

func TestFIFODeduplication(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	url := srv.MustCreateQueue(t, "dedup.fifo", fifoAttrs("ContentBasedDeduplication", "true"))
	first := sendFIFO(t, c, url, "same body", "g", "")
	dup := sendFIFO(t, c, url, "same body", "g", "")
	if *dup.MessageId != *first.MessageId {
		t.Errorf("duplicate got MessageId %s, want the original %s", *dup.MessageId, *first.MessageId)
	}
	explicit := sendFIFO(t, c, url, "other body", "g2", "id-1")
	dupExplicit := sendFIFO(t, c, url, "different body", "g3", "id-1") // scope queue: across groups
	if *dupExplicit.MessageId != *explicit.MessageId {
		t.Errorf("explicit duplicate in another group enqueued under queue scope")
	}
	checkCounts(t, c, url, 2, 0, 0)

	// Duplicates stay suppressed after the original is received and deleted.
	for _, m := range receiveBodies(t, c, url, 10) {
		if err := deleteMessage(c, url, m.ReceiptHandle); err != nil {
			t.Fatal(err)
		}
	}
	srv.Clock.Advance(4*time.Minute + 59*time.Second)
	sendFIFO(t, c, url, "same body", "g", "")
	checkCounts(t, c, url, 0, 0, 0)
	srv.Clock.Advance(2 * time.Second) // the 5-minute window has passed
	again := sendFIFO(t, c, url, "same body", "g", "")
	if *again.MessageId == *first.MessageId {
		t.Errorf("send after the window reused the old MessageId")
	}
	checkCounts(t, c, url, 1, 0, 0)

	// Purge clears the window.
	if _, err := c.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: &url}); err != nil {
		t.Fatal(err)
	}
	sendFIFO(t, c, url, "same body", "g", "")
	checkCounts(t, c, url, 1, 0, 0)

	// Group scope: the same id in two groups is two messages.
	gs := srv.MustCreateQueue(t, "groupscope.fifo", fifoAttrs("DeduplicationScope", "messageGroup"))
	a := sendFIFO(t, c, gs, "x", "g1", "id")
	b := sendFIFO(t, c, gs, "x", "g2", "id")
	if *a.MessageId == *b.MessageId {
		t.Errorf("group-scoped dedup treated two groups as one")
	}
	checkCounts(t, c, gs, 2, 0, 0)
}

func TestFIFOReceiveRequestAttemptID(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	url := srv.MustCreateQueue(t, "attempt.fifo", fifoAttrs("ContentBasedDeduplication", "true"))
	for i := range 3 {
		sendFIFO(t, c, url, "m"+strconv.Itoa(i), "g", "")
	}
	recv := func() []types.Message {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 2, ReceiveRequestAttemptId: aws.String("try-1")})
		if err != nil {
			t.Fatal(err)
		}
		return out.Messages
	}
	first := recv()
	srv.Clock.Advance(20 * time.Second)
	retry := recv() // the response was "lost"; the retry gets the same batch
	if len(first) != 2 || len(retry) != 2 {
		t.Fatalf("got %d then %d messages, want 2 and 2", len(first), len(retry))
	}
	for i := range first {
		if *first[i].MessageId != *retry[i].MessageId || *first[i].ReceiptHandle != *retry[i].ReceiptHandle {
			t.Errorf("retry %d differs: %s/%s vs %s/%s", i, *first[i].MessageId, *first[i].ReceiptHandle, *retry[i].MessageId, *retry[i].ReceiptHandle)
		}
	}
	// The retry reset the lease: 29 s after it the messages are still held.
	srv.Clock.Advance(29 * time.Second)
	if got := receiveBodies(t, c, url, 10); len(got) != 0 {
		t.Errorf("messages came back %v before the reset lease lapsed", bodies(got))
	}
}

func TestFIFOExpiredReceiptCannotDelete(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	url := srv.MustCreateQueue(t, "expiry.fifo", fifoAttrs("ContentBasedDeduplication", "true", "VisibilityTimeout", "10"))
	sendFIFO(t, c, url, "x", "g", "")
	m := receiveBodies(t, c, url, 1)[0]
	if err := changeVisibility(c, url, m.ReceiptHandle, 60); err != nil {
		t.Fatal(err)
	}
	srv.Clock.Advance(30 * time.Second) // inside the extended window
	m2 := receiveBodies(t, c, url, 1)
	if len(m2) != 0 {
		t.Fatalf("message redelivered inside its extended lease")
	}
	srv.Clock.Advance(31 * time.Second) // now past it
	wantAPIError(t, deleteMessage(c, url, m.ReceiptHandle), "InvalidParameterValue", http.StatusBadRequest)
	checkCounts(t, c, url, 1, 0, 0) // still there
	fresh := receiveBodies(t, c, url, 1)[0]
	if err := deleteMessage(c, url, fresh.ReceiptHandle); err != nil {
		t.Errorf("delete inside the lease: %v", err)
	}
}

// Fair queues: one tenant with a deep backlog cannot starve the others.
func TestFairQueueSpreadsAcrossGroups(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	url := srv.MustCreateQueue(t, "fair", nil)
	sendGroup := func(group string, n int) {
		for i := 0; i < n; i += 10 {
			var es []types.SendMessageBatchRequestEntry
			for j := i; j < i+10 && j < n; j++ {
				es = append(es, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(j)), MessageBody: aws.String(group), MessageGroupId: aws.String(group)})
			}
			if _, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: &url, Entries: es}); err != nil {
				t.Fatal(err)
			}
		}
	}
	sendGroup("noisy", 10000)
	for g := range 9 {
		sendGroup("quiet-"+strconv.Itoa(g), 10)
	}
	quietLeft, noisyTaken := 90, 0
	for quietLeft > 0 {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			t.Fatalf("queue ran dry with %d quiet messages left", quietLeft)
		}
		var es []types.DeleteMessageBatchRequestEntry
		for i, m := range out.Messages {
			if *m.Body == "noisy" {
				noisyTaken++
			} else {
				quietLeft--
			}
			es = append(es, types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle})
		}
		if _, err := c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: &url, Entries: es}); err != nil {
			t.Fatal(err)
		}
	}
	if noisyTaken >= 5000 {
		t.Errorf("the nine quiet groups were served only after %d noisy messages, want under half the backlog", noisyTaken)
	}
	t.Logf("quiet groups drained after %d of 10000 noisy messages", noisyTaken)
}

// A tenant of a fair queue holding more than a tenth of the queue's
// messages in flight, and at least 30, is noisy: while quiet tenants have
// messages, a receive gives theirs (docs/sqs-behaviour.md §6.2).
func TestFairQueueNoisyTenantWaits(t *testing.T) {
	t.Parallel()
	onEveryStore(t, func(t *testing.T, srv *testutil.Server) {
		c := srv.Client
		url := srv.MustCreateQueue(t, "fair-noisy", nil)
		send := func(group string, from, n int) {
			var es []types.SendMessageBatchRequestEntry
			for i := from; i < from+n; i++ {
				es = append(es, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(group), MessageGroupId: aws.String(group)})
			}
			if _, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: &url, Entries: es}); err != nil {
				t.Fatal(err)
			}
		}
		receive := func(max int32) map[string]int {
			out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: max, VisibilityTimeout: 600})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int{}
			for _, m := range out.Messages {
				got[*m.Body]++
			}
			return got
		}
		for i := range 4 {
			send("noisy", 10*i, 10)
		}
		held := 0
		for held < 35 {
			got := receive(int32(min(10, 35-held)))
			if got["noisy"] == 0 {
				t.Fatalf("the noisy tenant's receive %d gave nothing", held)
			}
			held += got["noisy"]
		}
		send("quiet-a", 0, 2)
		send("quiet-b", 0, 1)
		if got := receive(3); got["quiet-a"] != 2 || got["quiet-b"] != 1 {
			t.Errorf("receive 3 with noisy holding 35 of 35 in flight: got %v, want quiet-a's 2 and quiet-b's 1", got)
		}
		if got := receive(10); got["noisy"] != 5 || len(got) != 1 {
			t.Errorf("receive the rest: got %v, want noisy's last 5", got)
		}
	})
}
