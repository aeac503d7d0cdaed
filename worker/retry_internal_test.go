package worker

import (
	"testing"
	"time"

	"github.com/baton-sqs/baton/consumer"
)

// Whatever the lease and maxReceiveCount, the least the delays before the
// dead-letter queue add up to is maxReceiveCount-1 leases (as far as the
// 12-hour ceiling allows), and the cap is no higher than that needs.
func TestRetryPolicySpreadsTheReceives(t *testing.T) {
	for _, vis := range []time.Duration{time.Second, 30 * time.Second, 15 * time.Minute, 12 * time.Hour} {
		for _, n := range []int{2, 3, 5, 10, 50, 1000} {
			p, ok := retryPolicy(queueInfo{visibility: vis, maxReceiveCount: n})
			if !ok {
				t.Fatalf("vis %v, maxReceiveCount %d: no policy", vis, n)
			}
			span, least := time.Duration(n-1)*vis, leastSpread(p, n-1)
			if least < span && p.Max < consumer.MaxLease {
				t.Errorf("vis %v, maxReceiveCount %d: delays add up to %v at least, want %v", vis, n, least, span)
			}
			if p.Max > 15*time.Minute && p.Max > 2*vis {
				lower := p
				lower.Max = max(p.Max/2, 15*time.Minute, 2*vis)
				if leastSpread(lower, n-1) >= span {
					t.Errorf("vis %v, maxReceiveCount %d: cap %v, but %v would do", vis, n, p.Max, lower.Max)
				}
			}
			if p.Delay(1, 0) < time.Second {
				t.Errorf("vis %v, maxReceiveCount %d: first delay %v, under 1s", vis, n, p.Delay(1, 0))
			}
		}
	}
	for _, n := range []int{0, 1} {
		if _, ok := retryPolicy(queueInfo{visibility: 30 * time.Second, maxReceiveCount: n}); ok {
			t.Errorf("maxReceiveCount %d: a policy, want the consumer's default", n)
		}
	}
}
