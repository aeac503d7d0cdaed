package consumer_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/consumer"
	"github.com/baton-sqs/baton/internal/testutil"
)

// These tests run the consumer against an in-process Baton server through
// aws-sdk-go-v2. Server and consumers share the server's fake clock
// (sharedClock), so leases lapse on the server exactly when the consumers'
// fake time says; the tests move that clock in small steps and never sleep
// through a lease.

// sharedClock wraps the server's *clock.Fake and keeps track of the
// consumer-side timers, so a test can tell when every
// goroutine woken by a fired timer has acted on it: the runtime stops every
// timer once it has read it (and the tests' handlers do too).
type sharedClock struct {
	fc   *clock.Fake
	mu   sync.Mutex
	live map[*sharedTimer]struct{}
}

type sharedTimer struct {
	t  clock.Timer
	s  *sharedClock
	at time.Time
}

func newSharedClock(fc *clock.Fake) *sharedClock {
	return &sharedClock{fc: fc, live: map[*sharedTimer]struct{}{}}
}

func (s *sharedClock) Now() time.Time { return s.fc.Now() }

func (s *sharedClock) NewTimer(d time.Duration) clock.Timer {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := &sharedTimer{at: s.fc.Now().Add(d), t: s.fc.NewTimer(d), s: s}
	s.live[t] = struct{}{}
	return t
}

func (t *sharedTimer) C() <-chan time.Time { return t.t.C() }

func (t *sharedTimer) Stop() bool {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	delete(t.s.live, t)
	return t.t.Stop()
}

// advance moves the clock. Timers are made under the same lock, so each
// knows exactly when it fires.
func (s *sharedClock) advance(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fc.Advance(d)
}

// parked counts the clock's pending timers that are not the consumers':
// the server's long polls waiting on it.
func (s *sharedClock) parked() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.fc.Now()
	n := s.fc.Timers()
	for t := range s.live {
		if t.at.After(now) {
			n--
		}
	}
	return n
}

// unread counts timers that have fired but not been stopped: a goroutine
// woken by one (or about to be) has not yet acted on it. The channel alone
// cannot tell, since a fired timer hands its time straight to a goroutine
// already waiting on it, which may not have run yet.
func (s *sharedClock) unread() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.fc.Now()
	n := 0
	for t := range s.live {
		if !t.at.After(now) {
			n++
		}
	}
	return n
}

// tracked wraps the SDK client: it counts calls in flight (receives
// apart: they may wait in a long poll) and can lose deletes.
type tracked struct {
	consumer.Client
	inflight    atomic.Int64
	receives    atomic.Int64
	receiving   atomic.Int64
	deleteCalls atomic.Int64
	sendCalls   atomic.Int64
	dropDeletes atomic.Bool
}

func (c *tracked) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, o ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	c.receives.Add(1)
	c.receiving.Add(1)
	defer c.receiving.Add(-1)
	return c.Client.ReceiveMessage(ctx, in, o...)
}

func (c *tracked) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, o ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	c.inflight.Add(1)
	defer c.inflight.Add(-1)
	return c.Client.ChangeMessageVisibilityBatch(ctx, in, o...)
}

func (c *tracked) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, o ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	c.inflight.Add(1)
	defer c.inflight.Add(-1)
	c.deleteCalls.Add(1)
	if c.dropDeletes.Load() {
		return nil, errors.New("connection reset by peer (test: delete lost)")
	}
	return c.Client.DeleteMessageBatch(ctx, in, o...)
}

func (c *tracked) SendMessage(ctx context.Context, in *sqs.SendMessageInput, o ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	c.inflight.Add(1)
	defer c.inflight.Add(-1)
	c.sendCalls.Add(1)
	return c.Client.SendMessage(ctx, in, o...)
}

// world is a server, its shared clock and a tracked client.
type world struct {
	t     *testing.T
	srv   *testutil.Server
	clock *sharedClock
	cl    *tracked
}

func newWorld(t *testing.T) *world {
	srv := testutil.StartServer(t)
	return &world{t: t, srv: srv, clock: newSharedClock(srv.Clock), cl: &tracked{Client: srv.Client}}
}

// settle waits until every consumer goroutine woken by a fired timer has
// acted on it, no call is in flight, and every receive in flight waits in
// a long poll on the clock (not on its way, in real time, while fake time
// would pass it by). It never moves the clock.
func (w *world) settle() {
	w.t.Helper()
	for i := 0; i < 3; i++ {
		testutil.CheckFor(w.t, 10*time.Second, func() error {
			if n := w.clock.unread(); n > 0 {
				return fmt.Errorf("%d fired timers unread", n)
			}
			if n := w.cl.inflight.Load(); n > 0 {
				return fmt.Errorf("%d calls in flight", n)
			}
			if n, p := w.cl.receiving.Load(), w.clock.parked(); int(n) > p {
				return fmt.Errorf("%d receives in flight, %d long polls waiting", n, p)
			}
			return nil
		})
		runtime.Gosched()
		time.Sleep(100 * time.Microsecond)
	}
}

// drive moves the shared clock in steps until cond holds (at most max of
// fake time) and returns the fake time it took.
func (w *world) drive(max, step time.Duration, cond func() error) time.Duration {
	w.t.Helper()
	start := w.clock.Now()
	var err error
	for w.clock.Now().Sub(start) <= max {
		w.settle()
		if err = cond(); err == nil {
			return w.clock.Now().Sub(start)
		}
		w.clock.advance(step)
	}
	w.t.Fatalf("after %v of fake time: %v", max, err)
	return 0
}

// run starts a consumer and stops it when the test ends.
func (w *world) run(c *consumer.Consumer) {
	done := make(chan error, 1)
	go func() { _, err := c.Run(context.Background()); done <- err }()
	w.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
		defer cancel()
		c.Shutdown(ctx)
		if err := <-done; err != nil {
			w.t.Errorf("Run: %v", err)
		}
	})
}

func (w *world) newConsumer(url string, h consumer.Handler, obs consumer.Observer, opts ...consumer.Option) *consumer.Consumer {
	w.t.Helper()
	c, err := consumer.New(w.cl, url, h, append([]consumer.Option{consumer.WithClock(w.clock), consumer.WithObserver(obs)}, opts...)...)
	if err != nil {
		w.t.Fatal(err)
	}
	return c
}

func (w *world) sendN(url string, n int, body func(i int) string) {
	w.t.Helper()
	for i := 0; i < n; i += 10 {
		var entries []types.SendMessageBatchRequestEntry
		for j := i; j < i+10 && j < n; j++ {
			entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(j)), MessageBody: aws.String(body(j))})
		}
		out, err := w.srv.Client.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: &url, Entries: entries})
		if err != nil || len(out.Failed) > 0 {
			w.t.Fatalf("send: %v %v", err, out)
		}
	}
}

// counts returns the queue's visible and in-flight counts.
func (w *world) counts(url string) (visible, inflight int) {
	w.t.Helper()
	out, err := w.srv.Client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: &url,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
	if err != nil {
		w.t.Fatal(err)
	}
	visible, _ = strconv.Atoi(out.Attributes["ApproximateNumberOfMessages"])
	inflight, _ = strconv.Atoi(out.Attributes["ApproximateNumberOfMessagesNotVisible"])
	return visible, inflight
}

// 1. The classic incident, scaled down: handlers take three times the lease
// (9 s on a 3 s lease) and report progress; three consumers share 200
// messages. Every message is handled exactly once and no lease lapses.
func TestServerClassicIncident(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	url := w.srv.MustCreateQueue(t, "classic", map[string]string{"VisibilityTimeout": "3"})
	w.sendN(url, 200, func(i int) string { return fmt.Sprintf("job-%d", i) })
	var mu sync.Mutex
	handled := map[string]int{}
	var firstTry atomic.Int64
	obs := &recorder{}
	handler := consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
		mu.Lock()
		handled[d.ID()]++
		mu.Unlock()
		if d.ReceiveCount() == 1 {
			firstTry.Add(1)
		}
		for i := 0; i < 9; i++ { // nine seconds of work, progress every second
			tm := w.clock.NewTimer(time.Second)
			select {
			case <-tm.C():
			case <-ctx.Done():
				tm.Stop()
				return context.Cause(ctx)
			}
			tm.Stop()
			if err := d.Progress(ctx); err != nil {
				return err
			}
		}
		return nil
	})
	for i := 0; i < 3; i++ {
		w.run(w.newConsumer(url, handler, obs, consumer.WithConcurrency(10), consumer.WithAutoRenew(0),
			consumer.WithStallTimeout(3*time.Second)))
	}
	took := w.drive(5*time.Minute, 100*time.Millisecond, func() error {
		v, f := w.counts(url)
		mu.Lock()
		n := len(handled)
		mu.Unlock()
		if n != 200 || v != 0 || f != 0 {
			return fmt.Errorf("handled %d, visible %d, in flight %d", n, v, f)
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	for id, n := range handled {
		if n != 1 {
			t.Errorf("%s handled %d times, want 1", id, n)
		}
	}
	if n := firstTry.Load(); n != 200 {
		t.Errorf("deliveries with ApproximateReceiveCount 1: %d, want 200", n)
	}
	for _, k := range []consumer.EventKind{consumer.EventLeaseLost, consumer.EventLateDelete, consumer.EventStalled, consumer.EventRenewFailed} {
		if n := obs.Count(k); n != 0 {
			t.Errorf("%v events: %d, want 0", k, n)
		}
	}
	renewals := obs.Count(consumer.EventRenewed)
	if renewals < 200*3 {
		t.Errorf("renewals %d, want at least 3 per message", renewals)
	}
	t.Logf("200 messages x 9 s on 3 s leases, 3 consumers x 10 slots: %v of fake time, %d renewals, %d delete calls",
		took, renewals, w.cl.deleteCalls.Load())
}

// 2. A handler hangs without progress: it is cancelled with ErrStalled,
// its message released, and a healthy consumer handles it within the stall
// timeout plus the grace and the backoff. The hung handler here even
// ignores the cancel (the worst case), so its slot is reported stuck.
func TestServerStalledHandlerReleased(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	url := w.srv.MustCreateQueue(t, "stall", map[string]string{"VisibilityTimeout": "6"})
	w.sendN(url, 1, func(int) string { return "work" })
	const (
		stall   = 4 * time.Second
		grace   = 500 * time.Millisecond
		backoff = 2 * time.Second
		step    = 100 * time.Millisecond
	)
	causes := make(chan error, 1)
	hung := make(chan struct{})
	defer close(hung)
	got := make(chan time.Time, 1)
	obsA := &recorder{}
	a := w.newConsumer(url, consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
		got <- w.clock.Now()
		<-ctx.Done()
		causes <- context.Cause(ctx)
		<-hung
		return nil
	}), obsA, consumer.WithConcurrency(1), consumer.WithAutoRenew(0), consumer.WithStallTimeout(stall), consumer.WithGrace(grace),
		consumer.WithRetryPolicy(consumer.RetryPolicy{Base: backoff, Multiplier: 1, Jitter: consumer.NoJitter}))
	w.run(a)
	var receivedAt time.Time
	select {
	case receivedAt = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("consumer A never got the message")
	}
	handledBy := make(chan *consumer.Delivery, 1)
	var handledAt time.Time
	b := w.newConsumer(url, consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
		handledAt = w.clock.Now()
		handledBy <- d
		return nil
	}), &recorder{}, consumer.WithWaitTime(time.Second))
	w.run(b)
	var d *consumer.Delivery
	took := w.drive(time.Minute, step, func() error {
		select {
		case d = <-handledBy:
			return nil
		default:
			if d != nil {
				return nil
			}
			return fmt.Errorf("not handled by B yet")
		}
	})
	if err := <-causes; !errors.Is(err, consumer.ErrStalled) {
		t.Errorf("A's cause %v, want ErrStalled", err)
	}
	// The drive waits for every timer-woken consumer goroutine and every
	// receive on its way, so each step is seen within a step of when it is
	// due: the stall, A's release, and B's receive once it is visible.
	stalled, released := obsA.All(consumer.EventStalled), obsA.All(consumer.EventReleased)
	if len(stalled) != 1 || len(released) != 1 {
		t.Fatalf("A's stall events %d, releases %d; want 1 and 1", len(stalled), len(released))
	}
	if at, limit := stalled[0].Time.Sub(receivedAt), stall+step; at < stall || at > limit {
		t.Errorf("A saw the stall %v after it got the message, want %v to %v", at, stall, limit)
	}
	if at, limit := released[0].Time.Sub(stalled[0].Time), grace+step; at < grace || at > limit || released[0].Delay != backoff {
		t.Errorf("A released the message %v after the stall with delay %v, want %v to %v with %v", at, released[0].Delay, grace, limit, backoff)
	}
	elapsed := handledAt.Sub(receivedAt)
	if limit := stall + grace + backoff + 2*step; elapsed > limit {
		t.Errorf("B handled it %v after A got it, want within %v (stall + grace + backoff)", elapsed, limit)
	}
	if d.ReceiveCount() != 2 {
		t.Errorf("B saw receive count %d, want 2", d.ReceiveCount())
	}
	if n := obsA.Count(consumer.EventStalled); n != 1 {
		t.Errorf("A's stall events %d, want 1", n)
	}
	if n := obsA.Count(consumer.EventSlotStuck); n != 1 {
		t.Errorf("A's stuck-slot events %d, want 1", n)
	}
	if got := obsA.Reasons(consumer.EventReleased)[consumer.ReasonStalled]; got != 1 {
		t.Errorf("A's stalled releases %d, want 1", got)
	}
	t.Logf("stalled message handled by B %v (fake) after A received it; drive took %v", elapsed, took)
	w.drive(10*time.Second, step, func() error {
		if v, f := w.counts(url); v+f != 0 {
			return fmt.Errorf("queue not empty: %d visible, %d in flight", v, f)
		}
		return nil
	})
}

// 3. Shutdown with ten messages in flight and five deletes pending: every
// lease is released once the receive in flight has ended (the messages are
// visible again at once, received once: the stop cost them no receive),
// every pending delete is flushed, and the report's counts are exact.
func TestServerShutdown(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	url := w.srv.MustCreateQueue(t, "shutdown", map[string]string{"VisibilityTimeout": "30"})
	w.sendN(url, 15, func(i int) string { return fmt.Sprintf("m%d", i) })
	var started, finished atomic.Int32
	obs := &recorder{}
	c := w.newConsumer(url, consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
		started.Add(1)
		var n int
		fmt.Sscanf(d.Body(), "m%d", &n)
		if n < 5 {
			finished.Add(1)
			return nil
		}
		<-ctx.Done()
		return context.Cause(ctx)
	}), obs, consumer.WithConcurrency(20), consumer.WithReceivers(1), consumer.WithDeleteBatchWindow(time.Hour),
		consumer.WithShutdownReserve(time.Minute))
	done := make(chan error, 1)
	go func() { _, err := c.Run(context.Background()); done <- err }()
	testutil.CheckFor(t, 10*time.Second, func() error {
		// EventHandled comes once the runtime no longer counts the attempt
		// as running: the five finished ones must not look drained.
		if started.Load() != 15 || obs.Count(consumer.EventHandled) != 5 || w.cl.receives.Load() < 2 {
			return fmt.Errorf("started %d, handled %d, receives %d", started.Load(), obs.Count(consumer.EventHandled), w.cl.receives.Load())
		}
		return nil
	})
	w.settle()
	if n := w.cl.deleteCalls.Load(); n != 0 {
		t.Fatalf("delete calls before shutdown: %d, want 0", n)
	}
	// No drain: the handlers are cancelled at once; the receive's long
	// poll ends on the fake clock, which moves while Shutdown waits.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reports := make(chan consumer.Report, 1)
	go func() {
		reports <- c.Shutdown(ctx)
	}()
	var r consumer.Report
	w.drive(time.Minute, time.Second, func() error {
		select {
		case r = <-reports:
			return nil
		default:
			return errors.New("Shutdown has not returned")
		}
	})
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	r.Duration, r.Err = 0, nil
	if want := (consumer.Report{ReceivesAwaited: 1, Cancelled: 10, Released: 10, DeletesFlushed: 5}); r != want {
		t.Errorf("report %+v, want %+v", r, want)
	}
	if v, f := w.counts(url); v != 10 || f != 0 {
		t.Errorf("after shutdown: %d visible, %d in flight; want 10 and 0", v, f)
	}
	if n := w.cl.deleteCalls.Load(); n != 1 {
		t.Errorf("delete calls %d, want 1 (the five pending deletes in one batch)", n)
	}
	out, err := w.srv.Client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 10,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameApproximateReceiveCount}})
	if err != nil {
		t.Fatal(err)
	}
	var bodies []string
	for _, m := range out.Messages {
		bodies = append(bodies, *m.Body)
		if n := m.Attributes["ApproximateReceiveCount"]; n != "2" {
			t.Errorf("%s: ApproximateReceiveCount %s, want 2 (the consumer's receive and this one)", *m.Body, n)
		}
	}
	sort.Strings(bodies)
	if fmt.Sprint(bodies) != "[m10 m11 m12 m13 m14 m5 m6 m7 m8 m9]" {
		t.Errorf("released messages %v, want m5..m14", bodies)
	}
}

// 4. A batch of ten with three failures: only those three come back.
func TestServerBatchPartialFailure(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	url := w.srv.MustCreateQueue(t, "batch", map[string]string{"VisibilityTimeout": "30"})
	w.sendN(url, 10, func(i int) string { return fmt.Sprintf("m%d", i) })
	var mu sync.Mutex
	var batches [][]string
	c, err := consumer.NewBatch(w.cl, url, consumer.BatchHandlerFunc(func(ctx context.Context, b []*consumer.Delivery) []error {
		var bodies []string
		res := make([]error, len(b))
		for i, d := range b {
			bodies = append(bodies, d.Body())
			if d.ReceiveCount() == 1 && (d.Body() == "m2" || d.Body() == "m5" || d.Body() == "m7") {
				res[i] = errors.New("fail")
			}
		}
		sort.Strings(bodies)
		mu.Lock()
		batches = append(batches, bodies)
		mu.Unlock()
		return res
	}), consumer.WithClock(w.clock), consumer.WithConcurrency(1), consumer.WithBatchSize(10),
		consumer.WithRetryPolicy(consumer.RetryPolicy{Base: 5 * time.Second, Multiplier: 1, Jitter: consumer.NoJitter}))
	if err != nil {
		t.Fatal(err)
	}
	w.run(c)
	w.drive(time.Minute, 100*time.Millisecond, func() error {
		if v, f := w.counts(url); v+f != 0 {
			return fmt.Errorf("%d visible, %d in flight", v, f)
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	if len(batches) < 2 {
		t.Fatalf("batches %v, want the first and the retries", batches)
	}
	if got := fmt.Sprint(batches[0]); got != "[m0 m1 m2 m3 m4 m5 m6 m7 m8 m9]" {
		t.Errorf("first batch %s, want all ten", got)
	}
	var again []string
	for _, b := range batches[1:] {
		again = append(again, b...)
	}
	sort.Strings(again)
	if got := fmt.Sprint(again); got != "[m2 m5 m7]" {
		t.Errorf("came back %s (in %d batches), want exactly [m2 m5 m7]", got, len(batches)-1)
	}
}

// 5. The first attempt finished but its delete was lost: when the message
// comes back, the idempotency middleware (here on SQLite through
// database/sql) does not run the handler again, and the message is deleted.
func TestServerIdempotentAfterLostDelete(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	url := w.srv.MustCreateQueue(t, "idem", map[string]string{"VisibilityTimeout": "5"})
	w.sendN(url, 1, func(int) string { return "charge card 42" })
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "idem.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	store, err := consumer.NewSQLStore(db, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	w.cl.dropDeletes.Store(true)
	var runs atomic.Int32
	var counts []int
	var mu sync.Mutex
	obs := &recorder{}
	seen := consumer.Middleware(func(next consumer.Handler) consumer.Handler {
		return consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
			mu.Lock()
			counts = append(counts, d.ReceiveCount())
			mu.Unlock()
			return next.Handle(ctx, d)
		})
	})
	c := w.newConsumer(url, consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
		runs.Add(1)
		return nil
	}), obs, consumer.WithMiddleware(seen, consumer.Idempotency(store)), consumer.WithWaitTime(time.Second))
	w.run(c)
	w.drive(time.Minute, 100*time.Millisecond, func() error {
		if runs.Load() != 1 || obs.Count(consumer.EventDeleteFailed) != 1 {
			return fmt.Errorf("runs %d, failed deletes %d", runs.Load(), obs.Count(consumer.EventDeleteFailed))
		}
		return nil
	})
	w.cl.dropDeletes.Store(false) // the network heals; the lease has lapsed
	w.drive(time.Minute, 100*time.Millisecond, func() error {
		if v, f := w.counts(url); v+f != 0 {
			return fmt.Errorf("%d visible, %d in flight", v, f)
		}
		return nil
	})
	if n := runs.Load(); n != 1 {
		t.Errorf("handler runs %d, want 1", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(counts) != "[1 2]" {
		t.Errorf("deliveries' receive counts %v, want [1 2]", counts)
	}
	if n := obs.Count(consumer.EventDuplicate); n != 1 {
		t.Errorf("duplicate events %d, want 1", n)
	}
	if got := obs.Reasons(consumer.EventDeleted)[consumer.ReasonDuplicate]; got != 1 {
		t.Errorf("deletes as duplicate %d, want 1", got)
	}
}

// 6. NotReady on a standard queue re-sends instead of changing visibility,
// so ApproximateReceiveCount does not grow and the attempts left (read from
// the queue's RedrivePolicy) stay put. Snoozing by visibility, for
// contrast, spends a receive each time.
func TestServerNotReadyKeepsReceiveCount(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		opts       []consumer.Option
		wantCounts string
		wantLeft   string
	}{
		{"re-send (default)", nil, "[1 1 1 1]", "[4 4 4 4]"},
		{"by visibility", []consumer.Option{consumer.WithSnoozeByVisibility()}, "[1 2 3 4]", "[4 3 2 1]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			dlq := w.srv.MustCreateQueue(t, "dlq", nil)
			attrs, err := w.srv.Client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: &dlq,
				AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
			if err != nil {
				t.Fatal(err)
			}
			url := w.srv.MustCreateQueue(t, "snooze", map[string]string{"VisibilityTimeout": "30",
				"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":5}`, attrs.Attributes["QueueArn"])})
			w.sendN(url, 1, func(int) string { return "not yet" })
			var mu sync.Mutex
			var counts, left, ids []string
			obs := &recorder{}
			c := w.newConsumer(url, consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
				mu.Lock()
				defer mu.Unlock()
				counts = append(counts, strconv.Itoa(d.ReceiveCount()))
				left = append(left, strconv.Itoa(d.AttemptsLeft()))
				ids = append(ids, d.ID())
				if len(counts) <= 3 {
					return consumer.NotReady(2 * time.Second)
				}
				return nil
			}), obs, append([]consumer.Option{consumer.WithWaitTime(time.Second)}, tt.opts...)...)
			w.run(c)
			w.drive(time.Minute, 100*time.Millisecond, func() error {
				mu.Lock()
				n := len(counts)
				mu.Unlock()
				if v, f := w.counts(url); n < 4 || v+f != 0 {
					return fmt.Errorf("%d deliveries, %d visible, %d in flight", n, v, f)
				}
				return nil
			})
			mu.Lock()
			defer mu.Unlock()
			if got := "[" + join(counts) + "]"; got != tt.wantCounts {
				t.Errorf("ApproximateReceiveCount per delivery %s, want %s", got, tt.wantCounts)
			}
			if got := "[" + join(left) + "]"; got != tt.wantLeft {
				t.Errorf("AttemptsLeft per delivery %s, want %s", got, tt.wantLeft)
			}
			for _, id := range ids {
				if id != ids[0] {
					t.Errorf("identity changed across snoozes: %v", ids)
					break
				}
			}
		})
	}
}

func join(ss []string) string {
	out := ""
	for i, s := range ss {
		if i > 0 {
			out += " "
		}
		out += s
	}
	return out
}
