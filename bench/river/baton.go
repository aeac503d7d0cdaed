package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/baton-sqs/baton/internal/bench"
	"github.com/baton-sqs/baton/internal/cli"
)

// batonResult is one run of one Baton set-up, in messages per second.
type batonResult struct {
	Enqueued float64 // send-batch
	// Worked is receive-delete from the backlog the send-batch left, as
	// River's jobs worked; RanOut says the backlog ran out before the window
	// ended, so the rate is over a shorter window.
	Worked    float64
	RanOut    bool
	Lifecycle float64 // send, receive and delete, counted once deleted
	// The cluster's processor time per message, over the measured window
	// (0 if not measured).
	EnqueueCPU, WorkCPU, LifecycleCPU time.Duration
	// This process's processor time per message over the same window: the
	// Baton nodes' and the load's HTTP clients' together.
	EnqueueProcCPU, WorkProcCPU, LifecycleProcCPU time.Duration
	// The lifecycle's calls' latency (send, receive and delete alike),
	// median and 99th percentile.
	LifecycleP50, LifecycleP99 time.Duration
	// Counts of the lifecycle on PostgreSQL with --statements: the HTTP
	// calls here, the database's once the nodes have stopped (counts.go).
	Counts lifecycleCounts
}

// measureBaton starts nodes Baton servers on store (all on one database for
// a postgres:// store; embedded: one node with a temporary data directory),
// and runs bench's send-batch and lifecycle scenarios against them, the
// workers spread across the nodes.
func measureBaton(ctx context.Context, o options, store string, nodes int) (batonResult, error) {
	var endpoints []string
	for range nodes {
		ep, stop, err := startNode(ctx, o, store)
		if err != nil {
			return batonResult{}, err
		}
		defer stop()
		endpoints = append(endpoints, ep)
	}
	var clients []*bench.Client
	for _, ep := range endpoints {
		c, err := bench.NewClient(bench.ClientConfig{Endpoint: ep, Region: "us-east-1", Conns: o.workers})
		if err != nil {
			return batonResult{}, err
		}
		defer c.Close()
		clients = append(clients, c)
	}
	var res batonResult
	// The send-batch leaves its queue's messages for receive-delete to
	// work off, as River's jobs worked come from its enqueue's backlog.
	backlog := "river-side-by-side-backlog"
	for _, sc := range []struct {
		name, queue string
		keep        bool
		into        *float64
		cpu         *time.Duration
		proc        *time.Duration
	}{{bench.ScenarioSendBatch, backlog, true, &res.Enqueued, &res.EnqueueCPU, &res.EnqueueProcCPU},
		{bench.ScenarioReceiveDelete, backlog, false, &res.Worked, &res.WorkCPU, &res.WorkProcCPU},
		{bench.ScenarioLifecycle, "river-side-by-side-lifecycle", false, &res.Lifecycle, &res.LifecycleCPU, &res.LifecycleProcCPU}} {
		counted := o.statements && sc.name == bench.ScenarioLifecycle && storeKind(store) == "postgres"
		if counted {
			if err := resetCounts(ctx, o.statementsDB, store); err != nil {
				return res, err
			}
		}
		var meter, procMeter cpuMeter
		stopSampling := func() {}
		if counted {
			stopSampling = startSampling(ctx, store, sc.queue, &res.Counts.head)
			if o.waits {
				stopHead := stopSampling
				stopWaits := startWaitSampling(ctx, store, &res.Counts.waits)
				stopSampling = func() { stopWaits(); stopHead() }
			}
		}
		stopProfile, err := o.profileCPU(fmt.Sprintf("%s-x%d-%s", storeKind(store), nodes, sc.name))
		if err != nil {
			return res, err
		}
		r, err := bench.Run(ctx, bench.Config{
			Client: clients[0], Clients: clients, Scenario: sc.name, Target: "baton",
			Concurrency: o.workers, Duration: o.duration, Warmup: o.warmup, BodySize: o.bodySize,
			Queue: sc.queue, Keep: sc.keep,
			ProgressFunc: func(p bench.Progress) {
				if !p.Warmup {
					meter.read(o.cpu, int64(p.Messages))
					procMeter.read(processCPU, int64(p.Messages))
				}
			},
		})
		stopProfile()
		stopSampling()
		if err != nil {
			return res, fmt.Errorf("baton %s: %w", sc.name, err)
		}
		if r.ErrorCount > 0 {
			return res, fmt.Errorf("baton %s: %d errors: %v", sc.name, r.ErrorCount, r.Errors)
		}
		*sc.into, *sc.cpu, *sc.proc = r.MessagesPerSecond, meter.perMessage(), procMeter.perMessage()
		if sc.name == bench.ScenarioLifecycle {
			res.LifecycleP50, res.LifecycleP99 = r.Latency.P50, r.Latency.P99
		}
		if counted {
			// A receive that leased something is followed by one delete.
			recv, del := r.Actions["ReceiveMessage"].Count, r.Actions["DeleteMessageBatch"].Count
			res.Counts.receives, res.Counts.deleteCalls, res.Counts.windowMessages = recv, del, r.Messages
			if recv > del {
				res.Counts.receivesEmpty = recv - del
			}
		}
		if sc.name == bench.ScenarioReceiveDelete && r.Seconds < o.duration.Seconds() {
			res.RanOut = true
		}
	}
	return res, nil
}

// startNode starts one Baton in this process on 127.0.0.1, with a data
// directory of its own, and returns its endpoint and what stops it.
func startNode(ctx context.Context, o options, store string) (endpoint string, stop func(), err error) {
	dir, err := os.MkdirTemp("", "baton-river-bench-")
	if err != nil {
		return "", nil, err
	}
	cfg := cli.ServeConfig{
		Listen: "127.0.0.1:0", DataDir: dir, Store: store, Durability: "full",
		AccountID: "000000000000", Region: "us-east-1", LogLevel: "warn", Logs: o.logs,
	}
	endpoint, stop, err = cli.ServeInProcess(ctx, cfg)
	if err != nil {
		return "", nil, fmt.Errorf("baton serve: %w", err)
	}
	return endpoint, stop, nil
}

// processCPU returns the processor time this process has used so far,
// user and system.
func processCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// cpuMeter keeps the first and the last of readings of the cluster's
// processor time, each with the messages done by then.
type cpuMeter struct {
	mu          sync.Mutex
	n           int
	first, last struct {
		cpu  time.Duration
		msgs int64
	}
}

func (m *cpuMeter) read(cpu func() (time.Duration, error), msgs int64) {
	if cpu == nil {
		return
	}
	t, err := cpu()
	if err != nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.n == 0 {
		m.first.cpu, m.first.msgs = t, msgs
	}
	m.last.cpu, m.last.msgs = t, msgs
	m.n++
}

// perMessage is the processor time per message between the first reading
// and the last, or 0 without two readings apart.
func (m *cpuMeter) perMessage() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.n < 2 || m.last.msgs <= m.first.msgs {
		return 0
	}
	return (m.last.cpu - m.first.cpu) / time.Duration(m.last.msgs-m.first.msgs)
}

// profileCPU starts profiling this process's CPU into name.pprof in
// o.cpuProfiles, if set, and returns what stops it.
func (o options) profileCPU(name string) (stop func(), err error) {
	if o.cpuProfiles == "" {
		return func() {}, nil
	}
	f, err := os.Create(filepath.Join(o.cpuProfiles, name+".pprof"))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// storeKind names a store for a file name: embedded or postgres.
func storeKind(store string) string {
	if strings.HasPrefix(store, "postgres") {
		return "postgres"
	}
	return store
}
