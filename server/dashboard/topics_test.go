package dashboard_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/baton-sqs/baton/internal/testutil"
)

// The topics page lists each topic with its subscriptions and counts, and
// shows where each recent publish went: delivered to which queue, failed
// for a queue that does not exist and why; a new publish appears without
// a reload.
func TestBrowserTopicsPage(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.SNSClient()
	srv.MustCreateQueue(t, "billing", nil)
	srv.MustCreateQueue(t, "audit", nil)
	topic, err := c.CreateTopic(bg, &awssns.CreateTopicInput{Name: aws.String("orders")})
	if err != nil {
		t.Fatal(err)
	}
	subscribe := func(queue string, attrs map[string]string) {
		t.Helper()
		if _, err := c.Subscribe(bg, &awssns.SubscribeInput{TopicArn: topic.TopicArn, Protocol: aws.String("sqs"),
			Endpoint: aws.String("arn:aws:sqs:us-east-1:" + testutil.Account + ":" + queue), Attributes: attrs}); err != nil {
			t.Fatal(err)
		}
	}
	subscribe("billing", map[string]string{"RawMessageDelivery": "true"})
	subscribe("audit", nil)
	subscribe("gone", nil)
	srv.MustCreateQueue(t, "refunds", nil)
	subscribe("refunds", map[string]string{"FilterPolicy": `{"kind":["refund"]}`})
	if _, err := c.CreateTopic(bg, &awssns.CreateTopicInput{Name: aws.String("quiet")}); err != nil {
		t.Fatal(err)
	}
	publish := func(subject string) string {
		t.Helper()
		out, err := c.Publish(bg, &awssns.PublishInput{TopicArn: topic.TopicArn, Message: aws.String("paid"), Subject: aws.String(subject)})
		if err != nil {
			t.Fatal(err)
		}
		return *out.MessageId
	}
	first := publish("Order 7")

	ctx := tab(t, 1280, 900, nil)
	navigate(t, ctx, srv.URL+"/ui/topics")
	row := `document.querySelector('#topics tr[data-topic="orders"]')`
	waitFor(t, ctx, "the orders row", row+` && `+row+`.querySelector('td[data-label="Published"]').textContent === "1"`)
	if got := eval[string](t, ctx, row+`.querySelector('.subs').innerText`); !strings.Contains(got, "billing raw") ||
		!strings.Contains(got, "audit envelope") || !strings.Contains(got, "gone envelope") || !strings.Contains(got, "refunds envelope filter") {
		t.Errorf("orders' subscriptions cell = %q, want billing (raw), audit (envelope) and the missing queue gone", got)
	}
	if !eval[bool](t, ctx, row+`.querySelector('.subs a[href="/ui/queues/billing"]') !== null`) {
		t.Error("the billing subscription does not link to the queue's page")
	}
	// No queue has a Policy letting the topic send: each is marked, with
	// Baton's note on hover (--sns-queue-policies warn, the default).
	if got := eval[string](t, ctx, row+`.querySelector('li[data-endpoint$=":billing"] .queue-policy').title`); !strings.HasPrefix(got, "AWS would not deliver its copies: the queue has no Policy") {
		t.Errorf("billing's queue-policy mark = %q, want AWS's refusal on hover", got)
	}
	for label, want := range map[string]string{"Delivered": "2", "Filtered": "1", "Failed": "1"} {
		if got := eval[string](t, ctx, row+`.querySelector('td[data-label="`+label+`"]').textContent`); got != want {
			t.Errorf("orders %s = %q, want %s", label, got, want)
		}
	}
	if got := eval[string](t, ctx, `document.querySelector('#topics tr[data-topic="quiet"] .subs').innerText`); got != "none" {
		t.Errorf("quiet's subscriptions = %q, want none", got)
	}

	pub := `document.querySelector('#publishes tr[data-message="` + first + `"]')`
	waitFor(t, ctx, "the publish row", pub+` !== null`)
	outcome := func(queue string) string {
		return eval[string](t, ctx, pub+`.querySelector('li[data-queue="`+queue+`"]').innerText`)
	}
	for _, q := range []string{"billing", "audit"} {
		if got := outcome(q); !strings.HasPrefix(got, "delivered "+q) || !strings.Contains(got, "queue policy AWS would not deliver this copy: the queue has no Policy") {
			t.Errorf("outcome for %s = %q, want delivered, with the note that AWS would not deliver it", q, got)
		}
	}
	if got := outcome("gone"); !strings.HasPrefix(got, "failed gone") || !strings.Contains(got, "QueueDoesNotExist") {
		t.Errorf("outcome for gone = %q, want failed with QueueDoesNotExist", got)
	}
	if got := outcome("refunds"); got != `filtered out refunds by the policy {"kind":["refund"]}` {
		t.Errorf("outcome for refunds = %q, want filtered out by its policy", got)
	}
	if got := eval[string](t, ctx, pub+`.innerText`); !strings.Contains(got, "Order 7") {
		t.Errorf("publish row = %q, want the subject Order 7", got)
	}
	waitFor(t, ctx, "the live indicator", `document.getElementById('live').dataset.state === 'live'`)
	screenshot(t, ctx, "topics")

	// A publish shows up without a reload, newest first.
	eval[bool](t, ctx, `window.sameDocument = true`)
	second := publish("Order 8")
	waitFor(t, ctx, "the second publish", `document.querySelector('#publishes tbody tr').dataset.message === "`+second+`"`)
	if !eval[bool](t, ctx, `window.sameDocument === true`) {
		t.Error("the page was reloaded")
	}

	// On a phone's width nothing overflows.
	narrow := tab(t, 390, 800, nil)
	navigate(t, narrow, srv.URL+"/ui/topics")
	waitFor(t, narrow, "the publish rows", `document.querySelectorAll('#publishes tbody tr').length === 2`)
	noHorizontalOverflow(t, narrow, "topics")
	screenshot(t, narrow, "topics-narrow")
}
