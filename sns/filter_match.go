package sns

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"strings"

	"github.com/baton-sqs/baton"
)

// Matching a publish against a compiled FilterPolicy (filter.go).
//
// What a key of the policy names is a list of values: a message
// attribute's (one, or a String.Array's elements), or, in the body scope,
// every value at that path of the body, arrays looked through. A key is
// present when it has at least one value. A policy matches when every key
// matches (AND) and, of each $or group, one alternative; a key matches when
// any of its conditions does (OR).

// leaf is one value of a message: a string, a number, true, false or null.
type leaf struct {
	kind byte   // '"', '0', 't', 'f' or 'n', as jsonValue's
	s    string // a string, or a number's literal
	// fix is a number in units of 10^-5 (filter_number.go), when
	// inBounds.
	fix      int64
	inBounds bool
	// in is where the value lies in the arrays of a body (filter_arrays.go).
	in []arrayPos
}

func leafOf(v *jsonValue) leaf {
	if v.kind == '0' {
		return numberLeaf(v.text)
	}
	return leaf{kind: v.kind, s: v.text}
}

// equal: same kind, and a string equal, or a number equal at AWS's
// precision (both within its bounds).
func (a leaf) equal(b leaf) bool {
	if a.kind != b.kind {
		return false
	}
	switch a.kind {
	case '"':
		return a.s == b.s
	case '0':
		return a.inBounds && b.inBounds && a.fix == b.fix
	}
	return true
}

// condition is one value of a policy key: a value to equal or a match
// expression. vals are the message's values at the key, none if absent.
type condition interface {
	matches(vals []leaf) bool
}

// exactCond: some value equals want.
type exactCond struct{ want leaf }

func (c exactCond) matches(vals []leaf) bool {
	for _, v := range vals {
		if v.equal(c.want) {
			return true
		}
	}
	return false
}

// stringCond: some string value has the prefix or suffix, or equals the
// text ignoring case.
type stringCond struct{ op, text string }

func (c stringCond) matches(vals []leaf) bool {
	for _, v := range vals {
		if v.kind != '"' {
			continue
		}
		switch {
		case c.op == "prefix" && strings.HasPrefix(v.s, c.text),
			c.op == "suffix" && strings.HasSuffix(v.s, c.text),
			c.op == "equals-ignore-case" && strings.EqualFold(v.s, c.text):
			return true
		}
	}
	return false
}

// anythingButCond: the key is present and none of its values is listed.
// On a String.Array (or an array in the body) AWS's current documentation
// says it matches "if none of the array elements are listed"; its older
// pages said if any element is not.
type anythingButCond struct{ not []leaf }

func (c anythingButCond) matches(vals []leaf) bool {
	if len(vals) == 0 {
		return false
	}
	for _, v := range vals {
		for _, n := range c.not {
			if v.equal(n) {
				return false
			}
		}
	}
	return true
}

// anythingButPrefixCond: the key is present and no value is a string with
// the prefix.
type anythingButPrefixCond struct{ prefix string }

func (c anythingButPrefixCond) matches(vals []leaf) bool {
	if len(vals) == 0 {
		return false
	}
	for _, v := range vals {
		if v.kind == '"' && strings.HasPrefix(v.s, c.prefix) {
			return false
		}
	}
	return true
}

// numericCond: some number is within the bounds ("=" is both bounds,
// closed), compared at AWS's precision (filter_number.go).
type numericCond struct {
	lo, hi                       int64
	hasLo, hasHi, openLo, openHi bool
}

func (c numericCond) matches(vals []leaf) bool {
	for _, v := range vals {
		if v.kind == '0' && v.inBounds && c.holds(v.fix) {
			return true
		}
	}
	return false
}

func (c numericCond) holds(n int64) bool {
	switch {
	case c.hasLo && (n < c.lo || c.openLo && n == c.lo):
		return false
	case c.hasHi && (n > c.hi || c.openHi && n == c.hi):
		return false
	}
	return true
}

// existsCond: the key is present (want true) or absent (want false).
type existsCond struct{ want bool }

func (c existsCond) matches(vals []leaf) bool { return (len(vals) > 0) == c.want }

// cidrCond: some string value is an IP address of the range's family
// within it.
type cidrCond struct{ lo, hi []byte }

func (c cidrCond) matches(vals []leaf) bool {
	for _, v := range vals {
		if v.kind != '"' {
			continue
		}
		ip, ok := parseIP(v.s)
		if !ok {
			continue
		}
		b := ip.AsSlice()
		if len(b) == len(c.lo) && bytes.Compare(b, c.lo) >= 0 && bytes.Compare(b, c.hi) <= 0 {
			return true
		}
	}
	return false
}

// Match reports whether a message with these attributes passes the
// policy: in the MessageBody scope the message must be a JSON object (any
// other body matches no policy); in the MessageAttributes scope the body
// is not looked at.
func (f *FilterPolicy) Match(message string, attrs []MessageAttribute) bool {
	in := &filterInput{attrs: attrs}
	return f.match(in, message)
}

func (f *FilterPolicy) match(in *filterInput, message string) bool {
	if f.scope == ScopeAttributes {
		return f.root.match("", in.attrValues)
	}
	body, ok := in.body(message)
	if !ok {
		return false
	}
	return f.matchBody(body)
}

// match evaluates the node with its keys under prefix; values gives the
// message's values at a path.
func (n *filterNode) match(prefix string, values func(path string) []leaf) bool {
	for _, f := range n.fields {
		path := f.key
		if prefix != "" {
			path = prefix + "." + f.key
		}
		if f.child != nil {
			if !f.child.match(path, values) {
				return false
			}
			continue
		}
		if !anyCondition(f.conds, values(path)) {
			return false
		}
	}
	for _, alts := range n.ors {
		if !anyAlternative(alts, prefix, values) {
			return false
		}
	}
	return true
}

func anyCondition(conds []condition, vals []leaf) bool {
	for _, c := range conds {
		if c.matches(vals) {
			return true
		}
	}
	return false
}

func anyAlternative(alts []*filterNode, prefix string, values func(string) []leaf) bool {
	for _, alt := range alts {
		if alt.match(prefix, values) {
			return true
		}
	}
	return false
}

// filterInput is what policies look at in one publish: its attributes,
// and its bodies read once as JSON for the policies of the body scope.
type filterInput struct {
	attrs  []MessageAttribute
	bodies map[string]flatBody
}

// flatBody is a JSON object body by path: each value under the keys that
// lead to it joined with ".", arrays looked through, so that a policy key
// "a.b" names both {"a":{"b":…}} and {"a.b":…}, as on AWS.
type flatBody map[string][]leaf

// attrValues is the values of the attribute named name: a String's value,
// a Number's, each element of a String.Array (none if it is not a JSON
// array); a Binary attribute has none, as AWS does not filter on them.
func (in *filterInput) attrValues(name string) []leaf {
	for _, a := range in.attrs {
		if a.Name != name {
			continue
		}
		return attributeLeaves(a.MessageAttribute)
	}
	return nil
}

func attributeLeaves(a baton.MessageAttribute) []leaf {
	base, _, _ := strings.Cut(a.DataType, ".")
	switch {
	case a.DataType == "String.Array":
		var out []leaf
		_ = flattenJSON(a.StringValue, func(path string, l leaf) {
			if path == "" { // not a member of an object in the array
				out = append(out, l)
			}
		}, true)
		return out
	case base == "String":
		return []leaf{{kind: '"', s: a.StringValue}}
	case base == "Number":
		if _, err := strconv.ParseFloat(a.StringValue, 64); err != nil {
			return nil
		}
		return []leaf{numberLeaf(a.StringValue)}
	}
	return nil
}

// body is the message read as a JSON object, once per distinct message;
// false if it is not one.
func (in *filterInput) body(message string) (flatBody, bool) {
	if b, ok := in.bodies[message]; ok {
		return b, b != nil
	}
	if in.bodies == nil {
		in.bodies = make(map[string]flatBody)
	}
	b := flatBody{}
	if !flattenJSON(message, func(path string, l leaf) { b[path] = append(b[path], l) }, false) {
		b = nil
	}
	in.bodies[message] = b
	return b, b != nil
}

// flattenJSON reads s, a JSON object (or, with array set, a JSON array),
// and calls emit for each value with its path. It reports whether s was
// one.
func flattenJSON(s string, emit func(path string, l leaf), array bool) bool {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return false
	}
	if _, err := dec.Token(); err != io.EOF {
		return false
	}
	switch v.(type) {
	case map[string]any:
		if array {
			return false
		}
	case []any:
		if !array {
			return false
		}
	default:
		return false
	}
	w := jsonWalk{emit: emit}
	w.walk("", v, nil)
	return true
}

// jsonWalk emits a JSON document's values with their paths and the array
// elements they lie in (filter_arrays.go).
type jsonWalk struct {
	emit   func(string, leaf)
	arrays int32
}

func (w *jsonWalk) walk(path string, v any, in []arrayPos) {
	var l leaf
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			w.walk(joinPath(path, k), e, in)
		}
		return
	case []any:
		id := w.arrays
		w.arrays++
		for i, e := range t {
			sub := in
			switch e.(type) {
			case map[string]any, []any:
				sub = append(in[:len(in):len(in)], arrayPos{array: id, index: int32(i)})
			}
			w.walk(path, e, sub)
		}
		return
	case string:
		l = leaf{kind: '"', s: t}
	case json.Number:
		l = numberLeaf(string(t))
	case bool:
		l = leaf{kind: 'f'}
		if t {
			l.kind = 't'
		}
	case nil:
		l = leaf{kind: 'n'}
	}
	l.in = in
	w.emit(path, l)
}

// admits reports whether a subscription's filter policy lets the publish
// through; one without a policy admits every publish. A stored policy that
// no longer compiles (it was checked when set) admits it, logged: a
// subscriber gets too much rather than loses a message.
func (s *Service) admits(pub *publication, sub *baton.Subscription) bool {
	policy := sub.Attributes["FilterPolicy"]
	if policy == "" {
		return true
	}
	f, err := compiledFilterPolicy(policy, sub.Attributes["FilterPolicyScope"])
	if err != nil {
		s.log.Warn("sns: a subscription's stored filter policy does not compile; the message is delivered unfiltered",
			"subscription", SubscriptionARN(sub), "reason", baton.AsError(err).Message)
		return true
	}
	if pub.filterIn == nil {
		pub.filterIn = &filterInput{attrs: pub.Attributes}
	}
	msg := pub.Message
	if pub.structure != nil {
		msg = pub.structure.forProtocol(sub.Protocol)
	}
	return f.match(pub.filterIn, msg)
}
