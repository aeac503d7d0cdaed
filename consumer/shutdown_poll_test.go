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
// ignores disconnects: the releases of the held messages must not feed
// that poll. Right after Run returns, with no fake time passing, every
// message is receivable by another consumer. Twenty runs.
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
				// three attempts cancelled and released, and the awaited
				// poll's one message (one of them, received again) released
				// once more.
				if r := res.r; r.ReceivesAwaited != 1 || r.ReceivesCancelled != 0 || r.LateArrivals != 1 || r.Cancelled != 3 || r.Released != 4 {
					t.Errorf("Run's report %+v, want three attempts cancelled, the receive awaited and four releases", r)
				}
				if r := c.Report(); r != res.r {
					t.Errorf("Report() = %+v, want what Run returned, %+v", r, res.r)
				}
				out, err := fake.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 10})
				if err != nil {
					t.Fatal(err)
				}
				if len(out.Messages) != 3 {
					t.Errorf("receivable after Run returned: %d of 3 (orphaned polls: %d)", len(out.Messages), deaf.orphans.Load())
				}
			})
		})
	}
}

// The same on Baton, twenty times: a consumer holding three messages, a
// long poll in flight, stopped by cancelling Run's context with no drain
// (the releases go out at once, racing the poll's cancellation). Right
// after Run returns, another consumer's receive (WaitTimeSeconds=1) gets
// all three.
func TestServerShutdownLongPollInFlight(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	for run := 0; run < 20; run++ {
		url := w.srv.MustCreateQueue(t, fmt.Sprintf("poll-%d", run), map[string]string{"VisibilityTimeout": "30"})
		w.sendN(url, 3, func(i int) string { return fmt.Sprintf("m%d", i) })
		var started atomic.Int32
		c := w.newConsumer(url, consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
			started.Add(1)
			<-ctx.Done()
			return context.Cause(ctx)
		}), &recorder{}, consumer.WithConcurrency(4), consumer.WithReceivers(1),
			consumer.WithShutdownTimeout(10*time.Second), consumer.WithShutdownReserve(10*time.Second))
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { _, err := c.Run(ctx); done <- err }()
		testutil.CheckFor(t, 10*time.Second, func() error {
			if started.Load() != 3 || w.cl.receives.Load() < 2 {
				return fmt.Errorf("started %d, receives %d", started.Load(), w.cl.receives.Load())
			}
			return nil
		})
		w.settle()
		before := w.clock.Now()
		stop()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("run %d: Run: %v", run, err)
			}
		case <-time.After(15 * time.Second):
			t.Fatalf("run %d: Run did not return", run)
		}
		rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		out, err := w.srv.Client.ReceiveMessage(rctx, &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		cancel()
		if err != nil && !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("run %d: %v", run, err)
		}
		got := 0
		if out != nil {
			got = len(out.Messages)
		}
		if got != 3 {
			v, f := w.counts(url)
			t.Errorf("run %d: receivable after Run returned: %d of 3 (%d visible, %d in flight)", run, got, v, f)
		}
		if moved := w.clock.Now().Sub(before); moved != 0 {
			t.Errorf("run %d: fake clock moved %v", run, moved)
		}
	}
}
