package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/baton-sqs/baton/consumer"
	"github.com/baton-sqs/baton/internal/testutil/poll"
)

// Per-item results: failed items are released with backoff in one
// ChangeMessageVisibilityBatch, the rest deleted in one DeleteMessageBatch;
// a result of the wrong length, or a
// panic, fails every item; on a FIFO queue a failure fails the later
// messages of its group.
func TestBatchResults(t *testing.T) {
	t.Parallel()
	fail := errors.New("fail")
	tests := []struct {
		name        string
		queue       string
		groups      []string // per message; nil for a standard queue
		results     func(batch []*consumer.Delivery) []error
		wantDeleted []string
		wantBackoff []string // released with the retry delay
		wantSkipped []string // released at once (FIFO group skipped)
	}{
		{"three of ten fail", "std", nil, func(b []*consumer.Delivery) []error {
			r := make([]error, len(b))
			for i, d := range b {
				if d.Body() == "m2" || d.Body() == "m5" || d.Body() == "m7" {
					r[i] = fail
				}
			}
			return r
		}, []string{"m0", "m1", "m3", "m4", "m6", "m8", "m9"}, []string{"m2", "m5", "m7"}, nil},
		{"nil means all succeeded", "std", nil, func(b []*consumer.Delivery) []error { return nil },
			[]string{"m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "m9"}, nil, nil},
		{"wrong length fails all", "std", nil, func(b []*consumer.Delivery) []error { return make([]error, 3) },
			nil, []string{"m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "m9"}, nil},
		{"panic fails all", "std", nil, func(b []*consumer.Delivery) []error { panic("oops") },
			nil, []string{"m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "m9"}, nil},
		{"FIFO failure fails the rest of its group", "b.fifo", []string{"a", "a", "a", "b", "b"}, func(b []*consumer.Delivery) []error {
			r := make([]error, len(b))
			for i, d := range b {
				if d.Body() == "m1" {
					r[i] = fail
				}
			}
			return r
		}, []string{"m0", "m3", "m4"}, []string{"m1"}, []string{"m2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			bubble(t, func(t *testing.T) {
				h := newHarness(t, tt.queue, nil)
				n := 10
				if tt.groups != nil {
					n = len(tt.groups)
				}
				byBody := map[string]string{}
				for i := 0; i < n; i++ {
					g := ""
					if tt.groups != nil {
						g = tt.groups[i]
					}
					body := fmt.Sprintf("m%d", i)
					byBody[h.sqs.Send(h.url, body, g)] = body
				}
				calls := 0
				h.startBatch(consumer.BatchHandlerFunc(func(ctx context.Context, b []*consumer.Delivery) []error {
					calls++
					if calls > 1 {
						<-ctx.Done()
						return consumer.FailAll(len(b), ctx.Err())
					}
					if len(b) != n {
						t.Errorf("batch of %d, want %d", len(b), n)
					}
					return tt.results(b)
				}), consumer.WithRetryPolicy(consumer.RetryPolicy{Base: 6 * time.Second, Jitter: consumer.NoJitter}), consumer.WithConcurrency(1))
				poll.For(t, 5*time.Second, func() error {
					settled := 0
					for _, m := range h.states() {
						if m.Deleted || !m.InFlight || m.VisibleAt.After(h.clock.Now()) && m.VisibleAt.Sub(h.clock.Now()) < 10*time.Second {
							settled++
						}
					}
					if settled != n {
						return fmt.Errorf("%d of %d settled", settled, n)
					}
					return nil
				})
				var deleted, backoff, skipped []string
				now := h.clock.Now()
				for _, m := range h.states() {
					switch {
					case m.Deleted:
						deleted = append(deleted, byBody[m.ID])
					case m.VisibleAt.Equal(now.Add(6 * time.Second)):
						backoff = append(backoff, byBody[m.ID])
					case !m.VisibleAt.After(now):
						skipped = append(skipped, byBody[m.ID])
					}
				}
				for _, s := range [][]string{deleted, backoff, skipped} {
					sort.Strings(s)
				}
				if fmt.Sprint(deleted) != fmt.Sprint(tt.wantDeleted) && !(len(deleted) == 0 && len(tt.wantDeleted) == 0) {
					t.Errorf("deleted %v, want %v", deleted, tt.wantDeleted)
				}
				if fmt.Sprint(backoff) != fmt.Sprint(tt.wantBackoff) && !(len(backoff) == 0 && len(tt.wantBackoff) == 0) {
					t.Errorf("released with backoff %v, want %v", backoff, tt.wantBackoff)
				}
				if fmt.Sprint(skipped) != fmt.Sprint(tt.wantSkipped) && !(len(skipped) == 0 && len(tt.wantSkipped) == 0) {
					t.Errorf("released at once %v, want %v", skipped, tt.wantSkipped)
				}
				if n := len(tt.wantBackoff) + len(tt.wantSkipped); n > 0 {
					if got := len(h.sqs.Calls("ChangeMessageVisibilityBatch")); got != 1 {
						t.Errorf("visibility calls %d, want 1 for %d releases", got, n)
					}
				}
				if len(tt.wantDeleted) > 0 {
					if got := len(h.sqs.Calls("DeleteMessageBatch")); got != 1 {
						t.Errorf("delete calls %d, want 1 for %d deletes", got, len(tt.wantDeleted))
					}
				}
			})
		})
	}
}

// A batch's EventHandled events carry each delivery's own renewals, not
// the batch's sum once per item (which renewals_per_attempt would count N
// times over).
func TestBatchRenewalsPerItem(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		h := newHarness(t, "batchren", nil)
		for i := 0; i < 3; i++ {
			h.sqs.Send(h.url, fmt.Sprint(i), "")
		}
		g := newGate()
		defer g.open()
		h.startBatch(consumer.BatchHandlerFunc(func(ctx context.Context, b []*consumer.Delivery) []error {
			<-g.ch
			return nil
		}), consumer.WithVisibilityTimeout(30*time.Second), consumer.WithRenewAhead(10*time.Second))
		h.advance(25*time.Second, time.Second) // one renewal per lease, at 20 s
		g.open()
		h.settle()
		if n := h.obs.Count(consumer.EventRenewed); n != 3 {
			t.Fatalf("renewals %d, want 3", n)
		}
		var got []int
		for _, e := range h.obs.All(consumer.EventHandled) {
			got = append(got, e.Renewals)
		}
		if fmt.Sprint(got) != "[1 1 1]" {
			t.Errorf("EventHandled.Renewals %v, want [1 1 1]", got)
		}
	})
}
