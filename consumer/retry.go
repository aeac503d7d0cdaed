package consumer

import (
	"math"
	"time"
)

// MaxLease is the longest a lease may last, counted from the receive that
// produced it: SQS rejects any extension past it.
const MaxLease = 12 * time.Hour

// Jitter says how RetryPolicy spreads its delays so that failures of many
// messages at once do not come back at once.
type Jitter int

const (
	// FullJitter draws the delay uniformly from [0, exponential delay],
	// then applies the policy's floor. The default.
	FullJitter Jitter = iota
	// EqualJitter keeps half the exponential delay and draws the other half.
	EqualJitter
	// DecorrelatedJitter draws uniformly between Base and three times the
	// previous attempt's bound: the stateless form of decorrelated jitter.
	DecorrelatedJitter
	// NoJitter uses the exponential delay as is.
	NoJitter
)

// String names the jitter mode.
func (j Jitter) String() string {
	switch j {
	case FullJitter:
		return "full"
	case EqualJitter:
		return "equal"
	case DecorrelatedJitter:
		return "decorrelated"
	case NoJitter:
		return "none"
	}
	return "unknown"
}

// RetryPolicy computes how long a failed message stays hidden before its next
// attempt. Zero fields take the defaults of DefaultRetryPolicy. Delays never
// pass MaxLease, and never fall below one second unless AllowZero is set, so
// a failing message cannot spin in a zero-delay loop.
type RetryPolicy struct {
	// Base is the delay before the second attempt (default 1 s).
	Base time.Duration
	// Max caps the delay (default 15 min; never more than MaxLease).
	Max time.Duration
	// Multiplier grows the delay per attempt (default 2).
	Multiplier float64
	// Jitter spreads the delays (default FullJitter).
	Jitter Jitter
	// Min is the floor after jitter (default 1 s).
	Min time.Duration
	// AllowZero lets Min be zero, permitting immediate redelivery. Leave it
	// off unless the handler backs off some other way.
	AllowZero bool
	// WithinLease keeps each delay within what is left of the lease the
	// message holds when it is released, less a second for the whole
	// seconds SQS takes (never under Min): the message comes back no later
	// than its lease would have ended, and the change reads as a release
	// with a delay, where a longer one would look like a renewal followed
	// by a lapse (to Baton's lease doctor, a handler that failed to come
	// back). It applies to the policy's delays, not to Retry(after).
	WithinLease bool
}

// DefaultRetryPolicy is exponential backoff from 1 s doubling to 15 min with
// full jitter and a 1 s floor.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{Base: time.Second, Max: 15 * time.Minute, Multiplier: 2, Jitter: FullJitter, Min: time.Second}
}

// withDefaults fills zero fields.
func (p RetryPolicy) withDefaults() RetryPolicy {
	d := DefaultRetryPolicy()
	if p.Base <= 0 {
		p.Base = d.Base
	}
	if p.Max <= 0 {
		p.Max = d.Max
	}
	if p.Max > MaxLease {
		p.Max = MaxLease
	}
	if p.Multiplier < 1 {
		p.Multiplier = d.Multiplier
	}
	if p.Min <= 0 && !p.AllowZero {
		p.Min = d.Min
	}
	if p.Min > p.Max {
		p.Min = p.Max
	}
	return p
}

// Delay returns the delay after the given failed attempt (1 for the first),
// with u a uniform random number in [0, 1) that drives the jitter. It is a
// pure function, so callers and tests choose the randomness.
func (p RetryPolicy) Delay(attempt int, u float64) time.Duration {
	p = p.withDefaults()
	if attempt < 1 {
		attempt = 1
	}
	if u < 0 {
		u = 0
	}
	if u >= 1 {
		u = math.Nextafter(1, 0)
	}
	bound := func(mult float64, n int) float64 {
		v := float64(p.Base) * math.Pow(mult, float64(n-1))
		return math.Min(v, float64(p.Max))
	}
	var d float64
	switch p.Jitter {
	case NoJitter:
		d = bound(p.Multiplier, attempt)
	case EqualJitter:
		b := bound(p.Multiplier, attempt)
		d = b/2 + u*b/2
	case DecorrelatedJitter:
		hi := math.Min(float64(p.Base)*math.Pow(3, float64(attempt-1)), float64(p.Max))
		d = float64(p.Base) + u*(hi-float64(p.Base))
	default:
		d = u * bound(p.Multiplier, attempt)
	}
	out := time.Duration(d)
	if out < p.Min {
		out = p.Min
	}
	if out > p.Max {
		out = p.Max
	}
	return out
}

// seconds converts a delay to the whole seconds SQS takes, rounding up so a
// delay is never shortened, and clamping to [0, max].
func seconds(d, max time.Duration) int32 {
	if d <= 0 {
		return 0
	}
	if d > max {
		d = max
	}
	s := int64((d + time.Second - 1) / time.Second)
	if time.Duration(s)*time.Second > max {
		s = int64(max / time.Second)
	}
	return int32(s)
}
