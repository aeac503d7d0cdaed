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

func mustSend(tb testing.TB, c *sqs.Client, url, body string) string {
	tb.Helper()
	out, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: &body})
	if err != nil {
		tb.Fatal(err)
	}
	return *out.MessageId
}

// changeVisibility sets the visibility timeout of the message that handle,
// a receipt handle of the queue at url, names.
func changeVisibility(c *sqs.Client, url string, handle *string, timeout int32) error {
	_, err := c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: &url, ReceiptHandle: handle, VisibilityTimeout: timeout})
	return err
}

// deleteMessage deletes the message that handle, a receipt handle of the
// queue at url, names.
func deleteMessage(c *sqs.Client, url string, handle *string) error {
	_, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &url, ReceiptHandle: handle})
	return err
}

// The classic incident: a 90 s handler on a 30 s lease. The message is handed
// out three times; the first worker's late delete still succeeds, as on SQS.
func TestClassicIncidentTimeline(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	url := srv.MustCreateQueue(t, "classic", map[string]string{"VisibilityTimeout": "30"})
	id := mustSend(t, c, url, "work")

	a := receiveOne(t, c, url, nil) // t=0: worker A
	if got := a.Attributes["ApproximateReceiveCount"]; got != "1" {
		t.Errorf("A sees receive count %s, want 1", got)
	}
	srv.Clock.Advance(29 * time.Second)
	receiveNone(t, c, url)
	srv.Clock.Advance(time.Second) // t=30: A's lease lapses
	checkCounts(t, c, url, 1, 0, 0)

	srv.Clock.Advance(time.Second) // t=31: worker B gets the same work
	b := receiveOne(t, c, url, nil)
	if *b.MessageId != id || b.Attributes["ApproximateReceiveCount"] != "2" {
		t.Errorf("B got %s with receive count %s, want %s with 2", *b.MessageId, b.Attributes["ApproximateReceiveCount"], id)
	}
	if *b.ReceiptHandle == *a.ReceiptHandle {
		t.Error("B got A's receipt handle; every receive needs a new one")
	}
	srv.Clock.Advance(29 * time.Second) // t=60
	receiveNone(t, c, url)
	srv.Clock.Advance(time.Second) // t=61: B's lease lapses too
	checkCounts(t, c, url, 1, 0, 0)
	srv.Clock.Advance(time.Second) // t=62: worker C
	cc := receiveOne(t, c, url, nil)
	if got := cc.Attributes["ApproximateReceiveCount"]; got != "3" {
		t.Errorf("C sees receive count %s, want 3", got)
	}

	srv.Clock.Advance(28 * time.Second) // t=90: A finally deletes, with its stale handle
	if err := deleteMessage(c, url, a.ReceiptHandle); err != nil {
		t.Fatalf("A's late delete: %v", err)
	}
	checkCounts(t, c, url, 0, 0, 0)
	// C, still working, can no longer extend: the message is gone.
	wantAPIError(t, changeVisibility(c, url, cc.ReceiptHandle, 30), "InvalidParameterValue", http.StatusBadRequest)
}

func TestRenewalCountsFromNow(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	url := srv.MustCreateQueue(t, "renew", nil)
	mustSend(t, c, url, "x")
	m := receiveOne(t, c, url, aws.Int32(30))
	srv.Clock.Advance(20 * time.Second)
	if err := changeVisibility(c, url, m.ReceiptHandle, 30); err != nil {
		t.Fatal(err)
	}
	srv.Clock.Advance(29 * time.Second) // t=49: 30 s from the renewal is t=50, not t=60
	receiveNone(t, c, url)
	srv.Clock.Advance(time.Second)
	again := receiveOne(t, c, url, nil)
	if again.Attributes["ApproximateReceiveCount"] != "2" {
		t.Errorf("receive count after renewal = %s, want 2 (renewals do not count)", again.Attributes["ApproximateReceiveCount"])
	}
	// The next lease uses the queue's timeout again, not the renewal's.
	srv.Clock.Advance(29 * time.Second)
	receiveNone(t, c, url)
	srv.Clock.Advance(time.Second)
	receiveOne(t, c, url, nil)
}

func TestReleaseWithZero(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	url := srv.MustCreateQueue(t, "release", nil)
	id := mustSend(t, c, url, "x")
	m := receiveOne(t, c, url, nil)
	receiveNone(t, c, url)
	if err := changeVisibility(c, url, m.ReceiptHandle, 0); err != nil {
		t.Fatal(err)
	}
	if got := receiveOne(t, c, url, nil); *got.MessageId != id {
		t.Errorf("after release got %s, want %s", *got.MessageId, id)
	}
}

// ReceiveMessage with an explicit VisibilityTimeout 0 leaves the message
// visible but still counts the receive. The SDK drops a zero, so send raw.
func TestReceiveWithVisibilityZero(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	url := srv.MustCreateQueue(t, "vis0", nil)
	mustSend(t, srv.Client, url, "x")
	for want := 1; want <= 2; want++ {
		_, body := rawJSON(t, srv.URL, "ReceiveMessage", map[string]any{
			"QueueUrl": url, "VisibilityTimeout": 0, "MessageSystemAttributeNames": []string{"ApproximateReceiveCount"},
		})
		msgs, _ := body["Messages"].([]any)
		if len(msgs) != 1 {
			t.Fatalf("receive %d: %v, want one message", want, body)
		}
		count := msgs[0].(map[string]any)["Attributes"].(map[string]any)["ApproximateReceiveCount"]
		if count != strconv.Itoa(want) {
			t.Errorf("receive %d: count %v", want, count)
		}
	}
}

func TestTwelveHourCeiling(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	url := srv.MustCreateQueue(t, "ceiling", nil)
	mustSend(t, c, url, "x")
	m := receiveOne(t, c, url, nil)
	cmv := func(timeout int32) error { return changeVisibility(c, url, m.ReceiptHandle, timeout) }
	// Extensions do not reset the ceiling: it stays 12 h after the receive.
	for hour := 0; hour < 11; hour++ {
		srv.Clock.Advance(time.Hour)
		if err := cmv(3600); err != nil {
			t.Fatalf("extension at hour %d: %v", hour+1, err)
		}
	}
	srv.Clock.Advance(30 * time.Minute) // t = 11.5 h
	if err := cmv(1800); err != nil {
		t.Errorf("extension to exactly 12 h: %v", err)
	}
	wantAPIError(t, cmv(1801), "InvalidParameterValue", http.StatusBadRequest)
	wantAPIError(t, cmv(43201), "InvalidParameterValue", http.StatusBadRequest)
}

// A visibility change with the handle of a lapsed lease succeeds and leaves
// the message visible (SQS answers such a change OK and does nothing, by an
// AWS-validated LocalStack test of an expired handle); once the message is
// in flight again the handle moves the new lease, as on SQS; on a deleted
// message it fails.
func TestChangeVisibilityAfterLapse(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	url := srv.MustCreateQueue(t, "lapse", nil)
	mustSend(t, c, url, "x")
	old := receiveOne(t, c, url, aws.Int32(10))
	srv.Clock.Advance(11 * time.Second)
	if err := changeVisibility(c, url, old.ReceiptHandle, 300); err != nil {
		t.Fatalf("change with a lapsed handle: %v", err)
	}
	checkCounts(t, c, url, 1, 0, 0)
	current := receiveOne(t, c, url, nil)
	// The older handle still addresses the message in flight: it releases it.
	if err := changeVisibility(c, url, old.ReceiptHandle, 0); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, c, url, 1, 0, 0)
	if err := deleteMessage(c, url, current.ReceiptHandle); err != nil {
		t.Fatal(err)
	}
	wantAPIError(t, changeVisibility(c, url, current.ReceiptHandle, 10), "InvalidParameterValue", http.StatusBadRequest)
}

type received struct {
	out *sqs.ReceiveMessageOutput
	err error
}

func longPoll(c *sqs.Client, url string, wait int32) <-chan received {
	ch := make(chan received, 1)
	go func() {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, WaitTimeSeconds: wait, MaxNumberOfMessages: 10})
		ch <- received{out, err}
	}()
	return ch
}

func mustGet(tb testing.TB, ch <-chan received, n int) {
	tb.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			tb.Fatal(r.err)
		}
		if len(r.out.Messages) != n {
			tb.Fatalf("long poll returned %d messages, want %d", len(r.out.Messages), n)
		}
	case <-time.After(10 * time.Second):
		tb.Fatal("long poll did not return")
	}
}

func TestLongPollDelayedMessageMatures(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	url := srv.MustCreateQueue(t, "lp-delay", nil)
	ch := longPoll(c, url, 20)
	srv.WaitForDeadline(t, testutil.Epoch.Add(20*time.Second))
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("later"), DelaySeconds: 5}); err != nil {
		t.Fatal(err)
	}
	// The waiter now sleeps until the delay ends, not until its deadline.
	srv.WaitForDeadline(t, testutil.Epoch.Add(5*time.Second))
	select {
	case r := <-ch:
		t.Fatalf("long poll returned before the delay ended: %+v", r)
	default:
	}
	srv.Clock.Advance(5 * time.Second)
	mustGet(t, ch, 1)
}

func TestLongPollWokenBySend(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	url := srv.MustCreateQueue(t, "lp-send", nil)
	ch := longPoll(c, url, 20)
	srv.WaitForDeadline(t, testutil.Epoch.Add(20*time.Second))
	mustSend(t, c, url, "now")
	mustGet(t, ch, 1) // no clock movement needed
}

func TestLongPollLeaseLapses(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	url := srv.MustCreateQueue(t, "lp-lapse", map[string]string{"VisibilityTimeout": "10"})
	mustSend(t, c, url, "x")
	receiveOne(t, c, url, nil)
	ch := longPoll(c, url, 20)
	srv.WaitForDeadline(t, testutil.Epoch.Add(10*time.Second))
	srv.Clock.Advance(10 * time.Second)
	mustGet(t, ch, 1)
}

func TestLongPollTimesOutEmpty(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	// The queue's default wait applies when the request gives none.
	url := srv.MustCreateQueue(t, "lp-empty", map[string]string{"ReceiveMessageWaitTimeSeconds": "15"})
	ch := make(chan received, 1)
	go func() {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url})
		ch <- received{out, err}
	}()
	srv.WaitForDeadline(t, testutil.Epoch.Add(15*time.Second))
	srv.Clock.Advance(15 * time.Second)
	mustGet(t, ch, 0)

	// An explicit WaitTimeSeconds 0 is a short poll even so. The SDK drops a
	// zero, so send it raw.
	resp, body := rawJSON(t, srv.URL, "ReceiveMessage", map[string]any{"QueueUrl": url, "WaitTimeSeconds": 0})
	if resp.StatusCode != 200 || len(body) != 0 {
		t.Errorf("short poll = %d %v, want 200 {}", resp.StatusCode, body)
	}
}

// A worker whose lease lapsed while it worked extends with its handle after
// the message went to another receiver: as on SQS (the AWS-validated
// LocalStack test test_terminate_visibility_timeout_after_receive changes a
// message in flight through an earlier receive's handle) the extension
// holds the message, singly and in a batch, so it is not handed out a third
// time.
func TestOldHandleExtendsAfterRedelivery(t *testing.T) {
	onEveryStore(t, oldHandleExtendsAfterRedelivery)
}

func oldHandleExtendsAfterRedelivery(t *testing.T, srv *testutil.Server) {
	c := srv.Client
	url := srv.MustCreateQueue(t, "old-extend", nil)
	mustSend(t, c, url, "x")
	first := receiveOne(t, c, url, aws.Int32(10))
	srv.Clock.Advance(11 * time.Second)
	receiveOne(t, c, url, aws.Int32(10)) // until t=21
	srv.Clock.Advance(4 * time.Second)   // t=15
	if err := changeVisibility(c, url, first.ReceiptHandle, 60); err != nil {
		t.Fatalf("extend with the first handle: %v", err)
	}
	srv.Clock.Advance(10 * time.Second) // t=25
	receiveNone(t, c, url)
	checkCounts(t, c, url, 0, 1, 0)

	res, err := c.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: &url, Entries: []types.ChangeMessageVisibilityBatchRequestEntry{
		{Id: aws.String("old"), ReceiptHandle: first.ReceiptHandle, VisibilityTimeout: 120},
	}})
	if err != nil || len(res.Successful) != 1 || len(res.Failed) != 0 {
		t.Fatalf("batch extend with the first handle: %v %+v", err, res)
	}
	srv.Clock.Advance(100 * time.Second) // t=125: past the first extension's end (t=75)
	receiveNone(t, c, url)
	srv.Clock.Advance(20 * time.Second) // t=145: the batch's end
	third := receiveOne(t, c, url, nil)
	if got := third.Attributes["ApproximateReceiveCount"]; got != "3" {
		t.Errorf("receive count after the extensions = %s, want 3", got)
	}
}

func TestOldHandleDeletesAfterRedelivery(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	url := srv.MustCreateQueue(t, "old-handle", nil)
	mustSend(t, c, url, "x")
	first := receiveOne(t, c, url, aws.Int32(5))
	srv.Clock.Advance(5 * time.Second)
	receiveOne(t, c, url, aws.Int32(5))
	res, err := c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: &url, Entries: []types.DeleteMessageBatchRequestEntry{
		{Id: aws.String("old"), ReceiptHandle: first.ReceiptHandle},
	}})
	if err != nil || len(res.Successful) != 1 {
		t.Fatalf("delete with the first handle: %v %+v", err, res)
	}
	srv.Clock.Advance(10 * time.Second)
	receiveNone(t, c, url)
}

// A message whose lease lapsed comes back before messages sent after it, as
// on SQS: order by first send, not by the moment it became visible again.
func TestLapsedMessageComesBeforeLaterSends(t *testing.T) {
	onEveryStore(t, lapsedMessageComesBeforeLaterSends)
}

func lapsedMessageComesBeforeLaterSends(t *testing.T, srv *testutil.Server) {
	c := srv.Client
	url := srv.MustCreateQueue(t, "lapsed-first", nil)
	first := mustSend(t, c, url, "first")
	receiveOne(t, c, url, aws.Int32(10))
	srv.Clock.Advance(time.Second)
	mustSend(t, c, url, "second")
	mustSend(t, c, url, "third")
	srv.Clock.Advance(10 * time.Second) // the first lease lapsed
	if got := receiveOne(t, c, url, nil); *got.MessageId != first {
		t.Errorf("after the lapse got %q, want the first message", *got.Body)
	}
}
