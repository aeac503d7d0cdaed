package batontest_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/batontest"
	"github.com/baton-sqs/baton/internal/testutil/logbuf"
	"github.com/baton-sqs/baton/store/memstore"
	"github.com/baton-sqs/baton/store/pebblestore"
)

// send sends body to the queue.
func send(t *testing.T, c *sqs.Client, queue, body string) {
	t.Helper()
	if _, err := c.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(queue), MessageBody: aws.String(body)}); err != nil {
		t.Fatal(err)
	}
}

// receive receives at most one message without waiting, and returns it
// with its receive count, or nil.
func receive(t *testing.T, c *sqs.Client, queue string) *types.Message {
	t.Helper()
	out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(queue),
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameApproximateReceiveCount},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) == 0 {
		return nil
	}
	return &out.Messages[0]
}

// wantReceived checks that m is the message body, received for the n-th
// time.
func wantReceived(t *testing.T, m *types.Message, body, n string) {
	t.Helper()
	if m == nil {
		t.Fatalf("received nothing, want %q (receive %s)", body, n)
	}
	if got, count := aws.ToString(m.Body), m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)]; got != body || count != n {
		t.Fatalf("received %q (receive %s), want %q (receive %s)", got, count, body, n)
	}
}

// wantCode checks that err is an API error with the given code.
func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != code {
		t.Fatalf("error %v, want %s", err, code)
	}
}

// TestFakeClockLapsesLease: a received message stays hidden for its
// visibility timeout of fake time and comes back the moment the test
// advances the clock past it, without sleeping.
func TestFakeClockLapsesLease(t *testing.T) {
	t.Parallel()
	srv := batontest.New(t, batontest.WithFakeClock(time.Time{}))
	if got := srv.Clock().Now(); !got.Equal(batontest.Epoch) {
		t.Fatalf("the fake clock starts at %v, want Epoch", got)
	}
	jobs := srv.Queue(t, "jobs?VisibilityTimeout=5")
	send(t, srv.Client(), jobs, "hello")
	wantReceived(t, receive(t, srv.Client(), jobs), "hello", "1")
	if m := receive(t, srv.Client(), jobs); m != nil {
		t.Fatalf("received %q while leased", aws.ToString(m.Body))
	}
	srv.Clock().Advance(5*time.Second - time.Millisecond)
	if m := receive(t, srv.Client(), jobs); m != nil {
		t.Fatalf("received %q 1ms before the lease lapses", aws.ToString(m.Body))
	}
	srv.Clock().Advance(time.Millisecond)
	wantReceived(t, receive(t, srv.Client(), jobs), "hello", "2")
}

// TestFakeClockEndsLongPoll: a long poll waits on the fake clock until the
// test advances it past the wait, and a message sent meanwhile wakes the
// next one at once.
func TestFakeClockEndsLongPoll(t *testing.T) {
	t.Parallel()
	srv := batontest.New(t, batontest.WithFakeClock(time.Time{}))
	jobs := srv.Queue(t, "jobs")
	poll := func() <-chan []types.Message {
		done := make(chan []types.Message, 1)
		go func() {
			out, err := srv.Client().ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(jobs), WaitTimeSeconds: 20})
			if err != nil {
				t.Error(err)
				done <- nil
				return
			}
			done <- out.Messages
		}()
		return done
	}
	done := poll()
	srv.WaitForTimers(t, 1)
	if next, _ := srv.Clock().NextDeadline(); !next.Equal(batontest.Epoch.Add(20 * time.Second)) {
		t.Fatalf("the long poll waits until %v, want 20s after Epoch", next)
	}
	srv.Clock().Advance(20 * time.Second)
	if got := <-done; len(got) != 0 {
		t.Fatalf("the long poll ended with %d messages, want none", len(got))
	}

	done = poll()
	srv.WaitForTimers(t, 1)
	send(t, srv.Client(), jobs, "wake")
	if got := <-done; len(got) != 1 || aws.ToString(got[0].Body) != "wake" {
		t.Fatalf("the long poll got %v, want the message sent", got)
	}
}

// TestQueueDeadLetter: dlq=NAME:N creates the dead-letter queue and moves a
// message there on its (N+1)th receive.
func TestQueueDeadLetter(t *testing.T) {
	t.Parallel()
	srv := batontest.New(t, batontest.WithFakeClock(time.Time{}))
	jobs := srv.Queue(t, "jobs?VisibilityTimeout=5&dlq=jobs-dlq:2")
	dlq := srv.URL() + "/" + batontest.Account + "/jobs-dlq"
	if jobs != srv.URL()+"/"+batontest.Account+"/jobs" {
		t.Fatalf("queue URL %s", jobs)
	}
	out, err := srv.Client().GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(jobs), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:jobs-dlq","maxReceiveCount":2}`
	if got := out.Attributes["RedrivePolicy"]; got != want {
		t.Fatalf("RedrivePolicy %s, want %s", got, want)
	}
	if got := out.Attributes["VisibilityTimeout"]; got != "5" {
		t.Fatalf("VisibilityTimeout %s, want 5", got)
	}

	send(t, srv.Client(), jobs, "poison")
	for _, n := range []string{"1", "2"} {
		wantReceived(t, receive(t, srv.Client(), jobs), "poison", n)
		srv.Clock().Advance(5 * time.Second)
	}
	if m := receive(t, srv.Client(), jobs); m != nil {
		t.Fatalf("received %q a third time, want it moved", aws.ToString(m.Body))
	}
	// The receive count goes with the message (docs/sqs-behaviour.md).
	wantReceived(t, receive(t, srv.Client(), dlq), "poison", "3")
}

// TestQueueFIFO: a .fifo name makes a FIFO queue, attributes and a FIFO
// dead-letter queue included.
func TestQueueFIFO(t *testing.T) {
	t.Parallel()
	srv := batontest.New(t)
	jobs := srv.Queue(t, "jobs.fifo?ContentBasedDeduplication=true&dlq=jobs-dlq.fifo:1")
	for _, q := range []string{jobs, srv.URL() + "/" + batontest.Account + "/jobs-dlq.fifo"} {
		out, err := srv.Client().GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
			QueueUrl: aws.String(q), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll},
		})
		if err != nil {
			t.Fatal(err)
		}
		if out.Attributes["FifoQueue"] != "true" {
			t.Errorf("%s: FifoQueue %q", q, out.Attributes["FifoQueue"])
		}
		if q == jobs && out.Attributes["ContentBasedDeduplication"] != "true" {
			t.Errorf("%s: ContentBasedDeduplication %q", q, out.Attributes["ContentBasedDeduplication"])
		}
	}
	// ContentBasedDeduplication: no MessageDeduplicationId needed.
	if _, err := srv.Client().SendMessage(context.Background(), &sqs.SendMessageInput{
		QueueUrl: aws.String(jobs), MessageBody: aws.String("first"), MessageGroupId: aws.String("g"),
	}); err != nil {
		t.Fatal(err)
	}
}

// TestQueueSpecs: the same spec twice is the same queue; a malformed spec
// and a spec the server refuses are errors naming the trouble.
func TestQueueSpecs(t *testing.T) {
	t.Parallel()
	srv := batontest.New(t)
	ctx := context.Background()
	a := srv.Queue(t, "same?DelaySeconds=1&dlq=same-dlq:3")
	if b := srv.Queue(t, "same?DelaySeconds=1&dlq=same-dlq:3"); a != b {
		t.Fatalf("the same spec made %s and %s", a, b)
	}
	for _, tc := range []struct{ spec, want string }{
		{"", "names no queue"},
		{"?VisibilityTimeout=5", "names no queue"},
		{"q?dlq=q-dlq", "want dlq=NAME:N"},
		{"q?dlq=q-dlq:0", "want dlq=NAME:N"},
		{"q?dlq=:3", "want dlq=NAME:N"},
		{"q?DelaySeconds=1&DelaySeconds=2", "gives DelaySeconds 2 times"},
		{"q?=5", "without a name"},
		{"q?DelaySeconds=%zz", "invalid URL escape"},
	} {
		if _, err := srv.CreateQueue(ctx, tc.spec); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CreateQueue(%q): %v, want an error with %q", tc.spec, err, tc.want)
		}
	}
	_, err := srv.CreateQueue(ctx, "q?VisibilityTimeout=soon")
	wantCode(t, err, "InvalidAttributeValue")
	_, err = srv.CreateQueue(ctx, "q?Visibility=5")
	wantCode(t, err, "InvalidAttributeName")
	_, err = srv.CreateQueue(ctx, "q?dlq=q-dlq.fifo:3")
	if err == nil || !strings.Contains(err.Error(), "q-dlq.fifo") {
		t.Fatalf("a standard queue with a FIFO dead-letter queue: %v", err)
	}
}

// TestCredentials: with keys the server refuses a wrong secret and an
// unknown key, each key sees its account's queues, and the clients' SigV4
// signatures stay valid however far the fake clock moves.
func TestCredentials(t *testing.T) {
	t.Parallel()
	srv := batontest.New(t, batontest.WithFakeClock(time.Time{}),
		batontest.WithCredentials("AKIDALICE", "alice-secret"),
		batontest.WithAccountCredentials("111111111111", "AKIDBOB", "bob-secret"))
	ctx := context.Background()
	jobs := srv.Queue(t, "jobs")
	srv.Clock().Advance(24 * time.Hour)
	send(t, srv.Client(), jobs, "signed")

	_, err := srv.ClientFor("AKIDALICE", "not-the-secret").ListQueues(ctx, &sqs.ListQueuesInput{})
	wantCode(t, err, "SignatureDoesNotMatch")
	_, err = srv.ClientFor("AKIDMALLORY", "alice-secret").ListQueues(ctx, &sqs.ListQueuesInput{})
	wantCode(t, err, "InvalidClientTokenId")

	bob := srv.ClientFor("AKIDBOB", "bob-secret")
	out, err := bob.ListQueues(ctx, &sqs.ListQueuesInput{})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.QueueUrls) != 0 {
		t.Fatalf("bob lists %v, want none of alice's queues", out.QueueUrls)
	}
}

// TestEmbedded: WithEmbedded, and WithSQLite, its former name, keep the
// queues in the embedded store's log in a temporary directory, which Close
// removes.
func TestEmbedded(t *testing.T) {
	t.Parallel()
	for name, opt := range map[string]batontest.Option{"WithEmbedded": batontest.WithEmbedded(), "WithSQLite": batontest.WithSQLite()} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testEmbedded(t, opt)
		})
	}
}

func testEmbedded(t *testing.T, opt batontest.Option) {
	srv, err := batontest.Start(opt)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	jobs := srv.Queue(t, "jobs")
	send(t, srv.Client(), jobs, "durable")
	wantReceived(t, receive(t, srv.Client(), jobs), "durable", "1")
	if _, err := os.Stat(filepath.Join(srv.DataDir(), pebblestore.LogDir)); err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(srv.DataDir()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("after Close, the data directory: %v", err)
	}
	if err := srv.Close(); err != nil {
		t.Fatalf("a second Close: %v", err)
	}
}

// TestCloseAnswersLongPoll: Close answers a waiting long poll with no
// messages, then the server refuses connections.
func TestCloseAnswersLongPoll(t *testing.T) {
	t.Parallel()
	srv, err := batontest.Start(batontest.WithFakeClock(time.Time{}))
	if err != nil {
		t.Fatal(err)
	}
	jobs := srv.Queue(t, "jobs")
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := srv.Client().ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(jobs), WaitTimeSeconds: 20})
		if err != nil {
			done <- result{err: err}
			return
		}
		done <- result{n: len(out.Messages)}
	}()
	srv.WaitForTimers(t, 1)
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.err != nil || r.n != 0 {
		t.Fatalf("the long poll ended with %d messages, %v; want none and no error", r.n, r.err)
	}
	if _, err := srv.Client().ListQueues(context.Background(), &sqs.ListQueuesInput{}); err == nil {
		t.Fatal("the server answers after Close")
	}
}

// TestNewStopsOnCleanup: the server New starts stops when its test ends.
func TestNewStopsOnCleanup(t *testing.T) {
	t.Parallel()
	var srv *batontest.Server
	t.Run("sub", func(t *testing.T) {
		srv = batontest.New(t, batontest.WithEmbedded())
		srv.Queue(t, "jobs")
	})
	if _, err := srv.Client().ListQueues(context.Background(), &sqs.ListQueuesInput{}); err == nil {
		t.Fatal("the server answers after its test ended")
	}
	if _, err := os.Stat(srv.DataDir()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("after the test, the data directory: %v", err)
	}
}

// TestMaxLongPollsPerClient: the option bounds the long polls waiting at
// once from one address, as every test client's is.
func TestMaxLongPollsPerClient(t *testing.T) {
	t.Parallel()
	srv := batontest.New(t, batontest.WithFakeClock(time.Time{}), batontest.WithMaxLongPollsPerClient(1))
	jobs := srv.Queue(t, "jobs")
	done := make(chan error, 1)
	go func() {
		_, err := srv.Client().ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(jobs), WaitTimeSeconds: 20})
		done <- err
	}()
	srv.WaitForTimers(t, 1)
	_, err := srv.Client().ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(jobs), WaitTimeSeconds: 20})
	wantCode(t, err, "RequestThrottled")
	srv.Clock().Advance(20 * time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestStartOptionErrors: options that contradict each other are an error.
func TestStartOptionErrors(t *testing.T) {
	t.Parallel()
	if _, err := batontest.Start(batontest.WithEmbedded(), batontest.WithStore(memstore.New())); err == nil {
		t.Fatal("WithEmbedded and WithStore together were accepted")
	}
	_, err := batontest.Start(batontest.WithCredentials("", "secret"))
	if err == nil {
		t.Fatal("an empty access key id was accepted")
	}
}

// pingFailing is a store whose Ping says it cannot take work.
type pingFailing struct{ *memstore.Store }

func (pingFailing) Ping(context.Context) error { return errors.New("disk failed: writes refused") }

// TestHealthzAsksTheStore: the server's /healthz answers 503 with the
// store's reason while the store's Ping fails, as baton serve's does, not
// "ok" while every change is refused.
func TestHealthzAsksTheStore(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		store  baton.Store
		status int
		body   string
	}{{memstore.New(), http.StatusOK, "ok"}, {pingFailing{memstore.New()}, http.StatusServiceUnavailable, "disk failed: writes refused"}} {
		srv := batontest.New(t, batontest.WithStore(c.store))
		resp, err := http.Get(srv.URL() + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || !strings.Contains(string(b), c.body) {
			t.Errorf("/healthz with %T: %d %q, want %d saying %q", c.store, resp.StatusCode, b, c.status, c.body)
		}
	}
}

// The embedded store's INFO line at each open stays out of a test's
// output; its warnings still reach the default logger. Each Start printed
// "pebblestore: loaded the log". Not parallel: it swaps the default logger.
func TestEmbeddedOpenIsQuiet(t *testing.T) {
	var out logbuf.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug})))
	defer slog.SetDefault(prev)
	srv, err := batontest.Start(batontest.WithEmbedded())
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	if strings.Contains(out.String(), "level=INFO") {
		t.Errorf("a test's output got the store's INFO lines:\n%s", out.String())
	}
}
