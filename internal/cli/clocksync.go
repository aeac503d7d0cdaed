package cli

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/baton-sqs/baton/clock"
)

// Nodes sharing a database stamp every deadline and send time with their
// own clocks, so a node whose clock runs N seconds ahead of the others ends
// their leases N seconds early. Each node therefore measures its offset to
// the database's clock, at start and every clockSyncEvery, and reads its
// engine's time as its own clock plus that offset: every node keeps time
// by the database's clock. At start the measurement waits for the database
// as the node's start does, and a node that cannot make it does not start:
// its offset would be unknown. An offset past maxClockOffset is not a drift
// to correct but a broken clock: the node refuses to start, or, found
// later, answers ServiceUnavailable and fails /healthz (so the load
// balancer drains it) until it is back within.

const (
	maxClockOffset = 30 * time.Second
	// warnClockOffset is the offset past which a node's start warns that
	// its clock is not kept in sync.
	warnClockOffset = time.Second
	clockSyncEvery  = time.Minute
	// minClockStep is the least change of the measured offset that moves
	// the clock: smaller ones are the measurement's own noise (half a
	// round trip), and each step moves the engine's time.
	minClockStep = 20 * time.Millisecond
)

// clockSync keeps clock's offset at the database's clock, as measure
// reports it (the database's time minus this machine's).
type clockSync struct {
	clock   *clock.Offset
	measure func(context.Context) (time.Duration, error)
	max     time.Duration
	log     *slog.Logger

	mu      sync.Mutex
	synced  bool
	refused error // why the node refuses to serve, if it does
}

// start sets the clock by a first measurement, made by first, or fails:
// a node whose offset to the database's clock is unknown would stamp
// deadlines by its own clock, which may be any distance from the others'.
// first is to wait for the database as the node's start does
// (pgstore.Store.AwaitClockOffset). It returns the error or refusal the
// node does not start for.
func (c *clockSync) start(ctx context.Context, first func(context.Context) (time.Duration, error)) error {
	off, err := first(ctx)
	if err != nil {
		return fmt.Errorf("this server's clock offset to the database's is unknown, and Baton keeps the database's time: %w", err)
	}
	if off.Abs() > warnClockOffset && off.Abs() <= c.max {
		c.log.Warn("this server's clock differs from the database's: Baton keeps the database's time, but keep the clocks in sync (NTP)",
			"offset", off.Round(time.Millisecond).String())
	}
	return c.apply(off)
}

// sync measures the offset once and applies it, or refuses to serve past
// the bound; it returns the refusal. A failed measurement keeps the
// offset: the database's unreachability is the store's to report.
func (c *clockSync) sync(ctx context.Context) error {
	off, err := c.measure(ctx)
	if err != nil {
		c.log.Warn("could not read the database's clock; keeping the last offset", "offset", c.clock.Get(), "err", err)
		return nil
	}
	return c.apply(off)
}

// apply keeps time by the measured offset off, or refuses to serve past
// the bound; it returns the refusal.
func (c *clockSync) apply(off time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if off.Abs() > c.max {
		way := "ahead of"
		if off > 0 {
			way = "behind"
		}
		c.refused = fmt.Errorf("this server's clock is %v %s the database's, more than the %v Baton corrects: set its time right (NTP)",
			off.Abs().Round(time.Millisecond), way, c.max)
		c.log.Error("clock skew too large: refusing to serve", "offset", off.Round(time.Millisecond).String(), "max", c.max.String(), "err", c.refused)
		return c.refused
	}
	if c.refused != nil {
		c.log.Info("clock skew within bounds again: serving", "offset", off.Round(time.Millisecond).String())
		c.refused = nil
	}
	if !c.synced || (off-c.clock.Get()).Abs() >= minClockStep {
		c.log.Info("clock set by the database's", "offset", off.Round(time.Millisecond).String(), "was", c.clock.Get().Round(time.Millisecond).String())
		c.clock.Set(off)
		c.synced = true
	}
	return nil
}

// run syncs every interval until ctx ends.
func (c *clockSync) run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.sync(ctx)
		}
	}
}

// refusal is why the node refuses to serve, or nil
// (server.Config.Refusing).
func (c *clockSync) refusal() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.refused
}

// ready wraps a readiness check (server.Config.Ready): it fails while the
// node refuses to serve for its clock, else asks next, if any.
func (c *clockSync) ready(next func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := c.refusal(); err != nil {
			return err
		}
		if next != nil {
			return next(ctx)
		}
		return nil
	}
}
