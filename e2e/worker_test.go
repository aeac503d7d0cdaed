package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/internal/testutil"
)

// TestWorker runs the built `baton worker` against a built `baton serve`
// and an HTTP target: a batch of ten with two reported failures (only those
// come back), then SIGTERM in the middle of a batch (the worker cancels the
// request, releases the leases at once and exits 0; nothing is lost; a
// second SIGTERM is answered in the log and changes nothing).
func TestWorker(t *testing.T) {
	t.Parallel()
	srv := startBaton(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client := testutil.NewClient(srv.URL)
	created, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("e2e-worker"),
		Attributes: map[string]string{"VisibilityTimeout": "30"}})
	if err != nil {
		t.Fatalf("CreateQueue: %v", err)
	}
	url := *created.QueueUrl

	// The target fails m2 and m7 the first time; in the second phase it
	// works until the worker gives up on the request.
	var mu sync.Mutex
	var seen []string // body:receive count
	failed := map[string]bool{}
	holding := make(chan struct{}, 10)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ev struct {
			Records []struct {
				MessageID  string `json:"messageId"`
				Body       string `json:"body"`
				Attributes map[string]string
			}
		}
		if err := json.NewDecoder(r.Body).Decode(&ev); err != nil {
			t.Errorf("target: not an event: %v", err)
		}
		var items []string
		mu.Lock()
		for _, rec := range ev.Records {
			seen = append(seen, rec.Body+":"+rec.Attributes["ApproximateReceiveCount"])
			if (rec.Body == "m2" || rec.Body == "m7") && !failed[rec.Body] {
				failed[rec.Body] = true
				items = append(items, fmt.Sprintf(`{"itemIdentifier":%q}`, rec.MessageID))
			}
		}
		mu.Unlock()
		if len(ev.Records) > 0 && strings.HasPrefix(ev.Records[0].Body, "slow") {
			holding <- struct{}{}
			<-r.Context().Done()
			return
		}
		io.WriteString(w, `{"batchItemFailures":[`+strings.Join(items, ",")+`]}`)
	}))
	defer target.Close()

	send := func(bodies ...string) {
		t.Helper()
		var entries []types.SendMessageBatchRequestEntry
		for i, b := range bodies {
			entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(b)})
		}
		if out, err := client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: &url, Entries: entries}); err != nil || len(out.Failed) > 0 {
			t.Fatalf("send: %v %+v", err, out)
		}
	}
	counts := func() (visible, inflight string) {
		out, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &url,
			AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
		if err != nil {
			t.Fatalf("GetQueueAttributes: %v", err)
		}
		return out.Attributes["ApproximateNumberOfMessages"], out.Attributes["ApproximateNumberOfMessagesNotVisible"]
	}
	send("m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "m9")

	logs := &serverLog{addr: make(chan string, 1)}
	cmd := exec.Command(batonBin, "worker", "--endpoint", srv.URL, "--queue-url", "e2e-worker", "--http", target.URL,
		"--report-batch-item-failures", "--max-concurrency", "1", "--shutdown-timeout", "6s")
	cmd.Env = slices.DeleteFunc(clientEnv(t), func(kv string) bool { return strings.HasPrefix(kv, "BATON_") })
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start baton worker: %v", err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	defer func() {
		select {
		case <-exited:
		default:
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("baton worker output:\n%s", logs)
		}
	}()

	testutil.CheckFor(t, 30*time.Second, func() error {
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		if v, f := counts(); v != "0" || f != "0" || n != 12 {
			return fmt.Errorf("%s visible, %s in flight, %d deliveries of messages", v, f, n)
		}
		return nil
	})
	mu.Lock()
	got := append([]string(nil), seen...)
	mu.Unlock()
	sort.Strings(got)
	if want := "[m0:1 m1:1 m2:1 m2:2 m3:1 m4:1 m5:1 m6:1 m7:1 m7:2 m8:1 m9:1]"; fmt.Sprint(got) != want {
		t.Errorf("deliveries %v, want each once and m2, m7 twice", got)
	}

	send("slow0", "slow1", "slow2")
	select {
	case <-holding:
	case <-time.After(30 * time.Second):
		t.Fatal("the slow batch never reached the target")
	}
	signalled := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	// A second signal, as an impatient operator sends: it is answered in
	// the log, and the shutdown goes on (leases released, exit status 0).
	testutil.CheckFor(t, 10*time.Second, func() error {
		if !strings.Contains(logs.String(), "worker stopping") {
			return fmt.Errorf("no stopping line yet")
		}
		return nil
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("second SIGTERM: %v", err)
	}
	select {
	case <-exited:
		if waitErr != nil {
			t.Errorf("baton worker after SIGTERM: %v, want exit status 0", waitErr)
		}
		if d := time.Since(signalled); d > 10*time.Second {
			t.Errorf("exited %v after SIGTERM, want within the 6 s shutdown timeout", d)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("baton worker did not exit 20 s after SIGTERM")
	}
	if v, f := counts(); v != "3" || f != "0" {
		t.Errorf("after the worker's exit: %s visible, %s in flight; want the 3 slow messages released", v, f)
	}
	for _, want := range []string{"worker started", "worker stopped", "released=3", `msg="already stopping: a further signal does not hurry the shutdown`, "signal=terminated"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("worker log lacks %q", want)
		}
	}
}
