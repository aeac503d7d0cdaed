package worker

import (
	"context"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton/consumer"
)

// watchedClient is the client the worker's consumer uses: it notes when
// receives start failing and when they succeed again, so that the log
// says the queue is back after an outage (a server restarting, a network
// cut), not only each failure.
type watchedClient struct {
	consumer.Client
	w *Worker

	mu       sync.Mutex
	failures int       // receives failed in a row
	since    time.Time // when the first of them failed
}

func (c *watchedClient) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, o ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	sent := c.w.clock.Now()
	out, err := c.Client.ReceiveMessage(ctx, in, o...)
	switch {
	case err == nil:
		c.answered(sent)
	case ctx.Err() == nil:
		c.failed(err)
	}
	return out, err
}

// failed counts a failed receive; the first of a row says the receives
// fail.
func (c *watchedClient) failed(err error) {
	c.mu.Lock()
	first := c.failures == 0
	if first {
		c.since = c.w.clock.Now()
	}
	c.failures++
	c.mu.Unlock()
	if first {
		c.w.log.Warn("receives failing: a receive got no answer or an error (err says which); they are retried with a backoff, and a line says when they succeed again", "err", err)
	}
}

// answered notes a receive sent at sent that succeeded: the first after
// failures says the queue answers again, after how many and for how long
// (until that receive was sent: a long poll answers when it ends).
func (c *watchedClient) answered(sent time.Time) {
	c.mu.Lock()
	n, since := c.failures, c.since
	c.failures = 0
	c.mu.Unlock()
	if n > 0 {
		c.w.log.Info("receives succeed again: the queue answers", "failed_receives", n,
			"failing_for", max(sent.Sub(since), 0).Round(100*time.Millisecond))
	}
}
