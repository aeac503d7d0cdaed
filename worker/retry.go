package worker

import (
	"time"

	"github.com/baton-sqs/baton/consumer"
)

// retryPolicy is how long a failed message stays away before it comes
// back, on a queue whose RedrivePolicy dead-letters a message after
// maxReceiveCount receives.
//
// Lambda leaves a failed message to come back when its lease ends, so the
// receives a RedrivePolicy allows take at least maxReceiveCount-1 leases
// before the message is dead-lettered: a maxReceiveCount sized for Lambda
// rides out a failure of the target that long. The worker releases a
// failed message at once with a delay instead, which brings the first
// retries back sooner; with the consumer's default backoff (from 1 s) the
// receives would all be spent within seconds, and a target down for a few
// seconds would dead-letter every message it was sent. So the delays grow
// exponentially (equal jitter: each at least half its bound) from a base
// chosen so that the delays before the last receive would add up to at
// least maxReceiveCount-1 leases (as far as the 12-hour ceiling of a delay
// allows; capped no higher than that needs, at least 15 minutes), and each
// is kept within what is left of the message's lease (WithinLease): a
// failed message never comes back later than Lambda would bring it back,
// and the server reads each release as one, not as a renewal and a lapse.
//
// It reports false when no receive count is at stake (no RedrivePolicy, or
// a maxReceiveCount of 1): the consumer's default backoff applies.
func retryPolicy(q queueInfo) (consumer.RetryPolicy, bool) {
	retries := q.maxReceiveCount - 1
	if retries < 1 {
		return consumer.RetryPolicy{}, false
	}
	span := time.Duration(retries) * q.visibility
	// With bounds base·2^(k-1), k = 1…retries, the least delays (half
	// their bounds) add up to base·(2^retries-1)/2.
	base := time.Second
	if retries < 40 {
		base = max(base, 2*span/time.Duration(1<<retries-1))
	}
	p := consumer.RetryPolicy{Base: base, Multiplier: 2, Jitter: consumer.EqualJitter, Min: time.Second,
		Max: max(15*time.Minute, 2*q.visibility), WithinLease: true}
	for p.Max < consumer.MaxLease && leastSpread(p, retries) < span {
		p.Max = min(2*p.Max, consumer.MaxLease)
	}
	return p, true
}

// leastSpread is the least the delays of p's first n retries add up to
// (each jitter draw at its lowest).
func leastSpread(p consumer.RetryPolicy, n int) time.Duration {
	var sum time.Duration
	for k := 1; k <= n; k++ {
		sum += p.Delay(k, 0)
	}
	return sum
}
