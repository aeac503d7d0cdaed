package pgstore

import (
	"fmt"
	"sync"
	"time"
)

// A database can stop completing commits while it still answers a query:
// a primary whose synchronous standby is gone keeps every commit waiting,
// a frozen one answers nothing, and a node's own statements are the first
// to see it. The store watches its runs (each try of an operation, retry.go)
// so that Ping, the node's /healthz, fails while one waits too long, as
// well as while the database refuses them.

// stallAfter is how long a run may wait for the database before Ping
// reports it: far longer than any statement of a healthy database takes,
// shorter than the retry bound, so that a load balancer drains the node
// while its callers still wait.
const stallAfter = 2 * time.Second

// runWatch tracks the runs in flight.
type runWatch struct {
	mu      sync.Mutex
	next    uint64
	running map[uint64]time.Time // start of each run in flight
}

// begin records a run starting now; end, that it ended.
func (w *runWatch) begin() (end func()) {
	w.mu.Lock()
	if w.running == nil {
		w.running = make(map[uint64]time.Time)
	}
	id := w.next
	w.next++
	w.running[id] = time.Now()
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		delete(w.running, id)
		w.mu.Unlock()
	}
}

// check says why the database does not complete this node's runs, or
// returns nil: a run waiting longer than stallAfter.
func (w *runWatch) check() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var oldest time.Time
	for _, t := range w.running {
		if oldest.IsZero() || t.Before(oldest) {
			oldest = t
		}
	}
	if !oldest.IsZero() {
		if d := time.Since(oldest); d > stallAfter {
			return fmt.Errorf("database not completing statements: one has waited %v", d.Round(100*time.Millisecond))
		}
	}
	return nil
}
