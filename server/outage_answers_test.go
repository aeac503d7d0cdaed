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
