package gcpace_test

import (
	"context"
	"runtime/debug"
	"testing"

	"github.com/baton-sqs/baton/internal/leaf/gcpace"
)

func TestPercent(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	for _, tt := range []struct {
		live, headroom uint64
		want           int
	}{
		{0, 128 * mib, 100},
		{100 * mib, 128 * mib, 100},
		{128 * mib, 128 * mib, 100},
		{256 * mib, 128 * mib, 50},
		{200 * mib, 128 * mib, 64},
		{512 * mib, 128 * mib, 25},
		{4096 * mib, 128 * mib, gcpace.MinPercent},
	} {
		if got := gcpace.Percent(tt.live, tt.headroom); got != tt.want {
			t.Errorf("Percent(%d MiB, %d MiB) = %d, want %d", tt.live/mib, tt.headroom/mib, got, tt.want)
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
