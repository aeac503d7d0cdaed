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
	"github.com/riverqueue/river/rivermigrate"
)

// benchArgs is the job River's side inserts and works: a 1 KiB (--body-size)
// payload, as Baton's messages carry.
type benchArgs struct {
	Payload string `json:"payload"`
}

// Kind names the job kind in River's table.
func (benchArgs) Kind() string { return "baton_bench" }

// benchWorker completes every job at once: what is measured is the queue.
// It counts the jobs it worked, to see the backlog run out without
// querying the table meanwhile.
type benchWorker struct {
	river.WorkerDefaults[benchArgs]
	worked *atomic.Int64
	done   func() // if set, called for each job worked
}

func (w benchWorker) Work(context.Context, *river.Job[benchArgs]) error {
	w.worked.Add(1)
	if w.done != nil {
		w.done()
	}
	return nil
}

// riverResult is one run of River's side.
type riverResult struct {
	// Jobs per second: inserted; worked off the inserted backlog; and
	// inserted and worked together (Lifecycle: each inserter inserts ten
	// and waits for them to be completed before the next ten, as each of
	// Baton's lifecycle workers sends ten, receives and deletes).
	Enqueued, Worked, Lifecycle float64
	// Drained says the backlog ran out before the work window ended, so
	// the work rate is over a shorter window.
	Drained bool
	// The cluster's processor time per job, over the measured windows
	// (0 if not measured).
	EnqueueCPU, WorkCPU, LifecycleCPU time.Duration
	// This process's processor time per job over the same windows: River's
	// client and the load's goroutines.
	EnqueueProcCPU, WorkProcCPU, LifecycleProcCPU time.Duration
}

// measureRiver migrates the database at url, inserts jobs in batches of ten
// from o.workers goroutines for o.warmup+o.duration (the enqueue rate is
// over the last o.duration), then works that backlog with o.workers workers
// and measures the jobs completed per second over o.duration after
// o.warmup, from the committed rows of River's table. It then measures the
// lifecycle on the database at lifecycleURL, which has no backlog.
func measureRiver(ctx context.Context, o options, url, lifecycleURL string) (riverResult, error) {
	logger := slog.New(slog.NewTextHandler(o.logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var res riverResult
	err := withRiver(ctx, o, url, func(pool *pgxpool.Pool, driver *riverpgxv5.Driver) error {
		var total int64
		var err error
		res.Enqueued, res.EnqueueCPU, res.EnqueueProcCPU, total, err = riverEnqueue(ctx, o, driver, logger)
		if err != nil {
			return err
		}
		res.Worked, res.WorkCPU, res.WorkProcCPU, res.Drained, err = riverWork(ctx, o, pool, driver, logger, total)
		return err
	})
	if err != nil {
		return res, err
	}
	err = withRiver(ctx, o, lifecycleURL, func(pool *pgxpool.Pool, driver *riverpgxv5.Driver) error {
		var err error
		res.Lifecycle, res.LifecycleCPU, res.LifecycleProcCPU, err = riverLifecycle(ctx, o, pool, driver, logger)
		return err
	})
	return res, err
}

// withRiver opens a pool on the database at url, migrates it for River and
// calls f.
func withRiver(ctx context.Context, o options, url string, f func(*pgxpool.Pool, *riverpgxv5.Driver) error) error {
	pool, err := pgxpool.New(ctx, url+"&pool_max_conns="+fmt.Sprint(o.workers+8))
	if err != nil {
		return err
	}
	defer pool.Close()
	driver := riverpgxv5.New(pool)
	migrator, err := rivermigrate.New(driver, nil)
	if err != nil {
		return err
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("river: migrate: %w", err)
	}
	return f(pool, driver)
}

// riverEnqueue inserts batches of ten from an insert-only client, and
// returns the rate and the jobs inserted in all.
func riverEnqueue(ctx context.Context, o options, driver *riverpgxv5.Driver, logger *slog.Logger) (rate float64, cpu, proc time.Duration, total int64, err error) {
	client, err := river.NewClient(driver, &river.Config{Logger: logger})
	if err != nil {
		return 0, 0, 0, 0, err
	}
	batch := make([]river.InsertManyParams, 10)
	for i := range batch {
		batch[i] = river.InsertManyParams{Args: benchArgs{Payload: strings.Repeat("x", o.bodySize)}}
	}
	start := time.Now()
	measureFrom, end := start.Add(o.warmup), start.Add(o.warmup+o.duration)
	var counted, all atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	var meter, procMeter cpuMeter
	wg.Go(func() {
		sleep(ctx, time.Until(measureFrom))
		meter.read(o.cpu, all.Load())
		procMeter.read(processCPU, all.Load())
		sleep(ctx, time.Until(end))
		meter.read(o.cpu, all.Load())
		procMeter.read(processCPU, all.Load())
	})
	for range o.workers {
		wg.Go(func() {
			for time.Now().Before(end) {
				if _, err := client.InsertMany(ctx, batch); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				all.Add(int64(len(batch)))
				if time.Now().After(measureFrom) {
					counted.Add(int64(len(batch)))
				}
			}
		})
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return 0, 0, 0, 0, fmt.Errorf("river: insert: %w", err)
	}
	return float64(counted.Load()) / o.duration.Seconds(), meter.perMessage(), procMeter.perMessage(), all.Load(), nil
}

// riverWork starts a client with o.workers workers on the backlog and
// counts completed jobs in the table at the window's edges; total is the
// backlog.
func riverWork(ctx context.Context, o options, pool *pgxpool.Pool, driver *riverpgxv5.Driver, logger *slog.Logger, total int64) (rate float64, cpu, proc time.Duration, drained bool, err error) {
	var worked atomic.Int64
	_, stop, err := startWorking(ctx, o, driver, logger, benchWorker{worked: &worked})
	if err != nil {
		return 0, 0, 0, false, err
	}
	defer stop()
	sleep(ctx, o.warmup)
	var meter, procMeter cpuMeter
	c0, t0, err := riverCompleted(ctx, pool)
	if err != nil {
		return 0, 0, 0, false, err
	}
	meter.read(o.cpu, c0)
	procMeter.read(processCPU, c0)
	if worked.Load() >= total {
		return 0, 0, 0, true, fmt.Errorf("river: the backlog ran out during the warm-up: insert for longer")
	}
	end := t0.Add(o.duration)
	for time.Now().Before(end) && ctx.Err() == nil {
		sleep(ctx, 20*time.Millisecond)
		if worked.Load() >= total {
			drained = true
			sleep(ctx, 200*time.Millisecond) // the last completions' commit
			break
		}
	}
	c1, t1, err := riverCompleted(ctx, pool)
	if err != nil {
		return 0, 0, 0, false, err
	}
	meter.read(o.cpu, c1)
	procMeter.read(processCPU, c1)
	return float64(c1-c0) / t1.Sub(t0).Seconds(), meter.perMessage(), procMeter.perMessage(), drained, nil
}

// startWorking starts a client that works the default queue with o.workers
// of w, and returns it and what stops it.
func startWorking(ctx context.Context, o options, driver *riverpgxv5.Driver, logger *slog.Logger, w benchWorker) (client *river.Client[pgx.Tx], stop func(), err error) {
	workers := river.NewWorkers()
	river.AddWorker(workers, w)
	client, err = river.NewClient(driver, &river.Config{
		FetchCooldown:     o.riverFetchCooldown,
		FetchPollInterval: o.riverFetchPoll,
		Logger:            logger,
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: o.workers}},
		Workers:           workers,
	})
	if err != nil {
		return nil, nil, err
	}
	if err := client.Start(ctx); err != nil {
		return nil, nil, fmt.Errorf("river: start: %w", err)
	}
	return client, func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		client.Stop(stopCtx)
	}, nil
}

// riverCompleted returns the jobs River's table holds as completed, and
// when it counted them.
func riverCompleted(ctx context.Context, pool *pgxpool.Pool) (completed int64, at time.Time, err error) {
	err = pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE state = 'completed'`).Scan(&completed)
	return completed, time.Now(), err
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
