package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
)

// riverLifecycle measures River inserting and working at once, as Baton's
// lifecycle scenario sends, receives and deletes: o.workers inserters
// insert ten jobs at a time while a client with o.workers workers works
// them, with at most o.riverOutstanding jobs per worker inserted and not yet
// worked (Baton's lifecycle has at most ten per worker sent and not yet
// received). The rate is the jobs River's table holds as completed at the
// window's end less those at its start, over o.duration after o.warmup, as
// for the jobs worked off a backlog.
func riverLifecycle(ctx context.Context, o options, pool *pgxpool.Pool, driver *riverpgxv5.Driver, logger *slog.Logger) (rate float64, cpu, proc time.Duration, err error) {
	tokens := make(chan struct{}, o.workers*o.riverOutstanding)
	client, stop, err := startWorking(ctx, o, driver, logger, benchWorker{worked: new(atomic.Int64), done: func() { <-tokens }})
	if err != nil {
		return 0, 0, 0, err
	}
	defer stop()

	end := time.Now().Add(o.warmup + o.duration)
	batch := make([]river.InsertManyParams, 10)
	for i := range batch {
		batch[i] = river.InsertManyParams{Args: benchArgs{Payload: strings.Repeat("x", o.bodySize)}}
	}
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for range o.workers {
		wg.Go(func() {
			if err := insertWhileRoom(loadCtx, client, batch, tokens, end); err != nil {
				firstErr.CompareAndSwap(nil, err)
			}
		})
	}
	defer wg.Wait()
	defer stopLoad()

	sleep(ctx, o.warmup)
	var meter, procMeter cpuMeter
	c0, t0, err := riverCompleted(ctx, pool)
	if err != nil {
		return 0, 0, 0, err
	}
	meter.read(o.cpu, c0)
	procMeter.read(processCPU, c0)
	sleep(ctx, time.Until(t0.Add(o.duration)))
	c1, t1, err := riverCompleted(ctx, pool)
	if err != nil {
		return 0, 0, 0, err
	}
	meter.read(o.cpu, c1)
	procMeter.read(processCPU, c1)
	if err, _ := firstErr.Load().(error); err != nil {
		return 0, 0, 0, err
	}
	return float64(c1-c0) / t1.Sub(t0).Seconds(), meter.perMessage(), procMeter.perMessage(), nil
}

// insertWhileRoom inserts batch whenever tokens has room for its jobs (a
// worker takes one back per job worked), until end or ctx ends.
func insertWhileRoom(ctx context.Context, client *river.Client[pgx.Tx], batch []river.InsertManyParams, tokens chan struct{}, end time.Time) error {
	for time.Now().Before(end) {
		for range batch {
			select {
			case tokens <- struct{}{}:
			case <-ctx.Done():
				return nil
			}
		}
		if _, err := client.InsertMany(ctx, batch); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("river: insert: %w", err)
		}
	}
	return nil
}
