// Package convert turns the queue-definition files of other SQS emulators
// (ElasticMQ's elasticmq.conf, goaws's goaws.yaml) into Baton's config file,
// the YAML `baton serve --config` reads. What a source file says that has
// no Baton counterpart is kept as a note: written into the output as a
// comment and returned, so that nothing is dropped without a word.
package convert

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// Config is what a converted file declares, in Baton's terms. Empty
// settings are left to Baton's defaults.
type Config struct {
	// Source names the converted file and its format, for the header.
	Source    string
	Listen    string
	Region    string
	AccountID string
	// AdvertiseURL is the scheme://host[:port] of the queue URLs handed
	// out, when the source fixed it.
	AdvertiseURL string
	Queues       []Queue
	// Topics are SNS topics with their queue subscriptions, created after
	// the queues.
	Topics []Topic
	// Notes say what the source declares that Baton does not do, or does
	// otherwise.
	Notes []string
}

// Queue is one queue of Baton's config file.
type Queue struct {
	Name string
	// Attributes are CreateQueue's, in the order they are written.
	Attributes []Pair
	// DeadLetter names the dead-letter queue (declared in the same
	// file), which receives a message received MaxReceiveCount times.
	DeadLetter      string
	MaxReceiveCount int
	Tags            []Pair
}

// Topic is one SNS topic of Baton's config file.
type Topic struct {
	Name          string
	Subscriptions []Subscription
}

// Subscription subscribes a queue of the file to a topic. FilterPolicy is
// the policy's JSON text, "" for none.
type Subscription struct {
	Queue        string
	Raw          bool
	FilterPolicy string
}

// Pair is a name and its value.
type Pair struct{ Name, Value string }

func (c *Config) note(format string, args ...any) {
	c.Notes = append(c.Notes, fmt.Sprintf(format, args...))
}

// queue returns the queue named name, or nil.
func (c *Config) queue(name string) *Queue {
	for i := range c.Queues {
		if c.Queues[i].Name == name {
			return &c.Queues[i]
		}
	}
	return nil
}

// setAttr sets an attribute of q, replacing an earlier value.
func (q *Queue) setAttr(name, value string) {
	for i := range q.Attributes {
		if q.Attributes[i].Name == name {
			q.Attributes[i].Value = value
			return
		}
	}
	q.Attributes = append(q.Attributes, Pair{name, value})
}

// YAML renders c as Baton's config file, its notes as comments.
func (c *Config) YAML() ([]byte, error) {
	root := &yaml.Node{Kind: yaml.MappingNode}
	head := []string{"Baton config (baton serve --config FILE), converted from " + c.Source + "."}
	if len(c.Notes) > 0 {
		head = append(head, "", "Not converted, or done otherwise by Baton:")
		for _, n := range c.Notes {
			head = append(head, "- "+n)
		}
	}
	root.HeadComment = strings.Join(head, "\n")
	add := func(key, value string) {
		if value != "" {
			root.Content = append(root.Content, str(key), str(value))
		}
	}
	add("listen", c.Listen)
	add("region", c.Region)
	add("account-id", c.AccountID)
	add("advertise-url", c.AdvertiseURL)
	if len(c.Queues) > 0 {
		list := &yaml.Node{Kind: yaml.SequenceNode}
		for _, q := range c.Queues {
			list.Content = append(list.Content, q.node())
		}
		root.Content = append(root.Content, str("queues"), list)
	}
	if len(c.Topics) > 0 {
		list := &yaml.Node{Kind: yaml.SequenceNode}
		for _, t := range c.Topics {
			list.Content = append(list.Content, t.node())
		}
		root.Content = append(root.Content, str("topics"), list)
	}
	var b strings.Builder
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{root}}); err != nil {
		return nil, err
	}
	return []byte(b.String()), enc.Close()
}

func (q Queue) node() *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{str("name"), str(q.Name)}}
	if len(q.Attributes) > 0 {
		n.Content = append(n.Content, str("attributes"), pairs(q.Attributes))
	}
	if q.DeadLetter != "" {
		n.Content = append(n.Content, str("dead-letter"), &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
			str("queue"), str(q.DeadLetter), str("max-receive-count"), {Kind: yaml.ScalarNode, Tag: "!!int", Value: fmt.Sprint(q.MaxReceiveCount)},
		}})
	}
	if len(q.Tags) > 0 {
		n.Content = append(n.Content, str("tags"), pairs(q.Tags))
	}
	return n
}

func (t Topic) node() *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{str("name"), str(t.Name)}}
	if len(t.Subscriptions) == 0 {
		return n
	}
	list := &yaml.Node{Kind: yaml.SequenceNode}
	for _, s := range t.Subscriptions {
		sn := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{str("queue"), str(s.Queue)}}
		if s.Raw {
			sn.Content = append(sn.Content, str("raw"), &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"})
		}
		if s.FilterPolicy != "" {
			sn.Content = append(sn.Content, str("attributes"), &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{str("FilterPolicy"), str(s.FilterPolicy)}})
		}
		list.Content = append(list.Content, sn)
	}
	n.Content = append(n.Content, str("subscriptions"), list)
	return n
}

func pairs(ps []Pair) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode}
	for _, p := range ps {
		n.Content = append(n.Content, str(p.Name), &yaml.Node{Kind: yaml.ScalarNode, Value: p.Value}) // 10, true: as SQS spells them
	}
	return n
}

// str is a string scalar, quoted where YAML would read it as another type.
func str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }
