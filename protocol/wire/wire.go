// Package wire holds the request and response structs of the SQS API,
// spelled as AWS's model spells them. Field names are the JSON 1.0 member
// names; a `query` tag gives the Query protocol's flattened name:
//
//	query:"Name"            a scalar or a list flattened as Name.1, Name.2, …
//	query:"Name,Key,Value"  a map flattened as Name.N.Key and Name.N.Value
//
// A `queryjson` tag gives an output member's name in the JSON that SQS
// writes for a Query request asking for JSON (protocol/awsquery's
// WantsJSON) where it differs from the JSON 1.0 name.
//
// Optional numbers are pointers, because an absent parameter and an explicit
// zero mean different things to SQS; so are the strings whose empty value
// SQS refuses where it takes their absence (MessageGroupId).
package wire

// MessageAttributeValue is a message attribute (user or system).
type MessageAttributeValue struct {
	StringValue      string   `json:",omitempty"`
	BinaryValue      []byte   `json:",omitempty"`
	StringListValues []string `json:",omitempty" query:"StringListValue"`
	BinaryListValues [][]byte `json:",omitempty" query:"BinaryListValue"`
	DataType         string   `json:",omitempty"`
}

// BatchResultErrorEntry is a failed batch entry.
type BatchResultErrorEntry struct {
	Id          string
	SenderFault bool
	Code        string
	Message     string `json:",omitempty"`
}

type CreateQueueInput struct {
	QueueName  string
	Attributes map[string]string `query:"Attribute,Name,Value"`
	Tags       map[string]string `json:"tags" query:"Tag,Key,Value"`
}

type CreateQueueOutput struct {
	QueueUrl string `json:",omitempty"`
}

type DeleteQueueInput struct{ QueueUrl string }

type GetQueueUrlInput struct {
	QueueName              string
	QueueOwnerAWSAccountId string
}

type GetQueueUrlOutput struct {
	QueueUrl string `json:",omitempty"`
}

type ListQueuesInput struct {
	QueueNamePrefix string
	NextToken       string
	MaxResults      *int
}

type ListQueuesOutput struct {
	QueueUrls []string `json:",omitempty" query:"QueueUrl" queryjson:"queueUrls"`
	NextToken string   `json:",omitempty"`
}

type GetQueueAttributesInput struct {
	QueueUrl       string
	AttributeNames []string `query:"AttributeName"`
}

type GetQueueAttributesOutput struct {
	Attributes map[string]string `json:",omitempty" query:"Attribute,Name,Value"`
}

type SetQueueAttributesInput struct {
	QueueUrl   string
	Attributes map[string]string `query:"Attribute,Name,Value"`
}

type PurgeQueueInput struct{ QueueUrl string }

type SendMessageInput struct {
	QueueUrl                string
	MessageBody             string
	DelaySeconds            *int
	MessageAttributes       map[string]MessageAttributeValue `query:"MessageAttribute,Name,Value"`
	MessageSystemAttributes map[string]MessageAttributeValue `query:"MessageSystemAttribute,Name,Value"`
	MessageDeduplicationId  *string
	MessageGroupId          *string
}

type SendMessageOutput struct {
	MD5OfMessageBody             string `json:",omitempty"`
	MD5OfMessageAttributes       string `json:",omitempty"`
	MD5OfMessageSystemAttributes string `json:",omitempty"`
	MessageId                    string `json:",omitempty"`
	SequenceNumber               string `json:",omitempty"`
}

type SendMessageBatchInput struct {
	QueueUrl string
	Entries  []SendMessageBatchRequestEntry `query:"SendMessageBatchRequestEntry"`
}

type SendMessageBatchRequestEntry struct {
	Id                      string
	MessageBody             string
	DelaySeconds            *int
	MessageAttributes       map[string]MessageAttributeValue `query:"MessageAttribute,Name,Value"`
	MessageSystemAttributes map[string]MessageAttributeValue `query:"MessageSystemAttribute,Name,Value"`
	MessageDeduplicationId  *string
	MessageGroupId          *string
}

// SendMessageBatchOutput, like the other batch outputs, leaves out an empty
// Successful or Failed list in JSON, as SQS does: an all-success answer has
// no Failed member, an all-failure one no Successful member.
type SendMessageBatchOutput struct {
	Successful []SendMessageBatchResultEntry `json:",omitempty" query:"SendMessageBatchResultEntry"`
	Failed     []BatchResultErrorEntry       `json:",omitempty" query:"BatchResultErrorEntry"`
}

type SendMessageBatchResultEntry struct {
	Id                           string
	MessageId                    string
	MD5OfMessageBody             string
	MD5OfMessageAttributes       string `json:",omitempty"`
	MD5OfMessageSystemAttributes string `json:",omitempty"`
	SequenceNumber               string `json:",omitempty"`
}

type ReceiveMessageInput struct {
	QueueUrl                    string
	AttributeNames              []string `query:"AttributeName"`
	MessageSystemAttributeNames []string `query:"AttributeName"`
	MessageAttributeNames       []string `query:"MessageAttributeName"`
	MaxNumberOfMessages         *int
	VisibilityTimeout           *int
	WaitTimeSeconds             *int
	ReceiveRequestAttemptId     string
}

type ReceiveMessageOutput struct {
	Messages []Message `json:",omitempty" query:"Message" queryjson:"messages"`
}

type Message struct {
	MessageId              string
	ReceiptHandle          string
	MD5OfBody              string
	Body                   string
	Attributes             map[string]string                `json:",omitempty" query:"Attribute,Name,Value"`
	MD5OfMessageAttributes string                           `json:",omitempty"`
	MessageAttributes      map[string]MessageAttributeValue `json:",omitempty" query:"MessageAttribute,Name,Value"`
}

type DeleteMessageInput struct {
	QueueUrl      string
	ReceiptHandle string
}

type DeleteMessageBatchInput struct {
	QueueUrl string
	Entries  []DeleteMessageBatchRequestEntry `query:"DeleteMessageBatchRequestEntry"`
}

type DeleteMessageBatchRequestEntry struct {
	Id            string
	ReceiptHandle string
}

type DeleteMessageBatchOutput struct {
	Successful []BatchResultEntry      `json:",omitempty" query:"DeleteMessageBatchResultEntry"`
	Failed     []BatchResultErrorEntry `json:",omitempty" query:"BatchResultErrorEntry"`
}

// BatchResultEntry is a successful delete or visibility-change entry.
type BatchResultEntry struct{ Id string }

type ChangeMessageVisibilityInput struct {
	QueueUrl          string
	ReceiptHandle     string
	VisibilityTimeout *int
}

type ChangeMessageVisibilityBatchInput struct {
	QueueUrl string
	Entries  []ChangeMessageVisibilityBatchRequestEntry `query:"ChangeMessageVisibilityBatchRequestEntry"`
}

type ChangeMessageVisibilityBatchRequestEntry struct {
	Id                string
	ReceiptHandle     string
	VisibilityTimeout *int
}

type ChangeMessageVisibilityBatchOutput struct {
	Successful []BatchResultEntry      `json:",omitempty" query:"ChangeMessageVisibilityBatchResultEntry"`
	Failed     []BatchResultErrorEntry `json:",omitempty" query:"BatchResultErrorEntry"`
}

type TagQueueInput struct {
	QueueUrl string
	Tags     map[string]string `query:"Tag,Key,Value"`
}

type UntagQueueInput struct {
	QueueUrl string
	TagKeys  []string `query:"TagKey"`
}

type ListQueueTagsInput struct{ QueueUrl string }

type ListQueueTagsOutput struct {
	Tags map[string]string `json:",omitempty" query:"Tag,Key,Value"`
}

type ListDeadLetterSourceQueuesInput struct {
	QueueUrl   string
	NextToken  string
	MaxResults *int
}

// ListDeadLetterSourceQueuesOutput spells queueUrls in lower case, as the
// model does, and always carries it.
type ListDeadLetterSourceQueuesOutput struct {
	QueueUrls []string `json:"queueUrls" query:"QueueUrl"`
	NextToken string   `json:",omitempty"`
}

type StartMessageMoveTaskInput struct {
	SourceArn                    string
	DestinationArn               string
	MaxNumberOfMessagesPerSecond *int
}

type StartMessageMoveTaskOutput struct {
	TaskHandle string `json:",omitempty"`
}

type CancelMessageMoveTaskInput struct{ TaskHandle string }

type CancelMessageMoveTaskOutput struct {
	ApproximateNumberOfMessagesMoved int64
}

type ListMessageMoveTasksInput struct {
	SourceArn  string
	MaxResults *int
}

type ListMessageMoveTasksOutput struct {
	Results []ListMessageMoveTasksResultEntry `json:",omitempty" query:"ListMessageMoveTasksResultEntry"`
}

type ListMessageMoveTasksResultEntry struct {
	TaskHandle                        string `json:",omitempty"`
	Status                            string
	SourceArn                         string
	DestinationArn                    string `json:",omitempty"`
	MaxNumberOfMessagesPerSecond      *int   `json:",omitempty"`
	ApproximateNumberOfMessagesMoved  int64
	ApproximateNumberOfMessagesToMove *int64 `json:",omitempty"`
	FailureReason                     string `json:",omitempty"`
	StartedTimestamp                  int64
}

type AddPermissionInput struct {
	QueueUrl      string
	Label         string
	AWSAccountIds []string `query:"AWSAccountId"`
	Actions       []string `query:"ActionName"`
}

type RemovePermissionInput struct {
	QueueUrl string
	Label    string
}
