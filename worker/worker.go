package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/consumer"
)

// Worker runs one mapping: it consumes a queue and delivers its messages
// to a target. Create it with New, start it with Run, stop it with Shutdown
// (or by cancelling Run's context).
type Worker struct {
	client consumer.Client
	cfg    Config
	clock  clock.Clock
	log    *slog.Logger

	// Set by Run before the consumer starts, read-only afterwards.
	q      queueInfo
	hc     *http.Client
	gather *gatherer // nil: each receive is delivered as it comes
	slots  chan struct{}
	tick   time.Duration
	bg     context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	ran       bool
	stopAsked bool
	cons      *consumer.Consumer
	// pausedUntil is when the wait a throttling target asked for ends,
	// pausedBy its answer (see untilServed).
	pausedUntil time.Time
	pausedBy    string

	callsMu sync.Mutex
	calls   map[*call]struct{}

	// procs are the commands whose process cmd.Wait has not reaped yet, by
	// pid (which is also their process group), each with a channel closed
	// once it has. procsMu also makes a command's start and its entry here
	// one step (see reapGroup); procsClosed refuses new commands once
	// killCommands has run.
	procsMu     sync.Mutex
	procs       map[int]chan struct{}
	procsClosed bool
	// hardKill is closed when a shutdown's deadline is so near that the
	// commands being stopped get SIGKILL without waiting out KillGrace.
	hardKill     chan struct{}
	hardKillOnce sync.Once

	// loops counts the worker's goroutines (keep-alive, batching windows,
	// deliveries of gathered batches); spawnMu and stopped keep new ones
	// from starting once Run waits for them.
	loops   sync.WaitGroup
	spawnMu sync.Mutex
	stopped bool

	// counts are what the stop line reports (see deliver).
	counts deliveryCounts
}

// New returns a worker for cfg. It reads nothing from the queue until
// Run; it fails only on invalid settings.
func New(client consumer.Client, cfg Config) (*Worker, error) {
	if client == nil {
		return nil, errors.New("worker: nil client")
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	w := &Worker{client: client, cfg: cfg, clock: cfg.Clock,
		log:   cfg.Logger.With("queue", queueName(cfg.QueueURL)),
		calls: map[*call]struct{}{}, procs: map[int]chan struct{}{}, hardKill: make(chan struct{})}
	if t, ok := cfg.Target.(*HTTPTarget); ok {
		// Keep a connection per delivery that may run at once.
		w.hc = t.client(cfg.MaxConcurrency)
	}
	return w, nil
}

// spawn runs f in a goroutine that Run waits for, unless Run is ending;
// it reports whether it did.
func (w *Worker) spawn(f func()) bool {
	w.spawnMu.Lock()
	defer w.spawnMu.Unlock()
	if w.stopped {
		return false
	}
	w.loops.Add(1)
	go func() {
		defer w.loops.Done()
		f()
	}()
	return true
}

// queueInfo is what the worker reads about its queue at start.
type queueInfo struct {
	url, name, arn, region string
	fifo                   bool
	// visibility is the lease length the worker asks for.
	visibility time.Duration
	// queueVisibility is the queue's VisibilityTimeout attribute.
	queueVisibility time.Duration
	// maxReceiveCount is the RedrivePolicy's; 0 without one.
	maxReceiveCount int
}

func readQueue(ctx context.Context, client consumer.Client, cfg Config) (queueInfo, error) {
	out, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       &cfg.QueueURL,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll},
	})
	if err != nil {
		return queueInfo{}, fmt.Errorf("worker: read the attributes of %s: %w", cfg.QueueURL, err)
	}
	a := out.Attributes
	q := queueInfo{url: cfg.QueueURL, name: queueName(cfg.QueueURL), arn: a["QueueArn"]}
	q.fifo = a["FifoQueue"] == "true" || strings.HasSuffix(q.name, ".fifo")
	var secs int
	if _, err := fmt.Sscanf(a["VisibilityTimeout"], "%d", &secs); err != nil {
		secs = 30
	}
	q.queueVisibility = time.Duration(secs) * time.Second
	q.visibility = q.queueVisibility
	if cfg.VisibilityTimeout > 0 {
		q.visibility = cfg.VisibilityTimeout.Truncate(time.Second)
	}
	q.visibility = max(q.visibility, time.Second)
	if rp := a["RedrivePolicy"]; rp != "" {
		n, _, err := consumer.ParseRedrivePolicy(rp)
		if err != nil {
			return queueInfo{}, fmt.Errorf("worker: queue %s: %w", cfg.QueueURL, err)
		}
		q.maxReceiveCount = n
	}
	q.region = cfg.Region
	if q.region == "" {
		q.region = regionOf(q.arn)
	}
	return q, nil
}

// Check reads the queue's attributes and checks cfg against them, as Run
// does at start: findings of consumer.SeverityError (a FIFO queue with a
// batch over 10 or a batching window) stop Run; the others explain the
// visibility timeout against the target timeout (Lambda's six-times rule),
// warn of a visibility timeout of hours (the time a crash would hide the
// messages held), of batches over one without ReportBatchItemFailures (one
// failing message fails the whole batch), or that ShutdownTimeout leaves no
// time to drain once the time to stop a command and release its leases is
// kept.
// It returns an error only if cfg is invalid or the queue cannot be read.
func Check(ctx context.Context, client consumer.Client, cfg Config) ([]consumer.Finding, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	q, err := readQueue(ctx, client, cfg)
	if err != nil {
		return nil, err
	}
	return check(cfg, q), nil
}

// check compares settings with the queue.
func check(cfg Config, q queueInfo) []consumer.Finding {
	var fs []consumer.Finding
	add := func(s consumer.Severity, name, format string, args ...any) {
		fs = append(fs, consumer.Finding{Severity: s, Check: name, Message: fmt.Sprintf(format, args...)})
	}
	if q.fifo {
		if cfg.BatchSize > MaxFIFOBatchSize {
			add(consumer.SeverityError, "batch-size", "batch size %d: a FIFO queue's batches hold at most %d messages", cfg.BatchSize, MaxFIFOBatchSize)
		}
		if cfg.BatchingWindow > 0 {
			add(consumer.SeverityError, "batching-window", "a FIFO queue takes no batching window (Lambda allows none: a batch is one receive, in group order)")
		}
	}
	vis, t := q.visibility, cfg.TargetTimeout
	timeout := fmt.Sprintf("the target timeout %v", t)
	if g, ok := cfg.Target.(*CommandTarget); ok {
		t += g.grace()
		timeout = fmt.Sprintf("the %v a command may take (its target timeout plus its kill grace)", t)
	}
	six := 6*t + cfg.BatchingWindow
	switch {
	case vis < t:
		add(consumer.SeverityWarning, "visibility",
			"leases last %v, less than %s: Lambda refuses such a mapping, because it never renews a lease and the messages would come back while the target still works on them. This worker renews every lease while its batch waits and while the target works, so it runs, but each batch then lives on renewals every %v; if they fail for longer than that (the queue unreachable), another consumer gets the messages while the target still works. Set the queue's VisibilityTimeout to at least %v (AWS recommends %v: six times the timeout plus the batching window)",
			vis, timeout, (vis / 3).Round(100*time.Millisecond), t.Round(time.Second), six.Round(time.Second))
	case vis < six:
		add(consumer.SeverityInfo, "visibility",
			"leases last %v; Lambda's rule asks for six times the target timeout plus the batching window, %v, because Lambda retries throttled batches without renewing their leases. This worker renews leases while batches wait, are throttled and run, so %v is safe while renewals get through; a throttled target is waited for at most %v before its batch is released",
			vis, six.Round(time.Second), vis, vis)
	}
	if vis >= time.Hour && vis > six {
		add(consumer.SeverityWarning, "visibility",
			"leases last %v: if the worker crashes or is killed without its shutdown, the messages it holds stay hidden that long. This worker renews every lease while its batch waits and while the target works, so the lease only has to outlast an interruption of renewals: %v (six times the timeout plus the batching window) is plenty",
			vis, six.Round(time.Second))
	}
	if cfg.BatchSize > 1 && !cfg.ReportBatchItemFailures && !perMessage(cfg.Target) {
		add(consumer.SeverityWarning, "partial-batch",
			"batches of up to %d messages without ReportBatchItemFailures (--report-batch-item-failures): one failing message fails its whole batch, and the good ones are delivered again with it, and dead-lettered with it once their receives are spent. Have the target answer {\"batchItemFailures\":[{\"itemIdentifier\":\"<messageId>\"}]} and turn it on, or deliver batches of 1",
			cfg.BatchSize)
	}
	if c, ok := cfg.Target.(*CommandTarget); ok {
		if need := shutdownReserve(cfg); cfg.ShutdownTimeout <= need {
			add(consumer.SeverityWarning, "shutdown",
				"the shutdown timeout %v does not cover stopping a command and releasing its leases, %v (twice the kill grace %v plus 1s, and %v for the releases): on a shutdown, running commands get no time to finish, and those that outlive SIGTERM may get SIGKILL before their kill grace ends. Give a shutdown timeout over %v, or a shorter kill grace",
				cfg.ShutdownTimeout, need, c.grace(), need-c.stopTime(), need.Round(time.Second))
		}
	}
	return fs
}

// ErrUnfinishedShutdown is what Run returns after a shutdown that did not
// finish what it held: releases that failed (their messages come back
// when their leases lapse, each having spent a receive), deletes that
// failed (their messages, handled, will be delivered again), or handlers
// still running when it ended (their messages were released while their
// delivery may still run: another consumer may receive them while the
// target still works on them), or a deadline that came before the
// shutdown's last phases had ended (the releases, the deletes, or outcomes
// being carried out, which may not have completed: consumer.Report.Err).
// The error says how many of each.
// Receives the shutdown had to cancel do not make it unfinished: what the
// worker held was handed back, and the stop line warns of what the server
// may have leased to them.
var ErrUnfinishedShutdown = errors.New("worker: the shutdown did not finish")

// Run reads the queue's attributes, checks the mapping against them (see
// Check; errors stop the start), logs the other findings, and delivers
// until ctx is cancelled or Shutdown is called. When ctx is cancelled it
// shuts down itself within Config.ShutdownTimeout. It returns nil after a
// shutdown that released and deleted what it held and left no handler
// running, an error wrapping ErrUnfinishedShutdown after one that did not
// (see it), or the start-up error.
func (w *Worker) Run(ctx context.Context) error {
	w.mu.Lock()
	if w.ran {
		w.mu.Unlock()
		return errors.New("worker: Run called twice")
	}
	w.ran = true
	w.mu.Unlock()

	q, err := readQueue(ctx, w.client, w.cfg)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped while starting
		}
		return err
	}
	w.q = q
	var refuse []string
	for _, f := range check(w.cfg, q) {
		switch f.Severity {
		case consumer.SeverityError:
			refuse = append(refuse, f.Check+": "+f.Message)
		case consumer.SeverityWarning:
			w.log.Warn(f.Message, "check", f.Check)
		default:
			w.log.Info(f.Message, "check", f.Check)
		}
	}
	if len(refuse) > 0 {
		return fmt.Errorf("worker: refusing to start: %s", strings.Join(refuse, "; "))
	}
	cons, err := w.newConsumer()
	if err != nil {
		return err
	}
	w.bg, w.cancel = context.WithCancel(context.WithoutCancel(ctx))
	defer func() {
		// No command outlives Run, whatever the consumer's shutdown left.
		w.killCommands()
		w.spawnMu.Lock()
		w.stopped = true
		w.spawnMu.Unlock()
		w.cancel()
		w.loops.Wait()
	}()
	w.mu.Lock()
	if w.stopAsked {
		w.mu.Unlock()
		return nil
	}
	w.cons = cons
	w.mu.Unlock()

	w.spawn(func() { w.keepAlive(w.bg) })
	w.log.Info("worker started", "target", w.cfg.Target.String(), "batch_size", w.cfg.BatchSize,
		"batching_window", w.cfg.BatchingWindow, "max_concurrency", w.cfg.MaxConcurrency,
		"target_timeout", w.cfg.TargetTimeout, "lease", w.q.visibility, "fifo", w.q.fifo)
	if _, ok := w.cfg.Target.(*CommandTarget); ok && os.Getpid() == 1 {
		w.log.Warn("the worker is PID 1 (a container without an init): it reaps what a command leaves in its process group, but no other orphan; run the container with an init (docker run --init, or tini as the entrypoint)")
	}

	type ran struct {
		r   consumer.Report
		err error
	}
	done := make(chan ran, 1)
	go func() { r, err := cons.Run(context.WithoutCancel(ctx)); done <- ran{r, err} }()
	var end ran
	select {
	case end = <-done:
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.cfg.ShutdownTimeout)
		w.Shutdown(sctx)
		cancel()
		end = <-done
	}
	err = end.err
	if errors.Is(err, consumer.ErrClosed) && w.stopping() {
		// A Shutdown came between storing the consumer and running it,
		// and closed it unstarted: a stop during start-up.
		return nil
	}
	if err != nil {
		return err
	}
	return unfinished(end.r)
}

// unfinished is the error a shutdown's report r calls for, if any.
func unfinished(r consumer.Report) error {
	var what []string
	if r.ReleaseFailed > 0 {
		what = append(what, fmt.Sprintf("%d release(s) failed (those messages come back when their leases lapse)", r.ReleaseFailed))
	}
	if r.DeleteFailed > 0 {
		what = append(what, fmt.Sprintf("%d delete(s) failed (those messages will be delivered again)", r.DeleteFailed))
	}
	if r.Stuck > 0 {
		what = append(what, fmt.Sprintf("%d handler(s) still ran (their messages were released while their delivery may still run: they may be handled twice)", r.Stuck))
	}
	if r.Err != nil {
		what = append(what, fmt.Sprintf("the deadline came first (%v): releases, deletes or outcomes under way when it came may not have completed", r.Err))
	}
	if len(what) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrUnfinishedShutdown, strings.Join(what, ", "))
}

// stopping reports whether Shutdown has been called.
func (w *Worker) stopping() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stopAsked
}

// newConsumer builds the consumer runtime underneath.
func (w *Worker) newConsumer() (*consumer.Consumer, error) {
	cfg := w.cfg
	batchSlots := 1
	if cfg.BatchingWindow > 0 {
		// Batches are gathered from several receives, each taking a slot:
		// enough for every running batch and one gathering.
		w.gather = newGatherer(w)
		batchSlots = (cfg.BatchSize + 9) / 10
	}
	slots := cfg.MaxConcurrency * batchSlots
	if w.gather != nil {
		slots += batchSlots
	}
	w.slots = make(chan struct{}, cfg.MaxConcurrency)
	for i := 0; i < cfg.MaxConcurrency; i++ {
		w.slots <- struct{}{}
	}
	// The worker keeps its messages' leases alive by reporting progress
	// for them every tick while it holds them (every such hold is bounded,
	// see the package doc); the consumer renews them while it does, and
	// stops (and cancels the batch as stalled) if the worker ever stops.
	w.tick = min(max(w.q.visibility/6, 100*time.Millisecond), 10*time.Second)
	grace := 5 * time.Second
	if c, ok := cfg.Target.(*CommandTarget); ok {
		grace = max(grace, c.stopTime())
	}
	opts := []consumer.Option{
		consumer.WithClock(w.clock),
		consumer.WithConcurrency(slots),
		consumer.WithReceivers(min(slots, 10)),
		consumer.WithAutoRenew(0),
		consumer.WithGrace(grace),
		consumer.WithShutdownTimeout(cfg.ShutdownTimeout),
		// Keep the end of a shutdown for stopping commands and releasing
		// leases, so that the drain gets the rest.
		consumer.WithShutdownReserve(shutdownReserve(cfg)),
		// The consumer's events worth a line go to the worker's log, and
		// with an observer it logs nothing elsewhere (not slog.Default).
		consumer.WithObserver(w.logEvents(cfg.Observer)),
	}
	if cfg.VisibilityTimeout > 0 {
		opts = append(opts, consumer.WithVisibilityTimeout(w.q.visibility))
	}
	if p, ok := retryPolicy(w.q); ok {
		opts = append(opts, consumer.WithRetryPolicy(p))
	}
	if !perMessage(cfg.Target) {
		opts = append(opts, consumer.WithBatchSize(min(cfg.BatchSize, 10)))
	}
	opts = append(opts, cfg.ConsumerOptions...)
	if perMessage(cfg.Target) {
		return consumer.New(w.client, cfg.QueueURL, consumer.HandlerFunc(w.handleOne), opts...)
	}
	return consumer.NewBatch(w.client, cfg.QueueURL, consumer.BatchHandlerFunc(w.handleBatch), opts...)
}

// Shutdown stops the worker under ctx's deadline (Config.ShutdownTimeout
// if ctx has none): batches still gathering are delivered at once, then
// the consumer's phased shutdown runs (stop receiving, drain, cancel what
// still runs — commands get SIGTERM, then SIGKILL after their grace —
// release every lease still held, flush the deletes). The drain ends early
// enough for commands to be stopped and the leases released (see
// Config.ShutdownTimeout); when the deadline is nearer than that, the
// commands being stopped get SIGKILL without their full grace, so that
// their leases can still be released. Before it returns, every command
// still running gets SIGKILL. It returns the consumer's report. Calling
// it before Run has started the consumer makes Run return nil without
// consuming.
func (w *Worker) Shutdown(ctx context.Context) consumer.Report {
	w.mu.Lock()
	w.stopAsked = true
	cons := w.cons
	w.mu.Unlock()
	if cons == nil {
		return consumer.Report{}
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, w.cfg.ShutdownTimeout)
		defer cancel()
	}
	w.logStopping(ctx)
	disarm := w.armHardKill(ctx)
	if w.gather != nil {
		w.gather.close()
	}
	r := cons.Shutdown(ctx)
	disarm()
	w.killCommands()
	w.logStopped(r)
	return r
}

// logStopped writes the stop line: what the worker delivered and what
// its shutdown did. An unfinished shutdown (see ErrUnfinishedShutdown)
// says so at level ERROR, with what becomes of those messages; one that
// had to cancel receives warns of what the server may have leased to
// them.
func (w *Worker) logStopped(r consumer.Report) {
	c := &w.counts
	attrs := []any{"batches_delivered", c.batches.Load(), "messages_delivered", c.messages.Load(),
		"messages_failed", c.failed.Load(), "released", r.Released, "release_failed", r.ReleaseFailed,
		"deletes_flushed", r.DeletesFlushed, "delete_failed", r.DeleteFailed, "cancelled", r.Cancelled, "stuck", r.Stuck,
		"receives_awaited", r.ReceivesAwaited, "receives_cancelled", r.ReceivesCancelled}
	if r.ReleaseDelay > 0 {
		attrs = append(attrs, "release_delay", r.ReleaseDelay)
	}
	if n := c.ignored.Load(); n > 0 {
		attrs = append(attrs, "ignored_item_failures", n)
	}
	if err := unfinished(r); err != nil {
		w.log.Error("worker stopped without finishing its shutdown", append(attrs, "unfinished", strings.TrimPrefix(err.Error(), ErrUnfinishedShutdown.Error()+": "))...)
		return
	}
	if r.ReceivesCancelled > 0 {
		w.log.Warn("worker stopped, its receives cut short: what it held was handed back, but receives in flight had not answered by the deadline and were cancelled; the server may have leased messages to them, which come back when their leases lapse, each having spent a receive (a long poll lasts up to 20 s: a shutdown timeout shorter than that plus the time kept for releases cannot always wait for it)", attrs...)
		return
	}
	w.log.Info("worker stopped", attrs...)
}

// logStopping says what a shutdown under ctx is about to wait for, and why.
func (w *Worker) logStopping(ctx context.Context) {
	dl, _ := ctx.Deadline()
	// The deadline is a context's, on the wall clock.
	drain := max(time.Until(dl)-shutdownReserve(w.cfg), 0).Round(100 * time.Millisecond)
	w.log.Info("worker stopping: the batches still gathering are delivered now; running deliveries may finish during the drain, then are cancelled; "+
		"the receives in flight are awaited (a long poll lasts at most 20s) so that the released messages are not received again; then every lease still held is released",
		"running_deliveries", w.counts.running.Load(), "drain", drain, "deadline_in", time.Until(dl).Round(100*time.Millisecond))
}

// armHardKill closes w.hardKill when the consumer's shutdown is about to
// end the grace of the handlers it cancelled (the release time before
// ctx's deadline, see consumer.ReleaseTime) less hardKillLead: a command
// still running then gets SIGKILL, and its batch returns and is released
// by its own result, not released while the command still works. It
// returns the function that stops the wait.
func (w *Worker) armHardKill(ctx context.Context) func() {
	dl, _ := ctx.Deadline()
	margin := consumer.ReleaseTime(shutdownReserve(w.cfg)) + hardKillLead
	hctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), dl.Add(-margin))
	go func() {
		<-hctx.Done()
		if errors.Is(hctx.Err(), context.DeadlineExceeded) {
			w.closeHardKill()
		}
	}()
	return cancel
}

// hardKillLead is how long before the consumer's grace ends a command
// being stopped gets SIGKILL: the time for it to die and its delivery to
// return.
const hardKillLead = 500 * time.Millisecond

func (w *Worker) closeHardKill() {
	w.hardKillOnce.Do(func() { close(w.hardKill) })
}

// killCommands sends SIGKILL to the process group of every command still
// running, waits (a second at most) for cmd.Wait to reap them, and
// refuses to start any command from then on.
func (w *Worker) killCommands() {
	w.closeHardKill()
	w.procsMu.Lock()
	w.procsClosed = true
	reaped := make([]chan struct{}, 0, len(w.procs))
	for pid, c := range w.procs {
		w.log.Warn("stopping: the command still runs: SIGKILL to its process group", "pid", pid)
		signalGroup(pid, sigKill)
		reaped = append(reaped, c)
	}
	w.procsMu.Unlock()
	if len(reaped) == 0 {
		return
	}
	t := w.clock.NewTimer(time.Second)
	defer t.Stop()
	for _, c := range reaped {
		select {
		case <-c:
		case <-t.C():
			w.log.Warn("stopping: a killed command has not exited after 1s")
			return
		}
	}
}

// queueName is the last path element of a queue URL.
func queueName(url string) string {
	url = strings.TrimRight(url, "/")
	return url[strings.LastIndexByte(url, '/')+1:]
}
