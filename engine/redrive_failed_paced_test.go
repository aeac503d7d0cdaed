package engine_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/testutil/poll"
)

// Dead-letter moves that fail for a few seconds and then work again: the
// receives that met the failure after the first line are counted once the
// interval after it has passed, saying since when, with no receive failing
// after them. They were counted by the next line alike, which may never
// come.
func TestReceiveFailedDeadLetterMoveBurstCounted(t *testing.T) {
	t.Parallel()
	r := newRedriveRig(t, false)
	r.poisonPastCount(t)
	first := r.clock.Now()
	timers := r.clock.Timers()
	r.store.failMove.Store(true)
	const line = "gave back the messages it could not move"
	for range 5 {
		if _, err := r.receive(r.src, 10); !errors.Is(err, baton.ErrUnavailable) {
			t.Fatalf("receive while moves fail: %v; want the store's unavailability", err)
		}
	}
	r.store.failMove.Store(false)
	waitTimers(t, r.clock, timers+1) // the count's, for the interval's end
	r.clock.Set(first.Add(10 * time.Second))
	poll.For(t, 30*time.Second, func() error {
		if l := r.log.String(); strings.Count(l, line) != 2 || !strings.Contains(l, "same_lines_not_logged=4 since="+first.UTC().Format(time.RFC3339)) {
			return fmt.Errorf("once the interval passed: want a second line counting the 4 held back since %v:\n%s", first, l)
		}
		return nil
	})
}
