package convert

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ElasticMQ converts an ElasticMQ configuration file (elasticmq.conf, in
// HOCON): its queues block, its aws block (region and account) and the
// port of its rest-sqs block. source names the file for the header.
//
// Each queue's defaultVisibilityTimeout, delay and receiveMessageWait
// become VisibilityTimeout, DelaySeconds and ReceiveMessageWaitTimeSeconds;
// fifo and contentBasedDeduplication become FifoQueue and
// ContentBasedDeduplication; deadLettersQueue { name, maxReceiveCount }
// becomes dead-letter; tags stay tags. copyTo and moveTo, which SQS has no
// counterpart of, and ElasticMQ's storage, statistics and auto-create
// settings become notes.
func ElasticMQ(text, source string) (*Config, error) {
	root, err := parseHOCON(text)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	c := &Config{Source: source + " (ElasticMQ)"}
	c.note("%s", regionNote)
	conv := emqConverter{c: c, source: source}
	if err := conv.server(root); err != nil {
		return nil, err
	}
	queues, err := conv.object(root.get("queues"), "queues")
	if err != nil {
		return nil, err
	}
	if queues == nil {
		c.note("%s declares no queues block", source)
	}
	for _, name := range queuesKeys(queues) {
		o, err := conv.object(queues.get(name), "queues."+name)
		if err != nil {
			return nil, err
		}
		q, err := conv.queue(name, o)
		if err != nil {
			return nil, err
		}
		c.Queues = append(c.Queues, q)
	}
	return c, nil
}

func queuesKeys(o *hObject) []string {
	if o == nil {
		return nil
	}
	return o.keys
}

type emqConverter struct {
	c      *Config
	source string
}

func (v emqConverter) errorf(line int, format string, args ...any) error {
	return fmt.Errorf("%s:%d: "+format, append([]any{v.source, line}, args...)...)
}

// object is the object at a key, nil if absent.
func (v emqConverter) object(h hValue, what string) (*hObject, error) {
	switch h := h.(type) {
	case nil:
		return nil, nil
	case *hObject:
		return h, nil
	case hScalar:
		return nil, v.errorf(h.line, "%s: want an object { … }, found %q", what, h.text)
	case hArray:
		return nil, v.errorf(h.line, "%s: want an object { … }, found an array", what)
	}
	return nil, fmt.Errorf("%s: %s: unreadable value", v.source, what)
}

// scalar is the scalar at key of o, ok false if absent.
func (v emqConverter) scalar(o *hObject, key, what string) (hScalar, bool, error) {
	switch h := o.get(key).(type) {
	case nil:
		return hScalar{}, false, nil
	case hScalar:
		return h, true, nil
	default:
		return hScalar{}, false, v.errorf(o.line, "%s.%s: want a single value", what, key)
	}
}

// server reads the settings of the server itself: aws, rest-sqs,
// node-address, and the blocks that become notes.
func (v emqConverter) server(root *hObject) error {
	if aws, err := v.object(root.get("aws"), "aws"); err != nil {
		return err
	} else if aws != nil {
		if r, ok, err := v.scalar(aws, "region", "aws"); err != nil {
			return err
		} else if ok {
			v.c.Region = r.text
		}
		if a, ok, err := v.scalar(aws, "accountId", "aws"); err != nil {
			return err
		} else if ok {
			v.c.AccountID = a.text
		}
	}
	rest, err := v.object(root.get("rest-sqs"), "rest-sqs")
	if err != nil {
		return err
	}
	if p, ok, err := v.scalar(rest, "bind-port", "rest-sqs"); err != nil {
		return err
	} else if ok && p.text != "9324" {
		v.c.Listen = "127.0.0.1:" + p.text
	}
	if h, ok, _ := v.scalar(rest, "bind-hostname", "rest-sqs"); ok && h.text != "localhost" && !strings.HasPrefix(h.text, "127.") {
		v.c.note("ElasticMQ listened on %s; Baton listens on 127.0.0.1 unless told otherwise: beyond loopback (a container: listen 0.0.0.0:9324) it needs credentials or --allow-anonymous", h.text)
	}
	if err := v.nodeAddress(root); err != nil {
		return err
	}
	for key, note := range map[string]string{
		"rest-stats":         "ElasticMQ's statistics and UI on port 9325: Baton's dashboard is at / on its own port, its JSON under /admin/api/",
		"messages-storage":   "ElasticMQ's messages-storage: Baton keeps queues and messages durably by default, in --data-dir (./baton-data); --store memory keeps nothing",
		"queues-storage":     "ElasticMQ's queues-storage: Baton keeps its queues in its store, and creates the ones declared here at each start",
		"auto-create-queues": "ElasticMQ's auto-create-queues: Baton, as SQS, creates no queue on first use; declare each here",
	} {
		if root.get(key) != nil {
			v.c.note("%s", note)
		}
	}
	return nil
}

// nodeAddress keeps a queue-URL host that ElasticMQ fixed, other than
// localhost, as advertise-url; "*" (the request's Host) is Baton's default.
func (v emqConverter) nodeAddress(root *hObject) error {
	if g, ok, _ := v.scalar(root, "generate-node-address", ""); ok && g.text == "true" {
		return nil
	}
	na, err := v.object(root.get("node-address"), "node-address")
	if err != nil || na == nil {
		return err
	}
	host, ok, _ := v.scalar(na, "host", "node-address")
	if !ok || host.text == "*" || host.text == "localhost" {
		return nil
	}
	proto, _, _ := v.scalar(na, "protocol", "node-address")
	port, _, _ := v.scalar(na, "port", "node-address")
	u := cmpOr(proto.text, "http") + "://" + host.text
	if port.text != "" {
		u += ":" + port.text
	}
	v.c.AdvertiseURL = u
	if cp, ok, _ := v.scalar(na, "context-path", "node-address"); ok && cp.text != "" {
		v.c.note("node-address.context-path %q: Baton serves queue URLs at the root of its address", cp.text)
	}
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// queue converts one queue's block.
func (v emqConverter) queue(name string, o *hObject) (Queue, error) {
	q := Queue{Name: name}
	what := "queues." + name
	for _, key := range queuesKeys(o) {
		switch key {
		case "defaultVisibilityTimeout", "delay", "receiveMessageWait":
			s, _, err := v.scalar(o, key, what)
			if err != nil {
				return q, err
			}
			secs, err := hoconSeconds(s.text)
			if err != nil {
				return q, v.errorf(s.line, "%s.%s: %v", what, key, err)
			}
			q.setAttr(map[string]string{"defaultVisibilityTimeout": "VisibilityTimeout", "delay": "DelaySeconds",
				"receiveMessageWait": "ReceiveMessageWaitTimeSeconds"}[key], strconv.FormatInt(secs, 10))
		case "fifo", "contentBasedDeduplication":
			s, _, err := v.scalar(o, key, what)
			if err != nil {
				return q, err
			}
			if s.text != "true" && s.text != "false" {
				return q, v.errorf(s.line, "%s.%s: want true or false, found %q", what, key, s.text)
			}
			if s.text == "true" || key == "contentBasedDeduplication" && strings.HasSuffix(name, ".fifo") {
				q.setAttr(map[string]string{"fifo": "FifoQueue", "contentBasedDeduplication": "ContentBasedDeduplication"}[key], s.text)
			}
		case "deadLettersQueue":
			if err := v.deadLetter(&q, o, what); err != nil {
				return q, err
			}
		case "tags":
			tags, err := v.object(o.get(key), what+".tags")
			if err != nil {
				return q, err
			}
			for _, k := range queuesKeys(tags) {
				s, _, err := v.scalar(tags, k, what+".tags")
				if err != nil {
					return q, err
				}
				q.Tags = append(q.Tags, Pair{k, s.text})
			}
		case "copyTo", "moveTo":
			s, _, _ := v.scalar(o, key, what)
			v.c.note("queue %s: %s = %q (ElasticMQ's own; SQS and Baton have no counterpart: send to that queue from your code, or subscribe both queues to an SNS topic)", name, key, s.text)
		default:
			v.c.note("queue %s: the setting %s is not one ElasticMQ documents for queues, and was not converted", name, key)
		}
	}
	return q, nil
}

func (v emqConverter) deadLetter(q *Queue, o *hObject, what string) error {
	dl, err := v.object(o.get("deadLettersQueue"), what+".deadLettersQueue")
	if err != nil {
		return err
	}
	n, okN, err := v.scalar(dl, "name", what+".deadLettersQueue")
	if err != nil {
		return err
	}
	m, okM, err := v.scalar(dl, "maxReceiveCount", what+".deadLettersQueue")
	if err != nil {
		return err
	}
	if !okN || !okM {
		return v.errorf(dl.line, "%s.deadLettersQueue: needs both name and maxReceiveCount", what)
	}
	count, err := strconv.Atoi(m.text)
	if err != nil {
		return v.errorf(m.line, "%s.deadLettersQueue.maxReceiveCount: want a whole number, found %q", what, m.text)
	}
	q.DeadLetter, q.MaxReceiveCount = n.text, count
	return nil
}

// hoconSeconds reads a HOCON duration ("10 seconds", "10s", "1 minute",
// "500 ms"; a bare number is milliseconds, as HOCON defines) as whole
// seconds, which is what SQS's attributes count in.
func hoconSeconds(text string) (int64, error) {
	s := strings.TrimSpace(text)
	i := strings.IndexFunc(s, func(r rune) bool { return !(r >= '0' && r <= '9' || r == '.') })
	num, unit := s, ""
	if i >= 0 {
		num, unit = s[:i], strings.TrimSpace(s[i:])
	}
	n, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("want a duration such as \"10 seconds\", found %q", text)
	}
	var d time.Duration
	switch unit {
	case "", "ms", "milli", "millis", "millisecond", "milliseconds":
		d = time.Millisecond
	case "s", "second", "seconds":
		d = time.Second
	case "m", "minute", "minutes":
		d = time.Minute
	case "h", "hour", "hours":
		d = time.Hour
	case "d", "day", "days":
		d = 24 * time.Hour
	default:
		return 0, fmt.Errorf("the unit %q of %q is not one of ms, seconds, minutes, hours, days", unit, text)
	}
	secs := n * d.Seconds()
	if secs != math.Trunc(secs) {
		return 0, fmt.Errorf("%q is not a whole number of seconds, which SQS counts in (a bare number is milliseconds)", text)
	}
	return int64(secs), nil
}
