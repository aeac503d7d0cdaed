package consumer_test

import (
	"errors"
	"testing"
	"time"

	"github.com/baton-sqs/baton/consumer"
	"github.com/baton-sqs/baton/consumer/consumertest"
)

// With no option that bounds it, a hung handler (no progress, its
// cancellation ignored) is not renewed forever: the defaults renew it
// through the 5-minute auto-renew budget only, cancel it with ErrStalled
// at 5 min, and after the 5 s grace release its message with backoff and
// report its slot stuck. No renewal is sent after that, and the message
// is never hidden past the bound plus one lease.
func TestHungHandlerBoundedByDefault(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		h := newHarness(t, "hung", map[string]string{"VisibilityTimeout": "30"})
		id := h.sqs.Send(h.url, "x", "")
		hd := &causeHandler{ignore: true, rel: make(chan struct{})}
		defer close(hd.rel)
		h.start(hd, consumer.WithConcurrency(1))
		const budget, grace = 5 * time.Minute, 5 * time.Second
		h.advance(budget-time.Second, time.Second)
		if got := hd.got(); len(got) != 0 {
			t.Fatalf("cancelled before the auto-renew budget ran out: %v", got)
		}
		if h.obs.Count(consumer.EventRenewed) == 0 {
			t.Fatal("no renewal inside the auto-renew budget")
		}
		if m := h.state(id); !m.InFlight {
			t.Fatal("lease lapsed inside the auto-renew budget")
		}
		h.advance(time.Second+grace, time.Second)
		h.awaitReleases(consumer.ReasonStalled, 1)
		if got := hd.got(); len(got) != 1 || !errors.Is(got[0], consumer.ErrStalled) {
			t.Fatalf("causes %v, want [ErrStalled]", got)
		}
		start := consumertest.Epoch
		stalled := h.obs.All(consumer.EventStalled)
		if len(stalled) != 1 || !stalled[0].Time.Equal(start.Add(budget)) {
			t.Fatalf("stall events %v, want one at +%v", stalled, budget)
		}
		if stuck := h.obs.All(consumer.EventSlotStuck); len(stuck) != 1 || !stuck[0].Time.Equal(start.Add(budget+grace)) {
			t.Fatalf("stuck events %v, want one at +%v", stuck, budget+grace)
		}
		m := h.state(id)
		if m.Deleted || !m.VisibleAt.Before(start.Add(budget+grace+30*time.Second)) {
			t.Errorf("message deleted %v, visible at +%v; want released with backoff", m.Deleted, m.VisibleAt.Sub(start))
		}
		renewals := h.obs.Count(consumer.EventRenewed)
		h.advance(10*time.Minute, 5*time.Second)
		for _, e := range h.obs.All(consumer.EventRenewed)[:renewals] {
			if e.Time.After(start.Add(budget + grace)) {
				t.Errorf("renewal at +%v, after the bound", e.Time.Sub(start))
			}
		}
		for _, e := range h.obs.All(consumer.EventRenewed)[renewals:] {
			if e.MessageID == id && e.Attempt == 1 {
				t.Errorf("the hung attempt's lease renewed at +%v, after it was released", e.Time.Sub(start))
			}
		}
	})
}
