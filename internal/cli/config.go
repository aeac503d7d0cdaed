package cli

// The `baton serve --config FILE` file. It is YAML:
//
//	listen: 127.0.0.1:9324
//	log-level: info
//	credentials:
//	  - access-key-id: AKIDORDERS
//	    secret-access-key: s3cret
//	    account-id: "111111111111"   # default: account-id
//	queues:
//	  - name: orders
//	    attributes: {VisibilityTimeout: 60}
//	    tags: {team: billing}
//	    dead-letter: {queue: orders-dlq, max-receive-count: 5}
//	  - name: orders-dlq
//
// Every other top-level key is one of serve's flags, spelled as the flag
// is, so a setting has one name as a flag, a BATON_* variable and a key.
// A flag on the command line wins over the variable, which wins over the
// file, which wins over the flag's default.

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/protocol/sigv4"
	"github.com/baton-sqs/baton/store/memstore"
	"github.com/baton-sqs/baton/store/sqlitestore"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"
)

// secretMask replaces a secret in --print-config's output.
const secretMask = "********"

// notFileKeys are serve's flags that are not settings a file may hold.
var notFileKeys = map[string]bool{"config": true, "print-config": true, "help": true}

// QueueConfig is a queue that `baton serve` creates at start-up, after the
// engine starts and before the server accepts requests. A queue that
// exists already (a durable store's, from an earlier run) gets the
// attributes and tags declared here.
type QueueConfig struct {
	Name string
	// AccountID is the queue's account; empty means ServeConfig.AccountID.
	AccountID string
	// Region is the queue's region; empty means ServeConfig.Region, the
	// default region. Each region is a namespace of queues of its own.
	Region string
	// Attributes are CreateQueue's, values as SQS spells them; a .fifo
	// name implies FifoQueue=true.
	Attributes map[string]string
	Tags       map[string]string
	// DeadLetterQueue, if set, names a queue of the same account, declared
	// in the same file, that receives this queue's messages once they have
	// been received MaxReceiveCount times.
	DeadLetterQueue string
	MaxReceiveCount int

	// where is the declaration's "file:line", for error messages; attrWhere
	// that of each attribute (RedrivePolicy's is dead-letter's).
	where     string
	attrWhere map[string]string
}

// addConfigFlags adds --config and --print-config to serve's flags.
func addConfigFlags(f *pflag.FlagSet) {
	f.String("config", "", "YAML file of settings and of queues to create at start-up (see README)")
	f.Bool("print-config", false, "print the effective configuration as YAML, secrets masked, and exit")
}

// loadServeConfig reads the --config file, if any, into the flags that
// neither the command line nor a BATON_* variable set (call it after
// envDefaults), and its queues and credentials into cfg. With
// --print-config it also checks the queues against a scratch in-memory
// engine, prints the effective configuration and reports done. Every
// problem with the file is an error naming file:line and the reason.
func loadServeConfig(cmd *cobra.Command, cfg *ServeConfig) (done bool, err error) {
	flags := cmd.Flags()
	path, _ := flags.GetString("config")
	printConfig, _ := flags.GetBool("print-config")
	var file *configFile
	if path != "" {
		if file, err = readConfigFile(path, flags); err != nil {
			return false, err
		}
		if err := file.apply(flags); err != nil {
			return false, err
		}
		cfg.Queues = file.queues
		if cfg.Credentials, err = file.resolveCredentials(cfg.AccountID); err != nil {
			return false, err
		}
	}
	if err := checkFlagSettings(flags); err != nil {
		return false, err
	}
	if _, err := planQueues(cfg.Queues, cfg.AccountID); err != nil {
		return false, err
	}
	if !printConfig {
		return false, nil
	}
	if _, err := cfg.credentials(); err != nil { // as serve checks them
		return false, err
	}
	if err := checkQueues(cmd.Context(), *cfg); err != nil {
		return false, err
	}
	return true, writeEffectiveConfig(cmd.OutOrStdout(), flags, file, *cfg)
}

// checkFlagSettings gives the values set by flags and BATON_* variables the
// checks a file's values get (checkSetting), naming where each came from.
func checkFlagSettings(flags *pflag.FlagSet) error {
	var err error
	flags.VisitAll(func(f *pflag.Flag) {
		check := settingChecks[f.Name]
		if err != nil || check == nil {
			return
		}
		from := "--" + f.Name
		if !f.Changed {
			if _, env := os.LookupEnv(envName(f)); !env {
				return // the default, or the file's value (checked as read)
			}
			from = envName(f)
		}
		if e := check(f.Value.String()); e != nil {
			err = fmt.Errorf("%s: %w", from, e)
		}
	})
	return err
}

// configFile is a parsed --config file.
type configFile struct {
	path     string
	settings []configSetting
	creds    []fileCredential
	queues   []QueueConfig
}

// configSetting is a top-level key that sets the flag of the same name.
type configSetting struct {
	key    string
	values []string
	line   int
}

// fileCredential is an entry of the file's credentials list; an empty
// Account means the server's account-id.
type fileCredential struct {
	sigv4.Credential
	where string
}

// configParser reads one file; errors carry its path and a line.
type configParser struct {
	path  string
	flags *pflag.FlagSet
}

func (p *configParser) errorf(n *yaml.Node, format string, args ...any) error {
	return fmt.Errorf("%s:%d: %s", p.path, n.Line, fmt.Sprintf(format, args...))
}

func (p *configParser) where(n *yaml.Node) string { return fmt.Sprintf("%s:%d", p.path, n.Line) }

// yamlLine finds the line in yaml.v3's syntax errors ("yaml: line 3: …").
var yamlLine = regexp.MustCompile(`^yaml: line ([0-9]+): (.*)$`)

// readConfigFile parses path, refusing unknown keys and invalid values.
// flags are serve's: each top-level key other than queues and credentials
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
		}
		f := flags.Lookup(key)
		if f == nil || notFileKeys[key] {
			return p.errorf(k, "unknown key %q; the keys are %s", key, strings.Join(p.topKeys(), ", "))
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

// syntaxError formats a YAML syntax error in data as file:line: reason.
//
// The line yaml.v3 reports is not always the problem's: for a parser error
// it is the line where the construct being parsed began (the block mapping
// an ill-indented key breaks, lines above it), for some errors there is
// none ("unknown anchor"), and it numbers the lines of its scanner's errors
// from 1 but those of its parser's from 0, leaving the number out for line
// 0. So the line is found by cutting the file: the first line at whose end
// the parser already fails with the same reason. Only for a file too long
// to cut line by line is the reported line taken, corrected as below (the
// parser's problems are a fixed set: the package is frozen).
func (p *configParser) syntaxError(data []byte, err error) error {
	msg, line := yamlProblem(err)
	if at := firstFailingLine(data, msg); at > 0 {
		return fmt.Errorf("%s:%d: %s", p.path, at, msg)
	}
	for _, problem := range yamlParserProblems {
		if strings.HasPrefix(msg, problem) {
			line++
			break
		}
	}
	return fmt.Errorf("%s:%d: %s", p.path, max(line, 1), msg)
}

// yamlProblem splits a yaml.v3 error into its reason and the line it
// names (0 if none).
func yamlProblem(err error) (msg string, line int) {
	msg = strings.TrimPrefix(err.Error(), "yaml: ")
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	return msg, line
}

// maxCutLines bounds the file firstFailingLine cuts: each cut parses the
// lines above it again.
const maxCutLines = 2000

// firstFailingLine is the 1-based number of the first line of data at
// whose end the YAML parser fails with msg, or 0.
func firstFailingLine(data []byte, msg string) int {
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines) > maxCutLines {
		return 0
	}
	end := 0
	for i, l := range lines {
		end += len(l)
		dec := yaml.NewDecoder(bytes.NewReader(data[:end]))
		for {
			var n yaml.Node
			err := dec.Decode(&n)
			if err == nil {
				continue
			}
			if m, _ := yamlProblem(err); m == msg {
				return i + 1
			}
			break
		}
	}
	return 0
}

// yamlParserProblems are the messages of yaml.v3's parser (parserc.go), as
// opposed to its scanner's.
var yamlParserProblems = []string{
	"did not find expected ',' or ']'", "did not find expected ',' or '}'", "did not find expected '-' indicator",
	"did not find expected <document start>", "did not find expected <stream-start>", "did not find expected key",
	"did not find expected node content", "found duplicate %TAG directive", "found duplicate %YAML directive",
	"found incompatible YAML document", "found undefined tag handle",
}

// topKeys lists the keys a file may have at the top level.
func (p *configParser) topKeys() []string {
	keys := []string{"credentials", "queues"}
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

// checkSetting checks a value for flag f: that the flag's type parses it,
// and what serve would refuse later without a line to point at.
func checkSetting(f *pflag.Flag, v string) error {
	switch f.Value.Type() {
	case "bool":
		if _, err := strconv.ParseBool(v); err != nil {
			return fmt.Errorf("%q is not true or false", v)
		}
	case "int", "int32", "int64":
		if _, err := strconv.ParseInt(v, 10, 64); err != nil {
			return fmt.Errorf("%q is not an integer", v)
		}
	case "uint", "uint32", "uint64":
		if _, err := strconv.ParseUint(v, 10, 64); err != nil {
			return fmt.Errorf("%q is not a non-negative integer", v)
		}
	case "duration":
		if _, err := time.ParseDuration(v); err != nil {
			return fmt.Errorf("%q is not a duration (like 30s or 5m)", v)
		}
	}
	if check := settingChecks[f.Name]; check != nil {
		return check(v)
	}
	return nil
}

// settingChecks validate the values of particular settings.
var settingChecks = map[string]func(string) error{
	"listen": func(v string) error {
		_, port, err := net.SplitHostPort(v)
		if err != nil {
			return fmt.Errorf("%q is not HOST:PORT", v)
		}
		if n, err := strconv.ParseUint(port, 10, 16); err != nil && port != "" || n > 65535 {
			return fmt.Errorf("%q: the port is not a number from 0 to 65535", v)
		}
		return nil
	},
	"log-level": func(v string) error {
		var l slog.Level
		if err := l.UnmarshalText([]byte(v)); err != nil {
			return fmt.Errorf("%q is not a log level (debug, info, warn, error)", v)
		}
		return nil
	},
	"account-id":    checkAccountID,
	"advertise-url": checkAdvertiseURL,
	"region": func(v string) error {
		if v == "" || strings.Trim(v, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
			return fmt.Errorf("%q is not a region name (like us-east-1)", v)
		}
		return nil
	},
	"durability": func(v string) error {
		_, err := sqlitestore.ParseDurability(v)
		return err
	},
	"store": func(v string) error {
		if v != "sqlite" && v != "memory" && !isPostgresURL(v) {
			return fmt.Errorf("%q is not a store; the stores are sqlite, memory and postgres://…", storeName(v))
		}
		if maskedStore(v) {
			return fmt.Errorf("%q carries the password mask --print-config writes: put the real password here", v)
		}
		return nil
	},
	"secret-access-key": checkNotMask,
	"max-long-polls-per-client": func(v string) error {
		if v == "0" { // the server would take 0 for its default, 100
			return fmt.Errorf("0 would allow no long poll; give a bound above 0, or a negative number for none")
		}
		return nil
	},
}

// checkNotMask refuses the mask --print-config writes for a secret, so that
// its output, read back, does not make a server whose secret is the mask.
func checkNotMask(v string) error {
	if v == secretMask {
		return fmt.Errorf("%q is the mask --print-config writes, not a secret: put the real secret here", v)
	}
	return nil
}

func checkAccountID(v string) error {
	if len(v) != 12 || strings.Trim(v, "0123456789") != "" {
		return fmt.Errorf("%q is not an account id (12 digits)", v)
	}
	return nil
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
				err = p.errorf(k, "%sunknown key %q; a queue's keys are name, account-id, region, attributes, tags, dead-letter", in, key)
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

// attributes parses a queue's attributes: each value is taken as written,
// except that a mapping or list (a policy) becomes its JSON.
func (p *configParser) attributes(n *yaml.Node, in string, q *QueueConfig) error {
	if n.Kind != yaml.MappingNode {
		return p.errorf(n, "%sattributes: want a mapping (Name: value), got %s", in, kindName(n))
	}
	q.Attributes = map[string]string{}
	return p.eachPair(n, in+"attributes: ", func(name string, k, v *yaml.Node) error {
		switch {
		case isNull(v):
			return p.errorf(v, "%sattribute %s: no value", in, name)
		case v.Kind == yaml.ScalarNode:
			q.Attributes[name] = v.Value
		default:
			var doc any
			if err := v.Decode(&doc); err != nil {
				return p.errorf(v, "%sattribute %s: %v", in, name, err)
			}
			b, err := json.Marshal(doc)
			if err != nil {
				return p.errorf(v, "%sattribute %s: cannot be JSON: %v", in, name, err)
			}
			q.Attributes[name] = string(b)
		}
		q.attrWhere[name] = p.where(k)
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
			err = p.errorf(k, "%sunknown key %q; the keys are queue, max-receive-count", in, key)
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
				err = p.errorf(k, "%sunknown key %q; the keys are access-key-id, secret-access-key, account-id", in, key)
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

// apply sets each flag the file names to the file's value, unless the
// command line or the flag's BATON_* variable set it.
func (file *configFile) apply(flags *pflag.FlagSet) error {
	for _, s := range file.settings {
		f := flags.Lookup(s.key)
		if _, env := os.LookupEnv(envName(f)); f.Changed || env {
			continue
		}
		for _, v := range s.values {
			if err := f.Value.Set(v); err != nil {
				return fmt.Errorf("%s:%d: %s: %v", file.path, s.line, s.key, err)
			}
		}
	}
	return nil
}

// resolveCredentials returns the file's keys, those without an account-id
// acting for account.
func (file *configFile) resolveCredentials(account string) ([]sigv4.Credential, error) {
	var creds []sigv4.Credential
	for _, c := range file.creds {
		if c.Account == "" {
			c.Account = account
		}
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("%s: credentials: %w", c.where, err)
		}
		creds = append(creds, c.Credential)
	}
	return creds, nil
}

// planQueues returns queues in an order that creates every dead-letter
// queue before the queues that use it, keeping the file's order otherwise.
// A queue declared twice, a dead-letter queue not declared, and a cycle of
// dead-letter links are errors.
func planQueues(queues []QueueConfig, account string) ([]QueueConfig, error) {
	key := func(q QueueConfig) string { return q.Region + "/" + cmp.Or(q.AccountID, account) + "/" + q.Name }
	byKey := make(map[string]int, len(queues))
	for i, q := range queues {
		if j, dup := byKey[key(q)]; dup {
			return nil, fmt.Errorf("%s: queue %s is declared twice (first at %s)", q.where, q.Name, queues[j].where)
		}
		byKey[key(q)] = i
	}
	const (
		unvisited = iota
		visiting
		done
	)
	state := make([]int, len(queues))
	var order []QueueConfig
	var visit func(i int, path []string) error
	visit = func(i int, path []string) error {
		q := queues[i]
		path = append(path, q.Name)
		switch state[i] {
		case done:
			return nil
		case visiting:
			return fmt.Errorf("%s: the dead-letter queues form a cycle: %s", q.attrWhere[engine.AttrRedrivePolicy], strings.Join(path, " -> "))
		}
		state[i] = visiting
		if q.DeadLetterQueue != "" {
			j, ok := byKey[q.Region+"/"+cmp.Or(q.AccountID, account)+"/"+q.DeadLetterQueue]
			if !ok {
				return fmt.Errorf("%s: queue %s: the dead-letter queue %s is not declared in the file (in the same account and region)",
					q.attrWhere[engine.AttrRedrivePolicy], q.Name, q.DeadLetterQueue)
			}
			if err := visit(j, path); err != nil {
				return err
			}
		}
		state[i] = done
		order = append(order, q)
		return nil
	}
	for i := range queues {
		if err := visit(i, nil); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// createQueues creates the declared queues through the engine, with the
// API's validation, dead-letter queues first. A queue that exists gets the
// declared attributes and tags. Each is logged as created, exists (as
// declared already) or updated (its attributes or tags changed to the
// file's). An error names the file:line of the attribute it is about, or
// else of the queue.
func createQueues(ctx context.Context, eng *engine.Engine, queues []QueueConfig, account string, log *slog.Logger) error {
	order, err := planQueues(queues, account)
	if err != nil {
		return err
	}
	for _, q := range order {
		acct := cmp.Or(q.AccountID, account)
		attrs := maps.Clone(q.Attributes)
		if attrs == nil {
			attrs = map[string]string{}
		}
		if baton.IsFIFOName(q.Name) {
			if _, ok := attrs[engine.AttrFifoQueue]; !ok {
				attrs[engine.AttrFifoQueue] = "true"
			}
		}
		if q.DeadLetterQueue != "" {
			policy, _ := json.Marshal(map[string]any{
				"deadLetterTargetArn": engine.RegionARN(cmp.Or(q.Region, eng.Region()), acct, q.DeadLetterQueue), "maxReceiveCount": q.MaxReceiveCount,
			})
			attrs[engine.AttrRedrivePolicy] = string(policy)
		}
		ref := engine.QueueRef{Region: q.Region, Account: acct, Name: q.Name}
		what, err := ensureQueue(ctx, eng, ref, attrs, q.Tags)
		if err != nil {
			return fmt.Errorf("%s: queue %s: %w", q.errorWhere(err), q.Name, err)
		}
		log.Info("config queue "+what, "queue", q.Name, "account", acct, "region", cmp.Or(q.Region, eng.Region()))
	}
	return nil
}

// ensureQueue makes the queue ref have attrs and tags, and says how:
// "created", "exists" (it had them already) or "updated".
func ensureQueue(ctx context.Context, eng *engine.Engine, ref engine.QueueRef, attrs, tags map[string]string) (string, error) {
	_, err := eng.GetQueue(ctx, ref)
	var e *baton.Error
	switch {
	case errors.As(err, &e) && e.Code == baton.ErrQueueDoesNotExist:
		_, err := eng.CreateQueue(ctx, engine.CreateQueueParams{Region: ref.Region, Account: ref.Account, Name: ref.Name, Attributes: attrs, Tags: tags})
		return "created", err
	case err != nil:
		return "", err
	}
	what := "exists"
	// CreateQueue answers the existing queue when every attribute given
	// equals its own, and QueueNameExists when one differs: then the file
	// wins.
	_, err = eng.CreateQueue(ctx, engine.CreateQueueParams{Region: ref.Region, Account: ref.Account, Name: ref.Name, Attributes: attrs})
	if errors.As(err, &e) && e.Code == baton.ErrQueueNameExists {
		delete(attrs, engine.AttrFifoQueue)
		err, what = nil, "updated"
		if len(attrs) > 0 {
			err = eng.SetQueueAttributes(ctx, ref, attrs)
		}
	}
	if err != nil || len(tags) == 0 {
		return what, err
	}
	have, err := eng.ListQueueTags(ctx, ref)
	if err != nil {
		return "", err
	}
	for k, v := range tags {
		if t, ok := have[k]; !ok || t != v {
			return "updated", eng.TagQueue(ctx, ref, tags)
		}
	}
	return what, nil
}

// errorWhere is the file:line an engine error is about: the attribute it
// names (the longest name, so that RedriveAllowPolicy is not taken for
// Policy), else the queue's declaration.
func (q QueueConfig) errorWhere(err error) string {
	msg, best := err.Error(), ""
	for name := range q.attrWhere {
		if strings.Contains(msg, name) && len(name) > len(best) {
			best = name
		}
	}
	if best != "" {
		return q.attrWhere[best]
	}
	return q.where
}

// checkQueues creates cfg's queues in a scratch in-memory engine, to report
// what the real start-up would refuse.
func checkQueues(ctx context.Context, cfg ServeConfig) error {
	if len(cfg.Queues) == 0 {
		return nil
	}
	store := memstore.New()
	defer store.Close()
	eng, err := engine.New(engine.Config{Store: store, Region: cfg.Region, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	defer eng.Close()
	return createQueues(ctx, eng, cfg.Queues, cfg.AccountID, slog.New(slog.DiscardHandler))
}

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
			name := strNode(q.Name)
			name.LineComment = "from " + q.where
			item := mapNode("name", name)
			if q.AccountID != "" {
				item.Content = append(item.Content, strNode("account-id"), strNode(q.AccountID))
			}
			if q.Region != "" {
				item.Content = append(item.Content, strNode("region"), strNode(q.Region))
			}
			if len(q.Attributes) > 0 {
				item.Content = append(item.Content, strNode("attributes"), stringMapNode(q.Attributes))
			}
			if len(q.Tags) > 0 {
				item.Content = append(item.Content, strNode("tags"), stringMapNode(q.Tags))
			}
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
