package cli

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"
)

// writeEffectiveConfig prints the configuration serve would run with as a
// config file would say it, each setting's source in a comment and secrets
// masked (secret keys, and the password of a PostgreSQL --store URL).
func writeEffectiveConfig(w io.Writer, flags *pflag.FlagSet, file *configFile, cfg ServeConfig) error {
	fromFile := map[string]int{}
	if file != nil {
		for _, s := range file.settings {
			fromFile[s.key] = s.line
		}
	}
	root := &yaml.Node{Kind: yaml.MappingNode}
	root.HeadComment = "Effective configuration of baton serve: flags > BATON_* variables > config file > defaults.\nSecrets are masked."
	flags.VisitAll(func(f *pflag.Flag) {
		if notFileKeys[f.Name] {
			return
		}
		var v *yaml.Node
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			v = &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
			for _, s := range sv.GetSlice() {
				v.Content = append(v.Content, strNode(s))
			}
		} else {
			s := f.Value.String()
			switch {
			case strings.Contains(f.Name, "secret") && s != "":
				s = secretMask
			case f.Name == "store":
				s = storeName(s) // a PostgreSQL URL without its password
			}
			v = strNode(s)
			if t := f.Value.Type(); t != "string" {
				v.Tag = "" // numbers and booleans plain
			}
		}
		_, env := os.LookupEnv(envName(f))
		switch line, inFile := fromFile[f.Name]; {
		case f.Changed:
			v.LineComment = "from --" + f.Name
		case env:
			v.LineComment = "from " + envName(f)
		case inFile:
			v.LineComment = fmt.Sprintf("from %s:%d", file.path, line)
		}
		root.Content = append(root.Content, strNode(f.Name), v)
	})
	if len(cfg.Credentials) > 0 {
		list := &yaml.Node{Kind: yaml.SequenceNode}
		for _, c := range cfg.Credentials {
			list.Content = append(list.Content, mapNode(
				"access-key-id", strNode(c.AccessKeyID),
				"secret-access-key", strNode(secretMask),
				"account-id", strNode(c.Account)))
		}
		root.Content = append(root.Content, strNode("credentials"), list)
	}
	if len(cfg.Queues) > 0 {
		list := &yaml.Node{Kind: yaml.SequenceNode}
		for _, q := range cfg.Queues {
			item := declaredNode(q.Name, q.where, q.AccountID, q.Region, q.Attributes, q.Tags)
			if q.DeadLetterQueue != "" {
				count := strNode(strconv.Itoa(q.MaxReceiveCount))
				count.Tag = ""
				item.Content = append(item.Content, strNode("dead-letter"),
					mapNode("queue", strNode(q.DeadLetterQueue), "max-receive-count", count))
			}
			list.Content = append(list.Content, item)
		}
		root.Content = append(root.Content, strNode("queues"), list)
	}
	if len(cfg.Topics) > 0 {
		root.Content = append(root.Content, strNode("topics"), topicsNode(cfg.Topics))
	}
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return err
	}
	return enc.Close()
}

// strNode is a string scalar, quoted only where YAML would read it as
// something else.
func strNode(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
}

// mapNode is a mapping of the given key, value node pairs.
func mapNode(kv ...any) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode}
	for i := 0; i+1 < len(kv); i += 2 {
		n.Content = append(n.Content, strNode(kv[i].(string)), kv[i+1].(*yaml.Node))
	}
	return n
}

// stringMapNode is m as a mapping sorted by key, values plain where YAML
// reads them back as the same text.
func stringMapNode(m map[string]string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := strNode(m[k])
		if m[k] != "" && !isNull(&yaml.Node{Kind: yaml.ScalarNode, Value: m[k]}) {
			v.Tag = ""
		}
		n.Content = append(n.Content, strNode(k), v)
	}
	return n
}

// declaredNode is what a declared queue and topic have in common as
// --print-config writes it: the name (with the file and line it came
// from), account, region, attributes and tags, each only when set.
func declaredNode(name, where, account, region string, attrs, tags map[string]string) *yaml.Node {
	n := strNode(name)
	n.LineComment = "from " + where
	item := mapNode("name", n)
	if account != "" {
		item.Content = append(item.Content, strNode("account-id"), strNode(account))
	}
	if region != "" {
		item.Content = append(item.Content, strNode("region"), strNode(region))
	}
	if len(attrs) > 0 {
		item.Content = append(item.Content, strNode("attributes"), stringMapNode(attrs))
	}
	if len(tags) > 0 {
		item.Content = append(item.Content, strNode("tags"), stringMapNode(tags))
	}
	return item
}
