package convert

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// regionNote is said of every conversion: the emulators converted here
// serve one set of queues whatever region a client signs with.
const regionNote = "region: Baton keeps each region's queues apart, as SQS does, and a signed request sees the queues of the region it is signed for: set region to the one your clients use"

// Goaws converts the environment env ("" for Local, goaws's default) of a
// goaws configuration file (goaws.yaml): its Port, Region and AccountId,
// its queues with QueueAttributeDefaults applied, and the queues its
// topics' subscriptions name. Each queue's VisibilityTimeout,
// ReceiveMessageWaitTimeSeconds and MaximumMessageSize stay themselves;
// RedrivePolicy becomes dead-letter. Topics become topics, with their queue
// subscriptions (Raw and FilterPolicy kept); a subscription of an HTTP
// endpoint, which the config file does not declare, becomes a note with
// the command that makes it.
func Goaws(text, source, env string) (*Config, error) {
	var envs map[string]goawsEnv
	if err := yaml.Unmarshal([]byte(text), &envs); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	if env == "" {
		env = "Local"
	}
	e, ok := envs[env]
	if !ok {
		names := make([]string, 0, len(envs))
		for n := range envs {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("%s: no environment %q; it has %s", source, env, strings.Join(names, ", "))
	}
	c := &Config{Source: source + " (goaws, environment " + env + ")", Region: e.Region}
	c.note("%s", regionNote)
	port := cmpOr(e.Port, cmpOr(e.SqsPort, "4100")) // 4100: goaws's default
	if port != "9324" {
		c.Listen = "127.0.0.1:" + port
	}
	if e.Port == "" && e.SqsPort != "" && e.SnsPort != "" {
		c.note("SnsPort %s: Baton serves SNS on the same port as SQS", e.SnsPort)
	}
	c.note("goaws listened on 0.0.0.0:%s, every interface; Baton listens on 127.0.0.1 unless told otherwise: beyond loopback (a container: listen 0.0.0.0:%s) it needs credentials or --allow-anonymous", port, port)
	if e.Host != "" && e.Host != "localhost" {
		c.note("Host %s: goaws named it in every queue URL; Baton's queue URLs name the host each client called (set advertise-url: http://%s:%s to hand out goaws's)", e.Host, e.Host, port)
	}
	if e.AccountID != "" {
		c.AccountID = e.AccountID
	} else {
		c.note("goaws's queue URLs without an AccountId are http://HOST:PORT/queue/NAME; Baton's are http://HOST:PORT/000000000000/NAME: get them from CreateQueue or GetQueueUrl")
	}
	for _, q := range e.Queues {
		bq, err := q.convert(e.QueueAttributeDefaults)
		if err != nil {
			return nil, fmt.Errorf("%s: environment %s: %w", source, env, err)
		}
		c.Queues = append(c.Queues, bq)
	}
	for _, t := range e.Topics {
		if t.Name == "" {
			return nil, fmt.Errorf("%s: environment %s: a topic without a Name", source, env)
		}
		bt := Topic{Name: t.Name}
		for _, s := range t.Subscriptions {
			switch {
			case s.QueueName != "":
				if c.queue(s.QueueName) == nil {
					q, _ := goawsQueue{Name: s.QueueName}.convert(e.QueueAttributeDefaults)
					c.Queues = append(c.Queues, q)
				}
				bt.Subscriptions = append(bt.Subscriptions, Subscription{Queue: s.QueueName, Raw: s.Raw, FilterPolicy: s.FilterPolicy})
			case s.EndPoint != "":
				c.note("%s", s.note(t.Name, cmpOr(e.Region, "us-east-1"), cmpOr(e.AccountID, "000000000000")))
			}
		}
		c.Topics = append(c.Topics, bt)
	}
	return c, nil
}

type goawsEnv struct {
	Host                   string       `yaml:"Host"`
	Port                   string       `yaml:"Port"`
	SqsPort                string       `yaml:"SqsPort"`
	SnsPort                string       `yaml:"SnsPort"`
	Region                 string       `yaml:"Region"`
	AccountID              string       `yaml:"AccountId"`
	QueueAttributeDefaults goawsQueue   `yaml:"QueueAttributeDefaults"`
	Queues                 []goawsQueue `yaml:"Queues"`
	Topics                 []goawsTopic `yaml:"Topics"`
}

type goawsQueue struct {
	Name                          string `yaml:"Name"`
	VisibilityTimeout             string `yaml:"VisibilityTimeout"`
	ReceiveMessageWaitTimeSeconds string `yaml:"ReceiveMessageWaitTimeSeconds"`
	MaximumMessageSize            string `yaml:"MaximumMessageSize"`
	RedrivePolicy                 string `yaml:"RedrivePolicy"`
}

type goawsTopic struct {
	Name          string              `yaml:"Name"`
	Subscriptions []goawsSubscription `yaml:"Subscriptions"`
}

type goawsSubscription struct {
	QueueName    string `yaml:"QueueName"`
	Raw          bool   `yaml:"Raw"`
	FilterPolicy string `yaml:"FilterPolicy"`
	Protocol     string `yaml:"Protocol"`
	EndPoint     string `yaml:"EndPoint"`
}

// convert is q as Baton declares it, defaults filling what q leaves
// unset (goaws's rule).
func (q goawsQueue) convert(defaults goawsQueue) (Queue, error) {
	if q.Name == "" {
		return Queue{}, fmt.Errorf("a queue without a Name")
	}
	out := Queue{Name: q.Name}
	for _, a := range []struct{ name, v, def string }{
		{"VisibilityTimeout", q.VisibilityTimeout, defaults.VisibilityTimeout},
		{"ReceiveMessageWaitTimeSeconds", q.ReceiveMessageWaitTimeSeconds, defaults.ReceiveMessageWaitTimeSeconds},
		{"MaximumMessageSize", q.MaximumMessageSize, defaults.MaximumMessageSize},
	} {
		v := a.v
		if v == "" || v == "0" { // goaws takes 0 as unset
			v = a.def
		}
		if v != "" && v != "0" {
			out.setAttr(a.name, v)
		}
	}
	if strings.HasSuffix(q.Name, ".fifo") {
		out.setAttr("FifoQueue", "true")
	}
	if q.RedrivePolicy != "" {
		var p struct {
			Target string          `json:"deadLetterTargetArn"`
			Count  json.RawMessage `json:"maxReceiveCount"`
		}
		if err := json.Unmarshal([]byte(q.RedrivePolicy), &p); err != nil {
			return out, fmt.Errorf("queue %s: RedrivePolicy is not JSON: %v", q.Name, err)
		}
		n, err := strconv.Atoi(strings.Trim(string(p.Count), `"`))
		if err != nil || p.Target == "" {
			return out, fmt.Errorf("queue %s: RedrivePolicy needs deadLetterTargetArn and a whole maxReceiveCount", q.Name)
		}
		out.DeadLetter = p.Target[strings.LastIndexByte(p.Target, ':')+1:]
		out.MaxReceiveCount = n
	}
	return out, nil
}

// note says that an endpoint's subscription to the topic named topic is
// not declared by the config file, with the AWS CLI command that makes it
// on Baton.
func (s goawsSubscription) note(topic, region, account string) string {
	arn := "arn:aws:sns:" + region + ":" + account + ":" + topic
	cmd := fmt.Sprintf("aws --endpoint-url $BATON sns subscribe --topic-arn %s --protocol %s --notification-endpoint %s", arn, cmpOr(s.Protocol, "http"), s.EndPoint)
	attrs := map[string]string{}
	if s.Raw {
		attrs["RawMessageDelivery"] = "true"
	}
	if s.FilterPolicy != "" {
		attrs["FilterPolicy"] = s.FilterPolicy
	}
	if len(attrs) > 0 {
		j, _ := json.Marshal(attrs)
		cmd += " --attributes '" + strings.ReplaceAll(string(j), "'", `'\''`) + "'"
	}
	return fmt.Sprintf("topic %s: the subscription of %s: Baton's config file declares queue subscriptions only; make it, once the server runs, with\n  %s", topic, s.EndPoint, cmd)
}
