package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/consumer"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/internal/testutil/poll"
	"github.com/baton-sqs/baton/server"
)

// Issue 31's verdicts on the built `baton serve` in real time, with real
// clients: the AWS CLI, the Go consumer and `baton worker`. Each waits for
// the finding the doctor must give and checks the ones it must not. The
// fake-clock versions are in engine/doctor_verdicts_test.go; here completed
// leases take a fraction of a second and the leases judged some seconds.
func TestDoctorVerdicts(t *testing.T) {
	t.Parallel()
	p := startBaton(t)
	c := testutil.NewClient(p.URL)
	ctx := context.Background()

	newQueue := func(t *testing.T, name string, attrs map[string]string) string {
		out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
		if err != nil {
			t.Fatal(err)
		}
		return *out.QueueUrl
	}
	send := func(t *testing.T, url string, bodies ...string) (ids []string) {
		for _, b := range bodies {
			out, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String(b)})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, *out.MessageId)
		}
		return ids
	}
	// quick completes n leases at once, as a consumer whose handler is
	// fast: the queue's p99.
	quick := func(t *testing.T, url string, n int) {
		for range n {
			send(t, url, "quick")
			out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, WaitTimeSeconds: 5})
			if err != nil || len(out.Messages) != 1 {
				t.Fatalf("receive: %v, %d messages", err, len(out.Messages))
			}
			if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &url, ReceiptHandle: out.Messages[0].ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// awaitHeld polls the admin API's lease report until it gives the
	// finding kind (on at least held leases, if it names leases), and
	// returns it.
	awaitHeld := func(t *testing.T, queue, kind string, held int, within time.Duration) server.LeaseReportJSON {
		var rep server.LeaseReportJSON
		var last time.Time
		poll.For(t, within, func() error {
			if time.Since(last) < 250*time.Millisecond {
				return fmt.Errorf("no %s finding yet: %s (%s)", kind, rep.Diagnosis, rep.Advice)
			}
			last = time.Now()
			rep = leaseReportJSON(t, p.URL, queue)
			var seen []string
			for _, f := range rep.Findings {
				if f.Kind == kind && len(f.HeldLeases) >= held {
					return nil
				}
				seen = append(seen, fmt.Sprintf("%s on %d held leases", f.Kind, len(f.HeldLeases)))
			}
			return fmt.Errorf("no %s finding on %d held leases yet; findings: %v; %s (%s)", kind, held, seen, rep.Diagnosis, rep.Advice)
		})
		return rep
	}
	awaitFinding := func(t *testing.T, queue, kind string, within time.Duration) server.LeaseReportJSON {
		return awaitHeld(t, queue, kind, 0, within)
	}
	// doctorText is `baton doctor QUEUE` as an operator reads it.
	doctorText := func(t *testing.T, queue string) string {
		out, err := exec.Command(batonBin, "doctor", "--endpoint", p.URL, queue).Output()
		if err != nil {
			t.Fatalf("baton doctor: %v", err)
		}
		t.Logf("baton doctor %s:\n%s", queue, out)
		return string(out)
	}
	without := func(t *testing.T, rep server.LeaseReportJSON, kinds ...string) {
		t.Helper()
		if rep.Diagnosis == "healthy" {
			t.Errorf("HEALTHY: %s", rep.Advice)
		}
		for _, f := range rep.Findings {
			if slices.Contains(kinds, f.Kind) {
				t.Errorf("wrong cause %s: %s %s", f.Kind, f.Evidence, f.Fix)
			}
		}
	}
	has := func(t *testing.T, text string, wants ...string) {
		t.Helper()
		for _, w := range wants {
			if !strings.Contains(text, w) {
				t.Errorf("lacks %q:\n%s", w, text)
			}
		}
	}

	// Item 4: `aws sqs receive-message --max-number-of-messages 5` on a
	// live queue, left to lapse, is an inspection.
	t.Run("aws cli look", func(t *testing.T) {
		t.Parallel()
		url := newQueue(t, "looked-at", map[string]string{"VisibilityTimeout": "2"})
		quick(t, url, 3)
		send(t, url, "a", "b", "c", "d", "e")
		cmd := exec.Command("aws", "sqs", "receive-message", "--endpoint-url", p.URL, "--queue-url", url,
			"--max-number-of-messages", "5", "--output", "json")
		cmd.Env = clientEnv(t)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("aws sqs receive-message: %v\n%s", err, out)
		}
		var got struct{ Messages []json.RawMessage }
		if err := json.Unmarshal(out, &got); err != nil || len(got.Messages) != 5 {
			t.Fatalf("the AWS CLI received %d messages (%v): %s", len(got.Messages), err, out)
		}
		rep := awaitFinding(t, "looked-at", "inspection", time.Minute)
		without(t, rep, "handler-failing", "holders-stopped")
		has(t, doctorText(t, "looked-at"), "looked-at: INSPECTION\n",
			"5 leases taken by the AWS CLI lapsed: an inspection by a person, not a handler failure", "baton peek")
	})

	// Item 4, with Baton's own tool: `baton receive -n 5`, left to lapse.
	t.Run("baton receive look", func(t *testing.T) {
		t.Parallel()
		url := newQueue(t, "looked-at-too", map[string]string{"VisibilityTimeout": "2"})
		quick(t, url, 3)
		send(t, url, "a", "b", "c", "d", "e")
		cmd := exec.Command(batonBin, "receive", "--endpoint", p.URL, "-n", "5", "--json", "looked-at-too")
		cmd.Env = slices.DeleteFunc(clientEnv(t), func(kv string) bool { return strings.HasPrefix(kv, "BATON_") })
		out, err := cmd.Output()
		var got struct{ Messages []json.RawMessage }
		if err != nil || json.Unmarshal(out, &got) != nil || len(got.Messages) != 5 {
			t.Fatalf("baton receive: %v, %d messages: %s", err, len(got.Messages), out)
		}
		rep := awaitFinding(t, "looked-at-too", "inspection", time.Minute)
		without(t, rep, "handler-failing", "holders-stopped")
		has(t, doctorText(t, "looked-at-too"), "5 leases taken by baton receive lapsed: an inspection by a person, not a handler failure")
	})

	// Item 3: a long job among quick ones, renewed by Baton's consumer on
	// its handler's progress, is a long job at work: not healthy, and not
	// said to be hung.
	t.Run("go consumer long job", func(t *testing.T) {
		t.Parallel()
		url := newQueue(t, "long-jobs", map[string]string{"VisibilityTimeout": "4"})
		var quickDone atomic.Int32
		release := make(chan struct{})
		h := consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
			if d.Body() != "long" {
				quickDone.Add(1)
				return nil
			}
			tick := time.NewTicker(200 * time.Millisecond)
			defer tick.Stop()
			for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); {
				select {
				case <-release:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				case <-tick.C:
					d.Progress(ctx) // a unit of work done
				}
			}
			return nil
		})
		cons, err := consumer.New(c, url, h, consumer.WithConcurrency(2), consumer.WithRenewAhead(2*time.Second),
			consumer.WithDeleteBatchWindow(time.Millisecond), consumer.WithWaitTime(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		stop := runConsumer(ctx, cons)
		defer func() {
			close(release)
			stop()
		}()
		send(t, url, "q1", "q2", "q3", "q4", "q5")
		poll.For(t, 30*time.Second, func() error {
			if rep := leaseReportJSON(t, p.URL, "long-jobs"); rep.SinceStart.LeasesCompleted < 5 {
				return fmt.Errorf("%d quick leases completed", rep.SinceStart.LeasesCompleted)
			}
			return nil
		})
		send(t, url, "long")
		rep := awaitFinding(t, "long-jobs", "long-job", time.Minute)
		without(t, rep, "held-renewed", "held-unrenewed", "handler-failing", "lease-too-short")
		has(t, doctorText(t, "long-jobs"), "long-jobs: LONG-JOB\n", "renewed on its handler's progress",
			"each time because its handler reported progress", "A long job at work, not a hung one")
	})

	// Baton's consumer whose handler fails every message releases each
	// for a retry with a back-off: no lease lapses, and the messages go
	// round for ever. Not healthy: a retry loop, with both readings. Its
	// three slots receive several messages at a time, each handled and
	// released on its own: no batch failing whole.
	t.Run("go consumer failing with a back-off", func(t *testing.T) {
		t.Parallel()
		url := newQueue(t, "retrying", map[string]string{"VisibilityTimeout": "30"})
		h := consumer.HandlerFunc(func(ctx context.Context, d *consumer.Delivery) error {
			return fmt.Errorf("downstream refused %s", d.Body())
		})
		second := consumer.RetryPolicy{Base: time.Second, Max: time.Second, Multiplier: 1, Jitter: consumer.NoJitter, Min: time.Second}
		cons, err := consumer.New(c, url, h, consumer.WithConcurrency(3), consumer.WithRetryPolicy(second),
			consumer.WithDeleteBatchWindow(time.Millisecond), consumer.WithWaitTime(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer runConsumer(ctx, cons)()
		send(t, url, "r1", "r2", "r3")
		rep := awaitFinding(t, "retrying", "retry-loop", time.Minute)
		without(t, rep, "release-loop", "lease-too-short", "batch-fails-whole")
		has(t, doctorText(t, "retrying"), "retrying: RETRY-LOOP\n", "released with a delay", "a handler that fails and retries with a back-off",
			"or messages not ready again and again", "the server cannot tell which")
	})

	// Item 1: a consumer killed holding three messages on a 43,200 s
	// queue, its earlier leases quick: the held leases are a finding, the
	// timeout is named as the stall, and the recommendation is not 43200.
	t.Run("killed worker on a long lease", func(t *testing.T) {
		t.Parallel()
		url := newQueue(t, "long-lease", map[string]string{"VisibilityTimeout": "43200"})
		send(t, url, "ok1", "ok2", "ok3", "ok4", "ok5")
		// The command succeeds at once on "ok"; on "hang" it leaves a file
		// in started (its handler has the message) and sleeps (at most
		// 30 s, so that it does not outlive the test for long).
		started := t.TempDir()
		w := startWorker(t, p.URL, "--queue-url", "long-lease", "--batch-size", "1", "--max-concurrency", "3",
			"--command", fmt.Sprintf("if grep -q hang; then touch '%s'/$$; exec sleep 30; fi", started))
		poll.For(t, 30*time.Second, func() error {
			if rep := leaseReportJSON(t, p.URL, "long-lease"); rep.SinceStart.LeasesCompleted < 5 {
				return fmt.Errorf("%d quick leases completed", rep.SinceStart.LeasesCompleted)
			}
			return nil
		})
		hang := send(t, url, "hang1", "hang2", "hang3")
		// The worker is killed once its three handlers run: their
		// receives have answered, and a receive answers only after the
		// ledger has its lease. Three in flight is no such sign: the count
		// includes a lease from the moment the store makes it, before it
		// commits and its receive answers. A worker killed then never had
		// the third message; while the engine let the kill cancel the
		// store's call, the embedded store gave that lease back, and the
		// doctor rightly named two.
		poll.For(t, time.Minute, func() error {
			if files, err := os.ReadDir(started); err != nil || len(files) < 3 {
				return fmt.Errorf("%d hang handlers started (%v)", len(files), err)
			}
			return nil
		})
		if n := inFlight(t, c, url); n != 3 {
			t.Fatalf("%d messages in flight while the worker's three handlers hold one each", n)
		}
		w.kill() // SIGKILL: no release, no renewal
		// Far beyond is ten times the p99 of the quick leases, which a
		// loaded machine stretches to seconds: the three leases may need
		// minutes to get there.
		rep := awaitHeld(t, "long-lease", "held-unrenewed", 3, 4*time.Minute)
		for _, f := range rep.Findings {
			if f.Kind != "held-unrenewed" {
				continue
			}
			var named []string
			for _, h := range f.HeldLeases {
				named = append(named, h.MessageID)
			}
			slices.Sort(named)
			slices.Sort(hang)
			if !slices.Equal(named, hang) {
				t.Errorf("held-unrenewed names %v, want the three the killed worker held: %v", named, hang)
			}
		}
		without(t, rep, "handler-failing", "holders-stopped", "held-renewed")
		if rep.RecommendedVisibilityTimeoutSeconds >= 43200 {
			t.Errorf("recommended %d s: a timeout the completed leases do not need", rep.RecommendedVisibilityTimeoutSeconds)
		}
		has(t, doctorText(t, "long-lease"), "long-lease: HELD-UNRENEWED\n", "3 leases held far beyond the queue's p99 and not renewed since",
			"they come back when their leases end", "The visibility timeout of 43200s is", "a consumer that crashes holding messages stalls them that long")
	})

	// Item 2: `baton worker` without --report-batch-item-failures, one bad
	// message in a batch of ten: the batch fails whole, again and again,
	// each message released with a back-off, as a consumer retrying each
	// message it fails would: a retry loop, with the batch reading and its
	// fix.
	t.Run("worker batch released whole", func(t *testing.T) {
		t.Parallel()
		newQueue(t, "batch-dlq", nil)
		url := newQueue(t, "batch", map[string]string{"VisibilityTimeout": "30",
			"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:` + account + `:batch-dlq","maxReceiveCount":"3"}`})
		send(t, url, "m0", "m1", "m2", "m3", "bad", "m5", "m6", "m7", "m8", "m9")
		// The worker's retry delays are jittered message by message (on a
		// queue with a RedrivePolicy, up to several seconds apart): a
		// batching window lets the released messages come back as one
		// batch again, as the scenario needs, rather than the good ones
		// in batches of their own, which succeed.
		startWorker(t, p.URL, "--queue-url", "batch", "--batch-size", "10", "--batching-window", "15s", "--command", "if grep -q bad; then exit 1; fi")
		rep := awaitFinding(t, "batch", "retry-loop", 150*time.Second)
		without(t, rep, "release-loop", "handler-failing", "holders-stopped", "batch-fails-whole")
		has(t, doctorText(t, "batch"), "batch: RETRY-LOOP\n", "released with a delay", "received with every other message of a receive",
			"one failing message takes its batch with it", "--report-batch-item-failures")
	})

	// A "not ready" consumer on a maxReceiveCount of 1: it releases each
	// message at once (ChangeMessageVisibilityBatch 0) and its next receive
	// moves them all to the dead-letter queue, none ever worked. No
	// release followed a release, and nothing lapsed: the doctor names the
	// loop, never healthy.
	t.Run("released once then dead-lettered", func(t *testing.T) {
		t.Parallel()
		newQueue(t, "notready-dlq", nil)
		url := newQueue(t, "notready", map[string]string{"VisibilityTimeout": "30",
			"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:` + account + `:notready-dlq","maxReceiveCount":"1"}`})
		send(t, url, "m0", "m1", "m2", "m3")
		var got []types.Message
		poll.For(t, 10*time.Second, func() error {
			out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, out.Messages...)
			if len(got) < 4 {
				return fmt.Errorf("received %d of 4", len(got))
			}
			return nil
		})
		var entries []types.ChangeMessageVisibilityBatchRequestEntry
		for i, m := range got {
			entries = append(entries, types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0})
		}
		out, err := c.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: &url, Entries: entries})
		if err != nil || len(out.Failed) != 0 {
			t.Fatalf("release: %v, %v", err, out)
		}
		again, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 10})
		if err != nil || len(again.Messages) != 0 {
			t.Fatalf("receive after the release: %v, %d messages; want all moved", err, len(again.Messages))
		}
		rep := awaitFinding(t, "notready", "release-loop", 30*time.Second)
		without(t, rep, "handler-failing", "holders-stopped", "batch-fails-whole")
		has(t, doctorText(t, "notready"), "notready: RELEASE-LOOP\n", "4 messages were moved to the dead-letter queue",
			"after 1 receive that gave it straight back")
	})
}

// leaseReportJSON reads a queue's lease report from the admin API.
func leaseReportJSON(t *testing.T, endpoint, queue string) server.LeaseReportJSON {
	t.Helper()
	resp, err := http.Get(endpoint + "/admin/api/queues/" + queue + "/leases")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rep server.LeaseReportJSON
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET leases of %s: %s, %v", queue, resp.Status, err)
	}
	return rep
}

// inFlight is the queue's ApproximateNumberOfMessagesNotVisible.
func inFlight(t *testing.T, c *sqs.Client, url string) int {
	t.Helper()
	out, err := c.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: &url,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	fmt.Sscan(out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)], &n)
	return n
}

// workerProcess is a `baton worker` the test started.
type workerProcess struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

// kill ends the worker with SIGKILL and waits for it.
func (w *workerProcess) kill() {
	w.cmd.Process.Kill()
	<-w.exited
}

// startWorker starts `baton worker` against endpoint with args; it is
// stopped with SIGTERM (SIGKILL after 20 s) when the test ends.
func startWorker(t *testing.T, endpoint string, args ...string) *workerProcess {
	t.Helper()
	logs := &serverLog{addr: make(chan string, 1)}
	cmd := exec.Command(batonBin, append([]string{"worker", "--endpoint", endpoint, "--shutdown-timeout", "14s"}, args...)...)
	cmd.Env = slices.DeleteFunc(clientEnv(t), func(kv string) bool { return strings.HasPrefix(kv, "BATON_") })
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start baton worker: %v", err)
	}
	w := &workerProcess{cmd: cmd, exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(w.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-w.exited:
		default:
			cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-w.exited:
			case <-time.After(20 * time.Second):
				w.kill()
			}
		}
		if t.Failed() {
			t.Logf("baton worker output:\n%s", logs)
		}
	})
	return w
}

// runConsumer runs cons until the returned stop, which waits for it to
// end.
func runConsumer(ctx context.Context, cons *consumer.Consumer) (stop func()) {
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		cons.Run(runCtx)
	}()
	return func() {
		cancel()
		<-done
	}
}
