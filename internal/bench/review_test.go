package bench_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/internal/bench"
)

// A request's latency is the round trip only: the time the client takes to
// build or sign the request (here a slow clock read for the signature) is
// not the server's.
func TestLatencyExcludesRequestBuilding(t *testing.T) {
	t.Parallel()
	url, stop, err := bench.StartEcho(8)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	const slow = 50 * time.Millisecond
	c := mustClient(t, bench.ClientConfig{Endpoint: url, Conns: 1,
		NowFunc: func() time.Time { time.Sleep(slow); return time.Now() }})
	cfg := smokeConfig(t, url, bench.ScenarioSend)
	cfg.Client, cfg.Concurrency, cfg.Duration, cfg.Warmup = c, 1, 600*time.Millisecond, 0
	res := mustRun(t, cfg)
	if res.Requests == 0 {
		t.Fatal("no requests measured")
	}
	if res.Latency.P50 >= slow {
		t.Errorf("latency p50 %v includes the %v the client spent before sending", res.Latency.P50, slow)
	}
}

// fakeLeaseServer is an SQS queue with leases whose second leasing receive
// comes back empty after a while, as a server that answers a receive with
// a subset of what is visible (SQS does) may: by then the first receive's
// leases have expired, and the third receive leases those messages again.
type fakeLeaseServer struct {
	mu         sync.Mutex
	msgs       []*fakeMsg
	next       int
	leaseCalls int
}

type fakeMsg struct {
	id        string
	visibleAt time.Time
	deleted   bool
}

func (f *fakeLeaseServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	action := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "AmazonSQS.")
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	switch action {
	case "GetQueueUrl":
		io.WriteString(w, `{"QueueUrl":"http://fake/000000000000/q"}`)
	case "SendMessageBatch":
		var in struct{ Entries []struct{ Id string } }
		json.Unmarshal(body, &in)
		var ok []map[string]string
		f.mu.Lock()
		for _, e := range in.Entries {
			f.next++
			f.msgs = append(f.msgs, &fakeMsg{id: fmt.Sprintf("m%03d", f.next)})
			ok = append(ok, map[string]string{"Id": e.Id, "MessageId": fmt.Sprintf("m%03d", f.next), "MD5OfMessageBody": "x"})
		}
		f.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"Successful": ok, "Failed": []any{}})
	case "ReceiveMessage":
		var in struct {
			MaxNumberOfMessages, WaitTimeSeconds int
			VisibilityTimeout                    *int
		}
		json.Unmarshal(body, &in)
		vt := 30
		if in.VisibilityTimeout != nil {
			vt = *in.VisibilityTimeout
		}
		f.mu.Lock()
		lease := vt < 60
		if lease {
			f.leaseCalls++
		}
		empty := lease && f.leaseCalls == 2
		f.mu.Unlock()
		if empty {
			time.Sleep(expiredGap)
			io.WriteString(w, `{"Messages":[]}`)
			return
		}
		until := time.Now().Add(time.Duration(in.WaitTimeSeconds) * time.Second)
		for {
			var out []map[string]string
			f.mu.Lock()
			now := time.Now()
			for _, m := range f.msgs {
				if len(out) == min(in.MaxNumberOfMessages, 5) {
					break
				}
				if !m.deleted && !now.Before(m.visibleAt) {
					m.visibleAt = now.Add(time.Duration(vt) * time.Second)
					out = append(out, map[string]string{"MessageId": m.id, "ReceiptHandle": m.id, "MD5OfBody": "x", "Body": "b"})
				}
			}
			f.mu.Unlock()
			if len(out) > 0 || !time.Now().Before(until) {
				json.NewEncoder(w).Encode(map[string]any{"Messages": out})
				return
			}
			select {
			case <-r.Context().Done():
				return
			case <-time.After(time.Millisecond):
			}
		}
	case "DeleteMessageBatch":
		var in struct {
			Entries []struct{ Id, ReceiptHandle string }
		}
		json.Unmarshal(body, &in)
		var ok []map[string]string
		f.mu.Lock()
		for _, e := range in.Entries {
			for _, m := range f.msgs {
				if m.id == e.ReceiptHandle {
					m.deleted = true
				}
			}
			ok = append(ok, map[string]string{"Id": e.Id})
		}
		f.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"Successful": ok, "Failed": []any{}})
	default:
		io.WriteString(w, `{}`)
	}
}

// expiredGap is how long fakeLeaseServer holds its second leasing receive,
// so that the leases of the first have expired when the third takes their
// messages again: a lateness measured from the first lease's deadline would
// be at least this.
const expiredGap = 2 * time.Second

// A message leased again while the run is still leasing its round (its
// first lease expired in between) has the new lease's deadline: its
// lateness is measured from that, not from the expired lease's. The bounds
// are wide apart, for a loaded machine: the first round ends some 3.5 s
// into a 10 s run, and a lateness measured right is far below expiredGap.
func TestLeaseExpiryReleasedMessageTakesNewDeadline(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(&fakeLeaseServer{})
	t.Cleanup(srv.Close)
	cfg := smokeConfig(t, srv.URL, bench.ScenarioLeaseExpiry)
	cfg.Concurrency, cfg.VisibilityTimeout, cfg.Warmup, cfg.Duration = 1, 1, 0, 10*time.Second
	res := mustRun(t, cfg)
	l := res.Lateness
	if l == nil || l.Count < 10 {
		t.Fatalf("lateness %+v, want the first round's ten redeliveries", l)
	}
	if l.Max >= expiredGap*3/4 {
		t.Errorf("redelivery lateness max %v: measured from a lease that had expired and was taken again", l.Max)
	}
}

// Probe messages left in a reused queue by an earlier run are not taken
// for this run's probes: a stale "lp-1-…" must not complete probe 1 before
// it is even sent.
func TestLongPollIgnoresEarlierRunsProbes(t *testing.T) {
	t.Parallel()
	srv := startRealTimeServer(t)
	ctx := context.Background()
	q, err := srv.Client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("smoke-stale-longpoll")})
	if err != nil {
		t.Fatal(err)
	}
	for b := 0; b < 20; b++ {
		var entries []types.SendMessageBatchRequestEntry
		for i := 1; i <= 10; i++ {
			n := b*10 + i
			entries = append(entries, types.SendMessageBatchRequestEntry{
				Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String("lp-" + strconv.Itoa(n) + "-from-an-earlier-run")})
		}
		if _, err := srv.Client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: q.QueueUrl, Entries: entries}); err != nil {
			t.Fatal(err)
		}
	}
	cfg := smokeConfig(t, srv.URL, bench.ScenarioLongPoll)
	cfg.Queue, cfg.Warmup = "smoke-stale-longpoll", 0
	res := mustRun(t, cfg)
	d := res.Delivery
	if d == nil || d.Count == 0 {
		t.Fatalf("delivery %+v, want measured deliveries", d)
	}
	// One probe at a time: this run's messages are as many as its sends,
	// give or take one, and each was timed once. The one is the last
	// probe: its receive can answer inside the window while its send's
	// answer comes after it, so the send is not counted and the delivery
	// is. The 200 stale probes would be far more than one.
	sends := res.Actions["SendMessage"].Count
	if res.Messages > sends+1 || d.Count > sends+1 {
		t.Errorf("%d messages received and %d deliveries timed for %d probes sent: earlier runs' messages were taken for this run's",
			res.Messages, d.Count, sends)
	}
}

// When MaxRequests stops the load before the duration is up, the rates are
// over the time the load ran, not over the duration it would have run:
// longpoll-latency's receivers then wait until the run's end, idle.
func TestMaxRequestsRatesOverTheLoad(t *testing.T) {
	t.Parallel()
	srv := startRealTimeServer(t)
	cfg := smokeConfig(t, srv.URL, bench.ScenarioLongPoll)
	cfg.Queue, cfg.Warmup, cfg.Duration, cfg.MaxRequests = "smoke-longpoll-budget", 0, 2500*time.Millisecond, 40
	res := mustRun(t, cfg)
	if res.Requests == 0 {
		t.Fatal("no requests measured")
	}
	if res.Seconds > 1.5 {
		t.Errorf("%d requests over %.2fs: the budget ran out long before, the rate %.0f/s is diluted by idle time",
			res.Requests, res.Seconds, res.RequestsPerSecond)
	}
}

// CPUBusy is over the CPUs this process may use (GOMAXPROCS, which Go
// sets from a container's CPU quota), as the report's "N CPUs" says, not
// over every CPU of the host.
func TestCPUBusyOverGOMAXPROCS(t *testing.T) {
	// Not parallel: it changes GOMAXPROCS.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	m := bench.MergeResults(&bench.Result{Scenario: "send", Target: "t", Seconds: 2, Requests: 10, ProcessCPU: time.Second})
	if !near(m.CPUBusy, 0.5) {
		t.Errorf("CPUBusy of 1s of CPU over 2s with GOMAXPROCS 1 = %v, want 0.5", m.CPUBusy)
	}
}

// The ceiling answers as Baton does at the HTTP level too: a response of
// more than 2 KiB (a receive of ten 1 KiB messages) carries its length and
// is not chunked, which would cost the echo and its client extra work.
func TestEchoResponsesCarryContentLength(t *testing.T) {
	t.Parallel()
	url, stop, err := bench.StartEcho(1024)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	req, err := http.NewRequest("POST", url, strings.NewReader(`{"QueueUrl":"q","MaxNumberOfMessages":10}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Amz-Target", "AmazonSQS.ReceiveMessage")
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.ContentLength != int64(len(b)) || len(resp.TransferEncoding) != 0 {
		t.Errorf("echo ReceiveMessage of %d bytes: Content-Length %d, Transfer-Encoding %v; want the length, not chunked",
			len(b), resp.ContentLength, resp.TransferEncoding)
	}
}

// A batch response that names an entry in neither Successful nor Failed
// (a 200 with "{}", say) counts that entry as an error: it was not sent.
func TestBatchEntriesMissingAreErrors(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		switch r.Header.Get("X-Amz-Target") {
		case "AmazonSQS.GetQueueUrl":
			io.WriteString(w, `{"QueueUrl":"http://fake/000000000000/q"}`)
		case "AmazonSQS.SendMessageBatch":
			io.WriteString(w, `{"Successful":[{"Id":"0","MessageId":"m","MD5OfMessageBody":"x"}],"Failed":[]}`)
		default:
			io.WriteString(w, `{}`)
		}
	}))
	t.Cleanup(srv.Close)
	cfg := smokeConfig(t, srv.URL, bench.ScenarioSendBatch)
	cfg.Concurrency, cfg.Warmup, cfg.Duration, cfg.MaxRequests = 1, 0, 2*time.Second, 5
	res := mustRun(t, cfg)
	missing := res.Errors["SendMessageBatch: entry missing from the response"]
	if res.Messages != res.Requests || missing != 9*res.Requests {
		t.Errorf("%d requests: %d messages and %d entries counted missing; want one message and nine missing a request",
			res.Requests, res.Messages, missing)
	}
}
