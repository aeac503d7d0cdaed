package cli_test

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// A user of ElasticMQ or goaws converts the file that declared their
// queues, and baton serve --config creates the same queues from it: same
// attributes, dead-letter queues and tags; what Baton does not do is
// said, not dropped. goaws's topics are created with their queue
// subscriptions.
func TestConvertThenServe(t *testing.T) {
	t.Parallel()
	env := cliEnv(t)
	for _, tt := range []struct {
		format, file string
		notes        []string
		attrs        map[string]map[string]string
		dlq          map[string]string
		tags         map[string]map[string]string
		// topics: each topic's subscribed queues, with the attributes
		// their subscriptions must have.
		topics map[string]map[string]map[string]string
	}{
		{
			format: "elasticmq", file: "elasticmq.conf",
			notes: []string{`copyTo = "audit"`, "port 9325"},
			attrs: map[string]map[string]string{
				"orders":        {"VisibilityTimeout": "10", "DelaySeconds": "5", "ReceiveMessageWaitTimeSeconds": "0"},
				"invoices.fifo": {"VisibilityTimeout": "120", "ReceiveMessageWaitTimeSeconds": "20", "FifoQueue": "true", "ContentBasedDeduplication": "true"},
			},
			dlq:  map[string]string{"orders": "orders-dead-letters", "invoices.fifo": "invoices-dlq.fifo"},
			tags: map[string]map[string]string{"orders": {"team": "payments", "tier": "gold"}},
		},
		{
			format: "goaws", file: "goaws.yaml",
			notes: []string{"region: Baton keeps each region's queues apart"},
			attrs: map[string]map[string]string{
				"local-queue1": {"VisibilityTimeout": "10", "ReceiveMessageWaitTimeSeconds": "10"},
				"local-queue2": {"VisibilityTimeout": "150", "ReceiveMessageWaitTimeSeconds": "20", "MaximumMessageSize": "2048"},
				"local-queue5": {"VisibilityTimeout": "10"},
			},
			dlq: map[string]string{"local-queue3": "local-queue3-dlq"},
			topics: map[string]map[string]map[string]string{
				"local-topic1": {
					"local-queue4": {"RawMessageDelivery": "false"},
					"local-queue5": {"RawMessageDelivery": "true", "FilterPolicy": `{"foo":["bar"]}`},
				},
				"local-topic2": {},
			},
		},
	} {
		t.Run(tt.format, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "baton.yaml")
			res := runCLI(t, env, nil, "convert", tt.format, filepath.Join("..", "..", "docs", "migrating", tt.file), "-o", out)
			if res.code != 0 {
				t.Fatalf("convert: %s", res)
			}
			yml, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range tt.notes {
				if !strings.Contains(res.stderr, n) || !strings.Contains(string(yml), n) {
					t.Errorf("the note %q is missing from standard error or the file:\n%s\n%s", n, res.stderr, yml)
				}
			}
			// listen: the converted file keeps goaws's port; the test
			// needs a free one, which a flag gives over the file.
			p := startServe(t, env, "--store", "memory", "--config", out)
			c := client(p.URL, "AKIDTEST", "secret", nil)
			for q, want := range tt.attrs {
				got := getAttrs(t, c, p.URL+"/000000000000", q)
				for k, v := range want {
					if got[k] != v {
						t.Errorf("queue %s: %s = %q, want %q", q, k, got[k], v)
					}
				}
			}
			for q, dlq := range tt.dlq {
				if rp := getAttrs(t, c, p.URL+"/000000000000", q)["RedrivePolicy"]; !strings.Contains(rp, ":"+dlq+`"`) {
					t.Errorf("queue %s: RedrivePolicy %s, want its dead-letter queue %s", q, rp, dlq)
				}
			}
			for q, want := range tt.tags {
				got, err := c.ListQueueTags(context.Background(), &sqs.ListQueueTagsInput{QueueUrl: aws.String(p.URL + "/000000000000/" + q)})
				if err != nil || !maps.Equal(got.Tags, want) {
					t.Errorf("queue %s: tags %v %v, want %v", q, got, err, want)
				}
			}
			for topic, want := range tt.topics {
				if got := subscribedQueues(t, p.URL, topic); !maps.EqualFunc(got, want, maps.Equal) {
					t.Errorf("topic %s: subscriptions %v, want %v", topic, got, want)
				}
			}
		})
	}
}

// subscribedQueues lists the subscriptions of the topic named topic on the
// server at url: each subscribed queue's name, with the subscription's
// RawMessageDelivery and FilterPolicy (when set).
func subscribedQueues(t *testing.T, url, topic string) map[string]map[string]string {
	t.Helper()
	c := awssns.New(awssns.Options{BaseEndpoint: aws.String(url), Region: "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""), RetryMaxAttempts: 1})
	ctx := context.Background()
	list, err := c.ListSubscriptionsByTopic(ctx, &awssns.ListSubscriptionsByTopicInput{TopicArn: aws.String("arn:aws:sns:us-east-1:000000000000:" + topic)})
	if err != nil {
		t.Fatalf("topic %s: %v", topic, err)
	}
	got := map[string]map[string]string{}
	for _, s := range list.Subscriptions {
		a, err := c.GetSubscriptionAttributes(ctx, &awssns.GetSubscriptionAttributesInput{SubscriptionArn: s.SubscriptionArn})
		if err != nil {
			t.Fatalf("subscription %s: %v", aws.ToString(s.SubscriptionArn), err)
		}
		attrs := map[string]string{"RawMessageDelivery": a.Attributes["RawMessageDelivery"]}
		if fp, ok := a.Attributes["FilterPolicy"]; ok {
			attrs["FilterPolicy"] = fp
		}
		endpoint := aws.ToString(s.Endpoint)
		got[endpoint[strings.LastIndexByte(endpoint, ':')+1:]] = attrs
	}
	return got
}

// A converted file that baton serve would refuse is refused by convert,
// with the reason, rather than written.
func TestConvertRefusesWhatServeWould(t *testing.T) {
	t.Parallel()
	conf := writeFile(t, "elasticmq.conf", "queues {\n  standard {\n    contentBasedDeduplication = true\n  }\n}\n")
	out := filepath.Join(t.TempDir(), "baton.yaml")
	res := runCLI(t, cliEnv(t), nil, "convert", "elasticmq", conf, "-o", out)
	if res.code == 0 || !strings.Contains(res.stderr, "ContentBasedDeduplication") || strings.Contains(res.stderr, "line ") || !strings.Contains(res.stderr, "queue standard") {
		t.Errorf("convert of a file serve refuses: %s", res)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("the refused output was written: %v", err)
	}
}
