package proxy_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/batontest"
	"github.com/baton-sqs/baton/engine/ledger"
	"github.com/baton-sqs/baton/internal/cli"
	"github.com/baton-sqs/baton/internal/testutil/logbuf"
	"github.com/baton-sqs/baton/proxy"
	"github.com/baton-sqs/baton/server"
)

// at sets the fake clock to sec seconds after the test's start.
func (e *env) at(sec int) { e.clock.Set(batontest.Epoch.Add(time.Duration(sec) * time.Second)) }

// get GETs path from base, signed with the upstream's key at the fake
// clock's time, and decodes the JSON answer into v.
func (e *env) get(t *testing.T, base, path string, v any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	empty := sha256.Sum256(nil)
	creds := aws.Credentials{AccessKeyID: upstreamKey, SecretAccessKey: upstreamSecret}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hex.EncodeToString(empty[:]), "sqs", batontest.Region, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s%s: %s", base, path, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// reports returns the proxy's lease report of queue and the upstream's
// own, for the same traffic.
func (e *env) reports(t *testing.T, queue string) (viaProxy, upstream server.LeaseReportJSON) {
	t.Helper()
	e.get(t, e.url, "/admin/api/queues/"+queue+"/leases", &viaProxy)
	e.get(t, e.up.URL(), "/admin/api/queues/"+queue+"/leases", &upstream)
	return viaProxy, upstream
}

// sameDiagnosis fails the test unless the proxy's report says what the
// upstream's does: diagnosis, findings, recommendation and every figure.
func sameDiagnosis(t *testing.T, viaProxy, upstream server.LeaseReportJSON, want string) {
	t.Helper()
	if upstream.Diagnosis != want {
		t.Fatalf("the upstream diagnoses %q, want %q (%s)", upstream.Diagnosis, want, upstream.Advice)
	}
	if viaProxy.Diagnosis != upstream.Diagnosis {
		t.Errorf("the proxy diagnoses %q, the upstream %q (%s)", viaProxy.Diagnosis, upstream.Diagnosis, viaProxy.Advice)
	}
	if !reflect.DeepEqual(viaProxy.LeaseStatsJSON, upstream.LeaseStatsJSON) {
		t.Errorf("window figures:\nproxy    %+v\nupstream %+v", viaProxy.LeaseStatsJSON, upstream.LeaseStatsJSON)
	}
	if viaProxy.RecommendedVisibilityTimeoutSeconds != upstream.RecommendedVisibilityTimeoutSeconds ||
		viaProxy.VisibilityTimeoutSeconds != upstream.VisibilityTimeoutSeconds {
		t.Errorf("timeouts: proxy %d → %d, upstream %d → %d", viaProxy.VisibilityTimeoutSeconds, viaProxy.RecommendedVisibilityTimeoutSeconds,
			upstream.VisibilityTimeoutSeconds, upstream.RecommendedVisibilityTimeoutSeconds)
	}
	kinds := func(r server.LeaseReportJSON) (k []string) {
		for _, f := range r.Findings {
			k = append(k, f.Kind+"/"+strconv.FormatUint(f.Leases, 10))
		}
		return k
	}
	if !slices.Equal(kinds(viaProxy), kinds(upstream)) {
		t.Errorf("findings: proxy %v, upstream %v", kinds(viaProxy), kinds(upstream))
	}
	if !strings.Contains(viaProxy.HistoryNote, "invisible") {
		t.Errorf("history note %q does not say what the proxy cannot see", viaProxy.HistoryNote)
	}
}

func receiveOne(t *testing.T, c *sqs.Client, q string) types.Message {
	t.Helper()
	out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &q})
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("receive: %v, %d messages", err, len(out.Messages))
	}
	return out.Messages[0]
}

func deleteOne(t *testing.T, c *sqs.Client, q string, m types.Message) {
	t.Helper()
	if _, err := c.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: &q, ReceiptHandle: m.ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
}

// The classic incident through the proxy: a 30 s lease, 90 s handlers that
// delete when done, three naive workers. The message runs three times;
// every delete comes late. The proxy diagnoses it as the upstream does,
// and `baton doctor --endpoint <proxy>` says so.
func TestClassicLeaseTooShort(t *testing.T) {
	e := newEnv(t)
	q := e.up.Queue(t, "slow?VisibilityTimeout=30") // made upstream: the proxy fetches the timeout
	workers := []*sqs.Client{e.client("AKIDA", "a"), e.client("AKIDB", "b"), e.client("AKIDC", "c")}
	sent, err := workers[0].SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String("job")})
	if err != nil {
		t.Fatal(err)
	}
	a := receiveOne(t, workers[0], q)
	e.at(31)
	b := receiveOne(t, workers[1], q)
	e.at(62)
	c := receiveOne(t, workers[2], q)
	e.at(90)
	deleteOne(t, workers[0], q, a)
	e.at(121)
	deleteOne(t, workers[1], q, b)
	e.at(152)
	deleteOne(t, workers[2], q, c)

	viaProxy, upstream := e.reports(t, "slow")
	sameDiagnosis(t, viaProxy, upstream, "lease-too-short")
	// A's late delete deleted the message; B's and C's found it already
	// deleted (AWS answers them with success): one completed lease.
	if viaProxy.LateCompletions != 3 || viaProxy.ConfirmedDuplicates != 2 || viaProxy.ExpiredLeases != 2 || viaProxy.MessagesSent != 1 ||
		viaProxy.LeasesCompleted != 1 || viaProxy.DeletesAlreadyDeleted != 2 {
		t.Errorf("proxy: %+v", viaProxy.LeaseStatsJSON)
	}
	var hp, hu server.MessageHistoryJSON
	path := "/admin/api/queues/slow/messages/" + *sent.MessageId + "/history"
	e.get(t, e.url, path, &hp)
	e.get(t, e.up.URL(), path, &hu)
	evKinds := func(h server.MessageHistoryJSON) (k []string) {
		for _, ev := range h.Events {
			k = append(k, ev.Kind+"@"+ev.At.Sub(batontest.Epoch).String()+either(ev.AlreadyDeleted, " already deleted", ""))
		}
		return k
	}
	if !slices.Equal(evKinds(hp), evKinds(hu)) {
		t.Errorf("history:\nproxy    %v\nupstream %v", evKinds(hp), evKinds(hu))
	}

	out := runDoctor(t, e.url, "slow")
	for _, want := range []string{"slow: LEASE-TOO-SHORT", "3 late completions", "recommended visibility timeout: 135s", "invisible"} {
		if !strings.Contains(out, want) {
			t.Errorf("baton doctor says:\n%s\nwant %q in it", out, want)
		}
	}
}

// runDoctor runs `baton doctor --endpoint <proxy> queue` and returns what
// it prints.
func runDoctor(t *testing.T, endpoint, queue string) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDDOCTOR")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "doctor")
	t.Setenv("AWS_REGION", batontest.Region)
	t.Setenv("AWS_CONFIG_FILE", dir+"/config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", dir+"/credentials")
	var stdout, stderr bytes.Buffer
	code := cli.Main{Stdout: &stdout, Stderr: &stderr}.Run(context.Background(), []string{"doctor", "--endpoint", endpoint, queue})
	if code != 0 {
		t.Fatalf("baton doctor: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// The error-path incident: handlers that fail before DeleteMessage. Each
// receive lapses and the message goes to the next receive of the consumer,
// which goes on polling; no holder ever comes back with its receipt.
func TestHandlersThatNeverComeBack(t *testing.T) {
	e := newEnv(t)
	q := e.up.Queue(t, "failing?VisibilityTimeout=30")
	c := e.client("AKIDAPP", "app")
	if _, err := c.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String("job")}); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		e.at(31 * i)
		receiveOne(t, c, q)
	}
	e.at(100)
	viaProxy, upstream := e.reports(t, "failing")
	sameDiagnosis(t, viaProxy, upstream, "handler-failing")
	if viaProxy.ExpiredLeases != 3 || viaProxy.RedeliveriesNeverReturned != 3 || viaProxy.LateCompletions != 0 {
		t.Errorf("proxy: %+v", viaProxy.LeaseStatsJSON)
	}
}

// Renewing handlers, in batches: 90 s handlers that renew their 30 s
// lease every 10 s with ChangeMessageVisibilityBatch and delete with
// DeleteMessageBatch are healthy, through the proxy as upstream; the
// receive gives its own VisibilityTimeout.
func TestBatchRenewalsHealthy(t *testing.T) {
	e := newEnv(t)
	q := e.up.Queue(t, "renewing?VisibilityTimeout=5")
	c := e.client("AKIDAPP", "app")
	ctx := context.Background()
	for i := range 3 {
		if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String("job " + strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
	}
	out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &q, MaxNumberOfMessages: 10, VisibilityTimeout: 30})
	if err != nil || len(out.Messages) != 3 {
		t.Fatalf("receive: %v, %d messages", err, len(out.Messages))
	}
	for s := 10; s < 90; s += 10 {
		e.at(s)
		var entries []types.ChangeMessageVisibilityBatchRequestEntry
		for i, m := range out.Messages {
			entries = append(entries, types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 30})
		}
		if r, err := c.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: &q, Entries: entries}); err != nil || len(r.Failed) > 0 {
			t.Fatalf("change: %v %+v", err, r)
		}
	}
	e.at(90)
	var entries []types.DeleteMessageBatchRequestEntry
	for i, m := range out.Messages {
		entries = append(entries, types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle})
	}
	entries = append(entries, types.DeleteMessageBatchRequestEntry{Id: aws.String("bad"), ReceiptHandle: aws.String("not-a-handle")})
	if r, err := c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: &q, Entries: entries}); err != nil || len(r.Successful) != 3 || len(r.Failed) != 1 {
		t.Fatalf("delete: %v %+v", err, r)
	}
	viaProxy, upstream := e.reports(t, "renewing")
	sameDiagnosis(t, viaProxy, upstream, "healthy")
	if viaProxy.Renewals != 24 || viaProxy.LeasesCompleted != 3 {
		t.Errorf("proxy: %+v", viaProxy.LeaseStatsJSON)
	}
}

// The classic incident in the Query protocol, with form-encoded requests
// and XML answers, unsigned: the proxy checks no signature and signs
// them itself.
func TestClassicOverQuery(t *testing.T) {
	e := newEnv(t)
	q := e.up.Queue(t, "slowq?VisibilityTimeout=30")
	call := func(form url.Values) string {
		t.Helper()
		form.Set("QueueUrl", q)
		form.Set("Version", "2012-11-05")
		resp, err := http.Post(e.url+"/", "application/x-www-form-urlencoded", strings.NewReader(form.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %s %s", form.Get("Action"), resp.Status, b.String())
		}
		return b.String()
	}
	handle := func(xmlBody string) string {
		_, rest, ok := strings.Cut(xmlBody, "<ReceiptHandle>")
		h, _, _ := strings.Cut(rest, "</ReceiptHandle>")
		if !ok {
			t.Fatalf("no message in %s", xmlBody)
		}
		return strings.NewReplacer("&#43;", "+", "&#x2B;", "+", "&amp;", "&", "&#x3D;", "=", "&#47;", "/").Replace(h)
	}
	call(url.Values{"Action": {"SendMessage"}, "MessageBody": {"job"}})
	a := handle(call(url.Values{"Action": {"ReceiveMessage"}}))
	e.at(31)
	b := handle(call(url.Values{"Action": {"ReceiveMessage"}}))
	e.at(62)
	c := handle(call(url.Values{"Action": {"ReceiveMessage"}}))
	e.at(90)
	call(url.Values{"Action": {"DeleteMessage"}, "ReceiptHandle": {a}})
	e.at(121)
	call(url.Values{"Action": {"DeleteMessageBatch"}, "DeleteMessageBatchRequestEntry.1.Id": {"b"}, "DeleteMessageBatchRequestEntry.1.ReceiptHandle": {b}})
	e.at(152)
	call(url.Values{"Action": {"DeleteMessage"}, "ReceiptHandle": {c}})
	viaProxy, upstream := e.reports(t, "slowq")
	sameDiagnosis(t, viaProxy, upstream, "lease-too-short")
	if viaProxy.LateCompletions != 3 {
		t.Errorf("proxy: %+v", viaProxy.LeaseStatsJSON)
	}
}

// The proxy tracks at most MaxLeases leases, and counts those it forgot.
func TestMaxLeasesCounted(t *testing.T) {
	e := newEnv(t, func(c *proxy.Config) { c.MaxLeases = 2 })
	q := e.up.Queue(t, "many")
	c := e.client("AKIDAPP", "app")
	ctx := context.Background()
	for i := range 5 {
		if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String(strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
	}
	for range 5 {
		receiveOne(t, c, q)
	}
	resp, err := http.Get(e.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	for _, want := range []string{"baton_proxy_leases_dropped_total 3", "baton_proxy_tracked_leases 2",
		`baton_messages_received_total{queue="many"} 5`, `baton_messages_sent_total{queue="many"} 5`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("/metrics lacks %q:\n%s", want, b.String())
		}
	}
}

// A FIFO receive retried with the same ReceiveRequestAttemptId answers
// the same receipts: one lease, not a redelivery nor a renewal. And a late delete on a
// FIFO queue, which the upstream refuses, still counts as late.
func TestFIFORetriedReceiveAndRefusedLateDelete(t *testing.T) {
	e := newEnv(t)
	q := e.up.Queue(t, "orders.fifo?VisibilityTimeout=30&ContentBasedDeduplication=true")
	c := e.client("AKIDAPP", "app")
	ctx := context.Background()
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String("job"), MessageGroupId: aws.String("g")}); err != nil {
		t.Fatal(err)
	}
	in := &sqs.ReceiveMessageInput{QueueUrl: &q, ReceiveRequestAttemptId: aws.String("attempt-1")}
	first, err := c.ReceiveMessage(ctx, in)
	if err != nil || len(first.Messages) != 1 {
		t.Fatalf("receive: %v %+v", err, first)
	}
	again, err := c.ReceiveMessage(ctx, in)
	if err != nil || len(again.Messages) != 1 || *again.Messages[0].ReceiptHandle != *first.Messages[0].ReceiptHandle {
		t.Fatalf("retried receive: %v %+v", err, again)
	}
	e.at(40)
	if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &q, ReceiptHandle: first.Messages[0].ReceiptHandle}); err == nil {
		t.Fatal("a late delete on a FIFO queue succeeded")
	}
	viaProxy, upstream := e.reports(t, "orders.fifo")
	// The retried receive is the receive again, no renewal.
	if viaProxy.LeasesStarted != 1 || viaProxy.LateCompletions != 1 || viaProxy.ExpiredLeases != 1 || viaProxy.Renewals != 0 {
		t.Errorf("proxy: %+v", viaProxy.LeaseStatsJSON)
	}
	if !reflect.DeepEqual(viaProxy.LeaseStatsJSON, upstream.LeaseStatsJSON) || viaProxy.Diagnosis != upstream.Diagnosis {
		t.Errorf("proxy %s %+v\nupstream %s %+v", viaProxy.Diagnosis, viaProxy.LeaseStatsJSON, upstream.Diagnosis, upstream.LeaseStatsJSON)
	}
}

// The Query protocol's older form sends a queue's actions to its URL's
// path, with no QueueUrl parameter: the proxy follows those leases too.
func TestQueryByQueuePath(t *testing.T) {
	e := newEnv(t)
	q := e.up.Queue(t, "bypath?VisibilityTimeout=30")
	u, err := url.Parse(q)
	if err != nil {
		t.Fatal(err)
	}
	for _, action := range []string{"SendMessage&MessageBody=job", "ReceiveMessage"} {
		resp, err := http.Post(e.url+u.Path, "application/x-www-form-urlencoded", strings.NewReader("Version=2012-11-05&Action="+action))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %s", action, resp.Status)
		}
	}
	e.at(31)
	viaProxy, upstream := e.reports(t, "bypath")
	if viaProxy.LeasesStarted != 1 || viaProxy.ExpiredLeases != 1 || viaProxy.VisibilityTimeoutSeconds != 30 ||
		!reflect.DeepEqual(viaProxy.LeaseStatsJSON, upstream.LeaseStatsJSON) {
		t.Errorf("proxy %+v\nupstream %+v", viaProxy.LeaseStatsJSON, upstream.LeaseStatsJSON)
	}
}

// A batch refused as a whole (here for too many entries) deleted nothing:
// its lapsed receipts are no late completions.
func TestRefusedBatchIsNoCompletion(t *testing.T) {
	e := newEnv(t)
	q := e.up.Queue(t, "refused?VisibilityTimeout=30")
	c := e.client("AKIDAPP", "app")
	ctx := context.Background()
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String("job")}); err != nil {
		t.Fatal(err)
	}
	m := receiveOne(t, c, q)
	e.at(31)
	var entries []types.DeleteMessageBatchRequestEntry
	for i := range 11 {
		entries = append(entries, types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle})
	}
	if _, err := c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: &q, Entries: entries}); errCode(err) == "" {
		t.Fatalf("11 entries: %v, want a refusal", err)
	}
	viaProxy, upstream := e.reports(t, "refused")
	if viaProxy.LateCompletions != 0 || !reflect.DeepEqual(viaProxy.LeaseStatsJSON, upstream.LeaseStatsJSON) {
		t.Errorf("proxy %+v\nupstream %+v", viaProxy.LeaseStatsJSON, upstream.LeaseStatsJSON)
	}
}

// The proxy's counts equal the upstream's when answers take time to come
// back: the upstream begins a lease (or moves it) when it handles the call,
// the proxy reads the answer later. Here every receive's and visibility
// change's answer takes 5 s on its way back. A receive at 0 leases until
// 30 upstream; a delete at 32 is late there, and so in the proxy's count.
// A renewal sent at 110 (to 140) and a delete at 142: late too. Dated from
// the answers (35 and 145), the proxy counted both deletes in time.
func TestSlowAnswersNeverMakeLateDeletesTimely(t *testing.T) {
	e := newEnv(t)
	e.tap.mu.Lock()
	e.tap.afterAnswer = func(r *http.Request) {
		switch r.Header.Get("X-Amz-Target") {
		case "AmazonSQS.ReceiveMessage", "AmazonSQS.ChangeMessageVisibility":
			e.clock.Advance(5 * time.Second)
		}
	}
	e.tap.mu.Unlock()
	q := e.up.Queue(t, "slowanswer?VisibilityTimeout=30")
	c := e.client("AKIDAPP", "app")
	ctx := context.Background()
	for _, body := range []string{"a", "b"} {
		if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
	}
	e.at(0)
	a := receiveOne(t, c, q) // answered at 5
	e.at(32)
	deleteOne(t, c, q, a)
	e.at(100)
	b := receiveOne(t, c, q) // answered at 105
	e.at(110)
	if _, err := c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: &q, ReceiptHandle: b.ReceiptHandle,
		VisibilityTimeout: 30}); err != nil { // answered at 115
		t.Fatal(err)
	}
	e.at(142)
	deleteOne(t, c, q, b)
	viaProxy, upstream := e.reports(t, "slowanswer")
	if upstream.LateCompletions != 2 {
		t.Fatalf("upstream: %+v, want two late completions", upstream.LeaseStatsJSON)
	}
	if !reflect.DeepEqual(viaProxy.LeaseStatsJSON, upstream.LeaseStatsJSON) || viaProxy.Diagnosis != upstream.Diagnosis {
		t.Errorf("proxy %s %+v\nupstream %s %+v", viaProxy.Diagnosis, viaProxy.LeaseStatsJSON, upstream.Diagnosis, upstream.LeaseStatsJSON)
	}
}

// Issue 31 items 3 and 6 through the proxy: a long job renewed on its
// handler's progress (X-Baton-Renewal: progress, which the proxy reads and
// passes on) is a long job to both, and its heartbeat's renewals past the
// 12-hour ceiling, refused upstream, are counted by both.
func TestLongJobAndCeilingThroughProxy(t *testing.T) {
	e := newEnv(t)
	q := e.up.Queue(t, "jobs?VisibilityTimeout=30")
	c := e.client("AKIDAPP", "app")
	ctx := context.Background()
	for i := range 3 { // 1 s jobs
		if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String("job")}); err != nil {
			t.Fatal(err)
		}
		e.at(10 * i)
		m := receiveOne(t, c, q)
		e.at(10*i + 1)
		deleteOne(t, c, q, m)
	}
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String("long")}); err != nil {
		t.Fatal(err)
	}
	e.at(40)
	m := receiveOne(t, c, q)
	progress := func(o *sqs.Options) {
		o.APIOptions = append(o.APIOptions, smithyhttp.AddHeaderValue(baton.RenewalHeader, baton.RenewalProgress))
	}
	for s := 50; s <= 80; s += 10 {
		e.at(s)
		if _, err := c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: &q, ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 30}, progress); err != nil {
			t.Fatal(err)
		}
	}
	for s := 81; s <= 83; s++ {
		e.at(s)
		if _, err := c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: &q, ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 43200}); err == nil {
			t.Fatal("a renewal past the 12-hour ceiling succeeded")
		}
	}
	viaProxy, upstream := e.reports(t, "jobs")
	sameDiagnosis(t, viaProxy, upstream, "long-job")
	if len(viaProxy.Findings) != 2 || viaProxy.Findings[1].Kind != "ceiling-refused" || viaProxy.RefusedRenewals != 3 {
		t.Errorf("proxy: findings %+v, %d refused renewals", viaProxy.Findings, viaProxy.RefusedRenewals)
	}
}

// Receives that ask for their own lease, through the proxy as upstream:
// longer than the queue's and completed within it is no overrun; shorter
// and overrun, the fix is to ask for more, not a longer queue timeout.
func TestLeaseAskedOnReceive(t *testing.T) {
	for _, tc := range []struct {
		queue        string
		vis, asked   int
		work         int
		want, advice string
		recommended  int
	}{
		{"asks-longer", 30, 120, 90, "healthy", "longer than the 30s visibility timeout now in force", 135},
		{"asks-less", 300, 10, 20, "lease-too-short", "Ask for at least 30s (the p99 × 1.5)", 300},
	} {
		t.Run(tc.queue, func(t *testing.T) {
			e := newEnv(t)
			q := e.up.Queue(t, tc.queue+"?VisibilityTimeout="+strconv.Itoa(tc.vis))
			c := e.client("AKIDAPP", "app")
			ctx := context.Background()
			for i := range 3 {
				if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String("job " + strconv.Itoa(i))}); err != nil {
					t.Fatal(err)
				}
			}
			out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &q, MaxNumberOfMessages: 10, VisibilityTimeout: int32(tc.asked)})
			if err != nil || len(out.Messages) != 3 {
				t.Fatalf("receive: %v, %d messages", err, len(out.Messages))
			}
			e.at(tc.work)
			for _, m := range out.Messages {
				deleteOne(t, c, q, m)
			}
			viaProxy, upstream := e.reports(t, tc.queue)
			sameDiagnosis(t, viaProxy, upstream, tc.want)
			if !strings.Contains(viaProxy.Advice, tc.advice) || viaProxy.RecommendedVisibilityTimeoutSeconds != tc.recommended {
				t.Errorf("proxy advice %q, recommended %d s; want %q and %d s", viaProxy.Advice, viaProxy.RecommendedVisibilityTimeoutSeconds, tc.advice, tc.recommended)
			}
		})
	}
}

// The classic incident, then the fix applied mid-window: the queue's
// VisibilityTimeout raised to 135 s through the proxy. The leases that
// overran had the queue's timeout of the time, not one their receives
// asked for: both the proxy and the upstream say the timeout was raised
// and covers them, and recommend the one in force.
func TestRaisedTimeoutMidWindow(t *testing.T) {
	e := newEnv(t)
	q := e.up.Queue(t, "raised?VisibilityTimeout=30")
	c := e.client("AKIDAPP", "app")
	ctx := context.Background()
	for i := range 3 {
		if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String("job " + strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
	}
	receive := func() []types.Message {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &q, MaxNumberOfMessages: 10})
		if err != nil || len(out.Messages) != 3 {
			t.Fatalf("receive: %v, %d messages", err, len(out.Messages))
		}
		return out.Messages
	}
	first := receive()
	e.at(31)
	second := receive()
	e.at(90)
	for _, m := range first {
		deleteOne(t, c, q, m)
	}
	e.at(121)
	for _, m := range second {
		deleteOne(t, c, q, m)
	}
	if _, err := c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: &q,
		Attributes: map[string]string{"VisibilityTimeout": "135"}}); err != nil {
		t.Fatal(err)
	}
	viaProxy, upstream := e.reports(t, "raised")
	sameDiagnosis(t, viaProxy, upstream, "lease-too-short")
	for who, r := range map[string]server.LeaseReportJSON{"proxy": viaProxy, "upstream": upstream} {
		if !strings.Contains(r.Advice, "it has been raised to 135s since") || !strings.Contains(r.Advice, "The 135s now in force covers them") ||
			strings.Contains(r.Advice, "Ask for") || r.RecommendedVisibilityTimeoutSeconds != 135 {
			t.Errorf("%s advice %q, recommended %d s; want the raise said, 135 s", who, r.Advice, r.RecommendedVisibilityTimeoutSeconds)
		}
	}
}

func either(cond bool, one, other string) string {
	if cond {
		return one
	}
	return other
}

// A FIFO group whose head fails every time, in a consumer that releases
// the head with a back-off and the messages behind it at once: through
// the proxy as on the upstream, the head's retry loop comes first, and
// the release loop says the FIFO reading.
func TestFIFOFollowersOfAFailingHead(t *testing.T) {
	e := newEnv(t)
	q := e.up.Queue(t, "skip.fifo?VisibilityTimeout=30&ContentBasedDeduplication=true")
	c := e.client("AKIDAPP", "app")
	ctx := context.Background()
	for i := range 3 {
		if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String("m" + strconv.Itoa(i)), MessageGroupId: aws.String("g")}); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 5 {
		e.at(10 * round)
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &q, MaxNumberOfMessages: 10})
		if err != nil || len(out.Messages) != 3 {
			t.Fatalf("round %d: %v, %d messages", round, err, len(out.Messages))
		}
		e.at(10*round + 1)
		for i, m := range out.Messages {
			vt := []int32{5, 0, 0}[i]
			if _, err := c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: &q, ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: vt}); err != nil {
				t.Fatal(err)
			}
		}
	}
	e.at(55)
	if _, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &q}); err != nil {
		t.Fatal(err)
	}
	viaProxy, upstream := e.reports(t, "skip.fifo")
	sameDiagnosis(t, viaProxy, upstream, "retry-loop")
	if len(viaProxy.Findings) != 2 || viaProxy.Findings[1].Kind != "release-loop" ||
		!strings.Contains(viaProxy.Findings[1].Fix, "On a FIFO queue a consumer releases the messages behind one that failed in their group") {
		t.Errorf("findings through the proxy: %+v", viaProxy.Findings)
	}
}

// A ChangeMessageVisibility to the very end its lease has moves nothing:
// the proxy reads it as a renewal, as the server does (a store's rerun of
// a renewal whose answer was lost finds that end), not as a release with a
// delay. Its figures and history are the upstream's.
func TestChangeToTheSameEndIsARenewal(t *testing.T) {
	e := newEnv(t)
	q := e.up.Queue(t, "same-end?VisibilityTimeout=30")
	c := e.client("AKIDAPP", "app")
	ctx := context.Background()
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String("job")}); err != nil {
		t.Fatal(err)
	}
	m := receiveOne(t, c, q) // its lease ends at 30 s
	e.at(10)
	if _, err := c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: &q, ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 20}); err != nil {
		t.Fatal(err)
	}
	e.at(15)
	deleteOne(t, c, q, m)
	viaProxy, upstream := e.reports(t, "same-end")
	sameDiagnosis(t, viaProxy, upstream, "healthy")
	if viaProxy.Renewals != 1 || viaProxy.Releases != 0 || viaProxy.LeasesCompleted != 1 {
		t.Errorf("proxy: %d renewals, %d releases, %d completed; want the change a renewal, the lease completed", viaProxy.Renewals, viaProxy.Releases, viaProxy.LeasesCompleted)
	}
	var viaHist, upHist server.MessageHistoryJSON
	path := "/admin/api/queues/same-end/messages/" + *m.MessageId + "/history"
	e.get(t, e.url, path, &viaHist)
	e.get(t, e.up.URL(), path, &upHist)
	kinds := func(h server.MessageHistoryJSON) (k []string) {
		for _, ev := range h.Events {
			k = append(k, ev.Kind)
		}
		return k
	}
	if want := []string{"receive", "renew", "delete"}; !slices.Equal(kinds(viaHist), want) || !slices.Equal(kinds(upHist), want) {
		t.Errorf("history: proxy %v, upstream %v; want %v", kinds(viaHist), kinds(upHist), want)
	}
}

// Deletes sent within their leases whose answers were lost (the upstream
// deleted, and answered 503; or the connection was cut once it had
// deleted; or its answer stalled past the proxy's bound), retried only
// after the leases' end: the proxy saw the first attempts go out in time
// and fail, and reads each retry, which finds its message deleted, as the
// lease's completion at its first attempt (ledger.Event.Unanswered), as
// the server reads such a retry: not that the handlers overran their
// leases, and with the handlers' time to those attempts. The upstream saw
// its deletes in time.
func TestDeleteAnswerLostRetriedAfterLeaseEnd(t *testing.T) {
	for _, how := range []string{"503", "cut", "stalled"} {
		for _, fifo := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/fifo=%v", how, fifo), func(t *testing.T) { testDeleteAnswerLostRetriedAfterLeaseEnd(t, fifo, how) })
		}
	}
}

func testDeleteAnswerLostRetriedAfterLeaseEnd(t *testing.T, fifo bool, how string) {
	e := newEnv(t, func(c *proxy.Config) { c.UpstreamTimeout = time.Second })
	name, attrs := "lost", "?VisibilityTimeout=30"
	if fifo {
		name, attrs = "lost.fifo", attrs+"&ContentBasedDeduplication=true"
	}
	q := e.up.Queue(t, name+attrs)
	c := e.client("AKIDAPP", "app")
	ctx := context.Background()
	for i := range 3 {
		in := &sqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String(fmt.Sprint("job ", i))}
		if fifo {
			in.MessageGroupId = aws.String(fmt.Sprint("g", i))
		}
		if _, err := c.SendMessage(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &q, MaxNumberOfMessages: 10})
	if err != nil || len(out.Messages) != 3 {
		t.Fatalf("receive: %v, %d messages", err, len(out.Messages))
	}
	e.at(25)
	isDelete := func(r *http.Request) bool { return strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".DeleteMessage") }
	e.tap.mu.Lock()
	switch how {
	case "503":
		e.tap.loseAnswer = isDelete
	case "cut":
		e.tap.cutAnswer = isDelete
	case "stalled":
		e.tap.stall = isDelete
	}
	e.tap.mu.Unlock()
	for _, m := range out.Messages {
		_, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &q, ReceiptHandle: m.ReceiptHandle})
		if errCode(err) != "ServiceUnavailable" || how != "503" && !strings.Contains(err.Error(), "whether it was done is not known") {
			t.Fatalf("a delete whose answer was lost: %v", err)
		}
	}
	e.tap.mu.Lock()
	e.tap.loseAnswer, e.tap.cutAnswer, e.tap.stall = nil, nil, nil
	e.tap.mu.Unlock()
	e.at(45) // the retries come after the leases' end
	for _, m := range out.Messages {
		deleteOne(t, c, q, m)
	}
	viaProxy, upstream := e.reports(t, name)
	if upstream.Diagnosis != "healthy" || upstream.LeasesCompleted != 3 || upstream.LeasesTimed != 3 {
		t.Fatalf("the upstream: %s, %+v", upstream.Diagnosis, upstream.LeaseStatsJSON)
	}
	if viaProxy.Diagnosis != "healthy" || viaProxy.LeasesCompleted != 3 || viaProxy.LeasesCompletedTimeUnknown != 0 || viaProxy.LeasesTimed != 3 ||
		viaProxy.LeaseMaxSeconds != 25 || viaProxy.LateCompletions != 0 || viaProxy.ExpiredLeases != 0 || viaProxy.DeletesAlreadyDeleted != 0 {
		t.Errorf("the proxy: %s (%s), %+v; want healthy, 3 leases completed at their first attempts (25 s), none late or lapsed", viaProxy.Diagnosis, viaProxy.Advice, viaProxy.LeaseStatsJSON)
	}
}

// A receive whose client left after the upstream had answered it (a long
// poll cut by the client's own timeout, a consumer stopping): the upstream
// leased the messages all the same, and the proxy, which reads the answer
// to its end, records the leases, as held by no one: the client was not
// there when the answer came, so it is not seen then either. It polls
// again later, seen alive, and the lapses are no handler failing but the
// client-left finding's, which the upstream (whose own client, the proxy,
// stayed) cannot see; its figures are the proxy's. The proxy warns of the
// answer with leases, and of the empty one only at debug level.
func TestReceiveWhoseClientLeft(t *testing.T) {
	logs := &logbuf.Buffer{}
	e := newEnv(t, func(c *proxy.Config) {
		c.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	q := e.up.Queue(t, "left?VisibilityTimeout=30")
	c := e.client("AKIDAPP", "app")
	for range 3 {
		if _, err := c.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String("job")}); err != nil {
			t.Fatal(err)
		}
	}
	cutReceive(t, e, c, q, 20)
	// The proxy finishes the exchange after its client has gone: wait
	// (bounded) for it to record what the upstream did.
	var viaProxy server.LeaseReportJSON
	for deadline := time.Now().Add(30 * time.Second); viaProxy.LeasesStarted < 3 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		e.get(t, e.url, "/admin/api/queues/left/leases", &viaProxy)
	}
	if viaProxy.LeasesStarted != 3 {
		t.Fatalf("the proxy recorded %d leases of the receive whose client left, want 3", viaProxy.LeasesStarted)
	}
	// An empty answer cut so leased nothing: said at debug level only (a
	// short poll: the fake clock would never end a long one).
	cutReceive(t, e, c, q, 0)
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(logs.String(), "the answer leased nothing") && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	text := logs.String()
	if n := strings.Count(text, "level=WARN msg=\"proxy: the client left"); n != 1 || !strings.Contains(text, "leased=3") ||
		!strings.Contains(text, "level=DEBUG msg=\"proxy: the client left before the upstream answered; the answer leased nothing") {
		t.Errorf("want one warning (the answer with leases) and the empty one at debug level:\n%s", text)
	}
	e.at(40) // the leases lapsed; the client polls again and works the messages
	out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &q, MaxNumberOfMessages: 10})
	if err != nil || len(out.Messages) != 3 {
		t.Fatalf("receive again: %v, %d messages", err, len(out.Messages))
	}
	for _, m := range out.Messages {
		deleteOne(t, c, q, m)
	}
	viaProxy, upstream := e.reports(t, "left")
	t.Logf("the upstream reads it as %s: %s", upstream.Diagnosis, upstream.Advice)
	if viaProxy.Diagnosis != ledger.DiagnosisClientLeft || len(viaProxy.Findings) != 1 || viaProxy.Findings[0].Leases != 3 {
		t.Errorf("the proxy diagnoses %s (%+v), want client-left of 3 leases: %s", viaProxy.Diagnosis, viaProxy.Findings, viaProxy.Advice)
	}
	if !reflect.DeepEqual(viaProxy.LeaseStatsJSON, upstream.LeaseStatsJSON) || viaProxy.ExpiredLeases != 3 {
		t.Errorf("window figures:\nproxy    %+v\nupstream %+v", viaProxy.LeaseStatsJSON, upstream.LeaseStatsJSON)
	}
}

// cutReceive makes a poll of wait seconds whose client leaves once the
// upstream has answered it; the answer goes on its way to the proxy once the
// proxy has seen the client leave (the proxy's own exchange is not
// cancelled with its client's).
func cutReceive(t *testing.T, e *env, c *sqs.Client, q string, wait int32) {
	t.Helper()
	cutReceiveOf(t, e, c, &sqs.ReceiveMessageInput{QueueUrl: &q, WaitTimeSeconds: wait, MaxNumberOfMessages: 10})
}

// cutReceiveOf is cutReceive of the receive in. It returns once the proxy's
// request from the client has ended (the proxy saw its client leave), at
// most 30 s after the client left.
func cutReceiveOf(t *testing.T, e *env, c *sqs.Client, in *sqs.ReceiveMessageInput) {
	t.Helper()
	isReceive := func(r *http.Request) bool { return r.Header.Get("X-Amz-Target") == "AmazonSQS.ReceiveMessage" }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inbound := make(chan context.Context, 1) // the proxy's request from the client
	e.front.watch(func(r *http.Request) {
		if isReceive(r) {
			select {
			case inbound <- r.Context():
			default:
			}
		}
	}, nil)
	seen := make(chan struct{}) // closed once the proxy has seen the client leave
	var once sync.Once
	e.tap.mu.Lock()
	e.tap.afterAnswer = func(r *http.Request) {
		if !isReceive(r) {
			return
		}
		cancel()
		select {
		case proxied := <-inbound:
			select {
			case <-proxied.Done():
				once.Do(func() { close(seen) })
			case <-time.After(30 * time.Second):
			}
		case <-time.After(30 * time.Second):
		}
	}
	e.tap.mu.Unlock()
	defer func() {
		e.front.watch(nil, nil)
		e.tap.mu.Lock()
		e.tap.afterAnswer = nil
		e.tap.mu.Unlock()
	}()
	if _, err := c.ReceiveMessage(ctx, in); err == nil {
		t.Fatal("the receive whose client left succeeded")
	}
	select {
	case <-seen:
	case <-time.After(30 * time.Second):
		t.Fatal("the proxy did not see its client leave within 30 s")
	}
}

// A consumer stopping with a poll outstanding, after its leases lapsed:
// the poll's answer, which reached no one, is no sign that the consumer
// is still there, so its lapses read as a stopped holder's, not as a
// failing handler's.
func TestCutPollIsNoSignOfLife(t *testing.T) {
	logs := &logbuf.Buffer{}
	e := newEnv(t, func(c *proxy.Config) {
		c.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	q := e.up.Queue(t, "stopping?VisibilityTimeout=30")
	c := e.client("AKIDAPP", "app")
	other := sqs.New(c.Options(), func(o *sqs.Options) { o.AppID = "other" }) // another consumer
	for range 3 {
		if _, err := c.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String("job")}); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &q, MaxNumberOfMessages: 10}); err != nil || len(out.Messages) != 3 {
		t.Fatalf("receive: %v, %d messages", err, len(out.Messages))
	}
	e.at(31) // the leases lapsed; the other consumer takes the messages for long
	if out, err := other.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &q, MaxNumberOfMessages: 10, VisibilityTimeout: 600}); err != nil || len(out.Messages) != 3 {
		t.Fatalf("receive again: %v, %d messages", err, len(out.Messages))
	}
	e.at(35)
	cutReceive(t, e, c, q, 0) // the first consumer's last poll, cut as it stops
	// Wait (bounded) for the proxy to finish the exchange its client left
	// (it logs that once it has recorded it).
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(logs.String(), "the answer leased nothing") && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	e.at(100)
	var viaProxy server.LeaseReportJSON
	e.get(t, e.url, "/admin/api/queues/stopping/leases", &viaProxy)
	if viaProxy.Diagnosis != ledger.DiagnosisHoldersStopped {
		t.Errorf("the proxy diagnoses %s, want holders-stopped: %s", viaProxy.Diagnosis, viaProxy.Advice)
	}
}

// A FIFO receive cut, and its retry with the same ReceiveRequestAttemptId
// cut too: the replayed leases are still held by no one.
func TestReplayedReceiveWhoseClientLeft(t *testing.T) {
	logs := &logbuf.Buffer{}
	e := newEnv(t, func(c *proxy.Config) { c.Logger = slog.New(slog.NewTextHandler(logs, nil)) })
	q := e.up.Queue(t, "left.fifo?FifoQueue=true&ContentBasedDeduplication=true&VisibilityTimeout=120")
	c := e.client("AKIDAPP", "app")
	for i := range 3 {
		if _, err := c.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String("job" + strconv.Itoa(i)),
			MessageGroupId: aws.String("g")}); err != nil {
			t.Fatal(err)
		}
	}
	// Each cut answer is warned of once the proxy has recorded it: a
	// minute apart, none is held back.
	warned := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); strings.Count(logs.String(), "level=WARN msg=\"proxy: the client left") < n; {
			if time.Now().After(deadline) {
				t.Fatalf("the proxy has not recorded cut answer %d:\n%s", n, logs)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	in := &sqs.ReceiveMessageInput{QueueUrl: &q, MaxNumberOfMessages: 10, ReceiveRequestAttemptId: aws.String("attempt-1")}
	cutReceiveOf(t, e, c, in)
	warned(1)
	e.at(65)
	cutReceiveOf(t, e, c, in) // the SDK's retry, cut as well: the same leases again, to 185 s
	warned(2)
	if !strings.Contains(logs.String(), "leased=3 held_back=0") {
		t.Fatalf("the retry was not answered with the same three leases:\n%s", logs)
	}
	e.at(200) // the leases lapsed; the client polls again and works the messages
	out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &q, MaxNumberOfMessages: 10})
	if err != nil || len(out.Messages) != 3 {
		t.Fatalf("receive again: %v, %d messages", err, len(out.Messages))
	}
	for _, m := range out.Messages {
		deleteOne(t, c, q, m)
	}
	var viaProxy server.LeaseReportJSON
	e.get(t, e.url, "/admin/api/queues/left.fifo/leases", &viaProxy)
	if viaProxy.Diagnosis != ledger.DiagnosisClientLeft {
		t.Errorf("the proxy diagnoses %s, want client-left: %s", viaProxy.Diagnosis, viaProxy.Advice)
	}
}
