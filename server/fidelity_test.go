package server_test

import (
	"encoding/binary"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/baton-sqs/baton/internal/testutil"
)

// These tests pin answers Amazon SQS gives that Baton gave otherwise
// once, over both wire protocols where the protocol matters.

// TestBooleanAttributesAnyCase: SQS reads a boolean attribute in any case
// (CloudFormation and the CDK send FifoQueue "True") and reports it back
// in lower case, as GetQueueAttributes always writes booleans (CreateQueue
// API reference: "Valid values: true, false").
func TestBooleanAttributesAnyCase(t *testing.T) { onEveryStore(t, booleanAttributesAnyCase) }

func booleanAttributesAnyCase(t *testing.T, srv *testutil.Server) {
	c := srv.Client
	for i, v := range []string{"True", "TRUE", "tRuE"} {
		name := []string{"a.fifo", "b.fifo", "c.fifo"}[i]
		url := srv.MustCreateQueue(t, name, map[string]string{
			"FifoQueue": v, "ContentBasedDeduplication": v, "SqsManagedSseEnabled": v,
		})
		out, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
			QueueUrl: &url, AttributeNames: []types.QueueAttributeName{"All"},
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{"FifoQueue", "ContentBasedDeduplication", "SqsManagedSseEnabled"} {
			if got := out.Attributes[n]; got != "true" {
				t.Errorf("FifoQueue=%s: %s = %q, want true", v, n, got)
			}
		}
		// The same request again is the same queue, not a conflict.
		if _, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name),
			Attributes: map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": v}}); err != nil {
			t.Errorf("re-create %s: %v", name, err)
		}
	}
	url := srv.MustCreateQueue(t, "d.fifo", map[string]string{"FifoQueue": "true"})
	if _, err := c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: &url,
		Attributes: map[string]string{"ContentBasedDeduplication": "TRUE", "SqsManagedSseEnabled": "False"}}); err != nil {
		t.Fatal(err)
	}
	out, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &url,
		AttributeNames: []types.QueueAttributeName{"ContentBasedDeduplication", "SqsManagedSseEnabled"}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Attributes["ContentBasedDeduplication"] != "true" || out.Attributes["SqsManagedSseEnabled"] != "false" {
		t.Errorf("after set: %v, want ContentBasedDeduplication true, SqsManagedSseEnabled false", out.Attributes)
	}
	// Still not a boolean: refused as before.
	_, err = c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("e.fifo"), Attributes: map[string]string{"FifoQueue": "yes"}})
	wantAPIError(t, err, "InvalidParameterValue", http.StatusBadRequest)

	// The Query protocol carries the same strings.
	q := newQueryClient(t)
	qurl := q.createQueue("q.fifo", "Attribute.1.Name", "FifoQueue", "Attribute.1.Value", "True")
	if got := q.attributes(qurl, "FifoQueue")["FifoQueue"]; got != "true" {
		t.Errorf("Query: FifoQueue = %q, want true", got)
	}
}

// TestReceiveAttributeNamePatterns replays a receive AWS answered (recorded
// against SQS in LocalStack's test_receive_message_message_attribute_names_
// filters snapshot, whose digests these are): "All", ".*" and "*" return
// every attribute, "Hel.*" every name starting with "Hel" (Help.Me and
// Hello, not General), names that no attribute has, even ones no attribute
// may have, nothing. The ReceiveMessage API reference: "return all of the
// attributes by specifying All or .* … all message attributes starting
// with a prefix, for example bar.*".
func TestReceiveAttributeNamePatterns(t *testing.T) { onEveryStore(t, receiveAttributeNamePatterns) }

func receiveAttributeNamePatterns(t *testing.T, srv *testutil.Server) {
	c := srv.Client
	url := srv.MustCreateQueue(t, "patterns", map[string]string{"VisibilityTimeout": "0"})
	sent, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("msg"),
		MessageAttributes: map[string]types.MessageAttributeValue{
			"Help.Me": strAttr("Me"), "Hello": strAttr("There"), "General": strAttr("Kenobi"),
		}})
	if err != nil {
		t.Fatal(err)
	}
	const all = "4c360f3fdafd970e05fae2f149d997f5"
	if got := aws.ToString(sent.MD5OfMessageAttributes); got != all {
		t.Fatalf("MD5OfMessageAttributes = %s, want %s", got, all)
	}
	tests := []struct {
		names []string
		want  []string
		md5   string
	}{
		{nil, nil, ""},
		{[]string{"All"}, []string{"General", "Hello", "Help.Me"}, all},
		{[]string{"*"}, []string{"General", "Hello", "Help.Me"}, all},
		{[]string{".*"}, []string{"General", "Hello", "Help.Me"}, all},
		{[]string{"Foo", "Help"}, nil, ""},
		{[]string{"Hello", "General"}, []string{"General", "Hello"}, "fca026605781cb4126a1e9044df24232"},
		{[]string{"Foo", "Hello"}, []string{"Hello"}, "a311262e065454b75da111d535b8dacd"},
		{[]string{"Hel.*"}, []string{"Hello", "Help.Me"}, "83fee93c1bcd8b9a5a923ffacdc636c7"},
		{[]string{"AWS."}, nil, ""},
		{[]string{"..foo"}, nil, ""},
	}
	q := queryClient{tb: t, srv: srv}
	for _, tt := range tests {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, MessageAttributeNames: tt.names})
		if err != nil {
			t.Fatalf("%v: %v", tt.names, err)
		}
		if len(out.Messages) != 1 {
			t.Fatalf("%v: %d messages, want 1", tt.names, len(out.Messages))
		}
		m := out.Messages[0]
		if got := keys(m.MessageAttributes); !equalStrings(got, tt.want) {
			t.Errorf("%v: attributes %v, want %v", tt.names, got, tt.want)
		}
		if got := aws.ToString(m.MD5OfMessageAttributes); got != tt.md5 {
			t.Errorf("%v: MD5OfMessageAttributes %q, want %q", tt.names, got, tt.md5)
		}

		kv := []string{}
		for i, n := range tt.names {
			kv = append(kv, "MessageAttributeName."+strconv.Itoa(i+1), n)
		}
		msgs := q.receive(url, kv...)
		if len(msgs) != 1 {
			t.Fatalf("Query %v: %d messages, want 1", tt.names, len(msgs))
		}
		var got []string
		for _, a := range msgs[0].all("MessageAttribute") {
			got = append(got, a.child(t, "Name").Text)
		}
		if !equalStrings(got, tt.want) {
			t.Errorf("Query %v: attributes %v, want %v", tt.names, got, tt.want)
		}
		var md5 string
		if d := msgs[0].all("MD5OfMessageAttributes"); len(d) == 1 {
			md5 = d[0].Text
		}
		if md5 != tt.md5 {
			t.Errorf("Query %v: MD5OfMessageAttributes %q, want %q", tt.names, md5, tt.md5)
		}
	}
}

// stringAttrDigest is SQS's MD5OfMessageAttributes of one String attribute,
// written out from the developer guide ("Calculating the MD5 message digest
// for message attributes"): the name, data type and value each as a 4-byte
// big-endian length and its UTF-8 bytes, a 1 before the value.
func stringAttrDigest(name, value string) string {
	var b []byte
	put := func(s string) {
		b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
		b = append(b, s...)
	}
	put(name)
	put("String")
	b = append(b, 1)
	put(value)
	return md5hex(string(b))
}

// TestAttributeNamesAnyScript: SQS takes letters and digits of any script
// in a message attribute name (the API reference says "alphanumeric"; AWS
// accepts "attr.1øßä", recorded in LocalStack's validated test_send_message_
// with_invalid_string_attributes), counts the 256-character limit in
// characters, and keeps its other rules. The digest covers the name's
// UTF-8 bytes.
func TestAttributeNamesAnyScript(t *testing.T) { onEveryStore(t, attributeNamesAnyScript) }

func attributeNamesAnyScript(t *testing.T, srv *testutil.Server) {
	c := srv.Client
	url := srv.MustCreateQueue(t, "names", nil)
	const name = "attr.1øßä"
	want := stringAttrDigest(name, "Valida")
	out, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("test"),
		MessageAttributes: map[string]types.MessageAttributeValue{name: strAttr("Valida")}})
	if err != nil {
		t.Fatal(err)
	}
	if got := aws.ToString(out.MD5OfMessageAttributes); got != want {
		t.Errorf("MD5OfMessageAttributes = %s, want %s", got, want)
	}
	got, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, MessageAttributeNames: []string{"attr.*"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Messages) != 1 || aws.ToString(got.Messages[0].MessageAttributes[name].StringValue) != "Valida" ||
		aws.ToString(got.Messages[0].MD5OfMessageAttributes) != want {
		t.Errorf("received %+v, want the attribute %s back with digest %s", got.Messages, name, want)
	}

	long := strings.Repeat("ü", 256) // 512 bytes, 256 characters
	for _, tt := range []struct {
		name string
		ok   bool
	}{
		{long, true},
		{"日本語_名前-1", true},
		{long + "ü", false},
		{"ø.", false},
		{".ø", false},
		{"ø..ß", false},
		{"AWS.ø", false},
		{"amazon.ø", false},
		{"ø ß", false},
		{"ø/ß", false},
	} {
		_, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("x"),
			MessageAttributes: map[string]types.MessageAttributeValue{tt.name: strAttr("v")}})
		if tt.ok && err != nil {
			t.Errorf("name %q: %v", tt.name, err)
		}
		if !tt.ok {
			wantAPIError(t, err, "InvalidParameterValue", http.StatusBadRequest)
		}
	}

	// The Query protocol: the name as UTF-8 in the form.
	q := queryClient{tb: t, srv: srv}
	r := q.post("/", "Action", "SendMessage", "QueueUrl", url, "MessageBody", "test",
		"MessageAttribute.1.Name", name, "MessageAttribute.1.Value.DataType", "String",
		"MessageAttribute.1.Value.StringValue", "Valida")
	if got := r.result(t, "SendMessage").child(t, "MD5OfMessageAttributes").Text; got != want {
		t.Errorf("Query MD5OfMessageAttributes = %s, want %s", got, want)
	}
}

// TestEmptyGroupAndDeduplicationIDs: SQS refuses an empty MessageGroupId
// or MessageDeduplicationId as an invalid value ("1 to 128 in length", the
// SendMessage API reference), where it takes the parameter's absence. The
// JSON protocol tells "" from absent, and so does the Query protocol
// (MessageGroupId= against no MessageGroupId at all).
func TestEmptyGroupAndDeduplicationIDs(t *testing.T) { onEveryStore(t, emptyGroupAndDeduplicationIDs) }

func emptyGroupAndDeduplicationIDs(t *testing.T, srv *testutil.Server) {
	c := srv.Client
	fifo := srv.MustCreateQueue(t, "ids.fifo", map[string]string{"FifoQueue": "true"})
	cbd := srv.MustCreateQueue(t, "cbd.fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"})
	std := srv.MustCreateQueue(t, "ids", nil)
	const (
		badGroup = "Value  for parameter MessageGroupId is invalid. Reason: MessageGroupId can only include alphanumeric and punctuation characters. 1 to 128 in length."
		badDedup = "Value  for parameter MessageDeduplicationId is invalid. Reason: MessageDeduplicationId can only include alphanumeric and punctuation characters. 1 to 128 in length."
	)
	empty := aws.String("")
	tests := []struct {
		name         string
		url          string
		group, dedup *string
		message      string
	}{
		{"fifo empty group", fifo, empty, aws.String("d"), badGroup},
		{"fifo empty dedup", fifo, aws.String("g"), empty, badDedup},
		{"content-based empty dedup", cbd, aws.String("g"), empty, badDedup},
		{"standard empty group", std, empty, nil, badGroup},
		// AWS's wording, "include" and all: a live answer for a standard
		// queue (docs/sqs-behaviour.md §6.2).
		{"standard empty dedup", std, nil, empty,
			"Value  for parameter MessageDeduplicationId is invalid. Reason: The request include parameter that is not valid for this queue type."},
		{"standard dedup", std, nil, aws.String("d1"),
			"Value d1 for parameter MessageDeduplicationId is invalid. Reason: The request include parameter that is not valid for this queue type."},
	}
	q := queryClient{tb: t, srv: srv}
	for _, tt := range tests {
		_, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &tt.url, MessageBody: aws.String("x"),
			MessageGroupId: tt.group, MessageDeduplicationId: tt.dedup})
		wantAPIError(t, err, "InvalidParameterValue", http.StatusBadRequest)
		var ae interface{ ErrorMessage() string }
		if errors.As(err, &ae) && ae.ErrorMessage() != tt.message {
			t.Errorf("%s: message %q, want %q", tt.name, ae.ErrorMessage(), tt.message)
		}

		// In a batch the entry fails alone.
		out, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: &tt.url, Entries: []types.SendMessageBatchRequestEntry{
			{Id: aws.String("bad"), MessageBody: aws.String("x"), MessageGroupId: tt.group, MessageDeduplicationId: tt.dedup},
			{Id: aws.String("good"), MessageBody: aws.String("y"), MessageGroupId: aws.String("g"), MessageDeduplicationId: dedupFor(tt.url != std)},
		}})
		if err != nil {
			t.Fatalf("%s: batch: %v", tt.name, err)
		}
		if len(out.Successful) != 1 || aws.ToString(out.Successful[0].Id) != "good" || len(out.Failed) != 1 ||
			aws.ToString(out.Failed[0].Id) != "bad" || aws.ToString(out.Failed[0].Code) != "InvalidParameterValue" ||
			aws.ToString(out.Failed[0].Message) != tt.message || !out.Failed[0].SenderFault {
			t.Errorf("%s: batch = %+v / %+v, want good sent and bad failed with %q", tt.name, out.Successful, out.Failed, tt.message)
		}

		// The Query protocol, present but empty.
		kv := []string{"Action", "SendMessage", "QueueUrl", tt.url, "MessageBody", "x"}
		bkv := []string{"Action", "SendMessageBatch", "QueueUrl", tt.url,
			"SendMessageBatchRequestEntry.1.Id", "bad", "SendMessageBatchRequestEntry.1.MessageBody", "x"}
		if tt.group != nil {
			kv = append(kv, "MessageGroupId", *tt.group)
			bkv = append(bkv, "SendMessageBatchRequestEntry.1.MessageGroupId", *tt.group)
		}
		if tt.dedup != nil {
			kv = append(kv, "MessageDeduplicationId", *tt.dedup)
			bkv = append(bkv, "SendMessageBatchRequestEntry.1.MessageDeduplicationId", *tt.dedup)
		}
		q.post("/", kv...).failWith(t, http.StatusBadRequest, "InvalidParameterValue", tt.message)
		res := q.post("/", bkv...).result(t, "SendMessageBatch")
		failed := res.all("BatchResultErrorEntry")
		if len(failed) != 1 || len(res.all("SendMessageBatchResultEntry")) != 0 {
			t.Fatalf("%s: Query batch = %s, want the entry failed", tt.name, q.post("/", bkv...))
		}
		if f := failed[0].leaves(t); f["Id"] != "bad" || f["Code"] != "InvalidParameterValue" || f["Message"] != tt.message {
			t.Errorf("%s: Query batch failure = %v, want %q", tt.name, f, tt.message)
		}
	}

	// Absent, not empty, is still what it was: a missing group on a FIFO
	// queue, a body-derived deduplication id on a content-based one.
	_, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &fifo, MessageBody: aws.String("x"), MessageDeduplicationId: aws.String("d")})
	wantAPIError(t, err, "MissingParameter", http.StatusBadRequest)
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &cbd, MessageBody: aws.String("x"), MessageGroupId: aws.String("g")}); err != nil {
		t.Errorf("content-based send without a deduplication id: %v", err)
	}
	q.post("/", "Action", "SendMessage", "QueueUrl", cbd, "MessageBody", "x", "MessageGroupId", "g").result(t, "SendMessage")
}

// dedupFor returns a deduplication id for a FIFO queue's message, none for
// a standard queue's.
func dedupFor(fifo bool) *string {
	if fifo {
		return aws.String("good")
	}
	return nil
}

// TestRedrivePolicyToItself: SQS takes a RedrivePolicy whose
// deadLetterTargetArn is the queue's own ARN, and a
// RedrivePolicy or RedriveAllowPolicy set to "" removes it (SetQueueAttributes
// API reference). What SQS then does with a message past maxReceiveCount is
// not documented; Baton keeps delivering it rather than hide it.
func TestRedrivePolicyToItself(t *testing.T) { onEveryStore(t, redrivePolicyToItself) }

func redrivePolicyToItself(t *testing.T, srv *testutil.Server) {
	c := srv.Client
	url := srv.MustCreateQueue(t, "selfie", map[string]string{"VisibilityTimeout": "0"})
	self := redrive("selfie", 1)
	if _, err := c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: &url, Attributes: self}); err != nil {
		t.Fatalf("RedrivePolicy to itself: %v", err)
	}
	want := `{"deadLetterTargetArn":"` + arnPrefix + `selfie","maxReceiveCount":1}`
	got, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &url, AttributeNames: []types.QueueAttributeName{"RedrivePolicy"}})
	if err != nil || got.Attributes["RedrivePolicy"] != want {
		t.Fatalf("RedrivePolicy = %v, %v; want %s", got.Attributes, err, want)
	}
	// Creating it again with the same policy is the same queue.
	if _, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("selfie"), Attributes: self}); err != nil {
		t.Errorf("re-create with its own policy: %v", err)
	}
	mustSend(t, c, url, "m")
	for i := 1; i <= 3; i++ {
		if m := receiveOne(t, c, url, nil); m.Attributes["ApproximateReceiveCount"] != strconv.Itoa(i) {
			t.Errorf("receive %d: count %s", i, m.Attributes["ApproximateReceiveCount"])
		}
	}

	// "" removes either policy, through either protocol.
	if _, err := c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: &url,
		Attributes: map[string]string{"RedrivePolicy": "", "RedriveAllowPolicy": `{"redrivePermission":"denyAll"}`}}); err != nil {
		t.Fatal(err)
	}
	all := func() map[string]string {
		out, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &url, AttributeNames: []types.QueueAttributeName{"All"}})
		if err != nil {
			t.Fatal(err)
		}
		return out.Attributes
	}
	if a := all(); a["RedrivePolicy"] != "" || a["RedriveAllowPolicy"] == "" {
		t.Errorf("after RedrivePolicy \"\": %v, want no RedrivePolicy and the RedriveAllowPolicy", a)
	}
	if _, err := c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: &url,
		Attributes: map[string]string{"RedriveAllowPolicy": ""}}); err != nil {
		t.Fatal(err)
	}
	if a := all(); a["RedriveAllowPolicy"] != "" {
		t.Errorf("after RedriveAllowPolicy \"\": %v, want none", a)
	}
	q := queryClient{tb: t, srv: srv}
	q.post("/", "Action", "SetQueueAttributes", "QueueUrl", url,
		"Attribute.1.Name", "RedrivePolicy", "Attribute.1.Value", self["RedrivePolicy"]).noResult(t, "SetQueueAttributes")
	if a := q.attributes(url, "All"); a["RedrivePolicy"] != want {
		t.Errorf("Query: RedrivePolicy = %q, want %s", a["RedrivePolicy"], want)
	}
	q.post("/", "Action", "SetQueueAttributes", "QueueUrl", url,
		"Attribute.1.Name", "RedrivePolicy", "Attribute.1.Value", "").noResult(t, "SetQueueAttributes")
	if a := q.attributes(url, "All"); a["RedrivePolicy"] != "" {
		t.Errorf("Query: RedrivePolicy = %q after \"\", want none", a["RedrivePolicy"])
	}

	// A queue not yet created names a target that does not exist (what SQS
	// answers here is not known; this is Baton's answer as before).
	_, err = c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("unborn"), Attributes: redrive("unborn", 1)})
	wantAPIError(t, err, "InvalidParameterValue", http.StatusBadRequest)
}

// withTraceHeader sends the X-Amzn-Trace-Id HTTP header, as the X-Ray SDK
// does around an AWS SDK call.
func withTraceHeader(v string) func(*sqs.Options) {
	return func(o *sqs.Options) {
		o.APIOptions = append(o.APIOptions, smithyhttp.AddHeaderValue("X-Amzn-Trace-Id", v))
	}
}

// TestTraceHeaderBecomesAWSTraceHeader: the X-Amzn-Trace-Id header of a
// SendMessage or SendMessageBatch request is the trace header of every
// message it sends, and an AWSTraceHeader message system attribute
// overrides it ("If both … are set, the message system attribute
// overrides the HTTP trace header": AWS X-Ray developer guide, Amazon SQS
// and AWS X-Ray).
func TestTraceHeaderBecomesAWSTraceHeader(t *testing.T) {
	onEveryStore(t, traceHeaderBecomesAWSTraceHeader)
}

func traceHeaderBecomesAWSTraceHeader(t *testing.T, srv *testutil.Server) {
	c := srv.Client
	url := srv.MustCreateQueue(t, "traced", nil)
	const (
		header   = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
		explicit = "Root=1-67891233-abcdef012345678912345678;Parent=463ac35c9f6413ad;Sampled=0"
	)
	sysAttr := map[string]types.MessageSystemAttributeValue{
		"AWSTraceHeader": {DataType: aws.String("String"), StringValue: aws.String(explicit)},
	}
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("from-header")}, withTraceHeader(header)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("explicit"),
		MessageSystemAttributes: sysAttr}, withTraceHeader(header)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("untraced")}); err != nil {
		t.Fatal(err)
	}
	out, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: &url, Entries: []types.SendMessageBatchRequestEntry{
		{Id: aws.String("a"), MessageBody: aws.String("batch-header")},
		{Id: aws.String("b"), MessageBody: aws.String("batch-explicit"), MessageSystemAttributes: sysAttr},
	}}, withTraceHeader(header))
	if err != nil || len(out.Successful) != 2 {
		t.Fatalf("batch: %v, %+v", err, out)
	}
	want := map[string]string{
		"from-header": header, "explicit": explicit, "untraced": "", "batch-header": header, "batch-explicit": explicit,
	}
	got := map[string]string{}
	for len(got) < len(want) {
		r, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 10,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{"AWSTraceHeader"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Messages) == 0 {
			t.Fatalf("received %v, want %d messages", got, len(want))
		}
		for _, m := range r.Messages {
			got[*m.Body] = m.Attributes["AWSTraceHeader"]
		}
	}
	for body, w := range want {
		if got[body] != w {
			t.Errorf("%s: AWSTraceHeader = %q, want %q", body, got[body], w)
		}
	}
}

// TestAddPermissionOnlySharedActions: AddPermission grants only actions
// another account may invoke. The ones cross-account permissions do not
// apply to ("Limitations of Amazon SQS custom policies", Amazon SQS
// Developer Guide: AddPermission, CreateQueue, DeleteQueue, ListQueues,
// ListQueueTags, RemovePermission, SetQueueAttributes, TagQueue,
// UntagQueue and the message move task actions) are refused as only the
// owner's, and a name SQS has no action for as not in the WSDL.
func TestAddPermissionOnlySharedActions(t *testing.T) {
	onEveryStore(t, addPermissionOnlySharedActions)
}

func addPermissionOnlySharedActions(t *testing.T, srv *testutil.Server) {
	c := srv.Client
	url := srv.MustCreateQueue(t, "share", nil)
	owner := func(a string) string {
		return "Value SQS:" + a + " for parameter ActionName is invalid. Reason: Only the queue owner is allowed to invoke this action."
	}
	tests := []struct{ action, message string }{
		{"RemovePermission", owner("RemovePermission")},
		{"AddPermission", owner("AddPermission")},
		{"CreateQueue", owner("CreateQueue")},
		{"DeleteQueue", owner("DeleteQueue")},
		{"ListQueues", owner("ListQueues")},
		{"SetQueueAttributes", owner("SetQueueAttributes")},
		{"TagQueue", owner("TagQueue")},
		{"UntagQueue", owner("UntagQueue")},
		{"ListQueueTags", owner("ListQueueTags")},
		{"StartMessageMoveTask", owner("StartMessageMoveTask")},
		{"CancelMessageMoveTask", owner("CancelMessageMoveTask")},
		{"ListMessageMoveTasks", owner("ListMessageMoveTasks")},
		{"FlyAway", "Value SQS:FlyAway for parameter ActionName is invalid. Reason: Please refer to the appropriate WSDL for a list of valid actions."},
	}
	q := queryClient{tb: t, srv: srv}
	for _, tt := range tests {
		_, err := c.AddPermission(ctx, &sqs.AddPermissionInput{QueueUrl: &url, Label: aws.String("l"),
			AWSAccountIds: []string{"111111111111"}, Actions: []string{"SendMessage", tt.action}})
		wantAPIError(t, err, "InvalidParameterValue", http.StatusBadRequest)
		var ae interface{ ErrorMessage() string }
		if errors.As(err, &ae) && ae.ErrorMessage() != tt.message {
			t.Errorf("%s: message %q, want %q", tt.action, ae.ErrorMessage(), tt.message)
		}
		q.post("/", "Action", "AddPermission", "QueueUrl", url, "Label", "l", "AWSAccountId.1", "111111111111",
			"ActionName.1", tt.action).failWith(t, http.StatusBadRequest, "InvalidParameterValue", tt.message)
	}
	// Nothing was granted by the refused requests; the shareable ones are.
	shared := []string{"*", "SendMessage", "ReceiveMessage", "DeleteMessage", "ChangeMessageVisibility",
		"GetQueueAttributes", "GetQueueUrl", "ListDeadLetterSourceQueues", "PurgeQueue"}
	for i, a := range shared {
		if _, err := c.AddPermission(ctx, &sqs.AddPermissionInput{QueueUrl: &url, Label: aws.String("ok" + strconv.Itoa(i)),
			AWSAccountIds: []string{"111111111111"}, Actions: []string{a}}); err != nil {
			t.Errorf("AddPermission %s: %v", a, err)
		}
	}
	out, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &url, AttributeNames: []types.QueueAttributeName{"Policy"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Attributes["Policy"]; strings.Contains(got, `"Sid":"l"`) || strings.Count(got, `"Sid":"ok`) != len(shared) {
		t.Errorf("Policy = %s, want the %d shareable grants only", got, len(shared))
	}
}

// An oversized X-Amzn-Trace-Id is no X-Ray header: the send succeeds
// without a trace header rather than keep it with every message.
func TestOversizedTraceHeaderIgnored(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	url := srv.MustCreateQueue(t, "big-trace", nil)
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("x")},
		withTraceHeader("Root="+strings.Repeat("a", 10000))); err != nil {
		t.Fatal(err)
	}
	r, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{"AWSTraceHeader"}})
	if err != nil || len(r.Messages) != 1 {
		t.Fatalf("receive: %v, %+v", err, r)
	}
	if got, ok := r.Messages[0].Attributes["AWSTraceHeader"]; ok {
		t.Errorf("AWSTraceHeader = %d bytes, want none", len(got))
	}
}
