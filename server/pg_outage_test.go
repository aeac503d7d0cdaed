package server_test

import (
	"context"
	"errors"
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
// (which SDKs retry), not 500 InternalError, a long poll of an empty queue
// included, and so do the doctor's report and /metrics' per-queue series
// (baton_queue_series_read 0); once the database is back the same request
// succeeds.
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

	// A long poll of the empty queue, asleep when the database goes.
	polled := make(chan error, 1)
	timers := srv.Clock.Timers()
	go func() {
		out, err := testutil.NewClient(srv.URL).ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 5})
		if err == nil && len(out.Messages) == 0 {
			err = errors.New("answered empty")
		}
		polled <- err
	}()
	srv.WaitForTimers(t, timers+1)

	pg.Down()
	// Its wait over, the empty queue's long poll is answered 503, not
	// empty: the database could not say the queue had nothing (another
	// node may have sent meanwhile).
	srv.Clock.Advance(5 * time.Second)
	select {
	case err := <-polled:
		wantAPIError(t, err, "ServiceUnavailable", http.StatusServiceUnavailable)
	case <-time.After(30 * time.Second):
		t.Fatal("the long poll was not answered within 30 s of its wait's end")
	}
	// /metrics answers, without the per-queue series it cannot read; the
	// doctor's report answers 503.
	fams := scrape(t, srv.URL)
	if v := value(t, fams, "baton_queue_series_read", nil).GetGauge().GetValue(); v != 0 {
		t.Errorf("baton_queue_series_read with the database down: %v, want 0", v)
	}
	if resp, err := http.Get(srv.URL + "/admin/api/queues/outage/leases"); err != nil {
		t.Error(err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("the doctor's report with the database down: %d, want 503", resp.StatusCode)
		}
	}
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
