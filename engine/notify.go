package engine

import (
	"time"

	"github.com/baton-sqs/baton"
)

// A store shared by several servers (a baton.Notifier) tells the engine of
// sends made through the others, and the engine wakes its long polls on
// them as on its own sends. Such wake-ups can be lost while the store's link
// to the others is down, so a long poll on a shared store also looks again
// at least every sharedStorePoll.

// sharedStorePoll bounds a long poll's sleep when the store is shared.
const sharedStorePoll = time.Second

// subscribeStore wakes long polls on the sends the store reports, if it
// reports any.
func (e *Engine) subscribeStore() {
	if n, ok := e.store.(baton.Notifier); ok {
		n.Subscribe(e.notify)
	}
}

// boundSleep caps a long poll's sleep at sharedStorePoll on a shared store.
func (e *Engine) boundSleep(d time.Duration) time.Duration {
	if _, ok := e.store.(baton.Notifier); ok && d > sharedStorePoll {
		return sharedStorePoll
	}
	return d
}
