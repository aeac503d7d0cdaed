package awsjson_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/protocol/awsjson"
	"github.com/baton-sqs/baton/protocol/protocoltest"
	"github.com/baton-sqs/baton/protocol/wire"
)

// Realistic JSON 1.0 request bodies, as aws-sdk-go-v2, botocore and JS v3
// send them (docs/sqs-behaviour.md §1.2), and some broken ones.
const (
	seedCreate = `{"QueueName":"orders","Attributes":{"VisibilityTimeout":"45","DelaySeconds":"5"},"tags":{"team":"core","env":""}}`
	seedSend   = `{"QueueUrl":"http://localhost:9324/000000000000/orders","MessageBody":"Hello, SQS!","DelaySeconds":0,` +
		`"MessageAttributes":{"ClientId":{"DataType":"String","StringValue":"c-42"},"Blob":{"DataType":"Binary","BinaryValue":"3q2+7w=="}},` +
		`"MessageSystemAttributes":{"AWSTraceHeader":{"DataType":"String","StringValue":"Root=1"}},"MessageGroupId":"g"}`
	seedReceive = `{"QueueUrl":"q","AttributeNames":["All"],"MessageSystemAttributeNames":["SentTimestamp"],` +
		`"MessageAttributeNames":[".*"],"MaxNumberOfMessages":10,"VisibilityTimeout":30,"WaitTimeSeconds":20,"ReceiveRequestAttemptId":"r"}`
	seedChangeBatch = `{"QueueUrl":"q","Entries":[{"Id":"a","ReceiptHandle":"h","VisibilityTimeout":60},{"Id":"b","ReceiptHandle":"h2"}]}`
)

var jsonSeeds = []string{
	"",
	"{}",
	"  \n{}\n",
	seedCreate,
	`{"QueueName":"orders","QueueOwnerAWSAccountId":"000000000000"}`,
	`{"QueueNamePrefix":"a","MaxResults":10,"NextToken":"YTE"}`,
	`{"QueueUrl":"q","AttributeNames":["All"]}`,
	`{"QueueUrl":"q","Attributes":{"Policy":"{\"Version\":\"2012-10-17\"}"}}`,
	seedSend,
	`{"QueueUrl":"q","Entries":[{"Id":"a","MessageBody":"one","DelaySeconds":5,"MessageAttributes":{"Foo":{"DataType":"String","StringValue":"Bar","StringListValues":["x"],"BinaryListValues":["AA=="]}}}]}`,
	seedReceive,
	`{"QueueUrl":"q","ReceiptHandle":"AQAAAAAAAAE"}`,
	`{"QueueUrl":"q","Entries":[{"Id":"a","ReceiptHandle":"h"}]}`,
	`{"QueueUrl":"q","ReceiptHandle":"h","VisibilityTimeout":0}`,
	seedChangeBatch,
	`{"QueueUrl":"q","Tags":{"k":"v"}}`,
	`{"QueueUrl":"q","TagKeys":["k","k2"]}`,
	`{"QueueUrl":"q","MaxResults":1,"NextToken":"YQ"}`,
	`{"SourceArn":"arn:aws:sqs:us-east-1:000000000000:dlq","DestinationArn":"arn:aws:sqs:us-east-1:000000000000:src","MaxNumberOfMessagesPerSecond":50}`,
	`{"TaskHandle":"eyJ0YXNrSWQiOiJ4In0="}`,
	`{"SourceArn":"arn:aws:sqs:us-east-1:000000000000:dlq","MaxResults":10}`,
	`{"QueueUrl":"q","Label":"one","AWSAccountIds":["111111111111"],"Actions":["SendMessage","*"]}`,
	`{"QueueUrl":"q","Label":"one"}`,
	// Broken: wrong types, bad base64, overflow, truncation, not an object.
	`{"MaxNumberOfMessages":"10"}`,
	`{"DelaySeconds":1e99,"VisibilityTimeout":-1.5}`,
	`{"MessageAttributes":{"b":{"DataType":"Binary","BinaryValue":"not*base64"}}}`,
	`{"Entries":{"Id":"a"}}`,
	`{"QueueUrl":null,"Entries":[null,{}],"Attributes":null}`,
	`{"QueueUrl":"q"`,
	`[1,2,3]`,
	`"just a string"`,
	`null`,
	`{"QueueUrl":"q"} trailing`,
	"{\"MessageBody\":\"\xff\xfe\"}",
}

// FuzzDecode decodes random bodies for every operation. Decoding must never
// panic; a failure must be a SerializationException *baton.Error; a success
// must be the operation's input type.
func FuzzDecode(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add([]byte(s))
	}
	ops := protocoltest.Table()
	f.Fuzz(func(t *testing.T, body []byte) {
		for name, op := range ops {
			in, err := awsjson.Decode(body, op)
			if err != nil {
				var e *baton.Error
				if !errors.As(err, &e) || e.Code != baton.ErrSerialization {
					t.Fatalf("%s: Decode(%q) error = %#v, want a SerializationException *baton.Error", name, body, err)
				}
				if e.Message == "" {
					t.Errorf("%s: Decode(%q): empty error message", name, body)
				}
				if in != nil {
					t.Errorf("%s: Decode(%q) returned %v with an error, want nil", name, body, in)
				}
				continue
			}
			if got, want := reflect.TypeOf(in), reflect.TypeOf(op.NewInput()); got != want {
				t.Fatalf("%s: Decode(%q) = %v, want %v", name, body, got, want)
			}
			// Only valid JSON (or an empty body) decodes.
			if b := bytes.TrimSpace(body); len(b) > 0 && !json.Valid(b) {
				t.Errorf("%s: Decode accepted invalid JSON %q", name, body)
			}
		}
	})
}

// The seeds decode as a client means them; this pins the member names the
// fuzzer explores.
func TestFuzzSeedsDecode(t *testing.T) {
	t.Parallel()
	ops := protocoltest.Table()
	decode := func(op, body string) any {
		t.Helper()
		in, err := awsjson.Decode([]byte(body), ops[op])
		if err != nil {
			t.Fatalf("%s: Decode(%s): %v", op, body, err)
		}
		return in
	}
	intp := func(n int) *int { return &n }
	strp := func(s string) *string { return &s }

	create := decode("CreateQueue", seedCreate).(*wire.CreateQueueInput)
	wantCreate := &wire.CreateQueueInput{
		QueueName:  "orders",
		Attributes: map[string]string{"VisibilityTimeout": "45", "DelaySeconds": "5"},
		Tags:       map[string]string{"team": "core", "env": ""},
	}
	if !reflect.DeepEqual(create, wantCreate) {
		t.Errorf("CreateQueue = %+v, want %+v (tags are lower-case \"tags\")", create, wantCreate)
	}

	send := decode("SendMessage", seedSend).(*wire.SendMessageInput)
	wantSend := &wire.SendMessageInput{
		QueueUrl: "http://localhost:9324/000000000000/orders", MessageBody: "Hello, SQS!", DelaySeconds: intp(0),
		MessageAttributes: map[string]wire.MessageAttributeValue{
			"ClientId": {DataType: "String", StringValue: "c-42"},
			"Blob":     {DataType: "Binary", BinaryValue: []byte{0xde, 0xad, 0xbe, 0xef}},
		},
		MessageSystemAttributes: map[string]wire.MessageAttributeValue{
			"AWSTraceHeader": {DataType: "String", StringValue: "Root=1"},
		},
		MessageGroupId: strp("g"),
	}
	if !reflect.DeepEqual(send, wantSend) {
		t.Errorf("SendMessage =\n%+v\nwant\n%+v", send, wantSend)
	}

	recv := decode("ReceiveMessage", seedReceive).(*wire.ReceiveMessageInput)
	wantRecv := &wire.ReceiveMessageInput{
		QueueUrl: "q", AttributeNames: []string{"All"}, MessageSystemAttributeNames: []string{"SentTimestamp"},
		MessageAttributeNames: []string{".*"}, MaxNumberOfMessages: intp(10), VisibilityTimeout: intp(30),
		WaitTimeSeconds: intp(20), ReceiveRequestAttemptId: "r",
	}
	if !reflect.DeepEqual(recv, wantRecv) {
		t.Errorf("ReceiveMessage =\n%+v\nwant\n%+v", recv, wantRecv)
	}

	// An absent VisibilityTimeout stays nil, apart from an explicit 0.
	cmv := decode("ChangeMessageVisibilityBatch", seedChangeBatch).(*wire.ChangeMessageVisibilityBatchInput)
	wantCMV := &wire.ChangeMessageVisibilityBatchInput{QueueUrl: "q", Entries: []wire.ChangeMessageVisibilityBatchRequestEntry{
		{Id: "a", ReceiptHandle: "h", VisibilityTimeout: intp(60)},
		{Id: "b", ReceiptHandle: "h2"},
	}}
	if !reflect.DeepEqual(cmv, wantCMV) {
		t.Errorf("ChangeMessageVisibilityBatch =\n%+v\nwant\n%+v", cmv, wantCMV)
	}
}
