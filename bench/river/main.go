// Command river measures Baton's PostgreSQL store side by side with River,
// the Go job queue on PostgreSQL, on one throwaway PostgreSQL cluster and
// in one process, so that both meet the same machine at the same time.
//
// Each run measures, one after the other:
//   - River: jobs inserted per second (InsertMany of ten from --workers
//     goroutines), then jobs worked and completed per second from that
//     backlog (--workers workers, the fetch settings of River's own
//     benchmark: River's defaults cap 32 workers near 320 jobs/s), then
//     the lifecycle on a new database: --workers inserters each insert ten
//     and wait for River to report them completed, while --workers workers
//     work them;
//   - Baton with the embedded store, then with the PostgreSQL store on one,
//     two and three nodes sharing one database: messages sent per second
//     (SendMessageBatch of ten), then received and deleted per second from
//     the backlog that left (ReceiveMessage of ten, DeleteMessageBatch),
//     and the lifecycle (SendMessageBatch, ReceiveMessage of ten,
//     DeleteMessageBatch; a message counts once deleted), from --workers
//     connections over HTTP on 127.0.0.1.
//
// Like is compared with like: Baton's receive-delete with River's jobs
// worked, Baton's lifecycle with River's. Baton's figures include HTTP
// between client and server on both sides of every call, which River,
// a library in its caller's process, does not have.
//
// The cluster listens on a unix socket only, with PostgreSQL's durable
// defaults (fsync and synchronous commits on) unless --fsync=false, and is
// removed at the end. It is its own module so that Baton's go.mod does not
// carry River.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/baton-sqs/baton/internal/pgtest"
)

// options are the command's flags.
type options struct {
	runs              int
	duration, warmup  time.Duration
	workers, bodySize int
	nodes             []int
	fsync             bool
	statements        bool
	waits             bool   // sample pg_stat_activity in each counted lifecycle (waits.go)
	cpuProfiles       string // directory for the Baton measurements' CPU profiles
	pgSettings        []string
	pgLog             string
	logs              io.Writer
	// River's fetch settings: its defaults (100 ms, 1 s) bound a queue of
	// 32 workers to ~320 jobs/s; the flags default to its own benchmark's.
	riverFetchCooldown, riverFetchPoll time.Duration
	// riverOutstanding bounds River's lifecycle: jobs per worker inserted
	// and not yet worked.
	riverOutstanding int
	// cpu reads the cluster's processor time (pgtest.Cluster.CPUTime).
	cpu func() (time.Duration, error)
	// statementsDB reads and resets pg_stat_statements (--statements).
	statementsDB statements
}

func main() {
	var o options
	var nodes string
	flag.IntVar(&o.runs, "runs", 5, "runs, each measuring every system once")
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "measured window of each measurement")
	flag.DurationVar(&o.warmup, "warmup", time.Second, "load before each window, not counted")
	flag.IntVar(&o.workers, "workers", 32, "River workers and inserters; Baton connections")
	flag.IntVar(&o.bodySize, "body-size", 1024, "payload bytes per job or message")
	flag.StringVar(&nodes, "nodes", "1,2,3", "Baton nodes sharing the PostgreSQL database, comma-separated counts")
	flag.DurationVar(&o.riverFetchCooldown, "river-fetch-cooldown", 2*time.Millisecond, "River's FetchCooldown (its default: 100ms)")
	flag.DurationVar(&o.riverFetchPoll, "river-fetch-poll", 20*time.Millisecond, "River's FetchPollInterval (its default: 1s)")
	flag.IntVar(&o.riverOutstanding, "river-outstanding", 10, "River's lifecycle: jobs per worker inserted and not yet worked, at most (Baton's lifecycle: ten)")
	flag.BoolVar(&o.statements, "statements", false, "load pg_stat_statements and print each PostgreSQL measurement's top statements (a Baton one's: its lifecycle's), and the counts of each Baton lifecycle per message")
	flag.BoolVar(&o.waits, "waits", false, "with --statements: sample what each Baton lifecycle's database backends wait on every 10 ms (pg_stat_activity)")
	flag.Func("pg-setting", "a PostgreSQL setting name=value for the cluster (repeatable; needs --fsync)", func(v string) error {
		o.pgSettings = append(o.pgSettings, v)
		return nil
	})
	flag.StringVar(&o.cpuProfiles, "cpuprofile-dir", "", "write a CPU profile of this process (Baton's nodes and clients) for each Baton measurement into this directory")
	flag.StringVar(&o.pgLog, "pg-log", "", "write the cluster's server log to this file at the end")
	flag.BoolVar(&o.fsync, "fsync", true, "run PostgreSQL with fsync and synchronous commits (false: off, as the tests' clusters)")
	flag.Parse()
	o.logs = os.Stderr
	if err := o.parseNodes(nodes); err != nil {
		fmt.Fprintln(os.Stderr, "river bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := startAndRun(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "river bench:", err)
		os.Exit(1)
	}
}

// startAndRun starts the cluster, runs, and removes the cluster.
func startAndRun(ctx context.Context, o options, out io.Writer) error {
	cluster, err := startCluster(ctx, o)
	if err != nil {
		return err
	}
	defer cluster.Stop()
	if o.pgLog != "" {
		defer func() { os.WriteFile(o.pgLog, []byte(cluster.Log()), 0o644) }()
	}
	_, err = run(ctx, o, cluster, out)
	return err
}

func (o *options) parseNodes(s string) error {
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 8 {
			return fmt.Errorf("--nodes %q: want counts from 1 to 8", s)
		}
		o.nodes = append(o.nodes, n)
	}
	if o.waits && !o.statements {
		return errors.New("--waits needs --statements")
	}
	if o.runs < 1 || o.workers < 1 || o.duration <= 0 || o.warmup < 0 || o.bodySize < 1 || o.riverOutstanding < 1 {
		return errors.New("--runs, --workers, --duration, --body-size and --river-outstanding must be positive")
	}
	return nil
}

// runFigures is what one run measured.
type runFigures struct {
	river    riverResult
	embedded batonResult
	pg       map[int]batonResult // by node count
}

// run measures o.runs runs on cluster, printing each as it ends, and then
// a summary, and returns what each run measured.
func run(ctx context.Context, o options, cluster *pgtest.Cluster, out io.Writer) ([]runFigures, error) {
	o.cpu = cluster.CPUTime
	o.statementsDB = statements{url: cluster.URL("postgres")}
	fmt.Fprintf(out, "River v0.51.2 and Baton side by side: %d workers, %d-byte payloads, %s windows after %s warm-up, PostgreSQL fsync=%v, River fetch cooldown %s, poll %s\n",
		o.workers, o.bodySize, o.duration, o.warmup, o.fsync, o.riverFetchCooldown, o.riverFetchPoll)
	var all []runFigures
	for i := 1; i <= o.runs; i++ {
		f, err := oneRun(ctx, o, cluster, out)
		if err != nil {
			return all, fmt.Errorf("run %d: %w", i, err)
		}
		all = append(all, f)
		f.write(out, fmt.Sprintf("run %d", i), o.nodes)
	}
	summarize(out, all, o.nodes)
	return all, nil
}

// startCluster starts the throwaway cluster the flags describe.
func startCluster(ctx context.Context, o options) (*pgtest.Cluster, error) {
	// The flags' settings come last, so that they may override
	// --statements' (shared_preload_libraries=pg_stat_statements,auto_explain).
	var settings []string
	if o.statements {
		settings = append(settings, statementSettings...)
	}
	settings = append(settings, o.pgSettings...)
	if o.fsync {
		return pgtest.StartDurable(ctx, settings...)
	}
	if len(settings) > 0 {
		return nil, errors.New("--statements and --pg-setting need --fsync")
	}
	return pgtest.Start(ctx)
}

// oneRun measures every system once, each PostgreSQL one on a new database.
func oneRun(ctx context.Context, o options, cluster *pgtest.Cluster, out io.Writer) (runFigures, error) {
	f := runFigures{pg: map[int]batonResult{}}
	_, url, err := cluster.CreateDatabase(ctx)
	if err != nil {
		return f, err
	}
	_, lifecycleURL, err := cluster.CreateDatabase(ctx)
	if err != nil {
		return f, err
	}
	st := statements{url: cluster.URL("postgres")}
	if err := o.profiled(ctx, out, st, "river", func() error {
		f.river, err = measureRiver(ctx, o, url, lifecycleURL)
		return err
	}); err != nil {
		return f, err
	}
	if f.embedded, err = measureBaton(ctx, o, "embedded", 1); err != nil {
		return f, err
	}
	for _, n := range o.nodes {
		_, url, err := cluster.CreateDatabase(ctx)
		if err != nil {
			return f, err
		}
		label := fmt.Sprintf("baton postgres x%d", n)
		if err := o.profiled(ctx, out, st, label, func() error {
			var err error
			f.pg[n], err = measureBaton(ctx, o, url, n)
			return err
		}); err != nil {
			return f, err
		}
		if o.statements {
			counts, err := readCounts(ctx, o.statementsDB, url)
			if err != nil {
				return f, err
			}
			if err := indexReads(ctx, out, url, label+" lifecycle"); err != nil {
				return f, err
			}
			c := f.pg[n].Counts
			counts.receives, counts.receivesEmpty, counts.deleteCalls, counts.windowMessages = c.receives, c.receivesEmpty, c.deleteCalls, c.windowMessages
			counts.head, counts.waits = c.head, c.waits
			fmt.Fprintf(out, "    of them the head sampler's: %d entries read of baton_messages_by_state\n", c.head.entriesRead())
			counts.write(out, label)
		}
	}
	return f, nil
}

// profiled runs measure, and with --statements prints its top statements.
func (o options) profiled(ctx context.Context, out io.Writer, st statements, label string, measure func() error) error {
	if !o.statements {
		return measure()
	}
	if err := st.reset(ctx); err != nil {
		return err
	}
	if err := measure(); err != nil {
		return err
	}
	return st.top(ctx, out, label, 10)
}

// write prints one run's figures and its ratios. Like is set beside like:
// Baton's receive-delete of a backlog beside River's jobs worked off one,
// Baton's lifecycle beside River's insert-and-work.
func (f runFigures) write(w io.Writer, label string, nodes []int) {
	drained := ""
	if f.river.Drained {
		drained = " (backlog ran out: shorter window)"
	}
	fmt.Fprintf(w, "%s: river enqueue %.0f/s (%s), worked %.0f/s (%s)%s, lifecycle %.0f/s (%s)\n",
		label, f.river.Enqueued, cpuPerMsg(f.river.EnqueueCPU, f.river.EnqueueProcCPU), f.river.Worked, cpuPerMsg(f.river.WorkCPU, f.river.WorkProcCPU), drained,
		f.river.Lifecycle, cpuPerMsg(f.river.LifecycleCPU, f.river.LifecycleProcCPU))
	fmt.Fprintf(w, "  baton embedded: enqueue %.0f/s, receive-delete %.0f/s%s, lifecycle %.0f/s\n",
		f.embedded.Enqueued, f.embedded.Worked, ranOut(f.embedded), f.embedded.Lifecycle)
	one, hasOne := f.pg[1]
	for _, n := range nodes {
		p := f.pg[n]
		fmt.Fprintf(w, "  baton postgres %d node(s): enqueue %.0f/s (%s; %.2f of river), receive-delete %.0f/s%s (%s; %.2f of river worked), lifecycle %.0f/s (%s; %.2f of river lifecycle, %.2f of river worked, %.2f of embedded",
			n, p.Enqueued, cpuPerMsg(p.EnqueueCPU, p.EnqueueProcCPU), ratio(p.Enqueued, f.river.Enqueued),
			p.Worked, ranOut(p), cpuPerMsg(p.WorkCPU, p.WorkProcCPU), ratio(p.Worked, f.river.Worked),
			p.Lifecycle, cpuPerMsg(p.LifecycleCPU, p.LifecycleProcCPU), ratio(p.Lifecycle, f.river.Lifecycle),
			ratio(p.Lifecycle, f.river.Worked), ratio(p.Lifecycle, f.embedded.Lifecycle))
		if hasOne && n != 1 {
			fmt.Fprintf(w, ", %.2f of 1 node", ratio(p.Lifecycle, one.Lifecycle))
		}
		fmt.Fprintf(w, "; calls p50 %s, p99 %s)\n", p.LifecycleP50.Round(10*time.Microsecond), p.LifecycleP99.Round(10*time.Microsecond))
	}
}

func ranOut(r batonResult) string {
	if r.RanOut {
		return " (backlog ran out: shorter window)"
	}
	return ""
}

// summarize prints the median and range of each figure over the runs.
func summarize(w io.Writer, all []runFigures, nodes []int) {
	fmt.Fprintf(w, "summary over %d runs (median, min-max):\n", len(all))
	line := func(name string, get func(runFigures) float64, format string) {
		vals := make([]float64, len(all))
		for i, f := range all {
			vals[i] = get(f)
		}
		slices.Sort(vals)
		fmt.Fprintf(w, "  %-48s "+format+"  ("+format+"-"+format+")\n", name, vals[len(vals)/2], vals[0], vals[len(vals)-1])
	}
	us := func(get func(runFigures) time.Duration) func(runFigures) float64 {
		return func(f runFigures) float64 { return micros(get(f)) }
	}
	line("river enqueue jobs/s", func(f runFigures) float64 { return f.river.Enqueued }, "%.0f")
	line("river worked jobs/s", func(f runFigures) float64 { return f.river.Worked }, "%.0f")
	line("river lifecycle jobs/s", func(f runFigures) float64 { return f.river.Lifecycle }, "%.0f")
	line("  river PostgreSQL CPU µs per job enqueued", us(func(f runFigures) time.Duration { return f.river.EnqueueCPU }), "%.0f")
	line("  river PostgreSQL CPU µs per job worked", us(func(f runFigures) time.Duration { return f.river.WorkCPU }), "%.0f")
	line("  river PostgreSQL CPU µs per job lifecycle", us(func(f runFigures) time.Duration { return f.river.LifecycleCPU }), "%.0f")
	line("  river client CPU µs per job lifecycle", us(func(f runFigures) time.Duration { return f.river.LifecycleProcCPU }), "%.0f")
	line("baton embedded enqueue msgs/s", func(f runFigures) float64 { return f.embedded.Enqueued }, "%.0f")
	line("baton embedded receive-delete msgs/s", func(f runFigures) float64 { return f.embedded.Worked }, "%.0f")
	line("baton embedded lifecycle msgs/s", func(f runFigures) float64 { return f.embedded.Lifecycle }, "%.0f")
	line("  embedded Baton+client CPU µs per msg lifecycle", us(func(f runFigures) time.Duration { return f.embedded.LifecycleProcCPU }), "%.0f")
	for _, n := range nodes {
		pg := func(f runFigures) batonResult { return f.pg[n] }
		line(fmt.Sprintf("baton postgres x%d enqueue msgs/s", n), func(f runFigures) float64 { return pg(f).Enqueued }, "%.0f")
		line(fmt.Sprintf("baton postgres x%d receive-delete msgs/s", n), func(f runFigures) float64 { return pg(f).Worked }, "%.0f")
		line(fmt.Sprintf("baton postgres x%d lifecycle msgs/s", n), func(f runFigures) float64 { return pg(f).Lifecycle }, "%.0f")
		line(fmt.Sprintf("  x%d PostgreSQL CPU µs per msg enqueued", n), us(func(f runFigures) time.Duration { return pg(f).EnqueueCPU }), "%.0f")
		line(fmt.Sprintf("  x%d PostgreSQL CPU µs per msg receive-delete", n), us(func(f runFigures) time.Duration { return pg(f).WorkCPU }), "%.0f")
		line(fmt.Sprintf("  x%d PostgreSQL CPU µs per msg lifecycle", n), us(func(f runFigures) time.Duration { return pg(f).LifecycleCPU }), "%.0f")
		line(fmt.Sprintf("  x%d Baton+client CPU µs per msg lifecycle", n), us(func(f runFigures) time.Duration { return pg(f).LifecycleProcCPU }), "%.0f")
		line(fmt.Sprintf("  x%d lifecycle calls' latency p50 µs", n), us(func(f runFigures) time.Duration { return pg(f).LifecycleP50 }), "%.0f")
		line(fmt.Sprintf("  x%d lifecycle calls' latency p99 µs", n), us(func(f runFigures) time.Duration { return pg(f).LifecycleP99 }), "%.0f")
		line(fmt.Sprintf("  x%d enqueue / river enqueue", n), func(f runFigures) float64 { return ratio(pg(f).Enqueued, f.river.Enqueued) }, "%.2f")
		line(fmt.Sprintf("  x%d receive-delete / river worked", n), func(f runFigures) float64 { return ratio(pg(f).Worked, f.river.Worked) }, "%.2f")
		line(fmt.Sprintf("  x%d lifecycle / river lifecycle", n), func(f runFigures) float64 { return ratio(pg(f).Lifecycle, f.river.Lifecycle) }, "%.2f")
		line(fmt.Sprintf("  x%d lifecycle / river worked", n), func(f runFigures) float64 { return ratio(pg(f).Lifecycle, f.river.Worked) }, "%.2f")
		line(fmt.Sprintf("  x%d lifecycle / embedded lifecycle", n), func(f runFigures) float64 { return ratio(pg(f).Lifecycle, f.embedded.Lifecycle) }, "%.2f")
		if n != 1 && slices.Contains(nodes, 1) {
			line(fmt.Sprintf("  x%d lifecycle / x1 lifecycle", n), func(f runFigures) float64 { return ratio(pg(f).Lifecycle, f.pg[1].Lifecycle) }, "%.2f")
		}
	}
}

// cpuPerMsg says the PostgreSQL and this process's CPU time per message.
func cpuPerMsg(pg, proc time.Duration) string {
	if pg <= 0 {
		return "CPU not measured"
	}
	return fmt.Sprintf("CPU µs/msg: PostgreSQL %.0f, this process %.0f", micros(pg), micros(proc))
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
