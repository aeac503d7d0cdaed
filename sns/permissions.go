package sns

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
)

// topicActions are the actions a topic's policy may grant, in the order
// AWS's default policy lists them: those of a topic. AWS refuses others in
// a topic's policy ("SNS:*" included) as out of its scope.
var topicActions = []string{"GetTopicAttributes", "SetTopicAttributes", "AddPermission", "RemovePermission",
	"DeleteTopic", "Subscribe", "ListSubscriptionsByTopic", "Publish"}

// AddPermission adds to a topic's Policy attribute, as AWS does, a
// statement whose Sid is label allowing the accounts (their root
// principals) the actions. A label already a statement's Sid is refused
// ("Statement already exists"), and so is an action no topic has ("Policy
// statement action out of service scope!").
func (s *Service) AddPermission(ctx context.Context, c Caller, topicARN, label string, accounts, actions []string) error {
	switch {
	case label == "":
		return missing("Label")
	case len(accounts) == 0:
		return missing("AWSAccountId")
	case len(actions) == 0:
		return missing("ActionName")
	}
	for _, a := range actions {
		if !slices.Contains(topicActions, a) {
			return invalidParameter("Policy statement action out of service scope!")
		}
	}
	return s.editPolicy(ctx, c, topicARN, func(topic string, sts []json.RawMessage) ([]json.RawMessage, error) {
		if sidIndex(sts, label) >= 0 {
			return nil, invalidParameter("Statement already exists")
		}
		st, err := json.Marshal(grant(topic, label, accounts, actions))
		if err != nil {
			return nil, fmt.Errorf("sns: encode statement: %w", err)
		}
		return append(sts, st), nil
	})
}

// RemovePermission removes from a topic's Policy the statement whose Sid
// is label. A label no statement has is removed already: AWS's answer to
// it is not known.
func (s *Service) RemovePermission(ctx context.Context, c Caller, topicARN, label string) error {
	if label == "" {
		return missing("Label")
	}
	return s.editPolicy(ctx, c, topicARN, func(_ string, sts []json.RawMessage) ([]json.RawMessage, error) {
		if i := sidIndex(sts, label); i >= 0 {
			return slices.Delete(sts, i, i+1), nil
		}
		return sts, nil
	})
}

// statement is a statement AddPermission writes, its members in AWS's
// order; Principal.AWS and Action are a string when one, else a list.
type statement struct {
	Sid       string
	Effect    string
	Principal struct{ AWS any }
	Action    any
	Resource  string
}

func grant(topicARN, label string, accounts, actions []string) statement {
	st := statement{Sid: label, Effect: "Allow", Resource: topicARN}
	principals := make([]string, len(accounts))
	for i, a := range accounts {
		principals[i] = "arn:aws:iam::" + a + ":root"
	}
	named := make([]string, len(actions))
	for i, a := range actions {
		named[i] = "SNS:" + a
	}
	st.Principal.AWS, st.Action = oneOrList(principals), oneOrList(named)
	return st
}

func oneOrList(vs []string) any {
	if len(vs) == 1 {
		return vs[0]
	}
	return vs
}

// sidIndex is the index of the statement whose Sid is sid, or -1.
func sidIndex(sts []json.RawMessage, sid string) int {
	for i, raw := range sts {
		var st struct{ Sid string }
		if json.Unmarshal(raw, &st) == nil && st.Sid == sid {
			return i
		}
	}
	return -1
}

// editPolicy changes the statements of a topic's Policy (its default if
// none was set) with edit, keeping every other member, and the statements
// edit keeps, as they were written.
func (s *Service) editPolicy(ctx context.Context, c Caller, topicARN string,
	edit func(topicARN string, sts []json.RawMessage) ([]json.RawMessage, error)) error {
	s.mu.Lock() // a read, a change and a write of the whole topic
	defer s.mu.Unlock()
	t, err := s.topic(ctx, c, "TopicArn", topicARN)
	if err != nil {
		return err
	}
	arn := TopicARN(t.Region, t.Account, t.Name)
	policy := t.Attributes["Policy"]
	if policy == "" {
		policy = defaultPolicy(arn, t.Account)
	}
	doc, err := parsePolicy(policy)
	if err != nil {
		return err
	}
	sts, err := edit(arn, doc.sts)
	if err != nil {
		return err
	}
	if t.Attributes == nil {
		t.Attributes = make(map[string]string)
	}
	t.Attributes["Policy"] = doc.with(sts)
	return s.updateTopic(ctx, t)
}

// policyDoc is a policy's top-level members in the order written, and
// its statements.
type policyDoc struct {
	keys []string
	vals []json.RawMessage
	sts  []json.RawMessage
}

// parsePolicy reads a policy document, an object whose Statement, if
// any, is a list (SetTopicAttributes checked it is an object).
func parsePolicy(s string) (*policyDoc, error) {
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	bad := invalidParameter("Policy Reason: the topic's policy is not a JSON object of members")
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, bad
	}
	doc := &policyDoc{}
	for dec.More() {
		tok, err := dec.Token()
		key, ok := tok.(string)
		if err != nil || !ok {
			return nil, bad
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, bad
		}
		doc.keys, doc.vals = append(doc.keys, key), append(doc.vals, v)
	}
	if i := slices.Index(doc.keys, "Statement"); i >= 0 {
		if err := json.Unmarshal(doc.vals[i], &doc.sts); err != nil {
			return nil, invalidParameter("Policy Reason: the topic's policy has a Statement that is not a list")
		}
	}
	return doc, nil
}

// with is the policy with sts as its statements, compact.
func (d *policyDoc) with(sts []json.RawMessage) string {
	if sts == nil {
		sts = []json.RawMessage{}
	}
	list, _ := json.Marshal(sts) // raw messages that decoded encode
	keys, vals := d.keys, d.vals
	if i := slices.Index(keys, "Statement"); i >= 0 {
		vals = slices.Clone(vals)
		vals[i] = list
	} else {
		keys, vals = append(slices.Clone(keys), "Statement"), append(slices.Clone(vals), list)
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := json.Marshal(k)
		b.Write(name)
		b.WriteByte(':')
		json.Compact(&b, vals[i])
	}
	b.WriteByte('}')
	return b.String()
}
