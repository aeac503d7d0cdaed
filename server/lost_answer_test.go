package server_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/server"
	"github.com/baton-sqs/baton/store/memstore"
)

// deletesLost is a memory store whose deletes, while losing, lose their
// answer when they delete: the message is deleted and the call fails, as
// a database store's does when the database fails over between the commit
// and its answer (503, the outcome unknown). A retry finds the message
// gone, and is answered. lost counts the answers lost.
type deletesLost struct {
	*memstore.Store
	losing atomic.Bool
	lost   atomic.Int32
}

func (s *deletesLost) MessageDeleteBatch(ctx context.Context, p baton.MessageDeleteBatchParams) ([]baton.LeaseOutcome, error) {
	outs, err := s.Store.MessageDeleteBatch(ctx, p)
	if err == nil && s.losing.Load() && len(outs) > 0 && outs[0].Result == baton.LeaseCurrent {
		s.lost.Add(1)
		return nil, errStoreDown
	}
	return outs, err
}

// retrying makes a call retry as the SDK does by default (a 503 is
// retried), without waiting between attempts.
func retrying(o *sqs.Options) {
	o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
		so.MaxAttempts = 3
		so.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
	})
}

// threeLeased starts a server on a store that can lose the answers of
// deletes, with queue "q" (30 s leases) and three of its messages received.
func threeLeased(t *testing.T) (*deletesLost, *testutil.Server, string, *sqs.ReceiveMessageOutput) {
	t.Helper()
	st := &deletesLost{Store: memstore.New()}
	srv := testutil.StartServer(t, testutil.Options{Store: st})
	url := srv.MustCreateQueue(t, "q", map[string]string{"VisibilityTimeout": "30"})
	for range 3 {
		if _, err := srv.Client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("job")}); err != nil {
			t.Fatal(err)
		}
	}
	out, err := srv.Client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 10})
	if err != nil || len(out.Messages) != 3 {
		t.Fatalf("received %v, %v", out, err)
	}
	return st, srv, url, out
}

// Deletes whose answers were lost, retried by the SDK: each retry finds its
// message deleted, and SQS answers it with success. The consumer did
// everything right: the report is healthy, /metrics counts three
// messages deleted, and each message's history ends in its lease's
// delete, not in a delete that found the message already deleted; nor do
// the leases lapse afterward.
func TestDeleteAnswerLostRetriedBySDK(t *testing.T) {
	t.Parallel()
	st, srv, url, out := threeLeased(t)
	step(srv, 5)
	st.losing.Store(true)
	for _, m := range out.Messages {
		if _, err := srv.Client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &url, ReceiptHandle: m.ReceiptHandle}, retrying); err != nil {
			t.Fatalf("delete, retried: %v", err)
		}
	}
	st.losing.Store(false)
	if n := st.lost.Load(); n != 3 {
		t.Fatalf("%d deletes lost their answer, want 3", n)
	}
	check := func(when string) {
		t.Helper()
		rep := leaseReport(t, srv, "q")
		if rep.Diagnosis != "healthy" || rep.LeasesCompleted != 3 || rep.LeasesTimed != 3 || rep.LeasesCompletedTimeUnknown != 0 || rep.DeletesAlreadyDeleted != 0 || rep.ExpiredLeases != 0 || rep.LateCompletions != 0 {
			t.Errorf("%s: report %+v; want healthy, 3 leases completed, none already deleted, lapsed or late", when, rep)
		}
		q := map[string]string{"queue": "q", "account": testutil.Account}
		if got := value(t, scrape(t, srv.URL), "baton_messages_deleted_total", q).Counter.GetValue(); got != 3 {
			t.Errorf("%s: /metrics deleted %v, want 3", when, got)
		}
		for _, m := range out.Messages {
			var h server.MessageHistoryJSON
			getJSON(t, srv.URL+"/admin/api/queues/q/messages/"+*m.MessageId+"/history", &h)
			if last := h.Events[len(h.Events)-1]; last.Kind != "delete" || last.AlreadyDeleted {
				t.Errorf("%s: history %+v, want it to end in its lease's delete", when, h.Events)
			}
		}
	}
	check("after the deletes")
	step(srv, 100)
	if _, err := srv.Client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url}); err != nil { // polls on
		t.Fatal(err)
	}
	check("after the leases' end")
}

// A delete whose answer was lost (503), retried only after the lease's end:
// the lease is completed (and counted deleted) when its first attempt came,
// which the server saw and answered 503: in time, with the handler's time
// to it. The admin API says so, and the lease-duration histogram counts
// that time, its count agreeing with its buckets. (A lease completed at a
// time not known, whose first attempt the server did not see, is left out
// of the histogram, as its help says.)
func TestDeleteAnswerLostRetriedAfterLeaseEnd(t *testing.T) {
	t.Parallel()
	st, srv, url, out := threeLeased(t)
	step(srv, 25)
	st.losing.Store(true)
	for _, m := range out.Messages {
		if err := deleteMessage(srv.Client, url, m.ReceiptHandle); err == nil {
			t.Fatal("a delete whose answer was lost succeeded")
		}
	}
	st.losing.Store(false)
	step(srv, 45) // the SDK's retries come after the database is back
	for _, m := range out.Messages {
		if err := deleteMessage(srv.Client, url, m.ReceiptHandle); err != nil {
			t.Fatalf("the retry: %v", err)
		}
	}
	rep := leaseReport(t, srv, "q")
	if rep.Diagnosis != "healthy" || rep.LeasesCompleted != 3 || rep.LeasesCompletedTimeUnknown != 0 || rep.LeasesTimed != 3 || rep.DeletesAlreadyDeleted != 0 ||
		rep.ExpiredLeases != 0 || rep.LateCompletions != 0 || rep.LeaseMaxSeconds != 25 {
		t.Errorf("report %+v; want healthy, 3 leases completed at their first attempt (25 s), none lapsed or late", rep)
	}
	fams := scrape(t, srv.URL)
	q := map[string]string{"queue": "q", "account": testutil.Account}
	if got := value(t, fams, "baton_messages_deleted_total", q).Counter.GetValue(); got != 3 {
		t.Errorf("/metrics deleted %v, want 3", got)
	}
	if help := fams["baton_lease_duration_seconds"].GetHelp(); !strings.Contains(help, "completed at a time not known") || !strings.Contains(help, "left out") {
		t.Errorf("the lease-duration histogram's help %q does not say it leaves out the leases completed at a time not known", help)
	}
	h := value(t, fams, "baton_lease_duration_seconds", q).Histogram
	if inf := h.Bucket[len(h.Bucket)-1].GetCumulativeCount(); h.GetSampleCount() != 3 || inf != 3 || h.GetSampleSum() != 75 {
		t.Errorf("lease histogram count %d, at most 12 h %d, sum %v; want 3 of 25 s", h.GetSampleCount(), inf, h.GetSampleSum())
	}
}
