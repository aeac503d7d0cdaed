// Package poll waits in tests for an effect that arrives asynchronously. It
// imports nothing of Baton's, so any package's tests can use it, including
// internal tests of the packages internal/testutil builds on.
package poll

import (
	"testing"
	"time"
)

// For polls cond every millisecond until it returns nil or timeout passes,
// then fails the test with cond's last error. Use it to await asynchronous
// effects instead of sleeping. Inside a testing/synctest bubble the timeout
// runs on the bubble's clock.
func For(tb testing.TB, timeout time.Duration, cond func() error) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("condition not met after %v: %v", timeout, err)
		}
		time.Sleep(time.Millisecond)
	}
}
