package consumer_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baton-sqs/baton/consumer"
)

// PauseReceives starts no receive before its end: the receive in flight
// ends (empty) and no other is sent, while a message waits in the queue,
// until the pause is over; then it is received and handled. A shorter
// pause asked meanwhile does not end it early, and a Shutdown during a
// pause does not wait for it.
func TestPauseReceivesHoldsReceivesBack(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		h := newHarness(t, "paused", nil)
		var handled atomic.Int32
		h.start(consumer.HandlerFunc(func(context.Context, *consumer.Delivery) error {
			handled.Add(1)
			return nil
		}), consumer.WithConcurrency(1), consumer.WithReceivers(1))
		start := h.clock.Now()
		h.c.PauseReceives(start.Add(10 * time.Minute))
		h.c.PauseReceives(start.Add(time.Minute)) // shorter: changes nothing
		h.advance(30*time.Second, time.Second)    // the receive in flight ends, empty
		sent := len(h.sqs.Calls("ReceiveMessage"))
		h.sqs.Send(h.url, "x", "")
		h.advance(9*time.Minute, 10*time.Second)
		if n := len(h.sqs.Calls("ReceiveMessage")); n != sent || handled.Load() != 0 {
			t.Fatalf("after 9m30s of a 10 min pause: %d receives (want %d), %d handled (want 0)", n, sent, handled.Load())
		}
		h.advanceUntil(time.Minute, time.Second, func() error {
			if handled.Load() != 1 {
				return fmt.Errorf("handled %d, want 1", handled.Load())
			}
			return nil
		})
		if now := h.clock.Now(); now.Before(start.Add(10 * time.Minute)) {
			t.Errorf("handled %v after the pause began, want at least 10m", now.Sub(start))
		}
		h.c.PauseReceives(h.clock.Now().Add(time.Hour))
		h.advance(30*time.Second, time.Second)
		r := h.stop()
		if r.Err != nil || r.ReceivesCancelled != 0 {
			t.Errorf("shutdown during a pause: %+v", r)
		}
	})
}
