package worker_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/consumer"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/worker"
)

// On a FIFO queue a failure fails every later message of the batch, so
// the group comes back whole and in order.
func TestFIFOStopsAtFirstFailure(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		failed []string // bodies the target reports
		second []string // the redelivered batch, in order
	}{
		{"second fails", []string{"m1"}, []string{"m1", "m2", "m3", "m4"}},
		{"two later fail", []string{"m4", "m3"}, []string{"m3", "m4"}},
		{"last fails", []string{"m4"}, []string{"m4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			url := w.queue("jobs.fifo", map[string]string{"FifoQueue": "true", "VisibilityTimeout": "30"})
			w.send(url, numbered("m", 5)...)
			rec, target := w.httpTarget(func(n int, e event, _ *http.Request) (int, http.Header, string) {
				if n > 1 {
					return http.StatusOK, nil, ""
				}
				var items []string
				for _, b := range tt.failed {
					items = append(items, fmt.Sprintf(`{"itemIdentifier":%q}`, e.idOf(b)))
				}
				return http.StatusOK, nil, `{"batchItemFailures":[` + strings.Join(items, ",") + `]}`
			})
			w.start(worker.Config{QueueURL: url, Target: &worker.HTTPTarget{URL: target}, ReportBatchItemFailures: true})
			w.drive(time.Minute, step, w.empty(url))
			if n := rec.n(); n != 2 {
				t.Fatalf("deliveries %d, want 2", n)
			}
			if got := rec.get(0).bodies(); !reflect.DeepEqual(got, numbered("m", 5)) {
				t.Errorf("first batch %v, want m0..m4 in order", got)
			}
			if got := rec.get(1).bodies(); !reflect.DeepEqual(got, tt.second) {
				t.Errorf("second batch %v, want %v", got, tt.second)
			}
			var skipped int
			for _, e := range w.obs.All(consumer.EventHandled) {
				if errors.Is(e.Err, worker.ErrSkipped) {
					skipped++
				}
			}
			want := 0
			for _, b := range tt.second {
				if !strings.Contains(fmt.Sprint(tt.failed), b) {
					want++
				}
			}
			if skipped != want {
				t.Errorf("skipped %d, want %d", skipped, want)
			}
		})
	}
}

// A batch over ten is gathered from several receives: it is delivered
// when it is full, or when its window ends; the leases are kept meanwhile.
//
// The clock stays still while the worker receives and opens a window, and
// again from the window's end until the batch has reached the target: the
// real time a busy machine takes to receive, seal and post a batch never
// shows as fake time, so the batch is delivered exactly at its window's end.
func TestBatchingWindowGathersOverTen(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	url := w.queue("jobs", map[string]string{"VisibilityTimeout": "2"})
	const window = 5 * time.Second
	rec, target := w.httpTarget(ok)
	w.send(url, numbered("a", 15)...)
	t0 := w.clock.Now()
	w.start(worker.Config{QueueURL: url, Target: &worker.HTTPTarget{URL: target}, BatchSize: 25,
		BatchingWindow: window, MaxConcurrency: 1})
	opened := w.awaitTimers(window, 1)
	w.awaitReceived(15)
	w.drive(time.Minute, step, w.reached(opened.Add(window)))
	testutil.CheckFor(t, time.Minute, rec.reach(1))
	w.drive(time.Minute, step, w.empty(url))
	if n := rec.n(); n != 1 || len(rec.get(0).Records) != 15 {
		t.Fatalf("deliveries %d, want one of all 15", n)
	}
	rec.mu.Lock()
	first := w.firstReceive(t0)
	waited := rec.at[0].Sub(first)
	rec.mu.Unlock()
	if !opened.Equal(first) || waited != window {
		t.Errorf("a partial batch was delivered %v after its first message (its window opened %v after it), want the %v window",
			waited, opened.Sub(first), window)
	}

	w.send(url, numbered("b", 30)...)
	t1 := w.clock.Now()
	// The first 25 fill the second window's batch, which goes at once; the
	// last 5 open the third window.
	opened = w.awaitTimers(window, 3)
	w.awaitReceived(45)
	testutil.CheckFor(t, time.Minute, rec.reach(2))
	w.drive(time.Minute, step, w.reached(opened.Add(window)))
	testutil.CheckFor(t, time.Minute, rec.reach(3))
	w.drive(time.Minute, step, w.empty(url))
	if n := rec.n(); n != 3 {
		t.Fatalf("deliveries %d, want 3 (a full 25, then the last 5)", n)
	}
	rec.mu.Lock()
	tr := w.firstReceive(t1)
	full, rest := rec.at[1].Sub(tr), rec.at[2].Sub(tr)
	rec.mu.Unlock()
	if got := len(rec.get(1).Records); got != 25 || full != 0 {
		t.Errorf("second delivery: %d messages after %v, want 25 at once", got, full)
	}
	if got := len(rec.get(2).Records); got != 5 || rest != window {
		t.Errorf("third delivery: %d messages after %v, want 5 after the %v window", got, rest, window)
	}
	for i := 0; i < 3; i++ {
		for _, c := range receiveCounts(rec.get(i)) {
			if c != "1" {
				t.Fatalf("delivery %d receive counts %v: a lease lapsed in the window", i, receiveCounts(rec.get(i)))
			}
		}
	}
	if n := w.obs.Count(consumer.EventLeaseLost); n != 0 {
		t.Errorf("lost leases %d, want 0", n)
	}
}

// Events stay within MaxPayload: a batch is delivered when the next
// message would not fit, and a message too large on its own travels alone.
func TestPayloadCap(t *testing.T) {
	t.Parallel()
	const limit = 4000
	for _, window := range []time.Duration{0, time.Second} {
		t.Run(fmt.Sprintf("window %v", window), func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			url := w.queue("jobs", map[string]string{"VisibilityTimeout": "30"})
			var bodies []string
			for i := 0; i < 9; i++ {
				bodies = append(bodies, fmt.Sprintf("m%d-%s", i, strings.Repeat("x", 1000)))
			}
			big := "big-" + strings.Repeat("y", limit)
			w.send(url, append(bodies, big)...)
			rec, target := w.httpTarget(ok)
			w.start(worker.Config{QueueURL: url, Target: &worker.HTTPTarget{URL: target}, MaxPayload: limit, BatchingWindow: window})
			w.drive(time.Minute, step, w.empty(url))
			rec.mu.Lock()
			defer rec.mu.Unlock()
			var all []string
			singles := 0
			for i, e := range rec.events {
				all = append(all, e.bodies()...)
				size, n := rec.sizes[i], len(e.Records)
				if size > limit && n != 1 {
					t.Errorf("delivery %d: %d bytes in %d messages, over the %d cap", i, size, n, limit)
				}
				if e.bodies()[0] == big && n != 1 {
					t.Errorf("the large message shared a delivery with %d others", n-1)
				}
				if n == 1 && e.bodies()[0] != big {
					singles++
				}
			}
			if singles > 1 {
				t.Errorf("%d deliveries of one small message, where two fit in one", singles)
			}
			sort.Strings(all)
			want := append(append([]string{}, bodies...), big)
			sort.Strings(want)
			if !reflect.DeepEqual(all, want) {
				t.Errorf("delivered %d bodies, want the 10 sent, each once", len(all))
			}
			if len(rec.events) < 4 {
				t.Errorf("deliveries %d: nine 1 KB messages and a 4 KB one cannot fit in fewer than 4 under 4000 bytes", len(rec.events))
			}
		})
	}
}

// firstReceive is when the worker first received messages at or after t.
func (w *world) firstReceive(t time.Time) time.Time {
	for _, e := range w.obs.All(consumer.EventReceived) {
		if !e.Time.Before(t) {
			return e.Time
		}
	}
	w.t.Fatalf("no receive since %v", t)
	return t
}

// spoiler fails the renewals of one receipt handle as SQS does for a
// handle that is no longer valid.
type spoiler struct {
	consumer.Client
	mu     sync.Mutex
	body   string
	handle string
}

func (s *spoiler) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, o ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	out, err := s.Client.ReceiveMessage(ctx, in, o...)
	if err == nil {
		s.mu.Lock()
		for _, m := range out.Messages {
			if *m.Body == s.body && s.handle == "" {
				s.handle = *m.ReceiptHandle
			}
		}
		s.mu.Unlock()
	}
	return out, err
}

func (s *spoiler) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, o ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	s.mu.Lock()
	bad := s.handle
	s.mu.Unlock()
	var keep []types.ChangeMessageVisibilityBatchRequestEntry
	var failed []types.BatchResultErrorEntry
	for _, e := range in.Entries {
		if *e.ReceiptHandle == bad {
			failed = append(failed, types.BatchResultErrorEntry{Id: e.Id, Code: aws.String("ReceiptHandleIsInvalid"),
				Message: aws.String("The receipt handle is not valid."), SenderFault: true})
			continue
		}
		keep = append(keep, e)
	}
	out := &sqs.ChangeMessageVisibilityBatchOutput{}
	if len(keep) > 0 {
		in2 := *in
		in2.Entries = keep
		o2, err := s.Client.ChangeMessageVisibilityBatch(ctx, &in2, o...)
		if err != nil {
			return nil, err
		}
		out.Successful, out.Failed = o2.Successful, o2.Failed
	}
	out.Failed = append(out.Failed, failed...)
	return out, nil
}

// A message whose lease is lost while its batch gathers is left out of the
// event (another consumer may hold it); it is delivered once, when the
// queue gives it again.
func TestLostLeaseLeftOut(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	url := w.queue("jobs", map[string]string{"VisibilityTimeout": "2"})
	w.send(url, numbered("m", 4)...)
	w.cl.Client = &spoiler{Client: w.srv.Client(), body: "m1"}
	rec, target := w.httpTarget(ok)
	w.start(worker.Config{QueueURL: url, Target: &worker.HTTPTarget{URL: target}, BatchSize: 20, BatchingWindow: 5 * time.Second})
	w.drive(time.Minute, step, w.empty(url))
	var got []string
	for i := 0; i < rec.n(); i++ {
		for _, r := range rec.get(i).Records {
			got = append(got, r.Body+":"+r.Attributes["ApproximateReceiveCount"])
		}
	}
	sort.Strings(got)
	// m1's first copy was never delivered; the queue gave it again once
	// its lease lapsed on the server.
	if fmt.Sprint(got) != "[m0:1 m1:2 m2:1 m3:1]" {
		t.Errorf("delivered %v, want every message once, m1 on its second receive", got)
	}
	if n := w.obs.Count(consumer.EventLeaseLost); n != 1 {
		t.Errorf("lost leases %d, want 1", n)
	}
}

// On a FIFO queue with a redrive policy, a message that always fails goes
// to the dead-letter queue after maxReceiveCount deliveries, and the
// messages of another group that were failed after it in its batch
// (Lambda's stop-at-the-first-failure) are each delivered on a later
// receive instead of following it there. Every record carries the FIFO
// system attributes.
func TestFIFOFailureSparesOtherGroups(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	dlq := w.queue("dlq.fifo", map[string]string{"FifoQueue": "true"})
	out, err := w.srv.Client().GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: &dlq,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	url := w.queue("jobs.fifo", map[string]string{"FifoQueue": "true", "VisibilityTimeout": "30",
		"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"3"}`, out.Attributes["QueueArn"])})
	for _, m := range [][2]string{{"A", "a1"}, {"B", "b1"}, {"B", "b2"}} {
		_, err := w.srv.Client().SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String(m[1]),
			MessageGroupId: aws.String(m[0]), MessageDeduplicationId: aws.String(m[1])})
		if err != nil {
			t.Fatal(err)
		}
	}
	rec, target := w.httpTarget(func(n int, e event, _ *http.Request) (int, http.Header, string) {
		if id := e.idOf("a1"); id != "no-such-body" {
			return http.StatusOK, nil, fmt.Sprintf(`{"batchItemFailures":[{"itemIdentifier":%q}]}`, id)
		}
		return http.StatusOK, nil, ""
	})
	w.start(worker.Config{QueueURL: url, Target: &worker.HTTPTarget{URL: target}, ReportBatchItemFailures: true})
	w.drive(2*time.Minute, step, w.empty(url))
	got := map[string][]string{}
	for i := 0; i < rec.n(); i++ {
		for _, r := range rec.get(i).Records {
			got[r.Body] = append(got[r.Body], r.Attributes["ApproximateReceiveCount"])
			for _, k := range []string{"MessageGroupId", "MessageDeduplicationId", "SequenceNumber"} {
				if r.Attributes[k] == "" {
					t.Errorf("record %s: no attribute %s in %v", r.Body, k, r.Attributes)
				}
			}
		}
	}
	if fmt.Sprint(got["a1"]) != "[1 2 3]" {
		t.Errorf("a1 delivered with receive counts %v, want [1 2 3]", got["a1"])
	}
	for _, b := range []string{"b1", "b2"} {
		if n := len(got[b]); n < 2 || got[b][n-1] == "3" {
			t.Errorf("%s delivered with receive counts %v, want a redelivery before its last receive", b, got[b])
		}
	}
	if v, f := w.counts(dlq); v != 1 || f != 0 {
		t.Errorf("dead-letter queue: %d visible, %d in flight; want a1 alone", v, f)
	}
}
