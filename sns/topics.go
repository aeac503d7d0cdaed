package sns

import (
	"context"
	"encoding/base64"
	"errors"
	"maps"
	"strings"

	"github.com/baton-sqs/baton"
)

// pageSize is how many topics or subscriptions a list returns at most.
const pageSize = 100

// CreateTopicParams are the arguments of CreateTopic.
type CreateTopicParams struct {
	Name       string
	Attributes map[string]string
	// Tags are the tags asked for, in request order (a key may repeat).
	Tags []Tag
}

// Tag is one topic tag.
type Tag struct{ Key, Value string }

// CreateTopic creates a topic and returns its ARN. As AWS, it is
// idempotent: a topic of that name is returned again if every attribute
// given equals the topic's (an attribute never set counts as different,
// FifoTopic=false on a standard topic as equal) and every tag given is one
// it has; otherwise InvalidParameter "Topic already exists with different
// attributes" (or tags).
func (s *Service) CreateTopic(ctx context.Context, c Caller, p CreateTopicParams) (string, error) {
	if !validTopicName(p.Name, p.Attributes["FifoTopic"]) {
		return "", invalidParameter("Topic Name")
	}
	if err := checkTopicAttributes(p.Attributes); err != nil {
		return "", err
	}
	tags, err := checkTags(p.Tags)
	if err != nil {
		return "", err
	}
	region := s.region(c)
	arn := TopicARN(region, c.Account, p.Name)
	t := &baton.Topic{Region: region, Account: c.Account, Name: p.Name, Attributes: createdAttributes(p.Attributes),
		Tags: tags, CreatedAt: s.clock.Now()}
	err = s.store.TopicCreate(ctx, t)
	if errors.Is(err, baton.ErrExists) {
		return arn, s.sameTopic(ctx, t, p.Attributes)
	}
	if err != nil {
		return "", storeErr(err, "create topic")
	}
	return arn, nil
}

// sameTopic checks a CreateTopic of an existing topic against it.
func (s *Service) sameTopic(ctx context.Context, want *baton.Topic, attrs map[string]string) error {
	have, err := s.store.TopicGet(ctx, want.Region, want.Account, want.Name)
	if errors.Is(err, baton.ErrNotFound) {
		return baton.Errorf(baton.ErrSNSInvalidParameter, "Invalid parameter: Topic Name Reason: the topic was deleted while it was created again; try again")
	}
	if err != nil {
		return storeErr(err, "get topic")
	}
	for k, v := range attrs {
		if k == "FifoTopic" && v == "false" && have.Attributes["FifoTopic"] == "" {
			continue
		}
		if old, ok := have.Attributes[k]; !ok || old != v {
			return invalidParameter("Attributes Reason: Topic already exists with different attributes")
		}
	}
	for k, v := range want.Tags {
		if old, ok := have.Tags[k]; !ok || old != v {
			return invalidParameter("Tags Reason: Topic already exists with different tags")
		}
	}
	return nil
}

// validTopicName: 1 to 256 of A-Z a-z 0-9 _ -, and a FIFO topic (FifoTopic
// true) ends in .fifo, which a standard one may not.
func validTopicName(name, fifo string) bool {
	base, isFIFO := strings.CutSuffix(name, ".fifo")
	if isFIFO != (fifo == "true") || base == "" || len(name) > 256 {
		return false
	}
	for i := 0; i < len(base); i++ {
		c := base[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// createdAttributes are the attributes a new topic keeps: those given,
// without FifoTopic=false, which is a standard topic's absence of it.
func createdAttributes(attrs map[string]string) map[string]string {
	out := maps.Clone(attrs)
	if out == nil {
		out = make(map[string]string)
	}
	if out["FifoTopic"] == "false" {
		delete(out, "FifoTopic")
	}
	fifoDefaults(out)
	return out
}

// DeleteTopic deletes a topic and its subscriptions; deleting a topic that
// does not exist succeeds, as on AWS.
func (s *Service) DeleteTopic(ctx context.Context, c Caller, topicARN string) error {
	t, err := s.parseTopicARN(c, "TopicArn", topicARN)
	if err != nil {
		return err
	}
	if t.account != c.Account {
		return nil
	}
	if err := s.store.TopicDelete(ctx, t.region, t.account, t.name); err != nil && !errors.Is(err, baton.ErrNotFound) {
		return storeErr(err, "delete topic")
	}
	return nil
}

// topic loads the topic an ARN names, or NotFound "Topic does not exist".
func (s *Service) topic(ctx context.Context, c Caller, param, arn string) (*baton.Topic, error) {
	if arn == "" {
		return nil, missing(param)
	}
	t, err := s.parseTopicARN(c, param, arn)
	if err != nil {
		return nil, err
	}
	if t.account != c.Account {
		return nil, errTopicNotFound()
	}
	tp, err := s.store.TopicGet(ctx, t.region, t.account, t.name)
	if errors.Is(err, baton.ErrNotFound) {
		return nil, errTopicNotFound()
	}
	if err != nil {
		return nil, storeErr(err, "get topic")
	}
	return tp, nil
}

// ListTopics returns a page of the caller's topics (their ARNs) in its
// region, 100 at most, and the token of the next page, "" if none.
func (s *Service) ListTopics(ctx context.Context, c Caller, nextToken string) ([]string, string, error) {
	after, err := decodeToken(nextToken)
	if err != nil {
		return nil, "", err
	}
	if after != "" && !anyTopicName(after) {
		return nil, "", errBadToken()
	}
	region := s.region(c)
	ts, err := s.store.TopicList(ctx, baton.TopicListParams{Region: region, Account: c.Account, After: after, Limit: pageSize + 1})
	if err != nil {
		return nil, "", storeErr(err, "list topics")
	}
	next := ""
	if len(ts) > pageSize {
		ts = ts[:pageSize]
		next = encodeToken(ts[pageSize-1].Name)
	}
	arns := make([]string, len(ts))
	for i, t := range ts {
		arns[i] = TopicARN(region, c.Account, t.Name)
	}
	return arns, next, nil
}

// encodeToken makes an opaque NextToken of the list position last.
func encodeToken(last string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(last))
}

// decodeToken reads a NextToken encodeToken made. The list reading it
// checks that it names a position of its own (a topic's name; a topic's
// name and a subscription's ID): a token Baton did not make is refused
// with errBadToken by every list alike, never read as a position past
// the end (AWS's answer to one is not known).
func decodeToken(token string) (string, error) {
	if token == "" {
		return "", nil
	}
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(b) == 0 {
		return "", errBadToken()
	}
	return string(b), nil
}

// errBadToken refuses a NextToken no list made.
func errBadToken() *baton.Error { return invalidParameter("NextToken") }

// anyTopicName reports whether name is a standard or a FIFO topic's name.
func anyTopicName(name string) bool {
	return validTopicName(name, "false") || validTopicName(name, "true")
}

// GetTopicAttributes returns every attribute of a topic as AWS renders
// them (attributes.go).
func (s *Service) GetTopicAttributes(ctx context.Context, c Caller, topicARN string) (map[string]string, error) {
	t, err := s.topic(ctx, c, "TopicArn", topicARN)
	if err != nil {
		return nil, err
	}
	subs, err := s.store.SubscriptionList(ctx, baton.SubscriptionListParams{Region: t.Region, Account: t.Account, Topic: t.Name})
	if err != nil {
		return nil, storeErr(err, "list subscriptions")
	}
	return renderTopicAttributes(t, subs), nil
}

// SetTopicAttributes sets one attribute of a topic. FifoTopic and names
// that are no topic attribute are refused as "Invalid parameter:
// AttributeName"; an empty value removes a DeliveryPolicy.
func (s *Service) SetTopicAttributes(ctx context.Context, c Caller, topicARN, name string, value *string) error {
	s.mu.Lock() // a read, a change and a write of the whole topic
	defer s.mu.Unlock()
	t, err := s.topic(ctx, c, "TopicArn", topicARN)
	if err != nil {
		return err
	}
	if name == "" {
		return missing("AttributeName")
	}
	if name == "FifoTopic" || !topicAttributes[name].settable {
		return invalidParameter("AttributeName")
	}
	v := ""
	if value != nil {
		v = *value
	}
	if err := checkTopicAttribute(name, v); err != nil {
		return err
	}
	if err := checkFIFOOnly(name, isFIFO(t)); err != nil {
		return err
	}
	if name == "MaximumMessageSize" {
		if err := s.checkLargeTopicFits(ctx, t, v); err != nil {
			return err
		}
	}
	if name == "DeliveryPolicy" {
		v, _ = checkTopicDeliveryPolicy(v) // stored as AWS stores it
	}
	if t.Attributes == nil {
		t.Attributes = make(map[string]string)
	}
	if v == "" && name != "DisplayName" {
		delete(t.Attributes, name)
	} else {
		t.Attributes[name] = v
	}
	return s.updateTopic(ctx, t)
}
