package sns_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
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

// FuzzFilterPolicy feeds any policy text and scope to ParseFilterPolicy,
// to Subscribe's check of its attributes and to SetSubscriptionAttributes,
// and any message (a body, and attributes of any name, type and value) to
// a policy compiled: a policy is taken, or refused with InvalidParameter
// and AWS's "Invalid parameter: " text (a client error, never a server
// one), alike on every path; a policy taken matches any message, the same
// way twice, without a panic. It is seeded with the filter policy tests'
// cases (filter_test.go).
func FuzzFilterPolicy(f *testing.F) {
	for _, tc := range filterCases() {
		f.Add(tc.policy, tc.scope, tc.body, fuzzAttributes(tc.attrs))
	}
	for _, tc := range refusalCases() {
		f.Add(tc.policy, strings.ReplaceAll(tc.scope, ScopeBodyOrAttr, sns.ScopeBody), "", "")
	}
	f.Add(`{"a":["x",{"prefix":"p"},{"numeric":[">",0,"<=",5]}],"$or":[{"b":[{"exists":false}]},{"c":[{"cidr":"10.0.0.0/8"}]}]}`,
		"", `{"a":"x"}`, "a\x1fString.Array\x1f[\"x\",1,true,null]")
	f.Add(`{"o":{"k":[{"anything-but":{"prefix":"a"}},{"equals-ignore-case":"Q"}]},"n":[1e2,null,true]}`, sns.ScopeBody,
		`{"o":{"k":["A",[["q"]]]},"n":100}`, "n\x1fNumber\x1f1e2")
	f.Add(`{"k":[{"numeric":["=",1,2]}]}`, sns.ScopeAttributes, "m", "k\x1fNumber\x1fx\x1ek\x1fString\x1f1")
	f.Add(`{"k":[{"cidr":"::ffff:1.2.3.4/200"}]}`, sns.ScopeBody, `[1]`, "k\x1fBinary\x1f")
	f.Add(`{"$or":[{"a":[{"suffix":""}]},{"$or":[{"b":[1]},{"c":[2]}]}]}`, "", `{}`, "c\x1fString\x1f2")
	f.Add("", "", "m", "")
	f.Add(`{"a":["x"]}`, "Body", "m", "")
	svc, c, sub := fuzzSubscription(f)
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, policy, scope, body, attrs string) {
		fp, err := sns.ParseFilterPolicy(policy, scope)
		clientRefusal(t, "ParseFilterPolicy", policy, scope, err)
		// What Subscribe and SetSubscriptionAttributes answer: the same,
		// but that "" is no policy and the scope must be one of two.
		want := err == nil || policy == ""
		sa := map[string]string{"FilterPolicy": policy}
		if scope != "" {
			sa["FilterPolicyScope"] = scope
			want = want && (scope == sns.ScopeAttributes || scope == sns.ScopeBody)
		}
		_, err = sns.CheckSubscriptionAttributes(sa)
		clientRefusal(t, "Subscribe", policy, scope, err)
		if (err == nil) != want {
			t.Fatalf("Subscribe with FilterPolicy %q, FilterPolicyScope %q: %v; ParseFilterPolicy took it: %v", policy, scope, err, fp != nil)
		}
		if took := setFilterPolicy(ctx, t, svc, c, sub, policy, scope); took != want {
			t.Fatalf("SetSubscriptionAttributes FilterPolicy %q, FilterPolicyScope %q: taken %v; Subscribe took it: %v", policy, scope, took, want)
		}
		if fp == nil {
			return
		}
		as := parseFuzzAttributes(attrs)
		if first, again := fp.Match(body, as), fp.Match(body, as); first != again {
			t.Fatalf("policy %q matches body %q, attributes %v: %v, then %v", policy, body, as, first, again)
		}
	})
}

// clientRefusal fails the test unless err is nil or InvalidParameter with
// AWS's text.
func clientRefusal(t *testing.T, call, policy, scope string, err error) {
	t.Helper()
	if e := baton.AsError(err); err != nil && (e.Code != baton.ErrSNSInvalidParameter || !strings.HasPrefix(e.Message, "Invalid parameter: ")) {
		t.Fatalf("%s(FilterPolicy %q, scope %q): %v, want InvalidParameter or success", call, policy, scope, err)
	}
}

// fuzzSubscription makes a topic and a subscription of a queue to it, whose
// filter attributes the fuzz target sets.
func fuzzSubscription(f *testing.F) (*sns.Service, sns.Caller, string) {
	st := memstore.New()
	eng, err := engine.New(engine.Config{Store: st, Clock: clock.NewFake(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(eng.Close)
	svc := sns.ForStore(eng, st, slog.New(slog.NewTextHandler(io.Discard, nil)))
	f.Cleanup(svc.Close)
	c, ctx := sns.Caller{Account: "000000000000"}, context.Background()
	topic, err := svc.CreateTopic(ctx, c, sns.CreateTopicParams{Name: "t"})
	if err != nil {
		f.Fatal(err)
	}
	sub, err := svc.Subscribe(ctx, c, sns.SubscribeParams{TopicARN: topic, Protocol: "sqs", Endpoint: "arn:aws:sqs:us-east-1:000000000000:q"})
	if err != nil {
		f.Fatal(err)
	}
	return svc, c, sub
}

// setFilterPolicy gives the subscription policy under scope ("" leaves the
// default) as SetSubscriptionAttributes calls do: the policy removed, the
// scope set, then the policy. It says whether both were taken, and fails
// the test on any answer but success or InvalidParameter.
func setFilterPolicy(ctx context.Context, t *testing.T, svc *sns.Service, c sns.Caller, sub, policy, scope string) bool {
	t.Helper()
	empty := ""
	if err := svc.SetSubscriptionAttributes(ctx, c, sub, "FilterPolicy", &empty); err != nil {
		t.Fatalf("removing the policy: %v", err)
	}
	if scope == "" {
		scope = sns.ScopeAttributes
	}
	err := svc.SetSubscriptionAttributes(ctx, c, sub, "FilterPolicyScope", &scope)
	clientRefusal(t, "SetSubscriptionAttributes", "", scope, err)
	if err != nil {
		return false
	}
	err = svc.SetSubscriptionAttributes(ctx, c, sub, "FilterPolicy", &policy)
	clientRefusal(t, "SetSubscriptionAttributes", policy, scope, err)
	return err == nil
}

// fuzzAttributes writes message attributes as the fuzz target reads them:
// records split by \x1e, each a name, a type and a value split by \x1f.
func fuzzAttributes(as []sns.MessageAttribute) string {
	var b strings.Builder
	for i, a := range as {
		if i > 0 {
			b.WriteByte(0x1e)
		}
		v := a.StringValue
		if strings.HasPrefix(a.DataType, "Binary") {
			v = string(a.BinaryValue)
		}
		b.WriteString(a.Name + "\x1f" + a.DataType + "\x1f" + v)
	}
	return b.String()
}

// parseFuzzAttributes reads what fuzzAttributes writes, whatever it is: a
// missing part is empty, a Binary type's value is its bytes.
func parseFuzzAttributes(s string) []sns.MessageAttribute {
	if s == "" {
		return nil
	}
	var out []sns.MessageAttribute
	for _, rec := range strings.Split(s, "\x1e") {
		parts := append(strings.SplitN(rec, "\x1f", 3), "", "")
		a := sns.MessageAttribute{Name: parts[0], MessageAttribute: baton.MessageAttribute{DataType: parts[1]}}
		if strings.HasPrefix(a.DataType, "Binary") {
			a.BinaryValue = []byte(parts[2])
		} else {
			a.StringValue = parts[2]
		}
		out = append(out, a)
	}
	return out
}
