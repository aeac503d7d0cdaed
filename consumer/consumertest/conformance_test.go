package consumertest_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/baton-sqs/baton/batontest"
	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/consumer"
	"github.com/baton-sqs/baton/consumer/consumertest"
)

// target is one implementation of the SQS semantics the consumer relies
// on: consumertest's fake, or a Baton server in the test's process. Every
// conformance case runs against both, so the fake cannot drift from the
// server.
type target struct {
	// c is the client the consumer would be given.
	c consumer.Client
	// clock is the fake clock the implementation reads.
	clock *clock.Fake
	// create creates a queue (FIFO if the name ends in .fifo) and returns
	// its URL.
	create func(t *testing.T, name string, attrs map[string]string) string
	// waitPolls waits until n long polls wait on the clock.
	waitPolls func(t *testing.T, n int)
}

func fakeTarget(t *testing.T) *target {
	clk := consumertest.NewClock(time.Time{})
	f := consumertest.NewSQS(clk)
	return &target{
		c:     f,
		clock: clk,
		create: func(t *testing.T, name string, attrs map[string]string) string {
			return f.CreateQueue(name, attrs)
		},
		waitPolls: func(t *testing.T, n int) {
			t.Helper()
			deadline := time.Now().Add(10 * time.Second)
			for clk.Timers() < n {
				if time.Now().After(deadline) {
					t.Fatalf("%d timers pending on the fake clock after 10s, want %d", clk.Timers(), n)
				}
				time.Sleep(time.Millisecond)
			}
		},
	}
}

func batonTarget(t *testing.T) *target {
	srv := batontest.New(t, batontest.WithFakeClock(time.Time{}))
	return &target{
		c:     srv.Client(),
		clock: srv.Clock(),
		create: func(t *testing.T, name string, attrs map[string]string) string {
			t.Helper()
			a := map[string]string{}
			for k, v := range attrs {
				a[k] = v
			}
			if strings.HasSuffix(name, ".fifo") {
				a["FifoQueue"] = "true"
			}
			out, err := srv.Client().CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: &name, Attributes: a})
			if err != nil {
				t.Fatalf("CreateQueue %s: %v", name, err)
			}
			return aws.ToString(out.QueueUrl)
		},
		waitPolls: func(t *testing.T, n int) { t.Helper(); srv.WaitForTimers(t, n) },
	}
}

// conformance is the table: each case is one rule of SQS the consumer
// depends on, stated as calls and their answers.
var conformance = []struct {
	name string
	run  func(t *testing.T, x *target)
}{
	{"send-receive-delete", caseSendReceiveDelete},
	{"visibility-timeout-lapses", caseVisibilityLapses},
	{"receive-visibility-honoured", caseReceiveVisibility},
	{"change-visibility-extends", caseChangeExtends},
	{"change-visibility-releases", caseChangeReleases},
	{"change-visibility-ceiling", caseChangeCeiling},
	{"change-lapsed-lease", caseChangeLapsed},
	{"change-deleted", caseChangeDeleted},
	{"stale-delete-standard", caseStaleDelete},
	{"stale-change-standard", caseStaleChange},
	{"delete-twice", caseDeleteTwice},
	{"batch-per-entry-results", caseBatchEntries},
	{"max-number-of-messages", caseMaxMessages},
	{"long-poll-message-arrives", caseLongPollArrives},
	{"long-poll-lease-lapses", caseLongPollLapse},
	{"long-poll-release", caseLongPollRelease},
	{"long-poll-empty", caseLongPollEmpty},
	{"send-delay", caseSendDelay},
	{"message-attributes", caseAttributes},
	{"fifo-attributes", caseFIFOAttributes},
	{"fifo-group-order", caseFIFOOrder},
	{"fifo-release-unblocks", caseFIFORelease},
	{"fifo-stale-handle", caseFIFOStale},
	{"fifo-deduplication", caseFIFODedup},
	{"redrive", caseRedrive},
	{"redrive-fifo", caseRedriveFIFO},
	{"queue-attributes", caseQueueAttributes},
	{"missing-queue", caseMissingQueue},
}

// TestConformance runs every case against the fake (fake/<case>) and
// against Baton (baton/<case>), each on a fresh fake clock.
func TestConformance(t *testing.T) {
	t.Parallel()
	for _, impl := range []struct {
		name string
		new  func(t *testing.T) *target
	}{{"fake", fakeTarget}, {"baton", batonTarget}} {
		t.Run(impl.name, func(t *testing.T) {
			t.Parallel()
			for _, tc := range conformance {
				t.Run(tc.name, func(t *testing.T) {
					t.Parallel()
					tc.run(t, impl.new(t))
				})
			}
		})
	}
}

var ctx = context.Background()

// recv receives as the consumer does: every attribute, and the given
// maximum, lease and wait (0: left out).
func (x *target) recv(t *testing.T, url string, max, vis, wait int32) []types.Message {
	t.Helper()
	out, err := x.c.ReceiveMessage(ctx, receiveInput(url, max, vis, wait))
	if err != nil {
		t.Fatalf("ReceiveMessage: %v", err)
	}
	return out.Messages
}

func receiveInput(url string, max, vis, wait int32) *sqs.ReceiveMessageInput {
	return &sqs.ReceiveMessageInput{
		QueueUrl: &url, MaxNumberOfMessages: max, VisibilityTimeout: vis, WaitTimeSeconds: wait,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"},
	}
}

// recvOne receives one message, which must be body received for the n-th
// time.
func (x *target) recvOne(t *testing.T, url string, vis int32, body string, n int) types.Message {
	t.Helper()
	ms := x.recv(t, url, 1, vis, 0)
	if len(ms) != 1 {
		t.Fatalf("received %d messages, want %q (receive %d)", len(ms), body, n)
	}
	wantMessage(t, ms[0], body, n)
	return ms[0]
}

// recvNone checks that nothing is receivable now.
func (x *target) recvNone(t *testing.T, url string, why string) {
	t.Helper()
	if ms := x.recv(t, url, 10, 0, 0); len(ms) != 0 {
		t.Fatalf("%s: received %v, want nothing", why, bodies(ms))
	}
}

func wantMessage(t *testing.T, m types.Message, body string, n int) {
	t.Helper()
	if got, count := aws.ToString(m.Body), m.Attributes["ApproximateReceiveCount"]; got != body || count != strconv.Itoa(n) {
		t.Fatalf("received %q (ApproximateReceiveCount %s), want %q (%d)", got, count, body, n)
	}
}

func bodies(ms []types.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = aws.ToString(m.Body)
	}
	return out
}

func wantBodies(t *testing.T, ms []types.Message, want ...string) {
	t.Helper()
	if got := bodies(ms); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("received %q, want %q", got, want)
	}
}

// send sends body and returns its MessageId.
func (x *target) send(t *testing.T, url, body string) string {
	t.Helper()
	out, err := x.c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: &body})
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	return aws.ToString(out.MessageId)
}

// sendGroup sends body to a FIFO queue's group, deduplicated by its body.
func (x *target) sendGroup(t *testing.T, url, body, group string) {
	t.Helper()
	if _, err := x.c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: &body,
		MessageGroupId: &group, MessageDeduplicationId: aws.String("d-" + body)}); err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
}

// batch names the entries e0, e1, … in handle order.
func entryID(i int) string { return fmt.Sprintf("e%d", i) }

func (x *target) delete(t *testing.T, url string, handles ...string) *sqs.DeleteMessageBatchOutput {
	t.Helper()
	in := &sqs.DeleteMessageBatchInput{QueueUrl: &url}
	for i, h := range handles {
		in.Entries = append(in.Entries, types.DeleteMessageBatchRequestEntry{Id: aws.String(entryID(i)), ReceiptHandle: aws.String(h)})
	}
	out, err := x.c.DeleteMessageBatch(ctx, in)
	if err != nil {
		t.Fatalf("DeleteMessageBatch: %v", err)
	}
	return out
}

func (x *target) change(t *testing.T, url string, vis int32, handles ...string) *sqs.ChangeMessageVisibilityBatchOutput {
	t.Helper()
	in := &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: &url}
	for i, h := range handles {
		in.Entries = append(in.Entries, types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(entryID(i)),
			ReceiptHandle: aws.String(h), VisibilityTimeout: vis})
	}
	out, err := x.c.ChangeMessageVisibilityBatch(ctx, in)
	if err != nil {
		t.Fatalf("ChangeMessageVisibilityBatch: %v", err)
	}
	return out
}

// wantEntries checks a batch's results: the ids that succeeded, and the
// code (and a part of the message) of each that failed.
func wantEntries(t *testing.T, ok []string, failed []types.BatchResultErrorEntry, wantOK []string, wantFailed map[string][2]string) {
	t.Helper()
	if strings.Join(ok, ",") != strings.Join(wantOK, ",") {
		t.Errorf("successful entries %v, want %v", ok, wantOK)
	}
	if len(failed) != len(wantFailed) {
		t.Errorf("%d failed entries, want %d: %s", len(failed), len(wantFailed), describe(failed))
	}
	for _, f := range failed {
		w, found := wantFailed[aws.ToString(f.Id)]
		switch {
		case !found:
			t.Errorf("entry %s failed: %s", aws.ToString(f.Id), describe([]types.BatchResultErrorEntry{f}))
		case aws.ToString(f.Code) != w[0] || !strings.Contains(aws.ToString(f.Message), w[1]) || !f.SenderFault:
			t.Errorf("entry %s failed with %s, want %s %q (SenderFault)", aws.ToString(f.Id), describe([]types.BatchResultErrorEntry{f}), w[0], w[1])
		}
	}
}

func describe(fs []types.BatchResultErrorEntry) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "[%s %s %q sender=%t]", aws.ToString(f.Id), aws.ToString(f.Code), aws.ToString(f.Message), f.SenderFault)
	}
	return b.String()
}

func deleted(out *sqs.DeleteMessageBatchOutput) []string {
	var ids []string
	for _, e := range out.Successful {
		ids = append(ids, aws.ToString(e.Id))
	}
	return ids
}

func changed(out *sqs.ChangeMessageVisibilityBatchOutput) []string {
	var ids []string
	for _, e := range out.Successful {
		ids = append(ids, aws.ToString(e.Id))
	}
	return ids
}

// wantDeleted and wantChanged check that a batch's n entries succeeded.
func wantDeleted(t *testing.T, out *sqs.DeleteMessageBatchOutput, n int) {
	t.Helper()
	wantEntries(t, deleted(out), out.Failed, ids(n), nil)
}

func wantChanged(t *testing.T, out *sqs.ChangeMessageVisibilityBatchOutput, n int) {
	t.Helper()
	wantEntries(t, changed(out), out.Failed, ids(n), nil)
}

func ids(n int) []string {
	var out []string
	for i := 0; i < n; i++ {
		out = append(out, entryID(i))
	}
	return out
}

// wantCode checks that err is an SQS error with the given code.
func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != code {
		t.Fatalf("error %v, want %s", err, code)
	}
}

func handle(m types.Message) string { return aws.ToString(m.ReceiptHandle) }

func caseSendReceiveDelete(t *testing.T, x *target) {
	q := x.create(t, "jobs", nil)
	id := x.send(t, q, "hello")
	m := x.recvOne(t, q, 30, "hello", 1)
	if got := aws.ToString(m.MessageId); got != id {
		t.Fatalf("received MessageId %s, want the sent %s", got, id)
	}
	if handle(m) == "" {
		t.Fatal("no receipt handle")
	}
	x.recvNone(t, q, "while leased")
	wantDeleted(t, x.delete(t, q, handle(m)), 1)
	x.clock.Advance(31 * time.Second)
	x.recvNone(t, q, "after the delete and the lease")
}

func caseVisibilityLapses(t *testing.T, x *target) {
	q := x.create(t, "jobs", map[string]string{"VisibilityTimeout": "30"})
	x.send(t, q, "a")
	x.recvOne(t, q, 0, "a", 1) // the queue's timeout
	x.clock.Advance(30*time.Second - time.Millisecond)
	x.recvNone(t, q, "1ms before the lease lapses")
	x.clock.Advance(time.Millisecond)
	x.recvOne(t, q, 0, "a", 2)
}

func caseReceiveVisibility(t *testing.T, x *target) {
	q := x.create(t, "jobs", map[string]string{"VisibilityTimeout": "30"})
	x.send(t, q, "a")
	x.recvOne(t, q, 5, "a", 1)
	x.clock.Advance(5 * time.Second)
	x.recvOne(t, q, 0, "a", 2)
	// The receive's own timeout held for its lease only.
	x.clock.Advance(29 * time.Second)
	x.recvNone(t, q, "29s into the queue's 30s lease")
}

func caseChangeExtends(t *testing.T, x *target) {
	q := x.create(t, "jobs", nil)
	x.send(t, q, "a")
	m := x.recvOne(t, q, 10, "a", 1)
	x.clock.Advance(5 * time.Second)
	// The new timeout counts from the call and replaces the rest.
	wantChanged(t, x.change(t, q, 20, handle(m)), 1)
	x.clock.Advance(20*time.Second - time.Millisecond)
	x.recvNone(t, q, "1ms before the extended lease lapses")
	x.clock.Advance(time.Millisecond)
	x.recvOne(t, q, 10, "a", 2)
}

func caseChangeReleases(t *testing.T, x *target) {
	q := x.create(t, "jobs", nil)
	x.send(t, q, "a")
	m := x.recvOne(t, q, 60, "a", 1)
	wantChanged(t, x.change(t, q, 0, handle(m)), 1)
	x.recvOne(t, q, 60, "a", 2)
}

func caseChangeCeiling(t *testing.T, x *target) {
	q := x.create(t, "jobs", nil)
	x.send(t, q, "a")
	m := x.recvOne(t, q, 60, "a", 1)
	x.clock.Advance(time.Second)
	// 12 hours from the receive is the most a lease may reach.
	out := x.change(t, q, 43200, handle(m))
	wantEntries(t, changed(out), out.Failed, nil, map[string][2]string{"e0": {"InvalidParameterValue", "beyond the limit"}})
	wantChanged(t, x.change(t, q, 43199, handle(m)), 1)
	x.clock.Advance(43199*time.Second - time.Millisecond)
	x.recvNone(t, q, "within the extended lease")
}

func caseChangeLapsed(t *testing.T, x *target) {
	q := x.create(t, "jobs", nil)
	x.send(t, q, "a")
	m := x.recvOne(t, q, 10, "a", 1)
	x.clock.Advance(10 * time.Second)
	// A change on a lapsed lease answers success and hides nothing.
	wantChanged(t, x.change(t, q, 60, handle(m)), 1)
	x.recvOne(t, q, 10, "a", 2)
}

func caseChangeDeleted(t *testing.T, x *target) {
	q := x.create(t, "jobs", nil)
	x.send(t, q, "a")
	m := x.recvOne(t, q, 10, "a", 1)
	wantDeleted(t, x.delete(t, q, handle(m)), 1)
	out := x.change(t, q, 30, handle(m))
	wantEntries(t, changed(out), out.Failed, nil, map[string][2]string{"e0": {"InvalidParameterValue", "Message does not exist"}})
}

func caseStaleDelete(t *testing.T, x *target) {
	q := x.create(t, "jobs", nil)
	x.send(t, q, "a")
	old := x.recvOne(t, q, 10, "a", 1)
	x.clock.Advance(10 * time.Second)
	x.recvOne(t, q, 10, "a", 2)
	// On a standard queue any handle ever issued deletes the message.
	wantDeleted(t, x.delete(t, q, handle(old)), 1)
	x.clock.Advance(10 * time.Second)
	x.recvNone(t, q, "after a delete by the older handle")
}

func caseStaleChange(t *testing.T, x *target) {
	q := x.create(t, "jobs", nil)
	x.send(t, q, "a")
	old := x.recvOne(t, q, 10, "a", 1)
	x.clock.Advance(10 * time.Second)
	x.recvOne(t, q, 10, "a", 2)
	// A change through the older handle applies to the current lease.
	wantChanged(t, x.change(t, q, 60, handle(old)), 1)
	x.clock.Advance(60*time.Second - time.Millisecond)
	x.recvNone(t, q, "within the lease extended by the older handle")
	x.clock.Advance(time.Millisecond)
	// A release through it releases the current lease.
	x.recvOne(t, q, 10, "a", 3)
	wantChanged(t, x.change(t, q, 0, handle(old)), 1)
	x.recvOne(t, q, 10, "a", 4)
}

func caseDeleteTwice(t *testing.T, x *target) {
	q := x.create(t, "jobs", nil)
	x.send(t, q, "a")
	m := x.recvOne(t, q, 10, "a", 1)
	wantDeleted(t, x.delete(t, q, handle(m)), 1)
	wantDeleted(t, x.delete(t, q, handle(m)), 1)
}

func caseBatchEntries(t *testing.T, x *target) {
	q := x.create(t, "jobs", nil)
	other := x.create(t, "other", nil)
	x.send(t, q, "a")
	x.send(t, q, "b")
	x.send(t, other, "o")
	ms := x.recv(t, q, 10, 30, 0)
	wantBodies(t, ms, "a", "b")
	foreign := x.recvOne(t, other, 30, "o", 1)
	invalid := map[string][2]string{
		"e1": {"ReceiptHandleIsInvalid", "receipt handle"},
		"e2": {"ReceiptHandleIsInvalid", "receipt handle"},
	}
	out := x.change(t, q, 0, handle(ms[0]), "not-a-handle", handle(foreign))
	wantEntries(t, changed(out), out.Failed, []string{"e0"}, invalid)
	x.recvOne(t, q, 30, "a", 2)
	del := x.delete(t, q, handle(ms[1]), "not-a-handle", handle(foreign))
	wantEntries(t, deleted(del), del.Failed, []string{"e0"}, invalid)
	// The request's own faults fail it whole.
	var many []string
	for i := 0; i < 11; i++ {
		many = append(many, handle(ms[0]))
	}
	_, err := x.c.DeleteMessageBatch(ctx, deleteInput(q, many...))
	wantCode(t, err, "AWS.SimpleQueueService.TooManyEntriesInBatchRequest")
	in := deleteInput(q, handle(ms[0]), handle(ms[0]))
	in.Entries[1].Id = in.Entries[0].Id
	_, err = x.c.DeleteMessageBatch(ctx, in)
	wantCode(t, err, "AWS.SimpleQueueService.BatchEntryIdsNotDistinct")
	_, err = x.c.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: &q,
		Entries: []types.ChangeMessageVisibilityBatchRequestEntry{}})
	wantCode(t, err, "AWS.SimpleQueueService.EmptyBatchRequest")
}

func deleteInput(url string, handles ...string) *sqs.DeleteMessageBatchInput {
	in := &sqs.DeleteMessageBatchInput{QueueUrl: &url}
	for i, h := range handles {
		in.Entries = append(in.Entries, types.DeleteMessageBatchRequestEntry{Id: aws.String(entryID(i)), ReceiptHandle: aws.String(h)})
	}
	return in
}

func caseMaxMessages(t *testing.T, x *target) {
	q := x.create(t, "jobs", nil)
	for i := 0; i < 12; i++ {
		x.send(t, q, fmt.Sprintf("m%02d", i))
	}
	if ms := x.recv(t, q, 0, 30, 0); len(ms) != 1 {
		t.Fatalf("no MaxNumberOfMessages: %d messages, want 1", len(ms))
	}
	if ms := x.recv(t, q, 10, 30, 0); len(ms) != 10 {
		t.Fatalf("MaxNumberOfMessages 10: %d messages, want 10", len(ms))
	}
	if ms := x.recv(t, q, 10, 30, 0); len(ms) != 1 {
		t.Fatalf("the last: %d messages, want 1", len(ms))
	}
	for _, bad := range []int32{11, -1} {
		_, err := x.c.ReceiveMessage(ctx, receiveInput(q, bad, 30, 0))
		wantCode(t, err, "InvalidParameterValue")
	}
	_, err := x.c.ReceiveMessage(ctx, receiveInput(q, 1, 30, 21))
	wantCode(t, err, "InvalidParameterValue")
	_, err = x.c.ReceiveMessage(ctx, receiveInput(q, 1, 43201, 0))
	wantCode(t, err, "InvalidParameterValue")
}

// poll starts a long poll and returns where its messages will come.
func (x *target) poll(t *testing.T, url string, wait int32) <-chan []types.Message {
	done := make(chan []types.Message, 1)
	go func() {
		out, err := x.c.ReceiveMessage(ctx, receiveInput(url, 10, 30, wait))
		if err != nil {
			t.Errorf("ReceiveMessage: %v", err)
			done <- nil
			return
		}
		done <- out.Messages
	}()
	return done
}

func caseLongPollArrives(t *testing.T, x *target) {
	q := x.create(t, "jobs", nil)
	done := x.poll(t, q, 20)
	x.waitPolls(t, 1)
	x.send(t, q, "wake")
	ms := <-done
	wantBodies(t, ms, "wake")
	wantMessage(t, ms[0], "wake", 1)
}

func caseLongPollLapse(t *testing.T, x *target) {
	q := x.create(t, "jobs", nil)
	x.send(t, q, "a")
	x.recvOne(t, q, 10, "a", 1)
	done := x.poll(t, q, 20)
	x.waitPolls(t, 1)
	x.clock.Advance(10 * time.Second)
	ms := <-done
	wantBodies(t, ms, "a")
	wantMessage(t, ms[0], "a", 2)
}

func caseLongPollRelease(t *testing.T, x *target) {
	q := x.create(t, "jobs", nil)
	x.send(t, q, "a")
	m := x.recvOne(t, q, 60, "a", 1)
	done := x.poll(t, q, 20)
	x.waitPolls(t, 1)
	wantChanged(t, x.change(t, q, 0, handle(m)), 1)
	ms := <-done
	wantBodies(t, ms, "a")
	wantMessage(t, ms[0], "a", 2)
}

func caseSendDelay(t *testing.T, x *target) {
	q := x.create(t, "jobs", nil)
	body := "later"
	if _, err := x.c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &q, MessageBody: &body, DelaySeconds: 10}); err != nil {
		t.Fatal(err)
	}
	x.clock.Advance(10*time.Second - time.Millisecond)
	x.recvNone(t, q, "1ms before the delay ends")
	x.clock.Advance(time.Millisecond)
	x.recvOne(t, q, 10, "later", 1)
	// A FIFO queue takes no delay of a message's own.
	f := x.create(t, "jobs.fifo", nil)
	_, err := x.c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &f, MessageBody: &body, DelaySeconds: 10,
		MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("d")})
	wantCode(t, err, "InvalidParameterValue")
}

func caseLongPollEmpty(t *testing.T, x *target) {
	q := x.create(t, "jobs", nil)
	done := x.poll(t, q, 20)
	x.waitPolls(t, 1)
	x.clock.Advance(20*time.Second - time.Millisecond)
	select {
	case ms := <-done:
		t.Fatalf("the long poll ended 1ms early with %v", bodies(ms))
	default:
	}
	x.clock.Advance(time.Millisecond)
	if ms := <-done; len(ms) != 0 {
		t.Fatalf("the long poll ended with %v, want nothing", bodies(ms))
	}
	// The queue's ReceiveMessageWaitTimeSeconds when the receive says
	// nothing.
	slow := x.create(t, "slow", map[string]string{"ReceiveMessageWaitTimeSeconds": "5"})
	done = x.poll(t, slow, 0)
	x.waitPolls(t, 1)
	if next, ok := x.clock.NextDeadline(); !ok || !next.Equal(x.clock.Now().Add(5*time.Second)) {
		t.Fatalf("the poll waits until %v (%t), want 5s from now", next, ok)
	}
	x.clock.Advance(5 * time.Second)
	if ms := <-done; len(ms) != 0 {
		t.Fatalf("the long poll ended with %v, want nothing", bodies(ms))
	}
}

func caseAttributes(t *testing.T, x *target) {
	q := x.create(t, "jobs", nil)
	sent := x.clock.Now()
	body := "a"
	if _, err := x.c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &q, MessageBody: &body,
		MessageAttributes: map[string]types.MessageAttributeValue{
			"kind":     {DataType: aws.String("String"), StringValue: aws.String("job")},
			"attempts": {DataType: aws.String("Number"), StringValue: aws.String("2")},
		},
		MessageSystemAttributes: map[string]types.MessageSystemAttributeValue{
			"AWSTraceHeader": {DataType: aws.String("String"), StringValue: aws.String("Root=1-5759e988-bd862e3fe1be46a994272793")},
		}}); err != nil {
		t.Fatal(err)
	}
	x.clock.Advance(2 * time.Second)
	first := x.clock.Now()
	m := x.recvOne(t, q, 10, "a", 1)
	ms := func(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }
	wantAttrs := func(m types.Message) {
		t.Helper()
		if got := m.Attributes["SentTimestamp"]; got != ms(sent) {
			t.Errorf("SentTimestamp %s, want %s", got, ms(sent))
		}
		if got := m.Attributes["ApproximateFirstReceiveTimestamp"]; got != ms(first) {
			t.Errorf("ApproximateFirstReceiveTimestamp %s, want %s", got, ms(first))
		}
		if _, ok := m.Attributes["MessageGroupId"]; ok {
			t.Errorf("a standard queue's message has MessageGroupId %q", m.Attributes["MessageGroupId"])
		}
		if v := m.MessageAttributes["kind"]; aws.ToString(v.DataType) != "String" || aws.ToString(v.StringValue) != "job" {
			t.Errorf("message attribute kind: %+v", v)
		}
		if v := m.MessageAttributes["attempts"]; aws.ToString(v.DataType) != "Number" || aws.ToString(v.StringValue) != "2" {
			t.Errorf("message attribute attempts: %+v", v)
		}
		if got := m.Attributes["AWSTraceHeader"]; got != "Root=1-5759e988-bd862e3fe1be46a994272793" {
			t.Errorf("AWSTraceHeader %q", got)
		}
	}
	wantAttrs(m)
	x.clock.Advance(10 * time.Second)
	wantAttrs(x.recvOne(t, q, 10, "a", 2))
}

func caseFIFOAttributes(t *testing.T, x *target) {
	q := x.create(t, "jobs.fifo", nil)
	x.sendGroup(t, q, "a", "g1")
	m := x.recvOne(t, q, 10, "a", 1)
	if got := m.Attributes["MessageGroupId"]; got != "g1" {
		t.Errorf("MessageGroupId %q, want g1", got)
	}
	if got := m.Attributes["MessageDeduplicationId"]; got != "d-a" {
		t.Errorf("MessageDeduplicationId %q, want d-a", got)
	}
	if m.Attributes["SequenceNumber"] == "" {
		t.Error("no SequenceNumber")
	}
}

// groups returns the bodies received of each group, in order.
func groups(ms []types.Message) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		g := m.Attributes["MessageGroupId"]
		out[g] = strings.TrimPrefix(out[g]+","+aws.ToString(m.Body), ",")
	}
	return out
}

func wantGroups(t *testing.T, ms []types.Message, want map[string]string) {
	t.Helper()
	got := groups(ms)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("received by group %v, want %v", got, want)
	}
}

func caseFIFOOrder(t *testing.T, x *target) {
	q := x.create(t, "jobs.fifo", nil)
	for _, b := range []string{"a1", "a2", "a3"} {
		x.sendGroup(t, q, b, "a")
	}
	x.sendGroup(t, q, "b1", "b")
	x.recvOne(t, q, 10, "a1", 1)
	// Group a is blocked while its head is in flight.
	wantBodies(t, x.recv(t, q, 10, 10, 0), "b1")
	x.recvNone(t, q, "both groups in flight")
	x.clock.Advance(10 * time.Second)
	// The lapsed head comes first again, with its group behind it; the
	// order across groups is not pinned.
	ms := x.recv(t, q, 10, 10, 0)
	wantGroups(t, ms, map[string]string{"a": "a1,a2,a3", "b": "b1"})
	for _, m := range ms {
		if aws.ToString(m.Body) == "a1" {
			wantMessage(t, m, "a1", 2)
			wantDeleted(t, x.delete(t, q, handle(m)), 1)
		}
	}
	x.clock.Advance(10 * time.Second)
	wantGroups(t, x.recv(t, q, 10, 10, 0), map[string]string{"a": "a2,a3", "b": "b1"})
}

func caseFIFORelease(t *testing.T, x *target) {
	q := x.create(t, "jobs.fifo", nil)
	x.sendGroup(t, q, "a1", "a")
	x.sendGroup(t, q, "a2", "a")
	m := x.recvOne(t, q, 30, "a1", 1)
	x.recvNone(t, q, "the group's head in flight")
	wantChanged(t, x.change(t, q, 0, handle(m)), 1)
	ms := x.recv(t, q, 10, 30, 0)
	wantBodies(t, ms, "a1", "a2")
	wantMessage(t, ms[0], "a1", 2)
}

func caseFIFOStale(t *testing.T, x *target) {
	q := x.create(t, "jobs.fifo", nil)
	x.sendGroup(t, q, "a1", "a")
	old := x.recvOne(t, q, 10, "a1", 1)
	x.clock.Advance(10 * time.Second)
	expired := map[string][2]string{"e0": {"InvalidParameterValue", "The receipt handle has expired"}}
	// A lapsed lease's handle does not delete on a FIFO queue; a change
	// through it answers success and hides nothing.
	del := x.delete(t, q, handle(old))
	wantEntries(t, deleted(del), del.Failed, nil, expired)
	wantChanged(t, x.change(t, q, 60, handle(old)), 1)
	cur := x.recvOne(t, q, 10, "a1", 2)
	// Superseded by a later receive, it changes nothing either: FIFO
	// queues heed only the current handle.
	wantChanged(t, x.change(t, q, 0, handle(old)), 1)
	x.recvNone(t, q, "after a release by the superseded handle")
	del = x.delete(t, q, handle(old))
	wantEntries(t, deleted(del), del.Failed, nil, expired)
	// An extended lease deletes within its extended time.
	x.clock.Advance(5 * time.Second)
	wantChanged(t, x.change(t, q, 30, handle(cur)), 1)
	x.clock.Advance(20 * time.Second)
	wantDeleted(t, x.delete(t, q, handle(cur)), 1)
	x.clock.Advance(time.Minute)
	x.recvNone(t, q, "after the delete")
}

func caseFIFODedup(t *testing.T, x *target) {
	q := x.create(t, "jobs.fifo", nil)
	sendDedup := func(body, dedup string) (string, error) {
		in := &sqs.SendMessageInput{QueueUrl: &q, MessageBody: &body, MessageGroupId: aws.String("g")}
		if dedup != "" {
			in.MessageDeduplicationId = &dedup
		}
		out, err := x.c.SendMessage(ctx, in)
		if err != nil {
			return "", err
		}
		return aws.ToString(out.MessageId), nil
	}
	first, err := sendDedup("a", "same")
	if err != nil {
		t.Fatal(err)
	}
	// The same id within 5 minutes answers the first message's id and
	// enqueues nothing, even once that message is deleted.
	again, err := sendDedup("b", "same")
	if err != nil || again != first {
		t.Fatalf("the same deduplication id: MessageId %s, %v; want the first's %s", again, err, first)
	}
	m := x.recvOne(t, q, 10, "a", 1)
	wantDeleted(t, x.delete(t, q, handle(m)), 1)
	if _, err := sendDedup("c", "same"); err != nil {
		t.Fatal(err)
	}
	x.recvNone(t, q, "a duplicate sent after the delete")
	x.clock.Advance(5 * time.Minute)
	if _, err := sendDedup("d", "same"); err != nil {
		t.Fatal(err)
	}
	x.recvOne(t, q, 10, "d", 1)
	// No id, and no content-based deduplication: refused.
	_, err = sendDedup("e", "")
	wantCode(t, err, "InvalidParameterValue")
	// Content-based: the body is the id.
	cbd := x.create(t, "cbd.fifo", map[string]string{"ContentBasedDeduplication": "true"})
	q = cbd
	one, err := sendDedup("x", "")
	if err != nil {
		t.Fatal(err)
	}
	if two, err := sendDedup("x", ""); err != nil || two != one {
		t.Fatalf("the same body: MessageId %s, %v; want %s", two, err, one)
	}
	if _, err := sendDedup("y", ""); err != nil {
		t.Fatal(err)
	}
	wantBodies(t, x.recv(t, q, 10, 10, 0), "x", "y")
}

func caseRedrive(t *testing.T, x *target) {
	dlq := x.create(t, "jobs-dlq", nil)
	arn := x.queueAttrs(t, dlq)["QueueArn"]
	q := x.create(t, "jobs", map[string]string{
		"RedrivePolicy": `{"deadLetterTargetArn":"` + arn + `","maxReceiveCount":"2"}`,
	})
	id := x.send(t, q, "poison")
	for n := 1; n <= 2; n++ {
		x.recvOne(t, q, 10, "poison", n)
		x.clock.Advance(10 * time.Second)
	}
	// Received twice, the third receive moves it instead of returning it,
	// and still returns what else there is.
	x.send(t, q, "fine")
	fine := x.recv(t, q, 10, 10, 0)
	wantBodies(t, fine, "fine")
	wantDeleted(t, x.delete(t, q, handle(fine[0])), 1)
	m := x.recvOne(t, dlq, 10, "poison", 3)
	// It keeps its send time and first receive.
	if got, want := m.Attributes["SentTimestamp"], strconv.FormatInt(batontest.Epoch.UnixMilli(), 10); got != want {
		t.Errorf("the dead letter's SentTimestamp %s, want %s", got, want)
	}
	if got, want := m.Attributes["ApproximateFirstReceiveTimestamp"], strconv.FormatInt(batontest.Epoch.UnixMilli(), 10); got != want {
		t.Errorf("the dead letter's ApproximateFirstReceiveTimestamp %s, want %s", got, want)
	}
	if got := aws.ToString(m.MessageId); got != id {
		t.Errorf("the dead letter's MessageId %s, want %s", got, id)
	}
	if got := m.Attributes["DeadLetterQueueSourceArn"]; got != x.queueAttrs(t, q)["QueueArn"] {
		t.Errorf("DeadLetterQueueSourceArn %q", got)
	}
	x.clock.Advance(10 * time.Second)
	x.recvNone(t, q, "after the move")
}

func caseRedriveFIFO(t *testing.T, x *target) {
	dlq := x.create(t, "jobs-dlq.fifo", nil)
	arn := x.queueAttrs(t, dlq)["QueueArn"]
	q := x.create(t, "jobs.fifo", map[string]string{
		"RedrivePolicy": `{"deadLetterTargetArn":"` + arn + `","maxReceiveCount":1}`,
	})
	x.sendGroup(t, q, "a1", "a")
	x.sendGroup(t, q, "a2", "a")
	x.recvOne(t, q, 10, "a1", 1)
	x.clock.Advance(10 * time.Second)
	// The head moves; the group carries on behind it.
	ms := x.recv(t, q, 10, 10, 0)
	wantBodies(t, ms, "a2")
	m := x.recvOne(t, dlq, 10, "a1", 2)
	if got := m.Attributes["MessageGroupId"]; got != "a" {
		t.Errorf("the dead letter's MessageGroupId %q, want a", got)
	}
}

func (x *target) queueAttrs(t *testing.T, url string) map[string]string {
	t.Helper()
	out, err := x.c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &url,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
	if err != nil {
		t.Fatalf("GetQueueAttributes: %v", err)
	}
	return out.Attributes
}

func caseQueueAttributes(t *testing.T, x *target) {
	dlq := x.create(t, "jobs-dlq", nil)
	arn := x.queueAttrs(t, dlq)["QueueArn"]
	if !strings.HasPrefix(arn, "arn:aws:sqs:") || !strings.HasSuffix(arn, ":jobs-dlq") {
		t.Fatalf("QueueArn %q", arn)
	}
	q := x.create(t, "jobs", map[string]string{"VisibilityTimeout": "7",
		"RedrivePolicy": `{"deadLetterTargetArn":"` + arn + `","maxReceiveCount":"3"}`})
	a := x.queueAttrs(t, q)
	if a["VisibilityTimeout"] != "7" {
		t.Errorf("VisibilityTimeout %q, want 7", a["VisibilityTimeout"])
	}
	// SQS renders the count as a number, whatever form it was given in.
	if want := `{"deadLetterTargetArn":"` + arn + `","maxReceiveCount":3}`; a["RedrivePolicy"] != want {
		t.Errorf("RedrivePolicy %s, want %s", a["RedrivePolicy"], want)
	}
	if n, target, err := consumer.ParseRedrivePolicy(a["RedrivePolicy"]); err != nil || n != 3 || target != arn {
		t.Errorf("ParseRedrivePolicy: %d %s %v", n, target, err)
	}
	if _, ok := a["FifoQueue"]; ok {
		t.Errorf("a standard queue has FifoQueue %q", a["FifoQueue"])
	}
	if got := x.queueAttrs(t, x.create(t, "jobs.fifo", nil))["FifoQueue"]; got != "true" {
		t.Errorf("a FIFO queue's FifoQueue %q", got)
	}
	// The dead-letter queue's URL, as the consumer resolves it.
	name := "jobs-dlq"
	u, err := x.c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: &name})
	if err != nil || aws.ToString(u.QueueUrl) != dlq {
		t.Fatalf("GetQueueUrl: %v %v, want %s", aws.ToString(u.QueueUrl), err, dlq)
	}
	// The counts: one visible, one in flight, one delayed.
	x.send(t, q, "a")
	x.send(t, q, "b")
	delayed := "c"
	if _, err := x.c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &q, MessageBody: &delayed, DelaySeconds: 60}); err != nil {
		t.Fatal(err)
	}
	x.recvOne(t, q, 30, "a", 1)
	a = x.queueAttrs(t, q)
	for k, want := range map[string]string{"ApproximateNumberOfMessages": "1",
		"ApproximateNumberOfMessagesNotVisible": "1", "ApproximateNumberOfMessagesDelayed": "1"} {
		if a[k] != want {
			t.Errorf("%s %q, want %s", k, a[k], want)
		}
	}
	// Asked for one attribute, the answer has that one.
	out, err := x.c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &q,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameVisibilityTimeout}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Attributes) != 1 || out.Attributes["VisibilityTimeout"] != "7" {
		t.Errorf("asked for VisibilityTimeout, got %v", out.Attributes)
	}
}

func caseMissingQueue(t *testing.T, x *target) {
	q := x.create(t, "jobs", nil)
	gone := strings.TrimSuffix(q, "jobs") + "gone"
	const code = "AWS.SimpleQueueService.NonExistentQueue"
	_, err := x.c.ReceiveMessage(ctx, receiveInput(gone, 1, 30, 0))
	wantCode(t, err, code)
	_, err = x.c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &gone, MessageBody: aws.String("a")})
	wantCode(t, err, code)
	_, err = x.c.DeleteMessageBatch(ctx, deleteInput(gone, "h"))
	wantCode(t, err, code)
	_, err = x.c.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: &gone,
		Entries: []types.ChangeMessageVisibilityBatchRequestEntry{{Id: aws.String("e0"), ReceiptHandle: aws.String("h")}}})
	wantCode(t, err, code)
	_, err = x.c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &gone,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
	wantCode(t, err, code)
	_, err = x.c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("gone")})
	wantCode(t, err, code)
}
