package bufpool

import "testing"

// TestPut: a buffer comes back empty, and one grown past maxKept is not
// kept (Get then hands out another).
func TestPut(t *testing.T) {
	b := Get()
	b.WriteString("answer")
	Put(b)
	if got := Get(); got.Len() != 0 {
		t.Errorf("a buffer lent again holds %q", got.String())
	}
	big := Get()
	big.Grow(maxKept + 1)
	Put(big)
	for range 10 {
		if Get() == big {
			t.Fatalf("a buffer of %d bytes was kept, past the %d bound", big.Cap(), maxKept)
		}
	}
}
