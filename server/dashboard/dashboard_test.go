package dashboard_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/protocol/sigv4"
)

var bg = context.Background()

func send(t *testing.T, srv *testutil.Server, url string, n int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		out, err := srv.Client.SendMessage(bg, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("job " + string(rune('a'+i)))})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, *out.MessageId)
	}
	return ids
}

func receive(t *testing.T, srv *testutil.Server, url string, n int32) []types.Message {
	t.Helper()
	out, err := srv.Client.ReceiveMessage(bg, &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: n})
	if err != nil {
		t.Fatal(err)
	}
	if int32(len(out.Messages)) != n {
		t.Fatalf("received %d messages, want %d", len(out.Messages), n)
	}
	return out.Messages
}

func deleteMessage(t *testing.T, srv *testutil.Server, url string, m types.Message) {
	t.Helper()
	if _, err := srv.Client.DeleteMessage(bg, &sqs.DeleteMessageInput{QueueUrl: &url, ReceiptHandle: m.ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
}

func visibleCount(t *testing.T, srv *testutil.Server, url string) string {
	t.Helper()
	out, err := srv.Client.GetQueueAttributes(bg, &sqs.GetQueueAttributesInput{QueueUrl: &url,
		AttributeNames: []types.QueueAttributeName{"ApproximateNumberOfMessages"}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Attributes["ApproximateNumberOfMessages"]
}

// at sets the fake clock to t seconds after the epoch.
func at(srv *testutil.Server, seconds int) {
	srv.Clock.Set(testutil.Epoch.Add(time.Duration(seconds) * time.Second))
}

// rowCell is the text of a cell of the queues table's row for a queue.
func rowCell(queue, label string) string {
	return `(() => { for (const tr of document.querySelectorAll('#queues tbody tr')) {
		if (tr.querySelector('td.name a').textContent === '` + queue + `') return tr.querySelector('td[data-label="` + label + `"]').textContent; }
		return null; })()`
}

// The queues page lists a queue created through the API, with its counts,
// and follows sends without a reload.
func TestBrowserQueuesPage(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	srv.MustCreateQueue(t, "orders-dlq", nil)
	orders := srv.MustCreateQueue(t, "orders", map[string]string{
		"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:orders-dlq","maxReceiveCount":"5"}`,
	})
	emails := srv.MustCreateQueue(t, "emails", nil)
	send(t, srv, orders, 2)
	send(t, srv, emails, 1)
	at(srv, 90)
	receive(t, srv, emails, 1)

	ctx := tab(t, 1280, 800, nil)
	navigate(t, ctx, srv.URL+"/")
	waitFor(t, ctx, "the orders row", rowCell("orders", "Visible")+` === "2"`)
	if got := eval[string](t, ctx, rowCell("orders", "Oldest")); got != "90s" {
		t.Errorf("oldest message of orders = %q, want 90s", got)
	}
	if got := eval[string](t, ctx, rowCell("emails", "In flight")); got != "1" {
		t.Errorf("emails in flight = %q, want 1", got)
	}
	if got := eval[string](t, ctx, rowCell("orders", "Dead-letter")); !strings.Contains(got, "orders-dlq") || !strings.Contains(got, "5 receives") {
		t.Errorf("orders dead-letter cell = %q", got)
	}
	if got := eval[string](t, ctx, rowCell("orders-dlq", "Dead-letter")); !strings.Contains(got, "DLQ of orders") {
		t.Errorf("orders-dlq dead-letter cell = %q", got)
	}
	// orders' messages were sent and never leased: nothing shows its
	// consumers healthy.
	if got := eval[string](t, ctx, rowCell("orders", "Leases")); got != "No leases seen" {
		t.Errorf("orders diagnosis = %q, want No leases seen", got)
	}
	waitFor(t, ctx, "the live indicator", `document.getElementById('live').dataset.state === 'live'`)

	// Sends show up without a reload.
	eval[bool](t, ctx, `window.sameDocument = true`)
	send(t, srv, orders, 3)
	waitFor(t, ctx, "the new count", rowCell("orders", "Visible")+` === "5"`)
	if !eval[bool](t, ctx, `window.sameDocument === true`) {
		t.Error("the page was reloaded")
	}
	screenshot(t, ctx, "queues")

	// The queue's name leads to its page.
	if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(`#queues a[href="/ui/queues/orders"]`))); err != nil {
		t.Fatalf("following the link: %v", err)
	}
	waitFor(t, ctx, "the queue page", `document.body.dataset.page === 'queue' && document.getElementById('st-visible').textContent === '5'`)
}

// queueWithHistory builds a queue whose leases fill every panel of the
// queue page: at t=50 two leases run (received at t=45, 30 s timeout), one
// lease lasted 5 s and one 40 s, 10 s past its deadline.
func queueWithHistory(t *testing.T, srv *testutil.Server, name string) string {
	t.Helper()
	url := srv.MustCreateQueue(t, name, map[string]string{"VisibilityTimeout": "30"})
	send(t, srv, url, 4)
	m1 := receive(t, srv, url, 1)[0]
	at(srv, 5)
	deleteMessage(t, srv, url, m1)
	m2 := receive(t, srv, url, 1)[0]
	at(srv, 45)
	deleteMessage(t, srv, url, m2) // late: its lease ended at t=35
	receive(t, srv, url, 2)
	at(srv, 50)
	return url
}

// The queue page counts leases down on the server's clock and draws the
// lease-duration histogram with the visibility timeout on it.
func TestBrowserQueuePage(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	queueWithHistory(t, srv, "jobs")

	ctx := tab(t, 1280, 900, nil)
	navigate(t, ctx, srv.URL+"/ui/queues/jobs")
	waitFor(t, ctx, "two leases", `document.querySelectorAll('#leases .lease').length === 2`)
	waitFor(t, ctx, "the countdown", `[...document.querySelectorAll('#leases .left')].every(e => e.textContent === '25s left')`)
	width := func() float64 {
		return eval[float64](t, ctx, `parseFloat(document.querySelector('#leases .bar > span').style.width)`)
	}
	if w := width(); w < 83 || w > 84 {
		t.Errorf("countdown bar at %v%%, want 25/30", w)
	}
	// Histogram: a bar each side of the timeout's dashed line.
	waitFor(t, ctx, "the histogram", `document.querySelectorAll('#histogram rect.hbar').length === 2`)
	if n := eval[int](t, ctx, `document.querySelectorAll('#histogram rect.hbar.over').length`); n != 1 {
		t.Errorf("%d bars past the visibility timeout, want 1", n)
	}
	if got := eval[string](t, ctx, `document.querySelector('#histogram .vt-label').textContent`); got != "visibility timeout 30s" {
		t.Errorf("timeout label = %q", got)
	}
	vtRight := eval[bool](t, ctx, `(() => { const x = +document.querySelector('#histogram .vt-line').getAttribute('x1');
		const over = document.querySelector('#histogram rect.hbar.over'), in_ = document.querySelector('#histogram rect.hbar:not(.over)');
		return +in_.getAttribute('x') < x && +over.getAttribute('x') > x; })()`)
	if !vtRight {
		t.Error("the timeout line is not between the in-time and the overrunning bar")
	}
	// The doctor's verdict and the late completion.
	if got := eval[string](t, ctx, `document.getElementById('diagnosis').textContent`); got != "Leases too short" {
		t.Errorf("diagnosis = %q", got)
	}
	if got := eval[string](t, ctx, `document.getElementById('advice').textContent`); !strings.Contains(got, "Set VisibilityTimeout to") {
		t.Errorf("advice = %q", got)
	}
	if got := eval[string](t, ctx, `document.querySelector('#late tbody td[data-label="Late by"]').textContent`); got != "10s" {
		t.Errorf("late by %q, want 10s", got)
	}
	screenshot(t, ctx, "queue")

	// The clock moves; the countdowns follow.
	at(srv, 60)
	waitFor(t, ctx, "the countdown at t=60", `[...document.querySelectorAll('#leases .left')].every(e => e.textContent === '15s left')`)
	at(srv, 71)
	waitFor(t, ctx, "the low countdown", `document.querySelectorAll('#leases .lease.low').length === 2`)
	at(srv, 76)
	waitFor(t, ctx, "the leases to lapse", `document.querySelectorAll('#leases .lease').length === 0 && !document.getElementById('leases-empty').hidden`)
}

// typeInto replaces a field's text as a user would: select it, type.
func typeInto(t *testing.T, ctx context.Context, id, text string) {
	t.Helper()
	do(t, ctx, chromedp.Focus(chromedp.ID(id)))
	eval[bool](t, ctx, `(document.getElementById('`+id+`').select(), true)`)
	do(t, ctx, chromedp.KeyEvent(kb.Delete), chromedp.KeyEvent(text))
}

// A bad attribute value shows SetQueueAttributes' error; a good one is
// saved.
func TestBrowserAttributes(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	url := srv.MustCreateQueue(t, "settings", nil)
	ctx := tab(t, 1280, 900, nil)
	navigate(t, ctx, srv.URL+"/ui/queues/settings")
	waitFor(t, ctx, "the attributes", `document.getElementById('a-VisibilityTimeout').value === '30'`)

	typeInto(t, ctx, "a-VisibilityTimeout", "50000")
	do(t, ctx, chromedp.Click(chromedp.ID("attrs-save")))
	waitFor(t, ctx, "the error", `!document.getElementById('attrs-error').hidden`)
	if got := eval[string](t, ctx, `document.getElementById('attrs-error').textContent`); !strings.Contains(got, "InvalidAttributeValue") || !strings.Contains(got, "VisibilityTimeout") {
		t.Errorf("error shown = %q", got)
	}
	if got := eval[string](t, ctx, `document.getElementById('a-VisibilityTimeout').getAttribute('aria-invalid')`); got != "true" {
		t.Errorf("aria-invalid = %q", got)
	}
	if got := eval[string](t, ctx, activeID); got != "a-VisibilityTimeout" {
		t.Errorf("focus on %q, want the bad field", got)
	}
	if got := eval[string](t, ctx, `document.getElementById('err-VisibilityTimeout').textContent`); !strings.Contains(got, "InvalidAttributeValue") {
		t.Errorf("the field's own error reads %q", got)
	}
	screenshot(t, ctx, "attributes-error")
	out, err := srv.Client.GetQueueAttributes(bg, &sqs.GetQueueAttributesInput{QueueUrl: &url, AttributeNames: []types.QueueAttributeName{"VisibilityTimeout"}})
	if err != nil || out.Attributes["VisibilityTimeout"] != "30" {
		t.Fatalf("after a refused change, VisibilityTimeout = %v, %v", out, err)
	}

	typeInto(t, ctx, "a-VisibilityTimeout", "45")
	do(t, ctx, chromedp.Click(chromedp.ID("attrs-save")))
	waitFor(t, ctx, "the confirmation", `document.getElementById('attrs-result').textContent === 'Saved VisibilityTimeout.'`)
	if !eval[bool](t, ctx, `document.getElementById('attrs-error').hidden && !document.getElementById('err-VisibilityTimeout')`) {
		t.Error("the old error still shows")
	}
	out, err = srv.Client.GetQueueAttributes(bg, &sqs.GetQueueAttributesInput{QueueUrl: &url, AttributeNames: []types.QueueAttributeName{"VisibilityTimeout"}})
	if err != nil || out.Attributes["VisibilityTimeout"] != "45" {
		t.Fatalf("after saving, VisibilityTimeout = %v, %v", out, err)
	}
	waitFor(t, ctx, "the new timeout in the stats", `document.getElementById('st-vt').textContent === '45s'`)
	navigate(t, ctx, srv.URL+"/ui/queues/settings")
	waitFor(t, ctx, "the saved value after a reload", `document.getElementById('a-VisibilityTimeout').value === '45'`)
}

// Purge asks first; cancelling keeps the messages, confirming empties the
// queue.
func TestBrowserPurge(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	url := srv.MustCreateQueue(t, "trash", nil)
	send(t, srv, url, 3)
	ctx := tab(t, 1280, 900, nil)
	navigate(t, ctx, srv.URL+"/ui/queues/trash")
	waitFor(t, ctx, "the counts", `document.getElementById('st-visible').textContent === '3'`)

	do(t, ctx, chromedp.Click(chromedp.ID("purge-button")))
	waitFor(t, ctx, "the confirmation dialog", `document.getElementById('purge-dialog').open`)
	if got := eval[string](t, ctx, `document.getElementById('purge-text').textContent`); !strings.Contains(got, "All 3 messages") {
		t.Errorf("dialog says %q", got)
	}
	viewportScreenshot(t, ctx, "purge-dialog")
	do(t, ctx, chromedp.Click(chromedp.ID("purge-cancel")))
	waitFor(t, ctx, "the dialog to close", `!document.getElementById('purge-dialog').open`)
	if got := visibleCount(t, srv, url); got != "3" {
		t.Fatalf("after cancelling, %s messages visible, want 3", got)
	}

	do(t, ctx, chromedp.Click(chromedp.ID("purge-button")))
	waitFor(t, ctx, "the dialog again", `document.getElementById('purge-dialog').open`)
	do(t, ctx, chromedp.Click(chromedp.ID("purge-confirm")))
	waitFor(t, ctx, "the purge", `document.getElementById('purge-result').textContent.startsWith('Purged')`)
	if got := visibleCount(t, srv, url); got != "0" {
		t.Fatalf("after purging, %s messages visible, want 0", got)
	}
	waitFor(t, ctx, "the empty queue", `document.getElementById('st-visible').textContent === '0'`)

	// SQS allows one purge a minute: the second shows its error. Confirmed,
	// then Purge pressed again at once, in one task: the confirmation still
	// purges, and the new showing, cancelled, purges nothing more.
	noteSends(t, ctx)
	do(t, ctx, chromedp.Click(chromedp.ID("purge-button")))
	waitFor(t, ctx, "the dialog a third time", `document.getElementById('purge-dialog').open`)
	eval[bool](t, ctx, `document.getElementById('purge-confirm').click(), document.getElementById('purge-button').click(), true`)
	waitFor(t, ctx, "the dialog a fourth time", `document.getElementById('purge-dialog').open`)
	do(t, ctx, chromedp.Click(chromedp.ID("purge-cancel")))
	waitFor(t, ctx, "the refusal", `document.getElementById('purge-result').textContent.includes('PurgeQueueInProgress')`)
	if n := sends(t, ctx, "POST", "/admin/api/queues/trash/purge"); n != 1 {
		t.Errorf("a confirmation and a cancel sent %d purges, want 1", n)
	}
}

// The classic incident: a 30 s lease, a 90 s handler. Worker A receives at
// t=0, its lease lapses at t=30, B receives at t=31, that lease lapses at
// t=61, C receives at t=62, and A deletes at t=90 with its old receipt, 60 s
// late. The message page must tell it at a glance.
func classicIncident(t *testing.T, srv *testutil.Server) (queue, id string) {
	t.Helper()
	url := srv.MustCreateQueue(t, "slow", map[string]string{"VisibilityTimeout": "30"})
	send(t, srv, url, 1)
	a := receive(t, srv, url, 1)[0]
	at(srv, 31)
	receive(t, srv, url, 1)
	at(srv, 62)
	receive(t, srv, url, 1)
	at(srv, 90)
	deleteMessage(t, srv, url, a)
	return "slow", *a.MessageId
}

func TestBrowserMessageTimeline(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	queue, id := classicIncident(t, srv)
	ctx := tab(t, 1280, 900, nil)
	navigate(t, ctx, srv.URL+"/ui/queues/"+queue+"/messages/"+id)
	waitFor(t, ctx, "the timeline", `document.querySelectorAll('#timeline .tl-lane').length === 3`)

	kinds := eval[[]string](t, ctx, `[...document.querySelectorAll('#events tbody tr')].map(r => r.dataset.kind)`)
	if got := strings.Join(kinds, " "); got != "receive expire receive expire receive late-delete removed" {
		t.Errorf("events = %s", got)
	}
	times := eval[[]string](t, ctx, `[...document.querySelectorAll('#events tbody tr td:first-child')].map(td => td.textContent)`)
	if got := strings.Join(times, " "); got != "t=0s t=30s t=31s t=61s t=62s t=90s t=90s" {
		t.Errorf("event times = %s", got)
	}
	if got := eval[string](t, ctx, `document.querySelector('#events tr[data-kind="late-delete"]').textContent`); !strings.Contains(got, "late by 60s") || !strings.Contains(got, "duplicate") {
		t.Errorf("late delete row = %q", got)
	}
	// On the picture: two expiries, one late delete with the overrun drawn
	// from lease 1's deadline to t=90, and lease 3 ended there because that
	// late delete removed the message while lease 3 held it.
	if n := eval[int](t, ctx, `document.querySelectorAll('#timeline path.tl-expire').length`); n != 2 {
		t.Errorf("%d expiry markers, want 2", n)
	}
	lane1 := `document.querySelector('#timeline .tl-lane[data-lease="1"]')`
	if n := eval[int](t, ctx, lane1+`.querySelectorAll('.tl-late').length`); n != 1 {
		t.Errorf("%d late markers on lease 1, want 1", n)
	}
	if got := eval[string](t, ctx, lane1+`.textContent`); !strings.Contains(got, "late delete +60s") || !strings.Contains(got, "expired at t=30s") {
		t.Errorf("lease 1's lane reads %q", got)
	}
	overrun := eval[[]float64](t, ctx, `(() => { const r = `+lane1+`.querySelector('.tl-overrun'); const w = `+lane1+`.querySelector('.tl-window');
		return [+w.getAttribute('x') + +w.getAttribute('width'), +r.getAttribute('x'), +r.getAttribute('x') + +r.getAttribute('width'), +w.getAttribute('x')]; })()`)
	// The overrun starts where lease 1 ends and is twice its length (30 s → 90 s).
	if len(overrun) != 4 || overrun[0] != overrun[1] || abs((overrun[2]-overrun[1])/(overrun[0]-overrun[3])-2) > 0.02 {
		t.Errorf("overrun geometry = %v", overrun)
	}
	if got := eval[string](t, ctx, `document.querySelector('#timeline .tl-lane[data-lease="3"]').textContent`); !strings.Contains(got, "deleted under it") || strings.Contains(got, "left") {
		t.Errorf("lease 3's lane reads %q, want it ended by the late delete", got)
	}
	if got := eval[string](t, ctx, `document.getElementById('story').textContent`); !strings.HasPrefix(got, "3 receives, 2 lease expiries, 1 late completion.") ||
		!strings.Contains(got, "60s after that lease had expired") {
		t.Errorf("story = %q", got)
	}
	screenshot(t, ctx, "message")

	// The picture for the README: the timeline panel at a laptop's width.
	do(t, ctx, chromedp.EmulateViewport(960, 800))
	waitFor(t, ctx, "the redrawn timeline", `+document.querySelector('#timeline svg').getAttribute('width') === document.getElementById('timeline').clientWidth`)
	saveScreenshot(t, ctx, "timeline", chromedp.Screenshot(chromedp.CSS(`section[aria-labelledby="timeline-h"]`)))
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

// Every action is reachable with the keyboard alone, and the focus shows.
func TestBrowserKeyboard(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	url := srv.MustCreateQueue(t, "keys", nil)
	send(t, srv, url, 2)
	ctx := tab(t, 1280, 900, nil)
	navigate(t, ctx, srv.URL+"/ui/queues/keys")
	waitFor(t, ctx, "the page", `document.getElementById('st-visible').textContent === '2'`)

	seen := tabUntil(t, ctx, "send-button", 40)
	if seen[0] != "#main" {
		t.Errorf("the first Tab goes to %s, want the skip link", seen[0])
	}
	if style := eval[string](t, ctx, `getComputedStyle(document.activeElement).outlineStyle`); style == "none" {
		t.Error("the focused button shows no outline")
	}
	do(t, ctx, chromedp.KeyEvent(kb.Enter))
	waitFor(t, ctx, "the sent message", `document.querySelector('#send-result a') !== null`)
	waitFor(t, ctx, "three messages", `document.getElementById('st-visible').textContent === '3'`)

	tabUntil(t, ctx, "purge-button", 10)
	do(t, ctx, chromedp.KeyEvent(kb.Enter))
	waitFor(t, ctx, "the dialog", `document.getElementById('purge-dialog').open`)
	if got := eval[string](t, ctx, activeID); got != "purge-cancel" {
		t.Errorf("the dialog opens with the focus on %q, want Cancel", got)
	}
	do(t, ctx, chromedp.KeyEvent(kb.Escape))
	waitFor(t, ctx, "the dialog to close", `!document.getElementById('purge-dialog').open`)
	if got := eval[string](t, ctx, activeID); got != "purge-button" {
		t.Errorf("after Escape the focus is on %q, want the purge button", got)
	}
	if got := visibleCount(t, srv, url); got != "3" {
		t.Errorf("Escape purged: %s visible", got)
	}
	do(t, ctx, chromedp.KeyEvent(kb.Enter))
	waitFor(t, ctx, "the dialog again", `document.getElementById('purge-dialog').open`)
	do(t, ctx, chromedp.KeyEvent(kb.Tab))
	if got := eval[string](t, ctx, activeID); got != "purge-confirm" {
		t.Fatalf("Tab in the dialog goes to %q, want the confirm button", got)
	}
	do(t, ctx, chromedp.KeyEvent(kb.Enter))
	waitFor(t, ctx, "the purge", `document.getElementById('purge-result').textContent.startsWith('Purged')`)

	tabUntil(t, ctx, "attrs-save", 40)
	screenshot(t, ctx, "keyboard")
}

// At a phone's width (390 CSS pixels) nothing overflows sideways.
func TestBrowserNarrow(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	srv.MustCreateQueue(t, "a-rather-long-queue-name-for-a-narrow-screen-dlq", nil)
	srv.MustCreateQueue(t, "a-rather-long-queue-name-for-a-narrow-screen", map[string]string{
		"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:a-rather-long-queue-name-for-a-narrow-screen-dlq","maxReceiveCount":"3"}`,
	})
	queueWithHistory(t, srv, "jobs")
	srv2 := testutil.StartServer(t) // the incident needs a clock of its own
	queue, id := classicIncident(t, srv2)

	ctx := tab(t, 390, 844, nil)
	for _, p := range []struct{ name, url, ready string }{
		{"queues-390", srv.URL + "/", `document.querySelectorAll('#queues tbody tr').length === 3`},
		{"queue-390", srv.URL + "/ui/queues/jobs", `document.querySelectorAll('#histogram rect.hbar').length > 0`},
		{"dlq-390", srv.URL + "/ui/queues/a-rather-long-queue-name-for-a-narrow-screen-dlq", `!document.getElementById('redrive').hidden`},
		{"message-390", srv2.URL + "/ui/queues/" + queue + "/messages/" + id, `document.querySelectorAll('#timeline .tl-lane').length === 3`},
	} {
		navigate(t, ctx, p.url)
		waitFor(t, ctx, p.name, p.ready)
		if w := eval[float64](t, ctx, `innerWidth`); w != 390 {
			t.Fatalf("innerWidth = %v, want 390", w)
		}
		noHorizontalOverflow(t, ctx, p.name)
		screenshot(t, ctx, p.name)
	}
}

// With credentials configured the dashboard signs in with HTTP Basic (an
// access key id and its secret), and its live stream works behind it.
func TestBrowserBasicAuth(t *testing.T) {
	t.Parallel()
	alice := sigv4.Credential{AccessKeyID: "AKIDALICE", SecretAccessKey: "alice-secret", Account: "111111111111"}
	srv := testutil.StartServer(t, testutil.Options{Credentials: []sigv4.Credential{alice}})
	url := srv.MustCreateQueue(t, "private", nil)
	send(t, srv, url, 1)

	// Without credentials headless Chromium, which cannot ask for them,
	// stops at the challenge.
	anon := tab(t, 1280, 800, nil)
	err := chromedp.Do(anon, chromedp.Navigate(srv.URL+"/"))
	if got := pageText(anon); (err == nil || !strings.Contains(err.Error(), "AUTH")) && !strings.Contains(got, "Sign in with an access key id") {
		t.Errorf("without credentials: %v, page %q", err, got)
	}

	ctx := tab(t, 1280, 800, basicHeader(alice.AccessKeyID, alice.SecretAccessKey))
	navigate(t, ctx, srv.URL+"/")
	waitFor(t, ctx, "alice's queue", rowCell("private", "Visible")+` === "1"`)
	send(t, srv, url, 1)
	waitFor(t, ctx, "a live update", rowCell("private", "Visible")+` === "2"`)
}

// A dead-letter queue's page starts a redrive and cancels it.
func TestBrowserRedrive(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	dlq := srv.MustCreateQueue(t, "billing-dlq", nil)
	srv.MustCreateQueue(t, "billing", map[string]string{
		"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:billing-dlq","maxReceiveCount":"4"}`,
	})
	send(t, srv, dlq, 3)
	ctx := tab(t, 1280, 900, nil)
	navigate(t, ctx, srv.URL+"/ui/queues/billing-dlq")
	waitFor(t, ctx, "the redrive panel", `!document.getElementById('redrive').hidden && document.getElementById('redrive-dest').options.length === 2`)

	// One message a second on the fake clock: the task moves one and waits.
	// The live view may show the running task before the start's answer
	// comes: here the answer is held until the page shows the task, and the
	// button stays disabled after it.
	eval[bool](t, ctx, `(() => {
		const f = window.fetch;
		window.fetch = async (url, opts) => {
			const res = await f(url, opts);
			if (opts && opts.method === 'POST' && new URL(url, location.href).pathname.endsWith('/move-tasks')) {
				await new Promise((shown) => {
					const check = () => document.querySelector('#tasks tbody tr') ? shown() : setTimeout(check, 20);
					check();
				});
			}
			return res;
		};
		return true;
	})()`)
	do(t, ctx, chromedp.SetValue(chromedp.ID("redrive-dest"), "billing"), chromedp.SetValue(chromedp.ID("redrive-rate"), "1"),
		chromedp.Click(chromedp.ID("redrive-button")))
	waitFor(t, ctx, "the running task", `(() => { const r = document.querySelector('#tasks tbody tr');
		return r && r.textContent.includes('running') && r.textContent.includes('1 of 3') && r.querySelector('button'); })()`)
	waitFor(t, ctx, "the start's answer", `document.getElementById('redrive-result').textContent === 'Redrive started.'`)
	if !eval[bool](t, ctx, `document.getElementById('redrive-button').disabled`) {
		t.Error("a second redrive can be started while one runs")
	}
	screenshot(t, ctx, "redrive")
	do(t, ctx, chromedp.Click(chromedp.CSS(`#tasks tbody button`)))
	waitFor(t, ctx, "the cancelled task", `(() => { const r = document.querySelector('#tasks tbody tr');
		return r.textContent.includes('cancelled') && !r.querySelector('button'); })()`)
	if got := visibleCount(t, srv, dlq); got != "2" {
		t.Errorf("%s messages left in the dead-letter queue, want 2", got)
	}
}
