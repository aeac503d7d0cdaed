package worker_test

import (
	"context"
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/batontest"
	"github.com/baton-sqs/baton/consumer"
	"github.com/baton-sqs/baton/consumer/consumertest"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/engine/ledger"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/internal/testutil/logbuf"
	"github.com/baton-sqs/baton/worker"
)

const step = 100 * time.Millisecond

func ok(int, event, *http.Request) (int, http.Header, string) { return http.StatusOK, nil, "" }

// A 2xx answer deletes the whole batch; the event has Lambda's shape.
func TestFullSuccessDeletesBatch(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	url := w.queue("jobs", map[string]string{"VisibilityTimeout": "30"})
	w.send(url, numbered("m", 9)...)
	_, err := w.srv.Client().SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("with attributes"),
		MessageAttributes: map[string]types.MessageAttributeValue{
			"Foo":  {DataType: aws.String("String"), StringValue: aws.String("Bar")},
			"Blob": {DataType: aws.String("Binary"), BinaryValue: []byte{0xde, 0xad, 0xbe, 0xef}},
		}})
	if err != nil {
		t.Fatal(err)
	}
	rec, target := w.httpTarget(ok)
	w.start(worker.Config{QueueURL: url, Target: &worker.HTTPTarget{URL: target}})
	w.drive(time.Minute, step, w.empty(url))
	if n := rec.n(); n != 1 {
		t.Fatalf("deliveries %d, want 1 batch of 10", n)
	}
	e := rec.get(0)
	if len(e.Records) != 10 {
		t.Fatalf("records %d, want 10", len(e.Records))
	}
	arn := "arn:aws:sqs:us-east-1:000000000000:jobs"
	for _, r := range e.Records {
		sum := md5.Sum([]byte(r.Body))
		if r.MessageID == "" || r.ReceiptHandle == "" || r.MD5OfBody != hex.EncodeToString(sum[:]) ||
			r.EventSource != "aws:sqs" || r.EventSourceARN != arn || r.AWSRegion != "us-east-1" {
			t.Errorf("record %+v: want ids, md5OfBody, aws:sqs, %s, us-east-1", r, arn)
		}
		for _, k := range []string{"ApproximateReceiveCount", "SentTimestamp", "SenderId", "ApproximateFirstReceiveTimestamp"} {
			if r.Attributes[k] == "" {
				t.Errorf("record %s: no attribute %s in %v", r.Body, k, r.Attributes)
			}
		}
		if r.Body != "with attributes" {
			if r.MD5OfAttributes != nil || len(r.MessageAttributes) != 0 {
				t.Errorf("record %s without attributes: md5OfMessageAttributes %v, messageAttributes %v", r.Body, r.MD5OfAttributes, r.MessageAttributes)
			}
			continue
		}
		// docs/sqs-behaviour.md §4.3: sorted by name, length-prefixed fields,
		// transport byte 1 for String, 2 for Binary.
		want := attributesMD5([]string{"Blob", "Binary", "\x02", "\xde\xad\xbe\xef"}, []string{"Foo", "String", "\x01", "Bar"})
		if r.MD5OfAttributes == nil || *r.MD5OfAttributes != want {
			t.Errorf("md5OfMessageAttributes %v, want %s", r.MD5OfAttributes, want)
		}
		wantFoo := map[string]any{"stringValue": "Bar", "stringListValues": []any{}, "binaryListValues": []any{}, "dataType": "String"}
		wantBlob := map[string]any{"binaryValue": "3q2+7w==", "stringListValues": []any{}, "binaryListValues": []any{}, "dataType": "Binary"}
		if !reflect.DeepEqual(r.MessageAttributes["Foo"], wantFoo) || !reflect.DeepEqual(r.MessageAttributes["Blob"], wantBlob) {
			t.Errorf("messageAttributes %v, want Foo %v and Blob %v", r.MessageAttributes, wantFoo, wantBlob)
		}
	}
	checkFor(t, func() error {
		if got := w.obs.Count(consumer.EventDeleted); got != 10 {
			return fmt.Errorf("deleted events %d, want 10", got)
		}
		return nil
	})
}

// TestBatchItemFailures runs each of Lambda's rules end to end: a batch of
// ten, the target's first answer, and which messages came back.
func TestBatchItemFailures(t *testing.T) {
	t.Parallel()
	items := func(ids ...string) string {
		var parts []string
		for _, id := range ids {
			parts = append(parts, fmt.Sprintf(`{"itemIdentifier":%q}`, id))
		}
		return `{"batchItemFailures":[` + strings.Join(parts, ",") + `]}`
	}
	all := numbered("m", 10)
	tests := []struct {
		name   string
		status int
		answer func(e event) string
		back   []string // bodies redelivered
	}{
		{"two failures", 200, func(e event) string { return items(e.idOf("m2"), e.idOf("m7")) }, []string{"m2", "m7"}},
		{"empty list", 200, func(event) string { return `{"batchItemFailures":[]}` }, nil},
		{"null list", 200, func(event) string { return `{"batchItemFailures":null}` }, nil},
		{"null answer", 200, func(event) string { return `null` }, nil},
		{"empty answer", 200, func(event) string { return `` }, nil},
		{"empty object", 200, func(event) string { return `{}` }, nil},
		{"invalid JSON", 200, func(event) string { return `{"batchItemFailures":[{"itemIdentifier":` }, all},
		{"not an object", 200, func(event) string { return `["m2"]` }, all},
		{"empty itemIdentifier", 200, func(event) string { return items("") }, all},
		{"null itemIdentifier", 200, func(event) string { return `{"batchItemFailures":[{"itemIdentifier":null}]}` }, all},
		{"wrong key name", 200, func(e event) string { return `{"batchItemFailures":[{"itemId":"` + e.idOf("m2") + `"}]}` }, all},
		{"id not in the batch", 200, func(e event) string { return items(e.idOf("m2"), "00000000-0000-0000-0000-000000000000") }, all},
		{"target error", 500, func(event) string { return `{"batchItemFailures":[]}` }, all},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			url := w.queue("jobs", map[string]string{"VisibilityTimeout": "30"})
			w.send(url, all...)
			rec, target := w.httpTarget(func(n int, e event, _ *http.Request) (int, http.Header, string) {
				if n == 1 {
					return tt.status, nil, tt.answer(e)
				}
				return http.StatusOK, nil, `{"batchItemFailures":[]}`
			})
			w.start(worker.Config{QueueURL: url, Target: &worker.HTTPTarget{URL: target}, ReportBatchItemFailures: true})
			w.drive(time.Minute, step, w.empty(url))
			if got := rec.get(0).bodies(); len(got) != 10 {
				t.Fatalf("first delivery %v, want all ten", got)
			}
			if got := rec.redelivered(); !reflect.DeepEqual(got, tt.back) {
				t.Errorf("redelivered %v, want %v", got, tt.back)
			}
			for i := 1; i < rec.n(); i++ {
				for _, c := range receiveCounts(rec.get(i)) {
					if c != "2" {
						t.Errorf("redelivery %d receive counts %v, want 2", i, receiveCounts(rec.get(i)))
						break
					}
				}
			}
		})
	}
}

// A 429 or 503 is waited for as Retry-After says, the leases kept: the
// batch is retried without being redelivered.
func TestThrottledTargetHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	// Each wait outlasts the renewal point (two thirds of the lease) and
	// ends within the lease, the longest a throttled batch is waited for.
	tests := []struct {
		name       string
		lease      string
		status     int
		retryAfter func(now time.Time) string
		atLeast    time.Duration
	}{
		{"429 seconds", "4", http.StatusTooManyRequests, func(time.Time) string { return "3" }, 3 * time.Second},
		{"503 date", "6", http.StatusServiceUnavailable, func(now time.Time) string { return now.Add(5 * time.Second).UTC().Format(http.TimeFormat) }, 4 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			url := w.queue("jobs", map[string]string{"VisibilityTimeout": tt.lease})
			w.send(url, numbered("m", 5)...)
			var (
				mu   sync.Mutex
				hint string    // the Retry-After answered
				at   time.Time // when, in fake time
			)
			rec, target := w.httpTarget(func(n int, e event, _ *http.Request) (int, http.Header, string) {
				if n == 1 {
					mu.Lock()
					defer mu.Unlock()
					at = w.clock.Now()
					hint = tt.retryAfter(at)
					return tt.status, http.Header{"Retry-After": {hint}}, "slow down"
				}
				return http.StatusOK, nil, ""
			})
			w.start(worker.Config{QueueURL: url, Target: &worker.HTTPTarget{URL: target}})
			// The clock stays still from the first delivery until the worker
			// has begun the wait Retry-After asks for, and from the wait's end
			// until the retry has arrived: the real time a busy machine takes
			// to answer and read the 429 never shows as fake time, which would
			// push the wait's end past the lease and release the batch.
			var wait time.Duration
			testutil.CheckFor(t, time.Minute, func() error {
				mu.Lock()
				defer mu.Unlock()
				if hint == "" {
					return fmt.Errorf("not throttled yet")
				}
				wait, _ = worker.ParseRetryAfter(hint, at)
				return nil
			})
			began := w.awaitTimers(wait, 1)
			w.drive(time.Minute, step, w.reached(began.Add(wait)))
			testutil.CheckFor(t, time.Minute, rec.reach(2))
			w.drive(time.Minute, step, w.empty(url))
			if n := rec.n(); n != 2 {
				t.Fatalf("deliveries %d, want 2 (throttled, then served)", n)
			}
			rec.mu.Lock()
			waited := rec.at[1].Sub(rec.at[0])
			rec.mu.Unlock()
			if waited < tt.atLeast || waited > tt.atLeast+2*time.Second {
				t.Errorf("retried %v after the throttle, want about %v", waited, tt.atLeast)
			}
			if got := receiveCounts(rec.get(1)); strings.Join(got, "") != "11111" {
				t.Errorf("receive counts on the retry %v, want all 1 (not redelivered)", got)
			}
			if n := w.obs.Count(consumer.EventLeaseLost); n != 0 {
				t.Errorf("lost leases %d, want 0", n)
			}
			if n := w.obs.Count(consumer.EventRenewed); n == 0 {
				t.Errorf("no renewal while waiting %v on %s s leases", waited, tt.lease)
			}
		})
	}
}

// A Retry-After past the visibility timeout releases the batch at once,
// with a delay within what is left of its leases, and pauses the worker's
// receives until the wait the target asked for ends: the server reads each
// change as a release with a delay (a delay past the lease's end would
// read as a renewal, then a lapse: a handler that failed to come back),
// and the messages, visible again once the delay ends, are not received
// before the target's wait is over.
func TestThrottledPastTheLeaseReleases(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	url := w.queue("jobs", map[string]string{"VisibilityTimeout": "5"})
	w.send(url, numbered("m", 3)...)
	rec, target := w.httpTarget(func(n int, e event, _ *http.Request) (int, http.Header, string) {
		if n == 1 {
			return http.StatusTooManyRequests, http.Header{"Retry-After": {"600"}}, ""
		}
		return http.StatusOK, nil, ""
	})
	log := &logbuf.Buffer{}
	w.start(worker.Config{QueueURL: url, Target: &worker.HTTPTarget{URL: target}, Logger: slog.New(slog.NewTextHandler(log, nil))})
	w.drive(10*time.Second, step, func() error {
		if n := len(w.obs.All(consumer.EventReleased)); n != 3 {
			return fmt.Errorf("releases %d, want 3", n)
		}
		return nil
	})
	for _, e := range w.obs.All(consumer.EventReleased) {
		if e.Delay < time.Second || e.Delay > 4*time.Second || e.Reason != consumer.ReasonRetry {
			t.Errorf("release %+v, want a retry within what is left of the 5 s lease less a second", e)
		}
	}
	for _, want := range []string{`msg="target throttling: releasing the batch within its lease; receives paused until the target's wait ends"`,
		`msg="delivery failed: the target is throttling: the batch is released within its lease, and the receives pause for the target's wait"`} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("no %s in the log:\n%s", want, log.String())
		}
	}
	first := rec.get(0)
	for _, body := range first.bodies() {
		events, _, err := w.srv.Engine().MessageHistory(context.Background(),
			engine.QueueRef{Region: batontest.Region, Account: batontest.Account, Name: "jobs"}, first.idOf(body))
		if err != nil || len(events) == 0 {
			t.Fatalf("history of %s: %v, %v", body, events, err)
		}
		if last := events[len(events)-1]; last.Kind != ledger.EventRelease {
			t.Errorf("%s: the server read the throttle's release as %q (history %+v), want %q", body, last.Kind, events, ledger.EventRelease)
		}
	}
	rec.mu.Lock()
	throttled := rec.at[0]
	rec.mu.Unlock()
	w.drive(10*time.Minute, time.Second, w.reached(throttled.Add(9*time.Minute)))
	if v, f := w.counts(url); v != 3 || f != 0 || rec.n() != 1 {
		t.Errorf("after 9 min: %d visible, %d hidden, %d deliveries; want 3, 0, 1 (receives paused for the target's 10 min)", v, f, rec.n())
	}
	w.drive(2*time.Minute, time.Second, w.empty(url))
	if rec.n() != 2 {
		t.Fatalf("deliveries %d, want 2 (throttled, then served after the wait)", rec.n())
	}
	if got := receiveCounts(rec.get(1)); strings.Join(got, "") != "222" {
		t.Errorf("receive counts on the retry %v, want all 2 (one receive spent by the throttle)", got)
	}
}

// pollCounter counts the receives in flight.
type pollCounter struct {
	consumer.Client
	inflight atomic.Int64
}

func (c *pollCounter) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, o ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	c.inflight.Add(1)
	defer c.inflight.Add(-1)
	return c.Client.ReceiveMessage(ctx, in, o...)
}

// Messages that arrive, after a throttle past the lease has paused the
// receives, in receives that were in flight when it began are held, their
// leases kept, until the target's wait ends, and only then sent: the
// throttle spends a receive of the batch the target refused (as a
// throttled Lambda batch's lapse does), none of messages it never saw.
func TestThrottlePauseHoldsMessagesReceivedMeanwhile(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	// 30 s leases: the clock moves in 1 s steps, each a renewal's time.
	url := w.queue("jobs", map[string]string{"VisibilityTimeout": "30"})
	w.send(url, "a")
	client := &pollCounter{Client: w.cl}
	rec, target := w.httpTarget(func(n int, e event, _ *http.Request) (int, http.Header, string) {
		if n == 1 {
			// Answer once the two other receivers are polling: the
			// messages sent next come in receives in flight at the pause.
			testutil.CheckFor(t, time.Minute, func() error {
				if n := client.inflight.Load(); n != 2 {
					return fmt.Errorf("%d receives in flight, waiting for 2", n)
				}
				return nil
			})
			return http.StatusTooManyRequests, http.Header{"Retry-After": {"600"}}, ""
		}
		return http.StatusOK, nil, ""
	})
	log := &logbuf.Buffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("worker log:\n%s", log.String())
			for _, e := range w.obs.All(consumer.EventLeaseLost) {
				t.Logf("lost: %+v", e)
			}
		}
	})
	wk, err := worker.New(client, w.config(worker.Config{QueueURL: url, Target: &worker.HTTPTarget{URL: target}, MaxConcurrency: 3,
		Logger: slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))}))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- wk.Run(context.Background()) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		wk.Shutdown(ctx)
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	testutil.CheckFor(t, time.Minute, func() error {
		if n := len(w.obs.All(consumer.EventReleased)); n != 1 {
			return fmt.Errorf("releases %d, want 1 (the throttled batch)", n)
		}
		return nil
	})
	rec.mu.Lock()
	throttled := rec.at[0]
	rec.mu.Unlock()
	w.send(url, numbered("b", 4)...)
	// The clock stays still until the deliveries of b0..b3 hold them:
	// before, nothing keeps their leases alive.
	const holding = `msg="target throttling: holding messages received as the receives paused, leases kept, until the target's wait ends`
	testutil.CheckFor(t, time.Minute, func() error {
		held := 0
		for _, line := range strings.Split(log.String(), "\n") {
			if strings.Contains(line, holding) {
				var n int
				if _, err := fmt.Sscan(line[strings.Index(line, " messages=")+len(" messages="):], &n); err != nil {
					return fmt.Errorf("%q: %v", line, err)
				}
				held += n
			}
		}
		if held != 4 {
			return fmt.Errorf("%d messages held, waiting for 4:\n%s", held, log.String())
		}
		return nil
	})
	w.drive(10*time.Minute, time.Second, w.reached(throttled.Add(9*time.Minute)))
	if n := len(w.obs.All(consumer.EventReleased)); n != 1 || rec.n() != 1 {
		t.Errorf("9 min into the target's 10 min wait: %d releases, %d deliveries; want 1 and 1 (the messages received meanwhile held, not sent)", n, rec.n())
	}
	if v, f := w.counts(url); v != 1 || f != 4 {
		t.Errorf("9 min into the wait: %d visible, %d in flight; want a visible, b0..b3 held", v, f)
	}
	w.drive(2*time.Minute, time.Second, w.empty(url))
	var got []string
	rec.mu.Lock()
	for i, e := range rec.events[1:] {
		if at := rec.at[i+1]; at.Before(throttled.Add(10 * time.Minute)) {
			t.Errorf("%v delivered %v after the throttle, before the target's 10 min wait ended", e.bodies(), at.Sub(throttled))
		}
		for _, r := range e.Records {
			got = append(got, r.Body+":"+r.Attributes["ApproximateReceiveCount"])
		}
	}
	rec.mu.Unlock()
	sort.Strings(got)
	if fmt.Sprint(got) != "[a:2 b0:1 b1:1 b2:1 b3:1]" {
		t.Errorf("after the wait the target got %v, want a:2 (the throttle spent a receive of it) and b0..b3 on their first receive", got)
	}
	if n := w.obs.Count(consumer.EventLeaseLost); n != 0 {
		t.Errorf("lost leases %d, want 0", n)
	}
}

// A target that works for five times the lease length keeps every lease:
// no redelivery, no lost lease, one delivery.
func TestLongHTTPTargetKeepsLeases(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	url := w.queue("jobs", map[string]string{"VisibilityTimeout": "3"})
	w.send(url, numbered("m", 10)...)
	release := make(chan struct{})
	rec, target := w.httpTarget(func(n int, e event, r *http.Request) (int, http.Header, string) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		return http.StatusOK, nil, ""
	})
	w.start(worker.Config{QueueURL: url, Target: &worker.HTTPTarget{URL: target}, TargetTimeout: time.Minute})
	w.drive(10*time.Second, step, func() error {
		if rec.n() != 1 {
			return fmt.Errorf("not delivered yet")
		}
		return nil
	})
	start := w.clock.Now()
	w.drive(time.Minute, 250*time.Millisecond, func() error {
		if w.clock.Now().Sub(start) < 15*time.Second {
			return fmt.Errorf("still working")
		}
		return nil
	})
	if v, f := w.counts(url); v != 0 || f != 10 {
		t.Errorf("after 15 s on 3 s leases: %d visible, %d in flight; want 0, 10", v, f)
	}
	close(release)
	w.drive(time.Minute, step, w.empty(url))
	if n := rec.n(); n != 1 {
		t.Errorf("deliveries %d, want 1", n)
	}
	if n := w.obs.Count(consumer.EventLeaseLost); n != 0 {
		t.Errorf("lost leases %d, want 0", n)
	}
	if n := w.obs.Count(consumer.EventRenewed); n < 10*4 {
		t.Errorf("renewals %d, want at least 4 per message", n)
	}
}

// Per-message delivery: one request per message, sqsd's headers; a failure
// brings that message alone back.
func TestPerMessageSqsdHeaders(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	url := w.queue("jobs", map[string]string{"VisibilityTimeout": "30"})
	_, err := w.srv.Client().SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String(`{"job":1}`),
		MessageAttributes: map[string]types.MessageAttributeValue{"Kind": {DataType: aws.String("String"), StringValue: aws.String("order\nnew")}}})
	if err != nil {
		t.Fatal(err)
	}
	w.send(url, "plain", "fails once")
	type seen struct {
		body   string
		header http.Header
	}
	got := make(chan seen, 10)
	target := w.rawTarget(func(body string, r *http.Request) int {
		got <- seen{body, r.Header.Clone()}
		if body == "fails once" && r.Header.Get("X-Aws-Sqsd-Receive-Count") == "1" {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})
	w.start(worker.Config{QueueURL: url, Target: &worker.HTTPTarget{URL: target, PerMessage: true}})
	w.drive(time.Minute, step, w.empty(url))
	close(got)
	var counts []string
	for s := range got {
		h := s.header
		counts = append(counts, s.body+":"+h.Get("X-Aws-Sqsd-Receive-Count"))
		if h.Get("X-Aws-Sqsd-Msgid") == "" || h.Get("X-Aws-Sqsd-Queue") != "jobs" || !strings.HasPrefix(h.Get("User-Agent"), "aws-sqsd") ||
			h.Get("Content-Type") != "application/json" {
			t.Errorf("%s: headers %v", s.body, h)
		}
		for _, k := range []string{"X-Aws-Sqsd-First-Received-At", "X-Aws-Sqsd-Sent-At"} {
			if _, err := time.Parse(time.RFC3339, h.Get(k)); err != nil {
				t.Errorf("%s: %s %q is not ISO 8601: %v", s.body, k, h.Get(k), err)
			}
		}
		if s.body == `{"job":1}` && h.Get("X-Aws-Sqsd-Attr-Kind") != "order new" {
			t.Errorf("attribute header %q, want %q", h.Get("X-Aws-Sqsd-Attr-Kind"), "order new")
		}
	}
	sort.Strings(counts)
	if want := `[fails once:1 fails once:2 plain:1 {"job":1}:1]`; fmt.Sprint(counts) != want {
		t.Errorf("requests %v, want %s", counts, want)
	}
}

// rawTarget is an httptest server handing each request's body to handle.
func (w *world) rawTarget(handle func(body string, r *http.Request) int) string {
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			w.t.Errorf("target: read: %v", err)
		}
		rw.WriteHeader(handle(string(b), r))
	}))
	w.t.Cleanup(srv.Close)
	return srv.URL
}

// attributesMD5 is MD5OfMessageAttributes over attributes given as
// {name, data type, transport byte, value}, in name order.
func attributesMD5(attrs ...[]string) string {
	h := md5.New()
	field := func(s string) {
		binary.Write(h, binary.BigEndian, uint32(len(s)))
		h.Write([]byte(s))
	}
	for _, a := range attrs {
		field(a[0])
		field(a[1])
		h.Write([]byte(a[2]))
		field(a[3])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// A target that does not answer within the target timeout fails the batch:
// the request is cancelled and the messages come back after the backoff.
func TestHTTPTargetTimeout(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	url := w.queue("jobs", map[string]string{"VisibilityTimeout": "30"})
	w.send(url, numbered("m", 3)...)
	cancelled := make(chan struct{}, 1)
	rec, target := w.httpTarget(func(n int, e event, r *http.Request) (int, http.Header, string) {
		if n == 1 {
			<-r.Context().Done()
			cancelled <- struct{}{}
		}
		return http.StatusOK, nil, ""
	})
	w.start(worker.Config{QueueURL: url, Target: &worker.HTTPTarget{URL: target}, TargetTimeout: 3 * time.Second})
	// The clock stays still until the request has arrived (the timeout
	// counts from there), from the timeout until the worker has given the
	// messages back, and from the backoff's end until they have arrived
	// again: the real time a busy machine takes for each never shows as
	// fake time.
	testutil.CheckFor(t, time.Minute, rec.reach(1))
	rec.mu.Lock()
	first := rec.at[0]
	rec.mu.Unlock()
	w.drive(time.Minute, step, w.reached(first.Add(3*time.Second)))
	testutil.CheckFor(t, time.Minute, func() error {
		if n := w.obs.Count(consumer.EventReleased); n < 3 {
			return fmt.Errorf("%d messages given back, waiting for the 3", n)
		}
		return nil
	})
	w.drive(time.Minute, step, w.reached(first.Add(3*time.Second+backoff)))
	testutil.CheckFor(t, time.Minute, rec.reach(2))
	w.drive(time.Minute, step, w.empty(url))
	select {
	case <-cancelled:
	default:
		t.Error("the timed-out request was not cancelled")
	}
	if n := rec.n(); n != 2 || strings.Join(receiveCounts(rec.get(1)), "") != "222" {
		t.Fatalf("deliveries %d, want the batch again with receive count 2", n)
	}
	rec.mu.Lock()
	gap := rec.at[1].Sub(rec.at[0])
	rec.mu.Unlock()
	if gap < 3*time.Second+backoff-2*step || gap > 3*time.Second+backoff+5*step {
		t.Errorf("redelivered %v after the first delivery, want the timeout plus the backoff, %v", gap, 3*time.Second+backoff)
	}
	for _, e := range w.obs.All(consumer.EventHandled) {
		if e.Err != nil && !errors.Is(e.Err, worker.ErrTargetTimeout) {
			t.Errorf("failure %v, want ErrTargetTimeout", e.Err)
		}
	}
}

// A 3xx answer fails the batch. Followed, a 301, 302 or 303 turns the POST
// into a GET without the event, and a 2xx on that GET would delete the
// batch though the target never got it; a client the caller supplies is
// kept from following redirects too.
func TestRedirectFailsBatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		client *http.Client
	}{
		{"worker's client", nil},
		{"caller's client", &http.Client{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			url := w.queue("jobs", map[string]string{"VisibilityTimeout": "30"})
			w.send(url, numbered("m", 3)...)
			var mu sync.Mutex
			var seen []string
			srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				mu.Lock()
				seen = append(seen, r.Method+" "+r.URL.Path)
				mu.Unlock()
				if r.URL.Path == "/jobs" {
					// ServeMux's /jobs -> /jobs/, say, or an http -> https hop.
					http.Redirect(rw, r, "/jobs/", http.StatusMovedPermanently)
					return
				}
				rw.WriteHeader(http.StatusOK) // a GET on /jobs/: a health page
			}))
			t.Cleanup(srv.Close)
			w.start(worker.Config{QueueURL: url, Target: &worker.HTTPTarget{URL: srv.URL + "/jobs", Client: tt.client}})
			w.drive(10*time.Second, step, func() error {
				if n := w.obs.Count(consumer.EventHandled); n < 3 {
					return fmt.Errorf("%d handled", n)
				}
				return nil
			})
			w.settle()
			if d := w.obs.Count(consumer.EventDeleted); d != 0 {
				t.Errorf("%d messages deleted, want none: no request carried the event", d)
			}
			for _, e := range w.obs.All(consumer.EventHandled) {
				if !errors.Is(e.Err, worker.ErrTargetFailed) || !strings.Contains(e.Err.Error(), "HTTP 301, a redirect to \"/jobs/\"") {
					t.Errorf("result %v, want ErrTargetFailed naming the redirect", e.Err)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			for _, s := range seen {
				if s != "POST /jobs" {
					t.Errorf("the target saw %q, want only POST /jobs", seen)
					break
				}
			}
		})
	}
}

// The target's description, logged at start and printed by --check, does
// not show the URL's password.
func TestHTTPTargetStringRedactsPassword(t *testing.T) {
	t.Parallel()
	tests := []struct {
		target *worker.HTTPTarget
		want   string
	}{
		{&worker.HTTPTarget{URL: "http://svc:s3cr3t@127.0.0.1:8080/jobs"}, "POST http://svc:xxxxx@127.0.0.1:8080/jobs"},
		{&worker.HTTPTarget{URL: "https://svc:s3cr3t@h/", PerMessage: true}, "POST https://svc:xxxxx@h/ (one message per request)"},
		{&worker.HTTPTarget{URL: "http://h/jobs"}, "POST http://h/jobs"},
		// Unparsable: everything before the host's last @ goes.
		{&worker.HTTPTarget{URL: "http://svc:s3cr3t@h:port/%zz"}, "POST http://xxxxx@h:port/%zz"},
	}
	for _, tt := range tests {
		if got := tt.target.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
	_, err := worker.New(consumertest.NewSQS(consumertest.NewClock(time.Time{})),
		worker.Config{QueueURL: "u", Target: &worker.HTTPTarget{URL: "ftp://svc:s3cr3t@h/"}})
	if err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("New with an ftp URL: %v, want an error without the password", err)
	}
}

// A Host header sets the request's Host (Go ignores Header["Host"]), for
// events and per-message requests alike.
func TestHostHeaderSent(t *testing.T) {
	t.Parallel()
	for _, perMessage := range []bool{false, true} {
		t.Run(fmt.Sprintf("per-message %v", perMessage), func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			url := w.queue("jobs", map[string]string{"VisibilityTimeout": "30"})
			w.send(url, "m0")
			hosts := make(chan string, 10)
			srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				hosts <- r.Host + " " + r.Header.Get("X-Token")
			}))
			t.Cleanup(srv.Close)
			w.start(worker.Config{QueueURL: url, Target: &worker.HTTPTarget{URL: srv.URL, PerMessage: perMessage,
				Header: http.Header{"host": {"jobs.internal"}, "X-Token": {"t"}}}})
			w.drive(time.Minute, step, w.empty(url))
			if got := <-hosts; got != "jobs.internal t" {
				t.Errorf("the target saw Host and X-Token %q, want \"jobs.internal t\"", got)
			}
		})
	}
}

// A target that answers batchItemFailures to a worker that does not read
// them (ReportBatchItemFailures off): the batch is deleted whole, as Lambda
// does, and the worker says so at WARN once, with the count, and counts
// every such failure in its stop line, beside the batches it delivered.
func TestIgnoredBatchItemFailuresWarned(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	url := w.queue("jobs", map[string]string{"VisibilityTimeout": "30"})
	w.send(url, numbered("m", 10)...)
	_, target := w.httpTarget(func(n int, e event, _ *http.Request) (int, http.Header, string) {
		return http.StatusOK, nil, fmt.Sprintf(`{"batchItemFailures":[{"itemIdentifier":%q},{"itemIdentifier":%q}]}`, e.Records[0].MessageID, e.Records[1].MessageID)
	})
	log := &logbuf.Buffer{}
	cfg := w.config(worker.Config{QueueURL: url, Target: &worker.HTTPTarget{URL: target}})
	cfg.Logger = slog.New(slog.NewTextHandler(log, nil))
	wk, err := worker.New(w.cl, cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- wk.Run(context.Background()) }()
	w.drive(time.Minute, step, w.empty(url))
	w.send(url, numbered("n", 10)...)
	w.drive(time.Minute, step, w.empty(url))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	wk.Shutdown(ctx)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	out := log.String()
	if n := strings.Count(out, "the target answered batchItemFailures, but ReportBatchItemFailures (--report-batch-item-failures) is off"); n != 1 {
		t.Errorf("warnings of ignored failures: %d, want 1 in:\n%s", n, out)
	}
	for _, want := range []string{"level=WARN msg=\"the target answered batchItemFailures", "failures=2",
		"check=partial-batch", "worker stopping: the batches still gathering are delivered now", "running_deliveries=0",
		"batches_delivered=2 messages_delivered=20 messages_failed=0", "ignored_item_failures=4"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the log:\n%s", want, out)
		}
	}
}
