package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton/consumer"
	"github.com/baton-sqs/baton/consumer/consumertest"
	"github.com/baton-sqs/baton/internal/testutil/poll"
)

// journal records handler calls in order and checks that no two messages
// of one group run at once.
type journal struct {
	mu      sync.Mutex
	entries []string
	active  map[string]bool
	overlap []string
}

func newJournal() *journal { return &journal{active: map[string]bool{}} }

func (j *journal) begin(d *consumer.Delivery) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.active[d.GroupID()] {
		j.overlap = append(j.overlap, d.Body())
	}
	j.active[d.GroupID()] = true
	j.entries = append(j.entries, d.Body())
}

func (j *journal) end(d *consumer.Delivery) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.active[d.GroupID()] = false
}

func (j *journal) list() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.entries...)
}

// only keeps the entries starting with prefix.
func only(entries []string, prefix string) []string {
	var out []string
	for _, e := range entries {
		if len(e) >= len(prefix) && e[:len(prefix)] == prefix {
			out = append(out, e)
		}
	}
	return out
}

// Each group's messages run one at a time, in send order; groups run side
// by side, one per slot.
func TestFIFOGroupOrder(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		h := newHarness(t, "jobs.fifo", nil)
		groups := map[string][]string{"a": {"a1", "a2", "a3", "a4"}, "b": {"b1", "b2", "b3"}, "c": {"c1", "c2"}}
		for i := 0; i < 4; i++ {
			for _, g := range []string{"a", "b", "c"} {
				if i < len(groups[g]) {
					h.sqs.Send(h.url, groups[g][i], g)
				}
			}
		}
		j := newJournal()
		h.start(consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
			j.begin(d)
			defer j.end(d)
			return nil
		}), consumer.WithConcurrency(3))
		poll.For(t, 5*time.Second, func() error {
			if n := len(j.list()); n != 9 {
				return fmt.Errorf("%d handled, want 9", n)
			}
			return nil
		})
		for g, want := range groups {
			if got := only(j.list(), g); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("group %s ran %v, want %v", g, got, want)
			}
		}
		if len(j.overlap) > 0 {
			t.Errorf("messages ran while their group was busy: %v", j.overlap)
		}
	})
}

// A failure releases the rest of the group's messages from that receive,
// so the group resumes, in order, with the failed message.
func TestFIFOFailureSkipsRestOfGroup(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		h := newHarness(t, "skip.fifo", nil)
		for _, b := range []string{"a1", "a2", "a3"} {
			h.sqs.Send(h.url, b, "a")
		}
		j := newJournal()
		var once sync.Once
		h.start(consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
			j.begin(d)
			defer j.end(d)
			var err error
			if d.Body() == "a1" {
				once.Do(func() { err = errors.New("first try fails") })
			}
			return err
		}), consumer.WithConcurrency(3), consumer.WithRetryPolicy(consumer.RetryPolicy{Base: 5 * time.Second, Jitter: consumer.NoJitter}))
		h.awaitReleases(consumer.ReasonGroupSkipped, 2)
		if got := j.list(); fmt.Sprint(got) != "[a1]" {
			t.Errorf("ran %v before the backoff, want [a1]", got)
		}
		h.advanceUntil(time.Minute, time.Second, func() error {
			if n := len(j.list()); n != 4 {
				return fmt.Errorf("%d handled, want 4", n)
			}
			return nil
		})
		if got := j.list(); fmt.Sprint(got) != "[a1 a1 a2 a3]" {
			t.Errorf("ran %v, want [a1 a1 a2 a3]", got)
		}
	})
}

// NotReady on a FIFO queue changes visibility (re-sending would break the
// group's order) and holds the group back.
func TestFIFONotReadyChangesVisibility(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		h := newHarness(t, "snooze.fifo", nil)
		h.sqs.Send(h.url, "a1", "a")
		h.sqs.Send(h.url, "a2", "a")
		j := newJournal()
		var once sync.Once
		h.start(consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
			j.begin(d)
			defer j.end(d)
			var err error
			once.Do(func() { err = consumer.NotReady(8 * time.Second) })
			return err
		}), consumer.WithConcurrency(2))
		h.awaitReleases(consumer.ReasonNotReady, 1)
		if n := len(h.sqs.Calls("SendMessage")); n != 0 {
			t.Errorf("re-sends on a FIFO queue: %d, want 0", n)
		}
		if got := consumertestVisibilities(h); fmt.Sprint(got) != "[8 0]" {
			t.Errorf("visibility changes %v, want [8 0] (the snooze, then a2 released)", got)
		}
		h.advanceUntil(time.Minute, time.Second, func() error {
			if n := len(j.list()); n != 3 {
				return fmt.Errorf("%d handled, want 3", n)
			}
			return nil
		})
		if got := j.list(); fmt.Sprint(got) != "[a1 a1 a2]" {
			t.Errorf("ran %v, want [a1 a1 a2]", got)
		}
	})
}

// On a queue with a redrive policy, a failing message comes back alone:
// until it succeeds, receives ask for one message at a time, and the
// messages behind it stay hidden for the wait time (a receive already
// waiting for several would fetch them with it). So retries of the head do
// not spend the receives (the redrive budget) of the rest of its group:
// each is received once with the first batch and once to run.
func TestFIFORetryComesBackAlone(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		clock := consumertest.NewClock(time.Time{})
		fake := consumertest.NewSQS(clock)
		fake.CreateQueue("alone-dlq.fifo", nil)
		h := &harness{t: t, clock: clock, sqs: fake, obs: &recorder{}, url: fake.CreateQueue("alone.fifo", map[string]string{
			"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:alone-dlq.fifo","maxReceiveCount":5}`})}
		ids := map[string]string{}
		for _, b := range []string{"a1", "a2", "a3"} {
			ids[b] = h.sqs.Send(h.url, b, "a")
		}
		j := newJournal()
		tries := newCounter()
		h.start(consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
			j.begin(d)
			defer j.end(d)
			if d.Body() == "a1" && tries.add("a1") <= 2 {
				return errors.New("not yet")
			}
			return nil
		}), consumer.WithConcurrency(3), consumer.WithRetryPolicy(consumer.RetryPolicy{Base: 5 * time.Second, Multiplier: 1, Jitter: consumer.NoJitter}))
		h.advanceUntil(time.Minute, time.Second, func() error {
			for _, id := range ids {
				if !h.state(id).Deleted {
					return fmt.Errorf("%s not deleted", id)
				}
			}
			return nil
		})
		if got := j.list(); fmt.Sprint(got) != "[a1 a1 a1 a2 a3]" {
			t.Errorf("ran %v, want [a1 a1 a1 a2 a3]", got)
		}
		for b, want := range map[string]int{"a1": 3, "a2": 2, "a3": 2} {
			if got := h.state(ids[b]).Receives; got != want {
				t.Errorf("%s received %d times, want %d", b, got, want)
			}
		}
		var single int
		for _, c := range h.sqs.Calls("ReceiveMessage") {
			if c.Input.(*sqs.ReceiveMessageInput).MaxNumberOfMessages == 1 {
				single++
			}
		}
		if single == 0 {
			t.Error("no receive asked for a single message while a1 was retried")
		}
	})
}

// The next message of a group runs only once the previous one's delete is
// confirmed. Here the delete of g1's first receipt fails until its lease
// ends: g1 counts as unresolved, g2 is released, and the group resumes in
// order with g1 instead of running g2 before g1 comes back.
func TestFIFOWaitsForDeleteBeforeNextMessage(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		h := newHarness(t, "order.fifo", nil)
		m1 := h.sqs.Send(h.url, "g1", "g")
		m2 := h.sqs.Send(h.url, "g2", "g")
		first := h.url + "|" + m1 + "|1" // g1's first receipt handle
		h.sqs.SetFaults(func(c consumertest.Call) consumertest.Fault {
			if c.Op == "DeleteMessageBatch" && h.clock.Now().Before(consumertest.Epoch.Add(40*time.Second)) {
				return consumertest.Fault{FailEntries: map[string]string{first: "InternalError"}}
			}
			return consumertest.Fault{}
		})
		j := newJournal()
		h.start(consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
			j.begin(d)
			defer j.end(d)
			return nil
		}), consumer.WithVisibilityTimeout(30*time.Second))
		h.advanceUntil(2*time.Minute, time.Second, func() error {
			if !h.state(m1).Deleted || !h.state(m2).Deleted {
				return fmt.Errorf("handled %v", j.list())
			}
			return nil
		})
		if got := j.list(); fmt.Sprint(got) != "[g1 g1 g2]" {
			t.Errorf("ran %v, want [g1 g1 g2]", got)
		}
		if got := h.obs.Reasons(consumer.EventReleased)[consumer.ReasonGroupSkipped]; got != 1 {
			t.Errorf("group-skipped releases %d, want 1 (g2)", got)
		}
	})
}
