package dashboard_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/store/memstore"
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
	// 0.6 s past a whole second: the hung lease's held time is shown
	// rounded as the finding's own text rounds it (6m21s), not truncated.
	srv.Clock.Set(testutil.Epoch.Add(410*time.Second + 600*time.Millisecond))

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
	if !strings.Contains(hungLine, "held 6m 21s, renewed 18 times, 12 h ceiling in 11h 53m") {
		t.Errorf("hung lease %q", hungLine)
	}
	if ev := eval[string](t, ctx, `document.querySelector('#findings .finding .evidence').textContent`); !strings.Contains(ev, "6m21s") {
		t.Errorf("the held-renewed finding's evidence %q does not give the held time the hung lease's line gives", ev)
	}
	if href := eval[string](t, ctx, `document.querySelector('#findings .hung a').getAttribute('href')`); href != "/ui/queues/stalls/messages/"+hung {
		t.Errorf("hung lease links to %q", href)
	}
	// Each finding says when its latest event was; the held lease runs now.
	lapsed := testutil.Epoch.Add(61 * time.Second).UTC().Format(time.RFC3339)
	if got := eval[string](t, ctx, `[...document.querySelectorAll('#findings .finding')].map(f => f.dataset.kind + ':' + (f.querySelector('.last-seen') || {}).textContent).join(' | ')`); got != "held-renewed:undefined | handler-failing:last lapse 5m50s ago, at "+lapsed {
		t.Errorf("latest events %q", got)
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

// A server restarted while a consumer held three leases under a 12-hour
// timeout: the finding names them as leased before the server started,
// their holder not known, and counts their renewals since the start only.
// It used to list them as any lease, "renewed 0 times", as if the server
// had seen them begin and never renewed.
func TestBrowserLeaseFindingsBeforeStart(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	first := testutil.StartServer(t, testutil.Options{Store: st})
	url := first.MustCreateQueue(t, "restarted", map[string]string{"VisibilityTimeout": "43200"})
	held := send(t, first, url, 3)
	receive(t, first, url, 3)

	// Two hours later a server starts on the same store; new work flows
	// and completes in a second.
	srv := testutil.StartServer(t, testutil.Options{Store: st})
	at(srv, 7200)
	url = srv.MustCreateQueue(t, "restarted", map[string]string{"VisibilityTimeout": "43200"})
	for i := range 5 {
		at(srv, 7200+2*i)
		send(t, srv, url, 1)
		m := receive(t, srv, url, 1)[0]
		at(srv, 7200+2*i+1)
		deleteMessage(t, srv, url, m)
	}
	at(srv, 7220)

	ctx := tab(t, 1280, 900, nil)
	navigate(t, ctx, srv.URL+"/ui/queues/restarted")
	waitFor(t, ctx, "the held leases", `document.querySelectorAll('#findings .hung li').length === 3`)
	lines := eval[[]string](t, ctx, `[...document.querySelectorAll('#findings .hung li')].map(li => li.textContent)`)
	for _, line := range lines {
		if !strings.Contains(line, "held 2h, leased before the server started; holder not known, renewed 0 times since the server started") {
			t.Errorf("held lease %q: want it said leased before the server started, holder not known, renewals since the start", line)
		}
	}
	hrefs := eval[[]string](t, ctx, `[...document.querySelectorAll('#findings .hung a')].map(a => a.getAttribute('href'))`)
	for _, id := range held {
		if !slices.Contains(hrefs, "/ui/queues/restarted/messages/"+id) {
			t.Errorf("held leases link to %v; want %s among them", hrefs, id)
		}
	}
}

// The leases in flight that were running when the server started say so
// in the list of leases in flight, as the findings do: their holder is not
// known, and their renewals are counted since the start. The list used to
// show them as any lease, as if the server had seen them begin.
func TestBrowserInFlightBeforeStart(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	first := testutil.StartServer(t, testutil.Options{Store: st})
	url := first.MustCreateQueue(t, "restarted", map[string]string{"VisibilityTimeout": "43200"})
	send(t, first, url, 2)
	receive(t, first, url, 2)

	// An hour later a server starts on the same store; one lease begins
	// there.
	srv := testutil.StartServer(t, testutil.Options{Store: st})
	at(srv, 3600)
	url = srv.MustCreateQueue(t, "restarted", map[string]string{"VisibilityTimeout": "43200"})
	send(t, srv, url, 1)
	receive(t, srv, url, 1)
	at(srv, 3610)

	ctx := tab(t, 1280, 900, nil)
	navigate(t, ctx, srv.URL+"/ui/queues/restarted")
	waitFor(t, ctx, "the leases in flight", `document.querySelectorAll('#leases li').length === 3`)
	lines := eval[[]string](t, ctx, `[...document.querySelectorAll('#leases li .who')].map(w => w.textContent)`)
	var before, known int
	for _, line := range lines {
		switch {
		case strings.Contains(line, "leased before the server started; holder not known"):
			before++
		case strings.Contains(line, "held 10s of 12h"):
			known++
		default:
			t.Errorf("lease in flight %q: want it said whether it was leased before the server started", line)
		}
	}
	if before != 2 || known != 1 {
		t.Errorf("leases in flight %q: want 2 leased before the server started and 1 since", lines)
	}
	screenshot(t, ctx, "in-flight-before-start")
}
