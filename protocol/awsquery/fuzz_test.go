package awsquery_test

import (
	"errors"
	"net/url"
	"reflect"
	"testing"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/protocol/awsquery"
	"github.com/baton-sqs/baton/protocol/protocoltest"
	"github.com/baton-sqs/baton/protocol/wire"
)

// Realistic Query request bodies, as SDKs and hand-rolled clients send them.
const (
	seedSend = "Action=SendMessage&QueueUrl=%2F000000000000%2Forders&MessageBody=Hello%2C+SQS%21&DelaySeconds=0" +
		"&MessageAttribute.1.Name=ClientId&MessageAttribute.1.Value.DataType=String&MessageAttribute.1.Value.StringValue=c-42" +
		"&MessageAttribute.2.Name=Blob&MessageAttribute.2.Value.DataType=Binary&MessageAttribute.2.Value.BinaryValue=3q2%2B7w%3D%3D" +
		"&MessageAttribute.3.Name=L&MessageAttribute.3.Value.DataType=String&MessageAttribute.3.Value.StringListValue.1=a&MessageAttribute.3.Value.BinaryListValue.1=AA%3D%3D" +
		"&MessageSystemAttribute.1.Name=AWSTraceHeader&MessageSystemAttribute.1.Value.DataType=String&MessageSystemAttribute.1.Value.StringValue=Root%3D1"
	seedBatch = "Action=SendMessageBatch&QueueUrl=q&SendMessageBatchRequestEntry.1.Id=a&SendMessageBatchRequestEntry.1.MessageBody=one" +
		"&SendMessageBatchRequestEntry.1.MessageAttribute.1.Name=Foo&SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.DataType=String" +
		"&SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.StringValue=Bar&SendMessageBatchRequestEntry.2.Id=b" +
		"&SendMessageBatchRequestEntry.2.MessageBody=two&SendMessageBatchRequestEntry.2.DelaySeconds=5&SendMessageBatchRequestEntry.2.MessageGroupId=g"
	seedReceive       = "Action=ReceiveMessage&QueueUrl=q&AttributeName.1=All&MessageAttributeName.1=.%2A&MaxNumberOfMessages=10&VisibilityTimeout=30&WaitTimeSeconds=20&ReceiveRequestAttemptId=r"
	seedChangeBatch   = "Action=ChangeMessageVisibilityBatch&QueueUrl=q&ChangeMessageVisibilityBatchRequestEntry.1.Id=a&ChangeMessageVisibilityBatchRequestEntry.1.ReceiptHandle=h&ChangeMessageVisibilityBatchRequestEntry.1.VisibilityTimeout=60"
	seedTag           = "Action=TagQueue&QueueUrl=q&Tag.1.Key=k&Tag.1.Value=&Tag.2.Key=k2&Tag.2.Value=v"
	seedUntag         = "Action=UntagQueue&QueueUrl=q&TagKey.1=k&TagKey.2=k2"
	seedAddPermission = "Action=AddPermission&QueueUrl=q&Label=one&AWSAccountId.1=111111111111&AWSAccountId.2=222222222222&ActionName.1=SendMessage&ActionName.2=%2A"
)

var querySeeds = []string{
	"",
	"Action=ListQueues&Version=2012-11-05",
	"Action=ListQueues&QueueNamePrefix=a&MaxResults=10&NextToken=YTE",
	"Action=CreateQueue&QueueName=orders&Attribute.1.Name=VisibilityTimeout&Attribute.1.Value=45&Attribute.2.Name=DelaySeconds&Attribute.2.Value=5&Tag.1.Key=team&Tag.1.Value=core",
	"Action=CreateQueue&QueueName=jobs.fifo&Attribute.1.Name=FifoQueue&Attribute.1.Value=true",
	"Action=GetQueueUrl&QueueName=orders&QueueOwnerAWSAccountId=000000000000",
	"Action=GetQueueAttributes&QueueUrl=http%3A%2F%2Flocalhost%3A9324%2F000000000000%2Forders&AttributeName.1=All",
	"Action=SetQueueAttributes&QueueUrl=%2F000000000000%2Forders&Attribute.1.Name=Policy&Attribute.1.Value=%7B%7D",
	seedSend,
	seedBatch,
	seedReceive,
	"Action=DeleteMessage&QueueUrl=q&ReceiptHandle=AQAAAAAAAAE",
	"Action=DeleteMessageBatch&QueueUrl=q&DeleteMessageBatchRequestEntry.1.Id=a&DeleteMessageBatchRequestEntry.1.ReceiptHandle=h",
	"Action=ChangeMessageVisibility&QueueUrl=q&ReceiptHandle=h&VisibilityTimeout=0",
	seedChangeBatch,
	seedTag,
	seedUntag,
	"Action=ListDeadLetterSourceQueues&QueueUrl=q&MaxResults=1&NextToken=YQ",
	"Action=StartMessageMoveTask&SourceArn=arn%3Aaws%3Asqs%3Aus-east-1%3A000000000000%3Adlq&DestinationArn=arn%3Aaws%3Asqs%3Aus-east-1%3A000000000000%3Asrc&MaxNumberOfMessagesPerSecond=50",
	"Action=CancelMessageMoveTask&TaskHandle=eyJ0YXNrSWQiOiJ4In0%3D",
	"Action=ListMessageMoveTasks&SourceArn=arn%3Aaws%3Asqs%3Aus-east-1%3A000000000000%3Adlq&MaxResults=10",
	seedAddPermission,
	"Action=RemovePermission&QueueUrl=q&Label=one",
	// Hostile shapes: gaps, holes, huge and negative indexes, bad numbers.
	"SendMessageBatchRequestEntry.2.Id=b&SendMessageBatchRequestEntry.1.=x&Attribute.1.Value=v",
	"MaxNumberOfMessages=99999999999999999999&DelaySeconds=-1&VisibilityTimeout=&WaitTimeSeconds=0x10",
	"MessageAttribute.1.Name=a&MessageAttribute.1.Value.BinaryValue=%%%&Tag.0.Key=z&TagKey.-1=q",
	"AttributeName.1=a&AttributeName.1=b&AttributeName.3=c&Attribute.1.Name=x&Attribute.1.Name=y",
	"SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.BinaryListValue.1=%FF&SendMessageBatchRequestEntry.1.MessageAttribute.1.Name=n",
	"a.b.c.d.e.f.g.h=1&....=2&.1.=3&Entries.1.Id=x",
}

// FuzzDecode decodes random forms for every operation. Decoding must never
// panic; a failure must be an InvalidParameterValue *baton.Error; a success
// must be the operation's input type.
func FuzzDecode(f *testing.F) {
	for _, s := range querySeeds {
		f.Add(s)
	}
	ops := protocoltest.Table()
	f.Fuzz(func(t *testing.T, s string) {
		form, _ := url.ParseQuery(s) // a partial parse is still a form to decode
		for name, op := range ops {
			in, err := awsquery.Decode(form, op)
			if err != nil {
				var e *baton.Error
				if !errors.As(err, &e) || e.Code != baton.ErrInvalidParameterValue {
					t.Fatalf("%s: Decode(%q) error = %#v, want an InvalidParameterValue *baton.Error", name, s, err)
				}
				if in != nil {
					t.Errorf("%s: Decode(%q) returned %v with an error, want nil", name, s, in)
				}
				continue
			}
			if got, want := reflect.TypeOf(in), reflect.TypeOf(op.NewInput()); got != want {
				t.Fatalf("%s: Decode(%q) = %v, want %v", name, s, got, want)
			}
		}
	})
}

// The seeds decode as a client means them; this pins the flattening the
// fuzzer explores.
func TestFuzzSeedsDecode(t *testing.T) {
	t.Parallel()
	ops := protocoltest.Table()
	decode := func(op, s string) any {
		t.Helper()
		form, err := url.ParseQuery(s)
		if err != nil {
			t.Fatal(err)
		}
		in, err := awsquery.Decode(form, ops[op])
		if err != nil {
			t.Fatalf("%s: Decode(%q): %v", op, s, err)
		}
		return in
	}
	intp := func(n int) *int { return &n }
	strp := func(s string) *string { return &s }

	send := decode("SendMessage", seedSend).(*wire.SendMessageInput)
	wantSend := &wire.SendMessageInput{
		QueueUrl: "/000000000000/orders", MessageBody: "Hello, SQS!", DelaySeconds: intp(0),
		MessageAttributes: map[string]wire.MessageAttributeValue{
			"ClientId": {DataType: "String", StringValue: "c-42"},
			"Blob":     {DataType: "Binary", BinaryValue: []byte{0xde, 0xad, 0xbe, 0xef}},
			"L":        {DataType: "String", StringListValues: []string{"a"}, BinaryListValues: [][]byte{{0}}},
		},
		MessageSystemAttributes: map[string]wire.MessageAttributeValue{
			"AWSTraceHeader": {DataType: "String", StringValue: "Root=1"},
		},
	}
	if !reflect.DeepEqual(send, wantSend) {
		t.Errorf("SendMessage =\n%+v\nwant\n%+v", send, wantSend)
	}

	batch := decode("SendMessageBatch", seedBatch).(*wire.SendMessageBatchInput)
	wantBatch := &wire.SendMessageBatchInput{QueueUrl: "q", Entries: []wire.SendMessageBatchRequestEntry{
		{Id: "a", MessageBody: "one", MessageAttributes: map[string]wire.MessageAttributeValue{"Foo": {DataType: "String", StringValue: "Bar"}}},
		{Id: "b", MessageBody: "two", DelaySeconds: intp(5), MessageGroupId: strp("g")},
	}}
	if !reflect.DeepEqual(batch, wantBatch) {
		t.Errorf("SendMessageBatch =\n%+v\nwant\n%+v", batch, wantBatch)
	}

	recv := decode("ReceiveMessage", seedReceive).(*wire.ReceiveMessageInput)
	wantRecv := &wire.ReceiveMessageInput{
		QueueUrl: "q", AttributeNames: []string{"All"}, MessageSystemAttributeNames: []string{"All"},
		MessageAttributeNames: []string{".*"}, MaxNumberOfMessages: intp(10), VisibilityTimeout: intp(30),
		WaitTimeSeconds: intp(20), ReceiveRequestAttemptId: "r",
	}
	if !reflect.DeepEqual(recv, wantRecv) {
		t.Errorf("ReceiveMessage =\n%+v\nwant\n%+v", recv, wantRecv)
	}

	cmv := decode("ChangeMessageVisibilityBatch", seedChangeBatch).(*wire.ChangeMessageVisibilityBatchInput)
	wantCMV := &wire.ChangeMessageVisibilityBatchInput{QueueUrl: "q", Entries: []wire.ChangeMessageVisibilityBatchRequestEntry{
		{Id: "a", ReceiptHandle: "h", VisibilityTimeout: intp(60)},
	}}
	if !reflect.DeepEqual(cmv, wantCMV) {
		t.Errorf("ChangeMessageVisibilityBatch =\n%+v\nwant\n%+v", cmv, wantCMV)
	}

	tags := decode("TagQueue", seedTag).(*wire.TagQueueInput)
	if want := map[string]string{"k": "", "k2": "v"}; !reflect.DeepEqual(tags.Tags, want) {
		t.Errorf("TagQueue tags = %v, want %v", tags.Tags, want)
	}
	perm := decode("AddPermission", seedAddPermission).(*wire.AddPermissionInput)
	wantPerm := &wire.AddPermissionInput{QueueUrl: "q", Label: "one",
		AWSAccountIds: []string{"111111111111", "222222222222"}, Actions: []string{"SendMessage", "*"}}
	if !reflect.DeepEqual(perm, wantPerm) {
		t.Errorf("AddPermission = %+v, want %+v", perm, wantPerm)
	}
	untag := decode("UntagQueue", seedUntag).(*wire.UntagQueueInput)
	if want := []string{"k", "k2"}; !reflect.DeepEqual(untag.TagKeys, want) {
		t.Errorf("UntagQueue keys = %v, want %v", untag.TagKeys, want)
	}
}
