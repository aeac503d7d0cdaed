package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/sns"
)

// TopicConfig is an SNS topic that `baton serve` creates at start-up,
// after the declared queues, with its subscriptions. A topic or
// subscription that exists already (a durable store's, from an earlier
// run) gets the attributes and tags declared here (docs/sns.md).
type TopicConfig struct {
	Name string
	// AccountID and Region are as QueueConfig's.
	AccountID string
	Region    string
	// Attributes are CreateTopic's, values as SNS spells them; a .fifo
	// name implies FifoTopic=true.
	Attributes map[string]string
	Tags       map[string]string
	// Subscriptions are the queues subscribed to the topic.
	Subscriptions []SubscriptionConfig

	// where is the declaration's "file:line", for error messages.
	where string
}

// SubscriptionConfig is a queue subscribed to a declared topic.
type SubscriptionConfig struct {
	// Queue names a queue of the topic's account and region; it need not
	// exist (as on AWS), but a copy for a queue that does not is dropped.
	Queue string
	// Attributes are Subscribe's (FilterPolicy, RawMessageDelivery, …);
	// Raw sets RawMessageDelivery=true.
	Attributes map[string]string
	Raw        bool

	where string
}

// fifoTopicAttributes returns attrs with FifoTopic=true added when name
// ends in .fifo and attrs do not say, as CreateTopic needs.
func fifoTopicAttributes(name string, attrs map[string]string) map[string]string {
	if !strings.HasSuffix(name, ".fifo") {
		return attrs
	}
	if _, ok := attrs["FifoTopic"]; ok {
		return attrs
	}
	attrs = maps.Clone(attrs)
	if attrs == nil {
		attrs = map[string]string{}
	}
	attrs["FifoTopic"] = "true"
	return attrs
}

// subscriptionAttributes are the attributes a declared subscription asks
// for, RawMessageDelivery included.
func (s SubscriptionConfig) subscriptionAttributes() map[string]string {
	attrs := maps.Clone(s.Attributes)
	if s.Raw {
		if attrs == nil {
			attrs = map[string]string{}
		}
		attrs["RawMessageDelivery"] = "true"
	}
	return attrs
}

// createTopics creates the declared topics and their subscriptions through
// svc, with the API's validation, and logs each as created, exists or
// updated. A store that keeps no topics (svc nil) refuses any.
func createTopics(ctx context.Context, eng *engine.Engine, svc *sns.Service, topics []TopicConfig, account string, log *slog.Logger) error {
	if len(topics) == 0 {
		return nil
	}
	if svc == nil {
		return fmt.Errorf("%s: topic %s: this store keeps no SNS topics", topics[0].where, topics[0].Name)
	}
	for _, t := range topics {
		c := sns.Caller{Region: t.Region, Account: cmp.Or(t.AccountID, account)}
		region := cmp.Or(t.Region, eng.Region())
		arn := sns.TopicARN(region, c.Account, t.Name)
		what, err := ensureTopic(ctx, svc, c, arn, t)
		if err != nil {
			return fmt.Errorf("%s: topic %s: %w", t.where, t.Name, snsError(err))
		}
		log.Info("config topic "+what, "topic", t.Name, "account", c.Account, "region", region)
		for _, s := range t.Subscriptions {
			queue := engine.RegionARN(region, c.Account, s.Queue)
			sub, what, err := ensureSubscription(ctx, svc, c, arn, queue, s.subscriptionAttributes())
			if err != nil {
				return fmt.Errorf("%s: topic %s: subscription of queue %s: %w", s.where, t.Name, s.Queue, snsError(err))
			}
			log.Info("config subscription "+what, "topic", t.Name, "queue", s.Queue, "subscription", sub)
		}
	}
	return nil
}

// snsError is an SNS error as a client sees it: its code on the wire
// (InvalidParameter, not the internal SNS.InvalidParameter) and message.
func snsError(err error) error {
	var e *baton.Error
	if errors.As(err, &e) {
		return fmt.Errorf("%s: %s", e.Code.Spec().QueryCode, e.Message)
	}
	return err
}

// ensureTopic makes the topic arn exist with t's attributes and tags, and
// says how: "created", "exists" or "updated".
func ensureTopic(ctx context.Context, svc *sns.Service, c sns.Caller, arn string, t TopicConfig) (string, error) {
	attrs := fifoTopicAttributes(t.Name, t.Attributes)
	have, err := svc.GetTopicAttributes(ctx, c, arn)
	if baton.IsCode(err, baton.ErrSNSNotFound) {
		p := sns.CreateTopicParams{Name: t.Name, Attributes: attrs}
		for k, v := range t.Tags {
			p.Tags = append(p.Tags, sns.Tag{Key: k, Value: v})
		}
		_, err := svc.CreateTopic(ctx, c, p)
		return "created", err
	}
	if err != nil {
		return "", err
	}
	what := "exists"
	for k, v := range attrs {
		if k != "FifoTopic" && have[k] != v {
			if err := svc.SetTopicAttributes(ctx, c, arn, k, &v); err != nil {
				return "", err
			}
			what = "updated"
		}
	}
	if len(t.Tags) == 0 {
		return what, nil
	}
	tags, err := svc.ListTagsForResource(ctx, c, arn)
	if err != nil {
		return "", err
	}
	haveTags := map[string]string{}
	for _, tag := range tags {
		haveTags[tag.Key] = tag.Value
	}
	var add []sns.Tag
	for k, v := range t.Tags {
		if old, ok := haveTags[k]; !ok || old != v {
			add = append(add, sns.Tag{Key: k, Value: v})
		}
	}
	if len(add) == 0 {
		return what, nil
	}
	return "updated", svc.TagResource(ctx, c, arn, add)
}

// ensureSubscription makes queue subscribed to topic with attrs, and
// returns the subscription's ARN and how: "created", "exists" or
// "updated".
func ensureSubscription(ctx context.Context, svc *sns.Service, c sns.Caller, topic, queue string, attrs map[string]string) (string, string, error) {
	sub, err := findQueueSubscription(ctx, svc, c, topic, queue)
	if err != nil {
		return "", "", err
	}
	if sub == "" {
		sub, err = svc.Subscribe(ctx, c, sns.SubscribeParams{TopicARN: topic, Protocol: "sqs", Endpoint: queue, Attributes: attrs})
		return sub, "created", err
	}
	have, err := svc.GetSubscriptionAttributes(ctx, c, sub)
	if err != nil {
		return "", "", err
	}
	what := "exists"
	for k, v := range attrs {
		if have[k] != v {
			if err := svc.SetSubscriptionAttributes(ctx, c, sub, k, &v); err != nil {
				return "", "", err
			}
			what = "updated"
		}
	}
	return sub, what, nil
}

// findQueueSubscription returns the ARN of topic's subscription of queue,
// or "".
func findQueueSubscription(ctx context.Context, svc *sns.Service, c sns.Caller, topic, queue string) (string, error) {
	next := ""
	for {
		subs, token, err := svc.ListSubscriptionsByTopic(ctx, c, topic, next)
		if err != nil {
			return "", err
		}
		for _, s := range subs {
			if s.Protocol == "sqs" && s.Endpoint == queue {
				return s.SubscriptionARN, nil
			}
		}
		if token == "" {
			return "", nil
		}
		next = token
	}
}

// topics parses the topics list.
func (p *configParser) topics(n *yaml.Node) ([]TopicConfig, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, p.errorf(n, "topics: want a list of topics (- name: …), got %s", kindName(n))
	}
	var ts []TopicConfig
	seen := map[string]string{}
	for i, item := range n.Content {
		item = deref(item)
		in := fmt.Sprintf("topics[%d]: ", i)
		if item.Kind != yaml.MappingNode {
			return nil, p.errorf(item, "%swant a mapping (name: …), got %s", in, kindName(item))
		}
		t := TopicConfig{where: p.where(item)}
		err := p.eachPair(item, in, func(key string, k, v *yaml.Node) error {
			var err error
			switch key {
			case "name":
				if t.Name, err = p.scalar(v, in+"name"); err == nil {
					t.where = p.where(v)
					in = fmt.Sprintf("topic %s: ", t.Name)
				}
			case "account-id", "region":
				t.AccountID, t.Region, err = p.placeKey(key, v, in, t.AccountID, t.Region)
			case "attributes":
				t.Attributes, err = p.attributeValues(v, in, nil)
			case "tags":
				t.Tags, err = p.tags(v, in)
			case "subscriptions":
				t.Subscriptions, err = p.subscriptions(v, in)
			default:
				err = p.unknownKey(k, in, "a topic's keys", []string{"name", "account-id", "region", "attributes", "tags", "subscriptions"})
			}
			return err
		})
		if err != nil {
			return nil, err
		}
		if t.Name == "" {
			return nil, p.errorf(item, "%sno name", in)
		}
		key := t.Region + "/" + t.AccountID + "/" + t.Name
		if first, dup := seen[key]; dup {
			return nil, fmt.Errorf("%s: topic %s is declared twice (first at %s)", t.where, t.Name, first)
		}
		seen[key] = t.where
		ts = append(ts, t)
	}
	return ts, nil
}

// placeKey parses a topic's account-id or region (key), given the values
// so far, and returns both.
func (p *configParser) placeKey(key string, v *yaml.Node, in, account, region string) (string, string, error) {
	s, err := p.scalar(v, in+key)
	if err != nil {
		return account, region, err
	}
	if key == "account-id" {
		if err := checkAccountID(s); err != nil {
			return account, region, p.errorf(v, "%saccount-id: %v", in, err)
		}
		return s, region, nil
	}
	if err := settingChecks["region"](s); err != nil {
		return account, region, p.errorf(v, "%sregion: %v", in, err)
	}
	return account, s, nil
}

// subscriptions parses a topic's subscriptions list.
func (p *configParser) subscriptions(n *yaml.Node, in string) ([]SubscriptionConfig, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, p.errorf(n, "%ssubscriptions: want a list (- queue: …), got %s", in, kindName(n))
	}
	var subs []SubscriptionConfig
	for i, item := range n.Content {
		item = deref(item)
		at := fmt.Sprintf("%ssubscriptions[%d]: ", in, i)
		if item.Kind != yaml.MappingNode {
			return nil, p.errorf(item, "%swant a mapping (queue: …), got %s", at, kindName(item))
		}
		s := SubscriptionConfig{where: p.where(item)}
		err := p.eachPair(item, at, func(key string, k, v *yaml.Node) error {
			var err error
			switch key {
			case "queue":
				s.Queue, err = p.scalar(v, at+"queue")
			case "raw":
				if err = v.Decode(&s.Raw); err != nil || v.Kind != yaml.ScalarNode {
					err = p.errorf(v, "%sraw: want true or false, got %s", at, kindName(v))
				}
			case "attributes":
				s.Attributes, err = p.attributeValues(v, at, nil)
			default:
				err = p.unknownKey(k, at, "a subscription's keys", []string{"queue", "raw", "attributes"})
			}
			return err
		})
		if err != nil {
			return nil, err
		}
		if s.Queue == "" {
			return nil, p.errorf(item, "%sno queue", at)
		}
		subs = append(subs, s)
	}
	return subs, nil
}

// topicsNode is the topics list as --print-config writes it.
func topicsNode(topics []TopicConfig) *yaml.Node {
	list := &yaml.Node{Kind: yaml.SequenceNode}
	for _, t := range topics {
		item := declaredNode(t.Name, t.where, t.AccountID, t.Region, t.Attributes, t.Tags)
		if len(t.Subscriptions) > 0 {
			subs := &yaml.Node{Kind: yaml.SequenceNode}
			for _, s := range t.Subscriptions {
				sub := mapNode("queue", strNode(s.Queue))
				if a := s.subscriptionAttributes(); len(a) > 0 {
					sub.Content = append(sub.Content, strNode("attributes"), stringMapNode(a))
				}
				subs.Content = append(subs.Content, sub)
			}
			item.Content = append(item.Content, strNode("subscriptions"), subs)
		}
		list.Content = append(list.Content, item)
	}
	return list
}
