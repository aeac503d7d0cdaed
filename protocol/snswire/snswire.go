// Package snswire holds the request and response structs of the SNS API,
// spelled as AWS's SNS model spells them. SNS speaks only the Query
// protocol, and unlike SQS its lists and maps are not flattened: a `query`
// tag names the member as the wire does ("Attributes.entry,key,value" for
// Attributes.entry.N.key and .value, "Tags.member" for Tags.member.N.Key),
// and a response's list or map is a struct (AttributeMap, TopicList, …)
// whose element wraps its members, written even when empty as AWS writes
// it.
package snswire

// AttributeMap is a response's Attributes: <entry><key/><value/></entry>…
type AttributeMap struct {
	Entry map[string]string `query:"entry,key,value"`
}

// Tag is one topic tag.
type Tag struct {
	Key   string
	Value string
}

// MessageAttributeValue is one publish attribute's value.
type MessageAttributeValue struct {
	DataType    string
	StringValue string
	BinaryValue []byte
}

// MessageAttribute is MessageAttributes.entry.N: a name and a value, read
// as a list so that the request's order is kept.
type MessageAttribute struct {
	Name  string
	Value MessageAttributeValue
}

type CreateTopicInput struct {
	Name                 string
	Attributes           map[string]string `query:"Attributes.entry,key,value"`
	Tags                 []Tag             `query:"Tags.member"`
	DataProtectionPolicy string
}

type CreateTopicOutput struct{ TopicArn string }

type DeleteTopicInput struct{ TopicArn string }

type ListTopicsInput struct{ NextToken string }

// TopicEntry is one row of ListTopics.
type TopicEntry struct{ TopicArn string }

// TopicList is ListTopics's <Topics>.
type TopicList struct {
	Member []TopicEntry `query:"member"`
}

type ListTopicsOutput struct {
	Topics    TopicList
	NextToken string
}

type GetTopicAttributesInput struct{ TopicArn string }

type GetTopicAttributesOutput struct{ Attributes AttributeMap }

type SetTopicAttributesInput struct {
	TopicArn       string
	AttributeName  string
	AttributeValue *string
}

type SubscribeInput struct {
	TopicArn              string
	Protocol              string
	Endpoint              string
	Attributes            map[string]string `query:"Attributes.entry,key,value"`
	ReturnSubscriptionArn bool
}

type SubscribeOutput struct{ SubscriptionArn string }

type UnsubscribeInput struct{ SubscriptionArn string }

type ConfirmSubscriptionInput struct {
	TopicArn                  string
	Token                     string
	AuthenticateOnUnsubscribe string
}

type ConfirmSubscriptionOutput struct{ SubscriptionArn string }

type GetSubscriptionAttributesInput struct{ SubscriptionArn string }

type GetSubscriptionAttributesOutput struct{ Attributes AttributeMap }

type SetSubscriptionAttributesInput struct {
	SubscriptionArn string
	AttributeName   string
	AttributeValue  *string
}

type ListSubscriptionsInput struct{ NextToken string }

type ListSubscriptionsByTopicInput struct {
	TopicArn  string
	NextToken string
}

// Subscription is one row of a subscription listing.
type Subscription struct {
	SubscriptionArn string
	Owner           string
	Protocol        string
	Endpoint        string
	TopicArn        string
}

// SubscriptionList is a listing's <Subscriptions>.
type SubscriptionList struct {
	Member []Subscription `query:"member"`
}

type ListSubscriptionsOutput struct {
	Subscriptions SubscriptionList
	NextToken     string
}

type PublishInput struct {
	TopicArn               string
	TargetArn              string
	PhoneNumber            string
	Message                string
	Subject                *string
	MessageStructure       string
	MessageAttributes      []MessageAttribute `query:"MessageAttributes.entry"`
	MessageDeduplicationId *string
	MessageGroupId         *string
}

type PublishOutput struct {
	MessageId      string
	SequenceNumber string
}

type TagResourceInput struct {
	ResourceArn string
	Tags        []Tag `query:"Tags.member"`
}

// TagResourceOutput is empty: AWS answers <TagResourceResult/>.
type TagResourceOutput struct{}

type UntagResourceInput struct {
	ResourceArn string
	TagKeys     []string `query:"TagKeys.member"`
}

// UntagResourceOutput is empty: AWS answers <UntagResourceResult/>.
type UntagResourceOutput struct{}

type ListTagsForResourceInput struct{ ResourceArn string }

// TagList is ListTagsForResource's <Tags>.
type TagList struct {
	Member []Tag `query:"member"`
}

type ListTagsForResourceOutput struct{ Tags TagList }

// PublishBatchRequestEntry is one entry of PublishBatch.
type PublishBatchRequestEntry struct {
	Id                     string
	Message                string
	Subject                *string
	MessageStructure       string
	MessageAttributes      []MessageAttribute `query:"MessageAttributes.entry"`
	MessageDeduplicationId *string
	MessageGroupId         *string
}

type PublishBatchInput struct {
	TopicArn                   string
	PublishBatchRequestEntries []PublishBatchRequestEntry `query:"PublishBatchRequestEntries.member"`
}

// PublishBatchResultEntry is one published entry.
type PublishBatchResultEntry struct {
	Id             string
	MessageId      string
	SequenceNumber string
}

// BatchResultErrorEntry is one failed entry.
type BatchResultErrorEntry struct {
	Id          string
	Code        string
	Message     string
	SenderFault bool
}

// PublishBatchSuccessful is PublishBatch's <Successful>.
type PublishBatchSuccessful struct {
	Member []PublishBatchResultEntry `query:"member"`
}

// PublishBatchFailed is PublishBatch's <Failed>, written even when empty.
type PublishBatchFailed struct {
	Member []BatchResultErrorEntry `query:"member"`
}

type PublishBatchOutput struct {
	Successful PublishBatchSuccessful
	Failed     PublishBatchFailed
}

type AddPermissionInput struct {
	TopicArn     string
	Label        string
	AWSAccountId []string `query:"AWSAccountId.member"`
	ActionName   []string `query:"ActionName.member"`
}

type RemovePermissionInput struct {
	TopicArn string
	Label    string
}
