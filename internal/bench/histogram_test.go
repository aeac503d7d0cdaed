package bench_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/baton-sqs/baton/internal/bench"
)

// nearestRank is the exact q-quantile of sorted values.
func nearestRank(sorted []time.Duration, q float64) time.Duration {
	rank := int(math.Ceil(q * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

func TestHistogramQuantilesWithinBound(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 3, 10, 99, 100, 1000, 54321} {
		var h bench.Histogram
		values := make([]time.Duration, n)
		for i := range values {
			// Log-uniform from 1 ns to about 100 s: every bucket range.
			values[i] = time.Duration(math.Exp(rng.Float64() * math.Log(1e11)))
			h.Record(values[i])
		}
		slices.Sort(values)
		for _, q := range []float64{0, 0.001, 0.25, 0.5, 0.9, 0.99, 0.999, 1} {
			got, want := h.Quantile(q), nearestRank(values, q)
			// Within half a bucket: 1/128 of the value, and at least 1 ns.
			tol := max(time.Duration(float64(want)/128), 1)
			if d := got - want; d < -tol || d > tol {
				t.Errorf("n=%d q=%v: Quantile = %v, want %v ± %v", n, q, got, want, tol)
			}
		}
		if got, want := h.Quantile(1), values[n-1]; got != want {
			t.Errorf("n=%d: Quantile(1) = %v, want the maximum %v exactly", n, got, want)
		}
		if got, want := h.Max(), values[n-1]; got != want {
			t.Errorf("n=%d: Max = %v, want %v", n, got, want)
		}
		if got, want := h.Count(), uint64(n); got != want {
			t.Errorf("Count = %d, want %d", got, want)
		}
	}
}

func TestHistogramSmallValuesAreExact(t *testing.T) {
	t.Parallel()
	var h bench.Histogram
	for v := range 100 {
		h.Record(time.Duration(v + 1)) // 1..100 ns
	}
	for q, want := range map[float64]time.Duration{0.5: 50, 0.9: 90, 0.99: 99, 1: 100, 0: 1} {
		if got := h.Quantile(q); got != want {
			t.Errorf("Quantile(%v) = %v, want %v", q, got, want)
		}
	}
	if got, want := h.Mean(), time.Duration(50); got != want { // 50.5 truncated
		t.Errorf("Mean = %v, want %v", got, want)
	}
}

func TestHistogramEdges(t *testing.T) {
	t.Parallel()
	var empty bench.Histogram
	if s := empty.Summary(); s != (bench.Summary{}) {
		t.Errorf("empty Summary = %+v, want zero", s)
	}
	var h bench.Histogram
	h.Record(-time.Second) // counts as 0
	h.Record(time.Hour)    // beyond the last bucket's range
	if got := h.Quantile(0.5); got != 0 {
		t.Errorf("Quantile(0.5) = %v, want 0", got)
	}
	if got := h.Quantile(1); got != time.Hour {
		t.Errorf("Quantile(1) = %v, want 1h", got)
	}
	var one bench.Histogram
	one.Record(1234567 * time.Nanosecond)
	for _, q := range []float64{0, 0.5, 0.99, 1} {
		if got := one.Quantile(q); got != 1234567 {
			t.Errorf("single value: Quantile(%v) = %v, want it exactly (clamped to min and max)", q, got)
		}
	}
}

func TestHistogramMerge(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	var a, b, all bench.Histogram
	for i := range 10000 {
		d := time.Duration(rng.Int64N(int64(50 * time.Millisecond)))
		all.Record(d)
		if i%3 == 0 {
			a.Record(d)
		} else {
			b.Record(d)
		}
	}
	var merged bench.Histogram
	merged.Merge(&a)
	merged.Merge(&b)
	merged.Merge(&bench.Histogram{}) // merging nothing changes nothing
	if got, want := merged.Summary(), all.Summary(); got != want {
		t.Errorf("merged Summary = %+v, want %+v", got, want)
	}
}

func BenchmarkHistogramRecord(b *testing.B) {
	var h bench.Histogram
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		h.Record(time.Duration(i*7919) % time.Second)
	}
}
