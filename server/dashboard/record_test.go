package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/baton-sqs/baton/internal/testutil"
)

// recordCount is how many copies GET /admin/api/sns/deliveries?query
// answers.
func recordCount(t *testing.T, srv *testutil.Server, query string) int {
	t.Helper()
	resp, err := http.Get(srv.URL + "/admin/api/sns/deliveries?" + query)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct {
		Deliveries []json.RawMessage `json:"deliveries"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&v) != nil {
		t.Fatalf("GET deliveries?%s: %d", query, resp.StatusCode)
	}
	return len(v.Deliveries)
}

// holdableStream makes the pages the tab loads from now on hold their live
// stream's snapshots while window.holdStream is true, until
// window.releaseStream() hands them on.
func holdableStream(t *testing.T, ctx context.Context) {
	t.Helper()
	do(t, ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: `(() => {
			const ES = window.EventSource, held = [];
			window.holdStream = false;
			window.releaseStream = () => { window.holdStream = false; held.splice(0).forEach((f) => f()); };
			window.EventSource = class extends ES {
				set onmessage(fn) { super.onmessage = (e) => (window.holdStream ? held.push(() => fn(e)) : fn(e)); }
				get onmessage() { return super.onmessage; }
			};
		})()`})
		return err
	}))
}

// overtakeOwnRead makes the record's next read, the clear's own, be
// overtaken: the live stream is held until that read is sent, then a
// snapshot starts a later read, and the own read is answered before the
// later one. window.readOrder tells what happened.
const overtakeOwnRead = `(() => {
	const f = window.fetch, signal = () => { let open; const p = new Promise((r) => { open = r; }); p.open = open; return p; };
	const laterSent = signal(), ownAnswered = signal();
	let own = false, later = false;
	window.readOrder = [];
	window.fetch = async (url, opts) => {
		const read = !(opts && opts.method && opts.method !== 'GET') && new URL(url, location.href).pathname === '/admin/api/sns/deliveries';
		if (read && !own && window.holdStream) {
			own = true;
			window.readOrder.push('own sent');
			setTimeout(window.releaseStream, 0);
			const res = await f(url, opts);
			await Promise.race([laterSent, new Promise((r) => setTimeout(r, 10000))]);
			window.readOrder.push('own answered');
			setTimeout(ownAnswered.open, 0);
			return res;
		}
		if (read && own && !later) {
			later = true;
			window.readOrder.push('later sent');
			laterSent.open();
			const res = await f(url, opts);
			await ownAnswered;
			window.readOrder.push('later answered');
			return res;
		}
		return f(url, opts);
	};
	window.holdStream = true;
	return true;
})()`

// A topic's page lists what Baton recorded, not sent, to its sms, email
// and lambda subscriptions, newest first, its payloads opened on demand
// (JSON indented), a pending email subscription's confirmation with its
// SubscribeURL to follow; new copies appear without a reload; Clear, once
// confirmed, deletes the topic's copies and no others. The SMS page shows
// the publishes to phone numbers alone, and clears them.
func TestBrowserTopicRecord(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.SNSClient()
	topic, err := c.CreateTopic(bg, &awssns.CreateTopicInput{Name: aws.String("alerts"), Attributes: map[string]string{"DisplayName": "Ops"}})
	if err != nil {
		t.Fatal(err)
	}
	subscribe := func(protocol, endpoint string) {
		t.Helper()
		if _, err := c.Subscribe(bg, &awssns.SubscribeInput{TopicArn: topic.TopicArn, Protocol: aws.String(protocol), Endpoint: aws.String(endpoint)}); err != nil {
			t.Fatal(err)
		}
	}
	subscribe("sms", "+15555550100")
	subscribe("lambda", "arn:aws:lambda:us-east-1:"+testutil.Account+":function:pager")
	subscribe("email", "ops@example.com")
	publish := func(msg string) {
		t.Helper()
		if _, err := c.Publish(bg, &awssns.PublishInput{TopicArn: topic.TopicArn, Message: aws.String(msg), Subject: aws.String("Disk"),
			MessageAttributes: map[string]snstypes.MessageAttributeValue{"severity": {DataType: aws.String("String"), StringValue: aws.String("high")}}}); err != nil {
			t.Fatal(err)
		}
	}
	publish(`disk full <img src=x onerror="window.injected=1">`)
	if _, err := c.Publish(bg, &awssns.PublishInput{PhoneNumber: aws.String("+15555550199"), Message: aws.String("your code is 1234")}); err != nil {
		t.Fatal(err)
	}

	ctx := tab(t, 1280, 900, nil)
	holdableStream(t, ctx)
	navigate(t, ctx, srv.URL+"/ui/topics")
	waitFor(t, ctx, "the link to the topic's page", `document.querySelector('#topics a[href="/ui/topics/alerts"]') !== null`)
	navigate(t, ctx, srv.URL+"/ui/topics/alerts")
	const rows = `document.querySelectorAll('#record-table > tbody > tr')`
	// The email's confirmation, then the copies of the sms and lambda
	// subscriptions: the pending email gets none.
	waitFor(t, ctx, "three recorded copies", rows+`.length === 3`)
	cell := func(i int, label string) string {
		return eval[string](t, ctx, rows+`[`+string(rune('0'+i))+`].querySelector('td[data-label="`+label+`"]').innerText`)
	}
	if got := eval[string](t, ctx, `[...`+rows+`].map((tr) => tr.dataset.protocol + ' ' + tr.dataset.type).join(', ')`); got !=
		"lambda Notification, sms Notification, email SubscriptionConfirmation" && got != "sms Notification, lambda Notification, email SubscriptionConfirmation" {
		t.Errorf("rows = %s, want the two notifications, then the older confirmation", got)
	}
	note := eval[string](t, ctx, `document.getElementById('record-note').innerText`)
	for _, want := range []string{"Baton sent none of these", "this server's, in memory", "newest 1,000", "64 MiB"} {
		if !strings.Contains(note, want) {
			t.Errorf("the record's note %q does not say %q", note, want)
		}
	}
	if !eval[bool](t, ctx, `document.getElementById('record-dropped').hidden`) {
		t.Error("the dropped notice shows with nothing dropped")
	}

	// The SMS: its text as AWS would send it, after the display name,
	// drawn as text; its attributes with it.
	sms := `document.querySelector('#record-table tr[data-protocol="sms"]')`
	if got := eval[string](t, ctx, sms+`.querySelector('td[data-label="Endpoint"]').innerText`); got != "+15555550100" {
		t.Errorf("sms endpoint = %q", got)
	}
	do(t, ctx, chromedp.Click(chromedp.CSS(`#record-table tr[data-protocol="sms"] summary`)))
	waitFor(t, ctx, "the sms payload", sms+`.querySelector('pre') !== null`)
	if got := eval[string](t, ctx, sms+`.querySelector('pre').textContent`); got != `OPS> disk full <img src=x onerror="window.injected=1">` {
		t.Errorf("sms payload = %q", got)
	}
	if eval[bool](t, ctx, `document.querySelector('#record img') !== null || window.injected === 1`) {
		t.Error("the payload was drawn as HTML")
	}
	if got := eval[string](t, ctx, sms+`.querySelector('table.attrs').innerText`); !strings.Contains(got, "severity\tString\thigh") {
		t.Errorf("sms attributes = %q", got)
	}

	// The Lambda event is JSON: indented.
	lambda := `document.querySelector('#record-table tr[data-protocol="lambda"]')`
	do(t, ctx, chromedp.Click(chromedp.CSS(`#record-table tr[data-protocol="lambda"] summary`)))
	waitFor(t, ctx, "the lambda payload", lambda+`.querySelector('pre') !== null`)
	if got := eval[string](t, ctx, lambda+`.querySelector('pre').textContent`); !strings.HasPrefix(got, "{\n  \"Records\": [\n    {\n      \"EventSource\": \"aws:sns\",") {
		t.Errorf("lambda payload = %.200q, want the event indented", got)
	}

	// The pending email's confirmation: its SubscribeURL, followed,
	// confirms it, and the page says so.
	conf := `document.querySelector('#record-table tr[data-type="SubscriptionConfirmation"]')`
	if got := eval[string](t, ctx, conf+`.querySelector('td[data-label="Subject"]').innerText`); got != "AWS Notification - Subscription Confirmation" {
		t.Errorf("confirmation subject = %q", got)
	}
	waitFor(t, ctx, "the confirmation's link", conf+`.querySelector('a.subscribe-url') !== null`)
	link := eval[string](t, ctx, conf+`.querySelector('a.subscribe-url').href`)
	if !strings.HasPrefix(link, srv.URL+"/?Action=ConfirmSubscription&TopicArn=") || !strings.Contains(cell(2, "Type"), "pending") {
		t.Errorf("confirmation link = %q, type cell %q; want the SubscribeURL of a pending subscription", link, cell(2, "Type"))
	}
	resp, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", link, resp.StatusCode)
	}
	waitFor(t, ctx, "the subscription confirmed", conf+`.querySelector('.confirm').innerText === 'confirmed'`)
	screenshot(t, ctx, "topic-record")

	// A publish shows up without a reload, newest first: the email too now.
	eval[bool](t, ctx, `window.sameDocument = true`)
	publish("disk fuller")
	waitFor(t, ctx, "the second publish's copies", rows+`.length === 6`)
	if got := eval[string](t, ctx, `document.querySelector('#record-table tr[data-protocol="email"][data-type="Notification"] td[data-label="Subject"]').innerText`); got != "Disk" {
		t.Errorf("email subject = %q, want Disk", got)
	}
	if !eval[bool](t, ctx, `window.sameDocument === true`) {
		t.Error("the page was reloaded")
	}

	// On a phone's width nothing overflows.
	narrow := tab(t, 390, 800, nil)
	navigate(t, narrow, srv.URL+"/ui/topics/alerts")
	waitFor(t, narrow, "the rows", rows+`.length === 6`)
	noHorizontalOverflow(t, narrow, "topic")
	screenshot(t, narrow, "topic-record-narrow")

	// Clear asks first; cancelled, nothing goes.
	do(t, ctx, chromedp.Click(chromedp.ID("record-clear")))
	waitFor(t, ctx, "the confirmation dialog", `document.getElementById('confirm-dialog').open`)
	if got := eval[string](t, ctx, `document.getElementById('confirm-title').textContent`); got != "Clear the 6 recorded copies?" {
		t.Errorf("dialog title = %q", got)
	}
	viewportScreenshot(t, ctx, "record-clear-dialog")
	do(t, ctx, chromedp.Click(chromedp.ID("confirm-cancel")))
	waitFor(t, ctx, "the dialog to close", `!document.getElementById('confirm-dialog').open`)
	waitFor(t, ctx, "the focus back on Clear", activeID+` === 'record-clear'`)
	if n := recordCount(t, srv, "topic=alerts"); n != 6 {
		t.Fatalf("after cancelling, %d copies recorded for the topic, want 6", n)
	}
	// Cancelled, then asked again at once, in one task: the cancelled
	// showing's close event, which comes at the next frame, answers for that
	// showing alone, and one confirmation clears once.
	noteSends(t, ctx)
	do(t, ctx, chromedp.Click(chromedp.ID("record-clear")))
	waitFor(t, ctx, "the dialog again", `document.getElementById('confirm-dialog').open`)
	eval[bool](t, ctx, `document.getElementById('confirm-cancel').click(), document.getElementById('record-clear').click(), true`)
	waitFor(t, ctx, "the dialog a third time", `document.getElementById('confirm-dialog').open`)
	if n := sends(t, ctx, "DELETE", "/admin/api/sns/deliveries"); n != 0 {
		t.Fatalf("after two cancelled showings, %d clears sent", n)
	}
	// The clear's own read of the record may be overtaken by one the live
	// view starts: here it is, and the focus still follows the rows drawn.
	eval[bool](t, ctx, overtakeOwnRead)
	do(t, ctx, chromedp.Click(chromedp.ID("confirm-ok")))
	waitFor(t, ctx, "the clear", `document.getElementById('record-result').textContent.startsWith('Cleared')`)
	if n := sends(t, ctx, "DELETE", "/admin/api/sns/deliveries"); n != 1 {
		t.Fatalf("one confirmation sent %d clears", n)
	}
	waitFor(t, ctx, "the clear's count", `document.getElementById('record-result').textContent === 'Cleared 6 copies.'`)
	waitFor(t, ctx, "the empty record", `!document.getElementById('record-empty').hidden && `+rows+`.length === 0`)
	waitFor(t, ctx, "both reads answered", `window.readOrder.length === 4`)
	if got := eval[string](t, ctx, `window.readOrder.join(', ')`); got != "own sent, later sent, own answered, later answered" {
		t.Fatalf("reads went %s; want the clear's own overtaken by a later one", got)
	}
	// The button is gone with the rows: the focus goes to the panel's heading.
	waitFor(t, ctx, "the focus on the heading", activeID+` === 'record-h'`)
	if n, phone := recordCount(t, srv, "topic=alerts"), recordCount(t, srv, "direct=true"); n != 0 || phone != 1 {
		t.Errorf("after clearing the topic: %d of its copies and %d SMS to a phone number recorded, want 0 and 1", n, phone)
	}

	// The SMS page: the publish to a phone number, not the topic's SMS.
	publish("disk fullest")
	navigate(t, ctx, srv.URL+"/ui/sms")
	waitFor(t, ctx, "the SMS row", rows+`.length === 1`)
	if got := cell(0, "Endpoint"); got != "+15555550199" {
		t.Errorf("SMS endpoint = %q, want the phone number published to", got)
	}
	if got := eval[string](t, ctx, rows+`[0].querySelector('summary').innerText`); got != "your code is 1234" {
		t.Errorf("SMS preview = %q", got)
	}
	screenshot(t, ctx, "sms")
	// Confirmed, then Clear pressed again at once, in one task: the
	// confirmation still clears, and the new showing, cancelled, clears
	// nothing more.
	noteSends(t, ctx)
	do(t, ctx, chromedp.Click(chromedp.ID("record-clear")))
	waitFor(t, ctx, "the dialog", `document.getElementById('confirm-dialog').open`)
	eval[bool](t, ctx, `document.getElementById('confirm-ok').click(), document.getElementById('record-clear').click(), true`)
	waitFor(t, ctx, "the dialog again", `document.getElementById('confirm-dialog').open`)
	do(t, ctx, chromedp.Click(chromedp.ID("confirm-cancel")))
	waitFor(t, ctx, "the clear", `document.getElementById('record-result').textContent === 'Cleared 1 copy.'`)
	if n := sends(t, ctx, "DELETE", "/admin/api/sns/deliveries"); n != 1 {
		t.Errorf("a confirmation and a cancel sent %d clears, want 1", n)
	}
	if n, topicSMS := recordCount(t, srv, "direct=true"), recordCount(t, srv, "topic=alerts&protocol=sms"); n != 0 || topicSMS != 1 {
		t.Errorf("after clearing the SMS page: %d SMS to phone numbers and %d of the topic's recorded, want 0 and 1", n, topicSMS)
	}

	// Past the record's bound the oldest copies go, and the page says how
	// many: 3 kept, then 340 messages of 3 copies each.
	for range 34 {
		entries := make([]snstypes.PublishBatchRequestEntry, 10)
		for j := range entries {
			entries[j] = snstypes.PublishBatchRequestEntry{Id: aws.String(fmt.Sprint("e", j)), Message: aws.String("m")}
		}
		if out, err := c.PublishBatch(bg, &awssns.PublishBatchInput{TopicArn: topic.TopicArn, PublishBatchRequestEntries: entries}); err != nil || len(out.Failed) != 0 {
			t.Fatalf("PublishBatch: %v %+v", err, out)
		}
	}
	// The page follows the record live: the notice may first show a count
	// taken while the publishes ran, and settles on the last.
	const notice = "23 older copies of any topic, phone number or account were dropped for room since the server started; this server holds 1,000 of at most 1,000."
	waitFor(t, ctx, "the dropped notice", `!document.getElementById('record-dropped').hidden && document.getElementById('record-dropped').textContent === `+strconv.Quote(notice))
}

// A topic's page in another region (?region=) reads that region's topic
// and its records, its links staying in the region.
func TestBrowserTopicRecordRegion(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	eu := awssns.New(srv.SNSClient().Options(), func(o *awssns.Options) { o.Region = "eu-central-1" })
	topic, err := eu.CreateTopic(bg, &awssns.CreateTopicInput{Name: aws.String("away")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eu.Subscribe(bg, &awssns.SubscribeInput{TopicArn: topic.TopicArn, Protocol: aws.String("sms"), Endpoint: aws.String("+15555550100")}); err != nil {
		t.Fatal(err)
	}
	if _, err := eu.Publish(bg, &awssns.PublishInput{TopicArn: topic.TopicArn, Message: aws.String("hallo")}); err != nil {
		t.Fatal(err)
	}
	ctx := tab(t, 1280, 900, nil)
	navigate(t, ctx, srv.URL+"/ui/topics?region=eu-central-1")
	waitFor(t, ctx, "the link to the topic's page", `document.querySelector('#topics a[href="/ui/topics/away?region=eu-central-1"]') !== null`)
	navigate(t, ctx, srv.URL+"/ui/topics/away?region=eu-central-1")
	waitFor(t, ctx, "the topic's SMS", `document.querySelectorAll('#record-table > tbody > tr[data-protocol="sms"]').length === 1`)
	if got := eval[string](t, ctx, `document.getElementById('topic-arn').textContent`); got != *topic.TopicArn {
		t.Errorf("topic ARN = %q, want %s", got, *topic.TopicArn)
	}
	if got := eval[string](t, ctx, `document.querySelector('.crumbs a').getAttribute('href')`); got != "/ui/topics?region=eu-central-1" {
		t.Errorf("breadcrumb link = %q, want the region's topics", got)
	}
}
