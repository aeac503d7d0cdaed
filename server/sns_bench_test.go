package server_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton/batontest"
	"github.com/baton-sqs/baton/store/pebblestore"
)

// BenchmarkSNSPublish publishes through the SDK, 8 clients at once, to a
// topic with 1, 5 and 20 subscribed queues (signed envelopes, or raw: no
// signature to make) on the
// embedded store with full durability: each publish is answered once its
// copies are fsynced in every queue. publishes/s is per publish, copies/s
// per queue copy.
func BenchmarkSNSPublish(b *testing.B) {
	for _, tc := range []struct {
		n   int
		raw string
	}{{1, "false"}, {5, "false"}, {20, "false"}, {1, "true"}, {20, "true"}} {
		n := tc.n
		b.Run(fmt.Sprintf("queues=%d/raw=%s", n, tc.raw), func(b *testing.B) {
			st, err := pebblestore.Open(context.Background(), b.TempDir(), pebblestore.Options{})
			if err != nil {
				b.Fatal(err)
			}
			srv := batontest.New(b, batontest.WithStore(st))
			c, ctx := srv.SNSClient(), context.Background()
			topic := mustCreateTopic(b, c, "bench")
			for i := range n {
				q := fmt.Sprintf("q%d", i)
				if _, err := srv.Client().CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(q)}); err != nil {
					b.Fatal(err)
				}
				mustSubscribe(b, c, topic, snsQueueARN(q), map[string]string{"RawMessageDelivery": tc.raw})
			}
			b.SetParallelism(4) // 8 clients on 2 processors
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("a message of some 40 bytes, as events are")}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			s := b.Elapsed().Seconds()
			b.ReportMetric(float64(b.N)/s, "publishes/s")
			b.ReportMetric(float64(b.N*n)/s, "copies/s")
		})
	}
}
