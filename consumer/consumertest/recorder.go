package consumertest

import (
	"sync"

	"github.com/baton-sqs/baton/consumer"
)

// Recorder is a consumer.Observer that keeps every event, for tests to
// count and inspect. It is safe for concurrent use.
type Recorder struct {
	mu     sync.Mutex
	events []consumer.Event
}

// Observe records e.
func (r *Recorder) Observe(e consumer.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// All returns the events of kind k, in the order observed.
func (r *Recorder) All(k consumer.EventKind) []consumer.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []consumer.Event
	for _, e := range r.events {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// Count returns how many events of kind k were observed.
func (r *Recorder) Count(k consumer.EventKind) int { return len(r.All(k)) }

// Reasons counts the events of kind k by their reason.
func (r *Recorder) Reasons(k consumer.EventKind) map[consumer.Reason]int {
	out := map[consumer.Reason]int{}
	for _, e := range r.All(k) {
		out[e.Reason]++
	}
	return out
}
