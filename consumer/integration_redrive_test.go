package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/consumer"
)

// These tests run the consumer's FIFO group handling and its dead-letter
// and receive-budget logic against the in-process server (FIFO queues,
// content-based deduplication, RedrivePolicy moves made inside the receive
// that would exceed maxReceiveCount), on the server's fake clock, in the
// style of integration_test.go.

// createFIFO creates a FIFO queue with content-based deduplication.
func (w *world) createFIFO(name string, attrs map[string]string) string {
	w.t.Helper()
	a := map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"}
	for k, v := range attrs {
		a[k] = v
	}
	return w.srv.MustCreateQueue(w.t, name, a)
}

// queueARN reads a queue's ARN.
func (w *world) queueARN(url string) string {
	w.t.Helper()
	out, err := w.srv.Client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: &url,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		w.t.Fatal(err)
	}
	return out.Attributes["QueueArn"]
}

// redrive is a RedrivePolicy to dlq after maxReceiveCount receives.
func (w *world) redrive(dlq string, maxReceiveCount int) string {
	return fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":%d}`, w.queueARN(dlq), maxReceiveCount)
}

// sendGroups sends "group/body" messages one by one, in the order given
// (a FIFO queue keeps that order per group).
func (w *world) sendGroups(url string, msgs ...string) {
	w.t.Helper()
	for _, gm := range msgs {
		group, body, _ := strings.Cut(gm, "/")
		in := &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String(body)}
		if group != "" {
			in.MessageGroupId = aws.String(group)
		}
		if _, err := w.srv.Client.SendMessage(context.Background(), in); err != nil {
			w.t.Fatalf("send %s: %v", gm, err)
		}
	}
}

// withDeadLetter creates the queue name (name.fifo if fifo) with a 30 s
// visibility timeout and a RedrivePolicy to name-dlq (name-dlq.fifo) after
// maxReceiveCount receives, and sends it bodies in order, in group "g" on a
// FIFO queue. It returns the queue's URL and the dead-letter queue's.
func (w *world) withDeadLetter(fifo bool, name string, maxReceiveCount int, bodies ...string) (url, dlq string) {
	w.t.Helper()
	create := func(name string, attrs map[string]string) string { return w.srv.MustCreateQueue(w.t, name, attrs) }
	suffix, group := "", ""
	if fifo {
		create, suffix, group = w.createFIFO, ".fifo", "g"
	}
	dlq = create(name+"-dlq"+suffix, nil)
	url = create(name+suffix, map[string]string{"VisibilityTimeout": "30", "RedrivePolicy": w.redrive(dlq, maxReceiveCount)})
	msgs := make([]string, len(bodies))
	for i, b := range bodies {
		msgs[i] = group + "/" + b
	}
	w.sendGroups(url, msgs...)
	return url, dlq
}

// drain receives (and deletes) what a queue holds, bypassing the consumer.
func (w *world) drain(url string) []types.Message {
	w.t.Helper()
	out, err := w.srv.Client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 10,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"}})
	if err != nil {
		w.t.Fatal(err)
	}
	for _, m := range out.Messages {
		if _, err := w.srv.Client.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: &url, ReceiptHandle: m.ReceiptHandle}); err != nil {
			w.t.Fatal(err)
		}
	}
	return out.Messages
}

// delivery is one handler call as a test saw it.
type delivery struct {
	body, group        string
	receiveCount, left int
	final              bool
	start, end         time.Time
}

// deliveryLog records handler calls, checks that no two messages of one
// group run at once, and keeps the peak number of handlers running.
type deliveryLog struct {
	mu      sync.Mutex
	all     []*delivery
	active  map[string]bool
	running int
	peak    int
	overlap []string
}

func newDeliveryLog() *deliveryLog { return &deliveryLog{active: map[string]bool{}} }

func (l *deliveryLog) begin(d *consumer.Delivery, now time.Time) *delivery {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.active[d.GroupID()] {
		l.overlap = append(l.overlap, d.Body())
	}
	l.active[d.GroupID()] = true
	l.running++
	l.peak = max(l.peak, l.running)
	e := &delivery{body: d.Body(), group: d.GroupID(), receiveCount: d.ReceiveCount(), left: d.AttemptsLeft(),
		final: d.IsFinalAttempt(), start: now}
	l.all = append(l.all, e)
	return e
}

func (l *deliveryLog) end(e *delivery, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.active[e.group] = false
	l.running--
	e.end = now
}

func (l *deliveryLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.all)
}

// bodies lists the bodies handled, in start order, of one group ("" for
// all).
func (l *deliveryLog) bodies(group string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, e := range l.all {
		if group == "" || e.group == group {
			out = append(out, e.body)
		}
	}
	return out
}

// of returns the deliveries of one body, in order.
func (l *deliveryLog) of(body string) []delivery {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []delivery
	for _, e := range l.all {
		if e.body == body {
			out = append(out, *e)
		}
	}
	return out
}

// work waits d on the shared clock, or until ctx ends.
func (w *world) work(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	tm := w.clock.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C():
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Several groups, several slots: every group's messages run one at a time
// in send order, groups run side by side, never more than one per slot,
// and nothing is delivered twice.
func TestServerFIFOGroups(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	url := w.createFIFO("orders.fifo", map[string]string{"VisibilityTimeout": "30"})
	groups := map[string][]string{"a": {"a1", "a2", "a3", "a4"}, "b": {"b1", "b2", "b3"}, "c": {"c1", "c2", "c3"}, "d": {"d1", "d2"}}
	var sends []string
	for i := 0; i < 4; i++ {
		for _, g := range []string{"a", "b", "c", "d"} {
			if i < len(groups[g]) {
				sends = append(sends, g+"/"+groups[g][i])
			}
		}
	}
	w.sendGroups(url, sends...)
	log := newDeliveryLog()
	obs := &recorder{}
	c := w.newConsumer(url, consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
		e := log.begin(d, w.clock.Now())
		defer func() { log.end(e, w.clock.Now()) }()
		return w.work(ctx, time.Second)
	}), obs, consumer.WithConcurrency(3), consumer.WithWaitTime(time.Second))
	w.run(c)
	w.drive(time.Minute, 100*time.Millisecond, func() error {
		if v, f := w.counts(url); log.len() < len(sends) || v+f != 0 {
			return fmt.Errorf("%d handled, %d visible, %d in flight", log.len(), v, f)
		}
		return nil
	})
	for g, want := range groups {
		if got := log.bodies(g); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("group %s ran %v, want %v", g, got, want)
		}
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if len(log.overlap) > 0 {
		t.Errorf("messages ran while their group was busy: %v", log.overlap)
	}
	if log.peak > 3 || log.peak < 2 {
		t.Errorf("peak handlers running %d, want 2 or 3 (three slots, groups side by side)", log.peak)
	}
	for _, e := range log.all {
		if e.receiveCount != 1 {
			t.Errorf("%s delivered with receive count %d, want 1", e.body, e.receiveCount)
		}
	}
	for _, k := range []consumer.EventKind{consumer.EventLeaseLost, consumer.EventRenewFailed, consumer.EventError} {
		if n := obs.Count(k); n != 0 {
			t.Errorf("%v events: %d, want 0", k, n)
		}
	}
}

// A failure in a group holds the rest of that group back until the failed
// message's retry has succeeded, while the other groups go on.
func TestServerFIFOFailureHoldsGroup(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	url := w.createFIFO("holds.fifo", map[string]string{"VisibilityTimeout": "30"})
	w.sendGroups(url, "a/a1", "b/b1", "a/a2", "b/b2", "a/a3", "b/b3", "a/a4")
	const backoff = 5 * time.Second
	log := newDeliveryLog()
	obs := &recorder{}
	c := w.newConsumer(url, consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
		e := log.begin(d, w.clock.Now())
		defer func() { log.end(e, w.clock.Now()) }()
		if err := w.work(ctx, 500*time.Millisecond); err != nil {
			return err
		}
		if d.Body() == "a2" && d.ReceiveCount() == 1 {
			return errors.New("a2 fails the first time")
		}
		return nil
	}), obs, consumer.WithConcurrency(2), consumer.WithWaitTime(time.Second),
		consumer.WithRetryPolicy(consumer.RetryPolicy{Base: backoff, Multiplier: 1, Jitter: consumer.NoJitter}))
	w.run(c)
	w.drive(time.Minute, 100*time.Millisecond, func() error {
		if v, f := w.counts(url); log.len() < 8 || v+f != 0 {
			return fmt.Errorf("%d handled, %d visible, %d in flight", log.len(), v, f)
		}
		return nil
	})
	if got := fmt.Sprint(log.bodies("a")); got != "[a1 a2 a2 a3 a4]" {
		t.Errorf("group a ran %s, want [a1 a2 a2 a3 a4]", got)
	}
	if got := fmt.Sprint(log.bodies("b")); got != "[b1 b2 b3]" {
		t.Errorf("group b ran %s, want [b1 b2 b3]", got)
	}
	a2, a3, b3 := log.of("a2"), log.of("a3"), log.of("b3")
	if len(a2) != 2 || len(a3) != 1 || len(b3) != 1 {
		t.Fatalf("deliveries: a2 %d, a3 %d, b3 %d; want 2, 1, 1", len(a2), len(a3), len(b3))
	}
	if gap := a2[1].start.Sub(a2[0].end); gap < backoff {
		t.Errorf("a2 retried %v after it failed, want at least the %v backoff", gap, backoff)
	}
	if a2[1].receiveCount != 2 {
		t.Errorf("a2's retry had receive count %d, want 2", a2[1].receiveCount)
	}
	if !a3[0].start.After(a2[1].start) || a3[0].start.Before(a2[1].end) {
		t.Errorf("a3 started at %v, want after a2's retry (%v to %v)", a3[0].start, a2[1].start, a2[1].end)
	}
	if !b3[0].end.Before(a2[1].start) {
		t.Errorf("b3 ended at %v, after a2's retry began at %v: group b was held back by group a", b3[0].end, a2[1].start)
	}
	if n := obs.Reasons(consumer.EventReleased)[consumer.ReasonError]; n != 1 {
		t.Errorf("releases for an error %d, want 1", n)
	}
	if n := obs.Count(consumer.EventLeaseLost); n != 0 {
		t.Errorf("leases lost %d, want 0", n)
	}
}

// NotReady on a FIFO queue changes the message's visibility instead of
// re-sending it (a re-sent copy would go to the back of its group): the
// group waits for it, other groups do not, and the snooze spends a receive
// of the redrive budget.
func TestServerFIFONotReady(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	dlq := w.createFIFO("snooze-dlq.fifo", nil)
	url := w.createFIFO("snooze.fifo", map[string]string{"VisibilityTimeout": "30", "RedrivePolicy": w.redrive(dlq, 5)})
	w.sendGroups(url, "a/a1", "a/a2", "b/b1")
	const snooze = 8 * time.Second
	log := newDeliveryLog()
	obs := &recorder{}
	c := w.newConsumer(url, consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
		e := log.begin(d, w.clock.Now())
		defer func() { log.end(e, w.clock.Now()) }()
		if d.Body() == "a1" && d.ReceiveCount() == 1 {
			return consumer.NotReady(snooze)
		}
		return w.work(ctx, 500*time.Millisecond)
	}), obs, consumer.WithConcurrency(2), consumer.WithWaitTime(time.Second))
	w.run(c)
	w.drive(time.Minute, 100*time.Millisecond, func() error {
		if v, f := w.counts(url); log.len() < 4 || v+f != 0 {
			return fmt.Errorf("%d handled, %d visible, %d in flight", log.len(), v, f)
		}
		return nil
	})
	if got := fmt.Sprint(log.bodies("a")); got != "[a1 a1 a2]" {
		t.Errorf("group a ran %s, want [a1 a1 a2]", got)
	}
	if n := w.cl.sendCalls.Load(); n != 0 {
		t.Errorf("SendMessage calls %d, want 0 (no re-send on a FIFO queue)", n)
	}
	a1, a2, b1 := log.of("a1"), log.of("a2"), log.of("b1")
	if len(a1) != 2 || len(a2) != 1 || len(b1) != 1 {
		t.Fatalf("deliveries: a1 %d, a2 %d, b1 %d; want 2, 1, 1", len(a1), len(a2), len(b1))
	}
	if gap := a1[1].start.Sub(a1[0].start); gap < snooze {
		t.Errorf("a1 came back after %v, want at least %v", gap, snooze)
	}
	if fmt.Sprint(a1[0].receiveCount, a1[1].receiveCount, a1[0].left, a1[1].left) != "1 2 4 3" {
		t.Errorf("a1 receive counts %d, %d and attempts left %d, %d; want 1, 2 and 4, 3 (a snooze by visibility spends a receive)",
			a1[0].receiveCount, a1[1].receiveCount, a1[0].left, a1[1].left)
	}
	if a2[0].start.Before(a1[1].end) {
		t.Errorf("a2 started at %v, before a1's second delivery ended at %v", a2[0].start, a1[1].end)
	}
	if !b1[0].end.Before(a1[1].start) {
		t.Errorf("b1 ended at %v, after a1 came back at %v: group b waited for group a", b1[0].end, a1[1].start)
	}
	if n := obs.Reasons(consumer.EventReleased)[consumer.ReasonNotReady]; n != 1 {
		t.Errorf("not-ready releases %d, want 1", n)
	}
}

// Permanent sends the message to the queue's dead-letter queue (found from
// its RedrivePolicy) at once, with the reason, and deletes it; it is not
// retried. On a FIFO queue the copy keeps its group, and the rest of the
// group goes on.
func TestServerPermanentDeadLetters(t *testing.T) {
	t.Parallel()
	for _, fifo := range []bool{false, true} {
		name := map[bool]string{false: "standard", true: "fifo"}[fifo]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			url, dlq := w.withDeadLetter(fifo, "perm", 5, "ok1", "bad", "ok2")
			log := newDeliveryLog()
			obs := &recorder{}
			c := w.newConsumer(url, consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
				e := log.begin(d, w.clock.Now())
				defer func() { log.end(e, w.clock.Now()) }()
				if d.Body() == "bad" {
					return consumer.Permanent(errors.New("cannot parse"))
				}
				return nil
			}), obs, consumer.WithWaitTime(time.Second))
			w.run(c)
			if got := c.Queue().DeadLetterURL; got != "" && got != dlq {
				t.Errorf("dead-letter URL %q, want %q", got, dlq)
			}
			w.drive(time.Minute, 100*time.Millisecond, func() error {
				v, f := w.counts(url)
				dv, df := w.counts(dlq)
				if log.len() < 3 || v+f != 0 || dv != 1 || df != 0 {
					return fmt.Errorf("%d handled, %d visible, %d in flight; dead-letter queue %d visible, %d in flight", log.len(), v, f, dv, df)
				}
				return nil
			})
			if got := c.Queue().DeadLetterURL; got != dlq {
				t.Errorf("dead-letter URL %q, want %q", got, dlq)
			}
			if got := fmt.Sprint(log.bodies("")); fifo && got != "[ok1 bad ok2]" {
				t.Errorf("ran %s, want [ok1 bad ok2] (the group goes on past a dead-lettered message)", got)
			}
			if n := len(log.of("bad")); n != 1 {
				t.Errorf("bad handled %d times, want 1 (Permanent is not retried)", n)
			}
			msgs := w.drain(dlq)
			if len(msgs) != 1 {
				t.Fatalf("dead-letter queue gave %d messages, want 1", len(msgs))
			}
			m := msgs[0]
			if aws.ToString(m.Body) != "bad" {
				t.Errorf("dead-lettered body %q, want %q", aws.ToString(m.Body), "bad")
			}
			if v := m.MessageAttributes[consumer.AttrDeadLetterReason]; aws.ToString(v.StringValue) != "cannot parse" {
				t.Errorf("dead-letter reason %q, want %q", aws.ToString(v.StringValue), "cannot parse")
			}
			if fifo && m.Attributes["MessageGroupId"] != "g" {
				t.Errorf("dead-lettered copy's group %q, want %q", m.Attributes["MessageGroupId"], "g")
			}
			if n := obs.Count(consumer.EventDeadLettered); n != 1 {
				t.Errorf("dead-lettered events %d, want 1", n)
			}
			if n := obs.Reasons(consumer.EventDeleted)[consumer.ReasonDeadLettered]; n != 1 {
				t.Errorf("deletes as dead-lettered %d, want 1", n)
			}
		})
	}
}

// A message that always fails: each delivery tells the handler how many
// attempts are left (from the RedrivePolicy), the last one says it is the
// final attempt, and after maxReceiveCount deliveries the server moves it
// to the dead-letter queue in the receive that would exceed the count. The
// handler never sees a fourth delivery. On a FIFO queue the message held
// its group back until then, and the message behind it, fetched with its
// first delivery, did not go to the dead-letter queue with it.
func TestServerAttemptsLeftThenDeadLetter(t *testing.T) {
	t.Parallel()
	for _, fifo := range []bool{false, true} {
		name := map[bool]string{false: "standard", true: "fifo"}[fifo]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			url, dlq := w.withDeadLetter(fifo, "budget", 3, "doomed", "next")
			log := newDeliveryLog()
			obs := &recorder{}
			c := w.newConsumer(url, consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
				e := log.begin(d, w.clock.Now())
				defer func() { log.end(e, w.clock.Now()) }()
				if d.Body() == "doomed" {
					return fmt.Errorf("attempt %d fails", d.Attempt())
				}
				return nil
			}), obs, consumer.WithWaitTime(time.Second),
				consumer.WithRetryPolicy(consumer.RetryPolicy{Base: 2 * time.Second, Multiplier: 1, Jitter: consumer.NoJitter}))
			w.run(c)
			w.drive(time.Minute, 100*time.Millisecond, func() error {
				v, f := w.counts(url)
				dv, df := w.counts(dlq)
				if len(log.of("next")) < 1 || v+f != 0 || dv != 1 || df != 0 {
					return fmt.Errorf("%d handled, %d visible, %d in flight; dead-letter queue %d visible, %d in flight", log.len(), v, f, dv, df)
				}
				return nil
			})
			var got []string
			for _, e := range log.of("doomed") {
				got = append(got, fmt.Sprintf("%d/%d/%v", e.receiveCount, e.left, e.final))
			}
			if fmt.Sprint(got) != "[1/2/false 2/1/false 3/0/true]" {
				t.Errorf("doomed deliveries (receive count/attempts left/final) %v, want [1/2/false 2/1/false 3/0/true]", got)
			}
			next := log.of("next")
			if len(next) != 1 {
				t.Fatalf("next handled %d times, want 1", len(next))
			}
			// On the FIFO queue next came with doomed's first receive and was
			// given back; it must not come again with each of doomed's
			// retries (spending its own redrive budget), only once more to run.
			if want := map[bool]int{false: 1, true: 2}[fifo]; next[0].receiveCount != want {
				t.Errorf("next ran with receive count %d, want %d", next[0].receiveCount, want)
			}
			if fifo {
				doomed := log.of("doomed")
				if len(doomed) > 0 && next[0].start.Before(doomed[len(doomed)-1].end) {
					t.Errorf("next started at %v, before doomed's last attempt ended at %v", next[0].start, doomed[len(doomed)-1].end)
				}
			}
			msgs := w.drain(dlq)
			if len(msgs) != 1 || aws.ToString(msgs[0].Body) != "doomed" {
				t.Fatalf("dead-letter queue gave %d messages, want doomed", len(msgs))
			}
			if src := msgs[0].Attributes["DeadLetterQueueSourceArn"]; src != w.queueARN(url) {
				t.Errorf("DeadLetterQueueSourceArn %q, want %q", src, w.queueARN(url))
			}
			if n := obs.Reasons(consumer.EventReleased)[consumer.ReasonError]; n != 3 {
				t.Errorf("releases for an error %d, want 3", n)
			}
			if n := obs.Count(consumer.EventDeadLettered); n != 0 {
				t.Errorf("dead-lettered by the runtime %d, want 0 (the server moves it)", n)
			}
		})
	}
}
