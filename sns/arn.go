package sns

import (
	"strings"

	"github.com/baton-sqs/baton"
)

// TopicARN returns arn:aws:sns:<region>:<account>:<name>.
func TopicARN(region, account, name string) string {
	return "arn:aws:sns:" + region + ":" + account + ":" + name
}

// SubscriptionARN returns <topic ARN>:<id>.
func SubscriptionARN(sub *baton.Subscription) string {
	return TopicARN(sub.Region, sub.Account, sub.Topic) + ":" + sub.ID
}

// topicName is a topic the caller named by ARN.
type topicName struct{ region, account, name string }

// parseTopicARN reads the ARN in the parameter param (TopicArn,
// TargetArn, ResourceArn). As AWS: an ARN of fewer than six parts is
// refused saying how many it has; one of another service, another region
// than the caller's, or a bad name is "Invalid parameter: <param>". An ARN
// of another account names a topic the caller does not have.
func (s *Service) parseTopicARN(c Caller, param, arn string) (topicName, error) {
	parts := strings.Split(arn, ":")
	if len(parts) < 6 {
		return topicName{}, invalidParameter("%s Reason: An ARN must have at least 6 elements, not %d", param, len(parts))
	}
	if len(parts) != 6 || parts[0] != "arn" || parts[2] != "sns" || parts[3] != s.region(c) || parts[4] == "" || parts[5] == "" {
		return topicName{}, invalidParameter("%s", param)
	}
	return topicName{region: parts[3], account: parts[4], name: parts[5]}, nil
}

// parseSubscriptionARN reads a SubscriptionArn: a topic ARN and an id.
// AWS refuses an ARN of fewer than six parts saying how many, and one of
// six (a topic's) as "Invalid parameter: SubscriptionId".
func (s *Service) parseSubscriptionARN(c Caller, arn string) (topicName, string, error) {
	if arn == "" {
		return topicName{}, "", missing("SubscriptionArn")
	}
	parts := strings.Split(arn, ":")
	switch {
	case len(parts) < 6:
		return topicName{}, "", invalidParameter("SubscriptionArn Reason: An ARN must have at least 6 elements, not %d", len(parts))
	case len(parts) == 6:
		return topicName{}, "", invalidParameter("SubscriptionId")
	}
	i := strings.LastIndexByte(arn, ':')
	t, err := s.parseTopicARN(c, "SubscriptionArn", arn[:i])
	if err != nil {
		return topicName{}, "", err
	}
	if arn[i+1:] == "" {
		return topicName{}, "", invalidParameter("SubscriptionId")
	}
	return t, arn[i+1:], nil
}
