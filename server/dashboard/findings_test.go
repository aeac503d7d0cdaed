package dashboard_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton/internal/testutil"
)

// The lease panel lists every finding with the leases it rests on: here a
// lease held and renewed far beyond the p99 (a long job or a hung handler
// behind its heartbeat), named with a link to its message, and
// handlers that throw; and it says the history began when the server did.
func TestBrowserLeaseFindings(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	url := srv.MustCreateQueue(t, "stalls", map[string]string{"VisibilityTimeout": "30"})
	ids := send(t, srv, url, 3)
	for i := range 3 { // 8 s handlers
		at(srv, 10*i)
		m := receive(t, srv, url, 1)[0]
		at(srv, 10*i+8)
		deleteMessage(t, srv, url, m)
	}
	at(srv, 30)
	hung := send(t, srv, url, 1)[0]
	m := receive(t, srv, url, 1)[0]
	if *m.MessageId != hung {
		t.Fatalf("received %s, want %s (the others %v are deleted)", *m.MessageId, hung, ids)
	}
	at(srv, 31)
	send(t, srv, url, 3)
	receive(t, srv, url, 3) // handlers that throw: the leases lapse at t=61
	for s := 50; s <= 390; s += 20 {
		at(srv, s)
		if _, err := srv.Client.ChangeMessageVisibility(bg, &sqs.ChangeMessageVisibilityInput{QueueUrl: &url, ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 30}); err != nil {
			t.Fatal(err)
		}
	}
	at(srv, 410)

	ctx := tab(t, 1280, 900, nil)
	navigate(t, ctx, srv.URL+"/ui/queues/stalls")
	waitFor(t, ctx, "two findings", `document.querySelectorAll('#findings .finding').length === 2`)
	kinds := eval[string](t, ctx, `[...document.querySelectorAll('#findings .finding')].map(f => f.dataset.kind + ':' + f.querySelector('.finding-head .hint').textContent).join(' ')`)
	if kinds != "held-renewed:on 3 leases handler-failing:on 3 leases" {
		t.Errorf("findings %q", kinds)
	}
	if got := eval[string](t, ctx, `document.getElementById('diagnosis').textContent`); got != "Held and renewed" {
		t.Errorf("diagnosis %q", got)
	}
	hungLine := eval[string](t, ctx, `document.querySelector('#findings .hung li').textContent`)
	if !strings.Contains(hungLine, "held 6m 20s, renewed 18 times, 12 h ceiling in 11h 53m") {
		t.Errorf("hung lease %q", hungLine)
	}
	if href := eval[string](t, ctx, `document.querySelector('#findings .hung a').getAttribute('href')`); href != "/ui/queues/stalls/messages/"+hung {
		t.Errorf("hung lease links to %q", href)
	}
	fix := eval[string](t, ctx, `document.querySelector('#findings .finding .fix').textContent`)
	if !strings.Contains(fix, "tie the heartbeat to the work") {
		t.Errorf("fix %q", fix)
	}
	if eval[bool](t, ctx, `!document.getElementById('advice').hidden || !document.getElementById('recommend').hidden`) {
		t.Error("the advice paragraph or the timeout button shows beside the findings")
	}
	if got := eval[string](t, ctx, `[...document.querySelectorAll('#leases .lease.hung .who')].map(e => e.textContent).join('|')`); !strings.HasPrefix(got, "held far beyond the p99, still renewed · lease 1 · 18 renewals") {
		t.Errorf("hung lease in flight %q", got)
	}
	if note := eval[string](t, ctx, `document.getElementById('history-note').textContent`); !strings.Contains(note, "kept in memory and starts when the server starts") {
		t.Errorf("history note %q", note)
	}
	screenshot(t, ctx, "findings")

	// The heartbeat stops: the lease lapses, and the hung finding goes.
	at(srv, 430)
	waitFor(t, ctx, "the hung finding to go", `document.querySelectorAll('#findings .finding').length === 1 && document.querySelector('#findings .finding').dataset.kind === 'handler-failing'`)

	// A queue with two lapsed leases is too few to judge: badged so, and
	// not counted among the queues that need attention.
	two := srv.MustCreateQueue(t, "two", map[string]string{"VisibilityTimeout": "30"})
	send(t, srv, two, 2)
	receive(t, srv, two, 2)
	at(srv, 470)
	navigate(t, ctx, srv.URL+"/")
	waitFor(t, ctx, "the summary", `document.getElementById('summary').textContent.includes('1 queue needs attention')`)
	if got := eval[string](t, ctx, rowCell("two", "Leases")); !strings.Contains(got, "Too few leases") {
		t.Errorf("queue two's lease cell %q", got)
	}
}
