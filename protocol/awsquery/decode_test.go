package awsquery_test

import (
	"errors"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/protocol/awsquery"
	"github.com/baton-sqs/baton/protocol/protocoltest"
	"github.com/baton-sqs/baton/protocol/wire"
)

// TestDecodeRefusesMisnumberedItems checks that a flattened list or map
// whose items are not numbered 1, 2, 3, … is refused with an
// InvalidParameterValue naming the parameter. Decode used to read the items
// before the first gap and drop the rest without a word, so a batch of
// Entry.1 and Entry.3 sent one message and answered 200. Every SDK numbers
// items from 1 without gaps (the Query protocol's flattened list and map
// serialization), so no client's request is refused.
func TestDecodeRefusesMisnumberedItems(t *testing.T) {
	t.Parallel()
	ops := protocoltest.Table()
	for _, tc := range []struct {
		name, op, form string
		param          string // the parameter the message must name
	}{
		{"list gap", "SendMessageBatch",
			"QueueUrl=q&SendMessageBatchRequestEntry.1.Id=a&SendMessageBatchRequestEntry.1.MessageBody=x&SendMessageBatchRequestEntry.3.Id=c&SendMessageBatchRequestEntry.3.MessageBody=z",
			"SendMessageBatchRequestEntry.2"},
		{"list from 2", "DeleteMessageBatch", "QueueUrl=q&DeleteMessageBatchRequestEntry.2.Id=b&DeleteMessageBatchRequestEntry.2.ReceiptHandle=h",
			"DeleteMessageBatchRequestEntry.1"},
		{"list item 0", "ChangeMessageVisibilityBatch",
			"QueueUrl=q&ChangeMessageVisibilityBatchRequestEntry.0.Id=z&ChangeMessageVisibilityBatchRequestEntry.1.Id=a&ChangeMessageVisibilityBatchRequestEntry.1.ReceiptHandle=h",
			"ChangeMessageVisibilityBatchRequestEntry.0"},
		{"leading zero", "GetQueueAttributes", "QueueUrl=q&AttributeName.1=All&AttributeName.02=Policy", "AttributeName.02"},
		{"scalar list gap", "GetQueueAttributes", "QueueUrl=q&AttributeName.1=All&AttributeName.3=Policy", "AttributeName.2"},
		{"map gap", "SetQueueAttributes", "QueueUrl=q&Attribute.1.Name=DelaySeconds&Attribute.1.Value=1&Attribute.3.Name=VisibilityTimeout&Attribute.3.Value=5",
			"Attribute.2"},
		{"map item 0", "TagQueue", "QueueUrl=q&Tag.0.Key=a&Tag.0.Value=b", "Tag.0"},
		{"map entry without key", "CreateQueue", "QueueName=q&Attribute.1.Name=DelaySeconds&Attribute.1.Value=1&Attribute.2.Value=5",
			"Attribute.2.Name"},
		{"nested gap", "SendMessageBatch",
			"QueueUrl=q&SendMessageBatchRequestEntry.1.Id=a&SendMessageBatchRequestEntry.1.MessageBody=x" +
				"&SendMessageBatchRequestEntry.1.MessageAttribute.1.Name=A&SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.DataType=String&SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.StringValue=1" +
				"&SendMessageBatchRequestEntry.1.MessageAttribute.4.Name=B&SendMessageBatchRequestEntry.1.MessageAttribute.4.Value.DataType=String&SendMessageBatchRequestEntry.1.MessageAttribute.4.Value.StringValue=4",
			"SendMessageBatchRequestEntry.1.MessageAttribute.2"},
		{"string list value gap", "SendMessage",
			"QueueUrl=q&MessageBody=x&MessageAttribute.1.Name=L&MessageAttribute.1.Value.DataType=String&MessageAttribute.1.Value.StringListValue.2=b",
			"MessageAttribute.1.Value.StringListValue.1"},
		{"item number past the bound", "UntagQueue", "QueueUrl=q&TagKey.1=a&TagKey.12345678901=b", "TagKey.12345678901"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			form, err := url.ParseQuery(tc.form)
			if err != nil {
				t.Fatal(err)
			}
			in, err := awsquery.Decode(form, ops[tc.op])
			var e *baton.Error
			if !errors.As(err, &e) || e.Code != baton.ErrInvalidParameterValue {
				t.Fatalf("Decode = %+v, %v; want an InvalidParameterValue error", in, err)
			}
			if !strings.Contains(e.Message, tc.param) {
				t.Errorf("message %q does not name %s", e.Message, tc.param)
			}
			// The same request always gets the same message.
			for range 5 {
				if _, again := awsquery.Decode(form, ops[tc.op]); again.Error() != err.Error() {
					t.Fatalf("message changed: %q, then %q", err, again)
				}
			}
		})
	}
}

// TestDecodeReadsEveryItem checks that items numbered 1 to n are all read,
// in order, whatever order the form lists them in, and that a list past the
// old bound of 1000 items is refused rather than cut short.
func TestDecodeReadsEveryItem(t *testing.T) {
	t.Parallel()
	ops := protocoltest.Table()
	form, err := url.ParseQuery("QueueUrl=q&TagKey.3=c&TagKey.1=a&TagKey.2=b&TagKey.10=j&TagKey.4=d&TagKey.5=e&TagKey.6=f&TagKey.7=g&TagKey.8=h&TagKey.9=i")
	if err != nil {
		t.Fatal(err)
	}
	in, err := awsquery.Decode(form, ops["UntagQueue"])
	if err != nil {
		t.Fatal(err)
	}
	if got, want := in.(*wire.UntagQueueInput).TagKeys, strings.Split("abcdefghij", ""); !reflect.DeepEqual(got, want) {
		t.Errorf("TagKeys = %q, want %q", got, want)
	}

	long := url.Values{"QueueUrl": {"q"}}
	for i := 1; i <= 1001; i++ {
		long.Set("TagKey."+strconv.Itoa(i), "k")
	}
	if _, err := awsquery.Decode(long, ops["UntagQueue"]); err == nil || !strings.Contains(err.Error(), "TagKey.1001") {
		t.Errorf("1001 tag keys: %v, want an error naming TagKey.1001", err)
	}
	long.Del("TagKey.1001")
	in, err = awsquery.Decode(long, ops["UntagQueue"])
	if err != nil || len(in.(*wire.UntagQueueInput).TagKeys) != 1000 {
		t.Errorf("1000 tag keys: %v", err)
	}
}
