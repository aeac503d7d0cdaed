package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
)

// The publish scenarios: SNS Publish to a topic with 1, 5 or 20 subscribed
// queues. A publish is answered once every queue's copy is durable, so a
// publish counts as one request and as one message per subscribed queue.
const (
	ScenarioPublish1  = "publish-1"
	ScenarioPublish5  = "publish-5"
	ScenarioPublish20 = "publish-20"
)

// snsVersion is the Version of SNS's Query requests.
const snsVersion = "2010-03-31"

// publishFanOut is how many queues a publish scenario subscribes, 0 for
// another scenario.
func publishFanOut(scenario string) int {
	switch scenario {
	case ScenarioPublish1:
		return 1
	case ScenarioPublish5:
		return 5
	case ScenarioPublish20:
		return 20
	}
	return 0
}

// NewQueryRequest returns an SNS request of action with the parameters of
// form, sent in SNS's Query protocol (a form body, signed for sns).
func (c *Client) NewQueryRequest(action string, form url.Values) *Request {
	all := url.Values{"Action": {action}, "Version": {snsVersion}}
	for k, v := range form {
		all[k] = v
	}
	body := []byte(all.Encode())
	r := &Request{action: action, query: true, body: body}
	r.getBody = func() (io.ReadCloser, error) { return newBody(body), nil }
	if c.signer.creds != nil {
		r.hash = payloadHash(body)
	}
	return r
}

// xmlElement is the text of the first <name> element of an XML body, "" if
// it has none: all the scenarios read of SNS's answers.
func xmlElement(body []byte, name string) string {
	_, rest, ok := bytes.Cut(body, []byte("<"+name+">"))
	if !ok {
		return ""
	}
	text, _, _ := bytes.Cut(rest, []byte("</"+name+">"))
	return string(text)
}

// openTopic creates the publish scenario's topic and subscribes the run's
// queues to it, each with the Policy AWS needs to let the topic send; the
// teardown deletes the topic, its subscriptions with it.
func (r *run) openTopic(ctx context.Context, k *Caller) error {
	body, err := k.Do(ctx, k.c.NewQueryRequest("CreateTopic", url.Values{"Name": {r.cfg.Queue + "-topic"}}))
	if err != nil {
		return fmt.Errorf("topic %s-topic: %w", r.cfg.Queue, err)
	}
	if r.topicARN = xmlElement(body, "TopicArn"); r.topicARN == "" {
		return fmt.Errorf("topic %s-topic: no TopicArn in the response %.200q", r.cfg.Queue, body)
	}
	for _, q := range r.queues {
		body, err := k.Do(ctx, k.c.NewRequest("GetQueueAttributes", mustJSON(map[string]any{"QueueUrl": q.url, "AttributeNames": []string{"QueueArn"}})))
		if err != nil {
			return fmt.Errorf("queue %s: %w", q.name, err)
		}
		var out struct{ Attributes map[string]string }
		if err := json.Unmarshal(body, &out); err != nil || out.Attributes["QueueArn"] == "" {
			return fmt.Errorf("queue %s: no QueueArn in the response %.200q", q.name, body)
		}
		// The policy a queue needs on AWS for the topic to send to it.
		policy := mustJSON(map[string]any{"Version": "2012-10-17", "Statement": []any{map[string]any{
			"Effect": "Allow", "Principal": map[string]string{"Service": "sns.amazonaws.com"}, "Action": "sqs:SendMessage",
			"Resource": out.Attributes["QueueArn"], "Condition": map[string]any{"ArnEquals": map[string]string{"aws:SourceArn": r.topicARN}},
		}}})
		if _, err := k.Do(ctx, k.c.NewRequest("SetQueueAttributes", mustJSON(map[string]any{"QueueUrl": q.url,
			"Attributes": map[string]string{"Policy": string(policy)}}))); err != nil {
			return fmt.Errorf("queue %s: policy: %w", q.name, err)
		}
		sub := url.Values{"TopicArn": {r.topicARN}, "Protocol": {"sqs"}, "Endpoint": {out.Attributes["QueueArn"]}}
		if _, err := k.Do(ctx, k.c.NewQueryRequest("Subscribe", sub)); err != nil {
			return fmt.Errorf("subscribe queue %s: %w", q.name, err)
		}
	}
	return nil
}

// closeTopic deletes the run's topic, if it made one.
func (r *run) closeTopic(ctx context.Context, k *Caller) {
	if r.topicARN == "" {
		return
	}
	if _, err := k.Do(ctx, k.c.NewQueryRequest("DeleteTopic", url.Values{"TopicArn": {r.topicARN}})); err != nil {
		r.note("DeleteTopic %s failed: %v", r.topicARN, err)
	}
}

// publishQueues names the queues a publish scenario subscribes.
func publishQueues(base string, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = base + "-sub-" + strconv.Itoa(i+1)
	}
	return names
}

// publishLoop is a publish scenario: one Publish per request, each
// counting as one message per subscribed queue once answered.
func (r *run) publishLoop(ctx context.Context, w *worker) {
	req := r.client.NewQueryRequest("Publish", url.Values{"TopicArn": {r.topicARN}, "Message": {payload(r.cfg.BodySize)}})
	for {
		s, err := w.do(ctx, req)
		if err == errStopped {
			return
		}
		if err == nil {
			if !strings.Contains(string(s.body), "<MessageId>") {
				w.fail("Publish: no MessageId in the response")
				continue
			}
			w.delivered(len(r.queues), s.end)
		}
	}
}
