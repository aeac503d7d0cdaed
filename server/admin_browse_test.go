package server_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/server"
)

// browse GETs a page of the queue's messages and decodes it.
func browse(t *testing.T, srv *testutil.Server, queue, query string) server.BrowseJSON {
	t.Helper()
	code, _, body := fetch(t, "GET", srv.URL+"/admin/api/queues/"+queue+"/messages?"+query, nil, "")
	if code != http.StatusOK {
		t.Fatalf("browse %s?%s: %d %s", queue, query, code, body)
	}
	var out server.BrowseJSON
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatalf("browse %s?%s: %v in %s", queue, query, err, body)
	}
	return out
}

func browsedIDs(b server.BrowseJSON) []string {
	out := make([]string, len(b.Messages))
	for i, m := range b.Messages {
		out[i] = m.MessageID
	}
	return out
}

// TestAdminBrowse lists a queue's messages on every store: what each one
// is doing, its attributes, filters and pages, and that listing leases
// nothing and leaves no lease event.
func TestAdminBrowse(t *testing.T) {
	t.Parallel()
	onEveryStore(t, testAdminBrowse)
}

func testAdminBrowse(t *testing.T, srv *testutil.Server) {
	c := srv.Client
	q := srv.MustCreateQueue(t, "work", map[string]string{"VisibilityTimeout": "30"})
	first, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String("first: apples"),
		MessageAttributes: map[string]types.MessageAttributeValue{
			"kind": {DataType: aws.String("String"), StringValue: aws.String("fruit")},
			"raw":  {DataType: aws.String("Binary"), BinaryValue: []byte{0, 0xff}},
		}})
	if err != nil {
		t.Fatal(err)
	}
	srv.Clock.Advance(time.Second)
	held := mustSend(t, c, q, "second: pears")
	srv.Clock.Advance(time.Second)
	delayed, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &q, MessageBody: aws.String("third: apples, later"), DelaySeconds: 60})
	if err != nil {
		t.Fatal(err)
	}
	// Lease both visible messages, then put the first back.
	got, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &q, MaxNumberOfMessages: 10})
	if err != nil || len(got.Messages) != 2 {
		t.Fatalf("receive: %v, %d messages, want 2", err, len(got.Messages))
	}
	for _, m := range got.Messages {
		if *m.MessageId != *first.MessageId {
			continue
		}
		if _, err := c.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: &q, ReceiptHandle: m.ReceiptHandle}); err != nil {
			t.Fatal(err)
		}
	}
	leasedAt := srv.Clock.Now()
	srv.Clock.Advance(time.Second)

	all := browse(t, srv, "work", "")
	if got, want := strings.Join(browsedIDs(all), " "), strings.Join([]string{*delayed.MessageId, held, *first.MessageId}, " "); got != want {
		t.Fatalf("newest first: got %s, want %s", got, want)
	}
	if all.Order != "newest" || all.NextCursor != "" || !all.Now.Equal(srv.Clock.Now()) {
		t.Errorf("page: order %q, next %q, now %v", all.Order, all.NextCursor, all.Now)
	}
	d, h, f := all.Messages[0], all.Messages[1], all.Messages[2]
	if d.State != "delayed" || d.VisibleAt == nil || !d.VisibleAt.Equal(testutil.Epoch.Add(62*time.Second)) || d.LeaseDeadline != nil || d.ReceiveCount != 0 {
		t.Errorf("delayed message: %+v", d)
	}
	if h.State != "inflight" || h.LeaseDeadline == nil || !h.LeaseDeadline.Equal(leasedAt.Add(30*time.Second)) || h.ReceiveCount != 1 ||
		h.Body != "second: pears" || h.Attributes["ApproximateReceiveCount"] != "1" {
		t.Errorf("in-flight message: %+v", h)
	}
	if f.State != "visible" || f.ReceiveCount != 1 || f.Body != "first: apples" || f.BodyBase64 ||
		f.MessageAttributes["kind"].StringValue != "fruit" || string(f.MessageAttributes["raw"].BinaryValue) != "\x00\xff" ||
		f.Attributes["SenderId"] == "" || f.Attributes["SentTimestamp"] != "1767323045000" || !f.SentAt.Equal(testutil.Epoch) ||
		f.MD5OfBody != *first.MD5OfMessageBody {
		t.Errorf("visible message: %+v", f)
	}

	// Filters, the order, and pages.
	for query, want := range map[string][]string{
		"order=oldest":                     {*first.MessageId, held, *delayed.MessageId},
		"state=inflight":                   {held},
		"state=visible,delayed":            {*delayed.MessageId, *first.MessageId},
		"state=visible&state=inflight":     {held, *first.MessageId},
		"contains=apples":                  {*delayed.MessageId, *first.MessageId},
		"contains=apples&state=delayed":    {*delayed.MessageId},
		"contains=" + url.QueryEscape("Ä"): {},
	} {
		if got := browsedIDs(browse(t, srv, "work", query)); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s: got %v, want %v", query, got, want)
		}
	}
	var paged []string
	for cursor, pages := "", 0; ; pages++ {
		if pages > 3 {
			t.Fatal("paging does not end")
		}
		p := browse(t, srv, "work", "order=oldest&limit=1&cursor="+url.QueryEscape(cursor))
		paged = append(paged, browsedIDs(p)...)
		if cursor = p.NextCursor; cursor == "" {
			break
		}
	}
	if got, want := strings.Join(paged, " "), strings.Join([]string{*first.MessageId, held, *delayed.MessageId}, " "); got != want {
		t.Errorf("one a page: got %s, want %s", got, want)
	}

	// None of it leased anything or left a lease event: the never
	// received message has no history and comes as a first receive.
	srv.Clock.Advance(2 * time.Minute)
	code, _, body := fetch(t, "GET", srv.URL+"/admin/api/queues/work/messages/"+*delayed.MessageId+"/history", nil, "")
	if code != http.StatusNotFound {
		t.Errorf("history of the browsed, never received message: %d %s, want 404", code, body)
	}
	out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &q, MaxNumberOfMessages: 10,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{"ApproximateReceiveCount"}})
	if err != nil {
		t.Fatal(err)
	}
	counts := make(map[string]string)
	for _, m := range out.Messages {
		counts[*m.MessageId] = m.Attributes["ApproximateReceiveCount"]
	}
	if counts[*first.MessageId] != "2" || counts[held] != "2" || counts[*delayed.MessageId] != "1" {
		t.Errorf("receive counts after browsing: %v; want 2, 2 and 1", counts)
	}
}

// Bad requests get a clear 4xx, never a 500.
func TestAdminBrowseBadInput(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	srv.MustCreateQueue(t, "work", nil)
	for _, tc := range []struct {
		path   string
		status int
		want   string
	}{
		{"work/messages?order=sideways", 400, "order"},
		{"work/messages?limit=0", 400, "limit"},
		{"work/messages?limit=1001", 400, "limit"},
		{"work/messages?limit=ten", 400, "limit"},
		{"work/messages?state=asleep", 400, "state"},
		{"work/messages?cursor=%21%21", 400, "cursor"},
		{"work/messages?cursor=bm90IGEgY3Vyc29y", 400, "cursor"},
		{"nope/messages", 404, "does not exist"},
	} {
		code, h, body := fetch(t, "GET", srv.URL+"/admin/api/queues/"+tc.path, nil, "")
		if code != tc.status || !strings.HasPrefix(h.Get("Content-Type"), "application/json") || !strings.Contains(body, tc.want) {
			t.Errorf("GET %s: %d %s; want %d mentioning %q", tc.path, code, body, tc.status, tc.want)
		}
	}
	// A body substring as long as a message is taken; a longer one is not.
	long := strings.Repeat("x", baton.MaxMessageSize+1)
	req, _ := http.NewRequest("GET", srv.URL+"/admin/api/queues/work/messages?contains="+long, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 4 {
		t.Errorf("a 1 MiB + 1 substring: %d, want a 4xx", resp.StatusCode)
	}
}

// Browsing is behind the admin credentials, each key seeing its own
// account's queues.
func TestAdminBrowseAuth(t *testing.T) {
	t.Parallel()
	srv := startAuthServer(t)
	q := srv.MustCreateQueue(t, "alices", nil)
	mustSend(t, srv.Client, q, "alice's message")
	path := srv.URL + "/admin/api/queues/alices/messages"
	if code, _, body := fetch(t, "GET", path, nil, ""); code != http.StatusUnauthorized || strings.Contains(body, "alice's message") {
		t.Errorf("without credentials: %d %s, want 401", code, body)
	}
	basic := func(c string, secret string) http.Header {
		r, _ := http.NewRequest("GET", "/", nil)
		r.SetBasicAuth(c, secret)
		return r.Header
	}
	if code, _, body := fetch(t, "GET", path, basic(bob.AccessKeyID, bob.SecretAccessKey), ""); code != http.StatusNotFound || strings.Contains(body, "alice's message") {
		t.Errorf("another account: %d %s, want 404", code, body)
	}
	code, _, body := fetch(t, "GET", path, basic(alice.AccessKeyID, alice.SecretAccessKey), "")
	var b server.BrowseJSON
	if code != http.StatusOK || json.Unmarshal([]byte(body), &b) != nil || len(b.Messages) != 1 || b.Messages[0].Body != "alice's message" {
		t.Errorf("the owner: %d %s", code, body)
	}
	// Signed as SQS requests are.
	req, _ := http.NewRequest("GET", path, nil)
	signNoBody(t, req, alice, srv.Clock.Now())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("signed with SigV4: %d", resp.StatusCode)
	}
}

// history returns the kinds of a message's lease events.
func history(t *testing.T, srv *testutil.Server, queue, id string) []string {
	t.Helper()
	var h server.MessageHistoryJSON
	getJSON(t, srv.URL+"/admin/api/queues/"+queue+"/messages/"+id+"/history", &h)
	var kinds []string
	for _, ev := range h.Events {
		kinds = append(kinds, ev.Kind)
	}
	return kinds
}

// TestAdminMessageActions deletes, releases and moves browsed messages by
// id, and creates and deletes queues, as the dashboard does.
func TestAdminMessageActions(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	q := srv.MustCreateQueue(t, "work", map[string]string{"VisibilityTimeout": "30"})
	srv.MustCreateQueue(t, "other", nil)
	srv.MustCreateQueue(t, "jobs.fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"})
	a := mustSend(t, c, q, "a")
	srv.Clock.Advance(time.Second)
	b := mustSend(t, c, q, "b")
	base := srv.URL + "/admin/api/queues/work/messages/"
	act := func(path, body string, want int) map[string]any {
		t.Helper()
		var out map[string]any
		if code := post(t, path, body, &out); code != want {
			t.Fatalf("POST %s %s: %d %v, want %d", path, body, code, out, want)
		}
		return out
	}
	// Both received: a's lease is 1.
	out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &q, MaxNumberOfMessages: 10})
	if err != nil || len(out.Messages) != 2 {
		t.Fatalf("receive: %v %v", err, out)
	}

	// Release: only the lease in flight, named by its number.
	if got := act(base+a+"/release", `{"lease": 2}`, 400); !strings.Contains(got["error"].(string), "not in flight under lease 2") {
		t.Errorf("release of another lease: %v", got)
	}
	act(base+a+"/release", `{}`, 400)
	act(base+a+"/release", `{"lease": 1}`, 200)
	act(base+a+"/release", `{"lease": 1}`, 400) // not in flight any more
	if got := browsedIDs(browse(t, srv, "work", "state=visible")); strings.Join(got, " ") != a {
		t.Errorf("visible after the release: %v, want [%s]", got, a)
	}
	if got := strings.Join(history(t, srv, "work", a), " "); got != "receive release" {
		t.Errorf("a's history: %s, want receive release", got)
	}

	// Delete b while in flight: its lease is removed, not left to lapse.
	act(base+b+"/delete", `{}`, 200)
	act(base+b+"/delete", `{}`, 404)
	srv.Clock.Advance(time.Minute)
	if got := strings.Join(history(t, srv, "work", b), " "); got != "receive removed" {
		t.Errorf("b's history: %s, want receive removed", got)
	}
	var rep server.LeaseReportJSON
	getJSON(t, srv.URL+"/admin/api/queues/work/leases", &rep)
	if rep.ExpiredLeases != 0 || rep.LeasesCompleted != 0 {
		t.Errorf("lease report after the delete: %d expired, %d completed; want none", rep.ExpiredLeases, rep.LeasesCompleted)
	}

	// Move a: to another standard queue, not to itself, a FIFO queue or
	// a queue that does not exist.
	act(base+a+"/move", `{"destination_queue": "work"}`, 400)
	act(base+a+"/move", `{"destination_queue": "jobs.fifo"}`, 400)
	act(base+a+"/move", `{"destination_queue": "nope"}`, 404)
	act(base+a+"/move", `{}`, 400)
	act(base+a+"/move", `{"destination_queue": "other"}`, 200)
	if got := browse(t, srv, "work", ""); len(got.Messages) != 0 {
		t.Errorf("work after the move: %v", browsedIDs(got))
	}
	moved := browse(t, srv, "other", "")
	if len(moved.Messages) != 1 || moved.Messages[0].MessageID != a || moved.Messages[0].Body != "a" ||
		moved.Messages[0].State != "visible" || moved.Messages[0].ReceiveCount != 0 {
		t.Errorf("other after the move: %+v", moved.Messages)
	}
	act(srv.URL+"/admin/api/queues/nope/messages/"+a+"/delete", `{}`, 404)
	act(base+"no-such-id/delete", `{}`, 404)

	// Queues: create, refuse a bad name, delete.
	if got := act(srv.URL+"/admin/api/queues", `{"name": "made", "attributes": {"VisibilityTimeout": "45"}}`, 200); got["name"] != "made" {
		t.Errorf("create: %v", got)
	}
	act(srv.URL+"/admin/api/queues", `{"name": "bad name!"}`, 400)
	act(srv.URL+"/admin/api/queues", `{}`, 400)
	act(srv.URL+"/admin/api/queues", `{"name": "x", "color": "red"}`, 400)
	var detail server.QueueDetailJSON
	getJSON(t, srv.URL+"/admin/api/queues/made", &detail)
	if detail.Queue.VisibilityTimeoutSeconds != 45 {
		t.Errorf("created queue: %+v", detail.Queue)
	}
	act(srv.URL+"/admin/api/queues/made/delete", `{}`, 200)
	act(srv.URL+"/admin/api/queues/made/delete", `{}`, 404)

	// Not JSON, as a cross-site form would send: refused.
	if code, _, _ := fetch(t, "POST", srv.URL+"/admin/api/queues/other/delete", http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, ""); code != http.StatusForbidden {
		t.Errorf("a form post: %d, want 403", code)
	}
}
