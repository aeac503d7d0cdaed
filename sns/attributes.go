package sns

import (
	"encoding/json"
	"strconv"

	"github.com/baton-sqs/baton"
)

// attrSpec is what SNS accepts of one topic attribute.
type attrSpec struct {
	// settable: CreateTopic and SetTopicAttributes take it (FifoTopic only
	// CreateTopic).
	settable bool
	// values, if set, are the values it may have.
	values []string
	// json: the value is a JSON object.
	json bool
	// notBuilt: Baton refuses it, saying it does not serve it yet, rather
	// than keep a setting it would not honour.
	notBuilt bool
}

// topicAttributes are the attributes a topic may be given (AWS's SNS API
// reference, SetTopicAttributes and CreateTopic).
var topicAttributes = map[string]attrSpec{
	"DisplayName":      {settable: true},
	"Policy":           {settable: true, json: true},
	"SignatureVersion": {settable: true, values: []string{"1", "2"}},
	"TracingConfig":    {settable: true, values: []string{"PassThrough", "Active"}},
	"KmsMasterKeyId":   {settable: true},
	"FifoTopic":        {settable: true, values: []string{"true", "false"}},
	// The most bytes a publish may carry (maxsize.go).
	"MaximumMessageSize": {settable: true},
	// The defaults of HTTP/S deliveries (deliverypolicy.go).
	"DeliveryPolicy": {settable: true},
	// FIFO topics only (fifo.go).
	"ContentBasedDeduplication": {settable: true, values: []string{"true", "false"}},
	"FifoThroughputScope":       {settable: true, values: []string{"Topic", "MessageGroup"}},
	"ArchivePolicy":             {settable: true, notBuilt: true},
	"DataProtectionPolicy":      {settable: true, notBuilt: true},
}

func init() {
	// Delivery status logging: stored and shown, as AWS shows them; Baton
	// writes no delivery logs.
	for _, proto := range []string{"HTTP", "Firehose", "Lambda", "SQS", "Application"} {
		for _, a := range []string{"SuccessFeedbackRoleArn", "FailureFeedbackRoleArn", "SuccessFeedbackSampleRate"} {
			topicAttributes[proto+a] = attrSpec{settable: true}
		}
	}
}

// checkTopicAttributes checks the attributes of a CreateTopic.
func checkTopicAttributes(attrs map[string]string) error {
	for name, v := range attrs {
		if !topicAttributes[name].settable {
			return invalidParameter("AttributeName")
		}
		if err := checkTopicAttribute(name, v); err != nil {
			return err
		}
		if err := checkFIFOOnly(name, attrs["FifoTopic"] == "true"); err != nil {
			return err
		}
	}
	return nil
}

// checkTopicAttribute checks one attribute's value.
func checkTopicAttribute(name, v string) error {
	spec := topicAttributes[name]
	switch {
	case spec.notBuilt:
		return notBuilt("%s", name)
	case spec.values != nil && !contains(spec.values, v):
		return invalidParameter("%s", name)
	case spec.json && v != "" && !isJSONObject(v):
		return invalidParameter("%s Reason: failed to parse JSON", name)
	case name == "DeliveryPolicy":
		_, err := checkTopicDeliveryPolicy(v)
		return err
	case name == "MaximumMessageSize":
		return checkMaximumMessageSize(v)
	}
	return nil
}

func contains(vs []string, v string) bool {
	for _, x := range vs {
		if x == v {
			return true
		}
	}
	return false
}

func isJSONObject(s string) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal([]byte(s), &m) == nil && m != nil
}

// defaultEffectiveDeliveryPolicy is what AWS shows for a topic without a
// DeliveryPolicy.
const defaultEffectiveDeliveryPolicy = `{"http":{"defaultHealthyRetryPolicy":{"minDelayTarget":20,"maxDelayTarget":20,"numRetries":3,"numMaxDelayRetries":0,"numNoDelayRetries":0,"numMinDelayRetries":0,"backoffFunction":"linear"},"disableSubscriptionOverrides":false,"defaultRequestPolicy":{"headerContentType":"text/plain; charset=UTF-8"}}}`

// defaultPolicy is the access policy AWS gives a new topic: its owner's
// account may do everything to it.
func defaultPolicy(topicARN, account string) string {
	arn, _ := json.Marshal(topicARN)
	acct, _ := json.Marshal(account)
	actions := make([]string, len(topicActions))
	for i, a := range topicActions {
		actions[i] = "SNS:" + a
	}
	list, _ := json.Marshal(actions)
	return `{"Version":"2008-10-17","Id":"__default_policy_ID","Statement":[{"Sid":"__default_statement_ID","Effect":"Allow",` +
		`"Principal":{"AWS":"*"},"Action":` + string(list) + `,` +
		`"Resource":` + string(arn) + `,"Condition":{"StringEquals":{"AWS:SourceOwner":` + string(acct) + `}}}]}`
}

// renderTopicAttributes is GetTopicAttributes's answer: the read-only
// attributes, the defaults of those never set, and those set.
func renderTopicAttributes(t *baton.Topic, subs []*baton.Subscription) map[string]string {
	arn := TopicARN(t.Region, t.Account, t.Name)
	confirmed, pending := 0, 0
	for _, sub := range subs {
		if sub.Pending {
			pending++
		} else {
			confirmed++
		}
	}
	out := map[string]string{
		"TopicArn":                arn,
		"Owner":                   t.Account,
		"DisplayName":             "",
		"Policy":                  defaultPolicy(arn, t.Account),
		"EffectiveDeliveryPolicy": effectiveTopicDeliveryPolicy(t.Attributes["DeliveryPolicy"]),
		"SubscriptionsConfirmed":  strconv.Itoa(confirmed),
		"SubscriptionsPending":    strconv.Itoa(pending),
		// Baton forgets a subscription when it is deleted.
		"SubscriptionsDeleted": "0",
	}
	for k, v := range t.Attributes {
		out[k] = v
	}
	return out
}
