package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The scenarios a run can drive.
const (
	// ScenarioSend sends one message per request (SendMessage).
	ScenarioSend = "send"
	// ScenarioSendBatch sends ten messages per request (SendMessageBatch).
	ScenarioSendBatch = "send-batch"
	// ScenarioLifecycle has each worker send ten messages, receive up to ten
	// with a long poll and delete what it received, in a loop; its messages
	// are the ones deleted.
	ScenarioLifecycle = "lifecycle"
	// ScenarioLongPoll measures, at low load, the time from a send's
	// response to the response of a receiver that was already waiting.
	ScenarioLongPoll = "longpoll-latency"
	// ScenarioLeaseExpiry receives messages with a short visibility timeout,
	// does not delete them, and measures how late after the lease's deadline
	// each is handed out again.
	ScenarioLeaseExpiry = "lease-expiry"
	// ScenarioReceiveDelete receives up to ten with a short long poll and
	// deletes what it received, sending nothing: it works off the backlog
	// the queue already holds (a send-batch run with Keep fills one), as a
	// job queue's workers do, and its messages are the ones deleted. The
	// run ends when the queue has run out.
	ScenarioReceiveDelete = "receive-delete"
)

// Scenarios lists every scenario "all" runs, in its order.
var Scenarios = []string{ScenarioSend, ScenarioSendBatch, ScenarioLifecycle, ScenarioLongPoll, ScenarioLeaseExpiry,
	ScenarioPublish1, ScenarioPublish5, ScenarioPublish20}

// BacklogScenarios are the scenarios that need a queue filled beforehand,
// which "all" does not run.
var BacklogScenarios = []string{ScenarioReceiveDelete}

// HasCeiling reports whether the echo server can stand in for a queue in
// the scenario: the throughput scenarios. The latency ones measure waiting,
// which an echo does not do.
func HasCeiling(scenario string) bool {
	switch scenario {
	case ScenarioSend, ScenarioSendBatch, ScenarioLifecycle:
		return true
	}
	return false
}

// DefaultConcurrency is the number of workers a scenario runs unless told
// otherwise: enough connections to keep a small server busy for the
// throughput scenarios, a few waiting receivers (longpoll-latency) or
// queues (lease-expiry) for the latency ones.
func DefaultConcurrency(scenario string) int {
	switch scenario {
	case ScenarioLongPoll, ScenarioLeaseExpiry:
		return 4
	}
	return 32
}

// DefaultMaxRequests bounds the requests of a run whose Config sets none.
const DefaultMaxRequests = 50_000_000

// Config describes one run.
type Config struct {
	// Client sets the queues up and tears them down, and the workers send
	// through it unless Clients is set.
	Client *Client
	// Clients, if set, spread the workers across several endpoints of one
	// service, such as nodes sharing a database: worker i sends through
	// Clients[i mod len(Clients)].
	Clients  []*Client
	Scenario string
	// Target names the server in reports ("ceiling", "baton").
	Target string
	// Concurrency is the number of workers: connections for the throughput
	// scenarios, waiting receivers for longpoll-latency, queues for
	// lease-expiry. 0 means DefaultConcurrency.
	Concurrency int
	// Duration is how long the run is measured, after Warmup.
	Duration time.Duration
	// Warmup runs the load before measuring starts; what completes in it is
	// not counted (errors are).
	Warmup time.Duration
	// BodySize is the size of each message body in bytes (at least 1).
	BodySize int
	// Queue is the queue's name; it is created if it does not exist.
	// lease-expiry uses one queue per worker, named Queue-1, Queue-2, ….
	Queue string
	// Keep leaves the queues as they are after the run. Otherwise a queue
	// the run created is deleted and one that existed is purged.
	Keep bool
	// MaxRequests bounds the requests of the run (DefaultMaxRequests if 0).
	MaxRequests int64
	// VisibilityTimeout is lease-expiry's lease, in seconds (1 if 0).
	VisibilityTimeout int
	// ProgressFunc, if set, is called about once a second with the run's
	// progress, from a goroutine of its own.
	ProgressFunc func(Progress)
	// InProcess says the server runs in this process (an Echo, or a Baton
	// started here), so that the process's CPU time covers client and
	// server alike.
	InProcess bool
}

// Progress is a run's state as its live progress line shows it.
type Progress struct {
	Scenario string
	Target   string
	Elapsed  time.Duration
	// Warmup is true until measuring starts.
	Warmup bool
	// Requests, Messages and Errors count since the start, warm-up included.
	Requests, Messages, Errors uint64
	// RequestsPerSecond and MessagesPerSecond are the last second's rates.
	RequestsPerSecond, MessagesPerSecond float64
}

// Result is what a run measured. Counts, rates and latencies cover what
// completed within the measured window; Errors cover the whole run,
// warm-up included.
type Result struct {
	Scenario          string  `json:"scenario"`
	Target            string  `json:"target"`
	Endpoint          string  `json:"endpoint"`
	Concurrency       int     `json:"concurrency"`
	BodySize          int     `json:"body_size"`
	Seconds           float64 `json:"seconds"`
	Requests          uint64  `json:"requests"`
	Messages          uint64  `json:"messages"`
	RequestsPerSecond float64 `json:"requests_per_second"`
	MessagesPerSecond float64 `json:"messages_per_second"`
	// Latency is every request's, from sending it to reading the whole
	// response; Actions breaks it down by action.
	Latency Summary            `json:"latency"`
	Actions map[string]Summary `json:"actions"`
	// Delivery (longpoll-latency) runs from a send's response to the
	// waiting receiver's response; the server may answer the receiver
	// first, which counts as 0. EndToEnd runs from the send's request to
	// the receiver's response.
	Delivery *Summary `json:"delivery,omitempty"`
	EndToEnd *Summary `json:"end_to_end,omitempty"`
	// Lateness (lease-expiry) runs from a lease's deadline to the response
	// that handed the message out again. The deadline is taken as the start
	// of the receive that leased it plus the visibility timeout, the
	// earliest it can be, so the figure is an upper bound.
	Lateness *Summary `json:"redelivery_lateness,omitempty"`
	// Errors counts failed requests (and failed batch entries) by code.
	Errors     map[string]uint64 `json:"errors,omitempty"`
	ErrorCount uint64            `json:"error_count"`
	Notes      []string          `json:"notes,omitempty"`
	// ProcessCPU is the CPU time this process used in the window: the
	// client's, and the server's too when InProcess. Per request and per
	// message it hardly depends on what else the machine runs, unlike the
	// rates.
	ProcessCPU    time.Duration `json:"process_cpu_ns"`
	CPUPerRequest time.Duration `json:"process_cpu_per_request_ns"`
	CPUPerMessage time.Duration `json:"process_cpu_per_message_ns"`
	// CPUBusy is ProcessCPU as a fraction of the CPUs this process may use
	// (GOMAXPROCS, which Go sets from a container's CPU quota; the report's
	// "CPUs") over the window. With client and server in this process, a
	// server that leaves much of the machine idle while its client waits is
	// bound by something other than CPU: with a durable store, the disk's
	// flushes.
	CPUBusy   float64 `json:"process_cpu_busy"`
	InProcess bool    `json:"in_process"`

	hists *resultHists
}

// endGrace is how long after the end of a run its requests in flight may
// take before they are cancelled.
const endGrace = time.Second

// setupTimeout bounds the requests that open the queues before a run and
// delete or purge them after it.
const setupTimeout = 30 * time.Second

// errStopped ends a worker: the run's time, budget or context is over.
var errStopped = errors.New("run over")

// run is one Config in progress.
type run struct {
	cfg    Config
	client *Client
	queues []*queue
	// topicARN is the publish scenarios' topic (publish.go).
	topicARN string

	measureFrom, end time.Time
	budget           atomic.Int64

	// live counts everything since the start, for progress lines.
	liveRequests, liveMessages, liveErrors atomic.Uint64

	lp *longPoll

	// ranOut says a receive-delete worker found the queue empty.
	ranOut atomic.Bool

	// cpuFrom and cpuTo are the process's CPU time at the window's ends.
	cpuFrom, cpuTo time.Duration

	notesMu sync.Mutex
	notes   []string
}

type queue struct {
	name, url string
	created   bool
}

// Run drives cfg's scenario against cfg.Client and returns what it
// measured. It fails if the scenario is unknown or its queues cannot be
// set up; failures of the load's requests are counted, not returned.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	r := &run{cfg: cfg, client: cfg.Client}
	loop, err := r.loopFor(cfg.Scenario)
	if err != nil {
		return nil, err
	}
	r.budget.Store(cfg.MaxRequests)
	setup := r.client.NewCaller()
	defer r.teardown(setup)
	if err := r.setUp(ctx, setup); err != nil {
		return nil, err
	}
	return r.result(ctx, r.drive(ctx, loop)), ctx.Err()
}

// withDefaults checks cfg and fills in what it leaves unset.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Client == nil {
		return cfg, errors.New("bench: no client")
	}
	if cfg.Duration <= 0 {
		return cfg, errors.New("bench: the duration must be positive")
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency(cfg.Scenario)
	}
	cfg.BodySize = max(cfg.BodySize, 1)
	if cfg.MaxRequests <= 0 {
		cfg.MaxRequests = DefaultMaxRequests
	}
	if cfg.VisibilityTimeout <= 0 {
		cfg.VisibilityTimeout = 1
	}
	if cfg.Queue == "" {
		cfg.Queue = "baton-bench"
	}
	return cfg, nil
}

// loopFor is the loop each of the scenario's workers runs.
func (r *run) loopFor(scenario string) (func(context.Context, *worker), error) {
	switch scenario {
	case ScenarioSend:
		return r.sendLoop, nil
	case ScenarioSendBatch:
		return r.sendBatchLoop, nil
	case ScenarioLifecycle:
		return r.lifecycleLoop, nil
	case ScenarioLongPoll:
		r.lp = newLongPoll()
		return r.longPollReceiver, nil
	case ScenarioLeaseExpiry:
		return r.leaseExpiryLoop, nil
	case ScenarioReceiveDelete:
		return r.receiveDeleteLoop, nil
	case ScenarioPublish1, ScenarioPublish5, ScenarioPublish20:
		return r.publishLoop, nil // publish.go
	}
	return nil, fmt.Errorf("bench: unknown scenario %q (want one of %v)", scenario, Scenarios)
}

// queueNames are the queues the scenario works on: one, a topic's
// subscribers, or one per worker for lease-expiry.
func queueNames(cfg Config) []string {
	if cfg.Scenario == ScenarioLeaseExpiry {
		names := make([]string, 0, cfg.Concurrency)
		for i := 1; i <= cfg.Concurrency; i++ {
			names = append(names, fmt.Sprintf("%s-%d", cfg.Queue, i))
		}
		return names
	}
	if n := publishFanOut(cfg.Scenario); n > 0 {
		return publishQueues(cfg.Queue, n)
	}
	return []string{cfg.Queue}
}

// setUp opens the scenario's queues, and its topic if it publishes,
// within setupTimeout.
func (r *run) setUp(ctx context.Context, setup *Caller) error {
	ctx, cancel := context.WithTimeout(ctx, setupTimeout)
	defer cancel()
	for _, n := range queueNames(r.cfg) {
		q, err := openQueue(ctx, setup, n)
		if err != nil {
			return err
		}
		r.queues = append(r.queues, q)
	}
	if publishFanOut(r.cfg.Scenario) > 0 {
		return r.openTopic(ctx, setup)
	}
	return nil
}

// drive runs the workers through the warm-up and the window and returns
// them, with the long-poll sender if there is one, once all have stopped.
func (r *run) drive(ctx context.Context, loop func(context.Context, *worker)) []*worker {
	start := time.Now()
	r.measureFrom = start.Add(r.cfg.Warmup)
	r.end = r.measureFrom.Add(r.cfg.Duration)
	// Requests in flight at the end may finish (they are not counted): a
	// server should not see every run end in a burst of cancellations.
	// Long polls still waiting after endGrace are cancelled.
	runCtx, cancel := context.WithDeadline(ctx, r.end.Add(endGrace))
	defer cancel()

	workers := make([]*worker, r.cfg.Concurrency)
	var wg sync.WaitGroup
	for i := range workers {
		w := r.newWorker(i)
		workers[i] = w
		wg.Go(func() { loop(runCtx, w) })
	}
	if r.lp != nil {
		sender := r.newWorker(-1)
		workers = append(workers, sender)
		wg.Go(func() { r.longPollSender(runCtx, sender) })
	}
	stopProgress, stopCPU := r.progress(start), r.sampleCPU()
	wg.Wait()
	stopCPU()
	stopProgress()
	return workers
}

// sampleCPU reads the process's CPU time when the window opens and when it
// closes, or when the returned stop is called, if that is earlier.
func (r *run) sampleCPU() (stop func()) {
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTimer(time.Until(r.measureFrom))
		defer t.Stop()
		select {
		case <-t.C:
			r.cpuFrom = ProcessCPU()
		case <-done:
			return
		}
		t.Reset(time.Until(r.end))
		select {
		case <-t.C:
		case <-done:
		}
		r.cpuTo = ProcessCPU()
	}()
	return func() { close(done); <-finished }
}

// more reports whether a worker should send another request.
func (r *run) more(ctx context.Context) bool {
	return ctx.Err() == nil && time.Now().Before(r.end) && r.budget.Load() > 0
}

// inWindow reports whether something that completed at t is measured.
func (r *run) inWindow(t time.Time) bool {
	return !t.Before(r.measureFrom) && !t.After(r.end)
}

func (r *run) note(format string, args ...any) {
	r.notesMu.Lock()
	defer r.notesMu.Unlock()
	s := fmt.Sprintf(format, args...)
	for _, n := range r.notes {
		if n == s {
			return
		}
	}
	r.notes = append(r.notes, s)
}

// progress calls ProgressFunc once a second until the returned stop.
func (r *run) progress(start time.Time) (stop func()) {
	if r.cfg.ProgressFunc == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		last, lastReq, lastMsg := start, uint64(0), uint64(0)
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				req, msg := r.liveRequests.Load(), r.liveMessages.Load()
				secs := now.Sub(last).Seconds()
				r.cfg.ProgressFunc(Progress{
					Scenario: r.cfg.Scenario, Target: r.cfg.Target, Elapsed: now.Sub(start),
					Warmup: now.Before(r.measureFrom), Requests: req, Messages: msg, Errors: r.liveErrors.Load(),
					RequestsPerSecond: float64(req-lastReq) / secs, MessagesPerSecond: float64(msg-lastMsg) / secs,
				})
				last, lastReq, lastMsg = now, req, msg
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

func (r *run) result(ctx context.Context, workers []*worker) *Result {
	res := &Result{
		Scenario: r.cfg.Scenario, Target: r.cfg.Target, Endpoint: r.endpoints(),
		Concurrency: r.cfg.Concurrency, BodySize: r.cfg.BodySize,
		Errors: map[string]uint64{}, hists: newResultHists(),
		ProcessCPU: max(r.cpuTo-r.cpuFrom, 0), InProcess: r.cfg.InProcess,
	}
	window := r.end.Sub(r.measureFrom)
	if now := time.Now(); now.Before(r.end) {
		window = max(now.Sub(r.measureFrom), 0) // cut short
	}
	if r.budget.Load() <= 0 {
		// MaxRequests stopped the load: the window closes with the last
		// request it counted, not when the workers were done waiting
		// (longpoll-latency's receivers wait out the run, idle).
		var last time.Time
		for _, w := range workers {
			if w.last.After(last) {
				last = w.last
			}
		}
		window = min(window, max(last.Sub(r.measureFrom), 0))
	}
	if r.ranOut.Load() {
		// The backlog ran out: the window closes with the last message
		// done, not when the workers had waited out their empty receives.
		var last time.Time
		for _, w := range workers {
			if w.lastDelivered.After(last) {
				last = w.lastDelivered
			}
		}
		switch shorter := max(last.Sub(r.measureFrom), 0); {
		case last.IsZero():
			window = 0
			r.note("the queue had no messages to work off in the window: fill it first (such as with send-batch, keeping the queue)")
		case shorter < window:
			window = shorter
			r.note("the queue ran out of messages %.1fs into the window; the rates are over that time", window.Seconds())
		}
	}
	res.Seconds = window.Seconds()
	h := res.hists
	for _, w := range workers {
		res.Requests += w.requests
		res.Messages += w.messages
		h.all.Merge(&w.all)
		h.lateness.Merge(&w.lateness)
		for a, wh := range w.actions {
			h.action(a).Merge(wh)
		}
		for code, n := range w.errors {
			res.Errors[code] += n
		}
	}
	if r.lp != nil {
		r.lp.mu.Lock()
		h.delivery.Merge(&r.lp.hist)
		h.endToEnd.Merge(&r.lp.e2e)
		early := r.lp.early
		r.lp.mu.Unlock()
		if early > 0 {
			r.note("%d receive responses arrived before their send's response (counted as 0 in delivery)", early)
		}
	}
	if ctx.Err() != nil {
		r.note("the run was interrupted")
	}
	r.notesMu.Lock()
	res.Notes = append(res.Notes, r.notes...)
	r.notesMu.Unlock()
	res.summarize()
	return res
}

// resultHists are the distributions behind a Result's summaries, kept so
// that results can be merged.
type resultHists struct {
	all, delivery, endToEnd, lateness Histogram
	actions                           map[string]*Histogram
}

func newResultHists() *resultHists { return &resultHists{actions: map[string]*Histogram{}} }

func (h *resultHists) action(name string) *Histogram {
	a := h.actions[name]
	if a == nil {
		a = &Histogram{}
		h.actions[name] = a
	}
	return a
}

// summarize computes the rates, summaries and error count from the counts
// and distributions.
func (res *Result) summarize() {
	res.RequestsPerSecond, res.MessagesPerSecond = 0, 0
	if res.Seconds > 0 {
		res.RequestsPerSecond = float64(res.Requests) / res.Seconds
		res.MessagesPerSecond = float64(res.Messages) / res.Seconds
	}
	res.CPUPerRequest, res.CPUPerMessage = 0, 0
	if res.Requests > 0 {
		res.CPUPerRequest = res.ProcessCPU / time.Duration(res.Requests)
	}
	if res.Messages > 0 {
		res.CPUPerMessage = res.ProcessCPU / time.Duration(res.Messages)
	}
	res.CPUBusy = 0
	if res.Seconds > 0 {
		res.CPUBusy = res.ProcessCPU.Seconds() / (res.Seconds * float64(runtime.GOMAXPROCS(0)))
	}
	res.ErrorCount = 0
	for _, n := range res.Errors {
		res.ErrorCount += n
	}
	h := res.hists
	res.Latency = h.all.Summary()
	res.Actions = make(map[string]Summary, len(h.actions))
	for a, ah := range h.actions {
		res.Actions[a] = ah.Summary()
	}
	res.Delivery, res.EndToEnd, res.Lateness = nil, nil, nil
	switch res.Scenario {
	case ScenarioLongPoll:
		d, e := h.delivery.Summary(), h.endToEnd.Summary()
		res.Delivery, res.EndToEnd = &d, &e
	case ScenarioLeaseExpiry:
		l := h.lateness.Summary()
		res.Lateness = &l
	}
	slices.Sort(res.Notes)
	res.Notes = slices.Compact(res.Notes)
}

// MergeResults combines runs of one scenario against one target (rounds
// that alternated with another target's) into one result: counts, seconds
// and errors add up, and the latency distributions merge. It returns nil
// for no results.
func MergeResults(rs ...*Result) *Result {
	if len(rs) == 0 {
		return nil
	}
	first := rs[0]
	m := &Result{
		Scenario: first.Scenario, Target: first.Target, Endpoint: first.Endpoint,
		Concurrency: first.Concurrency, BodySize: first.BodySize, InProcess: first.InProcess,
		Errors: map[string]uint64{}, hists: newResultHists(),
	}
	for _, r := range rs {
		m.Seconds += r.Seconds
		m.ProcessCPU += r.ProcessCPU
		m.Requests += r.Requests
		m.Messages += r.Messages
		for code, n := range r.Errors {
			m.Errors[code] += n
		}
		m.Notes = append(m.Notes, r.Notes...)
		if h := r.hists; h != nil {
			m.hists.all.Merge(&h.all)
			m.hists.delivery.Merge(&h.delivery)
			m.hists.endToEnd.Merge(&h.endToEnd)
			m.hists.lateness.Merge(&h.lateness)
			for a, ah := range h.actions {
				m.hists.action(a).Merge(ah)
			}
		}
	}
	m.summarize()
	return m
}

// worker is one load loop's state: its caller and what it counted.
type worker struct {
	run     *run
	id      int
	call    *Caller
	all     Histogram
	actions map[string]*Histogram
	// requests and messages count what completed in the window; last is
	// when the last request counted completed.
	requests, messages uint64
	last               time.Time
	errors             map[string]uint64
	lateness           Histogram
	scratch            []byte
	handles            []string
	// lastDelivered is when the last message counted was done.
	lastDelivered time.Time
}

func (r *run) newWorker(id int) *worker {
	c := r.client
	if n := len(r.cfg.Clients); n > 0 && id >= 0 {
		c = r.cfg.Clients[id%n]
	}
	return &worker{run: r, id: id, call: c.NewCaller(), actions: map[string]*Histogram{}, errors: map[string]uint64{}}
}

// endpoints names the endpoints the workers send to, comma-separated.
func (r *run) endpoints() string {
	if len(r.cfg.Clients) == 0 {
		return r.client.Endpoint()
	}
	eps := make([]string, len(r.cfg.Clients))
	for i, c := range r.cfg.Clients {
		eps[i] = c.Endpoint()
	}
	return strings.Join(eps, ",")
}

// sent is one completed request.
type sent struct {
	body       []byte // valid until the worker's next request
	start, end time.Time
}

// do sends a request, timing and counting it. It returns errStopped, not
// counted, when the run is over, and any other failure after counting it.
func (w *worker) do(ctx context.Context, req *Request) (sent, error) {
	r := w.run
	if !r.more(ctx) || r.budget.Add(-1) < 0 {
		return sent{}, errStopped
	}
	// The latency is the round trip's, from when the signed request is
	// handed to the transport: signing it is the client's time.
	body, t0, err := w.call.do(ctx, req)
	t1 := time.Now()
	r.liveRequests.Add(1)
	if err != nil {
		if ctx.Err() != nil {
			return sent{}, errStopped
		}
		w.fail(errorCode(err))
		var ae *APIError
		if !errors.As(err, &ae) {
			// The server is unreachable or hung up: do not spin.
			sleep(ctx, 10*time.Millisecond)
		}
		return sent{}, err
	}
	if r.inWindow(t1) {
		w.requests++
		w.last = t1
		d := t1.Sub(t0)
		w.all.Record(d)
		h := w.actions[req.action]
		if h == nil {
			h = &Histogram{}
			w.actions[req.action] = h
		}
		h.Record(d)
	}
	return sent{body: body, start: t0, end: t1}, nil
}

// fail counts an error.
func (w *worker) fail(code string) {
	w.errors[code]++
	w.run.liveErrors.Add(1)
}

// delivered counts n messages completed at t.
func (w *worker) delivered(n int, t time.Time) {
	w.run.liveMessages.Add(uint64(n))
	if w.run.inWindow(t) {
		w.messages += uint64(n)
		w.lastDelivered = t
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// openQueue returns the queue named name, creating it if missing.
func openQueue(ctx context.Context, k *Caller, name string) (*queue, error) {
	var out struct{ QueueUrl string }
	body, err := k.Do(ctx, k.c.NewRequest("GetQueueUrl", mustJSON(map[string]string{"QueueName": name})))
	created := false
	var ae *APIError
	if errors.As(err, &ae) && (ae.Code == "AWS.SimpleQueueService.NonExistentQueue" || ae.Code == "QueueDoesNotExist") {
		body, err = k.Do(ctx, k.c.NewRequest("CreateQueue", mustJSON(map[string]string{"QueueName": name})))
		created = true
	}
	if err != nil {
		return nil, fmt.Errorf("queue %s: %w", name, err)
	}
	if err := json.Unmarshal(body, &out); err != nil || out.QueueUrl == "" {
		return nil, fmt.Errorf("queue %s: no QueueUrl in the response %.200q", name, body)
	}
	return &queue{name: name, url: out.QueueUrl, created: created}, nil
}

// teardown deletes the queues the run created and purges the others,
// unless Keep.
func (r *run) teardown(k *Caller) {
	if r.cfg.Keep {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	r.closeTopic(ctx, k)
	for _, q := range r.queues {
		action := "PurgeQueue"
		if q.created {
			action = "DeleteQueue"
		}
		if _, err := k.Do(ctx, k.c.NewRequest(action, mustJSON(map[string]string{"QueueUrl": q.url}))); err != nil {
			r.note("%s %s failed: %v", action, q.name, err)
		}
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only maps and structs of strings and ints are marshalled
	}
	return b
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
