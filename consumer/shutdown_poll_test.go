package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/consumer"
	"github.com/baton-sqs/baton/consumer/consumertest"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/internal/testutil/poll"
)

// deafSQS is a server that does not notice a client giving up on a
// receive: the long poll goes on waiting and leases what arrives, as
// nothing in the SQS API promises otherwise. The caller gets its context's
// error at once.
type deafSQS struct {
	*consumertest.SQS
	mu      sync.Mutex
	cancels []context.CancelFunc
	// orphans counts the receives that leased messages no one got.
	orphans atomic.Int32
}

func (d *deafSQS) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opt ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	type answer struct {
		out *sqs.ReceiveMessageOutput
		err error
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	d.mu.Lock()
	d.cancels = append(d.cancels, cancel)
	d.mu.Unlock()
	ch := make(chan answer, 1)
	go func() {
		out, err := d.SQS.ReceiveMessage(sctx, in, opt...)
		if ctx.Err() != nil && err == nil && len(out.Messages) > 0 {
			d.orphans.Add(1)
		}
		ch <- answer{out, err}
	}()
	select {
	case a := <-ch:
		return a.out, a.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// close ends the server side of every receive (the test's end).
func (d *deafSQS) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.cancels {
		c()
	}
}

// A consumer stopped (its Run context cancelled, as on SIGTERM) while it
// holds three messages and has a long poll in flight, on a server that
// ignores disconnects, with too short a deadline to wait for the poll (the
// runtime's clock stands still): the poll is cancelled, and the releases
// must not feed it. They keep the messages hidden until its wait would have
// ended (the report says how long); then every message is receivable by
// another consumer, and the orphaned poll took none. Twenty runs.
func TestShutdownLongPollInFlightDeafServer(t *testing.T) {
	t.Parallel()
	for run := 0; run < 20; run++ {
		t.Run(fmt.Sprint(run), func(t *testing.T) {
			bubble(t, func(t *testing.T) {
				clock := consumertest.NewClock(time.Time{})
				fake := consumertest.NewSQS(clock)
				url := fake.CreateQueue("deaf", map[string]string{"VisibilityTimeout": "30"})
				for i := 0; i < 3; i++ {
					fake.Send(url, fmt.Sprintf("m%d", i), "")
				}
				deaf := &deafSQS{SQS: fake}
				defer deaf.close()
				var started atomic.Int32
				c, err := consumer.New(deaf, url, consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
					started.Add(1)
					<-ctx.Done()
					return context.Cause(ctx)
				}), consumer.WithClock(clock), consumer.WithConcurrency(4), consumer.WithReceivers(1),
					consumer.WithShutdownTimeout(5*time.Second), consumer.WithShutdownReserve(4*time.Second))
				if err != nil {
					t.Fatal(err)
				}
				ctx, stop := context.WithCancel(context.Background())
				type ran struct {
					r   consumer.Report
					err error
				}
				done := make(chan ran, 1)
				go func() { r, err := c.Run(ctx); done <- ran{r, err} }()
				poll.For(t, 5*time.Second, func() error {
					if started.Load() != 3 || len(fake.Calls("ReceiveMessage")) < 2 {
						return fmt.Errorf("started %d, receives %d", started.Load(), len(fake.Calls("ReceiveMessage")))
					}
					return nil
				})
				synctest.Wait()
				stop()
				res := <-done
				if res.err != nil {
					t.Fatalf("Run: %v", res.err)
				}
				// Run returns the shutdown's report, which Report keeps: the
				// poll (its wait is 10 s) cancelled, the three attempts
				// cancelled and released 11 s (the poll's wait, and a
				// second for its way to the server) after it was sent.
				want := consumer.Report{ReceivesCancelled: 1, ReleaseDelay: 11 * time.Second, Cancelled: 3, Released: 3}
				r := res.r
				r.Duration, r.Err = 0, nil
				if r != want {
					t.Errorf("Run's report %+v, want %+v", r, want)
				}
				if r := c.Report(); r != res.r {
					t.Errorf("Report() = %+v, want what Run returned, %+v", r, res.r)
				}
				clock.Advance(10 * time.Second)
				synctest.Wait() // the orphaned poll has ended
				clock.Advance(time.Second)
				out, err := fake.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 10})
				if err != nil {
					t.Fatal(err)
				}
				if len(out.Messages) != 3 || deaf.orphans.Load() != 0 {
					t.Errorf("receivable once the cancelled poll's wait is over: %d of 3 (orphaned polls: %d)", len(out.Messages), deaf.orphans.Load())
				}
			})
		})
	}
}

// The same on Baton, five times, with the time to wait for the poll: a
// consumer holding three messages, a long poll in flight, stopped by
// cancelling Run's context with no drain. The releases wait for the poll,
// which ends with nothing; right after Run returns, another consumer's
// receive gets all three, each received once before (the stop cost none of
// them a receive).
func TestServerShutdownLongPollInFlight(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	for run := 0; run < 5; run++ {
		url := w.srv.MustCreateQueue(t, fmt.Sprintf("poll-%d", run), map[string]string{"VisibilityTimeout": "30"})
		w.sendN(url, 3, func(i int) string { return fmt.Sprintf("m%d", i) })
		var started atomic.Int32
		c := w.newConsumer(url, consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
			started.Add(1)
			<-ctx.Done()
			return context.Cause(ctx)
		}), &recorder{}, consumer.WithConcurrency(4), consumer.WithReceivers(1),
			consumer.WithShutdownTimeout(time.Minute), consumer.WithShutdownReserve(time.Minute))
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan consumer.Report, 1)
		go func() {
			r, err := c.Run(ctx)
			if err != nil {
				t.Errorf("run %d: Run: %v", run, err)
			}
			done <- r
		}()
		testutil.CheckFor(t, 10*time.Second, func() error {
			if started.Load() != 3 || w.cl.receives.Load() < 2 {
				return fmt.Errorf("started %d, receives %d", started.Load(), w.cl.receives.Load())
			}
			return nil
		})
		w.settle()
		stop()
		var r consumer.Report
		w.drive(time.Minute, time.Second, func() error {
			select {
			case r = <-done:
				return nil
			default:
				return errors.New("Run has not returned")
			}
		})
		r.Duration = 0
		if want := (consumer.Report{ReceivesAwaited: 1, Cancelled: 3, Released: 3}); r != want {
			t.Errorf("run %d: report %+v, want %+v", run, r, want)
		}
		out, err := w.srv.Client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 10,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameApproximateReceiveCount}})
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if len(out.Messages) != 3 {
			v, f := w.counts(url)
			t.Errorf("run %d: receivable after Run returned: %d of 3 (%d visible, %d in flight)", run, len(out.Messages), v, f)
		}
		for _, m := range out.Messages {
			if n := m.Attributes["ApproximateReceiveCount"]; n != "2" {
				t.Errorf("run %d: %s: ApproximateReceiveCount %s, want 2 (the consumer's receive and this one)", run, *m.Body, n)
			}
		}
	}
}

// A stop costs a message at most the receive it was held under. Ten
// receivers long-poll (20 s) while one holds the queue's only message; the
// consumer is stopped, its handler cancelled after a 5 s drain, while the
// polls still wait. The release must wait for them: released at once, the
// message would be taken by each dying poll in turn (each a receive of the
// redrive budget) and dead-lettered after five. Four consumers in turn hold
// it and stop: its receive count grows by exactly one a stop, and it never
// reaches the dead-letter queue.
func TestShutdownCostsAtMostTheHeldReceive(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		clock := consumertest.NewClock(time.Time{})
		fake := consumertest.NewSQS(clock)
		dlq := fake.CreateQueue("held-dlq", nil)
		h := &harness{t: t, clock: clock, sqs: fake, obs: &recorder{}, url: fake.CreateQueue("held", map[string]string{
			"VisibilityTimeout": "60",
			"RedrivePolicy":     `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:held-dlq","maxReceiveCount":5}`})}
		id := h.sqs.Send(h.url, "x", "")
		for stop := 1; stop <= 4; stop++ {
			var started atomic.Int32
			before := len(fake.Calls("ReceiveMessage"))
			h.start(consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
				started.Add(1)
				<-ctx.Done()
				return context.Cause(ctx)
			}), consumer.WithConcurrency(100), consumer.WithReceivers(10), consumer.WithWaitTime(20*time.Second),
				consumer.WithShutdownReserve(25*time.Second))
			poll.For(t, 5*time.Second, func() error {
				if n := len(fake.Calls("ReceiveMessage")) - before; started.Load() != 1 || n < 11 {
					return fmt.Errorf("started %d, receives %d, want 1 and the ten receivers polling again", started.Load(), n)
				}
				return nil
			})
			h.settle()
			r := awaitReportTogether(h, shutdownAsync(h, 30*time.Second), 500*time.Millisecond)
			r.Duration = 0
			if want := (consumer.Report{ReceivesAwaited: 10, Cancelled: 1, Released: 1}); r != want {
				t.Errorf("stop %d: report %+v, want %+v", stop, r, want)
			}
			if m := h.state(id); m.Receives != stop || m.InFlight {
				t.Fatalf("stop %d: message received %d times, in flight %v; want %d receives, one a stop, and visible", stop, m.Receives, m.InFlight, stop)
			}
			if n := len(fake.Messages(dlq)); n != 0 {
				t.Fatalf("stop %d: %d messages dead-lettered, want none", stop, n)
			}
		}
	})
}

// A lease kept for the stop's release after its handler returned is no
// longer that handler's: its renewals (here one, at 10 s, while the poll
// waits 20 s) must not renew the idempotency claim the handler gave up
// (the store refuses it: an error at WARN in every such shutdown).
func TestShutdownKeptLeaseLeavesIdempotencyAlone(t *testing.T) {
	t.Parallel()
	bubble(t, func(t *testing.T) {
		h := newHarness(t, "keptidem", map[string]string{"VisibilityTimeout": "15"})
		id := h.sqs.Send(h.url, "x", "")
		var started atomic.Int32
		h.start(consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
			started.Add(1)
			<-ctx.Done()
			return context.Cause(ctx)
		}), consumer.WithMiddleware(consumer.Idempotency(consumer.NewMemoryStore())), consumer.WithWaitTime(20*time.Second),
			consumer.WithReceivers(1), consumer.WithShutdownReserve(35*time.Second))
		poll.For(t, 5*time.Second, func() error {
			if started.Load() != 1 || len(h.sqs.Calls("ReceiveMessage")) < 2 {
				return fmt.Errorf("started %d, receives %d", started.Load(), len(h.sqs.Calls("ReceiveMessage")))
			}
			return nil
		})
		h.settle()
		r := awaitReportTogether(h, shutdownAsync(h, 40*time.Second), 500*time.Millisecond)
		if r.Released != 1 || r.ReleaseFailed != 0 || r.LateArrivals != 0 {
			t.Errorf("report %+v, want the message released once", r)
		}
		if n := h.obs.Count(consumer.EventRenewed); n == 0 {
			t.Errorf("no renewal while the lease was kept: the test does not test what it says")
		}
		if errs := h.obs.All(consumer.EventError); len(errs) != 0 {
			t.Errorf("errors %v, want none", errs)
		}
		if m := h.state(id); m.InFlight || m.Receives != 1 {
			t.Errorf("message in flight %v, received %d times; want released after one receive", m.InFlight, m.Receives)
		}
	})
}
