package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton/consumer"
)

// renewalWords wraps the tracked client and notes, for each lease renewed,
// whether its renewal call told the server the handler progressed (the
// option that adds the X-Baton-Renewal header).
type renewalWords struct {
	*tracked
	mu    sync.Mutex
	words map[string][]bool // receipt handle → one entry per renewal
}

func (c *renewalWords) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, o ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	var opts sqs.Options
	for _, f := range o {
		f(&opts)
	}
	said := len(opts.APIOptions) > 0
	c.mu.Lock()
	for _, e := range in.Entries {
		if e.VisibilityTimeout > 0 {
			c.words[*e.ReceiptHandle] = append(c.words[*e.ReceiptHandle], said)
		}
	}
	c.mu.Unlock()
	return c.tracked.ChangeMessageVisibilityBatch(ctx, in, o...)
}

// A handler kept alive with KeepAlive has its lease renewed as with
// Progress, but its renewals never say it progressed; Progress's do.
func TestKeepAliveRenewsWithoutProgressWord(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	rec := &renewalWords{tracked: w.cl, words: map[string][]bool{}}
	url := w.srv.MustCreateQueue(t, "keepalive", map[string]string{"VisibilityTimeout": "3"})
	w.sendN(url, 2, func(i int) string { return []string{"work", "beat"}[i] })
	var mu sync.Mutex
	handles := map[string]string{} // body → receipt handle
	handler := consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
		mu.Lock()
		handles[d.Body()] = *d.Message.ReceiptHandle
		mu.Unlock()
		for range 8 { // eight seconds on a three-second lease
			tm := w.clock.NewTimer(time.Second)
			select {
			case <-tm.C():
			case <-ctx.Done():
				tm.Stop()
				return context.Cause(ctx)
			}
			tm.Stop()
			alive := d.Progress
			if d.Body() == "beat" {
				alive = d.KeepAlive
			}
			if err := alive(ctx); err != nil {
				return err
			}
		}
		return nil
	})
	c, err := consumer.New(rec, url, handler, consumer.WithClock(w.clock), consumer.WithConcurrency(2),
		consumer.WithAutoRenew(0), consumer.WithStallTimeout(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	w.run(c)
	w.drive(2*time.Minute, 100*time.Millisecond, func() error {
		if v, f := w.counts(url); v != 0 || f != 0 {
			return fmt.Errorf("visible %d, in flight %d", v, f)
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for body, wantSaid := range map[string]bool{"work": true, "beat": false} {
		words := rec.words[handles[body]]
		if len(words) < 2 {
			t.Errorf("%s: %d renewals, want at least 2 (8 s of work on a 3 s lease)", body, len(words))
		}
		for i, said := range words {
			if said != wantSaid {
				t.Errorf("%s: renewal %d says progress %v, want %v", body, i+1, said, wantSaid)
			}
		}
	}
	if len(handles) != 2 {
		t.Fatal(errors.New("not both messages were handled"))
	}
}
