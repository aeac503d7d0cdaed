package proxy_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/chromedp/chromedp"

	"github.com/baton-sqs/baton/internal/testutil/skipnote"
	"github.com/baton-sqs/baton/proxy"
)

// The dashboard's lease panels work through the proxy as on baton serve:
// in Chromium, after the classic incident (a receive whose lease lapses, a
// second receive, the first holder's late delete) through the proxy in
// front of an upstream on a fake clock, the queue's page shows the doctor's
// finding, the lease durations and the late completion, says what the
// proxy cannot see and offers no counts or actions, and the message's page
// draws its lease timeline. Like server/dashboard's browser tests, it
// drives /usr/bin/chromium (BATON_CHROMIUM names another) and skips
// without it unless BATON_REQUIRE_CHROMIUM=1.
func TestBrowserDashboardThroughProxy(t *testing.T) {
	chromium := os.Getenv("BATON_CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		if os.Getenv("BATON_REQUIRE_CHROMIUM") == "1" {
			t.Fatalf("Chromium is not at %s and BATON_REQUIRE_CHROMIUM=1: %v", chromium, err)
		}
		skipnote.Skip(t, "Chromium", "Chromium is not at %s (apt-get install chromium)", chromium)
	}

	e := newEnv(t)
	q := e.up.Queue(t, "slow?VisibilityTimeout=30")
	workers := []*sqs.Client{e.client("AKIDA", "a"), e.client("AKIDB", "b"), e.client("AKIDC", "c")}
	sent, err := workers[0].SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String("job")})
	if err != nil {
		t.Fatal(err)
	}
	a := receiveOne(t, workers[0], q)
	e.at(31)
	b := receiveOne(t, workers[1], q)
	e.at(62)
	c := receiveOne(t, workers[2], q)
	e.at(90)
	deleteOne(t, workers[0], q, a)
	e.at(121)
	deleteOne(t, workers[1], q, b)
	e.at(152)
	deleteOne(t, workers[2], q, c)

	actx, acancel := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath(chromium), chromedp.Headless,
		chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("disable-background-networking", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900))
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	ctx, cancel := context.WithTimeout(bctx, 2*time.Minute)
	defer cancel()
	if err := chromedp.Do(bctx); err != nil { // starts the browser, unbounded by ctx
		t.Fatalf("starting Chromium: %v", err)
	}
	eval := func(expr string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
		if err != nil {
			t.Fatalf("evaluating %s: %v", expr, err)
		}
		return v
	}
	waitFor := func(what, expr string) {
		t.Helper()
		_, err := chromedp.Run(ctx, chromedp.Poll[any](expr, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(15*time.Second)))
		if err != nil {
			t.Fatalf("waiting for %s: %v\npage: %s", what, err, eval(`document.body ? document.body.innerText : ''`))
		}
	}
	navigate := func(url string) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
			t.Fatal(err)
		}
	}

	navigate(e.url + "/")
	waitFor("the queue list", `document.querySelector('#queue-list a') !== null`)
	if got := eval(`document.querySelector('#queue-list a').getAttribute('href')`); got != "/ui/queues/slow" {
		t.Errorf("the queues page links to %q", got)
	}
	if got := eval(`document.getElementById('dashboard-note').textContent`); got != proxy.BypassNote {
		t.Errorf("the note %q", got)
	}

	navigate(e.url + "/ui/queues/slow")
	waitFor("the finding", `document.querySelectorAll('#findings .finding').length > 0`)
	if got := eval(`document.getElementById('diagnosis').textContent`); !strings.Contains(strings.ToLower(got), "too short") {
		t.Errorf("diagnosis %q", got)
	}
	if got := eval(`[...document.querySelectorAll('#findings .finding')].map(f => f.dataset.kind).join(' ')`); !strings.Contains(got, "lease-too-short") {
		t.Errorf("findings %q", got)
	}
	waitFor("the late completions", `document.querySelectorAll('#late tbody tr').length === 3`)
	if got := eval(`document.querySelector('#late tbody tr a').getAttribute('href')`); got != "/ui/queues/slow/messages/"+*sent.MessageId {
		t.Errorf("the latest late completion links to %q", got)
	}
	if got := eval(`document.getElementById('hist-caption').textContent + ' ' + document.getElementById('histogram').textContent`); !strings.Contains(got, "30") {
		t.Errorf("the histogram does not mark the 30 s timeout: %q", got)
	}
	if got := eval(`document.getElementById('history-note').textContent`); !strings.Contains(got, "invisible") {
		t.Errorf("history note %q says nothing of what the proxy cannot see", got)
	}
	for _, id := range []string{"stats", "send", "purge", "delete-queue", "attributes", "redrive", "recommend"} {
		if got := eval(`String(document.getElementById('` + id + `').hidden)`); got != "true" {
			t.Errorf("#%s shows through the proxy", id)
		}
	}
	if got := eval(`String(document.querySelector('a[href$="/messages"]') === null)`); got != "true" {
		t.Error("the queue page links to a messages page the proxy cannot serve")
	}

	navigate(e.url + "/ui/queues/slow/messages/" + *sent.MessageId)
	waitFor("the events", `document.querySelectorAll('#events tbody tr').length > 0`)
	kinds := eval(`[...document.querySelectorAll('#events tbody tr')].map(r => r.cells[2].textContent).join('|')`)
	for _, want := range []string{"eceive", "xpire", "ate"} {
		if !strings.Contains(kinds, want) {
			t.Errorf("events %q lack %q", kinds, want)
		}
	}
	if got := eval(`document.getElementById('story').textContent`); !strings.Contains(got, "3 receives") || !strings.Contains(got, "late completion") {
		t.Errorf("story %q", got)
	}
	if got := eval(`String(document.querySelectorAll('#timeline svg *').length > 0)`); got != "true" {
		t.Error("no lease timeline drawn")
	}
}
