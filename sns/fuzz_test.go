package sns_test

import (
	"context"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/sns"
	"github.com/baton-sqs/baton/store/memstore"
)

// FuzzPublish feeds what a client controls of a publish (the ARN, the
// message, its structure, subject and an attribute) to Publish: whatever
// it is, the answer is a message id or a client error, never a panic or an
// internal error.
func FuzzPublish(f *testing.F) {
	f.Add("arn:aws:sns:us-east-1:000000000000:t", "m", "", "s", "a", "String", "v")
	f.Add("arn:aws:sns:us-east-1:000000000000:t", `{"default":"d","sqs":"q"}`, "json", "", "n.b", "Number", "1.5")
	f.Add("arn:aws", `{"default":{}}`, "json", "\n", "..", "Binary", "")
	f.Add("arn:aws:sns:us-east-1:000000000000:t:x", "\x00", "xml", "", "a^", "String.", "v")
	st := memstore.New()
	eng, err := engine.New(engine.Config{Store: st, Clock: clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(eng.Close)
	svc := sns.ForStore(eng, st, nil)
	c, ctx := sns.Caller{Account: "000000000000"}, context.Background()
	topic, err := svc.CreateTopic(ctx, c, sns.CreateTopicParams{Name: "t"})
	if err != nil {
		f.Fatal(err)
	}
	if _, err := eng.CreateQueue(ctx, engine.CreateQueueParams{Account: c.Account, Name: "q"}); err != nil {
		f.Fatal(err)
	}
	if _, err := svc.Subscribe(ctx, c, sns.SubscribeParams{TopicARN: topic, Protocol: "sqs", Endpoint: "arn:aws:sqs:us-east-1:000000000000:q"}); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, arn, msg, structure, subject, attrName, attrType, attrValue string) {
		p := sns.PublishParams{TopicARN: arn, Message: msg, MessageStructure: structure, Subject: &subject,
			Attributes: []sns.MessageAttribute{{Name: attrName, MessageAttribute: baton.MessageAttribute{DataType: attrType, StringValue: attrValue}}}}
		_, err := svc.Publish(ctx, c, p)
		if e := baton.AsError(err); err != nil && e.Code.Spec().Receiver {
			t.Fatalf("Publish(%q, %q, %q): a server error %v", arn, msg, structure, err)
		}
	})
}

// FuzzFilterPolicy feeds any policy text, scope and message to
// ParseFilterPolicy and Match: a policy is compiled or refused with
// InvalidParameter, and a compiled one matches any message, without a
// panic or another error.
func FuzzFilterPolicy(f *testing.F) {
	f.Add(`{"a":["x",{"prefix":"p"},{"numeric":[">",0,"<=",5]}],"$or":[{"b":[{"exists":false}]},{"c":[{"cidr":"10.0.0.0/8"}]}]}`,
		"", `{"a":"x"}`, "a", "String.Array", `["x",1,true,null]`)
	f.Add(`{"o":{"k":[{"anything-but":{"prefix":"a"}},{"equals-ignore-case":"Q"}]},"n":[1e2,null,true]}`, "MessageBody",
		`{"o":{"k":["A",[["q"]]]},"n":100}`, "n", "Number", "1e2")
	f.Add(`{"k":[{"numeric":["=",1,2]}]}`, "MessageAttributes", "m", "k", "Number", "x")
	f.Add(`{"k":[{"cidr":"::ffff:1.2.3.4/200"}]}`, "MessageBody", `[1]`, "k", "Binary", "")
	f.Add(`{"$or":[{"a":[{"suffix":""}]},{"$or":[{"b":[1]},{"c":[2]}]}]}`, "", `{}`, "c", "String", "2")
	f.Fuzz(func(t *testing.T, policy, scope, body, attrName, attrType, attrValue string) {
		fp, err := sns.ParseFilterPolicy(policy, scope)
		if err != nil {
			if e := baton.AsError(err); e.Code != baton.ErrSNSInvalidParameter {
				t.Fatalf("ParseFilterPolicy(%q, %q): %v, want InvalidParameter or success", policy, scope, err)
			}
			return
		}
		attrs := []sns.MessageAttribute{{Name: attrName, MessageAttribute: baton.MessageAttribute{DataType: attrType, StringValue: attrValue}}}
		fp.Match(body, attrs)
	})
}
