package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/protocol/sigv4"
	"github.com/baton-sqs/baton/server"
)

// fetch does a request and returns its status, headers and body.
func fetch(t *testing.T, method, url string, header http.Header, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

var jsonHeader = http.Header{"Content-Type": {"application/json"}}

// post sends a dashboard action and decodes its answer.
func post(t *testing.T, url, body string, v any) int {
	t.Helper()
	code, _, out := fetch(t, http.MethodPost, url, jsonHeader, body)
	if v != nil {
		if err := json.Unmarshal([]byte(out), v); err != nil {
			t.Fatalf("POST %s: %d %q: %v", url, code, out, err)
		}
	}
	return code
}

// The dashboard shares the root with the SQS API: only GETs of / and /ui/
// that are no SQS request reach it.
func TestDashboardRouting(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	q := srv.MustCreateQueue(t, "jobs", nil)
	tests := []struct {
		name, method, path string
		header             http.Header
		body               string
		status             int
		contentType, want  string
	}{
		{"queues page", "GET", "/", nil, "", 200, "text/html", `data-page="queues"`},
		{"queue page", "GET", "/ui/queues/jobs", nil, "", 200, "text/html", `data-queue="jobs"`},
		{"message page", "GET", "/ui/queues/jobs/messages/m-1", nil, "", 200, "text/html", `data-message="m-1"`},
		{"script", "GET", "/ui/static/app.js", nil, "", 200, "text/javascript", "EventSource"},
		{"style sheet", "GET", "/ui/static/style.css", nil, "", 200, "text/css", "--accent"},
		{"unknown page", "GET", "/ui/nothing", nil, "", 404, "text/html", "Not found"},
		{"Query GET at the root", "GET", "/?Action=ListQueues", nil, "", 200, "text/xml", "<ListQueuesResponse"},
		{"Query GET on /ui/ is the API's", "GET", "/ui/x?Action=ListQueues", nil, "", 400, "text/xml", "InvalidAction"},
		{"JSON request with GET", "GET", "/", http.Header{"X-Amz-Target": {"AmazonSQS.ListQueues"}, "Content-Type": {"application/x-amz-json-1.0"}}, "{}", 200, "application/x-amz-json-1.0", "QueueUrls"},
		{"queue URL without Action", "GET", "/000000000000/jobs", nil, "", 404, "text/xml", "<UnknownOperationException/>"},
		{"POST without Action", "POST", "/", http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, "QueueName=x", 400, "text/xml", "No Action was given"},
		{"Query POST", "POST", "/", http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, "Action=GetQueueUrl&QueueName=jobs", 200, "text/xml", q},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, h, body := fetch(t, tt.method, srv.URL+tt.path, tt.header, tt.body)
			if code != tt.status || !strings.HasPrefix(h.Get("Content-Type"), tt.contentType) || !strings.Contains(body, tt.want) {
				t.Errorf("%s %s: %d %s %.200q; want %d %s containing %q", tt.method, tt.path, code, h.Get("Content-Type"), body, tt.status, tt.contentType, tt.want)
			}
		})
	}
	// The pages load nothing from elsewhere and run no inline script.
	_, h, _ := fetch(t, "GET", srv.URL+"/", nil, "")
	if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("Content-Security-Policy = %q", csp)
	}
}

func TestDashboardViews(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	srv.MustCreateQueue(t, "work-dlq", nil)
	url := srv.MustCreateQueue(t, "work", map[string]string{
		"VisibilityTimeout": "30",
		"RedrivePolicy":     `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:work-dlq","maxReceiveCount":"5"}`,
	})
	ids := []string{mustSend(t, c, url, "a"), mustSend(t, c, url, "b")}
	srv.Clock.Advance(10 * time.Second)
	m := receiveOne(t, c, url, nil)
	unreceived := ids[0]
	if unreceived == *m.MessageId {
		unreceived = ids[1]
	}

	var list server.QueueListJSON
	getJSON(t, srv.URL+"/admin/api/queues", &list)
	if len(list.Queues) != 2 || list.Queues[0].Name != "work" || list.Queues[1].Name != "work-dlq" {
		t.Fatalf("queues = %+v", list.Queues)
	}
	w, dlq := list.Queues[0], list.Queues[1]
	if w.Visible != 1 || w.InFlight != 1 || w.OldestAgeSeconds != 10 || w.DeadLetterQueue != "work-dlq" || w.MaxReceiveCount != 5 ||
		w.Diagnosis != "healthy" || len(w.Activity) != 15 || w.Activity[14].Sent != 2 {
		t.Errorf("work = %+v", w)
	}
	if len(dlq.DeadLetterSources) != 1 || dlq.DeadLetterSources[0] != "work" {
		t.Errorf("work-dlq sources = %v, want [work]", dlq.DeadLetterSources)
	}
	if !list.Now.Equal(testutil.Epoch.Add(10 * time.Second)) {
		t.Errorf("now = %v: the views must read the engine's clock", list.Now)
	}

	var q server.QueueDetailJSON
	getJSON(t, srv.URL+"/admin/api/queues/work", &q)
	if len(q.Leases.Leases) != 1 || q.Leases.Leases[0].MessageID != *m.MessageId ||
		!q.Leases.Leases[0].Deadline.Equal(testutil.Epoch.Add(40*time.Second)) {
		t.Errorf("active leases = %+v", q.Leases)
	}
	if q.Attributes["VisibilityTimeout"] != "30" || q.LeaseReport.Queue != "work" {
		t.Errorf("attributes %v, report %+v", q.Attributes, q.LeaseReport)
	}
	// The visibility timeout is a bucket edge.
	edge := false
	for _, b := range q.Histogram.Buckets {
		edge = edge || b.AtMost != nil && *b.AtMost == 30
	}
	if !edge || q.Histogram.Buckets[len(q.Histogram.Buckets)-1].AtMost != nil {
		t.Errorf("histogram buckets = %+v, want an edge at 30 s and an open last bucket", q.Histogram.Buckets)
	}

	// A late delete shows in the late completions, the histogram and the
	// message's history.
	srv.Clock.Advance(40 * time.Second)
	del(t, c, url, m)
	var late server.LateCompletionsJSON
	getJSON(t, srv.URL+"/admin/api/queues/work/late-completions", &late)
	if len(late.LateCompletions) != 1 || late.LateCompletions[0].LateSeconds != 10 {
		t.Errorf("late completions = %+v", late.LateCompletions)
	}
	var h server.HistogramJSON
	getJSON(t, srv.URL+"/admin/api/queues/work/histogram", &h)
	for _, b := range h.Buckets {
		if b.Count > 0 && (b.GreaterThan != 30 || *b.AtMost != 45) {
			t.Errorf("a 40 s lease counted in (%v, %v]", b.GreaterThan, *b.AtMost)
		}
	}
	var mv server.MessageViewJSON
	getJSON(t, srv.URL+"/admin/api/queues/work/messages/"+*m.MessageId, &mv)
	if !mv.Found || mv.VisibilityTimeoutSeconds != 30 || len(mv.Events) != 3 || mv.Events[2].Kind != "late-delete" {
		t.Errorf("message view = %+v", mv)
	}
	getJSON(t, srv.URL+"/admin/api/queues/work/messages/"+unreceived, &mv)
	if mv.Found || len(mv.Events) != 0 {
		t.Errorf("unreceived message view = %+v", mv)
	}
	var act server.ActivityJSON
	getJSON(t, srv.URL+"/admin/api/queues/work/activity", &act)
	if len(act.Minutes) != 15 {
		t.Errorf("activity has %d minutes", len(act.Minutes))
	}
	for _, path := range []string{"/admin/api/queues/nope", "/admin/api/queues/nope/histogram", "/admin/api/queues/nope/move-tasks"} {
		code, _, body := fetch(t, "GET", srv.URL+path, nil, "")
		if code != http.StatusNotFound || !strings.Contains(body, "NonExistentQueue") {
			t.Errorf("GET %s: %d %s, want 404 NonExistentQueue", path, code, body)
		}
	}
}

func TestDashboardActions(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	url := srv.MustCreateQueue(t, "acts", nil)
	base := srv.URL + "/admin/api/queues/acts"

	var sent map[string]string
	if code := post(t, base+"/messages", `{"body":"hello","delay_seconds":0}`, &sent); code != 200 || sent["message_id"] == "" {
		t.Fatalf("send: %d %v", code, sent)
	}
	var fail map[string]string
	if code := post(t, base+"/messages", `{"body":""}`, &fail); code != 400 || fail["code"] != "MissingParameter" {
		t.Errorf("send without a body: %d %v", code, fail)
	}

	// Attributes follow SetQueueAttributes' rules and report its errors.
	if code := post(t, base+"/attributes", `{"attributes":{"VisibilityTimeout":"-5"}}`, &fail); code != 400 ||
		fail["code"] != "InvalidAttributeValue" || !strings.Contains(fail["error"], "VisibilityTimeout") {
		t.Errorf("bad timeout: %d %v", code, fail)
	}
	var attrs server.AttributesActionJSON
	if code := post(t, base+"/attributes", `{"attributes":{"VisibilityTimeout":"75"}}`, &attrs); code != 200 || attrs.Attributes["VisibilityTimeout"] != "75" {
		t.Errorf("good timeout: %d %v", code, attrs)
	}
	got, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &url, AttributeNames: []types.QueueAttributeName{"VisibilityTimeout"}})
	if err != nil || got.Attributes["VisibilityTimeout"] != "75" {
		t.Errorf("after the dashboard set it, VisibilityTimeout = %v, %v", got, err)
	}

	// Purge, once a minute as on SQS.
	var purged map[string]bool
	if code := post(t, base+"/purge", `{}`, &purged); code != 200 || !purged["purged"] {
		t.Errorf("purge: %d %v", code, purged)
	}
	checkCounts(t, c, url, 0, 0, 0)
	if code := post(t, base+"/purge", `{}`, &fail); code != 403 || fail["code"] != "AWS.SimpleQueueService.PurgeQueueInProgress" {
		t.Errorf("second purge: %d %v", code, fail)
	}
	if code := post(t, srv.URL+"/admin/api/queues/nope/purge", `{}`, &fail); code != 404 {
		t.Errorf("purge of a missing queue: %d %v", code, fail)
	}

	// What another site could make a browser send is refused.
	for name, h := range map[string]http.Header{
		"form":         {"Content-Type": {"application/x-www-form-urlencoded"}},
		"plain text":   {"Content-Type": {"text/plain"}},
		"other origin": {"Content-Type": {"application/json"}, "Origin": {"https://evil.example"}},
		"cross-site":   {"Content-Type": {"application/json"}, "Sec-Fetch-Site": {"cross-site"}},
	} {
		code, _, body := fetch(t, http.MethodPost, base+"/purge", h, "{}")
		if code != http.StatusForbidden {
			t.Errorf("%s: %d %s, want 403", name, code, body)
		}
	}
	code, _, _ := fetch(t, http.MethodPost, base+"/messages", http.Header{"Content-Type": {"application/json"}, "Origin": {srv.URL}, "Sec-Fetch-Site": {"same-origin"}}, `{"body":"same origin"}`)
	if code != 200 {
		t.Errorf("same-origin send: %d", code)
	}
	if code := post(t, base+"/messages", `{"body":"x","bogus":1}`, &fail); code != 400 {
		t.Errorf("unknown field: %d %v", code, fail)
	}

	// A FIFO queue's test message needs a group, as SendMessage does.
	srv.MustCreateQueue(t, "acts.fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"})
	fifo := srv.URL + "/admin/api/queues/acts.fifo/messages"
	if code := post(t, fifo, `{"body":"x"}`, &fail); code != 400 || fail["code"] != "MissingParameter" {
		t.Errorf("FIFO send without a group: %d %v", code, fail)
	}
	if code := post(t, fifo, `{"body":"x","message_group_id":"g"}`, &sent); code != 200 || sent["sequence_number"] == "" {
		t.Errorf("FIFO send: %d %v", code, sent)
	}
}

// A redrive out of a dead-letter queue starts, shows as a move task and can
// be cancelled, all through the dashboard's actions.
func TestDashboardRedrive(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	dlqURL := srv.MustCreateQueue(t, "r-dlq", nil)
	srv.MustCreateQueue(t, "r", map[string]string{
		"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:r-dlq","maxReceiveCount":"3"}`,
	})
	for range 3 {
		mustSend(t, c, dlqURL, "dead")
	}
	base := srv.URL + "/admin/api/queues/r-dlq"
	var fail map[string]string
	if code := post(t, srv.URL+"/admin/api/queues/r/move-tasks", `{}`, &fail); code != 400 || !strings.Contains(fail["error"], "Dead Letter Queue") {
		t.Errorf("redrive from a queue that is no DLQ: %d %v", code, fail)
	}
	var started map[string]string
	if code := post(t, base+"/move-tasks", `{"destination_queue":"r","max_per_second":1}`, &started); code != 200 || started["task_handle"] == "" {
		t.Fatalf("start: %d %v", code, started)
	}
	var tasks server.MoveTasksJSON
	getJSON(t, base+"/move-tasks", &tasks)
	if len(tasks.MoveTasks) != 1 || tasks.MoveTasks[0].Status != "RUNNING" || tasks.MoveTasks[0].DestinationQueue != "r" || tasks.MoveTasks[0].ToMove != 3 {
		t.Fatalf("tasks = %+v", tasks.MoveTasks)
	}
	if code := post(t, srv.URL+"/admin/api/queues/r/move-tasks/cancel", `{"task_handle":"`+started["task_handle"]+`"}`, &fail); code != 404 {
		t.Errorf("cancelling through another queue: %d %v", code, fail)
	}
	var cancelled map[string]int64
	if code := post(t, base+"/move-tasks/cancel", `{"task_handle":"`+started["task_handle"]+`"}`, &cancelled); code != 200 {
		t.Errorf("cancel: %d %v", code, cancelled)
	}
	testutil.CheckFor(t, 5*time.Second, func() error {
		getJSON(t, base+"/move-tasks", &tasks)
		if s := tasks.MoveTasks[0].Status; s != "CANCELLED" {
			return &statusError{s}
		}
		return nil
	})
}

type statusError struct{ status string }

func (e *statusError) Error() string { return "status " + e.status }

// sseEvents reads a server-sent event stream's data lines.
func sseEvents(t *testing.T, ctx context.Context, url string) (<-chan string, *http.Response) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan string, 16)
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				ch <- data
			}
		}
	}()
	return ch, resp
}

// The live view pushes a new snapshot when something changes, without a
// request from the page; streams are bounded and end with their client.
func TestDashboardStream(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	url := srv.MustCreateQueue(t, "live", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	events, resp := sseEvents(t, ctx, srv.URL+"/admin/api/events/queues")
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %q", ct)
	}
	next := func() server.QueueListJSON {
		t.Helper()
		select {
		case data, ok := <-events:
			if !ok {
				t.Fatal("stream ended")
			}
			var l server.QueueListJSON
			if err := json.Unmarshal([]byte(data), &l); err != nil {
				t.Fatal(err)
			}
			return l
		case <-time.After(10 * time.Second):
			t.Fatal("no event within 10 s")
		}
		return server.QueueListJSON{}
	}
	if l := next(); len(l.Queues) != 1 || l.Queues[0].Visible != 0 {
		t.Fatalf("first snapshot = %+v", l)
	}
	mustSend(t, srv.Client, url, "x")
	if l := next(); l.Queues[0].Visible != 1 {
		t.Fatalf("after a send = %+v", l.Queues[0])
	}
	srv.Clock.Advance(time.Minute) // nothing but the clock moves: still news
	if l := next(); !l.Now.Equal(testutil.Epoch.Add(time.Minute)) || l.Queues[0].OldestAgeSeconds != 60 {
		t.Fatalf("after a minute = now %v, %+v", l.Now, l.Queues[0])
	}

	// A missing queue is reported on the stream, which goes on.
	fctx, fcancel := context.WithTimeout(ctx, 10*time.Second)
	defer fcancel()
	req, _ := http.NewRequestWithContext(fctx, http.MethodGet, srv.URL+"/admin/api/events/queues/nope", nil)
	fresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(fresp.Body)
	var head strings.Builder
	for !strings.Contains(head.String(), "data: ") {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the stream: %v (so far %q)", err, head.String())
		}
		head.WriteString(line)
	}
	if !strings.Contains(head.String(), "event: failure\ndata: {\"code\":\"AWS.SimpleQueueService.NonExistentQueue\"") {
		t.Errorf("stream of a missing queue began %q", head.String())
	}
	fcancel()
	fresp.Body.Close()
}

// At most 64 streams run at once, and a stream's slot is freed when its
// client goes away.
func TestDashboardStreamLimit(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	open := func() (context.CancelFunc, int) {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/admin/api/events/queues", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
		}
		return cancel, resp.StatusCode
	}
	var cancels []context.CancelFunc
	defer func() {
		for _, c := range cancels {
			c()
		}
	}()
	for i := range 64 {
		cancel, code := open()
		cancels = append(cancels, cancel)
		if code != http.StatusOK {
			t.Fatalf("stream %d: %d", i, code)
		}
	}
	cancel, code := open()
	cancel()
	if code != http.StatusServiceUnavailable {
		t.Fatalf("stream 65: %d, want 503", code)
	}
	cancels[0]()
	testutil.CheckFor(t, 10*time.Second, func() error {
		cancel, code := open()
		if code == http.StatusOK {
			cancels = append(cancels, cancel)
			return nil
		}
		cancel()
		return &statusError{http.StatusText(code)}
	})
}

// With credentials configured, the dashboard and its admin calls take HTTP
// Basic authentication by the same keys, each acting for its key's account;
// the SQS API still takes SigV4 only.
func TestDashboardBasicAuth(t *testing.T) {
	t.Parallel()
	srv := startAuthServer(t)
	srv.MustCreateQueue(t, "alices", nil)
	if _, err := srv.ClientFor(bob.AccessKeyID, bob.SecretAccessKey).CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("bobs")}); err != nil {
		t.Fatal(err)
	}
	basic := func(id, secret string) http.Header {
		r, _ := http.NewRequest("GET", "/", nil)
		r.SetBasicAuth(id, secret)
		return r.Header
	}
	for name, h := range map[string]http.Header{
		"none":           nil,
		"wrong secret":   basic(alice.AccessKeyID, "nope"),
		"unknown key":    basic("AKIDNOBODY", alice.SecretAccessKey),
		"another secret": basic(alice.AccessKeyID, bob.SecretAccessKey),
	} {
		for _, path := range []string{"/", "/ui/queues/alices", "/ui/static/app.js", "/admin/api/events/queues"} {
			code, hd, body := fetch(t, "GET", srv.URL+path, h, "")
			// Without credentials too: a browser signed in at a page sends
			// them elsewhere only when asked.
			if code != http.StatusUnauthorized || !strings.HasPrefix(hd.Get("WWW-Authenticate"), "Basic ") {
				t.Errorf("%s %s: %d %q, want 401 with a Basic challenge", name, path, code, hd.Get("WWW-Authenticate"))
			}
			if strings.HasPrefix(path, "/admin/api/") && !strings.HasPrefix(body, `{"error":`) {
				t.Errorf("%s %s: %.100s, want a JSON error", name, path, body)
			}
		}
	}
	code, _, body := fetch(t, "GET", srv.URL+"/", basic(alice.AccessKeyID, alice.SecretAccessKey), "")
	if code != 200 || !strings.Contains(body, `data-page="queues"`) {
		t.Errorf("alice's dashboard: %d", code)
	}
	for who, want := range map[sigv4.Credential]string{alice: "alices", bob: "bobs"} {
		_, _, body := fetch(t, "GET", srv.URL+"/admin/api/queues", basic(who.AccessKeyID, who.SecretAccessKey), "")
		var l server.QueueListJSON
		if err := json.Unmarshal([]byte(body), &l); err != nil || len(l.Queues) != 1 || l.Queues[0].Name != want {
			t.Errorf("%s sees %s (%v), want only %s", who.AccessKeyID, body, err, want)
		}
	}
	h := basic(bob.AccessKeyID, bob.SecretAccessKey)
	h.Set("Content-Type", "application/json")
	if code, _, body := fetch(t, "POST", srv.URL+"/admin/api/queues/alices/purge", h, "{}"); code != http.StatusNotFound {
		t.Errorf("bob purging alice's queue: %d %s", code, body)
	}
	// Basic credentials are no way into the SQS API.
	h = basic(alice.AccessKeyID, alice.SecretAccessKey)
	h.Set("Content-Type", "application/x-www-form-urlencoded")
	if code, _, body := fetch(t, "POST", srv.URL+"/", h, "Action=ListQueues"); code == http.StatusOK {
		t.Errorf("SQS API with Basic credentials: %d %s", code, body)
	}
}

// Wrong secrets for one access key id: after ten within a minute, Basic
// sign-ins with that key id are refused unchecked (429, Retry-After), even
// with the right secret, until the minute from the first failure is over;
// other keys, unknown key ids and SigV4 requests are not affected.
func TestDashboardSignInGuard(t *testing.T) {
	t.Parallel()
	srv := startAuthServer(t)
	basic := func(id, secret string) http.Header {
		r, _ := http.NewRequest("GET", "/", nil)
		r.SetBasicAuth(id, secret)
		return r.Header
	}
	signIn := func(id, secret, path string) (int, http.Header, string) {
		return fetch(t, "GET", srv.URL+path, basic(id, secret), "")
	}
	for i := range 20 { // unknown key ids are not counted
		if code, _, _ := signIn("AKIDNOBODY", "guess"+strconv.Itoa(i), "/"); code != http.StatusUnauthorized {
			t.Fatalf("unknown key, try %d: %d, want 401", i+1, code)
		}
	}
	for i := range 9 {
		if code, _, _ := signIn(alice.AccessKeyID, "guess"+strconv.Itoa(i), "/"); code != http.StatusUnauthorized {
			t.Fatalf("wrong secret %d: %d, want 401", i+1, code)
		}
	}
	srv.Clock.Advance(30 * time.Second)
	// Success does not clear the count.
	if code, _, _ := signIn(alice.AccessKeyID, alice.SecretAccessKey, "/"); code != http.StatusOK {
		t.Fatalf("right secret after 9 failures: %d, want 200", code)
	}
	if code, _, _ := signIn(alice.AccessKeyID, "guess9", "/"); code != http.StatusUnauthorized {
		t.Fatalf("wrong secret 10: %d, want 401", code)
	}
	for _, path := range []string{"/", "/admin/api/queues", "/debug/pprof/"} {
		code, h, body := signIn(alice.AccessKeyID, alice.SecretAccessKey, path)
		if code != http.StatusTooManyRequests || h.Get("Retry-After") != "30" || !strings.Contains(body, "Too many failed sign-ins") {
			t.Errorf("%s with the right secret after 10 failures: %d, Retry-After %q, %.100s; want 429, 30 s left",
				path, code, h.Get("Retry-After"), body)
		}
	}
	if code, _, _ := signIn(bob.AccessKeyID, bob.SecretAccessKey, "/"); code != http.StatusOK {
		t.Errorf("another key meanwhile: %d, want 200", code)
	}
	if _, err := srv.ClientFor(alice.AccessKeyID, alice.SecretAccessKey).ListQueues(ctx, &sqs.ListQueuesInput{}); err != nil {
		t.Errorf("SigV4 with the refused key id: %v", err)
	}
	srv.Clock.Advance(29 * time.Second)
	if code, h, _ := signIn(alice.AccessKeyID, alice.SecretAccessKey, "/"); code != http.StatusTooManyRequests || h.Get("Retry-After") != "1" {
		t.Errorf("a second before the minute is over: %d, Retry-After %q; want 429, 1", code, h.Get("Retry-After"))
	}
	srv.Clock.Advance(time.Second)
	if code, _, _ := signIn(alice.AccessKeyID, alice.SecretAccessKey, "/"); code != http.StatusOK {
		t.Errorf("once the minute is over: %d, want 200", code)
	}
	// A new window: one failure does not refuse anything.
	signIn(alice.AccessKeyID, "again", "/")
	if code, _, _ := signIn(alice.AccessKeyID, alice.SecretAccessKey, "/"); code != http.StatusOK {
		t.Errorf("after one failure in a new window: %d, want 200", code)
	}
}

// The admin API's answers describe an account's queues and messages: no
// cache keeps them (a browser's included, after the operator signs out), and
// none is read as anything but JSON.
func TestAdminAPIHeaders(t *testing.T) {
	t.Parallel()
	srv := startAuthServer(t)
	srv.MustCreateQueue(t, "alices", nil)
	r, _ := http.NewRequest("GET", "/", nil)
	r.SetBasicAuth(alice.AccessKeyID, alice.SecretAccessKey)
	for _, path := range []string{"/admin/api/queues", "/admin/api/queues/alices", "/admin/api/queues/nope", "/admin/api/queues/alices/leases", "/admin/api/nothing"} {
		code, h, _ := fetch(t, "GET", srv.URL+path, r.Header, "")
		if h.Get("Cache-Control") != "no-store" || h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: %d, Cache-Control %q, X-Content-Type-Options %q; want no-store, nosniff",
				path, code, h.Get("Cache-Control"), h.Get("X-Content-Type-Options"))
		}
	}
}
