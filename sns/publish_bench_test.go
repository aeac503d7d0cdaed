package sns_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/sns"
	"github.com/baton-sqs/baton/store/memstore"
)

// allowTopicPolicy is the queue Policy AWS's console writes for a topic's
// subscription: sns.amazonaws.com may SendMessage when the source is the
// topic.
func allowTopicPolicy(queueARN, topicARN string) string {
	return fmt.Sprintf(`{"Version":"2012-10-17","Id":"%[1]s/SQSDefaultPolicy","Statement":[{"Sid":"topic-subscription-%[2]s",`+
		`"Effect":"Allow","Principal":{"Service":"sns.amazonaws.com"},"Action":"SQS:SendMessage","Resource":"%[1]s",`+
		`"Condition":{"ArnLike":{"aws:SourceArn":"%[2]s"}}}]}`, queueARN, topicARN)
}

// BenchmarkPublishFanOut publishes, one at a time, a raw message to a
// topic of 10 subscribed queues on the memory store, whose Policy lets the
// topic send, under each queue policy mode: the CPU and allocations of
// the fan-out itself, without signing or disk. reads/publish counts the
// store's reads of topics, subscriptions and queues.
func BenchmarkPublishFanOut(b *testing.B) {
	for _, mode := range []sns.QueuePolicyMode{sns.QueuePoliciesWarn, sns.QueuePoliciesEnforce, sns.QueuePoliciesOff} {
		b.Run("queues=10/mode="+mode.String(), func(b *testing.B) {
			st := &countingStore{Store: memstore.New()}
			eng, err := engine.New(engine.Config{Store: st, Clock: clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { eng.Close() })
			svc := sns.ForStore(eng, st, slog.New(slog.NewTextHandler(io.Discard, nil)))
			b.Cleanup(svc.Close)
			svc.SetQueuePolicyMode(mode)
			c, ctx := sns.Caller{Account: "000000000000"}, context.Background()
			topic, err := svc.CreateTopic(ctx, c, sns.CreateTopicParams{Name: "orders"})
			if err != nil {
				b.Fatal(err)
			}
			for i := range 10 {
				name := fmt.Sprintf("q%d", i)
				arn := "arn:aws:sqs:us-east-1:000000000000:" + name
				if _, err := eng.CreateQueue(ctx, engine.CreateQueueParams{Account: c.Account, Name: name,
					Attributes: map[string]string{"Policy": allowTopicPolicy(arn, topic)}}); err != nil {
					b.Fatal(err)
				}
				if _, err := svc.Subscribe(ctx, c, sns.SubscribeParams{TopicARN: topic, Protocol: "sqs", Endpoint: arn,
					Attributes: map[string]string{"RawMessageDelivery": "true"}}); err != nil {
					b.Fatal(err)
				}
			}
			p := sns.PublishParams{TopicARN: topic, Message: "a message of some 40 bytes, as events are"}
			b.ReportAllocs()
			st.reads.Store(0)
			b.ResetTimer()
			for range b.N {
				if _, err := svc.Publish(ctx, c, p); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(st.reads.Load())/float64(b.N), "reads/publish")
			if r := svc.RecentPublishes(c.Account, "")[0]; r.Delivered != 10 || r.Outcomes[0].Warning != "" {
				b.Fatalf("last publish: %+v, want 10 copies delivered without a warning", r)
			}
		})
	}
}
