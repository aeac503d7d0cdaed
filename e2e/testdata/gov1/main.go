// Command gov1 drives a Baton server through the AWS SDK for Go v1
// (github.com/aws/aws-sdk-go) and checks every answer.
//
// Usage: go run . ENDPOINT
//
// Two SDK versions are built from this one source: go.mod pins v1.47.0, the
// last whose SQS client speaks the Query protocol (form-encoded requests,
// XML answers), and json.mod pins v1.55.8, which speaks AWS JSON 1.0 and
// reads SQS's legacy error codes from the x-amzn-query-error header (go
// build -modfile json.mod). Countless services still run one or the other,
// and code written against the first checks error codes such as
// AWS.SimpleQueueService.NonExistentQueue, so both must see the same codes.
//
// Credentials and region come from the environment. The SDK checks the MD5
// digests of sent and received bodies and message attributes itself. The
// program exits 0 when every check passed and 1 naming the first mismatch.
package main

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"

	"github.com/aws/aws-sdk-go/aws"
	"github.com/aws/aws-sdk-go/aws/awserr"
	"github.com/aws/aws-sdk-go/aws/request"
	"github.com/aws/aws-sdk-go/aws/session"
	"github.com/aws/aws-sdk-go/service/sqs"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gov1 ENDPOINT")
		os.Exit(2)
	}
	sess := session.Must(session.NewSession(&aws.Config{
		Endpoint:   aws.String(os.Args[1]),
		MaxRetries: aws.Int(0),
	}))
	c := &checker{sqs: sqs.New(sess)}
	c.sqs.Handlers.Send.PushFront(func(r *request.Request) {
		if r.HTTPRequest.Header.Get("X-Amz-Target") != "" {
			c.json = true
		}
	})
	c.run()
	protocol := "Query"
	if c.json {
		protocol = "AWS JSON 1.0"
	}
	fmt.Printf("gov1: %d calls over %s, every check passed\n", c.calls, protocol)
}

type checker struct {
	sqs   *sqs.SQS
	calls int
	json  bool // whether the SDK spoke AWS JSON 1.0
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "gov1: "+format+"\n", args...)
	os.Exit(1)
}

// ok fails the program on err; it counts the call.
func (c *checker) ok(what string, err error) {
	c.calls++
	if err != nil {
		fail("%s: %v", what, err)
	}
}

// code checks that err is an SQS error with the legacy code want.
func (c *checker) code(what string, err error, want string) {
	c.calls++
	var ae awserr.Error
	if !errors.As(err, &ae) {
		fail("%s: want error %s, got %v", what, want, err)
	}
	if ae.Code() != want {
		fail("%s: want error code %s, got %s (%s)", what, want, ae.Code(), ae.Message())
	}
}

func equal(what string, got, want any) {
	if !reflect.DeepEqual(got, want) {
		fail("%s: got %#v, want %#v", what, got, want)
	}
}

func (c *checker) run() {
	s := c.sqs
	prefix := fmt.Sprintf("gov1-%d", os.Getpid())

	// A queue's life, with attributes and tags.
	cq, err := s.CreateQueue(&sqs.CreateQueueInput{
		QueueName:  aws.String(prefix + "-main"),
		Attributes: map[string]*string{"VisibilityTimeout": aws.String("45"), "DelaySeconds": aws.String("0")},
		Tags:       map[string]*string{"team": aws.String("core")},
	})
	c.ok("CreateQueue", err)
	url := *cq.QueueUrl
	if !strings.HasSuffix(url, "/"+prefix+"-main") {
		fail("CreateQueue: URL %s", url)
	}
	_, err = s.CreateQueue(&sqs.CreateQueueInput{
		QueueName:  aws.String(prefix + "-main"),
		Attributes: map[string]*string{"VisibilityTimeout": aws.String("46")},
	})
	c.code("CreateQueue with other attributes", err, "QueueAlreadyExists")
	gu, err := s.GetQueueUrl(&sqs.GetQueueUrlInput{QueueName: aws.String(prefix + "-main")})
	c.ok("GetQueueUrl", err)
	equal("GetQueueUrl", *gu.QueueUrl, url)
	_, err = s.GetQueueUrl(&sqs.GetQueueUrlInput{QueueName: aws.String(prefix + "-missing")})
	c.code("GetQueueUrl of a missing queue", err, "AWS.SimpleQueueService.NonExistentQueue")
	lq, err := s.ListQueues(&sqs.ListQueuesInput{QueueNamePrefix: aws.String(prefix)})
	c.ok("ListQueues", err)
	equal("ListQueues", aws.StringValueSlice(lq.QueueUrls), []string{url})

	_, err = s.SetQueueAttributes(&sqs.SetQueueAttributesInput{
		QueueUrl:   aws.String(url),
		Attributes: map[string]*string{"MessageRetentionPeriod": aws.String("3600")},
	})
	c.ok("SetQueueAttributes", err)
	_, err = s.SetQueueAttributes(&sqs.SetQueueAttributesInput{
		QueueUrl:   aws.String(url),
		Attributes: map[string]*string{"VisibilityTimeout": aws.String("43201")},
	})
	c.code("SetQueueAttributes out of range", err, "InvalidAttributeValue")
	ga, err := s.GetQueueAttributes(&sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(url),
		AttributeNames: aws.StringSlice([]string{"All"}),
	})
	c.ok("GetQueueAttributes", err)
	for k, want := range map[string]string{"VisibilityTimeout": "45", "MessageRetentionPeriod": "3600", "DelaySeconds": "0"} {
		equal("attribute "+k, aws.StringValue(ga.Attributes[k]), want)
	}
	if !strings.HasSuffix(aws.StringValue(ga.Attributes["QueueArn"]), ":"+prefix+"-main") {
		fail("QueueArn %v", aws.StringValue(ga.Attributes["QueueArn"]))
	}
	_, err = s.GetQueueAttributes(&sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(url),
		AttributeNames: aws.StringSlice([]string{"NoSuchAttribute"}),
	})
	c.code("GetQueueAttributes of an unknown name", err, "InvalidAttributeName")

	_, err = s.TagQueue(&sqs.TagQueueInput{QueueUrl: aws.String(url), Tags: map[string]*string{"env": aws.String("test")}})
	c.ok("TagQueue", err)
	_, err = s.UntagQueue(&sqs.UntagQueueInput{QueueUrl: aws.String(url), TagKeys: aws.StringSlice([]string{"team"})})
	c.ok("UntagQueue", err)
	lt, err := s.ListQueueTags(&sqs.ListQueueTagsInput{QueueUrl: aws.String(url)})
	c.ok("ListQueueTags", err)
	equal("tags", aws.StringValueMap(lt.Tags), map[string]string{"env": "test"})

	// Messages with typed attributes: the SDK checks the digests of the
	// body and attributes of what it sends and receives.
	attrs := map[string]*sqs.MessageAttributeValue{
		"Text":   {DataType: aws.String("String"), StringValue: aws.String("héllo ✓")},
		"Count":  {DataType: aws.String("Number"), StringValue: aws.String("-12.5e3")},
		"Blob":   {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1, 2, 0xff}},
		"Custom": {DataType: aws.String("String.json"), StringValue: aws.String(`{"a":1}`)},
	}
	sm, err := s.SendMessage(&sqs.SendMessageInput{
		QueueUrl: aws.String(url), MessageBody: aws.String("first <body> & \"quotes\" ✓"), MessageAttributes: attrs,
	})
	c.ok("SendMessage", err)
	if aws.StringValue(sm.MessageId) == "" || aws.StringValue(sm.MD5OfMessageAttributes) == "" {
		fail("SendMessage answer %v", sm)
	}
	_, err = s.SendMessage(&sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("bad \u0001 char")})
	c.code("SendMessage with a character SQS refuses", err, "InvalidMessageContents")

	sb, err := s.SendMessageBatch(&sqs.SendMessageBatchInput{
		QueueUrl: aws.String(url),
		Entries: []*sqs.SendMessageBatchRequestEntry{
			{Id: aws.String("a"), MessageBody: aws.String("second")},
			{Id: aws.String("b"), MessageBody: aws.String("third"), MessageAttributes: map[string]*sqs.MessageAttributeValue{
				"N": {DataType: aws.String("Number"), StringValue: aws.String("7")},
			}},
			{Id: aws.String("c"), MessageBody: aws.String("late"), DelaySeconds: aws.Int64(901)},
		},
	})
	c.ok("SendMessageBatch", err)
	equal("SendMessageBatch successes", len(sb.Successful), 2)
	if len(sb.Failed) != 1 || aws.StringValue(sb.Failed[0].Id) != "c" || !aws.BoolValue(sb.Failed[0].SenderFault) ||
		aws.StringValue(sb.Failed[0].Code) != "InvalidParameterValue" {
		fail("SendMessageBatch failures %v", sb.Failed)
	}
	_, err = s.SendMessageBatch(&sqs.SendMessageBatchInput{
		QueueUrl: aws.String(url),
		Entries: []*sqs.SendMessageBatchRequestEntry{
			{Id: aws.String("x"), MessageBody: aws.String("1")},
			{Id: aws.String("x"), MessageBody: aws.String("2")},
		},
	})
	c.code("SendMessageBatch with repeated ids", err, "AWS.SimpleQueueService.BatchEntryIdsNotDistinct")

	var got []*sqs.Message
	for len(got) < 3 {
		rm, err := s.ReceiveMessage(&sqs.ReceiveMessageInput{
			QueueUrl:              aws.String(url),
			MaxNumberOfMessages:   aws.Int64(10),
			WaitTimeSeconds:       aws.Int64(1),
			AttributeNames:        aws.StringSlice([]string{"All"}),
			MessageAttributeNames: aws.StringSlice([]string{"All"}),
		})
		c.ok("ReceiveMessage", err)
		if len(rm.Messages) == 0 {
			fail("ReceiveMessage: %d of 3 messages", len(got))
		}
		got = append(got, rm.Messages...)
	}
	bodies := map[string]*sqs.Message{}
	for _, m := range got {
		bodies[aws.StringValue(m.Body)] = m
	}
	first := bodies["first <body> & \"quotes\" ✓"]
	if first == nil || bodies["second"] == nil || bodies["third"] == nil {
		fail("received bodies %v", got)
	}
	equal("Text attribute", aws.StringValue(first.MessageAttributes["Text"].StringValue), "héllo ✓")
	equal("Blob attribute", first.MessageAttributes["Blob"].BinaryValue, []byte{0, 1, 2, 0xff})
	equal("Custom type", aws.StringValue(first.MessageAttributes["Custom"].DataType), "String.json")
	equal("ApproximateReceiveCount", aws.StringValue(first.Attributes["ApproximateReceiveCount"]), "1")
	if aws.StringValue(first.Attributes["SentTimestamp"]) == "" {
		fail("no SentTimestamp in %v", first.Attributes)
	}

	_, err = s.ChangeMessageVisibility(&sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(url), ReceiptHandle: first.ReceiptHandle, VisibilityTimeout: aws.Int64(120),
	})
	c.ok("ChangeMessageVisibility", err)
	_, err = s.ChangeMessageVisibility(&sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(url), ReceiptHandle: aws.String("not-a-receipt"), VisibilityTimeout: aws.Int64(10),
	})
	c.code("ChangeMessageVisibility with a bad receipt", err, "ReceiptHandleIsInvalid")
	cb, err := s.ChangeMessageVisibilityBatch(&sqs.ChangeMessageVisibilityBatchInput{
		QueueUrl: aws.String(url),
		Entries: []*sqs.ChangeMessageVisibilityBatchRequestEntry{
			{Id: aws.String("s"), ReceiptHandle: bodies["second"].ReceiptHandle, VisibilityTimeout: aws.Int64(0)},
			{Id: aws.String("t"), ReceiptHandle: bodies["third"].ReceiptHandle, VisibilityTimeout: aws.Int64(300)},
		},
	})
	c.ok("ChangeMessageVisibilityBatch", err)
	equal("ChangeMessageVisibilityBatch successes", len(cb.Successful), 2)

	// "second" was released: it comes back at once, received twice.
	rm, err := s.ReceiveMessage(&sqs.ReceiveMessageInput{
		QueueUrl: aws.String(url), AttributeNames: aws.StringSlice([]string{"ApproximateReceiveCount"}), WaitTimeSeconds: aws.Int64(1),
	})
	c.ok("ReceiveMessage after a release", err)
	if len(rm.Messages) != 1 || aws.StringValue(rm.Messages[0].Body) != "second" ||
		aws.StringValue(rm.Messages[0].Attributes["ApproximateReceiveCount"]) != "2" {
		fail("after a release: %v", rm.Messages)
	}
	_, err = s.DeleteMessage(&sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: first.ReceiptHandle})
	c.ok("DeleteMessage", err)
	db, err := s.DeleteMessageBatch(&sqs.DeleteMessageBatchInput{
		QueueUrl: aws.String(url),
		Entries: []*sqs.DeleteMessageBatchRequestEntry{
			{Id: aws.String("2"), ReceiptHandle: rm.Messages[0].ReceiptHandle},
			{Id: aws.String("3"), ReceiptHandle: bodies["third"].ReceiptHandle},
			{Id: aws.String("bad"), ReceiptHandle: aws.String("not-a-receipt")},
		},
	})
	c.ok("DeleteMessageBatch", err)
	equal("DeleteMessageBatch successes", len(db.Successful), 2)
	if len(db.Failed) != 1 || aws.StringValue(db.Failed[0].Code) != "ReceiptHandleIsInvalid" {
		fail("DeleteMessageBatch failures %v", db.Failed)
	}
	_, err = s.DeleteMessageBatch(&sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: []*sqs.DeleteMessageBatchRequestEntry{}})
	c.code("DeleteMessageBatch without entries", err, "AWS.SimpleQueueService.EmptyBatchRequest")

	// FIFO: order within a group, sequence numbers, deduplication.
	fq, err := s.CreateQueue(&sqs.CreateQueueInput{
		QueueName:  aws.String(prefix + "-order.fifo"),
		Attributes: map[string]*string{"FifoQueue": aws.String("true")},
	})
	c.ok("CreateQueue FIFO", err)
	furl := *fq.QueueUrl
	var seqs []string
	for i, body := range []string{"one", "two", "one-again"} {
		dedup := body
		if i == 2 {
			dedup = "one" // a duplicate of the first: accepted, not queued
		}
		out, err := s.SendMessage(&sqs.SendMessageInput{
			QueueUrl: aws.String(furl), MessageBody: aws.String(body),
			MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String(dedup),
		})
		c.ok("SendMessage FIFO", err)
		seqs = append(seqs, aws.StringValue(out.SequenceNumber))
	}
	if seqs[0] == "" || seqs[0] >= seqs[1] && len(seqs[0]) == len(seqs[1]) || seqs[2] != seqs[0] {
		fail("FIFO sequence numbers %v", seqs)
	}
	_, err = s.SendMessage(&sqs.SendMessageInput{QueueUrl: aws.String(furl), MessageBody: aws.String("x"), MessageDeduplicationId: aws.String("x")})
	c.code("SendMessage FIFO without a group", err, "MissingParameter")
	fr, err := s.ReceiveMessage(&sqs.ReceiveMessageInput{
		QueueUrl: aws.String(furl), MaxNumberOfMessages: aws.Int64(10),
		AttributeNames: aws.StringSlice([]string{"MessageGroupId", "SequenceNumber"}),
	})
	c.ok("ReceiveMessage FIFO", err)
	var order []string
	for _, m := range fr.Messages {
		order = append(order, aws.StringValue(m.Body))
		equal("MessageGroupId", aws.StringValue(m.Attributes["MessageGroupId"]), "g")
	}
	equal("FIFO order", order, []string{"one", "two"})

	// A dead-letter queue, its sources and a move task back.
	dq, err := s.CreateQueue(&sqs.CreateQueueInput{QueueName: aws.String(prefix + "-dlq")})
	c.ok("CreateQueue DLQ", err)
	dga, err := s.GetQueueAttributes(&sqs.GetQueueAttributesInput{QueueUrl: dq.QueueUrl, AttributeNames: aws.StringSlice([]string{"QueueArn"})})
	c.ok("GetQueueAttributes DLQ", err)
	dlqArn := aws.StringValue(dga.Attributes["QueueArn"])
	_, err = s.SetQueueAttributes(&sqs.SetQueueAttributesInput{
		QueueUrl: aws.String(url),
		Attributes: map[string]*string{
			"RedrivePolicy": aws.String(fmt.Sprintf(`{"deadLetterTargetArn":"%s","maxReceiveCount":"1"}`, dlqArn)),
		},
	})
	c.ok("SetQueueAttributes RedrivePolicy", err)
	ls, err := s.ListDeadLetterSourceQueues(&sqs.ListDeadLetterSourceQueuesInput{QueueUrl: dq.QueueUrl})
	c.ok("ListDeadLetterSourceQueues", err)
	equal("dead-letter sources", aws.StringValueSlice(ls.QueueUrls), []string{url})
	_, err = s.SendMessage(&sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("doomed")})
	c.ok("SendMessage to be dead-lettered", err)
	rd, err := s.ReceiveMessage(&sqs.ReceiveMessageInput{QueueUrl: aws.String(url), VisibilityTimeout: aws.Int64(0), WaitTimeSeconds: aws.Int64(1)})
	c.ok("ReceiveMessage, released at once", err)
	equal("received before dead-lettering", len(rd.Messages), 1)
	rd, err = s.ReceiveMessage(&sqs.ReceiveMessageInput{QueueUrl: aws.String(url)})
	c.ok("ReceiveMessage past maxReceiveCount", err)
	equal("messages past maxReceiveCount", len(rd.Messages), 0)
	mt, err := s.StartMessageMoveTask(&sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlqArn)})
	c.ok("StartMessageMoveTask", err)
	if aws.StringValue(mt.TaskHandle) == "" {
		fail("StartMessageMoveTask: no handle")
	}
	lm, err := s.ListMessageMoveTasks(&sqs.ListMessageMoveTasksInput{SourceArn: aws.String(dlqArn)})
	c.ok("ListMessageMoveTasks", err)
	if len(lm.Results) != 1 || aws.StringValue(lm.Results[0].SourceArn) != dlqArn {
		fail("ListMessageMoveTasks %v", lm.Results)
	}

	// Purge and delete every queue.
	_, err = s.PurgeQueue(&sqs.PurgeQueueInput{QueueUrl: aws.String(url)})
	c.ok("PurgeQueue", err)
	for _, u := range []string{url, furl, *dq.QueueUrl} {
		_, err = s.DeleteQueue(&sqs.DeleteQueueInput{QueueUrl: aws.String(u)})
		c.ok("DeleteQueue", err)
	}
	_, err = s.SendMessage(&sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("x")})
	c.code("SendMessage to a deleted queue", err, "AWS.SimpleQueueService.NonExistentQueue")
	lq, err = s.ListQueues(&sqs.ListQueuesInput{QueueNamePrefix: aws.String(prefix)})
	c.ok("ListQueues after deleting", err)
	if len(lq.QueueUrls) != 0 {
		fail("queues left after deleting: %v", aws.StringValueSlice(lq.QueueUrls))
	}
}
