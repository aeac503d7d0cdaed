package consumer

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

type runState int

const (
	stateNew runState = iota
	stateStarting
	stateStopRequested
	stateRunning
	stateStopping
	stateStopped
)

// Consumer receives messages from one queue and runs a handler on each,
// keeping every lease alive only while its handler shows life. Create it
// with New or NewBatch, start it with Run, stop it with Shutdown (or by
// cancelling Run's context).
type Consumer struct {
	client  Client
	url     string
	handler Handler
	batch   BatchHandler
	cfg     config
	clock   Clock
	info    QueueInfo

	sched *scheduler
	del   *deleter
	slots chan struct{}

	bg       context.Context
	bgCancel context.CancelFunc
	// recvStop ends the receive loops (no receive starts after it);
	// recvCancel cancels the receive calls in flight, which Shutdown does
	// only when it can wait for them no longer.
	recvStop   context.CancelFunc
	recvCancel context.CancelFunc
	receivers  sync.WaitGroup
	handlers   sync.WaitGroup
	loops      sync.WaitGroup

	mu        sync.Mutex
	state     runState
	stopAsked chan struct{}
	hurry     chan struct{} // closed when Shutdown releases and flushes
	done      chan struct{}
	report    Report
	// final bounds Shutdown's last phases (its deadline); set with
	// stateStopping.
	final context.Context
	// shadow: until when receives Shutdown cancelled may still lease
	// messages on the server (see stopShadow).
	shadow time.Time

	// parking: Shutdown waits for its receives, and the runtime's
	// releases wait in parked (see giveBack).
	parkMu  sync.Mutex
	parking bool
	parked  map[*Lease]parkedRelease

	inReceive      atomic.Int64
	lastSent       atomic.Int64 // when the latest receive was sent (Unix ns)
	recvCancelled  atomic.Int64
	reach          reach
	pauseMu        sync.Mutex
	pausedUntil    time.Time // no receive starts before (see PauseReceives)
	active         atomic.Int64
	deletes        atomic.Int64
	deleteFailures atomic.Int64
	lateArrivals   atomic.Int64
	shutReleased   atomic.Int64
	shutFailed     atomic.Int64

	// durations are the successful handlers' durations, which size
	// renewals (see leaseSpan).
	durations durations

	// holds are the FIFO groups whose head was released for a retry (see
	// holdGroups).
	holdMu sync.Mutex
	holds  map[string]groupHold
}

// groupHold is a FIFO group waiting for the retry of its head.
type groupHold struct {
	id    string    // the retried message
	until time.Time // when the hold lapses
}

// New returns a consumer that runs h on every message of the queue at
// queueURL. It reads nothing from the queue until Run. It fails only on
// invalid options.
func New(client Client, queueURL string, h Handler, opts ...Option) (*Consumer, error) {
	if h == nil {
		return nil, errors.New("consumer: nil handler")
	}
	c, err := newConsumer(client, queueURL, opts)
	if err != nil {
		return nil, err
	}
	c.handler = Chain(h, c.cfg.middleware...)
	return c, nil
}

// NewBatch returns a consumer that hands a BatchHandler up to WithBatchSize
// messages at a time, each batch taking one slot. Middleware does not apply
// to batch handlers.
func NewBatch(client Client, queueURL string, h BatchHandler, opts ...Option) (*Consumer, error) {
	if h == nil {
		return nil, errors.New("consumer: nil batch handler")
	}
	c, err := newConsumer(client, queueURL, opts)
	if err != nil {
		return nil, err
	}
	if len(c.cfg.middleware) > 0 {
		return nil, errors.New("consumer: middleware does not apply to a batch handler")
	}
	c.batch = h
	return c, nil
}

func newConsumer(client Client, url string, opts []Option) (*Consumer, error) {
	if client == nil {
		return nil, errors.New("consumer: nil client")
	}
	if url == "" {
		return nil, errors.New("consumer: empty queue URL")
	}
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.random == nil {
		cfg.random = rand.Float64
	}
	c := &Consumer{client: client, url: url, cfg: cfg, clock: cfg.clock,
		stopAsked: make(chan struct{}), hurry: make(chan struct{}), done: make(chan struct{}), bg: context.Background()}
	c.sched = newScheduler(c)
	c.del = newDeleter(c)
	return c, nil
}

// Report returns the report of the consumer's shutdown, once it is over
// (after Run or Shutdown has returned); before, the zero Report.
func (c *Consumer) Report() Report {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.report
}

// Queue returns what the consumer read about its queue at start (zero
// before Run has started).
func (c *Consumer) Queue() QueueInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.info
}

// Run reads the queue's attributes, checks the settings against them (see
// Doctor; a finding of SeverityError stops the start with a *DoctorError,
// and warnings are logged, see WithLogger), and consumes until ctx is
// cancelled or Shutdown is called. When ctx is cancelled Run shuts down
// itself, within WithShutdownTimeout. After a shutdown it returns the
// shutdown's report (also logged, and kept for Report) and a nil error; it
// returns ErrClosed if the consumer was run before, or the start-up error,
// with a zero Report.
func (c *Consumer) Run(ctx context.Context) (Report, error) {
	c.mu.Lock()
	if c.state != stateNew {
		c.mu.Unlock()
		return Report{}, ErrClosed
	}
	c.state = stateStarting
	c.mu.Unlock()
	if err := c.start(ctx); err != nil {
		c.mu.Lock()
		c.state = stateStopped
		close(c.done)
		c.mu.Unlock()
		if errors.Is(err, errStoppedEarly) {
			return c.Report(), nil
		}
		return Report{}, err
	}
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cfg.shutdownTimeout)
		c.Shutdown(sctx)
		cancel()
	case <-c.stopAsked:
	}
	<-c.done
	return c.Report(), nil
}

var errStoppedEarly = errors.New("consumer: shut down while starting")

func (c *Consumer) start(ctx context.Context) error {
	info, err := loadQueueInfo(ctx, c.client, c.url)
	if err != nil {
		return err
	}
	if c.cfg.deadLetterURL != "" {
		info.DeadLetterURL = c.cfg.deadLetterURL
	}
	c.cfg.settle(info.VisibilityTimeout)
	if c.cfg.doctor {
		fs := diagnose(&c.cfg, info, c.batch != nil)
		if hasErrors(fs) {
			return &DoctorError{Findings: fs}
		}
		c.reportFindings(fs)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.info = info
	if c.state == stateStopRequested {
		return errStoppedEarly
	}
	c.bg, c.bgCancel = context.WithCancel(context.WithoutCancel(ctx))
	c.del.ctx, c.del.cancel = context.WithCancel(c.bg)
	recvCtx, recvCancel := context.WithCancel(c.bg)
	c.recvCancel = recvCancel
	loopCtx, recvStop := context.WithCancel(recvCtx)
	c.recvStop = recvStop
	c.slots = make(chan struct{}, c.cfg.concurrency)
	for i := 0; i < c.cfg.concurrency; i++ {
		c.slots <- struct{}{}
	}
	c.loops.Add(2)
	go func() { defer c.loops.Done(); c.sched.run(c.bg) }()
	go func() { defer c.loops.Done(); c.del.run(c.bg) }()
	for i := 0; i < c.cfg.receivers; i++ {
		c.receivers.Add(1)
		go c.receiveLoop(loopCtx, recvCtx)
	}
	c.state = stateRunning
	return nil
}

// stopping reports whether Shutdown has begun.
func (c *Consumer) stopping() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state >= stateStopping
}

func (c *Consumer) observe(e Event) {
	l := c.logger()
	if c.cfg.observer == nil && l == nil {
		return
	}
	if e.Time.IsZero() {
		e.Time = c.clock.Now()
	}
	if e.Queue == "" {
		e.Queue = queueName(c.url)
	}
	if c.cfg.observer != nil {
		c.cfg.observer.Observe(e)
	}
	if l != nil {
		LogEvent(l, e)
	}
}

// acquire takes at least one free slot and up to max, or fails when ctx ends.
func (c *Consumer) acquire(ctx context.Context, max int) (int, bool) {
	if ctx.Err() != nil {
		return 0, false
	}
	select {
	case <-c.slots:
	case <-ctx.Done():
		return 0, false
	}
	n := 1
	for n < max {
		select {
		case <-c.slots:
			n++
		default:
			return n, true
		}
	}
	return n, true
}

func (c *Consumer) releaseSlots(n int) {
	for i := 0; i < n; i++ {
		c.slots <- struct{}{}
	}
}

// receiveLoop receives until loop ends. Each receive call runs under call,
// which outlives loop: a receive in flight when the stop is asked is let
// finish (see Shutdown).
func (c *Consumer) receiveLoop(loop, call context.Context) {
	defer c.receivers.Done()
	failures := 0
	for {
		want := maxBatch
		if c.batch != nil {
			want = 1
		}
		n, ok := c.acquire(loop, want)
		if !ok {
			return
		}
		if !c.awaitResume(loop) {
			c.releaseSlots(n)
			return
		}
		max := n
		if c.batch != nil {
			max = c.cfg.batchSize
		}
		if c.info.FIFO && c.holding() {
			max = 1
		}
		if loop.Err() != nil {
			c.releaseSlots(n)
			return
		}
		if err := c.receiveOnce(call, n, max); err != nil {
			failures++
			if !sleep(c.clock, min(100*time.Millisecond<<min(failures, 7), 10*time.Second), loop.Done()) {
				return
			}
			continue
		}
		failures = 0
	}
}

// PauseReceives starts no receive before until, on the runtime's clock: a
// handler whose downstream asked for time (a throttling service's
// Retry-After) holds back the messages not yet received, so that they do
// not come only to be given back, each time spending a receive of the
// queue's maxReceiveCount. Receives in flight go on, and the messages held
// are handled as usual. A pause only grows: an earlier until than the one
// in force changes nothing. Shutdown does not wait for it.
func (c *Consumer) PauseReceives(until time.Time) {
	c.pauseMu.Lock()
	defer c.pauseMu.Unlock()
	if until.After(c.pausedUntil) {
		c.pausedUntil = until
	}
}

// awaitResume waits until no pause holds the receives back; it reports
// false if loop ended first.
func (c *Consumer) awaitResume(loop context.Context) bool {
	for {
		c.pauseMu.Lock()
		left := c.pausedUntil.Sub(c.clock.Now())
		c.pauseMu.Unlock()
		if left <= 0 {
			return loop.Err() == nil
		}
		if !sleep(c.clock, left, loop.Done()) {
			return false
		}
	}
}

// receiveOnce receives up to max messages for n reserved slots and hands
// them out; it returns the slots it did not use.
func (c *Consumer) receiveOnce(ctx context.Context, n, max int) error {
	sent := c.clock.Now()
	msgs, err := c.receive(ctx, sent, max)
	if err != nil {
		c.releaseSlots(n)
		if ctx.Err() != nil {
			c.recvCancelled.Add(1)
			return nil
		}
		c.observe(Event{Kind: EventError, Op: "ReceiveMessage", Err: err})
		c.receiveFailed(err)
		return err
	}
	c.receiveAnswered(sent)
	ds := c.admit(msgs, sent)
	if len(ds) == 0 {
		c.releaseSlots(n)
		return nil
	}
	if c.info.FIFO {
		c.unholdHeads(ds)
	}
	c.handOut(ctx, n, ds, c.unitsOf(ds))
	return nil
}

// receive sends one ReceiveMessage for up to max messages, noting sent as
// the latest receive's send and counting it in flight until it answers.
func (c *Consumer) receive(ctx context.Context, sent time.Time, max int) ([]types.Message, error) {
	c.lastSent.Store(sent.UnixNano())
	c.inReceive.Add(1)
	out, err := c.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    &c.url,
		MaxNumberOfMessages:         int32(max),
		VisibilityTimeout:           int32(c.cfg.visibility / time.Second),
		WaitTimeSeconds:             int32(c.cfg.waitTime / time.Second),
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"},
	})
	c.inReceive.Add(-1)
	if err != nil {
		return nil, err
	}
	return out.Messages, nil
}

// admit reports the messages a receive sent at sent brought, and makes a
// delivery of each whose lease has not already ended; a lease that has is
// lost here.
func (c *Consumer) admit(msgs []types.Message, sent time.Time) []*Delivery {
	if len(msgs) == 0 {
		return nil
	}
	c.observe(Event{Kind: EventReceived, Count: len(msgs)})
	now := c.clock.Now()
	var ds []*Delivery
	for _, m := range msgs {
		d := newDelivery(c, m, sent)
		if !now.Before(d.lease.deadline) {
			// The receive took the whole lease (counted from its send):
			// acting on it now could race another consumer.
			c.loseLease(d.lease, fmt.Errorf("%w: the lease ended before the receive answered", ErrLeaseLost))
			continue
		}
		ds = append(ds, d)
	}
	return ds
}

// unitsOf splits a receive's deliveries into units of work, each run by a
// handler of its own: the whole receive for a batch handler, each FIFO
// group's run, or else each message.
func (c *Consumer) unitsOf(ds []*Delivery) [][]*Delivery {
	switch {
	case c.batch != nil:
		return [][]*Delivery{ds}
	case c.info.FIFO:
		return groupRuns(ds)
	}
	units := make([][]*Delivery, 0, len(ds))
	for _, d := range ds {
		units = append(units, []*Delivery{d})
	}
	return units
}

// handOut tracks the leases of ds and starts a handler per unit, on one of
// the n reserved slots each, and releases the slots left over. If the stop
// was asked (or ctx ended) before they arrived, it gives the messages back
// instead and releases all n slots.
func (c *Consumer) handOut(ctx context.Context, n int, ds []*Delivery, units [][]*Delivery) {
	leases := make([]*Lease, len(ds))
	for i, d := range ds {
		leases[i] = d.lease
	}
	c.mu.Lock()
	if c.state >= stateStopping || ctx.Err() != nil {
		// Arrived after stop was asked: given back, within Shutdown's
		// deadline, once no receive can take them again (see giveBack).
		final := c.final
		c.mu.Unlock()
		if final == nil {
			final = c.bg
		}
		for _, l := range leases {
			l.beginEnding()
		}
		c.lateArrivals.Add(int64(len(leases)))
		c.giveBack(final, leases, 0, ReasonShutdown)
		c.releaseSlots(n)
		return
	}
	c.sched.track(leases...)
	c.handlers.Add(len(units))
	c.mu.Unlock()
	if unused := n - len(units); unused > 0 {
		c.releaseSlots(unused)
	}
	for _, u := range units {
		done := c.unitDone()
		switch {
		case c.batch != nil:
			go c.runBatch(u, done)
		case c.info.FIFO:
			go c.runGroup(u, done)
		default:
			go c.runSingle(u[0], done)
		}
	}
}

// holdGroups notes the FIFO groups of leases released for a retry, on a
// queue with a redrive policy. Until the retried message is resolved,
// receives ask for one message at a time: the retried message heads its
// group, so it comes back alone, and the messages behind it are not
// received again with it (each receive spends one of their RedrivePolicy's
// maxReceiveCount) while it is retried. With batched receives, a message
// failing all its attempts would drag the rest of its group to the
// dead-letter queue unattempted. A hold ends when the message is resolved
// here, when a receive shows another message heading the group (it was
// resolved elsewhere or dead-lettered), or one lease length after the
// message is visible again.
func (c *Consumer) holdGroups(ls []*Lease, delays []time.Duration, whys []Reason) {
	if !c.info.FIFO || c.info.MaxReceiveCount == 0 {
		return // without a redrive policy, receives cost nothing
	}
	now := c.clock.Now()
	c.holdMu.Lock()
	defer c.holdMu.Unlock()
	for i, l := range ls {
		switch whys[i] {
		case ReasonError, ReasonRetry, ReasonNotReady, ReasonStalled, ReasonTimeout, ReasonHandler:
		default:
			continue
		}
		if c.holds == nil {
			c.holds = map[string]groupHold{}
		}
		c.holds[l.group] = groupHold{id: l.messageID, until: now.Add(delays[i] + c.cfg.visibility)}
	}
}

// skipDelay is how long the messages behind a FIFO message that is coming
// back (its group held, see holdGroups) stay hidden when they are given
// back: for the wait time, so that a receive asked before the hold, for
// several messages, has ended before they are visible again behind the
// retried message, which it would otherwise fetch them with. Without a
// redrive policy, and in a shutdown, they are given back at once.
func (c *Consumer) skipDelay() time.Duration {
	if c.info.MaxReceiveCount == 0 || c.stopping() {
		return 0
	}
	return c.cfg.waitTime
}

// unholdHeads ends the holds of groups that a receive shows headed by
// another message than the one held for.
func (c *Consumer) unholdHeads(ds []*Delivery) {
	c.holdMu.Lock()
	defer c.holdMu.Unlock()
	seen := map[string]bool{}
	for _, d := range ds {
		if seen[d.group] {
			continue
		}
		seen[d.group] = true
		if h, ok := c.holds[d.group]; ok && h.id != d.lease.messageID {
			delete(c.holds, d.group)
		}
	}
}

// unhold ends the hold a resolved message was the reason for.
func (c *Consumer) unhold(l *Lease) {
	c.holdMu.Lock()
	defer c.holdMu.Unlock()
	if h, ok := c.holds[l.group]; ok && h.id == l.messageID {
		delete(c.holds, l.group)
	}
}

// holding reports whether a FIFO group is held.
func (c *Consumer) holding() bool {
	now := c.clock.Now()
	c.holdMu.Lock()
	defer c.holdMu.Unlock()
	for g, h := range c.holds {
		if !now.Before(h.until) {
			delete(c.holds, g)
		}
	}
	return len(c.holds) > 0
}

// groupRuns splits a FIFO receive into its groups, each in receive order.
func groupRuns(ds []*Delivery) [][]*Delivery {
	var out [][]*Delivery
	at := map[string]int{}
	for _, d := range ds {
		i, ok := at[d.group]
		if !ok {
			i = len(out)
			at[d.group] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], d)
	}
	return out
}

// unitDone returns the function that tells Shutdown's drain (c.handlers)
// that a unit of work (a message, a FIFO group's run, a batch) is over. Its
// goroutine calls it on return; the scheduler calls it earlier when it
// abandons the unit's handler, which may never return. Only the first call
// counts.
func (c *Consumer) unitDone() func() {
	var once sync.Once
	return func() { once.Do(c.handlers.Done) }
}

func (c *Consumer) runSingle(d *Delivery, done func()) {
	defer done()
	defer c.releaseSlots(1)
	if c.snoozeEarly(d) {
		return
	}
	a := c.newAttempt([]*Delivery{d}, nil, false, done)
	err := c.invoke(a, []*Delivery{d}, func(ctx context.Context) []error {
		return []error{c.handler.Handle(ctx, d)}
	})[0]
	c.conclude(a, d, err, false)
}

// runGroup runs a FIFO group's messages from one receive in order. Before
// it starts a message, the previous one's delete (or dead-lettering) must be
// confirmed: were it to fail, that message would come back after its
// successor ran. So it counts as unresolved, and the rest is released.
func (c *Consumer) runGroup(ds []*Delivery, done func()) {
	defer done()
	defer c.releaseSlots(1)
	for i, d := range ds {
		if c.stopping() {
			c.releaseHeld(ds[i:], 0, ReasonShutdown)
			return
		}
		if !d.lease.held() {
			c.releaseHeld(ds[i+1:], c.skipDelay(), ReasonGroupSkipped)
			return
		}
		a := c.newAttempt([]*Delivery{d}, leasesOf(ds[i+1:]), false, done)
		err := c.invoke(a, []*Delivery{d}, func(ctx context.Context) []error {
			return []error{c.handler.Handle(ctx, d)}
		})[0]
		if !c.conclude(a, d, err, i < len(ds)-1) {
			c.releaseHeld(ds[i+1:], c.skipDelay(), ReasonGroupSkipped)
			return
		}
	}
}

func (c *Consumer) runBatch(ds []*Delivery, done func()) {
	defer done()
	defer c.releaseSlots(1)
	var live []*Delivery
	for _, d := range ds {
		if !c.snoozeEarly(d) {
			live = append(live, d)
		}
	}
	if len(live) == 0 {
		return
	}
	a := c.newAttempt(live, nil, true, done)
	res := c.invoke(a, live, func(ctx context.Context) []error {
		r := c.batch.HandleBatch(ctx, live)
		switch {
		case r == nil:
			return make([]error, len(live))
		case len(r) != len(live):
			return FailAll(len(live), errBatchResult)
		}
		return r
	})
	skipped := make([]bool, len(live))
	if c.info.FIFO {
		failed := map[string]bool{}
		for i, d := range live {
			if failed[d.group] {
				skipped[i] = true
				continue
			}
			if res[i] != nil && !resolves(res[i]) {
				failed[d.group] = true
			}
		}
	}
	// Decide every item first, then act: deletes share DeleteMessageBatch
	// calls and releases share ChangeMessageVisibilityBatch calls.
	var owned []*Delivery
	var acts []action
	for i, d := range live {
		if !d.lease.beginEnding() {
			if res[i] == nil && d.lease.wasLost() {
				c.lateDelete(d.lease)
			}
			continue
		}
		act := action{kind: actRelease, why: ReasonGroupSkipped, delay: c.skipDelay()}
		if !skipped[i] {
			act = c.decide(a, d, res[i])
		}
		owned = append(owned, d)
		acts = append(acts, act)
	}
	c.execute(owned, acts, false)
}

// resolves reports whether an outcome ends the message (so a FIFO group may
// go on past it).
func resolves(err error) bool {
	o, ok := asOutcome(err)
	return ok && (o.kind == outcomeDrop || o.kind == outcomePermanent || o.kind == outcomeDuplicate)
}

func leasesOf(ds []*Delivery) []*Lease {
	out := make([]*Lease, len(ds))
	for i, d := range ds {
		out[i] = d.lease
	}
	return out
}

// invoke runs the handler call f under the attempt's watch and returns one
// result per delivery. A panic fails every delivery.
func (c *Consumer) invoke(a *attempt, ds []*Delivery, f func(ctx context.Context) []error) (res []error) {
	c.active.Add(1)
	c.sched.watch(a)
	func() {
		defer func() {
			if r := recover(); r != nil {
				res = FailAll(len(ds), fmt.Errorf("consumer: handler panicked: %v", r))
			}
		}()
		res = f(a.ctx)
	}()
	a.finish()
	c.sched.unwatch(a)
	c.active.Add(-1)
	a.cancel(context.Canceled)
	now := c.clock.Now()
	if !a.batch && res[0] == nil {
		c.handled(now.Sub(a.start))
	}
	for i, d := range ds {
		// Each delivery reports its own lease's renewals: one event per
		// delivery, so a batch's sum would be counted once per item.
		c.observe(Event{Kind: EventHandled, MessageID: d.id, Attempt: d.Attempt(), Duration: now.Sub(a.start),
			Visibility: d.lease.visibility, Renewals: d.lease.Renewals(), Outcome: outcomeName(res[i]), Err: res[i]})
	}
	return res
}

// conclude acts on a handler's result and reports whether the message is
// resolved (deleted, dropped or dead-lettered), so that a FIFO group may go
// on. With confirm, a delete is sent at once and the message is resolved
// only once SQS has confirmed it.
func (c *Consumer) conclude(a *attempt, d *Delivery, err error, confirm bool) bool {
	l := d.lease
	if !l.beginEnding() {
		if err == nil && l.wasLost() {
			c.lateDelete(l)
		}
		return false
	}
	return c.execute([]*Delivery{d}, []action{c.decide(a, d, err)}, confirm)[0]
}

type actionKind int

const (
	actDelete actionKind = iota + 1
	actRelease
	actDeadLetter
	actSnooze
	// actLeave ends the lease without a call: the message is another
	// attempt's, and the receipt lapses on its own.
	actLeave
)

// action is what the runtime does with an owned lease once its handler
// has answered.
type action struct {
	kind  actionKind
	why   Reason
	delay time.Duration
	err   error // the reason a message is dead-lettered
}

// decide turns a handler's result (and the runtime's cause of cancellation,
// if any) into an action on the delivery's owned lease.
func (c *Consumer) decide(a *attempt, d *Delivery, err error) action {
	if err == nil {
		return action{kind: actDelete, why: ReasonDone}
	}
	switch cause := a.runtimeCause(); {
	case errors.Is(cause, ErrShutdown):
		return action{kind: actRelease, why: ReasonShutdown}
	case errors.Is(cause, ErrStalled):
		return c.retryAction(d, 0, ReasonStalled, cause)
	case errors.Is(cause, ErrAttemptTimeout):
		return c.retryAction(d, 0, ReasonTimeout, cause)
	}
	o, ok := asOutcome(err)
	if !ok {
		return c.retryAction(d, 0, ReasonError, err)
	}
	switch o.kind {
	case outcomeDrop:
		return action{kind: actDelete, why: ReasonDrop}
	case outcomeDuplicate:
		return action{kind: actDelete, why: ReasonDuplicate}
	case outcomePermanent:
		return action{kind: actDeadLetter, err: o.err}
	case outcomeNotReady:
		return action{kind: actSnooze, delay: o.after}
	case outcomeHeld:
		return action{kind: actLeave}
	}
	return c.retryAction(d, o.after, ReasonRetry, err)
}

// retryAction releases for a later attempt. When the attempt budget is
// spent by the runtime's count but not by SQS's (a re-sent copy has a fresh
// ApproximateReceiveCount), the runtime dead-letters the message itself.
func (c *Consumer) retryAction(d *Delivery, after time.Duration, why Reason, err error) action {
	if mrc := c.info.MaxReceiveCount; mrc > 0 && d.Attempt() >= mrc && d.receiveCount < mrc && c.info.DeadLetterURL != "" {
		return action{kind: actDeadLetter, err: err}
	}
	if after <= 0 {
		after = c.backoff(d)
	}
	return action{kind: actRelease, why: why, delay: after}
}

// execute carries out actions on owned leases, deletes and releases
// batched, and reports which messages are resolved. Deletes are queued in
// the batcher, or, with confirm, sent at once, and only the confirmed ones
// count as resolved.
func (c *Consumer) execute(ds []*Delivery, acts []action, confirm bool) []bool {
	resolved := make([]bool, len(ds))
	dels := map[Reason][]int{}
	var rel []*Lease
	var relDelays []time.Duration
	var relWhys []Reason
	for i, act := range acts {
		d := ds[i]
		switch act.kind {
		case actDelete:
			dels[act.why] = append(dels[act.why], i)
			resolved[i] = true
		case actRelease:
			rel = append(rel, d.lease)
			relDelays = append(relDelays, act.delay)
			relWhys = append(relWhys, act.why)
		case actDeadLetter:
			resolved[i] = c.deadLetter(d, act.err, confirm)
		case actSnooze:
			c.snooze(d, act.delay)
		case actLeave:
			c.endLease(d.lease)
		}
	}
	for why, idx := range dels {
		ls := make([]*Lease, len(idx))
		for j, i := range idx {
			ls[j] = ds[i].lease
		}
		if !confirm {
			c.deleteLater(ls, why)
			continue
		}
		for j, err := range c.deleteNow(ls, why) {
			resolved[idx[j]] = err == nil
		}
	}
	if len(rel) > 0 {
		c.giveBackEach(c.bg, rel, relDelays, relWhys)
	}
	if c.info.FIFO {
		for i, ok := range resolved {
			if ok {
				c.unhold(ds[i].lease)
			}
		}
	}
	return resolved
}

// backoff is the RetryPolicy's delay for d's release after a failure,
// kept within d's lease if the policy says WithinLease.
func (c *Consumer) backoff(d *Delivery) time.Duration {
	p := c.cfg.retry
	delay := p.Delay(d.Attempt(), c.cfg.random())
	if p.WithinLease {
		left := d.lease.Deadline().Sub(c.clock.Now()).Truncate(time.Second) - time.Second
		delay = max(min(delay, left), p.withDefaults().Min)
	}
	return delay
}

// deleteLater queues owned leases for deletion.
func (c *Consumer) deleteLater(ls []*Lease, why Reason) {
	if !c.del.add(ls, why) {
		c.deleteNow(ls, why)
	}
}

// deleteNow deletes owned leases' messages at once, bypassing the batcher,
// and returns each result.
func (c *Consumer) deleteNow(ls []*Lease, why Reason) []error {
	whys := make([]Reason, len(ls))
	for i := range whys {
		whys[i] = why
	}
	return c.deleteOwned(c.bg, ls, whys)
}

// releaseHeld releases the deliveries' leases that are still held.
func (c *Consumer) releaseHeld(ds []*Delivery, delay time.Duration, why Reason) {
	var own []*Lease
	for _, d := range ds {
		if d.lease.beginEnding() {
			own = append(own, d.lease)
		}
	}
	if len(own) > 0 {
		c.giveBack(c.bg, own, delay, why)
	}
}

// lateDelete deletes the message of a lost lease whose handler succeeded
// anyway: the work is done, and on a standard queue the stale receipt still
// deletes it, sparing a duplicate run.
func (c *Consumer) lateDelete(l *Lease) {
	ctx, cancel := c.boundCtx(c.bg, c.clock.Now().Add(l.visibility))
	defer cancel()
	err := c.deleteBatch(ctx, []*Lease{l})[0]
	c.observe(Event{Kind: EventLateDelete, MessageID: l.messageID, Attempt: l.attemptNo, Err: err})
}

// abandon handles an attempt whose handler did not return within the grace
// after a cancel: its messages are released (or dead-lettered, their
// attempts spent) as the cause says, as if the handler had returned the
// cause, leases waiting behind it (FIFO) are released at once, and its slot
// is reported stuck.
func (c *Consumer) abandon(a *attempt) {
	cause := a.runtimeCause()
	var own []*Delivery
	var acts []action
	for _, d := range a.ds {
		if d.lease.beginEnding() {
			own = append(own, d)
			acts = append(acts, c.decide(a, d, cause))
		}
	}
	if len(own) > 0 {
		c.execute(own, acts, false)
	}
	var fol []*Lease
	for _, l := range a.followers {
		if l.beginEnding() {
			fol = append(fol, l)
		}
	}
	if len(fol) > 0 {
		c.giveBack(c.bg, fol, c.skipDelay(), ReasonGroupSkipped)
	}
	c.observe(Event{Kind: EventSlotStuck, MessageID: a.leases[0].messageID, Attempt: a.leases[0].attemptNo,
		Duration: c.clock.Now().Sub(a.start), Err: cause})
	// Shutdown's drain no longer waits for the handler.
	a.detach()
}

// deadLetter sends the message to the dead-letter queue and deletes it
// (with confirm, at once, and it reports true only if the delete is
// confirmed). Without a dead-letter queue, or if the send fails, it
// retries instead.
func (c *Consumer) deadLetter(d *Delivery, reason error, confirm bool) bool {
	l := d.lease
	url := c.info.DeadLetterURL
	if url == "" {
		c.observe(Event{Kind: EventError, Op: "dead-letter", MessageID: d.id,
			Err: fmt.Errorf("consumer: no dead-letter queue for a permanent failure: %v", reason)})
		c.giveBack(c.bg, []*Lease{l}, c.backoff(d), ReasonError)
		return false
	}
	attrs := copyAttrs(d.Message.MessageAttributes)
	if reason != nil && len(attrs) < 10 {
		attrs[AttrDeadLetterReason] = stringValue(truncate(reason.Error(), 1024))
	}
	in := &sqs.SendMessageInput{QueueUrl: &url, MessageBody: d.Message.Body, MessageAttributes: attrs,
		MessageSystemAttributes: traceAttr(d.Message)}
	if strings.HasSuffix(url, ".fifo") {
		group, dedup := d.group, d.id
		if group == "" {
			group = d.id
		}
		in.MessageGroupId, in.MessageDeduplicationId = &group, &dedup
	}
	ctx, cancel := c.boundCtx(c.bg, l.Deadline())
	_, err := c.client.SendMessage(ctx, in)
	cancel()
	if err != nil {
		c.observe(Event{Kind: EventError, Op: "SendMessage", MessageID: d.id, Err: err})
		c.giveBack(c.bg, []*Lease{l}, c.backoff(d), ReasonError)
		return false
	}
	c.observe(Event{Kind: EventDeadLettered, MessageID: d.id, Attempt: d.Attempt(), Err: reason})
	if confirm {
		return c.deleteNow([]*Lease{l}, ReasonDeadLettered)[0] == nil
	}
	c.deleteLater([]*Lease{l}, ReasonDeadLettered)
	return true
}

// maxDelay is SQS's longest DelaySeconds.
const maxDelay = 15 * time.Minute

// snoozeDelay is how long a NotReady snooze hides the message: the
// handler's delay, or longer when the snooze policy's backoff for the
// message's delivery count (its lease epoch: every delivery, snoozes
// included) is: a message that is never ready comes back less and less
// often, with full jitter so that messages snoozed together spread out,
// and never at once.
func (c *Consumer) snoozeDelay(d *Delivery, after time.Duration) time.Duration {
	return max(after, c.cfg.snooze.Delay(int(d.lease.epoch), c.cfg.random()), time.Second)
}

// snooze hides an owned lease's message for the snooze delay without
// spending an attempt where it can (see NotReady).
func (c *Consumer) snooze(d *Delivery, after time.Duration) {
	after = c.snoozeDelay(d, after)
	if c.info.FIFO || c.cfg.snoozeByVisibility || !c.resend(d, after) {
		if mrc := c.info.MaxReceiveCount; mrc > 0 && d.receiveCount >= mrc {
			// A snooze by visibility spends a receive: SQS moves the
			// message to the dead-letter queue at its next one.
			c.observe(Event{Kind: EventLastReceiveSnooze, MessageID: d.id, Attempt: d.Attempt(), Delay: after})
		}
		c.giveBack(c.bg, []*Lease{d.lease}, after, ReasonNotReady)
	}
}

// snoozeEarly re-snoozes, without running the handler, a message whose
// carried not-before time is still ahead. It reports whether it did.
func (c *Consumer) snoozeEarly(d *Delivery) bool {
	if d.notBefore.IsZero() {
		return false
	}
	left := d.notBefore.Sub(c.clock.Now())
	if left < time.Second || !d.lease.beginEnding() {
		return false
	}
	if !c.resend(d, left) {
		c.giveBack(c.bg, []*Lease{d.lease}, left, ReasonNotReady)
	}
	return true
}

// resend re-sends an owned lease's message with a delay and the attempt
// counter, then deletes the original. It reports false, changing nothing,
// if the message cannot carry the attributes or the send fails.
func (c *Consumer) resend(d *Delivery, after time.Duration) bool {
	attrs := copyAttrs(d.Message.MessageAttributes)
	delete(attrs, AttrAttempts)
	delete(attrs, AttrMessageID)
	delete(attrs, AttrDeliveries)
	delete(attrs, AttrNotBefore)
	attrs[AttrAttempts] = types.MessageAttributeValue{DataType: ptr("Number"), StringValue: ptr(strconv.Itoa(d.Attempt() - 1))}
	attrs[AttrDeliveries] = types.MessageAttributeValue{DataType: ptr("Number"), StringValue: ptr(strconv.FormatInt(d.lease.epoch, 10))}
	attrs[AttrMessageID] = stringValue(d.id)
	delay := after
	if after > maxDelay {
		delay = maxDelay
		until := c.clock.Now().Add(after).UnixMilli()
		attrs[AttrNotBefore] = types.MessageAttributeValue{DataType: ptr("Number"), StringValue: ptr(strconv.FormatInt(until, 10))}
	}
	if len(attrs) > 10 {
		return false
	}
	in := &sqs.SendMessageInput{QueueUrl: &c.url, MessageBody: d.Message.Body, MessageAttributes: attrs,
		DelaySeconds: seconds(delay, maxDelay), MessageSystemAttributes: traceAttr(d.Message)}
	if d.group != "" {
		g := d.group
		in.MessageGroupId = &g
	}
	ctx, cancel := c.boundCtx(c.bg, d.lease.Deadline())
	_, err := c.client.SendMessage(ctx, in)
	cancel()
	if err != nil {
		c.observe(Event{Kind: EventError, Op: "SendMessage", MessageID: d.id, Err: err})
		return false
	}
	c.observe(Event{Kind: EventSnoozed, MessageID: d.id, Attempt: d.Attempt(), Delay: after})
	c.deleteLater([]*Lease{d.lease}, ReasonSnoozed)
	return true
}

func copyAttrs(in map[string]types.MessageAttributeValue) map[string]types.MessageAttributeValue {
	out := make(map[string]types.MessageAttributeValue, len(in)+3)
	for k, v := range in {
		out[k] = v
	}
	return out
}

func traceAttr(m types.Message) map[string]types.MessageSystemAttributeValue {
	t := m.Attributes["AWSTraceHeader"]
	if t == "" {
		return nil
	}
	return map[string]types.MessageSystemAttributeValue{"AWSTraceHeader": {DataType: ptr("String"), StringValue: &t}}
}

func stringValue(s string) types.MessageAttributeValue {
	return types.MessageAttributeValue{DataType: ptr("String"), StringValue: &s}
}

func ptr[T any](v T) *T { return &v }

// truncate cuts s to at most n bytes without splitting a character.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}

// countShutdownRelease counts releases made because of shutdown.
func (c *Consumer) countShutdownRelease(why Reason, err error) {
	if why != ReasonShutdown {
		return
	}
	if err == nil {
		c.shutReleased.Add(1)
	} else {
		c.shutFailed.Add(1)
	}
}
