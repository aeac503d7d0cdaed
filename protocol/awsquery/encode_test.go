package awsquery_test

import (
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/baton-sqs/baton/protocol/awsquery"
	"github.com/baton-sqs/baton/protocol/protocoltest"
	"github.com/baton-sqs/baton/protocol/wire"
)

// TestWriteResultBytes pins the XML of the hot actions' answers byte for
// byte, escapes, maps in key order, lists, empty results and actions
// without output included, with the Content-Length of the document.
func TestWriteResultBytes(t *testing.T) {
	t.Parallel()
	ops := protocoltest.Table()
	const id = "00000000-0000-4000-8000-000000000000"
	for _, tt := range []struct {
		op   string
		out  any
		want string
	}{
		{"ReceiveMessage", &wire.ReceiveMessageOutput{Messages: []wire.Message{{
			MessageId: "m-1", ReceiptHandle: "r/1+", MD5OfBody: "d41d8cd98f00b204e9800998ecf8427e",
			Body:                   "<a href=\"x\">&amp;</a>\r\n\t' é",
			Attributes:             map[string]string{"SentTimestamp": "1", "ApproximateReceiveCount": "2"},
			MD5OfMessageAttributes: "0123",
			MessageAttributes: map[string]wire.MessageAttributeValue{
				"z": {DataType: "Binary", BinaryValue: []byte{0, 1, 254, 255}},
				"a": {DataType: "String.x", StringValue: "v<"},
			},
		}, {MessageId: "m-2", ReceiptHandle: "r2", MD5OfBody: "00", Body: "plain"}}},
			`<?xml version="1.0"?><ReceiveMessageResponse xmlns="http://queue.amazonaws.com/doc/2012-11-05/"><ReceiveMessageResult>` +
				`<Message><MessageId>m-1</MessageId><ReceiptHandle>r/1+</ReceiptHandle><MD5OfBody>d41d8cd98f00b204e9800998ecf8427e</MD5OfBody>` +
				`<Body>&lt;a href=&quot;x&quot;&gt;&amp;amp;&lt;/a&gt;&#xD;` + "\n\t' é</Body>" +
				`<Attribute><Name>ApproximateReceiveCount</Name><Value>2</Value></Attribute><Attribute><Name>SentTimestamp</Name><Value>1</Value></Attribute>` +
				`<MD5OfMessageAttributes>0123</MD5OfMessageAttributes>` +
				`<MessageAttribute><Name>a</Name><Value><StringValue>v&lt;</StringValue><DataType>String.x</DataType></Value></MessageAttribute>` +
				`<MessageAttribute><Name>z</Name><Value><BinaryValue>AAH+/w==</BinaryValue><DataType>Binary</DataType></Value></MessageAttribute></Message>` +
				`<Message><MessageId>m-2</MessageId><ReceiptHandle>r2</ReceiptHandle><MD5OfBody>00</MD5OfBody><Body>plain</Body></Message>` +
				`</ReceiveMessageResult><ResponseMetadata><RequestId>` + id + `</RequestId></ResponseMetadata></ReceiveMessageResponse>`},
		{"ReceiveMessage", &wire.ReceiveMessageOutput{},
			`<?xml version="1.0"?><ReceiveMessageResponse xmlns="http://queue.amazonaws.com/doc/2012-11-05/"><ReceiveMessageResult/>` +
				`<ResponseMetadata><RequestId>` + id + `</RequestId></ResponseMetadata></ReceiveMessageResponse>`},
		{"SendMessageBatch", &wire.SendMessageBatchOutput{
			Successful: []wire.SendMessageBatchResultEntry{{Id: "0", MessageId: "m", MD5OfMessageBody: "b", SequenceNumber: "7"}},
			Failed:     []wire.BatchResultErrorEntry{{Id: "1", SenderFault: true, Code: "InvalidMessageContents", Message: "bad & wrong"}},
		},
			`<?xml version="1.0"?><SendMessageBatchResponse xmlns="http://queue.amazonaws.com/doc/2012-11-05/"><SendMessageBatchResult>` +
				`<SendMessageBatchResultEntry><Id>0</Id><MessageId>m</MessageId><MD5OfMessageBody>b</MD5OfMessageBody><SequenceNumber>7</SequenceNumber></SendMessageBatchResultEntry>` +
				`<BatchResultErrorEntry><Id>1</Id><SenderFault>true</SenderFault><Code>InvalidMessageContents</Code><Message>bad &amp; wrong</Message></BatchResultErrorEntry>` +
				`</SendMessageBatchResult><ResponseMetadata><RequestId>` + id + `</RequestId></ResponseMetadata></SendMessageBatchResponse>`},
		{"DeleteMessageBatch", &wire.DeleteMessageBatchOutput{Successful: []wire.BatchResultEntry{{Id: "a"}, {Id: "b"}}},
			`<?xml version="1.0"?><DeleteMessageBatchResponse xmlns="http://queue.amazonaws.com/doc/2012-11-05/"><DeleteMessageBatchResult>` +
				`<DeleteMessageBatchResultEntry><Id>a</Id></DeleteMessageBatchResultEntry><DeleteMessageBatchResultEntry><Id>b</Id></DeleteMessageBatchResultEntry>` +
				`</DeleteMessageBatchResult><ResponseMetadata><RequestId>` + id + `</RequestId></ResponseMetadata></DeleteMessageBatchResponse>`},
		{"DeleteMessage", nil,
			`<?xml version="1.0"?><DeleteMessageResponse xmlns="http://queue.amazonaws.com/doc/2012-11-05/">` +
				`<ResponseMetadata><RequestId>` + id + `</RequestId></ResponseMetadata></DeleteMessageResponse>`},
	} {
		for range 2 { // the second time with a reused buffer
			w := httptest.NewRecorder()
			awsquery.WriteResult(w, ops[tt.op], tt.out, id)
			if got := w.Body.String(); got != tt.want {
				t.Errorf("%s:\n got %s\nwant %s", tt.op, got, tt.want)
			}
			if got, want := w.Header().Get("Content-Length"), strconv.Itoa(len(tt.want)); got != want {
				t.Errorf("%s: Content-Length %q, want %s", tt.op, got, want)
			}
			if got := w.Header().Get("Content-Type"); got != "text/xml" {
				t.Errorf("%s: Content-Type %q, want text/xml", tt.op, got)
			}
		}
	}
}
