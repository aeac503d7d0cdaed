package consumer

import (
	"sync"
	"time"
)

// reach follows the receives' failures in a row, so that an outage (a
// server restarting, a network cut) is told twice, when the receives start
// failing and when they succeed again, not once per failed receive: the
// receive loops retry every backoff for as long as it lasts.
type reach struct {
	mu       sync.Mutex
	failures int       // receives failed in a row
	since    time.Time // when the first of them failed
}

// receiveFailed counts a failed receive; the first of a row is
// EventReceivesFailing.
func (c *Consumer) receiveFailed(err error) {
	r := &c.reach
	r.mu.Lock()
	first := r.failures == 0
	if first {
		r.since = c.clock.Now()
	}
	r.failures++
	r.mu.Unlock()
	if first {
		c.observe(Event{Kind: EventReceivesFailing, Op: "ReceiveMessage", Err: err})
	}
}

// receiveAnswered notes a receive sent at sent that succeeded: the first
// after failures is EventReceivesRecovered, saying how many failed and for
// how long (until that receive was sent: a long poll answers when it
// ends).
func (c *Consumer) receiveAnswered(sent time.Time) {
	r := &c.reach
	r.mu.Lock()
	n, since := r.failures, r.since
	r.failures = 0
	r.mu.Unlock()
	if n > 0 {
		c.observe(Event{Kind: EventReceivesRecovered, Count: n, Duration: max(sent.Sub(since), 0)})
	}
}
