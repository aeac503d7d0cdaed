package server_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/store/memstore"
)

// TestSNSFilterPolicyNumbers: through the SDK, a policy's number beyond
// AWS's ±10^9 is refused (InvalidParameter, 400) on Subscribe and
// SetSubscriptionAttributes, and numbers match at five decimal places.
func TestSNSFilterPolicyNumbers(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	q := srv.MustCreateQueue(t, "prices", nil)
	topic := mustCreateTopic(t, c, "prices")

	_, err := c.Subscribe(ctx, &awssns.SubscribeInput{TopicArn: aws.String(topic), Protocol: aws.String("sqs"),
		Endpoint: aws.String(snsQueueARN("prices")), Attributes: map[string]string{"FilterPolicy": `{"price":[1000000001]}`}})
	wantSNSError(t, err, "InvalidParameter", 400,
		"Invalid parameter: Attributes Reason: FilterPolicy: Value must be between -1.0E9 and 1.0E9, inclusive")

	sub := mustSubscribe(t, c, topic, snsQueueARN("prices"), map[string]string{"RawMessageDelivery": "true"})
	err = setSubAttr(c, sub, "FilterPolicy", `{"price":[{"numeric":[">",-1000000000.5]}]}`)
	wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: FilterPolicy: Value must be between -1.0E9 and 1.0E9, inclusive")

	mustSetSubAttr(t, c, sub, "FilterPolicy", `{"price":[100.123456789, {"numeric":[">=",1000000000]}]}`)
	for _, price := range []string{"100.1234567", "100.12346", "1000000000", "1000000001", "100.123449"} {
		if _, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String(price),
			MessageAttributes: map[string]snstypes.MessageAttributeValue{"price": snsAttr("Number", price)}}); err != nil {
			t.Fatalf("Publish %s: %v", price, err)
		}
	}
	if got, want := drainBodies(t, srv.Client, q), sorted("100.1234567", "1000000000"); !slices.Equal(got, want) {
		t.Errorf("queue holds %q, want %q", got, want)
	}
}

// TestSNSFilterPolicyArrayOfObjects: in the MessageBody scope, the keys of
// one policy object match one element of an array of objects.
func TestSNSFilterPolicyArrayOfObjects(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	q := srv.MustCreateQueue(t, "lines", nil)
	topic := mustCreateTopic(t, c, "orders")
	mustSubscribe(t, c, topic, snsQueueARN("lines"), map[string]string{"RawMessageDelivery": "true", "FilterPolicyScope": "MessageBody",
		"FilterPolicy": `{"lines":{"sku":["A-1"],"qty":[{"numeric":[">",5]}]}}`})
	one := `{"lines":[{"sku":"B-2","qty":1},{"sku":"A-1","qty":9}]}`
	split := `{"lines":[{"sku":"A-1","qty":1},{"sku":"B-2","qty":9}]}`
	for _, m := range []string{one, split} {
		if _, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String(m)}); err != nil {
			t.Fatalf("Publish: %v", err)
		}
	}
	if got := drainBodies(t, srv.Client, q); !slices.Equal(got, []string{one}) {
		t.Errorf("queue holds %q, want only %q", got, one)
	}
}

// wantFilterPolicyLimit: the SDK reports AWS's modeled exception, 403.
func wantFilterPolicyLimit(tb testing.TB, err error, msg string) {
	tb.Helper()
	wantSNSError(tb, err, "FilterPolicyLimitExceeded", 403, msg)
	var e *snstypes.FilterPolicyLimitExceededException
	if !errors.As(err, &e) {
		tb.Errorf("error %T is not the SDK's FilterPolicyLimitExceededException", err)
	}
}

// TestSNSFilterPolicyQuotaAcrossNodes: a topic takes 200 subscriptions with
// a filter policy, counted from the store, so that a second server of the
// same store refuses the 201st (FilterPolicyLimitExceeded, 403) on
// Subscribe and on SetSubscriptionAttributes; a subscription without a
// policy is still made, and replacing a policy is not a new one.
func TestSNSFilterPolicyQuotaAcrossNodes(t *testing.T) {
	t.Parallel()
	store := memstore.New()
	a := testutil.StartServer(t, testutil.Options{Store: store})
	b := testutil.StartServer(t, testutil.Options{Store: store})
	ca, cb, ctx := a.SNSClient(), b.SNSClient(), context.Background()
	topic := mustCreateTopic(t, ca, "busy")
	policy := map[string]string{"FilterPolicy": `{"k":["v"]}`}
	var first string
	for i := range 200 {
		arn := mustSubscribe(t, ca, topic, snsQueueARN(fmt.Sprintf("q%d", i)), policy)
		if i == 0 {
			first = arn
		}
	}
	const topicMsg = "Filter policy limit exceeded: a topic can have at most 200 subscriptions with a filter policy"
	_, err := cb.Subscribe(ctx, &awssns.SubscribeInput{TopicArn: aws.String(topic), Protocol: aws.String("sqs"),
		Endpoint: aws.String(snsQueueARN("q200")), Attributes: policy})
	wantFilterPolicyLimit(t, err, topicMsg)

	plain := mustSubscribe(t, cb, topic, snsQueueARN("q200"), nil)
	wantFilterPolicyLimit(t, setSubAttr(cb, plain, "FilterPolicy", `{"k":["w"]}`), topicMsg)
	mustSetSubAttr(t, cb, first, "FilterPolicy", `{"k":["other"]}`)                                      // a replaced policy
	mustSubscribe(t, cb, topic, snsQueueARN("q0"), map[string]string{"FilterPolicy": `{"k":["other"]}`}) // the same subscription again

	mustSetSubAttr(t, ca, first, "FilterPolicy", "")
	mustSetSubAttr(t, cb, plain, "FilterPolicy", `{"k":["w"]}`)
}

// TestSNSFilterPolicyQuotaPerAccount: an account's 10,000 subscriptions
// with a filter policy, in a region, leave room for no other, on any
// topic; a subscription without a policy is still made.
func TestSNSFilterPolicyQuotaPerAccount(t *testing.T) {
	t.Parallel()
	store := memstore.New()
	ctx := context.Background()
	for i := range 50 {
		name := fmt.Sprintf("t%d", i)
		if err := store.TopicCreate(ctx, &baton.Topic{Region: "us-east-1", Account: testutil.Account, Name: name}); err != nil {
			t.Fatal(err)
		}
		for j := range 200 {
			sub := &baton.Subscription{Region: "us-east-1", Account: testutil.Account, Topic: name, ID: fmt.Sprintf("s%d", j),
				Protocol: "sqs", Endpoint: snsQueueARN(fmt.Sprintf("q%d", j)), Owner: testutil.Account,
				Attributes: map[string]string{"FilterPolicy": `{"k":["v"]}`}}
			if err := store.SubscriptionCreate(ctx, sub); err != nil {
				t.Fatal(err)
			}
		}
	}
	srv := testutil.StartServer(t, testutil.Options{Store: store})
	c := srv.SNSClient()
	topic := mustCreateTopic(t, c, "fresh")
	_, err := c.Subscribe(ctx, &awssns.SubscribeInput{TopicArn: aws.String(topic), Protocol: aws.String("sqs"),
		Endpoint: aws.String(snsQueueARN("q")), Attributes: map[string]string{"FilterPolicy": `{"k":["v"]}`}})
	wantFilterPolicyLimit(t, err, "Filter policy limit exceeded: an account can have at most 10000 subscriptions with a filter policy in a region")
	mustSubscribe(t, c, topic, snsQueueARN("q"), nil)
}

// TestSNSFIFOTopicLimits: a FIFO topic takes 100 subscriptions
// (SubscriptionLimitExceeded, 403, beyond); a FIFO queue's subscription
// needs a FIFO dead-letter queue, with AWS's text on Subscribe and on
// SetSubscriptionAttributes, while a standard queue's may use a standard
// one.
func TestSNSFIFOTopicLimits(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	out, err := c.CreateTopic(ctx, &awssns.CreateTopicInput{Name: aws.String("events.fifo"), Attributes: map[string]string{"FifoTopic": "true"}})
	if err != nil {
		t.Fatal(err)
	}
	topic := *out.TopicArn

	standardDLQ := `{"deadLetterTargetArn":"` + snsQueueARN("dlq") + `"}`
	fifoDLQ := `{"deadLetterTargetArn":"` + snsQueueARN("dlq.fifo") + `"}`
	_, err = c.Subscribe(ctx, &awssns.SubscribeInput{TopicArn: aws.String(topic), Protocol: aws.String("sqs"),
		Endpoint: aws.String(snsQueueARN("a.fifo")), Attributes: map[string]string{"RedrivePolicy": standardDLQ}})
	wantSNSError(t, err, "InvalidParameter", 400,
		"Invalid parameter: Attributes Reason: RedrivePolicy: must use a FIFO queue as DLQ for a FIFO Subscription to a FIFO Topic.")
	fifoSub := mustSubscribe(t, c, topic, snsQueueARN("a.fifo"), map[string]string{"RedrivePolicy": fifoDLQ})
	wantSNSError(t, setSubAttr(c, fifoSub, "RedrivePolicy", standardDLQ), "InvalidParameter", 400,
		"Invalid parameter: RedrivePolicy: must use a FIFO queue as DLQ for a FIFO Subscription to a FIFO Topic.")
	mustSubscribe(t, c, topic, snsQueueARN("b"), map[string]string{"RedrivePolicy": standardDLQ})

	for i := 2; i < 100; i++ {
		mustSubscribe(t, c, topic, snsQueueARN(fmt.Sprintf("q%d.fifo", i)), nil)
	}
	_, err = c.Subscribe(ctx, &awssns.SubscribeInput{TopicArn: aws.String(topic), Protocol: aws.String("sqs"),
		Endpoint: aws.String(snsQueueARN("one-more.fifo"))})
	wantSNSError(t, err, "SubscriptionLimitExceeded", 403, "Subscription limit exceeded: a FIFO topic can have at most 100 subscriptions")
	var e *snstypes.SubscriptionLimitExceededException
	if !errors.As(err, &e) {
		t.Errorf("error %T is not the SDK's SubscriptionLimitExceededException", err)
	}
	mustSubscribe(t, c, topic, snsQueueARN("a.fifo"), map[string]string{"RedrivePolicy": fifoDLQ}) // the same one again
}

// TestSNSStandardTopicFIFODeadLetter: AWS documents that "standard topic
// subscriptions use standard queues" as dead-letter queues ("Amazon SNS
// dead-letter queues", Amazon SNS Developer Guide) and records no refusal
// of a FIFO one: Subscribe and SetSubscriptionAttributes take it, as they
// take a standard one. A copy sent there has no message group, so the
// FIFO queue refuses it: the publish succeeds and the copy is dropped (with
// a log line), as a copy no dead-letter queue takes; a standard
// dead-letter queue takes it.
func TestSNSStandardTopicFIFODeadLetter(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	topic := mustCreateTopic(t, c, "orders")
	fifoDLQ := srv.MustCreateQueue(t, "dlq.fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"})
	standardDLQ := srv.MustCreateQueue(t, "dlq", nil)
	redrive := func(dlq string) string { return `{"deadLetterTargetArn":"` + snsQueueARN(dlq) + `"}` }
	var gone []string
	for _, q := range []string{"a", "b"} {
		gone = append(gone, srv.MustCreateQueue(t, q, nil))
	}
	mustSubscribe(t, c, topic, snsQueueARN("a"), map[string]string{"RedrivePolicy": redrive("dlq.fifo")})
	b := mustSubscribe(t, c, topic, snsQueueARN("b"), map[string]string{"RedrivePolicy": redrive("dlq")})
	if err := setSubAttr(c, b, "RedrivePolicy", redrive("dlq.fifo")); err != nil {
		t.Errorf("SetSubscriptionAttributes RedrivePolicy to a FIFO queue on a standard topic: %v, want it taken", err)
	}
	if err := setSubAttr(c, b, "RedrivePolicy", redrive("dlq")); err != nil {
		t.Fatal(err)
	}
	for _, u := range gone { // every copy then goes to its dead-letter queue
		if _, err := srv.Client.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(u)}); err != nil {
			t.Fatal(err)
		}
	}
	publishOne(t, srv, topic)
	if got := queueHolds(t, srv, fifoDLQ); got != 0 {
		t.Errorf("the FIFO dead-letter queue holds %d copies, want 0", got)
	}
	if got := queueHolds(t, srv, standardDLQ); got != 1 {
		t.Errorf("the standard dead-letter queue holds %d copies, want 1", got)
	}
}
