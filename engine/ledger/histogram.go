package ledger

import (
	"math"
	"sort"
	"time"
)

// histogram is a streaming histogram of durations with a known error bound:
// buckets grow geometrically by histGrowth, and a quantile is reported as
// its bucket's geometric midpoint, so it is within ±1% of the true sample
// value (relative). Durations below histMin share the first bucket.
type histogram struct {
	counts map[int]uint64
	n      uint64
	max    time.Duration
}

const (
	histGrowth = 1.02
	histMin    = time.Millisecond
)

var logGrowth = math.Log(histGrowth)

func bucketOf(d time.Duration) int {
	if d <= histMin {
		return 0
	}
	return int(math.Ceil(math.Log(float64(d)/float64(histMin)) / logGrowth))
}

// bucketValue is the geometric midpoint of bucket i: (lower·upper)^½.
func bucketValue(i int) time.Duration {
	if i == 0 {
		return histMin
	}
	return time.Duration(float64(histMin) * math.Pow(histGrowth, float64(i)-0.5))
}

func (h *histogram) add(d time.Duration) {
	if h.counts == nil {
		h.counts = make(map[int]uint64)
	}
	h.counts[bucketOf(d)]++
	h.n++
	h.max = max(h.max, d)
}

func (h *histogram) merge(o *histogram) {
	for b, c := range o.counts {
		if h.counts == nil {
			h.counts = make(map[int]uint64)
		}
		h.counts[b] += c
	}
	h.n += o.n
	h.max = max(h.max, o.max)
}

// quantile returns the q-quantile (0 < q ≤ 1), never above the maximum seen.
func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	buckets := make([]int, 0, len(h.counts))
	for b := range h.counts {
		buckets = append(buckets, b)
	}
	sort.Ints(buckets)
	rank := uint64(math.Ceil(q * float64(h.n)))
	if rank >= h.n {
		return h.max
	}
	var seen uint64
	for _, b := range buckets {
		seen += h.counts[b]
		if seen >= rank {
			return min(bucketValue(b), h.max)
		}
	}
	return h.max
}
