package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/baton-sqs/baton/engine"
	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"
)

// configParser reads one file; errors carry its path and a line.
type configParser struct {
	path  string
	flags *pflag.FlagSet
}

func (p *configParser) errorf(n *yaml.Node, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", p.path, n.Line, fmt.Sprintf(format, args...))
}

func (p *configParser) where(n *yaml.Node) string { return fmt.Sprintf("%s:%d", p.path, n.Line) }

// readConfigFile parses path, refusing unknown keys and invalid values.
// flags are serve's: each top-level key other than queues, topics and credentials
// must name one of them.
func readConfigFile(path string, flags *pflag.FlagSet) (*configFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	p := &configParser{path: path, flags: flags}
	file := &configFile{path: path}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
		return file, nil // an empty file sets nothing
	} else if err != nil {
		return nil, p.syntaxError(data, err)
	}
	var second yaml.Node
	if err := dec.Decode(&second); err == nil {
		return nil, p.errorf(&second, "a second YAML document; a config file holds one")
	} else if !errors.Is(err, io.EOF) {
		return nil, p.syntaxError(data, err)
	}
	root := deref(doc.Content[0])
	if isNull(root) {
		return file, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, p.errorf(root, "want a mapping of settings (key: value), got %s", kindName(root))
	}
	err = p.eachPair(root, "", func(key string, k, v *yaml.Node) error {
		switch key {
		case "queues":
			file.queues, err = p.queues(v)
			return err
		case "credentials":
			file.creds, err = p.credentials(v)
			return err
		case "topics":
			file.topics, err = p.topics(v)
			return err
		}
		f := flags.Lookup(key)
		if f == nil || notFileKeys[key] {
			return p.unknownKey(k, "", "the keys", p.topKeys())
		}
		s, err := p.setting(f, v)
		if err != nil {
			return err
		}
		file.settings = append(file.settings, s)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return file, nil
}

// unknownKey refuses key k of a mapping (in names the mapping) whose keys
// are keys, called whose in the message ("a queue's keys"): it names the
// one nearest k, most likely the one meant, then lists them all.
func (p *configParser) unknownKey(k *yaml.Node, in, whose string, keys []string) error {
	near := ""
	if n := nearestName(k.Value, keys, "-"); n != "" {
		near = " (did you mean " + n + "?)"
	}
	return p.errorf(k, "%sunknown key %q%s; %s are %s", in, k.Value, near, whose, strings.Join(keys, ", "))
}

// topKeys lists the keys a file may have at the top level.
func (p *configParser) topKeys() []string {
	keys := []string{"credentials", "queues", "topics"}
	p.flags.VisitAll(func(f *pflag.Flag) {
		if !notFileKeys[f.Name] {
			keys = append(keys, f.Name)
		}
	})
	slices.Sort(keys)
	return keys
}

// eachPair calls fn for each key of mapping n, refusing a key given twice
// or that is not a plain string. in names the mapping in messages.
func (p *configParser) eachPair(n *yaml.Node, in string, fn func(key string, k, v *yaml.Node) error) error {
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), deref(n.Content[i+1])
		if k.Kind != yaml.ScalarNode || isNull(k) {
			return p.errorf(k, "%swant a key, got %s", in, kindName(k))
		}
		if first, dup := seen[k.Value]; dup {
			return p.errorf(k, "%skey %q is given twice (first on line %d)", in, k.Value, first)
		}
		seen[k.Value] = k.Line
		if err := fn(k.Value, k, v); err != nil {
			return err
		}
	}
	return nil
}

// setting parses the value of a key naming flag f: one value, or a list
// for a flag that takes several.
func (p *configParser) setting(f *pflag.Flag, v *yaml.Node) (configSetting, error) {
	s := configSetting{key: f.Name, line: v.Line}
	_, multi := f.Value.(pflag.SliceValue)
	var items []*yaml.Node
	switch {
	case isNull(v):
		return s, p.errorf(v, "%s: no value; leave the key out for the default (%q)", f.Name, f.DefValue)
	case v.Kind == yaml.ScalarNode:
		items = []*yaml.Node{v}
	case v.Kind == yaml.SequenceNode && multi:
		items = v.Content
	default:
		return s, p.errorf(v, "%s: want a single value, got %s", f.Name, kindName(v))
	}
	for _, it := range items {
		it = deref(it)
		if it.Kind != yaml.ScalarNode || isNull(it) {
			return s, p.errorf(it, "%s: want a value, got %s", f.Name, kindName(it))
		}
		if err := checkSetting(f, it.Value); err != nil {
			return s, p.errorf(it, "%s: %v", f.Name, err)
		}
		s.values = append(s.values, it.Value)
	}
	return s, nil
}

// queues parses the queues list.
func (p *configParser) queues(n *yaml.Node) ([]QueueConfig, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, p.errorf(n, "queues: want a list of queues (- name: …), got %s", kindName(n))
	}
	var qs []QueueConfig
	for i, item := range n.Content {
		item = deref(item)
		in := fmt.Sprintf("queues[%d]: ", i)
		if item.Kind != yaml.MappingNode {
			return nil, p.errorf(item, "%swant a mapping (name: …), got %s", in, kindName(item))
		}
		q := QueueConfig{where: p.where(item), attrWhere: map[string]string{}}
		var deadLetter *yaml.Node
		err := p.eachPair(item, in, func(key string, k, v *yaml.Node) error {
			var err error
			switch key {
			case "name":
				q.Name, err = p.scalar(v, in+"name")
				if err == nil {
					q.where = p.where(v)
					in = fmt.Sprintf("queue %s: ", q.Name)
				}
			case "account-id":
				if q.AccountID, err = p.scalar(v, in+"account-id"); err == nil {
					if err = checkAccountID(q.AccountID); err != nil {
						err = p.errorf(v, "%saccount-id: %v", in, err)
					}
				}
			case "region":
				if q.Region, err = p.scalar(v, in+"region"); err == nil {
					if err = settingChecks["region"](q.Region); err != nil {
						err = p.errorf(v, "%sregion: %v", in, err)
					}
				}
			case "attributes":
				err = p.attributes(v, in, &q)
			case "tags":
				q.Tags, err = p.tags(v, in)
			case "dead-letter":
				deadLetter = k
				err = p.deadLetter(v, in, &q)
			default:
				err = p.unknownKey(k, in, "a queue's keys", []string{"name", "account-id", "region", "attributes", "tags", "dead-letter"})
			}
			return err
		})
		if err != nil {
			return nil, err
		}
		if q.Name == "" {
			return nil, p.errorf(item, "%sno name", in)
		}
		if deadLetter != nil {
			if w, ok := q.attrWhere[engine.AttrRedrivePolicy]; ok {
				return nil, p.errorf(deadLetter, "%sgive dead-letter or attributes.RedrivePolicy, not both (RedrivePolicy at %s)", in, w)
			}
			q.attrWhere[engine.AttrRedrivePolicy] = p.where(deadLetter)
		}
		qs = append(qs, q)
	}
	return qs, nil
}

// scalar returns the string of a non-null scalar.
func (p *configParser) scalar(n *yaml.Node, what string) (string, error) {
	if n.Kind != yaml.ScalarNode || isNull(n) || n.Value == "" {
		return "", p.errorf(n, "%s: want a value, got %s", what, kindName(n))
	}
	return n.Value, nil
}

// attributes parses a queue's attributes (attributeValues).
func (p *configParser) attributes(n *yaml.Node, in string, q *QueueConfig) error {
	var err error
	q.Attributes, err = p.attributeValues(n, in, q.attrWhere)
	return err
}

// attributeValues parses a mapping of attributes: each value is taken as
// written, except that a mapping or list (a policy) becomes its JSON. where,
// if not nil, gets each attribute's file:line.
func (p *configParser) attributeValues(n *yaml.Node, in string, where map[string]string) (map[string]string, error) {
	if n.Kind != yaml.MappingNode {
		return nil, p.errorf(n, "%sattributes: want a mapping (Name: value), got %s", in, kindName(n))
	}
	attrs := map[string]string{}
	return attrs, p.eachPair(n, in+"attributes: ", func(name string, k, v *yaml.Node) error {
		switch {
		case isNull(v):
			return p.errorf(v, "%sattribute %s: no value", in, name)
		case v.Kind == yaml.ScalarNode:
			attrs[name] = v.Value
		default:
			var doc any
			if err := v.Decode(&doc); err != nil {
				return p.errorf(v, "%sattribute %s: %v", in, name, err)
			}
			b, err := json.Marshal(doc)
			if err != nil {
				return p.errorf(v, "%sattribute %s: cannot be JSON: %v", in, name, err)
			}
			attrs[name] = string(b)
		}
		if where != nil {
			where[name] = p.where(k)
		}
		return nil
	})
}

// tags parses a queue's tags, a mapping of strings.
func (p *configParser) tags(n *yaml.Node, in string) (map[string]string, error) {
	if n.Kind != yaml.MappingNode {
		return nil, p.errorf(n, "%stags: want a mapping (key: value), got %s", in, kindName(n))
	}
	tags := map[string]string{}
	err := p.eachPair(n, in+"tags: ", func(key string, _, v *yaml.Node) error {
		if v.Kind != yaml.ScalarNode || isNull(v) {
			return p.errorf(v, "%stag %s: want a value, got %s", in, key, kindName(v))
		}
		tags[key] = v.Value
		return nil
	})
	return tags, err
}

// deadLetter parses dead-letter: {queue: NAME, max-receive-count: N}.
func (p *configParser) deadLetter(n *yaml.Node, in string, q *QueueConfig) error {
	if n.Kind != yaml.MappingNode {
		return p.errorf(n, "%sdead-letter: want a mapping (queue: …, max-receive-count: …), got %s", in, kindName(n))
	}
	in += "dead-letter: "
	err := p.eachPair(n, in, func(key string, k, v *yaml.Node) error {
		var err error
		switch key {
		case "queue":
			q.DeadLetterQueue, err = p.scalar(v, in+"queue")
		case "max-receive-count":
			var s string
			if s, err = p.scalar(v, in+"max-receive-count"); err == nil {
				q.MaxReceiveCount, err = strconv.Atoi(s)
				if err != nil || q.MaxReceiveCount < 1 || q.MaxReceiveCount > 1000 {
					err = p.errorf(v, "%smax-receive-count: %q is not a number from 1 to 1000", in, s)
				}
			}
		default:
			err = p.unknownKey(k, in, "the keys", []string{"queue", "max-receive-count"})
		}
		return err
	})
	if err != nil {
		return err
	}
	if q.DeadLetterQueue == "" {
		return p.errorf(n, "%sno queue", in)
	}
	if q.MaxReceiveCount == 0 {
		return p.errorf(n, "%sno max-receive-count", in)
	}
	return nil
}

// credentials parses the credentials list.
func (p *configParser) credentials(n *yaml.Node) ([]fileCredential, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, p.errorf(n, "credentials: want a list (- access-key-id: …), got %s", kindName(n))
	}
	var creds []fileCredential
	first := map[string]string{}
	for i, item := range n.Content {
		item = deref(item)
		in := fmt.Sprintf("credentials[%d]: ", i)
		if item.Kind != yaml.MappingNode {
			return nil, p.errorf(item, "%swant a mapping (access-key-id: …), got %s", in, kindName(item))
		}
		c := fileCredential{where: p.where(item)}
		err := p.eachPair(item, in, func(key string, k, v *yaml.Node) error {
			var err error
			switch key {
			case "access-key-id":
				c.AccessKeyID, err = p.scalar(v, in+key)
			case "secret-access-key":
				if c.SecretAccessKey, err = p.scalar(v, in+key); err == nil {
					if err = checkNotMask(c.SecretAccessKey); err != nil {
						err = p.errorf(v, "%ssecret-access-key: %v", in, err)
					}
				}
			case "account-id":
				if c.Account, err = p.scalar(v, in+key); err == nil {
					if err = checkAccountID(c.Account); err != nil {
						err = p.errorf(v, "%saccount-id: %v", in, err)
					}
				}
			default:
				err = p.unknownKey(k, in, "the keys", []string{"access-key-id", "secret-access-key", "account-id"})
			}
			return err
		})
		if err != nil {
			return nil, err
		}
		check := c.Credential
		if check.Account == "" {
			check.Account = "000000000000" // checked again with the real default
		}
		if err := check.Validate(); err != nil {
			return nil, p.errorf(item, "%s%v", in, err)
		}
		if w, dup := first[c.AccessKeyID]; dup {
			return nil, p.errorf(item, "%sthe access key id %s is also listed at %s", in, c.AccessKeyID, w)
		}
		first[c.AccessKeyID] = c.where
		creds = append(creds, c)
	}
	return creds, nil
}

// deref follows a YAML alias (*name) to the node it stands for.
func deref(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// isNull reports whether n is YAML's null (an empty value, ~ or null).
func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// kindName names a node's kind in messages.
func kindName(n *yaml.Node) string {
	switch {
	case isNull(n):
		return "nothing"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Kind == yaml.ScalarNode && n.Value == "":
		return "an empty value"
	case n.Kind == yaml.ScalarNode:
		return fmt.Sprintf("the value %q", n.Value)
	}
	return "an alias"
}
