package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/store/memstore"
)

// errStoreDown is a storeDown's failure: baton.ErrUnavailable, as a
// database store's once its retries give up.
var errStoreDown = fmt.Errorf("%w: the test's store is down", baton.ErrUnavailable)

// storeDown is a memory store whose reads of queues and counts fail while
// queuesDown (its database away), and whose counts alone fail while
// statsDown.
type storeDown struct {
	*memstore.Store
	queuesDown, statsDown atomic.Bool
}

func (s *storeDown) QueueGet(ctx context.Context, region, account, name string) (*baton.Queue, error) {
	if s.queuesDown.Load() {
		return nil, errStoreDown
	}
	return s.Store.QueueGet(ctx, region, account, name)
}

func (s *storeDown) QueueList(ctx context.Context, p baton.QueueListParams) ([]*baton.Queue, error) {
	if s.queuesDown.Load() {
		return nil, errStoreDown
	}
	return s.Store.QueueList(ctx, p)
}

func (s *storeDown) MessageStats(ctx context.Context, p baton.MessageStatsParams) (baton.MessageStats, error) {
	if s.queuesDown.Load() || s.statsDown.Load() {
		return baton.MessageStats{}, errStoreDown
	}
	return s.Store.MessageStats(ctx, p)
}

// startOnStoreDown starts a server on a storeDown, up, with a queue "q"
// holding a message.
func startOnStoreDown(t *testing.T) (*testutil.Server, *storeDown) {
	t.Helper()
	st := &storeDown{Store: memstore.New()}
	srv := testutil.StartServer(t, testutil.Options{Store: st})
	url := srv.MustCreateQueue(t, "q", nil)
	if _, err := srv.Client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("m")}); err != nil {
		t.Fatal(err)
	}
	return srv, st
}

// The doctor's report and a message's lease history cannot name the queue
// while the store is unavailable: they answer 503 ServiceUnavailable, as
// every other admin view does, not 500 InternalError.
func TestDoctorDuringOutage(t *testing.T) {
	t.Parallel()
	srv, st := startOnStoreDown(t)
	st.queuesDown.Store(true)
	for _, path := range []string{"/admin/api/queues/q/leases", "/admin/api/queues/q/messages/m/history"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		var body struct{ Error, Code string }
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		if resp.StatusCode != http.StatusServiceUnavailable || body.Code != "ServiceUnavailable" {
			t.Errorf("GET %s with the store down: %d %+v, want 503 ServiceUnavailable", path, resp.StatusCode, body)
		}
	}
}

// /metrics while the store is unavailable answers what it knows, the count
// of requests answered 503 among it, and says that the per-queue series
// could not be read (baton_queue_series_read 0) instead of failing whole
// with a 500; it gives no per-queue figure, and leaves no queue out
// silently when the store lists the queues but cannot count one.
func TestMetricsDuringOutage(t *testing.T) {
	t.Parallel()
	srv, st := startOnStoreDown(t)
	for _, down := range []*atomic.Bool{&st.queuesDown, &st.statsDown} {
		down.Store(true)
		_, err := testutil.NewClient(srv.URL).GetQueueUrl(context.Background(), &sqs.GetQueueUrlInput{QueueName: aws.String("q")})
		if down == &st.queuesDown {
			wantAPIError(t, err, "ServiceUnavailable", http.StatusServiceUnavailable)
		}
		fams := scrape(t, srv.URL) // fails the test unless 200
		if v := value(t, fams, "baton_queue_series_read", nil).GetGauge().GetValue(); v != 0 {
			t.Errorf("baton_queue_series_read with the store down: %v, want 0", v)
		}
		for _, name := range []string{"baton_queue_messages", "baton_queue_oldest_message_age_seconds", "baton_messages_sent_total"} {
			if _, ok := fams[name]; ok {
				t.Errorf("%s answered with the store down", name)
			}
		}
		value(t, fams, "baton_requests_total", map[string]string{"action": "GetQueueUrl", "code": "ServiceUnavailable"})
		down.Store(false)
	}

	fams := scrape(t, srv.URL)
	if v := value(t, fams, "baton_queue_series_read", nil).GetGauge().GetValue(); v != 1 {
		t.Errorf("baton_queue_series_read with the store back: %v, want 1", v)
	}
	if v := value(t, fams, "baton_queue_messages", map[string]string{"queue": "q", "state": "visible"}).GetGauge().GetValue(); v != 1 {
		t.Errorf("visible messages with the store back: %v, want 1", v)
	}
}
