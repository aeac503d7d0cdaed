package pebblestore

import (
	"context"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
)

// A call that panics while it holds its queue's stripe (net/http recovers a
// handler's panic and serves on) releases the stripe: every queue on it
// would otherwise hang.
func TestPanicUnderStripeReleasesIt(t *testing.T) {
	t.Parallel()
	s, err := Open(t.Context(), t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the call did not panic")
			}
		}()
		s.leaseCall(context.Background(), []uint64{7}, "m", func(int64) (baton.LeaseOutcome, []change, error) {
			panic("a bug under the lock")
		})
	}()
	locked := make(chan struct{})
	go func() {
		i := s.lockQueue(7)
		s.stripes[i].Unlock()
		close(locked)
	}()
	select {
	case <-locked:
	case <-time.After(10 * time.Second):
		t.Fatal("queue 7's stripe is still locked 10 s after the panic")
	}
}
