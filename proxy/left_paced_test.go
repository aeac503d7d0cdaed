package proxy_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton/internal/testutil/logbuf"
	"github.com/baton-sqs/baton/internal/testutil/poll"
	"github.com/baton-sqs/baton/proxy"
)

// A client whose answers are lost a few times within a minute and then
// goes away: the first loss is logged at once, and those after it are
// counted once the minute after that line has passed, saying since when,
// with no loss after them. They were counted by the client's next loss
// alike, which may never come.
func TestClientLeftBurstCounted(t *testing.T) {
	logs := &logbuf.Buffer{}
	e := newEnv(t, func(c *proxy.Config) { c.Logger = slog.New(slog.NewTextHandler(logs, nil)) })
	q := e.up.Queue(t, "jobs?VisibilityTimeout=30")
	sender := e.client("AKIDSENDER", "sender")
	first := e.clock.Now()
	timers := e.clock.Timers()
	e.front.mu.Lock()
	e.front.cut = func(r *http.Request) bool { return r.UserAgent() == "gone/1.0" }
	e.front.mu.Unlock()
	for i := range 3 { // one message each, every answer lost as it is written
		e.clock.Set(first.Add(time.Duration(i) * time.Second))
		if _, err := sender.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String("job")}); err != nil {
			t.Fatal(err)
		}
		req := bigReceive(t, e.url, q, "gone/1.0")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}
	const line = "a receive's answer reached no client as it was written"
	if n := strings.Count(logs.String(), line); n != 1 {
		t.Fatalf("%d lines for 3 answers lost within a minute, want 1:\n%s", n, logs)
	}
	poll.For(t, 30*time.Second, func() error { // the count's timer, for the minute's end
		if got := e.clock.Timers(); got != timers+1 {
			return fmt.Errorf("%d timers pending, want %d", got, timers+1)
		}
		return nil
	})
	e.clock.Set(first.Add(time.Minute))
	poll.For(t, 30*time.Second, func() error {
		if l := logs.String(); strings.Count(l, line) != 2 || !strings.Contains(l, "held_back=2 since="+first.UTC().Format(time.RFC3339)) {
			return fmt.Errorf("once the minute passed: want a second line counting the 2 held back since %v:\n%s", first, l)
		}
		return nil
	})
}
