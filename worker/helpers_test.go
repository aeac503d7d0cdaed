package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/batontest"
	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/consumer"
	"github.com/baton-sqs/baton/consumer/consumertest"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/internal/testutil/logbuf"
	"github.com/baton-sqs/baton/worker"
)

// The integration tests run a worker against an in-process Baton server
// with real targets: httptest servers and shell scripts. Server and worker
// share the server's fake clock, so leases lapse on the server exactly when
// the worker's fake time says; the tests move that clock in small steps
// (drive) and never sleep through a lease. Targets run in real time.

// fakeClock wraps the server's *clock.Fake and remembers the timers the
// worker made, so a test can tell when every fired timer of the worker's has
// been read (the server's own timers are not the worker's to wait for).
type fakeClock struct {
	fc   *clock.Fake
	mu   sync.Mutex
	live map[*fakeTimer]struct{}
	made []madeTimer // every timer of the worker's, in the order made
}

// madeTimer is when, in fake time, the worker made a timer, and its length.
type madeTimer struct {
	at time.Time
	d  time.Duration
}

type fakeTimer struct {
	t clock.Timer
	c *fakeClock
}

func (c *fakeClock) Now() time.Time { return c.fc.Now() }

func (c *fakeClock) NewTimer(d time.Duration) clock.Timer {
	t := &fakeTimer{t: c.fc.NewTimer(d), c: c}
	c.mu.Lock()
	c.live[t] = struct{}{}
	c.made = append(c.made, madeTimer{at: c.fc.Now(), d: d})
	c.mu.Unlock()
	return t
}

// madeOf returns when the worker made each of its timers of length d.
func (c *fakeClock) madeOf(d time.Duration) []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	var at []time.Time
	for _, m := range c.made {
		if m.d == d {
			at = append(at, m.at)
		}
	}
	return at
}

func (t *fakeTimer) C() <-chan time.Time { return t.t.C() }

func (t *fakeTimer) Stop() bool {
	t.c.mu.Lock()
	delete(t.c.live, t)
	t.c.mu.Unlock()
	return t.t.Stop()
}

// unread counts fired timers nobody has read yet.
func (c *fakeClock) unread() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for t := range c.live {
		if len(t.t.C()) > 0 {
			n++
		}
	}
	return n
}

// countingClient counts the SQS calls in flight other than receives (which
// long-poll on the fake clock).
type countingClient struct {
	consumer.Client
	inflight atomic.Int64
}

func (c *countingClient) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, o ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	c.inflight.Add(1)
	defer c.inflight.Add(-1)
	return c.Client.ChangeMessageVisibilityBatch(ctx, in, o...)
}

func (c *countingClient) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, o ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	c.inflight.Add(1)
	defer c.inflight.Add(-1)
	return c.Client.DeleteMessageBatch(ctx, in, o...)
}

// recorder keeps every event the worker's consumer reports.
type recorder = consumertest.Recorder

// world is a server, its shared clock, a counting client and an observer.
type world struct {
	t     *testing.T
	srv   *batontest.Server
	clock *fakeClock
	cl    *countingClient
	obs   *recorder
}

func newWorld(t *testing.T) *world {
	srv := batontest.New(t, batontest.WithFakeClock(testutil.Epoch))
	return &world{t: t, srv: srv, clock: &fakeClock{fc: srv.Clock(), live: map[*fakeTimer]struct{}{}},
		cl: &countingClient{Client: srv.Client()}, obs: &recorder{}}
}

// backoff is the fixed retry delay of the tests' workers.
const backoff = 2 * time.Second

// config returns cfg wired to the world: its clock, observer, a fixed
// retry backoff, a short shutdown reserve, and (unless it has one) a logger
// into the test log.
// MaxConcurrency defaults to 1 (one receiver), so that messages sent
// before the start arrive in one receive: a batch the tests can predict.
func (w *world) config(cfg worker.Config) worker.Config {
	if cfg.MaxConcurrency == 0 {
		cfg.MaxConcurrency = 1
	}
	cfg.Clock = w.clock
	cfg.Observer = w.obs
	cfg.Random = func() float64 { return 0.5 }
	if cfg.Logger == nil {
		cfg.Logger = testLogger(w.t)
	}
	cfg.ConsumerOptions = append([]consumer.Option{
		consumer.WithRetryPolicy(consumer.RetryPolicy{Base: backoff, Multiplier: 1, Jitter: consumer.NoJitter}),
		consumer.WithShutdownReserve(2 * time.Second),
	}, cfg.ConsumerOptions...)
	return cfg
}

// start runs a worker until the test ends.
func (w *world) start(cfg worker.Config) *worker.Worker {
	w.t.Helper()
	wk, err := worker.New(w.cl, w.config(cfg))
	if err != nil {
		w.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- wk.Run(context.Background()) }()
	w.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		wk.Shutdown(ctx)
		if err := <-done; err != nil {
			w.t.Errorf("Run: %v", err)
		}
	})
	return wk
}

// settle waits until every fired worker timer has been read and no call
// other than a long poll is in flight. It never moves the clock.
func (w *world) settle() {
	w.t.Helper()
	for i := 0; i < 3; i++ {
		testutil.CheckFor(w.t, 10*time.Second, func() error {
			if n := w.clock.unread(); n > 0 {
				return fmt.Errorf("%d fired timers unread", n)
			}
			if n := w.cl.inflight.Load(); n > 0 {
				return fmt.Errorf("%d calls in flight", n)
			}
			return nil
		})
		runtime.Gosched()
		time.Sleep(100 * time.Microsecond)
	}
}

// drive moves the shared clock in steps until cond holds, at most max of
// fake time, and returns the fake time it took.
func (w *world) drive(max, step time.Duration, cond func() error) time.Duration {
	w.t.Helper()
	return w.driveWith(false, max, step, cond)
}

// drivePrompt is drive for targets that end by themselves: before each
// step it also waits, in real time, until every message the worker has
// received has been handled. Fake time then never passes while such a
// target runs, however long a busy machine takes to start or finish it;
// drive, whose steps follow each other in real time, could pass a stall
// or target timeout while a shell is still starting. (A delivery starting
// between that wait and the step sees one step pass, no more.) Not for a
// target the test means to stall or time out: its delivery only ends on
// fake time.
func (w *world) drivePrompt(max, step time.Duration, cond func() error) time.Duration {
	w.t.Helper()
	return w.driveWith(true, max, step, cond)
}

func (w *world) driveWith(prompt bool, max, step time.Duration, cond func() error) time.Duration {
	w.t.Helper()
	start := w.clock.Now()
	var err error
	for w.clock.Now().Sub(start) <= max {
		if prompt {
			w.awaitDeliveries()
		}
		w.settle()
		if err = cond(); err == nil {
			return w.clock.Now().Sub(start)
		}
		w.srv.Clock().Advance(step)
	}
	w.t.Fatalf("after %v of fake time: %v", max, err)
	return 0
}

// awaitDeliveries waits, up to a minute of real time and never moving
// the clock, until the worker has handled every message it has received.
func (w *world) awaitDeliveries() {
	w.t.Helper()
	testutil.CheckFor(w.t, time.Minute, func() error {
		received := 0
		for _, e := range w.obs.All(consumer.EventReceived) {
			received += e.Count
		}
		if n := received - w.obs.Count(consumer.EventHandled); n > 0 {
			return fmt.Errorf("%d messages received and not yet handled: a delivery still runs", n)
		}
		return nil
	})
}

// awaitTimers waits, up to a minute of real time and never moving the
// clock, until the worker has made n timers of length d (a batching
// window's, say), and returns when it made the nth, in fake time.
func (w *world) awaitTimers(d time.Duration, n int) time.Time {
	w.t.Helper()
	var at []time.Time
	testutil.CheckFor(w.t, time.Minute, func() error {
		if at = w.clock.madeOf(d); len(at) < n {
			return fmt.Errorf("%d timers of %v made, waiting for %d", len(at), d, n)
		}
		return nil
	})
	return at[n-1]
}

// awaitReceived waits, up to a minute of real time and never moving the
// clock, until the worker's receives have returned n messages in all.
func (w *world) awaitReceived(n int) {
	w.t.Helper()
	testutil.CheckFor(w.t, time.Minute, func() error {
		received := 0
		for _, e := range w.obs.All(consumer.EventReceived) {
			received += e.Count
		}
		if received < n {
			return fmt.Errorf("%d messages received, waiting for %d", received, n)
		}
		return nil
	})
}

// reached is a drive condition: the clock has come to at. Driven with it,
// the clock stops at the first step at or past at.
func (w *world) reached(at time.Time) func() error {
	return func() error {
		if now := w.clock.Now(); now.Before(at) {
			return fmt.Errorf("the clock is at %v, not yet at %v", now, at)
		}
		return nil
	}
}

// queue creates a queue, its attributes given in a batontest spec.
func (w *world) queue(name string, attrs map[string]string) string {
	spec := url.Values{}
	for k, v := range attrs {
		spec.Set(k, v)
	}
	return w.srv.Queue(w.t, name+"?"+spec.Encode())
}

// send sends bodies in batches of ten; on a FIFO queue all in group g.
func (w *world) send(url string, bodies ...string) {
	w.t.Helper()
	fifo := strings.HasSuffix(url, ".fifo")
	for i := 0; i < len(bodies); i += 10 {
		var entries []types.SendMessageBatchRequestEntry
		for j := i; j < i+10 && j < len(bodies); j++ {
			e := types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(j)), MessageBody: aws.String(bodies[j])}
			if fifo {
				e.MessageGroupId, e.MessageDeduplicationId = aws.String("g"), aws.String(bodies[j])
			}
			entries = append(entries, e)
		}
		out, err := w.srv.Client().SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: &url, Entries: entries})
		if err != nil || len(out.Failed) > 0 {
			w.t.Fatalf("send: %v %+v", err, out)
		}
	}
}

// counts returns the queue's visible and in-flight counts.
func (w *world) counts(url string) (visible, inflight int) {
	w.t.Helper()
	out, err := w.srv.Client().GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: &url,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
	if err != nil {
		w.t.Fatal(err)
	}
	visible, _ = strconv.Atoi(out.Attributes["ApproximateNumberOfMessages"])
	inflight, _ = strconv.Atoi(out.Attributes["ApproximateNumberOfMessagesNotVisible"])
	return visible, inflight
}

// empty is a drive condition: the queue holds nothing.
func (w *world) empty(url string) func() error {
	return func() error {
		if v, f := w.counts(url); v+f != 0 {
			return fmt.Errorf("queue: %d visible, %d in flight", v, f)
		}
		return nil
	}
}

// event is a Lambda SQS event as a target reads it.
type event struct {
	Records []eventRecord
}

type eventRecord struct {
	MessageID         string `json:"messageId"`
	ReceiptHandle     string `json:"receiptHandle"`
	Body              string `json:"body"`
	Attributes        map[string]string
	MessageAttributes map[string]map[string]any `json:"messageAttributes"`
	MD5OfBody         string                    `json:"md5OfBody"`
	MD5OfAttributes   *string                   `json:"md5OfMessageAttributes"`
	EventSource       string                    `json:"eventSource"`
	EventSourceARN    string                    `json:"eventSourceARN"`
	AWSRegion         string                    `json:"awsRegion"`
}

func (e event) bodies() []string {
	var out []string
	for _, r := range e.Records {
		out = append(out, r.Body)
	}
	return out
}

func (e event) idOf(body string) string {
	for _, r := range e.Records {
		if r.Body == body {
			return r.MessageID
		}
	}
	return "no-such-body"
}

// received is what a target saw: one event per delivery, with the fake
// time it arrived and its size.
type received struct {
	mu     sync.Mutex
	events []event
	at     []time.Time
	sizes  []int
}

func (r *received) add(e event, at time.Time, size int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
	r.at = append(r.at, at)
	r.sizes = append(r.sizes, size)
	return len(r.events)
}

func (r *received) n() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events)
}

// reach is a condition to wait for: the target has had n deliveries.
func (r *received) reach(n int) func() error {
	return func() error {
		if got := r.n(); got < n {
			return fmt.Errorf("%d deliveries, waiting for %d", got, n)
		}
		return nil
	}
}

func (r *received) get(i int) event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.events[i]
}

// redelivered lists, sorted, the bodies of every delivery after the first.
func (r *received) redelivered() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events[1:] {
		out = append(out, e.bodies()...)
	}
	sort.Strings(out)
	return out
}

// httpTarget is an httptest server that records each event and answers
// with respond(n, event): status, headers and body, n counting from 1.
func (w *world) httpTarget(respond func(n int, e event, r *http.Request) (int, http.Header, string)) (*received, string) {
	rec := &received{}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			w.t.Errorf("target: read: %v", err)
			return
		}
		var e event
		if err := json.Unmarshal(body, &e); err != nil {
			w.t.Errorf("target: the event is not JSON: %v\n%s", err, body)
		}
		n := rec.add(e, w.clock.Now(), len(body))
		status, h, answer := respond(n, e, r)
		for k, vs := range h {
			rw.Header()[k] = vs
		}
		rw.WriteHeader(status)
		io.WriteString(rw, answer)
	}))
	w.t.Cleanup(srv.Close)
	return rec, srv.URL
}

// script writes a shell script into a temporary directory and returns the
// command that runs it, and the directory (its state, passed as $STATE).
func script(t *testing.T, body string) (command, dir string) {
	t.Helper()
	dir = t.TempDir()
	path := filepath.Join(dir, "target.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\nSTATE="+shellQuote(dir)+"\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return "exec " + shellQuote(path), dir
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// readEvents reads the events a script appended, one a line, to file.
func readEvents(t *testing.T, file string) []event {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []event
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line == "" {
			continue
		}
		var e event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("event %q: %v", line, err)
		}
		out = append(out, e)
	}
	return out
}

// testLogger keeps the worker's log and prints it if the test fails.
func testLogger(t *testing.T) *slog.Logger {
	buf := &logbuf.Buffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("worker log:\n%s", buf.String())
		}
	})
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// receiveCounts lists the records' ApproximateReceiveCount values.
func receiveCounts(e event) []string {
	var out []string
	for _, r := range e.Records {
		out = append(out, r.Attributes["ApproximateReceiveCount"])
	}
	return out
}

func numbered(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}
