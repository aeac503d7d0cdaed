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

const redrive = `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq","maxReceiveCount":"3"}`

// What each outcome does to the message, on a standard queue with a
// dead-letter queue.
func TestOutcomes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		ret        error
		dlq        bool
		wantDelete consumer.Reason // "" = not deleted
		wantVis    []int32         // the visibility change, if any
		wantSends  int             // SendMessage calls (re-send or dead-letter)
		wantDLQ    int             // messages on the dead-letter queue
	}{
		{"nil deletes", nil, true, consumer.ReasonDone, nil, 0, 0},
		{"error retries per policy", errors.New("boom"), true, "", []int32{4}, 0, 0},
		{"Retry after", consumer.Retry(17 * time.Second), true, "", []int32{17}, 0, 0},
		{"Retry rounds up", consumer.Retry(1500 * time.Millisecond), true, "", []int32{2}, 0, 0},
		{"wrapped Retry", fmt.Errorf("later: %w", consumer.Retry(5*time.Second)), true, "", []int32{5}, 0, 0},
		{"Retry(0) uses the policy", consumer.Retry(0), true, "", []int32{4}, 0, 0},
		{"NotReady re-sends", consumer.NotReady(40 * time.Second), true, consumer.ReasonSnoozed, nil, 1, 0},
		{"Permanent dead-letters", consumer.Permanent(errors.New("bad input")), true, consumer.ReasonDeadLettered, nil, 1, 1},
		{"Permanent without a DLQ retries", consumer.Permanent(errors.New("bad input")), false, "", []int32{4}, 0, 0},
		{"Drop deletes", consumer.Drop(errors.New("obsolete")), true, consumer.ReasonDrop, nil, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			bubble(t, func(t *testing.T) {
				clock := consumertest.NewClock(time.Time{})
				fake := consumertest.NewSQS(clock)
				dlq := fake.CreateQueue("dlq", nil)
				attrs := map[string]string{}
				if tt.dlq {
					attrs["RedrivePolicy"] = redrive
				}
				h := &harness{t: t, clock: clock, sqs: fake, url: fake.CreateQueue("work", attrs), obs: &recorder{}}
				id := fake.Send(h.url, "payload", "")
				var once sync.Once
				h.start(consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
					var err error = nil
					once.Do(func() { err = tt.ret })
					if err == nil && tt.ret != nil {
						<-ctx.Done() // later deliveries wait
					}
					return err
				}), consumer.WithRetryPolicy(consumer.RetryPolicy{Base: 4 * time.Second, Jitter: consumer.NoJitter}), consumer.WithoutDoctor())
				poll.For(t, 5*time.Second, func() error {
					if tt.wantDelete != "" && h.obs.Reasons(consumer.EventDeleted)[tt.wantDelete] != 1 {
						return fmt.Errorf("no delete (%s) yet", tt.wantDelete)
					}
					if tt.wantVis != nil && len(cmvCalls(h)) == 0 {
						return fmt.Errorf("no visibility change yet")
					}
					return nil
				})
				if got := h.state(id).Deleted; got != (tt.wantDelete != "") {
					t.Errorf("deleted = %v, want %v", got, tt.wantDelete != "")
				}
				if tt.wantVis != nil {
					if got := consumertest.Visibilities(cmvCalls(h)[0].Input); fmt.Sprint(got) != fmt.Sprint(tt.wantVis) {
						t.Errorf("visibility change %v, want %v", got, tt.wantVis)
					}
				} else if n := len(cmvCalls(h)); n != 0 {
					t.Errorf("visibility changes %d, want 0", n)
				}
				if n := len(fake.Calls("SendMessage")); n != tt.wantSends {
					t.Errorf("sends %d, want %d", n, tt.wantSends)
				}
				if n := len(fake.Messages(dlq)); n != tt.wantDLQ {
					t.Errorf("dead-letter queue holds %d, want %d", n, tt.wantDLQ)
				}
				if tt.wantDLQ == 1 {
					m := fake.Messages(dlq)[0]
					if m.Body != "payload" {
						t.Errorf("dead-lettered body %q, want %q", m.Body, "payload")
					}
					if v := m.Attributes[consumer.AttrDeadLetterReason]; v.StringValue == nil || *v.StringValue != "bad input" {
						t.Errorf("dead-letter reason %v, want %q", v.StringValue, "bad input")
					}
				}
			})
		})
	}
}

// NotReady on a standard queue re-sends the message with a delay and the
// attempt counter, so the receive budget is not spent: after three snoozes
// the message is still on its first attempt, with all its attempts left.
// Failures then spend attempts as usual.
func TestSnoozeKeepsAttempts(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		clock := consumertest.NewClock(time.Time{})
		fake := consumertest.NewSQS(clock)
		fake.CreateQueue("dlq", nil)
		h := &harness{t: t, clock: clock, sqs: fake, url: fake.CreateQueue("budget", map[string]string{"RedrivePolicy": redrive}), obs: &recorder{}}
		first := fake.Send(h.url, "job", "")
		type seen struct {
			id                string
			attempt, left, rc int
			final             bool
		}
		var mu sync.Mutex
		var log []seen
		h.start(consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
			mu.Lock()
			log = append(log, seen{d.ID(), d.Attempt(), d.AttemptsLeft(), d.ReceiveCount(), d.IsFinalAttempt()})
			n := len(log)
			mu.Unlock()
			if n <= 3 {
				return consumer.NotReady(10 * time.Second)
			}
			return errors.New("fails")
		}), consumer.WithRetryPolicy(consumer.RetryPolicy{Base: 5 * time.Second, Jitter: consumer.NoJitter, Multiplier: 1}))
		h.advanceUntil(2*time.Minute, 500*time.Millisecond, func() error {
			mu.Lock()
			defer mu.Unlock()
			if len(log) < 6 {
				return fmt.Errorf("%d deliveries", len(log))
			}
			return nil
		})
		mu.Lock()
		defer mu.Unlock()
		want := []seen{
			{first, 1, 2, 1, false}, {first, 1, 2, 1, false}, {first, 1, 2, 1, false}, // snoozes
			{first, 1, 2, 1, false}, {first, 2, 1, 2, false}, {first, 3, 0, 3, true}, // failures
		}
		for i, w := range want {
			if log[i] != w {
				t.Errorf("delivery %d: got %+v, want %+v", i+1, log[i], w)
			}
		}
		sends := fake.Calls("SendMessage")
		if len(sends) != 3 {
			t.Fatalf("re-sends %d, want 3", len(sends))
		}
		for _, c := range sends {
			in := c.Input.(*sqs.SendMessageInput)
			if in.DelaySeconds != 10 {
				t.Errorf("re-send delay %d, want 10", in.DelaySeconds)
			}
			if got := in.MessageAttributes[consumer.AttrAttempts].StringValue; got == nil || *got != "0" {
				t.Errorf("carried attempts %v, want 0", got)
			}
			if got := in.MessageAttributes[consumer.AttrMessageID].StringValue; got == nil || *got != first {
				t.Errorf("carried id %v, want %s", got, first)
			}
		}
	})
}

// A re-sent copy whose carried attempts exhaust the budget is dead-lettered
// by the runtime on failure, since SQS (counting only this copy's receives)
// would not.
func TestCarriedAttemptsDeadLetter(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		clock := consumertest.NewClock(time.Time{})
		fake := consumertest.NewSQS(clock)
		dlq := fake.CreateQueue("dlq", nil)
		h := &harness{t: t, clock: clock, sqs: fake, url: fake.CreateQueue("carried", map[string]string{"RedrivePolicy": redrive}), obs: &recorder{}}
		url := h.url
		body := "job"
		n, orig := "2", "orig-1"
		_, err := fake.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: &url, MessageBody: &body,
			MessageAttributes: map[string]typesMAV{
				consumer.AttrAttempts:  {DataType: strp("Number"), StringValue: &n},
				consumer.AttrMessageID: {DataType: strp("String"), StringValue: &orig},
			}})
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan [3]int, 1)
		h.start(consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
			final := 0
			if d.IsFinalAttempt() {
				final = 1
			}
			got <- [3]int{d.Attempt(), d.AttemptsLeft(), final}
			if d.ID() != orig {
				t.Errorf("ID %q, want the carried %q", d.ID(), orig)
			}
			return errors.New("fails")
		}))
		if g := <-got; g != [3]int{3, 0, 1} {
			t.Errorf("attempt, left, final = %v, want [3 0 1]", g)
		}
		poll.For(t, 5*time.Second, func() error {
			if len(fake.Messages(dlq)) != 1 {
				return fmt.Errorf("not dead-lettered")
			}
			return nil
		})
		if n := h.obs.Count(consumer.EventDeadLettered); n != 1 {
			t.Errorf("dead-lettered events %d, want 1", n)
		}
	})
}

// A snooze longer than SQS's 15-minute delay is carried in an attribute:
// the copy that comes back early is snoozed again without the handler.
func TestLongSnooze(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		h := newHarness(t, "long", nil)
		h.sqs.Send(h.url, "x", "")
		calls := newCounter()
		h.start(consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
			if calls.add("h") == 1 {
				return consumer.NotReady(20 * time.Minute)
			}
			return nil
		}))
		poll.For(t, 5*time.Second, func() error {
			if len(h.sqs.Calls("SendMessage")) != 1 {
				return fmt.Errorf("no re-send")
			}
			return nil
		})
		in := h.sqs.Calls("SendMessage")[0].Input.(*sqs.SendMessageInput)
		if in.DelaySeconds != 900 {
			t.Errorf("first re-send delay %d, want 900", in.DelaySeconds)
		}
		h.advance(15*time.Minute, 5*time.Second)
		poll.For(t, 5*time.Second, func() error {
			if len(h.sqs.Calls("SendMessage")) != 2 {
				return fmt.Errorf("no second re-send")
			}
			return nil
		})
		if in := h.sqs.Calls("SendMessage")[1].Input.(*sqs.SendMessageInput); in.DelaySeconds != 300 {
			t.Errorf("second re-send delay %d, want 300", in.DelaySeconds)
		}
		if n := calls.get("h"); n != 1 {
			t.Errorf("handler calls during the snooze %d, want 1", n)
		}
		h.advanceUntil(6*time.Minute, 5*time.Second, func() error {
			if calls.get("h") != 2 {
				return fmt.Errorf("handler not called after the snooze")
			}
			return nil
		})
	})
}

// A re-sent copy on its final attempt (by the carried count) that stalls is
// dead-lettered by the runtime like one that fails, whether its handler
// returns within the grace or is abandoned: released, it would come back
// for attempts past the redrive policy's maxReceiveCount, since SQS counts
// only this copy's receives.
func TestCarriedAttemptsStallDeadLetters(t *testing.T) {
	t.Parallel()
	for _, ignore := range []bool{false, true} {
		t.Run(fmt.Sprintf("abandoned=%v", ignore), func(t *testing.T) {
			t.Parallel()
			bubble(t, func(t *testing.T) {
				clock := consumertest.NewClock(time.Time{})
				fake := consumertest.NewSQS(clock)
				dlq := fake.CreateQueue("dlq", nil)
				h := &harness{t: t, clock: clock, sqs: fake, url: fake.CreateQueue("carriedstall", map[string]string{"RedrivePolicy": redrive}), obs: &recorder{}}
				url, body, n := h.url, "job", "2"
				_, err := fake.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: &url, MessageBody: &body,
					MessageAttributes: map[string]typesMAV{consumer.AttrAttempts: {DataType: strp("Number"), StringValue: &n}}})
				if err != nil {
					t.Fatal(err)
				}
				hd := &causeHandler{ignore: ignore, rel: make(chan struct{})}
				defer close(hd.rel)
				h.start(hd, consumer.WithVisibilityTimeout(30*time.Second), consumer.WithAutoRenew(0),
					consumer.WithStallTimeout(10*time.Second), consumer.WithConcurrency(1))
				h.advanceUntil(time.Minute, time.Second, func() error {
					if len(fake.Messages(dlq)) != 1 {
						return fmt.Errorf("not dead-lettered; releases %v", h.obs.Reasons(consumer.EventReleased))
					}
					return nil
				})
				if got := h.obs.Reasons(consumer.EventReleased)[consumer.ReasonStalled]; got != 0 {
					t.Errorf("stalled releases %d, want 0", got)
				}
			})
		})
	}
}
