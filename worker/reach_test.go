package worker_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton/consumer"
	"github.com/baton-sqs/baton/internal/testutil/logbuf"
	"github.com/baton-sqs/baton/internal/testutil/poll"
	"github.com/baton-sqs/baton/worker"
)

// unreachableClient fails every receive while down, as a client of a
// server that is restarting does.
type unreachableClient struct {
	consumer.Client
	down atomic.Bool
}

func (c *unreachableClient) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, o ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	if c.down.Load() {
		return nil, errors.New("dial tcp: connection refused")
	}
	return c.Client.ReceiveMessage(ctx, in, o...)
}

// While the queue does not answer (a server restarting), the worker says
// once that its receives fail; when they succeed again it says so, with
// how many failed and for how long, and delivers what was sent meanwhile.
func TestWorkerSaysTheQueueIsBack(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	url := w.queue("jobs", nil)
	rec, target := w.httpTarget(ok)
	log := &logbuf.Buffer{}
	client := &unreachableClient{Client: w.cl}
	client.down.Store(true)
	wk, err := worker.New(client, w.config(worker.Config{QueueURL: url, Target: &worker.HTTPTarget{URL: target},
		Logger: slog.New(slog.NewTextHandler(log, nil))}))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- wk.Run(context.Background()) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		wk.Shutdown(ctx)
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	const failing = `msg="consumer: receives failing: a receive got no answer or an error`
	w.drive(time.Minute, step, func() error {
		if n := strings.Count(log.String(), failing); n != 1 || w.obs.Count(consumer.EventError) < 3 {
			return fmt.Errorf("%d failing lines, %d receive errors; want 1 line and 3 errors", n, w.obs.Count(consumer.EventError))
		}
		return nil
	})
	w.send(url, "m1")
	client.down.Store(false)
	w.drive(time.Minute, step, rec.reach(1))
	want := `msg="consumer: receives succeed again: the queue answers" queue=jobs failed_receives=`
	if !strings.Contains(log.String(), want) || strings.Count(log.String(), failing) != 1 {
		t.Errorf("want one %q and one %q in the log:\n%s", failing, want, log.String())
	}
}

// A worker used as a library, with a Logger and no Observer, logs the
// consumer runtime's events to its Logger, none to slog.Default: here an
// outage of the queue, said when the receives start failing and when they
// succeed again. Not parallel: it swaps the default logger.
func TestWorkerLogsOnlyToItsLogger(t *testing.T) {
	var def, log logbuf.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&def, nil)))
	defer slog.SetDefault(old)
	w := newWorld(t)
	url := w.queue("alone", nil)
	rec, target := w.httpTarget(ok)
	client := &unreachableClient{Client: w.cl}
	client.down.Store(true)
	cfg := w.config(worker.Config{QueueURL: url, Target: &worker.HTTPTarget{URL: target},
		Logger: slog.New(slog.NewTextHandler(&log, nil))})
	cfg.Observer = nil
	wk, err := worker.New(client, cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- wk.Run(context.Background()) }()
	const failing = `msg="consumer: receives failing: a receive got no answer or an error`
	w.drive(time.Minute, step, func() error {
		if !strings.Contains(log.String(), failing) {
			return fmt.Errorf("no %q line yet", failing)
		}
		return nil
	})
	w.send(url, "m1")
	client.down.Store(false)
	w.drive(time.Minute, step, rec.reach(1))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	wk.Shutdown(ctx)
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	wantLog := `msg="consumer: receives succeed again: the queue answers" queue=alone failed_receives=`
	if !strings.Contains(log.String(), wantLog) || strings.Count(log.String(), failing) != 1 {
		t.Errorf("want one %q and one %q in the log:\n%s", failing, wantLog, log.String())
	}
	if def.String() != "" {
		t.Errorf("slog.Default got lines while the worker had a Logger:\n%s", def.String())
	}
}

// The consumer runtime's start-up findings (its Doctor's warnings) reach
// the worker's log, in the runtime's words: here a lease under six times
// the attempt timeout. With the worker's observer the runtime had no
// logger, and they reached no log at all.
func TestWorkerLogsTheStartupFindings(t *testing.T) {
	var log logbuf.Buffer
	w := newWorld(t)
	url := w.queue("doctored", map[string]string{"VisibilityTimeout": "30"})
	_, target := w.httpTarget(ok)
	w.start(worker.Config{QueueURL: url, Target: &worker.HTTPTarget{URL: target},
		Logger:          slog.New(slog.NewTextHandler(&log, nil)),
		ConsumerOptions: []consumer.Option{consumer.WithAttemptTimeout(20 * time.Second)}})
	const want = `level=WARN msg="consumer: start-up check: the lease of 30s is under six times the attempt timeout 20s`
	poll.For(t, 30*time.Second, func() error {
		if !strings.Contains(log.String(), want) || !strings.Contains(log.String(), "check=visibility") {
			return fmt.Errorf("no %q line with check=visibility in the worker's log:\n%s", want, log.String())
		}
		return nil
	})
}
