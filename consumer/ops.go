package consumer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// maxBatch is the most entries an SQS batch action takes.
const maxBatch = 10

// changeVisibility sends one ChangeMessageVisibilityBatch for up to ten
// leases and returns each lease's result; optFns are the call's options.
func (c *Consumer) changeVisibility(ctx context.Context, ls []*Lease, secs []int32, optFns ...func(*sqs.Options)) []error {
	entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, len(ls))
	for i, l := range ls {
		id, h := strconv.Itoa(i), l.handle
		entries[i] = types.ChangeMessageVisibilityBatchRequestEntry{Id: &id, ReceiptHandle: &h, VisibilityTimeout: secs[i]}
	}
	out, err := c.client.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: &c.url, Entries: entries}, optFns...)
	if err != nil {
		c.observe(Event{Kind: EventError, Op: "ChangeMessageVisibilityBatch", Err: err})
		return repeatErr(len(ls), err)
	}
	ok := make([]string, 0, len(out.Successful))
	for _, s := range out.Successful {
		if s.Id != nil {
			ok = append(ok, *s.Id)
		}
	}
	return batchResults(len(ls), ok, out.Failed)
}

// deleteBatch sends one DeleteMessageBatch for up to ten leases.
func (c *Consumer) deleteBatch(ctx context.Context, ls []*Lease) []error {
	entries := make([]types.DeleteMessageBatchRequestEntry, len(ls))
	for i, l := range ls {
		id, h := strconv.Itoa(i), l.handle
		entries[i] = types.DeleteMessageBatchRequestEntry{Id: &id, ReceiptHandle: &h}
	}
	out, err := c.client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: &c.url, Entries: entries})
	if err != nil {
		c.observe(Event{Kind: EventError, Op: "DeleteMessageBatch", Err: err})
		return repeatErr(len(ls), err)
	}
	ok := make([]string, 0, len(out.Successful))
	for _, s := range out.Successful {
		if s.Id != nil {
			ok = append(ok, *s.Id)
		}
	}
	return batchResults(len(ls), ok, out.Failed)
}

func repeatErr(n int, err error) []error {
	errs := make([]error, n)
	for i := range errs {
		errs[i] = err
	}
	return errs
}

// errNoResult: a batch answer that named an entry neither successful nor
// failed. Treated as transient.
var errNoResult = errors.New("consumer: batch answer has no result for the entry")

// batchResults maps a batch answer back to its entries (ids are indexes).
func batchResults(n int, ok []string, failed []types.BatchResultErrorEntry) []error {
	errs := repeatErr(n, errNoResult)
	for _, id := range ok {
		if i, err := strconv.Atoi(id); err == nil && i >= 0 && i < n {
			errs[i] = nil
		}
	}
	for _, f := range failed {
		if f.Id == nil {
			continue
		}
		i, err := strconv.Atoi(*f.Id)
		if err != nil || i < 0 || i >= n {
			continue
		}
		e := &entryError{SenderFault: f.SenderFault}
		if f.Code != nil {
			e.Code = *f.Code
		}
		if f.Message != nil {
			e.Message = *f.Message
		}
		errs[i] = e
	}
	return errs
}

// finishOwned runs call over leases the caller owns (ending), in calls of
// ten made in parallel, and retries transient failures with backoff while
// each lease lasts and ctx allows. When Shutdown reaches its last phases
// (c.hurry), the retry waiting then goes at once and later ones back off
// afresh from the shortest delay: the hurry skips a wait, it never limits
// the attempts, which Shutdown bounds through ctx. It returns each lease's
// final error; a lease whose deadline passed first gets ErrLeaseLost.
func (c *Consumer) finishOwned(ctx context.Context, ls []*Lease, call func(ctx context.Context, ls []*Lease) []error) []error {
	errs := make([]error, len(ls))
	pending := make([]int, len(ls))
	for i := range pending {
		pending[i] = i
	}
	hurry := c.hurry
	for try := 0; len(pending) > 0; try++ {
		live := c.dropLost(ls, pending, errs)
		pending = c.finishRound(ctx, ls, live, errs, call)
		if len(pending) == 0 || ctx.Err() != nil {
			break
		}
		t := c.clock.NewTimer(min(100*time.Millisecond<<min(try, 5), 2*time.Second))
		select {
		case <-t.C():
		case <-hurry:
			hurry = nil // once: a closed channel would skip every wait
			try = -1
		case <-ctx.Done():
		}
		t.Stop()
		if ctx.Err() != nil {
			break
		}
	}
	return errs
}

// dropLost returns the indexes of pending whose leases still last, and
// gives the others ErrLeaseLost, wrapping the error of their last try.
func (c *Consumer) dropLost(ls []*Lease, pending []int, errs []error) (live []int) {
	now := c.clock.Now()
	for _, i := range pending {
		if now.Before(ls[i].Deadline()) {
			live = append(live, i)
		} else if errs[i] == nil {
			errs[i] = ErrLeaseLost
		} else {
			errs[i] = fmt.Errorf("%w: %v", ErrLeaseLost, errs[i])
		}
	}
	return live
}

// finishRound runs call once over the leases of live, in calls of ten made
// in parallel, each bounded by its earliest lease's end; it records each
// lease's error and returns those that failed for a transient reason.
func (c *Consumer) finishRound(ctx context.Context, ls []*Lease, live []int, errs []error,
	call func(ctx context.Context, ls []*Lease) []error) (retry []int) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for idx := range slices.Chunk(live, maxBatch) {
		wg.Go(func() {
			chunk := make([]*Lease, len(idx))
			var earliest time.Time
			for j, i := range idx {
				chunk[j] = ls[i]
				if dl := ls[i].Deadline(); earliest.IsZero() || dl.Before(earliest) {
					earliest = dl
				}
			}
			bctx, cancel := c.boundCtx(ctx, earliest)
			res := call(bctx, chunk)
			cancel()
			mu.Lock()
			defer mu.Unlock()
			for j, i := range idx {
				errs[i] = res[j]
				if res[j] != nil && classifyAny(res[j]) == transient && ctx.Err() == nil {
					retry = append(retry, i)
				}
			}
		})
	}
	wg.Wait()
	return retry
}

// release ends owned leases early: each message becomes visible after
// delay. It reports each lease's result to the Observer and returns it.
func (c *Consumer) release(ctx context.Context, ls []*Lease, delay time.Duration, why Reason) []error {
	delays := make([]time.Duration, len(ls))
	whys := make([]Reason, len(ls))
	for i := range ls {
		delays[i], whys[i] = delay, why
	}
	return c.releaseEach(ctx, ls, delays, whys)
}

// releaseEach is release with a delay and a reason per lease. After
// Shutdown cancelled a receive, each delay lasts at least until that
// receive's wait would have ended (see stopShadow).
func (c *Consumer) releaseEach(ctx context.Context, ls []*Lease, delays []time.Duration, whys []Reason) []error {
	index := make(map[*Lease]int, len(ls))
	shadow := c.stopShadow(c.clock.Now())
	delays = append([]time.Duration(nil), delays...)
	for i, l := range ls {
		index[l] = i
		delays[i] = max(delays[i], shadow)
	}
	c.holdGroups(ls, delays, whys)
	errs := c.finishOwned(ctx, ls, func(ctx context.Context, chunk []*Lease) []error {
		now := c.clock.Now()
		secs := make([]int32, len(chunk))
		for i, l := range chunk {
			secs[i] = seconds(delays[index[l]], l.ceiling.Sub(now).Truncate(time.Second))
		}
		return c.changeVisibility(ctx, chunk, secs)
	})
	for i, l := range ls {
		// Counted before the lease ends: Shutdown reads the counts once
		// every lease has ended.
		c.countShutdownRelease(whys[i], errs[i])
		c.concludeOp(l, errs[i], "release")
		if errs[i] == nil {
			c.observe(Event{Kind: EventReleased, MessageID: l.messageID, Attempt: l.attemptNo, Reason: whys[i], Delay: delays[i]})
		}
	}
	return errs
}

// deleteOwned deletes owned leases' messages now. It reports each result to
// the Observer and returns it.
func (c *Consumer) deleteOwned(ctx context.Context, ls []*Lease, why []Reason) []error {
	errs := c.finishOwned(ctx, ls, c.deleteBatch)
	for i, l := range ls {
		if errs[i] == nil { // counted before the lease ends, as releases
			c.deletes.Add(1)
		} else {
			c.deleteFailures.Add(1)
		}
		c.concludeOp(l, errs[i], "delete")
		if errs[i] == nil {
			c.observe(Event{Kind: EventDeleted, MessageID: l.messageID, Attempt: l.attemptNo, Reason: why[i]})
		} else {
			c.observe(Event{Kind: EventDeleteFailed, MessageID: l.messageID, Attempt: l.attemptNo, Err: errs[i]})
		}
	}
	return errs
}

// concludeOp ends an owned lease after its final operation: lost if the
// operation says the receipt is gone or the deadline passed, ended
// otherwise (on a failure the message reappears when the lease lapses).
func (c *Consumer) concludeOp(l *Lease, err error, op string) {
	switch {
	case err == nil:
		c.endLease(l)
	case errors.Is(err, ErrLeaseLost) || classifyAny(err) == gone:
		c.loseLease(l, fmt.Errorf("%w: %s: %v", ErrLeaseLost, op, err))
	default:
		c.endLease(l)
		c.observe(Event{Kind: EventError, Op: op, MessageID: l.messageID, Err: err})
	}
}

// deleter batches deletes: it flushes when ten are pending, when the oldest
// has waited the delete window, or when a pending lease nears its deadline.
type deleter struct {
	c    *Consumer
	kick chan struct{}
	// ctx bounds the background flushes; close cancels it if its own
	// deadline comes first.
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	pending []pendingDelete
	closed  bool

	flushes sync.WaitGroup
}

type pendingDelete struct {
	l     *Lease
	why   Reason
	added time.Time
}

func newDeleter(c *Consumer) *deleter {
	return &deleter{c: c, kick: make(chan struct{}, 1)}
}

// add queues owned leases for deletion, all at once so they can share a
// call. It reports false once the deleter is closed; the caller then
// deletes directly.
func (d *deleter) add(ls []*Lease, why Reason) bool {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return false
	}
	now := d.c.clock.Now()
	for _, l := range ls {
		d.pending = append(d.pending, pendingDelete{l: l, why: why, added: now})
	}
	d.mu.Unlock()
	select {
	case d.kick <- struct{}{}:
	default:
	}
	return true
}

func (d *deleter) run(ctx context.Context) {
	c := d.c
	for {
		now := c.clock.Now()
		d.mu.Lock()
		var next time.Time
		flush := len(d.pending) >= maxBatch
		for _, p := range d.pending {
			at := p.added.Add(c.cfg.deleteWindow)
			if near := p.l.Deadline().Add(-c.cfg.renewAhead); near.Before(at) {
				at = near
			}
			if !now.Before(at) {
				flush = true
			}
			if next.IsZero() || at.Before(next) {
				next = at
			}
		}
		var take []pendingDelete
		if flush {
			take, d.pending = d.pending, nil
			// Added under the lock, so close (which sets closed under
			// it, then waits) never races an Add.
			d.flushes.Add((len(take) + maxBatch - 1) / maxBatch)
		}
		d.mu.Unlock()
		for len(take) > 0 {
			n := min(len(take), maxBatch)
			batch := take[:n]
			take = take[n:]
			go func() {
				defer d.flushes.Done()
				d.send(d.ctx, batch)
			}()
		}
		if flush {
			continue
		}
		var tc <-chan time.Time
		var t Timer
		if !next.IsZero() {
			t = c.clock.NewTimer(next.Sub(now))
			tc = t.C()
		}
		select {
		case <-tc:
		case <-d.kick:
		case <-ctx.Done():
		}
		if t != nil {
			t.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

func (d *deleter) send(ctx context.Context, batch []pendingDelete) {
	ls := make([]*Lease, len(batch))
	why := make([]Reason, len(batch))
	for i, p := range batch {
		ls[i], why[i] = p.l, p.why
	}
	d.c.deleteOwned(ctx, ls, why)
}

// close stops taking deletes, sends every pending one under ctx and waits
// for the flushes in flight, cancelling them if ctx ends first.
func (d *deleter) close(ctx context.Context) {
	d.mu.Lock()
	d.closed = true
	take := d.pending
	d.pending = nil
	d.mu.Unlock()
	if len(take) > 0 {
		d.send(ctx, take)
	}
	done := make(chan struct{})
	go func() {
		d.flushes.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		d.cancel()
		<-done
	}
}
