package dashboard_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton/internal/testutil"
)

// The classic incident, and then B's late delete with its old receipt: A's
// had deleted the message, so B's succeeds (as on SQS) and deletes
// nothing. The message page says so, not that B deleted the message.
func TestBrowserLateDeleteAlreadyDeleted(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	url := srv.MustCreateQueue(t, "slow", map[string]string{"VisibilityTimeout": "30"})
	send(t, srv, url, 1)
	a := receive(t, srv, url, 1)[0]
	at(srv, 31)
	b := receive(t, srv, url, 1)[0]
	at(srv, 90)
	deleteMessage(t, srv, url, a)
	at(srv, 121)
	deleteMessage(t, srv, url, b)
	ctx := tab(t, 1280, 900, nil)
	navigate(t, ctx, srv.URL+"/ui/queues/slow/messages/"+*a.MessageId)
	waitFor(t, ctx, "the timeline", `document.querySelectorAll('#timeline .tl-lane').length === 2`)
	rows := eval[[]string](t, ctx, `[...document.querySelectorAll('#events tr[data-kind="late-delete"]')].map(r => r.textContent)`)
	if len(rows) != 2 || strings.Contains(rows[0], "already deleted") || !strings.Contains(rows[1], "the message was already deleted: it deleted nothing") {
		t.Errorf("late delete rows = %q", rows)
	}
	story := eval[string](t, ctx, `document.getElementById('story').textContent`)
	if !strings.Contains(story, "Lease 2's holder tried to delete the message 60s after that lease had expired") ||
		!strings.Contains(story, "the message was already deleted: it deleted nothing.") {
		t.Errorf("story = %q", story)
	}
}

// The queue page's figures count the deletes that deleted nothing apart
// from the completed leases, as the admin API does: on a standard queue a
// late delete whose message was already deleted, on a FIFO queue a late
// delete refused. The lease durations are of every lease whose handler
// finished, those included: a FIFO queue whose only delete was refused
// still shows how long its handler ran.
func TestBrowserFiguresCountDeletesThatDeletedNothing(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	slow := srv.MustCreateQueue(t, "slow", map[string]string{"VisibilityTimeout": "30"})
	send(t, srv, slow, 1)
	a := receive(t, srv, slow, 1)[0]
	at(srv, 31)
	deleteMessage(t, srv, slow, receive(t, srv, slow, 1)[0])
	at(srv, 90)
	deleteMessage(t, srv, slow, a) // late, the message already deleted

	fifo := srv.MustCreateQueue(t, "slow.fifo", map[string]string{"VisibilityTimeout": "30", "FifoQueue": "true", "ContentBasedDeduplication": "true"})
	if _, err := srv.Client.SendMessage(bg, &sqs.SendMessageInput{QueueUrl: &fifo, MessageBody: aws.String("job"), MessageGroupId: aws.String("g")}); err != nil {
		t.Fatal(err)
	}
	late := receive(t, srv, fifo, 1)[0]
	at(srv, 140)
	if _, err := srv.Client.DeleteMessage(bg, &sqs.DeleteMessageInput{QueueUrl: &fifo, ReceiptHandle: late.ReceiptHandle}); err == nil {
		t.Fatal("a FIFO queue deleted by the receipt of a lapsed lease")
	}

	ctx := tab(t, 1280, 900, nil)
	navigate(t, ctx, srv.URL+"/ui/queues/slow")
	waitFor(t, ctx, "slow's figures", `document.getElementById('figures').innerText.includes('Leases completed')`)
	text := eval[string](t, ctx, `document.getElementById('figures').innerText`)
	for _, want := range []string{"Leases completed\n1", "Deletes of messages already deleted (they deleted nothing)\n1", "Late deletes refused (their messages run again)\n0", "Longest lease\n90s"} {
		if !strings.Contains(text, want) {
			t.Errorf("slow's figures lack %q:\n%s", want, text)
		}
	}
	navigate(t, ctx, srv.URL+"/ui/queues/slow.fifo")
	waitFor(t, ctx, "slow.fifo's figures", `document.getElementById('figures').innerText.includes('Leases completed')`)
	text = eval[string](t, ctx, `document.getElementById('figures').innerText`)
	for _, want := range []string{"Leases completed\n0", "Late deletes refused (their messages run again)\n1", "Deletes of messages already deleted (they deleted nothing)\n0"} {
		if !strings.Contains(text, want) {
			t.Errorf("slow.fifo's figures lack %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "Longest lease\n–") {
		t.Errorf("slow.fifo's longest lease shown as none, though its refused late delete's handler ran 140 s:\n%s", text)
	}
}
