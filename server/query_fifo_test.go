package server_test

import (
	"testing"
	"time"
)

// FIFO parameters through the Query protocol: group and deduplication ids on
// single and batch sends, the FIFO system attributes on receive, and
// ReceiveRequestAttemptId.
func TestQueryFIFO(t *testing.T) {
	t.Parallel()
	c := newQueryClient(t)
	url := c.createQueue("q.fifo", "Attribute.1.Name", "FifoQueue", "Attribute.1.Value", "true")

	first := c.send(url, "one", "MessageGroupId", "g", "MessageDeduplicationId", "d1")
	if dup := c.send(url, "one again", "MessageGroupId", "g", "MessageDeduplicationId", "d1"); dup != first {
		t.Errorf("duplicate send returned %s, want the original %s", dup, first)
	}
	r := c.post("/", "Action", "SendMessageBatch", "QueueUrl", url,
		"SendMessageBatchRequestEntry.1.Id", "a", "SendMessageBatchRequestEntry.1.MessageBody", "two",
		"SendMessageBatchRequestEntry.1.MessageGroupId", "g", "SendMessageBatchRequestEntry.1.MessageDeduplicationId", "d2",
		"SendMessageBatchRequestEntry.2.Id", "b", "SendMessageBatchRequestEntry.2.MessageBody", "three",
		"SendMessageBatchRequestEntry.2.MessageGroupId", "g", "SendMessageBatchRequestEntry.2.MessageDeduplicationId", "d3")
	entries := r.result(t, "SendMessageBatch").all("SendMessageBatchResultEntry")
	if len(entries) != 2 {
		t.Fatalf("batch sent %d, want 2", len(entries))
	}
	for _, e := range entries {
		if e.child(t, "SequenceNumber").Text == "" {
			t.Errorf("batch entry without SequenceNumber: %v", e.names())
		}
	}
	r = c.post("/", "Action", "SendMessageBatch", "QueueUrl", url,
		"SendMessageBatchRequestEntry.1.Id", "a", "SendMessageBatchRequestEntry.1.MessageBody", "x",
		"SendMessageBatchRequestEntry.1.MessageDeduplicationId", "d9")
	r.failWith(t, 400, "InvalidParameterValue", "The request must contain the parameter MessageGroupId.")
	c.post("/", "Action", "SendMessage", "QueueUrl", url, "MessageBody", "x", "MessageDeduplicationId", "d9").
		failWith(t, 400, "MissingParameter", "The request must contain the parameter MessageGroupId.")

	recv := func() []*xmlNode {
		return c.receive(url, "MaxNumberOfMessages", "10", "AttributeName.1", "All", "ReceiveRequestAttemptId", "attempt-1")
	}
	got := recv()
	var bodies []string
	for _, m := range got {
		bodies = append(bodies, m.child(t, "Body").Text)
		a := xmlPairs(t, m, "Attribute", "Name", "Value")
		if a["MessageGroupId"] != "g" || a["SequenceNumber"] == "" || a["MessageDeduplicationId"] == "" {
			t.Errorf("FIFO attributes = %v", a)
		}
	}
	if !sameOrder(bodies, []string{"one", "two", "three"}) {
		t.Errorf("received %v, want one, two, three in order", bodies)
	}
	c.srv.Clock.Advance(5 * time.Second)
	again := recv()
	if len(again) != 3 || again[0].child(t, "ReceiptHandle").Text != got[0].child(t, "ReceiptHandle").Text {
		t.Errorf("retried receive returned %d messages or new handles, want the same three", len(again))
	}
}
