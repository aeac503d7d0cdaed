package gcpace_test

import (
	"context"
	"runtime/debug"
	"testing"

	"github.com/baton-sqs/baton/internal/gcpace"
)

func TestPercent(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	for _, tt := range []struct {
		live, scan, headroom uint64
		want                 int
	}{
		{0, 0, 128 * mib, 100},
		{100 * mib, 100 * mib, 128 * mib, 100},
		{128 * mib, 128 * mib, 128 * mib, 100},
		{256 * mib, 256 * mib, 128 * mib, 50},
		{200 * mib, 200 * mib, 128 * mib, 64},
		{512 * mib, 512 * mib, 128 * mib, 25},
		{4096 * mib, 4096 * mib, 128 * mib, gcpace.MinPercent},
		// A heap mostly pointer-free: the floor is a quarter of what
		// holds pointers, and never 0 (GOGC=0 would collect always).
		{4096 * mib, 512 * mib, 128 * mib, 4},
		{4096 * mib, 1024 * mib, 64 * mib, 7},
		{4096 * mib, 0, 64 * mib, 1},
		{1024 * mib, 8 * mib, 64 * mib, 6},
	} {
		if got := gcpace.Percent(tt.live, tt.scan, tt.headroom); got != tt.want {
			t.Errorf("Percent(%d MiB, %d MiB scannable, %d MiB) = %d, want %d", tt.live/mib, tt.scan/mib, tt.headroom/mib, got, tt.want)
		}
	}
}

// TestStopRestores checks that Stop gives GOGC back. Not parallel: GOGC is
// the process's.
func TestStopRestores(t *testing.T) {
	t.Setenv("GOGC", "") // Start paces only without GOGC set
	before := debug.SetGCPercent(137)
	defer debug.SetGCPercent(before)
	p := gcpace.New(0)
	p.Start(context.Background())
	p.Stop()
	if got := debug.SetGCPercent(137); got != 137 {
		t.Errorf("GOGC after Stop = %d, want 137", got)
	}
}
