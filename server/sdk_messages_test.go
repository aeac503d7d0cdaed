package server_test

import (
	"crypto/md5"
	"encoding/hex"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/internal/testutil"
)

func strAttr(v string) types.MessageAttributeValue {
	return types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
}

func md5hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

func TestSendAndReceiveMessage(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	url := srv.MustCreateQueue(t, "send", nil)

	plain, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("Hello, SQS!")})
	if err != nil {
		t.Fatal(err)
	}
	if *plain.MD5OfMessageBody != "982e00ffc10ba49378a8653ca8fecf47" || plain.MD5OfMessageAttributes != nil || plain.MD5OfMessageSystemAttributes != nil || plain.SequenceNumber != nil {
		t.Errorf("plain send = body %v attrs %v sys %v seq %v, want only the body digest",
			*plain.MD5OfMessageBody, plain.MD5OfMessageAttributes, plain.MD5OfMessageSystemAttributes, plain.SequenceNumber)
	}
	srv.Clock.Advance(time.Millisecond)
	rich, err := c.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl:    &url,
		MessageBody: aws.String("with attributes ✓"),
		MessageAttributes: map[string]types.MessageAttributeValue{
			"ClientId": strAttr("c-42"),
			"Retries":  {DataType: aws.String("Number.int"), StringValue: aws.String("3")},
			"Blob":     {DataType: aws.String("Binary"), BinaryValue: []byte{0xde, 0xad, 0xbe, 0xef}},
		},
		MessageSystemAttributes: map[string]types.MessageSystemAttributeValue{
			"AWSTraceHeader": {DataType: aws.String("String"), StringValue: aws.String("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")},
		},
		MessageGroupId: aws.String("tenant-7"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := aws.ToString(rich.MD5OfMessageAttributes), "489ec3752a0fbb1b289096f88629b322"; got != want {
		t.Errorf("MD5OfMessageAttributes = %s, want %s", got, want)
	}
	if got, want := aws.ToString(rich.MD5OfMessageSystemAttributes), "5ae4d5d7636402d80f4eb6d213245a88"; got != want {
		t.Errorf("MD5OfMessageSystemAttributes = %s, want %s", got, want)
	}

	srv.Clock.Advance(time.Second)
	out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: &url, MaxNumberOfMessages: 10,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{"All"},
		MessageAttributeNames:       []string{"All"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) != 2 {
		t.Fatalf("received %d messages, want 2", len(out.Messages))
	}
	byID := map[string]types.Message{}
	for _, m := range out.Messages {
		byID[*m.MessageId] = m
		if *m.MD5OfBody != md5hex(*m.Body) {
			t.Errorf("MD5OfBody %s does not match body %q", *m.MD5OfBody, *m.Body)
		}
	}
	m := byID[*rich.MessageId]
	if *m.Body != "with attributes ✓" || *m.MD5OfMessageAttributes != "489ec3752a0fbb1b289096f88629b322" {
		t.Errorf("received body %q digest %v", *m.Body, m.MD5OfMessageAttributes)
	}
	if got := m.MessageAttributes["Blob"].BinaryValue; string(got) != "\xde\xad\xbe\xef" {
		t.Errorf("binary attribute = %x", got)
	}
	sent := strconv.FormatInt(testutil.Epoch.Add(time.Millisecond).UnixMilli(), 10)
	first := strconv.FormatInt(testutil.Epoch.Add(time.Millisecond+time.Second).UnixMilli(), 10)
	wantAttrs := map[string]string{
		"SenderId": "000000000000", "SentTimestamp": sent, "ApproximateReceiveCount": "1",
		"ApproximateFirstReceiveTimestamp": first, "MessageGroupId": "tenant-7",
		"AWSTraceHeader": "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1",
	}
	if !maps.Equal(m.Attributes, wantAttrs) {
		t.Errorf("system attributes = %v, want %v", m.Attributes, wantAttrs)
	}
	if p := byID[*plain.MessageId]; p.MessageAttributes != nil || p.MD5OfMessageAttributes != nil {
		t.Errorf("plain message came back with attributes %v / %v", p.MessageAttributes, p.MD5OfMessageAttributes)
	}
}

func TestReceiveSelectsAttributes(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	// The SDK leaves out VisibilityTimeout 0, so the queue's own is 0.
	url := srv.MustCreateQueue(t, "select", map[string]string{"VisibilityTimeout": "0"})
	_, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("b"),
		MessageAttributes: map[string]types.MessageAttributeValue{
			"Foo": strAttr("Bar"), "app.trace": strAttr("t1"), "app.user": strAttr("u1"), "other": strAttr("o"),
		}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		names     []string
		sys       []types.MessageSystemAttributeName
		wantAttrs []string
		wantSys   []string
		md5       string
	}{
		{names: nil, wantAttrs: nil},
		{names: []string{"Foo"}, wantAttrs: []string{"Foo"}, md5: "ae7155c6026991b6d54b11589678bf9c"},
		{names: []string{"app.*"}, wantAttrs: []string{"app.trace", "app.user"}},
		{names: []string{".*"}, wantAttrs: []string{"Foo", "app.trace", "app.user", "other"}},
		{names: []string{"Missing"}, wantAttrs: nil},
		{sys: []types.MessageSystemAttributeName{"ApproximateReceiveCount", "SenderId"}, wantSys: []string{"ApproximateReceiveCount", "SenderId"}},
	}
	for i, tt := range tests {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: &url, MessageAttributeNames: tt.names, MessageSystemAttributeNames: tt.sys,
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) != 1 {
			t.Fatalf("case %d: %d messages, want 1", i, len(out.Messages))
		}
		m := out.Messages[0]
		if got := keys(m.MessageAttributes); !equalStrings(got, tt.wantAttrs) {
			t.Errorf("case %d: attributes %v, want %v", i, got, tt.wantAttrs)
		}
		if (m.MD5OfMessageAttributes != nil) != (len(tt.wantAttrs) > 0) {
			t.Errorf("case %d: MD5OfMessageAttributes %v with %d attributes", i, m.MD5OfMessageAttributes, len(tt.wantAttrs))
		}
		if tt.md5 != "" && aws.ToString(m.MD5OfMessageAttributes) != tt.md5 {
			t.Errorf("case %d: MD5OfMessageAttributes %v, want %s (the returned subset)", i, aws.ToString(m.MD5OfMessageAttributes), tt.md5)
		}
		if got := keys(m.Attributes); !equalStrings(got, tt.wantSys) {
			t.Errorf("case %d: system attributes %v, want %v", i, got, tt.wantSys)
		}
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestSendMessageErrors(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	url := srv.MustCreateQueue(t, "small", map[string]string{"MaximumMessageSize": "1024"})
	elevenAttrs := map[string]types.MessageAttributeValue{}
	for i := range 11 {
		elevenAttrs["a"+strconv.Itoa(i)] = strAttr("v")
	}
	tests := []struct {
		name string
		in   sqs.SendMessageInput
		code string
	}{
		{"invalid character", sqs.SendMessageInput{MessageBody: aws.String("nul\x00")}, "InvalidMessageContents"},
		{"too large", sqs.SendMessageInput{MessageBody: aws.String(strings.Repeat("x", 1025))}, "InvalidParameterValue"},
		{"too large with attributes", sqs.SendMessageInput{MessageBody: aws.String(strings.Repeat("x", 1013)),
			MessageAttributes: map[string]types.MessageAttributeValue{"Foo": strAttr("Bar")}}, "InvalidParameterValue"},
		{"delay too long", sqs.SendMessageInput{MessageBody: aws.String("x"), DelaySeconds: 901}, "InvalidParameterValue"},
		{"eleven attributes", sqs.SendMessageInput{MessageBody: aws.String("x"), MessageAttributes: elevenAttrs}, "InvalidParameterValue"},
		{"reserved attribute name", sqs.SendMessageInput{MessageBody: aws.String("x"),
			MessageAttributes: map[string]types.MessageAttributeValue{"AWS.x": strAttr("v")}}, "InvalidParameterValue"},
		{"attribute name with double dot", sqs.SendMessageInput{MessageBody: aws.String("x"),
			MessageAttributes: map[string]types.MessageAttributeValue{"a..b": strAttr("v")}}, "InvalidParameterValue"},
		{"bad data type", sqs.SendMessageInput{MessageBody: aws.String("x"),
			MessageAttributes: map[string]types.MessageAttributeValue{"a": {DataType: aws.String("Integer"), StringValue: aws.String("1")}}}, "InvalidParameterValue"},
		{"empty value", sqs.SendMessageInput{MessageBody: aws.String("x"),
			MessageAttributes: map[string]types.MessageAttributeValue{"a": {DataType: aws.String("String"), StringValue: aws.String("")}}}, "InvalidParameterValue"},
		{"not a number", sqs.SendMessageInput{MessageBody: aws.String("x"),
			MessageAttributes: map[string]types.MessageAttributeValue{"a": {DataType: aws.String("Number"), StringValue: aws.String("12abc")}}}, "InvalidParameterValue"},
		{"dedup id on standard", sqs.SendMessageInput{MessageBody: aws.String("x"), MessageDeduplicationId: aws.String("d")}, "InvalidParameterValue"},
		{"group id with space", sqs.SendMessageInput{MessageBody: aws.String("x"), MessageGroupId: aws.String("a b")}, "InvalidParameterValue"},
		{"unknown system attribute", sqs.SendMessageInput{MessageBody: aws.String("x"),
			MessageSystemAttributes: map[string]types.MessageSystemAttributeValue{"Other": {DataType: aws.String("String"), StringValue: aws.String("v")}}}, "InvalidParameterValue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := tt.in
			in.QueueUrl = &url
			_, err := srv.Client.SendMessage(ctx, &in)
			wantAPIError(t, err, tt.code, 400)
		})
	}
	t.Run("exactly the maximum size", func(t *testing.T) {
		t.Parallel()
		// 1024 = 1014 body bytes + "Foo" + "String" + "B".
		_, err := srv.Client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String(strings.Repeat("x", 1014)),
			MessageAttributes: map[string]types.MessageAttributeValue{"Foo": strAttr("B")}})
		if err != nil {
			t.Errorf("message of exactly MaximumMessageSize: %v", err)
		}
	})
	t.Run("empty body", func(t *testing.T) {
		t.Parallel()
		resp, _ := rawJSON(t, srv.URL, "SendMessage", map[string]string{"QueueUrl": url, "MessageBody": ""})
		if got := resp.Header.Get("x-amzn-query-error"); got != "MissingParameter;Sender" {
			t.Errorf("empty body: %q, want MissingParameter;Sender", got)
		}
	})
	t.Run("one mebibyte on a default queue", func(t *testing.T) {
		t.Parallel()
		big := srv.MustCreateQueue(t, "big", nil)
		if _, err := srv.Client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &big, MessageBody: aws.String(strings.Repeat("x", 1<<20))}); err != nil {
			t.Errorf("1 MiB body: %v", err)
		}
		_, err := srv.Client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &big, MessageBody: aws.String(strings.Repeat("x", 1<<20+1))})
		wantAPIError(t, err, "InvalidParameterValue", 400)
	})
}

func TestSendMessageBatch(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	url := srv.MustCreateQueue(t, "batch", nil)
	out, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: &url, Entries: []types.SendMessageBatchRequestEntry{
		{Id: aws.String("a"), MessageBody: aws.String("first"), MessageAttributes: map[string]types.MessageAttributeValue{"Foo": strAttr("Bar")}},
		{Id: aws.String("b"), MessageBody: aws.String("bad\x01")},
		{Id: aws.String("c"), MessageBody: aws.String("third"), DelaySeconds: 5},
		{Id: aws.String("d"), MessageBody: aws.String("x"), DelaySeconds: 1000},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Successful) != 2 || *out.Successful[0].Id != "a" || *out.Successful[1].Id != "c" {
		t.Fatalf("successful = %+v, want a and c", out.Successful)
	}
	if got := aws.ToString(out.Successful[0].MD5OfMessageAttributes); got != "ae7155c6026991b6d54b11589678bf9c" {
		t.Errorf("entry a MD5OfMessageAttributes = %s", got)
	}
	if out.Successful[1].MD5OfMessageAttributes != nil {
		t.Errorf("entry c has MD5OfMessageAttributes without attributes")
	}
	failed := map[string]types.BatchResultErrorEntry{}
	for _, f := range out.Failed {
		failed[*f.Id] = f
	}
	if f := failed["b"]; aws.ToString(f.Code) != "InvalidMessageContents" || !f.SenderFault {
		t.Errorf("entry b failure = %+v, want InvalidMessageContents sender fault", f)
	}
	if f := failed["d"]; aws.ToString(f.Code) != "InvalidParameterValue" || !f.SenderFault {
		t.Errorf("entry d failure = %+v, want InvalidParameterValue sender fault", f)
	}
	checkCounts(t, c, url, 1, 0, 1)

	entries := func(n int, id func(int) string) []types.SendMessageBatchRequestEntry {
		var es []types.SendMessageBatchRequestEntry
		for i := range n {
			es = append(es, types.SendMessageBatchRequestEntry{Id: aws.String(id(i)), MessageBody: aws.String("m")})
		}
		return es
	}
	seq := func(i int) string { return "e" + strconv.Itoa(i) }
	tests := []struct {
		name    string
		entries []types.SendMessageBatchRequestEntry
		code    string
	}{
		{"eleven entries", entries(11, seq), "AWS.SimpleQueueService.TooManyEntriesInBatchRequest"},
		{"repeated id", entries(2, func(int) string { return "same" }), "AWS.SimpleQueueService.BatchEntryIdsNotDistinct"},
		{"bad id", entries(1, func(int) string { return "not ok!" }), "AWS.SimpleQueueService.InvalidBatchEntryId"},
		{"too long in total", []types.SendMessageBatchRequestEntry{
			{Id: aws.String("a"), MessageBody: aws.String(strings.Repeat("x", 600000))},
			{Id: aws.String("b"), MessageBody: aws.String(strings.Repeat("x", 600000))},
		}, "AWS.SimpleQueueService.BatchRequestTooLong"},
	}
	for _, tt := range tests {
		_, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: &url, Entries: tt.entries})
		wantAPIError(t, err, tt.code, 400)
	}
	resp, _ := rawJSON(t, srv.URL, "SendMessageBatch", map[string]any{"QueueUrl": url, "Entries": []any{}})
	if got := resp.Header.Get("x-amzn-query-error"); got != "AWS.SimpleQueueService.EmptyBatchRequest;Sender" {
		t.Errorf("empty batch: %q", got)
	}
	checkCounts(t, c, url, 1, 0, 1) // whole-request failures enqueue nothing
}

func TestReceiveMessageErrors(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	url := srv.MustCreateQueue(t, "recv", nil)
	tests := []struct {
		name string
		in   sqs.ReceiveMessageInput
		code string
	}{
		{"eleven messages", sqs.ReceiveMessageInput{MaxNumberOfMessages: 11}, "InvalidParameterValue"},
		{"wait too long", sqs.ReceiveMessageInput{WaitTimeSeconds: 21}, "InvalidParameterValue"},
		{"negative wait", sqs.ReceiveMessageInput{WaitTimeSeconds: -1}, "InvalidParameterValue"},
		{"visibility too long", sqs.ReceiveMessageInput{VisibilityTimeout: 43201}, "InvalidParameterValue"},
		{"unknown system attribute", sqs.ReceiveMessageInput{MessageSystemAttributeNames: []types.MessageSystemAttributeName{"Colour"}}, "InvalidAttributeName"},
	}
	for _, tt := range tests {
		in := tt.in
		in.QueueUrl = &url
		_, err := srv.Client.ReceiveMessage(ctx, &in)
		wantAPIError(t, err, tt.code, 400)
	}
	_, err := srv.Client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String("missing")})
	wantAPIError(t, err, "AWS.SimpleQueueService.NonExistentQueue", 400)
}

func receiveOne(tb testing.TB, c *sqs.Client, url string, vis *int32) types.Message {
	tb.Helper()
	in := &sqs.ReceiveMessageInput{QueueUrl: &url, MessageSystemAttributeNames: []types.MessageSystemAttributeName{"ApproximateReceiveCount"}}
	if vis != nil {
		in.VisibilityTimeout = *vis
	}
	out, err := c.ReceiveMessage(ctx, in)
	if err != nil {
		tb.Fatal(err)
	}
	if len(out.Messages) != 1 {
		tb.Fatalf("received %d messages, want 1", len(out.Messages))
	}
	return out.Messages[0]
}

func receiveNone(tb testing.TB, c *sqs.Client, url string) {
	tb.Helper()
	out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 10})
	if err != nil {
		tb.Fatal(err)
	}
	if len(out.Messages) != 0 {
		tb.Fatalf("received %d messages, want none", len(out.Messages))
	}
}

func TestDeleteMessage(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	url := srv.MustCreateQueue(t, "del", nil)
	other := srv.MustCreateQueue(t, "other", nil)
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("x")}); err != nil {
		t.Fatal(err)
	}
	m := receiveOne(t, c, url, nil)
	_, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &other, ReceiptHandle: m.ReceiptHandle})
	wantAPIError(t, err, "ReceiptHandleIsInvalid", 404)
	for i := range 2 { // deleting an already-deleted message succeeds
		if err := deleteMessage(c, url, m.ReceiptHandle); err != nil {
			t.Fatalf("delete %d: %v", i+1, err)
		}
	}
	srv.Clock.Advance(time.Minute)
	receiveNone(t, c, url)
	for _, h := range []string{"garbage", *m.ReceiptHandle + "x", strings.ToUpper(*m.ReceiptHandle)} {
		_, err = c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &url, ReceiptHandle: aws.String(h)})
		wantAPIError(t, err, "ReceiptHandleIsInvalid", 404)
	}
}

func TestDeleteMessageBatch(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	url := srv.MustCreateQueue(t, "delb", nil)
	for i := range 3 {
		if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("m" + strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
	}
	out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 10})
	if err != nil || len(out.Messages) != 3 {
		t.Fatalf("receive: %v, %d messages", err, len(out.Messages))
	}
	res, err := c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: &url, Entries: []types.DeleteMessageBatchRequestEntry{
		{Id: aws.String("0"), ReceiptHandle: out.Messages[0].ReceiptHandle},
		{Id: aws.String("bad"), ReceiptHandle: aws.String("not-a-handle")},
		{Id: aws.String("1"), ReceiptHandle: out.Messages[1].ReceiptHandle},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Successful) != 2 || len(res.Failed) != 1 || *res.Failed[0].Id != "bad" ||
		*res.Failed[0].Code != "ReceiptHandleIsInvalid" || !res.Failed[0].SenderFault {
		t.Errorf("batch delete = %+v / %+v, want 2 deleted and bad failing with ReceiptHandleIsInvalid", res.Successful, res.Failed)
	}
	checkCounts(t, c, url, 0, 1, 0)
	_, err = c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: &url, Entries: []types.DeleteMessageBatchRequestEntry{
		{Id: aws.String("x"), ReceiptHandle: out.Messages[2].ReceiptHandle},
		{Id: aws.String("x"), ReceiptHandle: out.Messages[2].ReceiptHandle},
	}})
	wantAPIError(t, err, "AWS.SimpleQueueService.BatchEntryIdsNotDistinct", 400)
}

func TestChangeMessageVisibilityBatch(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	url := srv.MustCreateQueue(t, "cmvb", nil)
	for i := range 2 {
		if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("m" + strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
	}
	out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 10})
	if err != nil || len(out.Messages) != 2 {
		t.Fatalf("receive: %v, %d messages", err, len(out.Messages))
	}
	srv.Clock.Advance(time.Second) // so that 43200 s from now passes the 12 h ceiling
	res, err := c.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: &url, Entries: []types.ChangeMessageVisibilityBatchRequestEntry{
		{Id: aws.String("release"), ReceiptHandle: out.Messages[0].ReceiptHandle, VisibilityTimeout: 0},
		{Id: aws.String("extend"), ReceiptHandle: out.Messages[1].ReceiptHandle, VisibilityTimeout: 300},
		{Id: aws.String("bad"), ReceiptHandle: aws.String("nope")},
		{Id: aws.String("ceiling"), ReceiptHandle: out.Messages[1].ReceiptHandle, VisibilityTimeout: 43200},
	}})
	if err != nil {
		t.Fatal(err)
	}
	failed := map[string]string{}
	for _, f := range res.Failed {
		failed[*f.Id] = *f.Code
	}
	if len(res.Successful) != 2 || failed["bad"] != "ReceiptHandleIsInvalid" || failed["ceiling"] != "InvalidParameterValue" {
		t.Errorf("batch = %+v / %v, want release and extend to succeed", res.Successful, failed)
	}
	m := receiveOne(t, c, url, aws.Int32(1000)) // the released one, at once
	if *m.MessageId != *out.Messages[0].MessageId {
		t.Errorf("received %s, want the released %s", *m.MessageId, *out.Messages[0].MessageId)
	}
	srv.Clock.Advance(299 * time.Second)
	receiveNone(t, c, url)
	srv.Clock.Advance(time.Second)
	if m := receiveOne(t, c, url, nil); *m.MessageId != *out.Messages[1].MessageId {
		t.Errorf("received %s after the extension, want %s", *m.MessageId, *out.Messages[1].MessageId)
	}
}
