package dashboard_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/chromedp/chromedp"

	"github.com/baton-sqs/baton/internal/testutil"
)

// The dashboard shows the queues of its page's region (?region=), else the
// default region's, and its links stay in the region.
func TestBrowserRegion(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	srv.MustCreateQueue(t, "home", nil)
	eu := sqs.New(srv.Client.Options(), func(o *sqs.Options) { o.Region = "eu-central-1" })
	out, err := eu.CreateQueue(bg, &sqs.CreateQueueInput{QueueName: aws.String("away")})
	if err != nil {
		t.Fatal(err)
	}
	send(t, &testutil.Server{URL: srv.URL, Clock: srv.Clock, Engine: srv.Engine, Client: eu}, *out.QueueUrl, 2)

	bctx := tab(t, 1280, 800, nil)
	navigate(t, bctx, srv.URL+"/")
	waitFor(t, bctx, "the home row", rowCell("home", "Visible")+` === "0"`)
	if got := eval[int](t, bctx, `document.querySelectorAll('#queues tbody tr').length`); got != 1 {
		t.Errorf("default region: %d rows, want home's alone", got)
	}

	navigate(t, bctx, srv.URL+"/?region=eu-central-1")
	waitFor(t, bctx, "the away row", rowCell("away", "Visible")+` === "2"`)
	if got := eval[int](t, bctx, `document.querySelectorAll('#queues tbody tr').length`); got != 1 {
		t.Errorf("eu-central-1: %d rows, want away's alone", got)
	}
	if _, err := chromedp.RunResponse(bctx, chromedp.Click(chromedp.CSS(`#queues a[href="/ui/queues/away?region=eu-central-1"]`))); err != nil {
		t.Fatalf("following the link: %v", err)
	}
	waitFor(t, bctx, "the queue page", `document.body.dataset.page === 'queue' && document.getElementById('st-visible').textContent === '2'`)
	if got := eval[string](t, bctx, `document.querySelector('.crumbs a').getAttribute('href')`); got != "/?region=eu-central-1" {
		t.Errorf("breadcrumb link = %q, want the region's queue list", got)
	}

	// The Messages tab browses the region's queue: its query carries the
	// region after its own parameters.
	navigate(t, bctx, srv.URL+"/ui/queues/away/messages?region=eu-central-1")
	waitFor(t, bctx, "the away queue's messages", `document.querySelectorAll('#browse tbody tr').length === 2`)
}
