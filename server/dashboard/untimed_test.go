package dashboard_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/store/memstore"
)

// deletesLost is a memory store whose deletes, while losing, lose their
// answer when they delete: the message is deleted and the call fails
// (503, the outcome unknown), as a database store's does when the
// database fails over between the commit and its answer.
type deletesLost struct {
	*memstore.Store
	losing atomic.Bool
}

func (s *deletesLost) MessageDeleteBatch(ctx context.Context, p baton.MessageDeleteBatchParams) ([]baton.LeaseOutcome, error) {
	outs, err := s.Store.MessageDeleteBatch(ctx, p)
	if err == nil && s.losing.Load() && len(outs) > 0 && outs[0].Result == baton.LeaseCurrent {
		return nil, fmt.Errorf("%w: the test's store lost the answer", baton.ErrUnavailable)
	}
	return outs, err
}

// Leases completed by deletes whose answers were lost (503), retried only
// after the leases' end: the server saw the first attempts, within the
// leases, so the queue page counts them completed then, with the handlers'
// time to them (25 s), none at a time not known and none lapsed, as the
// admin API and baton doctor do. (A completion at a time not known comes
// only of an attempt no node saw: a restart between it and its retry, a
// node of an earlier build.)
func TestBrowserFiguresLostDeletesAtFirstAttempt(t *testing.T) {
	t.Parallel()
	for _, fifo := range []bool{false, true} {
		t.Run(fmt.Sprintf("fifo=%v", fifo), func(t *testing.T) {
			t.Parallel()
			testFiguresLostDeletesAtFirstAttempt(t, fifo)
		})
	}
}

func testFiguresLostDeletesAtFirstAttempt(t *testing.T, fifo bool) {
	st := &deletesLost{Store: memstore.New()}
	srv := testutil.StartServer(t, testutil.Options{Store: st})
	name, attrs := "q", map[string]string{"VisibilityTimeout": "30"}
	if fifo {
		name, attrs["FifoQueue"], attrs["ContentBasedDeduplication"] = "q.fifo", "true", "true"
	}
	url := srv.MustCreateQueue(t, name, attrs)
	for i := range 3 {
		in := &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String(fmt.Sprint("job ", i))}
		if fifo {
			in.MessageGroupId = aws.String(fmt.Sprint("g", i))
		}
		if _, err := srv.Client.SendMessage(bg, in); err != nil {
			t.Fatal(err)
		}
	}
	msgs := receive(t, srv, url, 3)
	at(srv, 25)
	st.losing.Store(true)
	for _, m := range msgs {
		if _, err := srv.Client.DeleteMessage(bg, &sqs.DeleteMessageInput{QueueUrl: &url, ReceiptHandle: m.ReceiptHandle}); err == nil {
			t.Fatal("a delete whose answer was lost succeeded")
		}
	}
	st.losing.Store(false)
	at(srv, 45) // the retries come after the leases' end
	for _, m := range msgs {
		deleteMessage(t, srv, url, m)
	}

	ctx := tab(t, 1280, 900, nil)
	navigate(t, ctx, srv.URL+"/ui/queues/"+name)
	waitFor(t, ctx, name+"'s figures", `document.getElementById('figures').innerText.includes('Leases completed')`)
	text := eval[string](t, ctx, `document.getElementById('figures').innerText`)
	for _, want := range []string{"Leases completed\n3", "Of those, at a time not known (a delete's answer lost, retried after the lease's end)\n0",
		"Lease p50\n25s", "Longest lease\n25s", "Leases lapsed\n0"} {
		if !strings.Contains(text, want) {
			t.Errorf("%s's figures lack %q:\n%s", name, want, text)
		}
	}
	if body := eval[string](t, ctx, `document.body.innerText`); strings.Contains(body, "the server did not see") {
		t.Errorf("the page says the time of the deletes is not known:\n%s", body)
	}
}
