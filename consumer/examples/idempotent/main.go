// Command idempotent consumes a queue at most once per message to success,
// keeping its idempotency records in SQLite through database/sql (the same
// consumer.SQLStore works on PostgreSQL with a pgx or lib/pq *sql.DB). A
// message whose delete was lost, or that SQS delivers twice, is not
// handled again.
//
//	BATON_ENDPOINT=http://localhost:9324 QUEUE=payments go run ./consumer/examples/idempotent
package main

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	_ "modernc.org/sqlite"

	"github.com/baton-sqs/baton/consumer"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "idempotent:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	db, err := sql.Open("sqlite", "file:"+env("DB", "idempotency.db")+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)")
	if err != nil {
		return err
	}
	defer db.Close()
	store, err := consumer.NewSQLStore(db, "")
	if err != nil {
		return err
	}
	if err := store.Migrate(ctx); err != nil {
		return err
	}
	go prune(ctx, store)

	client := sqs.New(sqs.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(env("BATON_ENDPOINT", "http://localhost:9324")),
		Credentials:  credentials.NewStaticCredentialsProvider("baton", "baton", ""),
	})
	name := env("QUEUE", "payments")
	url, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: &name})
	if err != nil {
		return fmt.Errorf("find queue %s: %w", name, err)
	}
	c, err := consumer.New(client, *url.QueueUrl, consumer.HandlerFunc(charge),
		consumer.WithMiddleware(consumer.Idempotency(store, consumer.WithCompletedTTL(7*24*time.Hour))))
	if err != nil {
		return err
	}
	_, err = c.Run(ctx)
	return err
}

// charge stands for work that must not happen twice. Writes it makes
// elsewhere should carry d.Lease().Epoch() so a store can refuse a late
// writer whose lease was lost.
func charge(ctx context.Context, d *consumer.Delivery) error {
	slog.Info("charging", "id", d.ID(), "epoch", d.Lease().Epoch(), "body", d.Body())
	return nil
}

// prune deletes expired idempotency records once an hour.
func prune(ctx context.Context, store *consumer.SQLStore) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if n, err := store.Prune(ctx, now); err != nil {
				slog.Warn("prune", "err", err)
			} else if n > 0 {
				slog.Info("pruned", "records", n)
			}
		}
	}
}

func env(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
