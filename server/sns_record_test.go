package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"

	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/server"
)

// deliveries reads GET /admin/api/sns/deliveries?query.
func deliveries(tb *testing.T, srv *testutil.Server, query string) server.SNSDeliveriesJSON {
	tb.Helper()
	code, _, body := fetch(tb, http.MethodGet, srv.URL+"/admin/api/sns/deliveries?"+query, nil, "")
	var v server.SNSDeliveriesJSON
	if code != http.StatusOK || json.Unmarshal([]byte(body), &v) != nil {
		tb.Fatalf("GET /admin/api/sns/deliveries?%s: %d %s", query, code, body)
	}
	return v
}

// onlyDelivery is the one record query matches.
func onlyDelivery(tb *testing.T, srv *testutil.Server, query string) server.SNSDeliveryJSON {
	tb.Helper()
	v := deliveries(tb, srv, query)
	if len(v.Deliveries) != 1 {
		tb.Fatalf("deliveries?%s = %+v, want one", query, v.Deliveries)
	}
	return v.Deliveries[0]
}

func subscribeOther(tb testing.TB, c *awssns.Client, topic, protocol, endpoint string, attrs map[string]string) string {
	tb.Helper()
	out, err := c.Subscribe(context.Background(), &awssns.SubscribeInput{TopicArn: aws.String(topic), Protocol: aws.String(protocol),
		Endpoint: aws.String(endpoint), Attributes: attrs, ReturnSubscriptionArn: true})
	if err != nil {
		tb.Fatalf("Subscribe %s %s: %v", protocol, endpoint, err)
	}
	return *out.SubscriptionArn
}

// confirmRecorded confirms a pending email or email-json subscription as
// a test does: by the SubscribeURL of the confirmation recorded for it.
func confirmRecorded(tb *testing.T, srv *testutil.Server, protocol, endpoint string) server.SNSDeliveryJSON {
	tb.Helper()
	conf := onlyDelivery(tb, srv, "type=SubscriptionConfirmation&protocol="+protocol+"&endpoint="+url.QueryEscape(endpoint))
	link := conf.Payload[strings.LastIndex(conf.Payload, "\n")+1:]
	if protocol == "email-json" {
		var f map[string]string
		if err := json.Unmarshal([]byte(conf.Payload), &f); err != nil {
			tb.Fatalf("email-json confirmation %q: %v", conf.Payload, err)
		}
		link = f["SubscribeURL"]
	}
	resp, err := http.Get(link)
	if err != nil {
		tb.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("GET %s: %d", link, resp.StatusCode)
	}
	return conf
}

// TestSNSRecordedPayloads pins what Baton records, through the admin API,
// of a publish to a topic subscribed by each protocol it does not deliver
// to, as AWS would send it: the SMS prefixed by the topic's DisplayName in
// upper case, the email's subject and footer, the email-json envelope and
// the Lambda event signed, the Firehose record unsigned and compact, and
// raw; and the confirmations the email subscriptions are sent.
func TestSNSRecordedPayloads(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	out, err := c.CreateTopic(ctx, &awssns.CreateTopicInput{Name: aws.String("alarms"), Attributes: map[string]string{"DisplayName": "Ops"}})
	if err != nil {
		t.Fatal(err)
	}
	topic := *out.TopicArn
	sms := subscribeOther(t, c, topic, "sms", "+15555550100", nil)
	lambda := subscribeOther(t, c, topic, "lambda", lambdaEndpoint, nil)
	firehose := subscribeOther(t, c, topic, "firehose", firehoseEndpoint, map[string]string{"SubscriptionRoleArn": firehoseRole})
	rawStream := "arn:aws:firehose:us-east-1:" + testutil.Account + ":deliverystream/raw"
	subscribeOther(t, c, topic, "firehose", rawStream, map[string]string{"SubscriptionRoleArn": firehoseRole, "RawMessageDelivery": "true"})
	email := subscribeOther(t, c, topic, "email", "ops@example.com", nil)
	emailJSON := subscribeOther(t, c, topic, "email-json", "robot@example.com", nil)

	conf := confirmRecorded(t, srv, "email", "ops@example.com")
	wantConf := "You have chosen to subscribe to the topic: \n" + topic +
		"\n\nTo confirm this subscription, click or visit the link below (If this was in error no action is necessary): \n" +
		srv.URL + "/?Action=ConfirmSubscription&TopicArn=" + topic + "&Token="
	if conf.Subject != "AWS Notification - Subscription Confirmation" || !strings.HasPrefix(conf.Payload, wantConf) || conf.SubscriptionARN != email {
		t.Errorf("email confirmation = %+v, want subject AWS Notification - Subscription Confirmation and text %q…", conf, wantConf)
	}
	conf = confirmRecorded(t, srv, "email-json", "robot@example.com")
	verifyBody(t, conf.Payload, "")

	pub, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String(`disk "full" <90%>`), Subject: aws.String("Alarm"),
		MessageAttributes: map[string]snstypes.MessageAttributeValue{"severity": {DataType: aws.String("String"), StringValue: aws.String("high")}}})
	if err != nil {
		t.Fatal(err)
	}
	id := *pub.MessageId
	unsub := func(sub string) string { return srv.URL + "/?Action=Unsubscribe&SubscriptionArn=" + sub }
	const stamp = "2026-01-02T03:04:05.000Z"
	if all := deliveries(t, srv, "type=Notification"); len(all.Deliveries) != 6 || all.Kept != 8 || all.Max != 1000 || all.Dropped != 0 {
		t.Errorf("records: %d notifications, kept %d of %d, dropped %d; want 6, 8 of 1000, 0", len(all.Deliveries), all.Kept, all.Max, all.Dropped)
	}

	d := onlyDelivery(t, srv, "type=Notification&protocol=sms")
	if d.Payload != `OPS> disk "full" <90%>` || d.SubscriptionARN != sms || d.TopicARN != topic || d.MessageID != id || d.Endpoint != "+15555550100" ||
		d.MessageAttributes["severity"].StringValue != "high" {
		t.Errorf("sms record = %+v", d)
	}

	d = onlyDelivery(t, srv, "type=Notification&protocol=email")
	wantEmail := `disk "full" <90%>` + "\n\n--\nIf you wish to stop receiving notifications from this topic, please click or visit the link below to unsubscribe:\n" +
		unsub(email) + "\n\nPlease do not reply directly to this email. If you have any questions or comments regarding this email, please contact us at https://aws.amazon.com/support"
	if d.Subject != "Alarm" || d.Payload != wantEmail || d.Endpoint != "ops@example.com" {
		t.Errorf("email record = %+v\nwant subject Alarm and body\n%s", d, wantEmail)
	}

	d = onlyDelivery(t, srv, "type=Notification&protocol=email-json")
	var env map[string]any
	if err := json.Unmarshal([]byte(d.Payload), &env); err != nil {
		t.Fatalf("email-json payload %q: %v", d.Payload, err)
	}
	if env["Type"] != "Notification" || env["MessageId"] != id || env["Subject"] != "Alarm" || env["Message"] != `disk "full" <90%>` ||
		env["UnsubscribeURL"] != unsub(emailJSON) || !strings.HasPrefix(d.Payload, "{\n  \"Type\" : \"Notification\",\n") {
		t.Errorf("email-json payload = %s", d.Payload)
	}
	verifyBody(t, d.Payload, "")

	d = onlyDelivery(t, srv, "type=Notification&protocol=lambda")
	var ev struct {
		Records []struct {
			EventSource, EventVersion, EventSubscriptionArn string
			Sns                                             map[string]any
		}
	}
	if err := json.Unmarshal([]byte(d.Payload), &ev); err != nil || len(ev.Records) != 1 {
		t.Fatalf("lambda payload %q: %v", d.Payload, err)
	}
	r := ev.Records[0]
	s := r.Sns
	sig, _ := s["Signature"].(string)
	certURL, _ := s["SigningCertUrl"].(string)
	wantLambda := `{"Records":[{"EventSource":"aws:sns","EventVersion":"1.0","EventSubscriptionArn":"` + lambda + `","Sns":{` +
		`"Type":"Notification","MessageId":"` + id + `","TopicArn":"` + topic + `","Subject":"Alarm","Message":"disk \"full\" <90%>",` +
		`"Timestamp":"` + stamp + `","SignatureVersion":"1","Signature":"` + sig + `","SigningCertUrl":"` + certURL + `",` +
		`"UnsubscribeUrl":"` + unsub(lambda) + `","MessageAttributes":{"severity":{"Type":"String","Value":"high"}}}}]}`
	if d.Payload != wantLambda || !strings.HasPrefix(certURL, srv.URL+"/SimpleNotificationService-") {
		t.Errorf("lambda payload:\n%s\nwant:\n%s", d.Payload, wantLambda)
	}
	signedPart, _ := json.Marshal(map[string]string{"Type": "Notification", "MessageId": id, "TopicArn": topic, "Subject": "Alarm",
		"Message": `disk "full" <90%>`, "Timestamp": stamp, "SignatureVersion": "1", "Signature": sig, "SigningCertURL": certURL})
	verifyBody(t, string(signedPart), "")

	d = onlyDelivery(t, srv, "type=Notification&protocol=firehose&endpoint="+url.QueryEscape(firehoseEndpoint))
	wantFirehose := `{"Type":"Notification","MessageId":"` + id + `","TopicArn":"` + topic + `","Subject":"Alarm","Message":"disk \"full\" <90%>",` +
		`"Timestamp":"` + stamp + `","UnsubscribeURL":"` + unsub(firehose) + `","MessageAttributes":{"severity":{"Type":"String","Value":"high"}}}`
	if d.Payload != wantFirehose || d.Raw {
		t.Errorf("firehose payload:\n%s\nwant:\n%s", d.Payload, wantFirehose)
	}
	d = onlyDelivery(t, srv, "type=Notification&endpoint="+url.QueryEscape(rawStream))
	if d.Payload != `disk "full" <90%>` || !d.Raw {
		t.Errorf("raw firehose record = %+v, want the message alone", d)
	}

	// Without a subject or attributes: the email's default subject, the
	// Lambda event's null Subject and empty MessageAttributes, the Firehose
	// record without either.
	pub, err = c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("plain")})
	if err != nil {
		t.Fatal(err)
	}
	last := func(protocol string) server.SNSDeliveryJSON {
		got := deliveries(t, srv, "type=Notification&protocol="+protocol).Deliveries
		if len(got) == 0 {
			t.Fatalf("no %s record", protocol)
		}
		return got[len(got)-1]
	}
	if d := last("email"); d.Subject != "AWS Notification Message" || !strings.HasPrefix(d.Payload, "plain\n\n--\n") {
		t.Errorf("email without a subject = %+v", d)
	}
	if d := last("lambda"); !strings.Contains(d.Payload, `"Subject":null,"Message":"plain"`) || !strings.HasSuffix(d.Payload, `"MessageAttributes":{}}}]}`) {
		t.Errorf("lambda event without a subject or attributes: %s", d.Payload)
	}
	wantFirehose = `{"Type":"Notification","MessageId":"` + *pub.MessageId + `","TopicArn":"` + topic + `","Message":"plain",` +
		`"Timestamp":"` + stamp + `","UnsubscribeURL":"` + unsub(firehose) + `"}`
	if got := deliveries(t, srv, "type=Notification&endpoint="+url.QueryEscape(firehoseEndpoint)).Deliveries; len(got) != 2 || got[1].Payload != wantFirehose {
		t.Errorf("firehose record without a subject or attributes:\n%s\nwant:\n%s", got[1].Payload, wantFirehose)
	}
}

// TestSNSRecordFilterAndStructure: a subscription's filter policy decides
// what is recorded, as it decides what is delivered (the publish's record
// says filtered or recorded); a message published with
// MessageStructure=json records each protocol's entry, or the default;
// PublishBatch's entries are recorded as publishes are.
func TestSNSRecordFilterAndStructure(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	topic := mustCreateTopic(t, c, "orders")
	lambda := subscribeOther(t, c, topic, "lambda", lambdaEndpoint, map[string]string{"FilterPolicy": `{"kind":["refund"]}`})
	subscribeOther(t, c, topic, "sms", "+15555550100", nil)
	publish := func(in *awssns.PublishInput) string {
		t.Helper()
		in.TopicArn = aws.String(topic)
		out, err := c.Publish(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		return *out.MessageId
	}
	kind := func(v string) map[string]snstypes.MessageAttributeValue {
		return map[string]snstypes.MessageAttributeValue{"kind": {DataType: aws.String("String"), StringValue: aws.String(v)}}
	}
	sale := publish(&awssns.PublishInput{Message: aws.String("sold"), MessageAttributes: kind("sale")})
	if got := deliveries(t, srv, "protocol=lambda").Deliveries; len(got) != 0 {
		t.Errorf("a publish the lambda's filter policy leaves out is recorded for it: %+v", got)
	}
	if d := onlyDelivery(t, srv, "protocol=sms"); d.MessageID != sale || d.Payload != "sold" {
		t.Errorf("sms record = %+v, want sold", d)
	}
	var view server.TopicListJSON
	code, _, body := fetch(t, http.MethodGet, srv.URL+"/admin/api/topics", nil, "")
	if code != http.StatusOK || json.Unmarshal([]byte(body), &view) != nil || len(view.Recent) != 1 {
		t.Fatalf("GET /admin/api/topics: %d %s", code, body)
	}
	outcomes := map[string]string{}
	for _, o := range view.Recent[0].Outcomes {
		outcomes[o.Endpoint] = o.Outcome + ": " + o.Reason
	}
	if outcomes[lambdaEndpoint] != "filtered: " || outcomes["+15555550100"] != "recorded: Baton delivers nothing to sms subscriptions; what AWS would send is recorded" {
		t.Errorf("the publish's outcomes = %v", outcomes)
	}

	structured := `{"default":"plain","sms":"short","lambda":"{\"id\":7}"}`
	refund := publish(&awssns.PublishInput{Message: aws.String(structured), MessageStructure: aws.String("json"), MessageAttributes: kind("refund")})
	d := onlyDelivery(t, srv, "protocol=lambda")
	if d.MessageID != refund || d.SubscriptionARN != lambda || !strings.Contains(d.Payload, `"Message":"{\"id\":7}"`) {
		t.Errorf("lambda record = %+v, want its entry of the structured message", d)
	}
	if got := deliveries(t, srv, "protocol=sms").Deliveries; len(got) != 2 || got[1].Payload != "short" || got[0].Seq >= got[1].Seq {
		t.Errorf("sms records = %+v, want sold then short, in order", got)
	}

	batch, err := c.PublishBatch(ctx, &awssns.PublishBatchInput{TopicArn: aws.String(topic), PublishBatchRequestEntries: []snstypes.PublishBatchRequestEntry{
		{Id: aws.String("1"), Message: aws.String("one")}, {Id: aws.String("2"), Message: aws.String("two"), MessageAttributes: kind("refund")}}})
	if err != nil || len(batch.Successful) != 2 {
		t.Fatalf("PublishBatch: %+v, %v", batch, err)
	}
	if got := deliveries(t, srv, "protocol=sms").Deliveries; len(got) != 4 || got[2].Payload != "one" || got[3].Payload != "two" {
		t.Errorf("sms records after PublishBatch = %+v, want one and two recorded", got)
	}
	if got := deliveries(t, srv, "protocol=lambda").Deliveries; len(got) != 2 || got[1].MessageID != *batch.Successful[1].MessageId {
		t.Errorf("lambda records after PublishBatch = %+v, want the refund entry's", got)
	}
}

// TestSNSPublishToPhoneNumber: a publish to a phone number is answered
// with a MessageId and recorded, with its SMS attributes; a number not in
// E.164 form is refused with AWS's text, an empty message and a group id
// too; none of them is recorded.
func TestSNSPublishToPhoneNumber(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	out, err := c.Publish(ctx, &awssns.PublishInput{PhoneNumber: aws.String("+15555550123"), Message: aws.String("Your code is 123456"),
		MessageAttributes: map[string]snstypes.MessageAttributeValue{
			"AWS.SNS.SMS.SMSType":  {DataType: aws.String("String"), StringValue: aws.String("Transactional")},
			"AWS.SNS.SMS.SenderID": {DataType: aws.String("String"), StringValue: aws.String("Shop")}}})
	if err != nil {
		t.Fatalf("Publish to a phone number: %v", err)
	}
	d := onlyDelivery(t, srv, "endpoint="+url.QueryEscape("+15555550123"))
	if d.MessageID != *out.MessageId || d.Protocol != "sms" || d.Type != "Notification" || d.Payload != "Your code is 123456" ||
		d.TopicARN != "" || d.SubscriptionARN != "" || d.MessageAttributes["AWS.SNS.SMS.SMSType"].StringValue != "Transactional" ||
		d.MessageAttributes["AWS.SNS.SMS.SenderID"].StringValue != "Shop" {
		t.Errorf("record = %+v", d)
	}
	_, err = c.Publish(ctx, &awssns.PublishInput{PhoneNumber: aws.String("555-CALL"), Message: aws.String("x")})
	wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: PhoneNumber Reason: 555-CALL is not valid to publish to")
	_, err = c.Publish(ctx, &awssns.PublishInput{PhoneNumber: aws.String("+15555550123"), Message: aws.String("")})
	wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: Empty message")
	_, err = c.Publish(ctx, &awssns.PublishInput{PhoneNumber: aws.String("+15555550123"), Message: aws.String("x"), MessageGroupId: aws.String("g")})
	wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: PhoneNumber Reason: a publish to a phone number takes no MessageGroupId or MessageDeduplicationId")
	if n := len(deliveries(t, srv, "").Deliveries); n != 1 {
		t.Errorf("%d records after the refused publishes, want 1", n)
	}
}

// TestSNSDeliveriesFilterAndClear: the admin API's filters select by
// protocol, endpoint and topic (name or ARN) in the request's account;
// DELETE clears what they select and nothing else, and refuses a request
// a browser marks as another site's; a reset of the account clears them.
func TestSNSDeliveriesFilterAndClear(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	a, b := mustCreateTopic(t, c, "a"), mustCreateTopic(t, c, "b")
	subscribeOther(t, c, a, "sms", "+15555550100", nil)
	subscribeOther(t, c, b, "sms", "+15555550100", nil)
	subscribeOther(t, c, b, "sms", "+15555550199", nil)
	for _, topic := range []string{a, b} {
		if _, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("m")}); err != nil {
			t.Fatal(err)
		}
	}
	count := func(query string) int { return len(deliveries(t, srv, query).Deliveries) }
	if n, byName, byARN, byEndpoint, other := count(""), count("topic=b"), count("topic="+url.QueryEscape(b)),
		count("endpoint="+url.QueryEscape("+15555550100")), count("protocol=email"); n != 3 || byName != 2 || byARN != 2 || byEndpoint != 2 || other != 0 {
		t.Errorf("counts: all %d, topic b %d, b's ARN %d, +15555550100 %d, email %d; want 3 2 2 2 0", n, byName, byARN, byEndpoint, other)
	}
	code, _, body := fetch(t, http.MethodDelete, srv.URL+"/admin/api/sns/deliveries?topic=b", http.Header{"Sec-Fetch-Site": {"cross-site"}}, "")
	if code != http.StatusForbidden || count("") != 3 {
		t.Errorf("a cross-site DELETE: %d %s, %d records left; want 403 and all 3", code, body, count(""))
	}
	code, _, body = fetch(t, http.MethodDelete, srv.URL+"/admin/api/sns/deliveries?topic=b&endpoint="+url.QueryEscape("+15555550100"), nil, "")
	if code != http.StatusOK || body != "{\n  \"cleared\": 1\n}\n" {
		t.Errorf("DELETE: %d %q, want 200 cleared 1", code, body)
	}
	if n, left := count(""), count("topic=a"); n != 2 || left != 1 {
		t.Errorf("after clearing one, %d records and %d of topic a; want 2 and 1", n, left)
	}
	code, _, _ = fetch(t, http.MethodDelete, srv.URL+"/admin/api/sns/deliveries", nil, "")
	if code != http.StatusOK || count("") != 0 {
		t.Errorf("DELETE of all: %d, %d left", code, count(""))
	}
	if _, err := c.Publish(ctx, &awssns.PublishInput{PhoneNumber: aws.String("+15555550100"), Message: aws.String("m")}); err != nil {
		t.Fatal(err)
	}
	if code := post(t, srv.URL+"/admin/api/reset", "{}", nil); code != http.StatusOK || count("") != 0 {
		t.Errorf("reset: %d, %d records left; want 200 and none", code, count(""))
	}
}

// TestSNSRawDeliveryProtocols: RawMessageDelivery, true or false, is
// refused with AWS's text on a subscription of a protocol without raw
// delivery (email, email-json, sms, lambda), on Subscribe and on
// SetSubscriptionAttributes; firehose takes it.
func TestSNSRawDeliveryProtocols(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	topic := mustCreateTopic(t, c, "rawness")
	for _, tc := range []struct{ protocol, endpoint string }{
		{"email", "ops@example.com"}, {"email-json", "ops@example.com"}, {"sms", "+15555550100"}, {"lambda", lambdaEndpoint},
	} {
		for _, v := range []string{"true", "false"} {
			_, err := c.Subscribe(ctx, &awssns.SubscribeInput{TopicArn: aws.String(topic), Protocol: aws.String(tc.protocol),
				Endpoint: aws.String(tc.endpoint), Attributes: map[string]string{"RawMessageDelivery": v}})
			wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: Delivery protocol ["+tc.protocol+"] does not support raw message delivery.")
		}
	}
	sub := subscribeOther(t, c, topic, "lambda", lambdaEndpoint, nil)
	_, err := c.SetSubscriptionAttributes(ctx, &awssns.SetSubscriptionAttributesInput{SubscriptionArn: aws.String(sub),
		AttributeName: aws.String("RawMessageDelivery"), AttributeValue: aws.String("true")})
	wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: Delivery protocol [lambda] does not support raw message delivery.")
	stream := subscribeOther(t, c, topic, "firehose", firehoseEndpoint, map[string]string{"SubscriptionRoleArn": firehoseRole})
	if _, err := c.SetSubscriptionAttributes(ctx, &awssns.SetSubscriptionAttributesInput{SubscriptionArn: aws.String(stream),
		AttributeName: aws.String("RawMessageDelivery"), AttributeValue: aws.String("true")}); err != nil {
		t.Errorf("firehose RawMessageDelivery: %v", err)
	}
}
