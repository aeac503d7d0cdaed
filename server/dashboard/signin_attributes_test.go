package dashboard_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"

	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/protocol/sigv4"
)

// An attribute field the operator only tabbed into, without typing, follows
// a change made elsewhere: it is not kept at the old value and marked as an
// edit, which the next save would write back over the change.
func TestBrowserAttributesFollowWhileFocused(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	url := srv.MustCreateQueue(t, "shared", nil)
	ctx := tab(t, 1280, 900, nil)
	navigate(t, ctx, srv.URL+"/ui/queues/shared")
	waitFor(t, ctx, "the attributes", `document.getElementById('a-DelaySeconds').value === '0'`)

	do(t, ctx, chromedp.Focus(chromedp.ID("a-DelaySeconds")))
	if _, err := srv.Client.SetQueueAttributes(bg, &sqs.SetQueueAttributesInput{QueueUrl: &url,
		Attributes: map[string]string{"DelaySeconds": "7"}}); err != nil {
		t.Fatal(err)
	}
	srv.Clock.Advance(time.Second) // a new snapshot
	waitFor(t, ctx, "the change to reach the page", `document.getElementById('a-DelaySeconds').dataset.server === '7'`)
	do(t, ctx, chromedp.Focus(chromedp.ID("a-VisibilityTimeout")))
	srv.Clock.Advance(time.Second)
	waitFor(t, ctx, "the field to follow the server", `document.getElementById('a-DelaySeconds').value === '7'`)
	if eval[bool](t, ctx, `document.getElementById('a-DelaySeconds').classList.contains('dirty')`) {
		t.Error("an untouched field is marked as changed")
	}
}

// signInAs answers the tab's HTTP authentication prompts with an access key
// id and secret, as an operator types them into the browser's dialog, and
// lets every other request through.
func signInAs(t *testing.T, ctx context.Context, id, secret string) {
	t.Helper()
	evs := make(chan any, 256)
	if err := chromedp.Listen(ctx, func(ev any) {
		switch ev.(type) {
		case *fetch.EventRequestPaused, *fetch.EventAuthRequired:
			evs <- ev
		}
	}); err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			var ev any
			select {
			case <-ctx.Done():
				return
			case ev = <-evs:
			}
			chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
				var err error
				switch ev := ev.(type) {
				case *fetch.EventRequestPaused:
					_, err = cdp.Call(ctx, tg, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
				case *fetch.EventAuthRequired:
					_, err = cdp.Call(ctx, tg, fetch.ContinueWithAuth, fetch.ContinueWithAuthParams{RequestID: ev.RequestID,
						AuthChallengeResponse: &fetch.AuthChallengeResponse{Response: fetch.AuthChallengeResponseResponseProvideCredentials, Username: id, Password: secret}})
				}
				return err
			}))
		}
	}()
	yes := true
	do(t, ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, fetch.Enable, fetch.EnableParams{HandleAuthRequests: &yes})
		return err
	}))
}

// An operator who opens a queue's page first (a bookmark, a link in an
// alert) signs in at the browser's prompt, and the page then goes live: the
// browser sends the credentials it was given only to the page's own
// directory until the server asks for them again, so the admin API must ask
// (401 with a challenge), not refuse.
func TestBrowserSignInAtQueuePage(t *testing.T) {
	t.Parallel()
	alice := sigv4.Credential{AccessKeyID: "AKIDALICE", SecretAccessKey: "alice-secret", Account: "111111111111"}
	srv := testutil.StartServer(t, testutil.Options{Credentials: []sigv4.Credential{alice}})
	url := srv.MustCreateQueue(t, "private", nil)
	send(t, srv, url, 2)

	ctx := tab(t, 1280, 900, nil)
	signInAs(t, ctx, alice.AccessKeyID, alice.SecretAccessKey)
	navigate(t, ctx, srv.URL+"/ui/queues/private")
	waitFor(t, ctx, "the live queue page", `document.getElementById('live').dataset.state === 'live' && document.getElementById('st-visible').textContent === '2'`)
}
