package server_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/server"
)

// export GETs the account's export and decodes it.
func export(t *testing.T, srv *testutil.Server) (server.StateJSON, string) {
	t.Helper()
	code, _, body := fetch(t, "GET", srv.URL+"/admin/api/export", nil, "")
	if code != http.StatusOK {
		t.Fatalf("export: %d %s", code, body)
	}
	var st server.StateJSON
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatalf("export: %v in %s", err, body)
	}
	return st, body
}

// TestAdminResetExportImport, on every store: an export lists queues and
// messages in every state without changing any; a reset deletes every
// queue and frees the names at once; an import brings back what was
// exported, ids, states and receive counts included.
func TestAdminResetExportImport(t *testing.T) {
	t.Parallel()
	onEveryStore(t, testAdminResetExportImport)
}

func testAdminResetExportImport(t *testing.T, srv *testutil.Server) {
	c := srv.Client
	srv.MustCreateQueue(t, "dead", nil)
	work := srv.MustCreateQueue(t, "work", map[string]string{"VisibilityTimeout": "30",
		"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:` + testutil.Account + `:dead","maxReceiveCount":"3"}`})
	if _, err := c.TagQueue(ctx, &sqs.TagQueueInput{QueueUrl: &work, Tags: map[string]string{"team": "billing"}}); err != nil {
		t.Fatal(err)
	}
	fifo := srv.MustCreateQueue(t, "orders.fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"})
	_, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &work, MessageBody: aws.String("leased"),
		MessageAttributes: map[string]types.MessageAttributeValue{"kind": {DataType: aws.String("String"), StringValue: aws.String("fruit")}}})
	if err != nil {
		t.Fatal(err)
	}
	srv.Clock.Advance(time.Second)
	mustSend(t, c, work, "waiting")
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &work, MessageBody: aws.String("later"), DelaySeconds: 600}); err != nil {
		t.Fatal(err)
	}
	got, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &work, MaxNumberOfMessages: 1})
	if err != nil || len(got.Messages) != 1 || *got.Messages[0].Body != "leased" {
		t.Fatalf("receive: %v %v", err, got)
	}
	for _, b := range []string{"o1", "o2"} {
		if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &fifo, MessageBody: aws.String(b), MessageGroupId: aws.String("g")}); err != nil {
			t.Fatal(err)
		}
	}
	before := browse(t, srv, "work", "order=oldest")

	first, raw := export(t, srv)
	if first.Format != 1 || len(first.Queues) != 3 {
		t.Fatalf("export: format %d, %d queues, want 1 and 3:\n%s", first.Format, len(first.Queues), raw)
	}
	states := map[string]string{}
	for _, m := range first.Queues[2].Messages { // work, last by name
		states[m.Body] = m.State
	}
	if want := map[string]string{"leased": "inflight", "waiting": "visible", "later": "delayed"}; !reflect.DeepEqual(states, want) {
		t.Errorf("work's states: %v, want %v", states, want)
	}
	if a := first.Queues[2].Attributes; a["RedrivePolicy"] == "" || a["VisibilityTimeout"] != "30" || a["QueueArn"] != "" {
		t.Errorf("work's attributes: %v", a)
	}
	// Exporting changed nothing: the browse and a second export agree.
	if after := browse(t, srv, "work", "order=oldest"); !reflect.DeepEqual(after.Messages, before.Messages) {
		t.Errorf("export changed the messages:\nbefore %+v\nafter  %+v", before.Messages, after.Messages)
	}
	if again, _ := export(t, srv); !reflect.DeepEqual(again.Queues, first.Queues) {
		t.Errorf("a second export differs")
	}

	// A reset must be an action: not a cross-site form post.
	if code, _, body := fetch(t, "POST", srv.URL+"/admin/api/reset", nil, "{}"); code != http.StatusForbidden {
		t.Errorf("reset without a JSON body: %d %s, want 403", code, body)
	}
	code, _, body := fetch(t, "POST", srv.URL+"/admin/api/reset", jsonHeader, "{}")
	if code != http.StatusOK || !strings.Contains(body, `"deleted_queues": 3`) {
		t.Fatalf("reset: %d %s", code, body)
	}
	list, err := c.ListQueues(ctx, &sqs.ListQueuesInput{})
	if err != nil || len(list.QueueUrls) != 0 {
		t.Fatalf("after reset: %v %v, want no queues", err, list.QueueUrls)
	}

	// At once, without the 60 seconds after a DeleteQueue, the export
	// loads back.
	code, _, body = fetch(t, "POST", srv.URL+"/admin/api/import", jsonHeader, raw)
	if code != http.StatusOK || !strings.Contains(body, `"messages": 5`) {
		t.Fatalf("import: %d %s", code, body)
	}
	loaded, _ := export(t, srv)
	if !reflect.DeepEqual(loaded.Queues, first.Queues) {
		a, _ := json.Marshal(first.Queues)
		b, _ := json.Marshal(loaded.Queues)
		t.Errorf("loaded state differs from the export:\nexported %s\nloaded   %s", a, b)
	}
	// A second import of the same file is refused and changes nothing.
	if code, _, body := fetch(t, "POST", srv.URL+"/admin/api/import", jsonHeader, raw); code != http.StatusBadRequest || !strings.Contains(body, "already exists") {
		t.Errorf("second import: %d %s, want 400 already exists", code, body)
	}
	// The loaded lease runs out when the exported one would have.
	srv.Clock.Advance(31 * time.Second)
	got, err = c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(srv.URL + "/" + testutil.Account + "/work"), MaxNumberOfMessages: 10,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{"ApproximateReceiveCount"}})
	if err != nil || len(got.Messages) != 2 {
		t.Fatalf("receive after the lease: %v, %d messages, want 2", err, len(got.Messages))
	}
	for _, m := range got.Messages {
		if want := map[string]string{"leased": "2", "waiting": "1"}[*m.Body]; m.Attributes["ApproximateReceiveCount"] != want {
			t.Errorf("%s: receive count %s, want %s", *m.Body, m.Attributes["ApproximateReceiveCount"], want)
		}
	}
}

// TestAdminImportMinimal loads a hand-written file: a message needs only
// a body, and a file of another format is refused.
func TestAdminImportMinimal(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	file := `{"format":1,"queues":[{"name":"jobs","messages":[{"body":"hello"}]},{"name":"q.fifo","attributes":{"FifoQueue":"true"},"messages":[{"body":"a","message_group_id":"g"}]}]}`
	if code, _, body := fetch(t, "POST", srv.URL+"/admin/api/import", jsonHeader, file); code != http.StatusOK {
		t.Fatalf("import: %d %s", code, body)
	}
	got, err := srv.Client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(srv.URL + "/" + testutil.Account + "/q.fifo")})
	if err != nil || len(got.Messages) != 1 || *got.Messages[0].Body != "a" {
		t.Fatalf("receive: %v %v", err, got)
	}
	if code, _, body := fetch(t, "POST", srv.URL+"/admin/api/import", jsonHeader, `{"format":2,"queues":[]}`); code != http.StatusBadRequest || !strings.Contains(body, "format 2") {
		t.Errorf("format 2: %d %s, want 400", code, body)
	}
}

// TestAdminResetScope: a reset deletes the request's account's queues, in
// every region unless one is named, and no other account's.
func TestAdminResetScope(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	for _, q := range []engine.CreateQueueParams{
		{Region: "us-east-1", Account: testutil.Account, Name: "home"},
		{Region: "eu-west-1", Account: testutil.Account, Name: "abroad"},
		{Region: "us-east-1", Account: "111111111111", Name: "theirs"},
	} {
		if _, err := srv.Engine.CreateQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	left := func() []string {
		var names []string
		for _, acct := range []string{testutil.Account, "111111111111"} {
			qs, err := srv.Engine.AccountQueues(ctx, acct, "")
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range qs {
				names = append(names, q.Name)
			}
		}
		return names
	}
	if code, _, body := fetch(t, "POST", srv.URL+"/admin/api/reset?region=us-east-1", jsonHeader, "{}"); code != http.StatusOK {
		t.Fatalf("reset of us-east-1: %d %s", code, body)
	}
	if got := left(); !reflect.DeepEqual(got, []string{"abroad", "theirs"}) {
		t.Errorf("after a reset of us-east-1: %v, want [abroad theirs]", got)
	}
	if code, _, body := fetch(t, "POST", srv.URL+"/admin/api/reset", jsonHeader, "{}"); code != http.StatusOK {
		t.Fatalf("reset: %d %s", code, body)
	}
	if got := left(); !reflect.DeepEqual(got, []string{"theirs"}) {
		t.Errorf("after a reset: %v, want [theirs]", got)
	}
}

// TestAdminResetCancelsMoveTasks: a move task running from a queue a reset
// deletes is cancelled, not left running against a queue that is gone.
func TestAdminResetCancelsMoveTasks(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	dead := srv.MustCreateQueue(t, "dead", nil)
	srv.MustCreateQueue(t, "work", map[string]string{
		"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:` + testutil.Account + `:dead","maxReceiveCount":"3"}`})
	for i := 0; i < 20; i++ {
		mustSend(t, srv.Client, dead, "stuck")
	}
	deadARN := "arn:aws:sqs:us-east-1:" + testutil.Account + ":dead"
	if _, err := srv.Client.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: &deadARN,
		DestinationArn: aws.String("arn:aws:sqs:us-east-1:" + testutil.Account + ":work"), MaxNumberOfMessagesPerSecond: aws.Int32(1)}); err != nil {
		t.Fatal(err)
	}
	if code, _, body := fetch(t, "POST", srv.URL+"/admin/api/reset", jsonHeader, "{}"); code != http.StatusOK {
		t.Fatalf("reset: %d %s", code, body)
	}
	srv.MustCreateQueue(t, "dead", nil)
	out, err := srv.Client.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: &deadARN, MaxResults: aws.Int32(10)})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Results) == 0 {
		t.Fatal("no move task listed: want the cancelled one")
	}
	for _, task := range out.Results {
		if *task.Status == "RUNNING" {
			t.Errorf("a move task of the reset queue still runs: %+v", task)
		}
	}
}
