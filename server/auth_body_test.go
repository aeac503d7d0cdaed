package server_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// TestAuthBodiesOfEverySize sends signed messages of sizes on both sides
// of the largest body a signed request reads into a reused buffer, each of
// its own text, and receives every one intact: nothing the server keeps
// refers into a buffer that a later request overwrites.
func TestAuthBodiesOfEverySize(t *testing.T) {
	t.Parallel()
	srv := startAuthServer(t)
	ctx := context.Background()
	u := srv.MustCreateQueue(t, "sizes", nil)
	sent := map[string]bool{}
	for i, size := range []int{1, 1000, 20 << 10, 63 << 10, 65 << 10, 200 << 10, 10, 2000} {
		body := strings.Repeat(string(rune('a'+i)), size)
		if _, err := srv.Client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &u, MessageBody: aws.String(body)}); err != nil {
			t.Fatalf("SendMessage of %d bytes: %v", size, err)
		}
		sent[body] = true
	}
	for len(sent) > 0 {
		out, err := srv.Client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &u, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatalf("ReceiveMessage: %v", err)
		}
		if len(out.Messages) == 0 {
			t.Fatalf("%d messages never came back", len(sent))
		}
		for _, m := range out.Messages {
			if !sent[*m.Body] {
				t.Fatalf("received a body of %d bytes that was not sent (or twice): %.40q", len(*m.Body), *m.Body)
			}
			delete(sent, *m.Body)
			if _, err := srv.Client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &u, ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatalf("DeleteMessage %s: %v", strconv.Quote(*m.MessageId), err)
			}
		}
	}
}
