package cli

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/baton-sqs/baton/clock"
)

// TestClockSync: a node keeps time by the database's clock, as measured;
// one whose clock is more than 30 s off refuses to serve (its readiness
// fails, with a clear log line) until it is back within, and a failed
// measurement keeps the offset.
func TestClockSync(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	base := clock.NewFake(start)
	offset := clock.NewOffset(base)
	var logs bytes.Buffer
	var measured time.Duration
	var measureErr error
	c := &clockSync{clock: offset, max: maxClockOffset, log: slog.New(slog.NewTextHandler(&logs, nil)),
		measure: func(context.Context) (time.Duration, error) { return measured, measureErr }}
	ready := c.ready(nil)
	ctx := context.Background()

	// This node runs 5 s behind the database: its engine reads 5 s later.
	measured = 5 * time.Second
	if err := c.sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := offset.Now(), start.Add(5*time.Second); !got.Equal(want) {
		t.Errorf("engine time %v, want %v", got, want)
	}
	// Noise of a few milliseconds leaves the clock alone.
	measured = 5*time.Second + 3*time.Millisecond
	c.sync(ctx)
	if offset.Get() != 5*time.Second {
		t.Errorf("offset moved to %v by noise", offset.Get())
	}

	// 45 s ahead of the database: refused, loudly, and the clock kept.
	logs.Reset()
	measured = -45 * time.Second
	err := c.sync(ctx)
	if err == nil || !strings.Contains(err.Error(), "45s ahead of the database's") {
		t.Errorf("sync 45 s ahead: %v; want a refusal saying so", err)
	}
	if err := ready(ctx); err == nil {
		t.Error("a node 45 s ahead is ready")
	}
	if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "refusing to serve") {
		t.Errorf("log: %s; want an error line saying it refuses to serve", logs.String())
	}
	if offset.Get() != 5*time.Second {
		t.Errorf("offset %v after a refused measurement; want it kept", offset.Get())
	}

	// Back within the bound: served again, by the new offset.
	measured = -2 * time.Second
	if err := c.sync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ready(ctx); err != nil {
		t.Errorf("ready after the clock came back: %v", err)
	}
	if got, want := offset.Now(), start.Add(-2*time.Second); !got.Equal(want) {
		t.Errorf("engine time %v, want %v", got, want)
	}

	// The database unreachable: the offset stays.
	measureErr = errors.New("database unreachable")
	if err := c.sync(ctx); err != nil {
		t.Errorf("sync without a database: %v", err)
	}
	if offset.Get() != -2*time.Second {
		t.Errorf("offset %v after a failed measurement", offset.Get())
	}
}
