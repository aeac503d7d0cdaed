package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/baton-sqs/baton/consumer"
	"github.com/baton-sqs/baton/consumer/consumertest"
)

// A consumer that handles every message of a queue, then shuts down. Here
// the queue is consumertest's in-memory fake; pass an *sqs.Client for Baton
// or Amazon SQS.
func ExampleNew() {
	clock := consumertest.NewClock(time.Time{})
	fake := consumertest.NewSQS(clock)
	url := fake.CreateQueue("orders", map[string]string{"VisibilityTimeout": "30"})
	fake.Send(url, "order 1", "")
	fake.Send(url, "order 2", "")

	done := make(chan struct{}, 2)
	c, err := consumer.New(fake, url, consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
		fmt.Printf("%s (attempt %d)\n", d.Body(), d.Attempt())
		done <- struct{}{}
		return nil // delete it
	}), consumer.WithClock(clock), consumer.WithConcurrency(1))
	if err != nil {
		panic(err)
	}
	go c.Run(context.Background())
	<-done
	<-done

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r := c.Shutdown(ctx)
	fmt.Printf("released %d, stuck %d\n", r.Released, r.Stuck)
	// Output:
	// order 1 (attempt 1)
	// order 2 (attempt 1)
	// released 0, stuck 0
}

// Handlers say what should happen to a message by what they return.
func ExampleHandlerFunc_outcomes() {
	var errTransient = errors.New("upstream busy")
	h := consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
		switch d.Body() {
		case "malformed":
			return consumer.Permanent(errors.New("cannot parse")) // dead-letter now
		case "obsolete":
			return consumer.Drop(nil) // delete without doing the work
		case "too early":
			return consumer.NotReady(5 * time.Minute) // snooze; spends no attempt
		case "rate limited":
			return consumer.Retry(30 * time.Second) // come back in 30 s
		case "flaky":
			return errTransient // retry after the RetryPolicy's delay
		}
		for step := 0; step < 3; step++ {
			// ... one unit of work ...
			if err := d.Progress(ctx); err != nil {
				return err // cancelled: ErrStalled, ErrLeaseLost, ...
			}
		}
		return nil // done: delete
	})
	_ = h
}

// A batch handler returns one result per message; only the failed ones
// come back.
func ExampleNewBatch() {
	clock := consumertest.NewClock(time.Time{})
	fake := consumertest.NewSQS(clock)
	url := fake.CreateQueue("events", nil)
	for _, b := range []string{"ok", "bad", "ok"} {
		fake.Send(url, b, "")
	}
	handled := make(chan struct{})
	c, _ := consumer.NewBatch(fake, url, consumer.BatchHandlerFunc(func(ctx context.Context, batch []*consumer.Delivery) []error {
		res := make([]error, len(batch))
		for i, d := range batch {
			if d.Body() == "bad" {
				res[i] = errors.New("cannot handle")
			}
		}
		close(handled)
		return res
	}), consumer.WithClock(clock), consumer.WithConcurrency(1))
	go c.Run(context.Background())
	<-handled
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c.Shutdown(ctx)
	for _, m := range fake.Messages(url) {
		fmt.Printf("%s deleted=%v\n", m.Body, m.Deleted)
	}
	// Output:
	// ok deleted=true
	// bad deleted=false
	// ok deleted=true
}

// The idempotency middleware skips work already done, keyed by message id
// by default. MemoryStore suits one process; SQLStore keeps the records in
// SQLite or PostgreSQL.
func ExampleIdempotency() {
	store := consumer.NewMemoryStore()
	h := consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
		// charge the card ...
		return nil
	})
	opts := []consumer.Option{
		consumer.WithMiddleware(consumer.Idempotency(store, consumer.WithCompletedTTL(48*time.Hour))),
	}
	_, _ = h, opts
}

// Doctor checks the settings against the queue before anything runs.
func ExampleDoctor() {
	fake := consumertest.NewSQS(consumertest.NewClock(time.Time{}))
	url := fake.CreateQueue("jobs", map[string]string{"VisibilityTimeout": "30"})
	findings, err := consumer.Doctor(context.Background(), fake, url, consumer.WithRenewAhead(45*time.Second))
	if err != nil {
		panic(err)
	}
	for _, f := range findings {
		fmt.Println(f.Severity, f.Check)
	}
	// Output:
	// error renew-ahead
	// warning wait-time
	// warning stall-timeout
	// warning redrive
}

// Delays grow exponentially with jitter and never drop below a second.
func ExampleRetryPolicy_Delay() {
	p := consumer.RetryPolicy{Base: 2 * time.Second, Max: time.Minute, Jitter: consumer.EqualJitter}
	for attempt := 1; attempt <= 6; attempt++ {
		fmt.Println(attempt, p.Delay(attempt, 0.5))
	}
	// Output:
	// 1 1.5s
	// 2 3s
	// 3 6s
	// 4 12s
	// 5 24s
	// 6 45s
}
