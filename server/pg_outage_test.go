package server_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton/internal/pgtest"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/internal/testutil/skipnote"
	"github.com/baton-sqs/baton/store/pgstore"
)

// TestDatabaseOutageIsServiceUnavailable: with its database down for
// longer than the store retries, a client sees HTTP 503 ServiceUnavailable
// (which SDKs retry), not 500 InternalError; once the database is back the
// same request succeeds.
func TestDatabaseOutageIsServiceUnavailable(t *testing.T) {
	skipnote.SkipUnlessLong(t, "PostgreSQL stopped under the server")
	t.Parallel()
	pg := pgtest.MustStart(t)
	store, err := pgstore.Open(context.Background(), pg.MustDatabase(t), pgstore.Options{
		RetryFor: time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := testutil.StartServer(t, testutil.Options{Store: store})
	url := srv.MustCreateQueue(t, "outage", nil)
	ctx := context.Background()

	pg.Down()
	for _, op := range []func() error{
		func() error {
			_, err := srv.Client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("x")})
			return err
		},
		func() error {
			_, err := srv.Client.ListQueues(ctx, &sqs.ListQueuesInput{})
			return err
		},
	} {
		wantAPIError(t, op(), "ServiceUnavailable", http.StatusServiceUnavailable)
	}
	if err := pg.Up(ctx); err != nil {
		t.Fatal(err)
	}
	testutil.CheckFor(t, 30*time.Second, func() error {
		_, err := srv.Client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("x")})
		return err
	})
}
