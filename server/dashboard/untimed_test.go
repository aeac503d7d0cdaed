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

// Leases completed by deletes whose answers were lost, retried only after
// the leases' end: the queue page counts them completed and says their
// time is not known, as the admin API and baton doctor do; with no other
// lease, it shows no lease duration (there is none, not one of 0 s), and
// its histogram does not say that no lease completed. On a FIFO queue,
// which refuses a late delete, it says they were made in time.
func TestBrowserFiguresSayCompletionsOfATimeNotKnown(t *testing.T) {
	t.Parallel()
	for _, fifo := range []bool{false, true} {
		t.Run(fmt.Sprintf("fifo=%v", fifo), func(t *testing.T) {
			t.Parallel()
			testFiguresSayCompletionsOfATimeNotKnown(t, fifo)
		})
	}
}

func testFiguresSayCompletionsOfATimeNotKnown(t *testing.T, fifo bool) {
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
	const inTime = "Of those, in time (a FIFO queue refuses a late delete)\n3"
	for _, want := range []string{"Leases completed\n3", "Of those, at a time not known (a delete's answer lost, retried after the lease's end)\n3",
		"Lease p50\n–", "Lease p99\n–", "Longest lease\n–", "Leases lapsed\n0"} {
		if !strings.Contains(text, want) {
			t.Errorf("%s's figures lack %q:\n%s", name, want, text)
		}
	}
	if strings.Contains(text, inTime) != fifo {
		t.Errorf("%s's figures: %q shown %v, want %v:\n%s", name, inTime, !fifo, fifo, text)
	}
	if caption := eval[string](t, ctx, `document.getElementById('hist-caption').innerText`); strings.Contains(caption, "No lease completed") {
		t.Errorf("the histogram's caption %q says no lease completed; 3 did, at a time not known", caption)
	}
	whether := "whether the delete was made in time the server did not see"
	if fifo {
		whether = "a FIFO queue refuses a late delete, so the delete was made in time, but when the server did not see"
	}
	if body := eval[string](t, ctx, `document.body.innerText`); !strings.Contains(body, whether) {
		t.Errorf("the page does not give the doctor's word on them (%q):\n%s", whether, body)
	}
}
