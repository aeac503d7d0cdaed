package e2e_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/server"
)

// A consumer holds three messages under a 12-hour timeout when the server
// restarts on its data directory: after the restart, with new leases
// completing quickly, `baton doctor` names the three as held since before
// the start by a holder it does not know, not healthy.
func TestDoctorHeldAcrossRestart(t *testing.T) {
	t.Parallel()
	args := []string{"--account-id", account, "--data-dir", t.TempDir()}
	ctx := context.Background()
	p := startBatonArgs(t, args...)
	c := testutil.NewClient(p.URL)
	out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("restarted"),
		Attributes: map[string]string{"VisibilityTimeout": "43200"}})
	if err != nil {
		t.Fatal(err)
	}
	url := *out.QueueUrl
	send := func(c *sqs.Client, n int) {
		for range n {
			if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("job")}); err != nil {
				t.Fatal(err)
			}
		}
	}
	send(c, 3)
	held := map[string]bool{}
	for deadline := time.Now().Add(30 * time.Second); len(held) < 3 && time.Now().Before(deadline); {
		got, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 3, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range got.Messages {
			held[*m.MessageId] = true
		}
	}
	if len(held) != 3 {
		t.Fatalf("received %d messages, want 3", len(held))
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("baton did not exit 30 s after SIGTERM")
	}

	p = startBatonArgs(t, args...)
	c = testutil.NewClient(p.URL)
	url = p.queueURL("restarted")
	send(c, 4)
	for done := 0; done < 4; {
		got, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, WaitTimeSeconds: 5})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range got.Messages {
			if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &url, ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
			done++
		}
		if len(got.Messages) == 0 {
			t.Fatal("the 4 messages sent after the restart were not all handed out")
		}
	}
	// The held leases are named once held 10× the p99 and at least 5 s.
	var rep server.LeaseReportJSON
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		out, err := exec.Command(batonBin, "doctor", "--endpoint", p.URL, "--json", "restarted").Output()
		if err != nil {
			t.Fatalf("baton doctor: %v", err)
		}
		if err := json.Unmarshal(out, &rep); err != nil {
			t.Fatalf("doctor --json printed %q: %v", out, err)
		}
		if rep.Diagnosis == "held-unrenewed" {
			break
		}
	}
	if rep.Diagnosis != "held-unrenewed" || len(rep.Findings) == 0 {
		t.Fatalf("report = %+v; want held-unrenewed", rep)
	}
	if hs := rep.Findings[0].HeldLeases; len(hs) != 3 {
		t.Errorf("held leases %+v, want the 3 received before the restart", hs)
	}
	for _, h := range rep.Findings[0].HeldLeases {
		if !held[h.MessageID] || !h.BeforeStart || h.Receiver != "" {
			t.Errorf("held lease %+v: want one received before the restart, its holder unknown", h)
		}
	}
	if !strings.Contains(rep.Advice, "leased before this server started") || strings.Contains(rep.Advice, "holder is gone") {
		t.Errorf("advice %q: want the holder said unknown, not gone", rep.Advice)
	}
	if rep.LeasesStarted != 4 {
		t.Errorf("leases started %d in the window, want the 4 made since the restart", rep.LeasesStarted)
	}
}
