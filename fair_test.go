package baton_test

import (
	"testing"

	"github.com/baton-sqs/baton"
)

func TestNoisyTenant(t *testing.T) {
	for _, c := range []struct {
		inflight, queue int
		want            bool
	}{
		{30, 30, true},
		{29, 29, false},    // too few of its own
		{30, 299, true},    // more than a tenth
		{30, 300, false},   // exactly a tenth
		{100, 999, true},   // more than a tenth
		{100, 1000, false}, // a tenth
	} {
		if got := baton.NoisyTenant(c.inflight, c.queue); got != c.want {
			t.Errorf("NoisyTenant(%d, %d) = %v, want %v", c.inflight, c.queue, got, c.want)
		}
	}
}
