// Command worker consumes a queue with package consumer: it logs each
// message, reports progress while it works, serves Prometheus metrics, and
// shuts down cleanly on SIGINT or SIGTERM (releasing what it holds).
//
//	BATON_ENDPOINT=http://localhost:9324 QUEUE=jobs go run ./consumer/examples/worker
//
// Against Amazon SQS, leave BATON_ENDPOINT empty and set AWS_REGION and the
// usual credentials variables.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton/consumer"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	client := newClient()
	name := env("QUEUE", "jobs")
	url, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: &name})
	if err != nil {
		return fmt.Errorf("find queue %s: %w", name, err)
	}

	metrics := consumer.NewMetrics()
	go func() {
		mux := http.NewServeMux()
		mux.Handle("/metrics", metrics)
		_ = http.ListenAndServe(env("METRICS_ADDR", "127.0.0.1:9464"), mux)
	}()
	c, err := consumer.New(client, *url.QueueUrl, consumer.HandlerFunc(handle),
		consumer.WithConcurrency(16),
		consumer.WithObserver(metrics),
		// With an observer, the runtime logs only when given a logger:
		// lost leases, stalled handlers, failed calls, start-up warnings
		// and the shutdown summary.
		consumer.WithLogger(slog.Default()),
		consumer.WithShutdownTimeout(30*time.Second),
	)
	if err != nil {
		return err
	}
	slog.Info("consuming", "queue", *url.QueueUrl)
	// Run returns the report of the shutdown that ctx's cancellation
	// starts (it is logged too).
	r, err := c.Run(ctx)
	if err != nil {
		return err
	}
	if r.ReleaseFailed > 0 || r.DeleteFailed > 0 {
		return fmt.Errorf("shutdown left work behind: %+v", r)
	}
	return nil
}

// handle pretends to work on a message for a few seconds, reporting
// progress each second so its lease is kept while it is alive.
func handle(ctx context.Context, d *consumer.Delivery) error {
	slog.Info("handling", "id", d.ID(), "attempt", d.Attempt(), "attempts_left", d.AttemptsLeft(), "body", d.Body())
	if d.Body() == "" {
		return consumer.Drop(errors.New("empty body"))
	}
	for i := 0; i < 3; i++ {
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		if err := d.Progress(ctx); err != nil {
			return err
		}
	}
	return nil
}

func newClient() *sqs.Client {
	o := sqs.Options{Region: env("AWS_REGION", "us-east-1")}
	if ep := os.Getenv("BATON_ENDPOINT"); ep != "" {
		o.BaseEndpoint = aws.String(ep)
		o.Credentials = credentials.NewStaticCredentialsProvider(env("AWS_ACCESS_KEY_ID", "baton"), env("AWS_SECRET_ACCESS_KEY", "baton"), "")
	} else {
		o.Credentials = credentials.NewStaticCredentialsProvider(os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY"), os.Getenv("AWS_SESSION_TOKEN"))
	}
	return sqs.New(o)
}

func env(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
