package consumer_test

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/consumer"
	"github.com/baton-sqs/baton/consumer/consumertest"
	"github.com/baton-sqs/baton/internal/testutil/poll"
)

// recorder keeps every event the consumer under test reports.
type recorder = consumertest.Recorder

// bubble runs a test of the runtime on the fake clock in a testing/synctest
// bubble: goroutines the test starts (the consumer's among them) live in
// it, settle can then wait until every one of them is durably blocked, and
// real-time waits (checkFor, context deadlines, time.After) run on the
// bubble's own clock, which moves only when everything is blocked. No
// outcome depends on how fast the machine runs the goroutines.
func bubble(t *testing.T, f func(t *testing.T)) {
	t.Helper()
	synctest.Test(t, f)
}

// harness runs a consumer against the fake SQS on a fake clock.
type harness struct {
	t     *testing.T
	clock *consumertest.Clock
	sqs   *consumertest.SQS
	url   string
	obs   *recorder
	c     *consumer.Consumer
	done  chan error
}

func newHarness(t *testing.T, queue string, attrs map[string]string) *harness {
	t.Helper()
	clock := consumertest.NewClock(time.Time{})
	fake := consumertest.NewSQS(clock)
	return &harness{t: t, clock: clock, sqs: fake, url: fake.CreateQueue(queue, attrs), obs: &recorder{}}
}

func (h *harness) opts(extra []consumer.Option) []consumer.Option {
	return append([]consumer.Option{consumer.WithClock(h.clock), consumer.WithObserver(h.obs),
		consumer.WithRandom(func() float64 { return 0.5 })}, extra...)
}

// start runs a consumer of handler and waits for its first receive.
func (h *harness) start(handler consumer.Handler, opts ...consumer.Option) {
	h.t.Helper()
	c, err := consumer.New(h.sqs, h.url, handler, h.opts(opts)...)
	if err != nil {
		h.t.Fatal(err)
	}
	h.run(c)
}

// startStuck starts a consumer whose handler waits on g, ignoring its
// cancellation (gate.waiter), and waits until one handler call has begun.
func (h *harness) startStuck(g *gate, opts ...consumer.Option) {
	h.t.Helper()
	var started atomic.Int32
	h.start(g.waiter(&started), opts...)
	poll.For(h.t, 5*time.Second, func() error {
		if started.Load() != 1 {
			return fmt.Errorf("started %d", started.Load())
		}
		return nil
	})
}

func (h *harness) startBatch(handler consumer.BatchHandler, opts ...consumer.Option) {
	h.t.Helper()
	c, err := consumer.NewBatch(h.sqs, h.url, handler, h.opts(opts)...)
	if err != nil {
		h.t.Fatal(err)
	}
	h.run(c)
}

func (h *harness) run(c *consumer.Consumer) {
	h.t.Helper()
	h.c = c
	h.done = make(chan error, 1)
	go func() { _, err := c.Run(context.Background()); h.done <- err }()
	h.t.Cleanup(func() { h.stop() })
	poll.For(h.t, 5*time.Second, func() error {
		if len(h.sqs.Calls("ReceiveMessage")) == 0 {
			return fmt.Errorf("no receive yet")
		}
		return nil
	})
	h.settle()
}

// awaitReleases waits until the consumer has released n leases for reason.
func (h *harness) awaitReleases(reason consumer.Reason, n int) {
	h.t.Helper()
	poll.For(h.t, 5*time.Second, func() error {
		if got := h.obs.Reasons(consumer.EventReleased)[reason]; got != n {
			return fmt.Errorf("%s releases %d, want %d", reason, got, n)
		}
		return nil
	})
}

// settle waits until every goroutine of the test (the consumer's, the
// handlers', the fake's) is durably blocked: whatever the last clock move
// set off is done. It never moves the fake clock. It must run in a bubble.
func (h *harness) settle() {
	h.t.Helper()
	synctest.Wait()
}

// advance moves the fake clock in steps of at most step.
func (h *harness) advance(d, step time.Duration) {
	h.t.Helper()
	for d > 0 {
		s := min(d, step)
		h.settle()
		h.clock.Advance(s)
		d -= s
	}
	h.settle()
}

// advanceUntil steps the clock until cond holds, at most max.
func (h *harness) advanceUntil(max, step time.Duration, cond func() error) {
	h.t.Helper()
	var err error
	for moved := time.Duration(0); moved <= max; moved += step {
		h.settle()
		if err = cond(); err == nil {
			return
		}
		h.clock.Advance(step)
	}
	h.t.Fatalf("after %v of fake time: %v", max, err)
}

// stop shuts the consumer down (once) and returns the report. With the
// default 5 s reserve, running handlers get at most 1 s of drain.
func (h *harness) stop() consumer.Report {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
	defer cancel()
	r := h.c.Shutdown(ctx)
	select {
	case err := <-h.done:
		if err != nil {
			h.t.Errorf("Run: %v", err)
		}
		h.done <- nil
	case <-time.After(10 * time.Second):
		h.t.Errorf("Run did not return after Shutdown")
	}
	return r
}

// states returns the fake's view of the queue.
func (h *harness) states() []consumertest.MessageState { return h.sqs.Messages(h.url) }

func (h *harness) state(id string) consumertest.MessageState {
	for _, m := range h.states() {
		if m.ID == id {
			return m
		}
	}
	h.t.Fatalf("no message %s", id)
	return consumertest.MessageState{}
}

// allCalls makes throttle throttle every call of its action.
const allCalls = math.MaxInt

// throttle is a fault injector that throttles the first n calls of op.
func throttle(op string, n int) consumertest.FaultFunc {
	return func(c consumertest.Call) consumertest.Fault {
		if c.Op == op && c.N <= n {
			return consumertest.Fault{Err: consumertest.Throttled()}
		}
		return consumertest.Fault{}
	}
}

// gate is a handler helper: handlers block on it until the test opens it.
type gate struct {
	once sync.Once
	ch   chan struct{}
}

func newGate() *gate { return &gate{ch: make(chan struct{})} }

func (g *gate) open() { g.once.Do(func() { close(g.ch) }) }

// waiter is a handler that waits for the gate to open, ignoring its
// cancellation, and counts its calls in started unless started is nil.
func (g *gate) waiter(started *atomic.Int32) consumer.Handler {
	return consumer.HandlerFunc(func(context.Context, *consumer.Delivery) error {
		if started != nil {
			started.Add(1)
		}
		<-g.ch
		return nil
	})
}

// counter counts handler calls per message id.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func newCounter() *counter { return &counter{n: map[string]int{}} }

func (c *counter) add(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[id]++
	return c.n[id]
}

func (c *counter) get(id string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[id]
}

func deleteInput(url, handle string) *sqs.DeleteMessageBatchInput {
	id := "0"
	return &sqs.DeleteMessageBatchInput{QueueUrl: &url, Entries: []types.DeleteMessageBatchRequestEntry{{Id: &id, ReceiptHandle: &handle}}}
}

type typesMAV = types.MessageAttributeValue

func strp(s string) *string { return &s }

// consumertestVisibilities lists the visibility of every entry of every
// ChangeMessageVisibilityBatch call, in call order.
func consumertestVisibilities(h *harness) []int32 {
	var out []int32
	for _, c := range h.sqs.Calls("ChangeMessageVisibilityBatch") {
		out = append(out, consumertest.Visibilities(c.Input)...)
	}
	return out
}

func msgWithBody(b string) types.Message { return types.Message{Body: &b} }
