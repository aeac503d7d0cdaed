package engine

import "time"

// A store shared by several servers (a baton.SharedStore) tells the engine of
// sends made through the others, and the engine wakes its long polls on
// them as on its own sends. Such wake-ups can be lost while the store's link
// to the others is down, so a long poll on a shared store also looks again
// at least every sharedStorePoll.

// sharedStorePoll bounds a long poll's sleep when the store is shared.
const sharedStorePoll = time.Second

// subscribeStore wakes long polls on the sends the store reports, if it
// reports any.
func (e *Engine) subscribeStore() {
	if e.shared != nil {
		e.shared.Subscribe(e.notify)
	}
}

// boundSleep caps a long poll's sleep at sharedStorePoll on a shared store.
func (e *Engine) boundSleep(d time.Duration) time.Duration {
	if e.shared != nil && d > sharedStorePoll {
		return sharedStorePoll
	}
	return d
}
