package accesspolicy_test

import (
	"strings"
	"testing"

	"github.com/baton-sqs/baton/sns/accesspolicy"
)

const (
	queue = "arn:aws:sqs:us-east-2:123456789012:MyQueue"
	topic = "arn:aws:sns:us-east-2:123456789012:MyTopic"
	other = "arn:aws:sns:us-east-2:123456789012:OtherTopic"
)

// request is SNS delivering a publish of topicARN to MyQueue.
func request(topicARN string) accesspolicy.Request {
	return accesspolicy.Request{Service: "sns.amazonaws.com", Action: "sqs:SendMessage", Resource: queue,
		Context: map[string]string{"aws:SourceArn": topicARN, "aws:SourceAccount": "123456789012"}}
}

// statement wraps statements in a policy document of version 2012-10-17.
func policy(statements ...string) string {
	return `{"Version":"2012-10-17","Statement":[` + strings.Join(statements, ",") + `]}`
}

// allowSNS is the statement of AWS's documentation ("Configuring an Amazon
// SNS dead-letter queue for a subscription", Amazon SNS Developer Guide),
// for MyQueue.
const allowSNS = `{"Effect":"Allow","Principal":{"Service":"sns.amazonaws.com"},"Action":"SQS:SendMessage",` +
	`"Resource":"` + queue + `","Condition":{"ArnEquals":{"aws:SourceArn":"` + topic + `"}}}`

// TestEvaluate holds the evaluator to AWS's documented policies and rules:
// the service principal's own statement, the console's and the SDKs'
// {"AWS":"*"} form, wildcards in actions and resources, conditions on the
// topic and its account, explicit deny over allow over implicit deny, and
// Undecided where the policy says something Baton does not evaluate.
func TestEvaluate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		policy string
		topic  string
		want   accesspolicy.Decision
		stmt   string // the statement named, if any
	}{
		{"no policy", "", topic, accesspolicy.ImplicitDeny, ""},
		{"AWS's SNS dead-letter queue example, its topic", policy(allowSNS), topic, accesspolicy.Allow, "statement 1"},
		{"AWS's SNS dead-letter queue example, another topic", policy(allowSNS), other, accesspolicy.ImplicitDeny, ""},
		{"AWS's example with no Version", `{"Statement":[` + allowSNS + `]}`, topic, accesspolicy.Allow, "statement 1"},
		{"one statement, not a list (the SQS guide's examples)",
			`{"Version":"2012-10-17","Statement":` + allowSNS + `}`, topic, accesspolicy.Allow, "statement 1"},
		// The policy the AWS SDK for Java's Topics.subscribeQueue writes
		// (its documentation quotes it): {"AWS":["*"]} and ArnLike.
		{"the SDK's subscribeQueue policy", `{"Version":"2008-10-17","Statement":[{"Sid":"topic-subscription-` + topic + `",` +
			`"Effect":"Allow","Principal":{"AWS":["*"]},"Action":["sqs:SendMessage"],"Resource":["` + queue + `"],` +
			`"Condition":{"ArnLike":{"aws:SourceArn":["` + topic + `"]}}}]}`, topic, accesspolicy.Allow, "topic-subscription-" + topic},
		// The AWS SDK for Ruby's example: "*" principal's form {"AWS":"*"},
		// SQS:SendMessage in capitals, the key spelled AWS:SourceArn.
		{"the Ruby SDK's example", `{"Version":"2008-10-17","Id":"` + queue + `/SQSDefaultPolicy","Statement":[{"Sid":"__default_statement_ID",` +
			`"Effect":"Allow","Principal":{"AWS":"*"},"Action":["SQS:SendMessage"],"Resource":"` + queue + `",` +
			`"Condition":{"ArnEquals":{"AWS:SourceArn":"` + topic + `"}}}]}`, topic, accesspolicy.Allow, "__default_statement_ID"},
		{"Principal \"*\"", policy(`{"Effect":"Allow","Principal":"*","Action":"sqs:SendMessage","Resource":"` + queue + `"}`),
			topic, accesspolicy.Allow, "statement 1"},
		// The SQS guide's first example: an account, not the service.
		{"an account's principal", policy(`{"Sid":"Queue1_SendMessage","Effect":"Allow","Principal":{"AWS":"111122223333"},` +
			`"Action":"sqs:SendMessage","Resource":"` + queue + `"}`), topic, accesspolicy.ImplicitDeny, ""},
		{"another service", policy(`{"Effect":"Allow","Principal":{"Service":"s3.amazonaws.com"},"Action":"sqs:SendMessage","Resource":"` + queue + `"}`),
			topic, accesspolicy.ImplicitDeny, ""},
		{"a list of services", policy(`{"Effect":"Allow","Principal":{"Service":["s3.amazonaws.com","sns.amazonaws.com"]},"Action":"sqs:SendMessage","Resource":"` + queue + `"}`),
			topic, accesspolicy.Allow, "statement 1"},
		{"sqs:*", policy(`{"Effect":"Allow","Principal":"*","Action":"sqs:*","Resource":"` + queue + `"}`), topic, accesspolicy.Allow, "statement 1"},
		{"*", policy(`{"Effect":"Allow","Principal":"*","Action":"*","Resource":"` + queue + `"}`), topic, accesspolicy.Allow, "statement 1"},
		{"SQS:send* in any case", policy(`{"Effect":"Allow","Principal":"*","Action":"SQS:send*","Resource":"` + queue + `"}`), topic, accesspolicy.Allow, "statement 1"},
		{"sqs:SendMessag?", policy(`{"Effect":"Allow","Principal":"*","Action":"sqs:SendMessag?","Resource":"` + queue + `"}`), topic, accesspolicy.Allow, "statement 1"},
		{"another action", policy(`{"Effect":"Allow","Principal":"*","Action":["sqs:ReceiveMessage","sqs:DeleteMessage"],"Resource":"` + queue + `"}`),
			topic, accesspolicy.ImplicitDeny, ""},
		{"NotAction of another action", policy(`{"Effect":"Allow","Principal":"*","NotAction":"sqs:ReceiveMessage","Resource":"` + queue + `"}`),
			topic, accesspolicy.Allow, "statement 1"},
		{"NotAction of SendMessage", policy(`{"Effect":"Allow","Principal":"*","NotAction":"sqs:SendMessage","Resource":"` + queue + `"}`),
			topic, accesspolicy.ImplicitDeny, ""},
		{"a resource wildcard", policy(`{"Effect":"Allow","Principal":"*","Action":"sqs:SendMessage","Resource":"arn:aws:sqs:*:123456789012:My*"}`),
			topic, accesspolicy.Allow, "statement 1"},
		{"Resource *", policy(`{"Effect":"Allow","Principal":"*","Action":"sqs:SendMessage","Resource":"*"}`), topic, accesspolicy.Allow, "statement 1"},
		{"another queue", policy(`{"Effect":"Allow","Principal":"*","Action":"sqs:SendMessage","Resource":"arn:aws:sqs:us-east-2:123456789012:Other"}`),
			topic, accesspolicy.ImplicitDeny, ""},
		{"a resource differing in case", policy(`{"Effect":"Allow","Principal":"*","Action":"sqs:SendMessage","Resource":"arn:aws:sqs:us-east-2:123456789012:myqueue"}`),
			topic, accesspolicy.ImplicitDeny, ""},
		{"NotResource of another queue", policy(`{"Effect":"Allow","Principal":"*","Action":"sqs:SendMessage","NotResource":"arn:aws:sqs:us-east-2:123456789012:Other"}`),
			topic, accesspolicy.Allow, "statement 1"},
		{"ArnLike over a wildcard of topics", policy(`{"Effect":"Allow","Principal":"*","Action":"sqs:SendMessage","Resource":"` + queue + `",` +
			`"Condition":{"ArnLike":{"aws:SourceArn":"arn:aws:sns:*:123456789012:My*"}}}`), topic, accesspolicy.Allow, "statement 1"},
		{"ArnLike is case-sensitive", policy(`{"Effect":"Allow","Principal":"*","Action":"sqs:SendMessage","Resource":"` + queue + `",` +
			`"Condition":{"ArnLike":{"aws:SourceArn":"arn:aws:sns:*:123456789012:mytopic"}}}`), topic, accesspolicy.ImplicitDeny, ""},
		{"ArnEquals with a list: any", policy(`{"Effect":"Allow","Principal":"*","Action":"sqs:SendMessage","Resource":"` + queue + `",` +
			`"Condition":{"ArnEquals":{"aws:SourceArn":["` + other + `","` + topic + `"]}}}`), topic, accesspolicy.Allow, "statement 1"},
		{"ArnEqualsIfExists", policy(`{"Effect":"Allow","Principal":"*","Action":"sqs:SendMessage","Resource":"` + queue + `",` +
			`"Condition":{"ArnEqualsIfExists":{"aws:SourceArn":"` + topic + `"}}}`), topic, accesspolicy.Allow, "statement 1"},
		{"ArnNotEquals another topic", policy(`{"Effect":"Allow","Principal":"*","Action":"sqs:SendMessage","Resource":"` + queue + `",` +
			`"Condition":{"ArnNotEquals":{"aws:SourceArn":"` + other + `"}}}`), topic, accesspolicy.Allow, "statement 1"},
		{"ArnNotLike a list naming it", policy(`{"Effect":"Allow","Principal":"*","Action":"sqs:SendMessage","Resource":"` + queue + `",` +
			`"Condition":{"ArnNotLike":{"aws:SourceArn":["` + other + `","arn:aws:sns:*:*:MyT*"]}}}`), topic, accesspolicy.ImplicitDeny, ""},
		{"StringEquals aws:SourceAccount", policy(`{"Effect":"Allow","Principal":{"Service":"sns.amazonaws.com"},"Action":"sqs:SendMessage","Resource":"` + queue + `",` +
			`"Condition":{"StringEquals":{"aws:SourceAccount":"123456789012"}}}`), topic, accesspolicy.Allow, "statement 1"},
		{"StringEquals aws:SourceAccount as a number", policy(`{"Effect":"Allow","Principal":"*","Action":"sqs:SendMessage","Resource":"` + queue + `",` +
			`"Condition":{"StringEquals":{"aws:SourceAccount":123456789012}}}`), topic, accesspolicy.Allow, "statement 1"},
		{"StringEquals another account", policy(`{"Effect":"Allow","Principal":"*","Action":"sqs:SendMessage","Resource":"` + queue + `",` +
			`"Condition":{"StringEquals":{"aws:SourceAccount":"111122223333"}}}`), topic, accesspolicy.ImplicitDeny, ""},
		{"StringLike and StringNotEquals together", policy(`{"Effect":"Allow","Principal":"*","Action":"sqs:SendMessage","Resource":"` + queue + `",` +
			`"Condition":{"StringLike":{"aws:SourceArn":"*:MyTopic"},"StringNotEquals":{"aws:SourceAccount":"111122223333"}}}`), topic, accesspolicy.Allow, "statement 1"},
		{"two conditions, one failing", policy(`{"Effect":"Allow","Principal":"*","Action":"sqs:SendMessage","Resource":"` + queue + `",` +
			`"Condition":{"ArnEquals":{"aws:SourceArn":"` + topic + `"},"StringEquals":{"aws:SourceAccount":"111122223333"}}}`), topic, accesspolicy.ImplicitDeny, ""},
		{"Null false", policy(`{"Effect":"Allow","Principal":"*","Action":"sqs:SendMessage","Resource":"` + queue + `",` +
			`"Condition":{"Null":{"aws:SourceArn":"false"}}}`), topic, accesspolicy.Allow, "statement 1"},

		// Explicit deny wins over allow.
		{"a Deny of everyone", policy(allowSNS, `{"Sid":"NoOne","Effect":"Deny","Principal":"*","Action":"sqs:SendMessage","Resource":"`+queue+`"}`),
			topic, accesspolicy.ExplicitDeny, "NoOne"},
		{"a Deny of the service, before the Allow", policy(`{"Sid":"NoSNS","Effect":"Deny","Principal":{"Service":"sns.amazonaws.com"},"Action":"sqs:*","Resource":"*"}`, allowSNS),
			topic, accesspolicy.ExplicitDeny, "NoSNS"},
		{"a Deny of other topics, for this one", policy(allowSNS, `{"Sid":"OnlyMine","Effect":"Deny","Principal":"*","Action":"sqs:SendMessage","Resource":"`+queue+`",`+
			`"Condition":{"ArnNotEquals":{"aws:SourceArn":"`+topic+`"}}}`), topic, accesspolicy.Allow, "statement 1"},
		{"a Deny of other topics, for another", policy(`{"Effect":"Allow","Principal":"*","Action":"sqs:SendMessage","Resource":"`+queue+`"}`,
			`{"Sid":"OnlyMine","Effect":"Deny","Principal":"*","Action":"sqs:SendMessage","Resource":"`+queue+`",`+
				`"Condition":{"ArnNotEquals":{"aws:SourceArn":"`+topic+`"}}}`), other, accesspolicy.ExplicitDeny, "OnlyMine"},
		{"a Deny with NotPrincipal the service", policy(allowSNS, `{"Sid":"OthersNot","Effect":"Deny","NotPrincipal":{"Service":"sns.amazonaws.com"},"Action":"*","Resource":"*"}`),
			topic, accesspolicy.Allow, "statement 1"},
		{"a Deny of another action", policy(allowSNS, `{"Effect":"Deny","Principal":"*","Action":"sqs:DeleteQueue","Resource":"*"}`),
			topic, accesspolicy.Allow, "statement 1"},

		// What Baton does not evaluate leaves the answer undecided, unless
		// another statement settles it.
		{"an IP condition", policy(`{"Sid":"FromMyNet","Effect":"Allow","Principal":"*","Action":"sqs:SendMessage","Resource":"` + queue + `",` +
			`"Condition":{"IpAddress":{"aws:SourceIp":"192.0.2.0/24"}}}`), topic, accesspolicy.Undecided, "FromMyNet"},
		{"a key the request does not carry", policy(`{"Effect":"Allow","Principal":"*","Action":"sqs:SendMessage","Resource":"` + queue + `",` +
			`"Condition":{"StringEquals":{"aws:PrincipalOrgID":"o-123"}}}`), topic, accesspolicy.Undecided, "statement 1"},
		{"an unknown Allow beside a known one", policy(`{"Effect":"Allow","Principal":"*","Action":"sqs:SendMessage","Resource":"`+queue+`",`+
			`"Condition":{"IpAddress":{"aws:SourceIp":"192.0.2.0/24"}}}`, allowSNS), topic, accesspolicy.Allow, "statement 2"},
		{"an unknown Deny beside an Allow", policy(allowSNS, `{"Sid":"Maybe","Effect":"Deny","Principal":"*","Action":"sqs:SendMessage","Resource":"`+queue+`",`+
			`"Condition":{"Bool":{"aws:SecureTransport":"false"}}}`), topic, accesspolicy.Undecided, "Maybe"},
		{"an unknown Deny and no Allow", policy(`{"Effect":"Deny","Principal":"*","Action":"sqs:SendMessage","Resource":"` + queue + `",` +
			`"Condition":{"Bool":{"aws:SecureTransport":"false"}}}`), topic, accesspolicy.ImplicitDeny, ""},
		{"an unknown condition in a statement that does not apply", policy(`{"Effect":"Deny","Principal":"*","Action":"sqs:ReceiveMessage","Resource":"`+queue+`",`+
			`"Condition":{"Bool":{"aws:SecureTransport":"false"}}}`, allowSNS), topic, accesspolicy.Allow, "statement 2"},
		{"a policy variable", policy(`{"Effect":"Allow","Principal":"*","Action":"sqs:SendMessage","Resource":"` + queue + `",` +
			`"Condition":{"StringEquals":{"aws:SourceAccount":"${aws:PrincipalAccount}"}}}`), topic, accesspolicy.Undecided, "statement 1"},
		{"no Resource", policy(`{"Effect":"Allow","Principal":"*","Action":"sqs:SendMessage"}`), topic, accesspolicy.Undecided, "statement 1"},
		{"no Principal", policy(`{"Effect":"Allow","Action":"sqs:SendMessage","Resource":"*"}`), topic, accesspolicy.Undecided, "statement 1"},
		{"not a policy", `[1,2]`, topic, accesspolicy.Undecided, ""},
		{"no Statement", `{"Version":"2012-10-17"}`, topic, accesspolicy.Undecided, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := accesspolicy.Evaluate(tc.policy, request(tc.topic))
			if got.Decision != tc.want || got.Statement != tc.stmt {
				t.Errorf("Evaluate = %v by %q (%s), want %v by %q", got.Decision, got.Statement, got.Why, tc.want, tc.stmt)
			}
			if (got.Decision == accesspolicy.Undecided || got.Decision == accesspolicy.ImplicitDeny) && got.Why == "" {
				t.Errorf("Evaluate = %v without a reason", got.Decision)
			}
		})
	}
}

// TestEvaluateSaysWhy: an undecided answer names what Baton does not
// evaluate, in words a log line can carry.
func TestEvaluateSaysWhy(t *testing.T) {
	t.Parallel()
	got := accesspolicy.Evaluate(policy(`{"Effect":"Allow","Principal":"*","Action":"sqs:SendMessage","Resource":"`+queue+`",`+
		`"Condition":{"IpAddress":{"aws:SourceIp":"192.0.2.0/24"}}}`), request(topic))
	if want := "its condition operator IpAddress is one Baton does not evaluate"; got.Why != want {
		t.Errorf("Why = %q, want %q", got.Why, want)
	}
	got = accesspolicy.Evaluate(`{"Statement":[{"Effect":"Allow","Principal":"*","Action":"sqs:SendMessage","Resource":"*","Condition":"x"}]}`, request(topic))
	if got.Decision != accesspolicy.Undecided || !strings.Contains(got.Why, "statement 1: its Condition") {
		t.Errorf("a bad Condition: %v %q, want undecided naming statement 1's Condition", got.Decision, got.Why)
	}
}
