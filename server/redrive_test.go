package server_test

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/batontest"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/store/memstore"
)

const arnPrefix = "arn:aws:sqs:us-east-1:000000000000:"

func redrive(dlq string, max int) map[string]string {
	return map[string]string{"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":"%s%s","maxReceiveCount":"%d"}`, arnPrefix, dlq, max)}
}

func TestDeadLetterOnFourthReceive(t *testing.T) {
	t.Parallel()
	srv := batontest.New(t, batontest.WithFakeClock(time.Time{}))
	c := srv.Client()
	src := srv.Queue(t, "work?VisibilityTimeout=10&dlq=work-dlq:3")
	dlq := srv.URL() + "/000000000000/work-dlq"
	id := mustSend(t, c, src, "poison")

	for i := 1; i <= 3; i++ {
		m := receiveOne(t, c, src, nil)
		if got := m.Attributes["ApproximateReceiveCount"]; got != strconv.Itoa(i) {
			t.Fatalf("receive %d: count %s", i, got)
		}
		srv.Clock().Advance(10 * time.Second) // the handler fails: the lease lapses
	}
	checkCounts(t, c, dlq, 0, 0, 0) // nothing moves merely because a lease lapsed
	receiveNone(t, c, src)          // the 4th receive moves it instead of returning it
	checkCounts(t, c, src, 0, 0, 0)

	out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &dlq, MessageSystemAttributeNames: []types.MessageSystemAttributeName{"All"}})
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("dead-letter receive: %v, %d messages", err, len(out.Messages))
	}
	m := out.Messages[0]
	if *m.MessageId != id || *m.Body != "poison" {
		t.Errorf("dead-lettered %s %q, want %s poison", *m.MessageId, *m.Body, id)
	}
	if got := m.Attributes["ApproximateReceiveCount"]; got != "4" {
		t.Errorf("count in the dead-letter queue = %s, want 4 (it continues)", got)
	}
	if got := m.Attributes["DeadLetterQueueSourceArn"]; got != arnPrefix+"work" {
		t.Errorf("DeadLetterQueueSourceArn = %q", got)
	}

	srcs, err := c.ListDeadLetterSourceQueues(ctx, &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: &dlq})
	if err != nil || len(srcs.QueueUrls) != 1 || srcs.QueueUrls[0] != src {
		t.Errorf("ListDeadLetterSourceQueues = %v, %v; want [%s]", srcs, err, src)
	}
}

func TestRedriveAllowPolicy(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	srv.MustCreateQueue(t, "closed-dlq", map[string]string{"RedriveAllowPolicy": `{"redrivePermission":"denyAll"}`})
	srv.MustCreateQueue(t, "picky-dlq", map[string]string{"RedriveAllowPolicy": fmt.Sprintf(`{"redrivePermission":"byQueue","sourceQueueArns":["%sfriend"]}`, arnPrefix)})
	_, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("src1"), Attributes: redrive("closed-dlq", 3)})
	wantAPIError(t, err, "InvalidParameterValue", 400)
	_, err = c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("stranger"), Attributes: redrive("picky-dlq", 3)})
	wantAPIError(t, err, "InvalidParameterValue", 400)
	srv.MustCreateQueue(t, "friend", redrive("picky-dlq", 3))
	other := srv.MustCreateQueue(t, "plain", nil)
	_, err = c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: &other, Attributes: redrive("closed-dlq", 3)})
	wantAPIError(t, err, "InvalidParameterValue", 400)
	_, err = c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("bad-allow"), Attributes: map[string]string{"RedriveAllowPolicy": `{"redrivePermission":"byQueue"}`}})
	wantAPIError(t, err, "InvalidParameterValue", 400)
}

func TestListDeadLetterSourceQueuesPages(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	dlq := srv.MustCreateQueue(t, "shared-dlq", nil)
	var want []string
	for i := range 5 {
		want = append(want, srv.MustCreateQueue(t, "src-"+strconv.Itoa(i), redrive("shared-dlq", 5)))
	}
	srv.MustCreateQueue(t, "unrelated", nil)
	var got []string
	var token *string
	pages := 0
	for {
		out, err := srv.Client.ListDeadLetterSourceQueues(ctx, &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: &dlq, MaxResults: aws.Int32(2), NextToken: token})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		got = append(got, out.QueueUrls...)
		if token = out.NextToken; token == nil {
			break
		}
	}
	if pages != 3 || !equalStrings(got, want) {
		t.Errorf("%d pages of %v, want 3 pages of %v", pages, got, want)
	}
	resp, body := rawJSON(t, srv.URL, "ListDeadLetterSourceQueues", map[string]string{"QueueUrl": srv.MustCreateQueue(t, "lonely", nil)})
	if resp.StatusCode != 200 || fmt.Sprint(body["queueUrls"]) != "[]" {
		t.Errorf("no sources: %d %v, want queueUrls []", resp.StatusCode, body)
	}
}

// deadLetterN puts n messages in dlq through src's redrive policy (count 1).
func deadLetterN(t *testing.T, srv *testutil.Server, src string, n int) {
	t.Helper()
	for i := range n {
		mustSend(t, srv.Client, src, "m"+strconv.Itoa(i))
	}
	if _, err := srv.Client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &src, MaxNumberOfMessages: 10, VisibilityTimeout: 1}); err != nil {
		t.Fatal(err)
	}
	srv.Clock.Advance(time.Second)
	receiveNone(t, srv.Client, src) // moves them all
}

func listTask(t *testing.T, c *sqs.Client, source string) types.ListMessageMoveTasksResultEntry {
	t.Helper()
	out, err := c.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(source)})
	if err != nil || len(out.Results) != 1 {
		t.Fatalf("ListMessageMoveTasks: %v, %+v", err, out)
	}
	return out.Results[0]
}

func waitTask(t *testing.T, srv *testutil.Server, source, status string, moved int64) types.ListMessageMoveTasksResultEntry {
	t.Helper()
	var r types.ListMessageMoveTasksResultEntry
	testutil.CheckFor(t, 5*time.Second, func() error {
		r = listTask(t, srv.Client, source)
		if aws.ToString(r.Status) != status || r.ApproximateNumberOfMessagesMoved != moved {
			return fmt.Errorf("task %s moved %d, want %s moved %d", aws.ToString(r.Status), r.ApproximateNumberOfMessagesMoved, status, moved)
		}
		return nil
	})
	return r
}

func TestMoveTaskRedrivesAtRate(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	dlq := srv.MustCreateQueue(t, "mt-dlq", nil)
	src := srv.MustCreateQueue(t, "mt-src", redrive("mt-dlq", 1))
	deadLetterN(t, srv, src, 5)
	checkCounts(t, c, dlq, 5, 0, 0)

	start, err := c.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(arnPrefix + "mt-dlq"), MaxNumberOfMessagesPerSecond: aws.Int32(2)})
	if err != nil {
		t.Fatal(err)
	}
	r := waitTask(t, srv, arnPrefix+"mt-dlq", "RUNNING", 2)
	if aws.ToString(r.TaskHandle) != *start.TaskHandle || aws.ToInt64(r.ApproximateNumberOfMessagesToMove) != 5 ||
		aws.ToInt32(r.MaxNumberOfMessagesPerSecond) != 2 || r.DestinationArn != nil {
		t.Errorf("running task = %+v", r)
	}
	_, err = c.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(arnPrefix + "mt-dlq")})
	wantAPIError(t, err, "InvalidParameterValue", 400) // one running task per source

	srv.WaitForDeadline(t, testutil.Epoch.Add(2*time.Second))
	srv.Clock.Advance(time.Second)
	waitTask(t, srv, arnPrefix+"mt-dlq", "RUNNING", 4)
	srv.WaitForDeadline(t, testutil.Epoch.Add(3*time.Second))
	srv.Clock.Advance(time.Second)
	done := waitTask(t, srv, arnPrefix+"mt-dlq", "COMPLETED", 5)
	if done.TaskHandle != nil {
		t.Errorf("a finished task still shows its handle")
	}
	checkCounts(t, c, dlq, 0, 0, 0)
	checkCounts(t, c, src, 5, 0, 0)
	// Back in the source, the budget starts again: the message is deliverable.
	out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &src, MaxNumberOfMessages: 10,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{"All"}})
	if err != nil || len(out.Messages) != 5 {
		t.Fatalf("receive redriven: %v, %d", err, len(out.Messages))
	}
	if a := out.Messages[0].Attributes; a["ApproximateReceiveCount"] != "1" || a["DeadLetterQueueSourceArn"] != "" {
		t.Errorf("redriven message attributes = %v", a)
	}
}

func TestMoveTaskCancel(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	dlq := srv.MustCreateQueue(t, "cx-dlq", nil)
	src := srv.MustCreateQueue(t, "cx-src", redrive("cx-dlq", 1))
	dest := srv.MustCreateQueue(t, "cx-elsewhere", nil)
	deadLetterN(t, srv, src, 4)
	start, err := c.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{
		SourceArn: aws.String(arnPrefix + "cx-dlq"), DestinationArn: aws.String(arnPrefix + "cx-elsewhere"),
		MaxNumberOfMessagesPerSecond: aws.Int32(1),
	})
	if err != nil {
		t.Fatal(err)
	}
	waitTask(t, srv, arnPrefix+"cx-dlq", "RUNNING", 1)
	cancel, err := c.CancelMessageMoveTask(ctx, &sqs.CancelMessageMoveTaskInput{TaskHandle: start.TaskHandle})
	if err != nil {
		t.Fatal(err)
	}
	if cancel.ApproximateNumberOfMessagesMoved != 1 {
		t.Errorf("cancel reports %d moved, want 1", cancel.ApproximateNumberOfMessagesMoved)
	}
	r := waitTask(t, srv, arnPrefix+"cx-dlq", "CANCELLED", 1)
	if aws.ToString(r.DestinationArn) != arnPrefix+"cx-elsewhere" {
		t.Errorf("DestinationArn = %v", r.DestinationArn)
	}
	checkCounts(t, c, dest, 1, 0, 0)
	checkCounts(t, c, dlq, 3, 0, 0)
	_, err = c.CancelMessageMoveTask(ctx, &sqs.CancelMessageMoveTaskInput{TaskHandle: start.TaskHandle})
	wantAPIError(t, err, "ResourceNotFoundException", 404)
	_, err = c.CancelMessageMoveTask(ctx, &sqs.CancelMessageMoveTaskInput{TaskHandle: aws.String("garbage!")})
	wantAPIError(t, err, "InvalidParameterValue", 400)
}

func TestMoveTaskErrors(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	srv.MustCreateQueue(t, "e-dlq", nil)
	srv.MustCreateQueue(t, "e-src", redrive("e-dlq", 2))
	tests := []struct {
		name   string
		in     sqs.StartMessageMoveTaskInput
		code   string
		status int
	}{
		{"missing source", sqs.StartMessageMoveTaskInput{SourceArn: aws.String(arnPrefix + "nope")}, "ResourceNotFoundException", 404},
		{"not a dead-letter queue", sqs.StartMessageMoveTaskInput{SourceArn: aws.String(arnPrefix + "e-src")}, "InvalidParameterValue", 400},
		{"missing destination", sqs.StartMessageMoveTaskInput{SourceArn: aws.String(arnPrefix + "e-dlq"), DestinationArn: aws.String(arnPrefix + "nope")}, "ResourceNotFoundException", 404},
		{"rate too high", sqs.StartMessageMoveTaskInput{SourceArn: aws.String(arnPrefix + "e-dlq"), MaxNumberOfMessagesPerSecond: aws.Int32(501)}, "InvalidParameterValue", 400},
	}
	for _, tt := range tests {
		_, err := c.StartMessageMoveTask(ctx, &tt.in)
		wantAPIError(t, err, tt.code, tt.status)
	}
	_, err := c.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(arnPrefix + "e-dlq"), MaxResults: aws.Int32(11)})
	wantAPIError(t, err, "InvalidParameterValue", 400)
	out, err := c.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(arnPrefix + "e-dlq")})
	if err != nil || len(out.Results) != 0 {
		t.Errorf("no tasks yet: %v %+v", err, out)
	}
}

// A task with no destination whose messages' source queue is gone ends
// FAILED with the reason.
func TestMoveTaskFailsWithoutSource(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	srv.MustCreateQueue(t, "f-dlq", nil)
	src := srv.MustCreateQueue(t, "f-src", redrive("f-dlq", 1))
	srv.MustCreateQueue(t, "f-keeper", redrive("f-dlq", 1)) // keeps f-dlq a dead-letter queue
	deadLetterN(t, srv, src, 1)
	if _, err := c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: &src}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(arnPrefix + "f-dlq")}); err != nil {
		t.Fatal(err)
	}
	r := waitTask(t, srv, arnPrefix+"f-dlq", "FAILED", 0)
	if aws.ToString(r.FailureReason) != "AWS.SimpleQueueService.NonExistentQueue" {
		t.Errorf("FailureReason = %v", r.FailureReason)
	}
}

func TestPermissions(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	url := srv.MustCreateQueue(t, "perm", nil)
	if _, err := c.AddPermission(ctx, &sqs.AddPermissionInput{QueueUrl: &url, Label: aws.String("l1"),
		AWSAccountIds: []string{"111111111111"}, Actions: []string{"SendMessage"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AddPermission(ctx, &sqs.AddPermissionInput{QueueUrl: &url, Label: aws.String("l2"),
		AWSAccountIds: []string{"111111111111", "222222222222"}, Actions: []string{"ReceiveMessage", "DeleteMessage"}}); err != nil {
		t.Fatal(err)
	}
	attrs, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &url, AttributeNames: []types.QueueAttributeName{"Policy"}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"Version":"2008-10-17","Id":"` + arnPrefix + `perm/SQSDefaultPolicy","Statement":[` +
		`{"Sid":"l1","Effect":"Allow","Principal":{"AWS":"arn:aws:iam::111111111111:root"},"Action":"SQS:SendMessage","Resource":"` + arnPrefix + `perm"},` +
		`{"Sid":"l2","Effect":"Allow","Principal":{"AWS":["arn:aws:iam::111111111111:root","arn:aws:iam::222222222222:root"]},"Action":["SQS:ReceiveMessage","SQS:DeleteMessage"],"Resource":"` + arnPrefix + `perm"}]}`
	if got := attrs.Attributes["Policy"]; got != want {
		t.Errorf("Policy =\n%s\nwant\n%s", got, want)
	}
	_, err = c.AddPermission(ctx, &sqs.AddPermissionInput{QueueUrl: &url, Label: aws.String("l1"), AWSAccountIds: []string{"1"}, Actions: []string{"SendMessage"}})
	wantAPIError(t, err, "InvalidParameterValue", 400)
	_, err = c.AddPermission(ctx, &sqs.AddPermissionInput{QueueUrl: &url, Label: aws.String("l3"), AWSAccountIds: []string{"1"},
		Actions: []string{"SendMessage", "ReceiveMessage", "DeleteMessage", "ChangeMessageVisibility", "GetQueueAttributes", "GetQueueUrl", "PurgeQueue", "TagQueue"}})
	wantAPIError(t, err, "OverLimit", 403)
	_, err = c.RemovePermission(ctx, &sqs.RemovePermissionInput{QueueUrl: &url, Label: aws.String("nope")})
	wantAPIError(t, err, "InvalidParameterValue", 400)
	for _, l := range []string{"l1", "l2"} {
		if _, err := c.RemovePermission(ctx, &sqs.RemovePermissionInput{QueueUrl: &url, Label: aws.String(l)}); err != nil {
			t.Fatal(err)
		}
	}
	attrs, err = c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &url, AttributeNames: []types.QueueAttributeName{"All"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := attrs.Attributes["Policy"]; ok {
		t.Errorf("Policy still set after removing the last statement")
	}
}

// With VisibilityTimeout 0 a receive leaves the message visible; the
// dead-letter move must still happen.
func TestDeadLetterWithZeroVisibility(t *testing.T) {
	t.Parallel()
	srv := batontest.New(t, batontest.WithFakeClock(time.Time{}))
	c := srv.Client()
	src := srv.Queue(t, "z-src?VisibilityTimeout=0&dlq=z-dlq:2")
	dlq := srv.URL() + "/000000000000/z-dlq"
	mustSend(t, c, src, "x")
	receiveOne(t, c, src, nil)
	receiveOne(t, c, src, nil)
	receiveNone(t, c, src)
	checkCounts(t, c, dlq, 1, 0, 0)
	checkCounts(t, c, src, 0, 0, 0)
}

// A source keeps its ten newest tasks: ListMessageMoveTasks shows no more,
// and neither the engine nor the store holds on to older finished ones.
func TestMoveTaskHistoryKeepsTen(t *testing.T) {
	t.Parallel()
	store := memstore.New()
	srv := testutil.StartServer(t, testutil.Options{Store: store})
	c := srv.Client
	srv.MustCreateQueue(t, "hist-dlq", nil)
	srv.MustCreateQueue(t, "hist-src", redrive("hist-dlq", 1))
	source := arnPrefix + "hist-dlq"
	var started []string
	for i := range 12 {
		if _, err := c.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(source)}); err != nil {
			t.Fatalf("task %d: %v", i+1, err)
		}
		done := waitTask(t, srv, source, "COMPLETED", 0)
		started = append(started, strconv.FormatInt(done.StartedTimestamp, 10))
		srv.Clock.Advance(time.Second)
	}
	out, err := c.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(source), MaxResults: aws.Int32(10)})
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, r := range out.Results {
		listed = append(listed, strconv.FormatInt(r.StartedTimestamp, 10))
	}
	want := slices.Clone(started[2:])
	slices.Reverse(want)
	if !slices.Equal(listed, want) {
		t.Errorf("listed tasks started at %v, want the ten newest %v", listed, want)
	}
	stored, err := store.MoveTaskList(ctx)
	if err != nil || len(stored) != 10 {
		t.Errorf("the store holds %d tasks (%v), want 10", len(stored), err)
	}
}

// A RedrivePolicy comes back as SQS writes it, the count a number, however
// it was sent; sending the same policy in another form is no change.
func TestRedrivePolicyCanonical(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	srv.MustCreateQueue(t, "canon-dlq", nil)
	sent := map[string]string{"RedrivePolicy": `{ "maxReceiveCount" : "3", "deadLetterTargetArn" : "` + arnPrefix + `canon-dlq" }`}
	url := srv.MustCreateQueue(t, "canon-src", sent)
	out, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &url, AttributeNames: []types.QueueAttributeName{"RedrivePolicy"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := out.Attributes["RedrivePolicy"], `{"deadLetterTargetArn":"`+arnPrefix+`canon-dlq","maxReceiveCount":3}`; got != want {
		t.Errorf("RedrivePolicy = %s, want %s", got, want)
	}
	again := map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + arnPrefix + `canon-dlq","maxReceiveCount":3}`}
	if _, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("canon-src"), Attributes: again}); err != nil {
		t.Errorf("CreateQueue with the same policy written otherwise: %v", err)
	}
}
