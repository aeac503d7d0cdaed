package e2e_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/server"
)

// The three lease incidents of the diagnostics issue, on the built binary in
// real time and read back through `baton doctor --json`. Leases are 1-2 s
// and handlers 3-4 s so that the whole test takes seconds; the fake-clock
// versions in server/doctor_test.go use the real 30 s / 90 s figures.
func TestDoctorIncidents(t *testing.T) {
	t.Parallel()
	p := startBaton(t)
	c := testutil.NewClient(p.URL)
	ctx := context.Background()

	newQueue := func(t *testing.T, name, vis string) string {
		out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: map[string]string{"VisibilityTimeout": vis}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: out.QueueUrl, MessageBody: aws.String("job")}); err != nil {
			t.Fatal(err)
		}
		return *out.QueueUrl
	}
	// receive waits (long poll) until the message is handed out.
	receive := func(t *testing.T, url string) (types.Message, time.Time) {
		for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); {
			out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, WaitTimeSeconds: 5})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Messages) == 1 {
				return out.Messages[0], time.Now()
			}
		}
		t.Fatal("message not handed out within 15 s")
		return types.Message{}, time.Time{}
	}
	del := func(t *testing.T, url string, m types.Message) {
		if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &url, ReceiptHandle: m.ReceiptHandle}); err != nil {
			t.Fatal(err)
		}
	}
	doctor := func(t *testing.T, queue string) server.LeaseReportJSON { return doctorJSON(t, p.URL, queue) }

	t.Run("lease too short", func(t *testing.T) {
		t.Parallel()
		url := newQueue(t, "slow", "1")
		const work = 3 * time.Second
		a, aStart := receive(t, url) // three workers each get the message
		b, bStart := receive(t, url)
		cc, cStart := receive(t, url)
		for _, h := range []struct {
			m     types.Message
			start time.Time
		}{{a, aStart}, {b, bStart}, {cc, cStart}} {
			time.Sleep(time.Until(h.start.Add(work))) // the handler's work
			del(t, url, h.m)
		}
		rep := doctor(t, "slow")
		if rep.Diagnosis != "lease-too-short" || rep.LateCompletions != 3 || rep.ConfirmedDuplicates < 2 {
			t.Errorf("report = %+v", rep)
		}
		if rep.RecommendedVisibilityTimeoutSeconds < 5 {
			t.Errorf("recommended %d s, want at least 5 (p99 ~3 s x 1.5)", rep.RecommendedVisibilityTimeoutSeconds)
		}
	})
	t.Run("handler failing", func(t *testing.T) {
		t.Parallel()
		url := newQueue(t, "failing", "1")
		// The consumer goes on polling: it takes the message again after
		// each lapse, the fourth time after the third lease lapsed.
		for range 4 {
			receive(t, url) // and never delete
		}
		rep := doctor(t, "failing")
		if rep.Diagnosis != "handler-failing" || rep.ExpiredLeases != 3 || rep.RedeliveriesNeverReturned != 3 || rep.LateCompletions != 0 {
			t.Errorf("report = %+v", rep)
		}
	})
	t.Run("longer lease asked on receive", func(t *testing.T) {
		t.Parallel()
		// A 1 s queue whose consumer asks for 10 s leases on ReceiveMessage
		// (as SQS allows) and takes 2 s: no lease overran.
		url := newQueue(t, "asks-longer", "1")
		for range 2 {
			if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("job")}); err != nil {
				t.Fatal(err)
			}
		}
		var got []types.Message
		for deadline := time.Now().Add(15 * time.Second); len(got) < 3 && time.Now().Before(deadline); {
			out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 10, VisibilityTimeout: 10, WaitTimeSeconds: 1})
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, out.Messages...)
		}
		if len(got) != 3 {
			t.Fatalf("received %d messages, want 3", len(got))
		}
		time.Sleep(2 * time.Second) // the handlers' work
		for _, m := range got {
			del(t, url, m)
		}
		rep := doctor(t, "asks-longer")
		if rep.Diagnosis != "healthy" || rep.LateCompletions != 0 || rep.ExpiredLeases != 0 ||
			!strings.Contains(rep.Advice, "longer than the 1s visibility timeout now in force") {
			t.Errorf("report = %+v; want healthy, no overrun, and the leases said longer than the queue's timeout", rep)
		}
	})
	t.Run("held by a holder that polls on", func(t *testing.T) {
		t.Parallel()
		// A long timeout as a blanket fix, and a handler that throws before
		// DeleteMessage: the lease runs on while its consumer goes on
		// polling. Quick leases first, for a p99.
		url := newQueue(t, "blanket", "600")
		for range 4 {
			if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("job")}); err != nil {
				t.Fatal(err)
			}
		}
		for range 4 {
			m, _ := receive(t, url)
			del(t, url, m)
		}
		receive(t, url) // the fifth handler throws
		var rep server.LeaseReportJSON
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); {
			if _, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, WaitTimeSeconds: 1}); err != nil {
				t.Fatal(err)
			}
			if rep = doctor(t, "blanket"); rep.Diagnosis == "held-unrenewed" {
				break
			}
		}
		if rep.Diagnosis != "held-unrenewed" || strings.Contains(rep.Advice, "Their holder is gone") ||
			!strings.Contains(rep.Advice, "Its holder went on making requests on the queue since it received it") {
			t.Errorf("report = %+v; want held-unrenewed by a holder not gone", rep)
		}
	})
	t.Run("healthy with renewals", func(t *testing.T) {
		t.Parallel()
		url := newQueue(t, "renewing", "2")
		m, start := receive(t, url)
		renewals := 0 // how many a busy machine lets happen in the 4 s
		for time.Since(start) < 4*time.Second {
			time.Sleep(500 * time.Millisecond)
			if _, err := c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: &url, ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 2}); err != nil {
				t.Fatal(err)
			}
			renewals++
		}
		del(t, url, m)
		rep := doctor(t, "renewing")
		if rep.Diagnosis != "healthy" || rep.ExpiredLeases != 0 || rep.LateCompletions != 0 || rep.Renewals != uint64(renewals) {
			t.Errorf("report = %+v, want healthy with the %d renewals made", rep, renewals)
		}
	})
}
