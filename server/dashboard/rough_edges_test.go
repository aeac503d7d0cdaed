package dashboard_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/baton-sqs/baton/internal/testutil"
)

// A dead-letter queue holding messages says it holds failed ones, on the
// queues page and its own, rather than the lease doctor's "Healthy" (its
// leases may be, its messages are not); a message's SentTimestamp shows as
// a date; the sparkline's counts say which is which; and the doctor's
// figures say the period they cover, the one its findings are judged on.
func TestBrowserDeadLetterQueueAndPeriods(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	dlq := srv.MustCreateQueue(t, "orders-dlq", nil)
	orders := srv.MustCreateQueue(t, "orders", map[string]string{
		"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:orders-dlq","maxReceiveCount":"3"}`,
	})
	ids := send(t, srv, dlq, 2)
	send(t, srv, orders, 1)
	deleteMessage(t, srv, orders, receive(t, srv, orders, 1)[0])

	ctx := tab(t, 1280, 900, nil)
	navigate(t, ctx, srv.URL+"/")
	waitFor(t, ctx, "the dead-letter queue's verdict", rowCell("orders-dlq", "Leases")+` === 'Holds 2 failed messages'`)
	if got := eval[string](t, ctx, rowCell("orders", "Leases")); got != "Healthy" {
		t.Errorf("orders: %q, want Healthy", got)
	}
	if got := eval[string](t, ctx, `document.querySelector('#queues tbody tr:has(a[href$="/orders"]) .spark-text').textContent`); got != "1 sent · 1 deleted" {
		t.Errorf("orders' sparkline text %q, want 1 sent · 1 deleted", got)
	}

	navigate(t, ctx, srv.URL+"/ui/queues/orders-dlq")
	waitFor(t, ctx, "the dead-letter queue's page", `document.getElementById('tags').textContent.includes('Holds 2 failed messages')`)
	waitFor(t, ctx, "its figures' period", `document.getElementById('figures-period').textContent.startsWith('Since the server started')`)
	navigate(t, ctx, srv.URL+"/ui/queues/orders")
	waitFor(t, ctx, "orders' figures' period", `document.getElementById('figures-period').textContent.startsWith('In the last 15 minutes')`)
	if text := eval[string](t, ctx, `document.getElementById('figures').innerText`); !strings.Contains(text, "Leases begun\n1") || !strings.Contains(text, "Leases completed\n1") {
		t.Errorf("orders' figures:\n%s", text)
	}

	navigate(t, ctx, srv.URL+"/ui/queues/orders-dlq/messages")
	waitFor(t, ctx, "two rows", `document.querySelectorAll('#browse tbody tr').length === 2`)
	eval[bool](t, ctx, rowButton(ids[0]))
	waitFor(t, ctx, "the message's details", `!document.getElementById('detail').hidden`)
	sent := eval[[]string](t, ctx, `(() => { for (const dt of document.querySelectorAll('#detail-system dt')) {
		if (dt.textContent === 'SentTimestamp') { const dd = dt.nextElementSibling; return [dd.textContent, dd.title]; } }
		return []; })()`)
	want := testutil.Epoch.UTC().Format("2006-01-02 15:04:05") + " UTC"
	if len(sent) != 2 || sent[0] != want || sent[1] != strconv.FormatInt(testutil.Epoch.UnixMilli(), 10) {
		t.Errorf("SentTimestamp shown as %q, want %q with the epoch milliseconds in its title", sent, want)
	}
	screenshot(t, ctx, "dlq-messages")
}
