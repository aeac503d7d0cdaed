package dashboard_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/chromedp/chromedp"

	"github.com/baton-sqs/baton/internal/testutil"
)

// rowsJS is the message ids the messages table lists, in order.
const rowsJS = `Array.from(document.querySelectorAll('#browse tbody tr')).map((tr) => tr._m.message_id).join(' ')`

// rowButton is JavaScript that clicks the button of the messages table's row for id.
func rowButton(id string) string {
	return `(() => { Array.from(document.querySelectorAll('#browse tbody tr')).find((tr) => tr._m.message_id === '` + id + `').querySelector('button').click(); return true; })()`
}

// setField sets a form field's value, as typing would leave it.
func setField(t *testing.T, ctx context.Context, id, value string) {
	t.Helper()
	v, _ := json.Marshal(value)
	eval[bool](t, ctx, `(() => { document.getElementById('`+id+`').value = `+string(v)+`; return true; })()`)
}

func receiveCounts(t *testing.T, srv *testutil.Server, url string) map[string]string {
	t.Helper()
	out, err := srv.Client.ReceiveMessage(bg, &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 10, VisibilityTimeout: 1,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{"ApproximateReceiveCount"}})
	if err != nil {
		t.Fatal(err)
	}
	counts := make(map[string]string)
	for _, m := range out.Messages {
		counts[*m.MessageId] = m.Attributes["ApproximateReceiveCount"]
	}
	return counts
}

// The Messages tab lists a queue's messages without leasing them, shows
// one in full, and releases, moves and deletes messages, asking first
// before what cannot be undone.
func TestBrowserMessagesTab(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	url := srv.MustCreateQueue(t, "work", map[string]string{"VisibilityTimeout": "30"})
	other := srv.MustCreateQueue(t, "other", nil)
	alpha, err := srv.Client.SendMessage(bg, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("alpha\n{\"order\": 1}"),
		MessageAttributes: map[string]types.MessageAttributeValue{"kind": {DataType: aws.String("String"), StringValue: aws.String("fruit")}}})
	if err != nil {
		t.Fatal(err)
	}
	at(srv, 1)
	beta := send(t, srv, url, 1)[0] // "job a"
	at(srv, 2)
	gamma, err := srv.Client.SendMessage(bg, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("gamma ray")})
	if err != nil {
		t.Fatal(err)
	}
	at(srv, 3)
	if m := receive(t, srv, url, 1)[0]; *m.MessageId != *alpha.MessageId {
		t.Fatalf("received %s, want the oldest, %s", *m.MessageId, *alpha.MessageId)
	}
	at(srv, 5)

	ctx := tab(t, 1280, 900, nil)
	navigate(t, ctx, srv.URL+"/ui/queues/work")
	waitFor(t, ctx, "the queue page", `document.getElementById('st-visible').textContent === '2'`)
	if got := eval[string](t, ctx, `document.querySelector('nav.tabs a:not([aria-current])').getAttribute('href')`); got != "/ui/queues/work/messages" {
		t.Fatalf("the Messages tab links to %q", got)
	}
	navigate(t, ctx, srv.URL+"/ui/queues/work/messages")
	waitFor(t, ctx, "three rows", `document.querySelectorAll('#browse tbody tr').length === 3`)
	if got, want := eval[string](t, ctx, rowsJS), *gamma.MessageId+" "+beta+" "+*alpha.MessageId; got != want {
		t.Errorf("rows %s, want newest first %s", got, want)
	}
	text := eval[string](t, ctx, `document.getElementById('browse').innerText`)
	for _, want := range []string{"In flight · 28s left", "Visible", "gamma ray", "alpha {\"order\": 1}"} {
		if !strings.Contains(text, want) {
			t.Errorf("table lacks %q:\n%s", want, text)
		}
	}
	screenshot(t, ctx, "messages")

	// Filters.
	setField(t, ctx, "browse-state", "inflight")
	do(t, ctx, chromedp.Click("#browse-button"))
	waitFor(t, ctx, "the in-flight message alone", `document.querySelectorAll('#browse tbody tr').length === 1`)
	setField(t, ctx, "browse-state", "")
	setField(t, ctx, "browse-contains", "ray")
	setField(t, ctx, "browse-order", "oldest")
	do(t, ctx, chromedp.Click("#browse-button"))
	waitFor(t, ctx, "gamma alone", `document.getElementById('browse').innerText.includes('gamma') && document.querySelectorAll('#browse tbody tr').length === 1`)
	setField(t, ctx, "browse-contains", "nothing like it")
	do(t, ctx, chromedp.Click("#browse-button"))
	waitFor(t, ctx, "no match", `!document.getElementById('browse-empty').hidden`)
	setField(t, ctx, "browse-contains", "")
	do(t, ctx, chromedp.Click("#browse-button"))
	waitFor(t, ctx, "all three, oldest first", `document.querySelectorAll('#browse tbody tr').length === 3`)

	// The in-flight message in full, then released.
	eval[bool](t, ctx, rowButton(*alpha.MessageId))
	waitFor(t, ctx, "the message's details", `!document.getElementById('detail').hidden`)
	detail := eval[string](t, ctx, `document.getElementById('detail').innerText`)
	for _, want := range []string{*alpha.MessageId, "alpha\n{\"order\": 1}", "kind", "fruit", "ApproximateReceiveCount", "Lease"} {
		if !strings.Contains(detail, want) {
			t.Errorf("details lack %q:\n%s", want, detail)
		}
	}
	if got := eval[string](t, ctx, `document.getElementById('detail-timeline').getAttribute('href')`); got != "/ui/queues/work/messages/"+*alpha.MessageId {
		t.Errorf("timeline link %q", got)
	}
	screenshot(t, ctx, "message-detail")
	do(t, ctx, chromedp.Click("#release-button"))
	waitFor(t, ctx, "the release", `document.getElementById('detail-result').textContent.startsWith('Released')`)
	waitFor(t, ctx, "alpha visible", `document.getElementById('release-button').hidden`)

	// Move gamma: cancelled first, then confirmed.
	eval[bool](t, ctx, rowButton(*gamma.MessageId))
	waitFor(t, ctx, "gamma's details", `document.getElementById('detail-id').textContent === '`+*gamma.MessageId+`'`)
	setField(t, ctx, "move-dest", "other")
	do(t, ctx, chromedp.Click("#move-button"))
	waitFor(t, ctx, "the move's confirmation", `document.getElementById('confirm-dialog').open`)
	viewportScreenshot(t, ctx, "move-dialog")
	// Cancelled, then asked again at once, in one task: the cancelled
	// showing's close event, which comes at the next frame, must not answer
	// the new one, and one confirmation moves once.
	noteSends(t, ctx)
	eval[bool](t, ctx, `document.getElementById('confirm-cancel').click(), document.getElementById('move-button').click(), true`)
	waitFor(t, ctx, "the confirmation again", `document.getElementById('confirm-dialog').open`)
	if got := visibleCount(t, srv, other); got != "0" {
		t.Fatalf("cancelled move moved: %s in other", got)
	}
	do(t, ctx, chromedp.Click("#confirm-ok"))
	waitFor(t, ctx, "two rows", `document.querySelectorAll('#browse tbody tr').length === 2`)
	waitFor(t, ctx, "the move's result", `document.getElementById('action-result').textContent.includes('Moved to other')`)
	if n := sends(t, ctx, "POST", "/admin/api/queues/work/messages/"+*gamma.MessageId+"/move"); n != 1 {
		t.Errorf("one confirmation sent %d moves", n)
	}
	if got := visibleCount(t, srv, other); got != "1" {
		t.Errorf("after the move, %s messages in other, want 1", got)
	}

	// Delete beta.
	eval[bool](t, ctx, rowButton(beta))
	waitFor(t, ctx, "beta's details", `document.getElementById('detail-id').textContent === '`+beta+`'`)
	do(t, ctx, chromedp.Click("#delete-button"))
	waitFor(t, ctx, "the delete's confirmation", `document.getElementById('confirm-dialog').open`)
	do(t, ctx, chromedp.Click("#confirm-ok"))
	waitFor(t, ctx, "one row", `document.querySelectorAll('#browse tbody tr').length === 1`)

	// Browsing leased nothing: alpha was received once, by the test.
	if got := receiveCounts(t, srv, url); len(got) != 1 || got[*alpha.MessageId] != "2" {
		t.Errorf("receive counts after browsing %v, want alpha's second receive", got)
	}

	// At a phone's width nothing overflows.
	narrow := tab(t, 390, 844, nil)
	navigate(t, narrow, srv.URL+"/ui/queues/work/messages")
	waitFor(t, narrow, "the row", `document.querySelectorAll('#browse tbody tr').length === 1`)
	eval[bool](t, narrow, rowButton(*alpha.MessageId))
	waitFor(t, narrow, "the details", `!document.getElementById('detail').hidden`)
	noHorizontalOverflow(t, narrow, "messages-390")
	screenshot(t, narrow, "messages-390")
}

// Queues are created on the queues page and deleted on their own, after a
// confirmation.
func TestBrowserCreateDeleteQueue(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	ctx := tab(t, 1280, 900, nil)
	navigate(t, ctx, srv.URL+"/")
	waitFor(t, ctx, "the empty list", `!document.getElementById('empty').hidden`)

	setField(t, ctx, "create-name", "bad name!")
	do(t, ctx, chromedp.Click("#create-button"))
	waitFor(t, ctx, "the refusal", `document.getElementById('create-result').classList.contains('bad')`)
	setField(t, ctx, "create-name", "made.fifo")
	setField(t, ctx, "create-vt", "45")
	do(t, ctx, chromedp.Click("#create-button"))
	waitFor(t, ctx, "the new queue's link", `document.querySelector('#create-result a') !== null`)
	waitFor(t, ctx, "the new queue listed", `document.querySelectorAll('#queues tbody tr').length === 1`)
	out, err := srv.Client.GetQueueAttributes(bg, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(srv.URL + "/000000000000/made.fifo"),
		AttributeNames: []types.QueueAttributeName{"All"}})
	if err != nil || out.Attributes["FifoQueue"] != "true" || out.Attributes["VisibilityTimeout"] != "45" {
		t.Fatalf("created queue: %v %v", err, out)
	}

	if got := eval[string](t, ctx, `document.querySelector('#create-result a').getAttribute('href')`); got != "/ui/queues/made.fifo" {
		t.Fatalf("the new queue's link is %q", got)
	}
	navigate(t, ctx, srv.URL+"/ui/queues/made.fifo")
	waitFor(t, ctx, "the queue page", `document.getElementById('st-visible').textContent === '0'`)
	do(t, ctx, chromedp.Click("#delete-queue-button"))
	waitFor(t, ctx, "the confirmation", `document.getElementById('delete-queue-dialog').open`)
	do(t, ctx, chromedp.Click("#delete-queue-cancel"))
	waitFor(t, ctx, "the dialog to close", `!document.getElementById('delete-queue-dialog').open`)
	if _, err := srv.Client.GetQueueUrl(bg, &sqs.GetQueueUrlInput{QueueName: aws.String("made.fifo")}); err != nil {
		t.Fatalf("cancelled delete deleted: %v", err)
	}
	// Confirmed, then Delete pressed again at once, in one task: the
	// confirmation still deletes, and the new showing, cancelled, sends
	// nothing more.
	noteSends(t, ctx)
	do(t, ctx, chromedp.Click("#delete-queue-button"))
	waitFor(t, ctx, "the confirmation again", `document.getElementById('delete-queue-dialog').open`)
	eval[bool](t, ctx, `document.getElementById('delete-queue-confirm').click(), document.getElementById('delete-queue-button').click(), true`)
	waitFor(t, ctx, "the confirmation a third time", `document.getElementById('delete-queue-dialog').open`)
	do(t, ctx, chromedp.Click("#delete-queue-cancel"))
	waitFor(t, ctx, "the delete", `document.getElementById('delete-queue-result').textContent.startsWith('Deleted')`)
	if n := sends(t, ctx, "POST", "/admin/api/queues/made.fifo/delete"); n != 1 {
		t.Errorf("a confirmation and a cancel sent %d deletes, want 1", n)
	}
	if _, err := srv.Client.GetQueueUrl(bg, &sqs.GetQueueUrlInput{QueueName: aws.String("made.fifo")}); err == nil {
		t.Error("the queue is still there")
	}
}
