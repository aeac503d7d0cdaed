package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/baton-sqs/baton/consumer"
)

// call is one handler call of the consumer: the messages of one receive
// (or one message per-message), until each has a result.
type call struct {
	ctx   context.Context
	items []*item

	mu      sync.Mutex
	res     []error
	settled []bool
	left    int
	done    chan struct{}
}

// item is one message of a call.
type item struct {
	d   *consumer.Delivery
	id  string
	rec []byte
	c   *call
	idx int

	// Guarded by the gatherer's mutex.
	b         *batch
	withdrawn bool
}

func (w *Worker) newCall(ctx context.Context, ds []*consumer.Delivery) *call {
	c := &call{ctx: ctx, res: make([]error, len(ds)), settled: make([]bool, len(ds)), left: len(ds), done: make(chan struct{})}
	for i, d := range ds {
		c.items = append(c.items, &item{d: d, id: deref(d.Message.MessageId), c: c, idx: i})
	}
	if len(ds) == 0 {
		close(c.done)
	}
	return c
}

// settle records item i's result, once.
func (c *call) settle(i int, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.settled[i] {
		return
	}
	c.settled[i], c.res[i] = true, err
	c.left--
	if c.left == 0 {
		close(c.done)
	}
}

// results returns the results, fail for those not settled.
func (c *call) results(fail error) []error {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]error, len(c.res))
	for i := range out {
		out[i] = c.res[i]
		if !c.settled[i] {
			out[i] = fail
		}
	}
	return out
}

// track and untrack keep the set of calls whose messages the worker holds.
func (w *Worker) track(c *call) {
	w.callsMu.Lock()
	w.calls[c] = struct{}{}
	w.callsMu.Unlock()
}

func (w *Worker) untrack(c *call) {
	w.callsMu.Lock()
	delete(w.calls, c)
	w.callsMu.Unlock()
}

// keepAlive keeps every message the worker holds alive each tick, so that
// the consumer keeps renewing their leases. It says nothing of progress:
// the worker cannot see a target's work move, so these renewals do not
// tell the lease doctor that the handler progressed (a command's lines on
// its progress descriptor do, through progressAll).
func (w *Worker) keepAlive(ctx context.Context) {
	for w.sleep(ctx, w.tick) {
		w.callsMu.Lock()
		calls := make([]*call, 0, len(w.calls))
		for c := range w.calls {
			calls = append(calls, c)
		}
		w.callsMu.Unlock()
		for _, c := range calls {
			c.keepAlive()
		}
	}
}

// keepAlive keeps every message of the call alive, claiming no progress.
func (c *call) keepAlive() {
	if len(c.items) > 0 {
		_ = c.items[0].d.KeepAlive(c.ctx)
	}
}

// progress reports progress for every message of the call.
func (c *call) progress() {
	// The messages of one call are one attempt of the consumer's: progress
	// on one is progress on all.
	if len(c.items) > 0 {
		_ = c.items[0].d.Progress(c.ctx)
	}
}

// handleBatch is the consumer's batch handler: the messages of one receive.
func (w *Worker) handleBatch(ctx context.Context, ds []*consumer.Delivery) []error {
	c := w.newCall(ctx, ds)
	for _, it := range c.items {
		rec, err := encodeRecord(it.d.Message, w.q.arn, w.q.region)
		if err != nil {
			c.settle(it.idx, err)
			continue
		}
		it.rec = rec
	}
	w.track(c)
	defer w.untrack(c)
	if w.gather == nil {
		w.deliverNow(c)
		return c.results(errors.New("worker: no result"))
	}
	w.gather.add(c)
	select {
	case <-c.done:
		return c.results(nil)
	case <-ctx.Done():
	}
	cause := context.Cause(ctx)
	running := w.gather.withdraw(c, cause)
	if !errors.Is(cause, consumer.ErrLeaseLost) {
		// Stop the deliveries the messages are in, and wait for them:
		// they end soon (a command within twice its grace).
		for _, b := range running {
			b.stop(cause)
		}
		<-c.done
	}
	return c.results(cause)
}

// deliverNow delivers a call's messages without a batching window: in
// events that fit MaxPayload, one after the other; on a FIFO queue, a
// failure fails everything after it.
func (w *Worker) deliverNow(c *call) {
	var live []*item
	for _, it := range c.items {
		if it.rec != nil {
			live = append(live, it)
		}
	}
	failedFIFO := false
	for _, part := range w.split(live) {
		if failedFIFO || c.ctx.Err() != nil {
			why := ErrSkipped
			if !failedFIFO {
				why = context.Cause(c.ctx)
			}
			for _, it := range part {
				c.settle(it.idx, why)
			}
			continue
		}
		select {
		case <-w.slots:
		case <-c.ctx.Done():
			for _, it := range part {
				c.settle(it.idx, context.Cause(c.ctx))
			}
			continue
		}
		res := w.invoke(c.ctx, part)
		w.slots <- struct{}{}
		for i, it := range part {
			c.settle(it.idx, res[i])
			if w.q.fifo && res[i] != nil {
				failedFIFO = true
			}
		}
	}
}

// split cuts items into events within MaxPayload (a message too large on
// its own travels alone) and BatchSize.
func (w *Worker) split(items []*item) [][]*item {
	var parts [][]*item
	var cur []*item
	size := eventOverhead
	for _, it := range items {
		add := len(it.rec)
		if len(cur) > 0 {
			add++
		}
		if len(cur) > 0 && (size+add > w.cfg.MaxPayload || len(cur) >= w.cfg.BatchSize) {
			parts = append(parts, cur)
			cur, size, add = nil, eventOverhead, len(it.rec)
		}
		cur = append(cur, it)
		size += add
	}
	if len(cur) > 0 {
		parts = append(parts, cur)
	}
	return parts
}

// invoke delivers items as one event and returns one result per item.
// Messages whose lease was lost meanwhile (another consumer may have them)
// are left out; on a FIFO queue so is everything after the first of them.
func (w *Worker) invoke(ctx context.Context, all []*item) []error {
	res := make([]error, len(all))
	var items []*item
	var at []int
	for i, it := range all {
		switch {
		case lost(it.d):
			res[i] = fmt.Errorf("%w: not delivered", consumer.ErrLeaseLost)
		case w.q.fifo && len(items) < i:
			res[i] = ErrSkipped
		default:
			items = append(items, it)
			at = append(at, i)
		}
	}
	if len(items) == 0 {
		return res
	}
	for j, err := range w.deliver(ctx, items) {
		res[at[j]] = err
	}
	return res
}

// lost reports whether the runtime gave the delivery's lease up.
func lost(d *consumer.Delivery) bool {
	select {
	case <-d.Lease().Lost():
		return true
	default:
		return false
	}
}

// deliver sends items as one event and returns one result per item.
func (w *Worker) deliver(ctx context.Context, items []*item) []error {
	recs := make([][]byte, len(items))
	ids := make(map[string]bool, len(items))
	for i, it := range items {
		recs[i] = it.rec
		ids[it.id] = true
	}
	d := &delivery{
		w:        w,
		event:    encodeEvent(recs),
		inBatch:  func(id string) bool { return ids[id] },
		progress: func() { progressAll(items) },
		leases:   leasesOf(items),
	}
	start := w.clock.Now()
	w.counts.running.Add(1)
	out := w.cfg.Target.deliver(ctx, d)
	w.counts.running.Add(-1)
	res := w.results(items, out)
	failures := 0
	for _, err := range res {
		if err != nil {
			failures++
		}
	}
	w.counts.delivered(len(items), failures)
	took := w.clock.Now().Sub(start)
	switch {
	case out.err != nil:
		w.log.Warn("delivery failed: "+fate(ctx, out.err, "the batch"), "messages", len(items), "bytes", len(d.event), "took", took, "err", out.err)
	case failures > 0:
		w.log.Info("delivered with failures", "messages", len(items), "failed", failures, "bytes", len(d.event), "took", took)
	default:
		w.log.Debug("delivered", "messages", len(items), "bytes", len(d.event), "took", took)
	}
	return res
}

// leasesOf returns the leases of items.
func leasesOf(items []*item) []*consumer.Lease {
	ls := make([]*consumer.Lease, len(items))
	for i, it := range items {
		ls[i] = it.d.Lease()
	}
	return ls
}

// progressAll reports progress for items: once per call they come from.
func progressAll(items []*item) {
	var last *call
	for _, it := range items {
		if it.c != last {
			last = it.c
			last.progress()
		}
	}
}

// results turns an outcome into one result per item: the whole batch
// failed, or the reported ids failed; on a FIFO queue everything after the
// first failure fails too.
func (w *Worker) results(items []*item, out outcome) []error {
	res := make([]error, len(items))
	if out.err != nil {
		for i := range res {
			res[i] = out.err
		}
		return res
	}
	bad := make(map[string]bool, len(out.failed))
	for _, id := range out.failed {
		bad[id] = true
	}
	first := -1
	for i, it := range items {
		if bad[it.id] {
			res[i] = ErrItemFailed
			if first < 0 {
				first = i
			}
		}
	}
	if w.q.fifo && first >= 0 {
		for i := first + 1; i < len(res); i++ {
			if res[i] == nil {
				res[i] = ErrSkipped
			}
		}
	}
	return res
}

// handleOne is the consumer's handler for per-message targets.
func (w *Worker) handleOne(ctx context.Context, d *consumer.Delivery) error {
	c := w.newCall(ctx, []*consumer.Delivery{d})
	w.track(c)
	defer w.untrack(c)
	select {
	case <-w.slots:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	defer func() { w.slots <- struct{}{} }()
	w.counts.running.Add(1)
	err := w.cfg.Target.(*HTTPTarget).deliverOne(ctx, w, d)
	w.counts.running.Add(-1)
	failed := 0
	if err != nil {
		failed = 1
	}
	w.counts.delivered(1, failed)
	if err != nil {
		w.log.Warn("delivery failed: "+fate(ctx, err, "the message"), "message", d.ID(), "err", err)
	}
	return err
}

// fate says, for the log, what the consumer does with what (the batch,
// the message) after a delivery under ctx failed with err: a delivery the
// shutdown cancelled is released at once (consumer: ReasonShutdown, no
// delay), one whose lease was lost is no longer the worker's to release,
// a throttled one is released within its lease (see untilServed), the
// others come back after the retry backoff.
func fate(ctx context.Context, err error, what string) string {
	cause := context.Cause(ctx)
	switch {
	case ctx.Err() != nil && errors.Is(cause, consumer.ErrShutdown):
		return "stopped by the shutdown: " + what + " is to be released at once (the stop line counts the releases)"
	case errors.Is(err, consumer.ErrLeaseLost) || (ctx.Err() != nil && errors.Is(cause, consumer.ErrLeaseLost)):
		return "the lease was lost: " + what + " comes back when the queue's lease ends, maybe to another consumer"
	case errors.Is(err, ErrThrottled):
		return "the target is throttling: " + what + " is released within its lease, and the receives pause for the target's wait"
	}
	return what + " comes back after a backoff"
}

// deliveryCounts are the worker's counts of deliveries, for its stop line.
type deliveryCounts struct {
	running  atomic.Int64 // deliveries under way
	batches  atomic.Int64 // deliveries made (a per-message target's: one a message)
	messages atomic.Int64 // messages in them
	failed   atomic.Int64 // messages they failed
	// ignored counts the batchItemFailures items answered while
	// ReportBatchItemFailures is off (see noteIgnoredFailures).
	ignored atomic.Int64
}

// delivered counts a delivery of n messages, failed of which failed.
func (c *deliveryCounts) delivered(n, failed int) {
	c.batches.Add(1)
	c.messages.Add(int64(n))
	c.failed.Add(int64(failed))
}
