package accesspolicy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// condition is one operator of a statement's Condition block over one key:
// {"ArnEquals": {"aws:SourceArn": "arn:..."}} is one condition.
type condition struct {
	operator string // as written, for the reason of an unknown
	base     string // the operator without IfExists
	key      string // lower case
	values   []string
}

// The operators Baton evaluates, without IfExists, and whether each is
// negated (the key must match none of the values).
var operators = map[string]bool{
	"ArnEquals": false, "ArnLike": false, "ArnNotEquals": true, "ArnNotLike": true,
	"StringEquals": false, "StringNotEquals": true,
	"StringEqualsIgnoreCase": false, "StringNotEqualsIgnoreCase": true,
	"StringLike": false, "StringNotLike": true,
	"Null": false,
}

// parseConditions reads a Condition block: operator to key to one value or
// a list. Values may be strings, numbers or booleans, compared as their
// text. The conditions come out in a fixed order, so that the reason given
// for an unknown one does not change from one evaluation to the next.
func parseConditions(raw json.RawMessage) ([]condition, error) {
	var block map[string]map[string]json.RawMessage
	if err := json.Unmarshal(raw, &block); err != nil {
		return nil, fmt.Errorf("its Condition is not an object of operators to objects of keys")
	}
	var out []condition
	for op, keys := range block {
		for key, v := range keys {
			vals, err := conditionValues(v)
			if err != nil {
				return nil, fmt.Errorf("its condition %s %s: %v", op, key, err)
			}
			c := condition{operator: op, base: op, key: strings.ToLower(key), values: vals}
			// On a key the request carries, which is the only kind
			// evaluated, ...IfExists is the operator itself.
			if b, ok := strings.CutSuffix(op, "IfExists"); ok && b != "Null" {
				c.base = b
			}
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].operator != out[j].operator {
			return out[i].operator < out[j].operator
		}
		return out[i].key < out[j].key
	})
	return out, nil
}

// conditionValues reads one value or a list of them as text.
func conditionValues(raw json.RawMessage) ([]string, error) {
	var list []json.RawMessage
	if err := oneOrList(raw, &list); err != nil {
		return nil, fmt.Errorf("not a value or a list of values")
	}
	out := make([]string, 0, len(list))
	for _, v := range list {
		var s string
		switch v = bytes.TrimSpace(v); {
		case json.Unmarshal(v, &s) == nil:
			out = append(out, s)
		case len(v) > 0 && (v[0] == '-' || v[0] >= '0' && v[0] <= '9' || v[0] == 't' || v[0] == 'f'):
			out = append(out, string(v)) // a number or a boolean, as written
		default:
			return nil, fmt.Errorf("a value is not a string, a number or a boolean")
		}
	}
	return out, nil
}

// holds evaluates the condition against the request's keys. A key the
// request does not carry, an operator Baton does not know or a policy
// variable in a value make it unknown: what AWS would put in the request
// there, or how it would compare, Baton does not know.
func (c condition) holds(ctx map[string]string, variables bool) (tri, string) {
	negated, ok := operators[c.base]
	if !ok {
		return unknown, fmt.Sprintf("its condition operator %s is one Baton does not evaluate", c.operator)
	}
	v, present := ctx[c.key]
	if !present {
		return unknown, fmt.Sprintf("its condition on %s names a key Baton does not know the value of", c.key)
	}
	if variables && hasVariable(c.values) {
		return unknown, fmt.Sprintf("its condition on %s holds a policy variable", c.key)
	}
	if strings.HasPrefix(c.base, "Arn") {
		for _, want := range c.values {
			if strings.Count(want, ":") < 5 {
				return unknown, fmt.Sprintf("its condition on %s has an ARN pattern %q without six parts", c.key, want)
			}
		}
	}
	if c.base == "Null" {
		// {"Null": {"key": "true"}}: the key is absent. It is present here.
		for _, want := range c.values {
			if strings.EqualFold(want, "false") {
				return yes, ""
			}
		}
		return no, ""
	}
	matched := false
	for _, want := range c.values {
		if compare(c.base, want, v) {
			matched = true
			break
		}
	}
	if matched != negated {
		return yes, ""
	}
	return no, ""
}

// compare says whether the request's value got matches want under op (its
// negation left to the caller).
func compare(op, want, got string) bool {
	switch op {
	case "ArnEquals", "ArnLike", "ArnNotEquals", "ArnNotLike":
		return arnMatch(want, got)
	case "StringEquals", "StringNotEquals":
		return want == got
	case "StringEqualsIgnoreCase", "StringNotEqualsIgnoreCase":
		return strings.EqualFold(want, got)
	}
	return wildcard(want, got) // StringLike, StringNotLike
}

// arnMatch compares two ARNs component by component (the six parts between
// colons, the last keeping any further colons), each with wildcards, case
// sensitive: the rule of the ARN operators, Equals and Like alike.
func arnMatch(pattern, arn string) bool {
	p, a := strings.SplitN(pattern, ":", 6), strings.SplitN(arn, ":", 6)
	if len(p) != 6 || len(a) != 6 {
		return false
	}
	for i := range p {
		if !wildcard(p[i], a[i]) {
			return false
		}
	}
	return true
}
