package bench

import (
	"math"
	"math/bits"
	"time"
)

// Histogram records durations in log-linear buckets: below 128 ns each
// nanosecond has its own bucket; above, every power of two is cut into 64
// buckets, so a bucket is at most 1/64 of its lower bound wide. A quantile is
// reported as its bucket's midpoint, clamped to the smallest and largest
// values seen, which puts it within 1/128 (0.8 %) of a recorded value.
// Durations of 2^40 ns (about 18 minutes) and more share the last bucket.
//
// The zero value is empty and ready to use. A Histogram is not safe for
// concurrent use: each worker keeps its own and they are merged at the end.
type Histogram struct {
	counts   [histBuckets]uint64
	n        uint64
	sum      time.Duration
	min, max time.Duration
}

const (
	histSubBits = 7
	histSub     = 1 << histSubBits // exact buckets below this many ns
	histHalf    = histSub / 2      // buckets per power of two above it
	histMaxBits = 40
	histBuckets = histSub + (histMaxBits-histSubBits)*histHalf
)

func histIndex(v uint64) int {
	if v < histSub {
		return int(v)
	}
	if v >= 1<<histMaxBits {
		v = 1<<histMaxBits - 1
	}
	shift := bits.Len64(v) - histSubBits
	return histSub + (shift-1)*histHalf + int(v>>shift) - histHalf
}

// histBounds returns the lowest value of bucket i and its width.
func histBounds(i int) (lo, width uint64) {
	if i < histSub {
		return uint64(i), 1
	}
	k := i - histSub
	shift := k/histHalf + 1
	mantissa := uint64(k%histHalf + histHalf)
	return mantissa << shift, 1 << shift
}

// Record adds one duration; a negative one counts as zero.
func (h *Histogram) Record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.counts[histIndex(uint64(d))]++
	if h.n == 0 || d < h.min {
		h.min = d
	}
	if d > h.max {
		h.max = d
	}
	h.n++
	h.sum += d
}

// Merge adds o's values to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	h.n += o.n
	h.sum += o.sum
}

// Count is the number of recorded durations.
func (h *Histogram) Count() uint64 { return h.n }

// Max is the largest recorded duration, exactly.
func (h *Histogram) Max() time.Duration { return h.max }

// Mean is the average recorded duration, 0 if none.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return h.sum / time.Duration(h.n)
}

// Quantile returns the q-quantile (0 ≤ q ≤ 1) by the nearest-rank method:
// the smallest recorded value that at least q of all values do not exceed.
// Quantile(1) is the maximum exactly, Quantile(0) the minimum; an empty
// histogram answers 0.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	if rank >= h.n {
		return h.max
	}
	if rank <= 1 {
		return h.min
	}
	var seen uint64
	for i, c := range h.counts {
		if seen += c; seen >= rank {
			lo, width := histBounds(i)
			v := time.Duration(lo + width/2)
			return min(max(v, h.min), h.max)
		}
	}
	return h.max
}

// Summary is a latency distribution as reports print it.
type Summary struct {
	Count uint64        `json:"count"`
	Mean  time.Duration `json:"mean_ns"`
	P50   time.Duration `json:"p50_ns"`
	P90   time.Duration `json:"p90_ns"`
	P99   time.Duration `json:"p99_ns"`
	Max   time.Duration `json:"max_ns"`
}

// Summary returns h's count, mean, p50, p90, p99 and max.
func (h *Histogram) Summary() Summary {
	return Summary{
		Count: h.n, Mean: h.Mean(),
		P50: h.Quantile(0.50), P90: h.Quantile(0.90), P99: h.Quantile(0.99), Max: h.max,
	}
}
