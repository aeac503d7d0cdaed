package server_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/internal/testutil"
)

// receiveCopy receives the one message a queue holds, with its attributes.
func receiveCopy(tb testing.TB, c *sqs.Client, queueURL string) sqstypes.Message {
	tb.Helper()
	out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL),
		MaxNumberOfMessages: 10, MessageAttributeNames: []string{"All"},
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{"All"}})
	if err != nil {
		tb.Fatalf("ReceiveMessage %s: %v", queueURL, err)
	}
	if len(out.Messages) != 1 {
		tb.Fatalf("%s holds %d messages, want 1", queueURL, len(out.Messages))
	}
	return out.Messages[0]
}

// TestSNSPublishEnvelope pins the envelope an SQS subscription receives,
// byte for byte as AWS lays it out (docs/architecture.md §8): two-space
// indent, `"Key" : value`, AWS's member order, '/' unescaped, the
// attributes compact; and that the queue's copy carries no SQS message
// attributes; the signature verifies with the certificate served at
// SigningCertURL (verifySignature).
func TestSNSPublishEnvelope(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	qURL := srv.MustCreateQueue(t, "env", nil)
	topic := mustCreateTopic(t, c, "news")
	sub := mustSubscribe(t, c, topic, snsQueueARN("env"), nil)
	msg := `He said "hi" </a> & é/ok` + "\n\tend"
	out, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String(msg), Subject: aws.String("Greeting"),
		MessageAttributes: map[string]snstypes.MessageAttributeValue{"price": {DataType: aws.String("Number"), StringValue: aws.String("99.12")}}})
	if err != nil {
		t.Fatal(err)
	}
	m := receiveCopy(t, srv.Client, qURL)
	certURL := srv.URL + "/" + certName(t, m)
	want := "{\n" +
		`  "Type" : "Notification",` + "\n" +
		`  "MessageId" : "` + *out.MessageId + `",` + "\n" +
		`  "TopicArn" : "` + topic + `",` + "\n" +
		`  "Subject" : "Greeting",` + "\n" +
		`  "Message" : "He said \"hi\" </a> & é/ok\n\tend",` + "\n" +
		`  "Timestamp" : "2026-01-02T03:04:05.000Z",` + "\n" +
		`  "SignatureVersion" : "1",` + "\n" +
		`  "Signature" : "` + signatureOf(t, m) + `",` + "\n" +
		`  "SigningCertURL" : "` + certURL + `",` + "\n" +
		`  "UnsubscribeURL" : "` + srv.URL + `/?Action=Unsubscribe&SubscriptionArn=` + sub + `",` + "\n" +
		`  "MessageAttributes" : {` + "\n" +
		`    "price" : {"Type":"Number","Value":"99.12"}` + "\n" +
		"  }\n" +
		"}"
	if *m.Body != want {
		t.Errorf("body:\n%s\nwant:\n%s", *m.Body, want)
	}
	if len(m.MessageAttributes) != 0 {
		t.Errorf("the envelope's copy has SQS message attributes %v, want none", m.MessageAttributes)
	}

	verifySignature(t, m)

	// Without a subject or attributes those members are left out, and the
	// UnsubscribeURL ends the object.
	out, err = c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("plain")})
	if err != nil {
		t.Fatal(err)
	}
	m = receiveCopy(t, srv.Client, qURL)
	verifySignature(t, m)
	want = "{\n" +
		`  "Type" : "Notification",` + "\n" +
		`  "MessageId" : "` + *out.MessageId + `",` + "\n" +
		`  "TopicArn" : "` + topic + `",` + "\n" +
		`  "Message" : "plain",` + "\n" +
		`  "Timestamp" : "2026-01-02T03:04:05.000Z",` + "\n" +
		`  "SignatureVersion" : "1",` + "\n" +
		`  "Signature" : "` + signatureOf(t, m) + `",` + "\n" +
		`  "SigningCertURL" : "` + certURL + `",` + "\n" +
		`  "UnsubscribeURL" : "` + srv.URL + `/?Action=Unsubscribe&SubscriptionArn=` + sub + `"` + "\n" +
		"}"
	if *m.Body != want {
		t.Errorf("body:\n%s\nwant:\n%s", *m.Body, want)
	}
}

// TestSNSPublishAttributeOrder: the envelope keeps the attributes in the
// order they were published (AWS does not sort them), Binary as base64; the
// request's X-Amzn-Trace-Id becomes the copy's AWSTraceHeader. Sent as a
// raw Query request, since the SDK sends a map's entries in no fixed order.
func TestSNSPublishAttributeOrder(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.SNSClient()
	qURL := srv.MustCreateQueue(t, "ordered", nil)
	topic := mustCreateTopic(t, c, "ordered")
	mustSubscribe(t, c, topic, snsQueueARN("ordered"), nil)
	form := url.Values{"Action": {"Publish"}, "Version": {"2010-03-31"}, "TopicArn": {topic}, "Message": {"m"},
		"MessageAttributes.entry.1.Name": {"zeta"}, "MessageAttributes.entry.1.Value.DataType": {"String"},
		"MessageAttributes.entry.1.Value.StringValue": {"z"},
		"MessageAttributes.entry.2.Name":              {"alpha"}, "MessageAttributes.entry.2.Value.DataType": {"Binary"},
		"MessageAttributes.entry.2.Value.BinaryValue": {"AQID"},
		"MessageAttributes.entry.3.Name":              {"mid"}, "MessageAttributes.entry.3.Value.DataType": {"String.Array"},
		"MessageAttributes.entry.3.Value.StringValue": {`["a","b"]`},
	}
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Amzn-Trace-Id", "Root=1-5759e988-bd862e3fe1be46a994272793")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte(`<PublishResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/"><PublishResult><MessageId>`)) {
		t.Fatalf("Publish: %d %s", resp.StatusCode, body)
	}
	m := receiveCopy(t, srv.Client, qURL)
	want := `  "MessageAttributes" : {` + "\n" +
		`    "zeta" : {"Type":"String","Value":"z"},` + "\n" +
		`    "alpha" : {"Type":"Binary","Value":"AQID"},` + "\n" +
		`    "mid" : {"Type":"String.Array","Value":"[\"a\",\"b\"]"}` + "\n" +
		"  }\n}"
	if !strings.HasSuffix(*m.Body, want) {
		t.Errorf("body:\n%s\nwant it to end:\n%s", *m.Body, want)
	}
	if got := m.Attributes["AWSTraceHeader"]; got != "Root=1-5759e988-bd862e3fe1be46a994272793" {
		t.Errorf("AWSTraceHeader = %q", got)
	}
}

// TestSNSPublishRaw: a raw subscription receives the message as published
// with each attribute as an SQS message attribute of the same type and
// value, and SQS's own MD5 of them (AWS's test vector for Number 99.12).
func TestSNSPublishRaw(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	qURL := srv.MustCreateQueue(t, "raw", nil)
	topic := mustCreateTopic(t, c, "rawtopic")
	mustSubscribe(t, c, topic, snsQueueARN("raw"), map[string]string{"RawMessageDelivery": "true"})
	if _, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String(`{"order":1}`), Subject: aws.String("ignored"),
		MessageAttributes: map[string]snstypes.MessageAttributeValue{"attr1": {DataType: aws.String("Number"), StringValue: aws.String("99.12")}}}); err != nil {
		t.Fatal(err)
	}
	m := receiveCopy(t, srv.Client, qURL)
	if *m.Body != `{"order":1}` {
		t.Errorf("body = %q", *m.Body)
	}
	a, ok := m.MessageAttributes["attr1"]
	if !ok || *a.DataType != "Number" || *a.StringValue != "99.12" {
		t.Errorf("attr1 = %+v", a)
	}
	if m.MD5OfMessageAttributes == nil || *m.MD5OfMessageAttributes != "d302007e9aa062660afc85fd0a482472" {
		t.Errorf("MD5OfMessageAttributes = %v, want AWS's d302007e9aa062660afc85fd0a482472", aws.ToString(m.MD5OfMessageAttributes))
	}
}

// TestSNSPublishFanOut: one publish reaches every subscribed queue, raw
// and enveloped, with the same MessageId in every envelope; a
// subscription whose queue does not exist is a client error that drops its
// copy and does not fail the publish, as on AWS; a standard topic's
// MessageGroupId goes on to the queues (fair queues); a JSON-structured
// message gives each sqs subscription its "sqs" body.
func TestSNSPublishFanOut(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	topic := mustCreateTopic(t, c, "fan")
	var urls []string
	for _, q := range []string{"a", "b", "c"} {
		urls = append(urls, srv.MustCreateQueue(t, q, nil))
		mustSubscribe(t, c, topic, snsQueueARN(q), nil)
	}
	rawURL := srv.MustCreateQueue(t, "r", nil)
	mustSubscribe(t, c, topic, snsQueueARN("r"), map[string]string{"RawMessageDelivery": "true"})
	mustSubscribe(t, c, topic, snsQueueARN("never-created"), nil)
	out, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), MessageStructure: aws.String("json"),
		Message: aws.String(`{"default":"for others","sqs":"for queues","http":7}`), MessageGroupId: aws.String("tenant-1")})
	if err != nil {
		t.Fatalf("Publish with a subscription to a missing queue: %v", err)
	}
	for _, u := range urls {
		m := receiveCopy(t, srv.Client, u)
		if !strings.Contains(*m.Body, `"MessageId" : "`+*out.MessageId+`"`) || !strings.Contains(*m.Body, `"Message" : "for queues"`) {
			t.Errorf("%s got %s", u, *m.Body)
		}
		if g := m.Attributes["MessageGroupId"]; g != "tenant-1" {
			t.Errorf("%s: MessageGroupId = %q, want tenant-1", u, g)
		}
	}
	if m := receiveCopy(t, srv.Client, rawURL); *m.Body != "for queues" {
		t.Errorf("raw copy = %q, want the sqs body", *m.Body)
	}
}

// TestSNSPublishRefusals pins AWS's answers to publishes it refuses.
func TestSNSPublishRefusals(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	topic := mustCreateTopic(t, c, "strict")
	str := func(v string) snstypes.MessageAttributeValue {
		return snstypes.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
	}
	for _, tc := range []struct {
		name   string
		in     awssns.PublishInput
		code   string
		status int
		msg    string
	}{
		{"unknown topic", awssns.PublishInput{TopicArn: aws.String(topicARN("none")), Message: aws.String("m")},
			"NotFound", 404, "Topic does not exist"},
		{"empty message", awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("")},
			"InvalidParameter", 400, "Invalid parameter: Empty message"},
		{"empty subject", awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("m"), Subject: aws.String("")},
			"InvalidParameter", 400, "Invalid parameter: Subject"},
		{"subject of 101", awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("m"), Subject: aws.String(strings.Repeat("s", 101))},
			"InvalidParameter", 400, "Invalid parameter: Subject"},
		{"subject with a line break", awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("m"), Subject: aws.String("a\nb")},
			"InvalidParameter", 400, "Invalid parameter: Subject"},
		{"too long", awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String(strings.Repeat("x", 262144-7)),
			MessageAttributes: map[string]snstypes.MessageAttributeValue{"a": str("b")}},
			"InvalidParameter", 400, "Invalid parameter: Message too long"},
		{"no default", awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String(`{"sqs":"x"}`), MessageStructure: aws.String("json")},
			"InvalidParameter", 400, "Invalid parameter: Message Structure - No default entry in JSON message body"},
		{"default not a string", awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String(`{"default":{}}`), MessageStructure: aws.String("json")},
			"InvalidParameter", 400, "Invalid parameter: Message Structure - No default entry in JSON message body"},
		{"structure unparsable", awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String(`{"default"`), MessageStructure: aws.String("json")},
			"InvalidParameter", 400, "Invalid parameter: Message Structure - JSON message body failed to parse"},
		{"dedup id on a standard topic", awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("m"), MessageDeduplicationId: aws.String("d")},
			"InvalidParameter", 400, "Invalid parameter: MessageDeduplicationId Reason: The request includes MessageDeduplicationId parameter that is not valid for this topic type"},
		{"short ARN", awssns.PublishInput{TopicArn: aws.String("arn:aws:sns"), Message: aws.String("m")},
			"InvalidParameter", 400, "Invalid parameter: TopicArn Reason: An ARN must have at least 6 elements, not 3"},
		{"other region", awssns.PublishInput{TopicArn: aws.String("arn:aws:sns:eu-west-1:" + testutil.Account + ":strict"), Message: aws.String("m")},
			"InvalidParameter", 400, "Invalid parameter: TopicArn"},
		{"bad attribute type", awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("m"),
			MessageAttributes: map[string]snstypes.MessageAttributeValue{"a": {DataType: aws.String("Stringprefixed"), StringValue: aws.String("v")}}},
			"ParameterValueInvalid", 400, "The message attribute 'a' has an invalid message attribute type, the set of supported type prefixes is Binary, Number, and String."},
		{"attribute type String.", awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("m"),
			MessageAttributes: map[string]snstypes.MessageAttributeValue{"a": {DataType: aws.String("String."), StringValue: aws.String("v")}}},
			"ParameterValueInvalid", 400, "The message attribute 'a' has an invalid message attribute type, the set of supported type prefixes is Binary, Number, and String."},
		{"empty attribute", awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("m"),
			MessageAttributes: map[string]snstypes.MessageAttributeValue{"a": {DataType: aws.String("String")}}},
			"ParameterValueInvalid", 400, "The message attribute 'a' must contain non-empty message attribute value for message attribute type 'String'."},
		{"string in a binary field", awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("m"),
			MessageAttributes: map[string]snstypes.MessageAttributeValue{"a": {DataType: aws.String("String"), BinaryValue: []byte{1}}}},
			"ParameterValueInvalid", 400, "The message attribute 'a' with type 'String' must use field 'String'."},
		{"bad name character", awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("m"),
			MessageAttributes: map[string]snstypes.MessageAttributeValue{"a^b": str("v")}},
			"ParameterValueInvalid", 400, "Invalid non-alphanumeric character '#x5E' was found in the message attribute name. Can only include alphanumeric characters, hyphens, underscores, or dots."},
		{"leading dot", awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("m"),
			MessageAttributes: map[string]snstypes.MessageAttributeValue{".a": str("v")}},
			"ParameterValueInvalid", 400, "Invalid message attribute name starting with character '.' was found."},
		{"two dots", awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("m"),
			MessageAttributes: map[string]snstypes.MessageAttributeValue{"a..b": str("v")}},
			"ParameterValueInvalid", 400, "Message attribute name can not have successive '.' character."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Publish(ctx, &tc.in)
			wantSNSError(t, err, tc.code, tc.status, tc.msg)
		})
	}
	// The limit counts the message and each attribute's name, type and
	// value: exactly 262,144 bytes pass.
	if _, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String(strings.Repeat("x", 262144-8)),
		MessageAttributes: map[string]snstypes.MessageAttributeValue{"a": str("b")}}); err != nil {
		t.Errorf("a publish of exactly 262,144 bytes: %v", err)
	}
}

// TestSNSPublishNumberAttributes: a Number attribute is taken within the
// range and precision AWS documents for message attribute numbers (38
// significant digits, 10^-128 to 10^126), and its raw subscription's
// queue gets it; a value outside them, or not a decimal number at all,
// is refused with SNS's text, not taken and then refused by the queue
// (before, "NaN", "Infinity", "1_000" and 39 digits were answered 200 and
// the raw copy dropped).
func TestSNSPublishNumberAttributes(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	qURL := srv.MustCreateQueue(t, "numbers", nil)
	topic := mustCreateTopic(t, c, "numbers")
	mustSubscribe(t, c, topic, snsQueueARN("numbers"), map[string]string{"RawMessageDelivery": "true"})
	publish := func(v string) error {
		_, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("m"),
			MessageAttributes: map[string]snstypes.MessageAttributeValue{"n": {DataType: aws.String("Number"), StringValue: aws.String(v)}}})
		return err
	}
	for _, v := range []string{"NaN", "Infinity", "-Inf", "1_000", "0x1p4", "1e127", "1e-129", "1234567890123456789012345678901234567890", "12a"} {
		wantSNSError(t, publish(v), "ParameterValueInvalid", 400, "Could not cast message attribute 'n' value to number.")
	}
	for _, v := range []string{"1e126", "-0.5", "+3", "1E-128", "12345678901234567890123456789012345678", "0"} {
		if err := publish(v); err != nil {
			t.Errorf("Number %s: %v", v, err)
			continue
		}
		m := receiveCopy(t, srv.Client, qURL)
		if a := m.MessageAttributes["n"]; aws.ToString(a.StringValue) != v {
			t.Errorf("Number %s: the queue's copy carries %q", v, aws.ToString(a.StringValue))
		}
		if _, err := srv.Client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(qURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSNSMissingDataType: an attribute without a DataType is refused with
// code ValidationError, as AWS answered it, naming where it is in a
// Publish and in a PublishBatch (the SDK would not send one, so the
// requests are raw).
func TestSNSMissingDataType(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	topic := mustCreateTopic(t, srv.SNSClient(), "nodatatype")
	checkValidationError(t, srv.URL, url.Values{"Action": {"Publish"}, "Version": {"2010-03-31"}, "TopicArn": {topic},
		"Message": {"m"}, "MessageAttributes.entry.1.Name": {"a"}, "MessageAttributes.entry.1.Value.StringValue": {"v"}},
		"1 validation error detected: Value null at 'messageAttributes.a.member.dataType' failed to satisfy constraint: Member must not be null")
	checkValidationError(t, srv.URL, url.Values{"Action": {"PublishBatch"}, "Version": {"2010-03-31"}, "TopicArn": {topic},
		"PublishBatchRequestEntries.member.1.Id": {"x"}, "PublishBatchRequestEntries.member.1.Message": {"m"},
		"PublishBatchRequestEntries.member.2.Id": {"y"}, "PublishBatchRequestEntries.member.2.Message": {"m"},
		"PublishBatchRequestEntries.member.2.MessageAttributes.entry.1.Name":              {"a"},
		"PublishBatchRequestEntries.member.2.MessageAttributes.entry.1.Value.StringValue": {"v"}},
		"1 validation error detected: Value null at 'publishBatchRequestEntries.2.member.messageAttributes.a.member.dataType' failed to satisfy constraint: Member must not be null")
}

func checkValidationError(t *testing.T, base string, form url.Values, want string) {
	t.Helper()
	status, body := postForm(t, base, form.Encode())
	var e struct {
		XMLName xml.Name `xml:"ErrorResponse"`
		NS      string   `xml:"xmlns,attr"`
		Error   struct{ Type, Code, Message string }
	}
	if err := xml.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("%d %s: %v", status, body, err)
	}
	if status != 400 || e.Error.Type != "Sender" || e.Error.Code != "ValidationError" || e.Error.Message != want ||
		e.NS != "http://sns.amazonaws.com/doc/2010-03-31/" {
		t.Errorf("%d %s", status, body)
	}
}
