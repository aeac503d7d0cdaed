package ledger

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// The reported quantile stays within the documented 1% of the exact one.
func TestHistogramErrorBound(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	var h histogram
	var exact []time.Duration
	for range 20000 {
		d := time.Duration(r.ExpFloat64() * float64(20*time.Second))
		h.add(d)
		exact = append(exact, d)
	}
	slices.Sort(exact)
	for _, q := range []float64{0.5, 0.9, 0.99, 1} {
		want := exact[int(q*float64(len(exact)))-1]
		got := h.quantile(q)
		if ratio := float64(got) / float64(want); ratio < 0.99 || ratio > 1.01 {
			t.Errorf("q%.2f = %v, exact %v (ratio %.4f, want within 1%%)", q, got, want, ratio)
		}
	}
	if h.quantile(1) != exact[len(exact)-1] {
		t.Errorf("max = %v, want %v", h.quantile(1), exact[len(exact)-1])
	}
}
