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

// TestClockSyncStart: a node's start sets its clock by the first
// measurement, warning when the clock is more than a second off, and fails
// when the measurement does: its offset would be unknown.
func TestClockSyncStart(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		measured time.Duration
		err      error
		want     string // in the error, or else in the log
	}{
		{"in step", 300 * time.Millisecond, nil, ""},
		{"5 s behind", 5 * time.Second, nil, "this server's clock differs from the database's"},
		{"unreadable", 0, errors.New("cannot read the clock of PostgreSQL"), "clock offset to the database's is unknown"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
			offset := clock.NewOffset(clock.NewFake(start))
			var logs bytes.Buffer
			c := &clockSync{clock: offset, max: maxClockOffset, log: slog.New(slog.NewTextHandler(&logs, nil))}
			err := c.start(context.Background(), func(context.Context) (time.Duration, error) { return tt.measured, tt.err })
			if tt.err != nil {
				if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.err.Error()) {
					t.Errorf("start: %v; want %q with the reading's error", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := offset.Get(); got != tt.measured {
				t.Errorf("offset %v, want %v", got, tt.measured)
			}
			warned := strings.Contains(logs.String(), "level=WARN")
			if tt.want == "" && warned || tt.want != "" && !strings.Contains(logs.String(), tt.want) {
				t.Errorf("log: %s; want a warning only when the clock is more than 1 s off", logs.String())
			}
		})
	}
}
