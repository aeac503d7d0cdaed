package cli

import (
	"maps"
	"testing"
)

// A name ending in .fifo implies the FIFO attribute, unless it is given.
func TestImpliedFIFO(t *testing.T) {
	for _, c := range []struct {
		name string
		in   map[string]string
		want map[string]string
	}{
		{"orders.fifo", nil, map[string]string{"FifoQueue": "true"}},
		{"orders.fifo", map[string]string{"DelaySeconds": "1"}, map[string]string{"DelaySeconds": "1", "FifoQueue": "true"}},
		{"orders.fifo", map[string]string{"FifoQueue": "false"}, map[string]string{"FifoQueue": "false"}},
		{"orders", nil, nil},
		{"orders", map[string]string{"DelaySeconds": "1"}, map[string]string{"DelaySeconds": "1"}},
	} {
		if got := impliedFIFO(c.name, "FifoQueue", maps.Clone(c.in)); !maps.Equal(got, c.want) {
			t.Errorf("impliedFIFO(%q, %v) = %v, want %v", c.name, c.in, got, c.want)
		}
	}
}
