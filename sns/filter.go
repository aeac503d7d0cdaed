package sns

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"
	"sync"

	"github.com/baton-sqs/baton"
)

// Filter policies: a subscription's FilterPolicy, checked as AWS checks it
// and compiled once into a tree that filter_match.go evaluates against a
// publish.
//
// The refusal texts are AWS's, as recorded on AWS (SNS-CONTRACT §6). Where
// no recording exists, the text is that of AWS's open-source event matcher
// (aws/event-ruler), whose texts SNS returns verbatim in every recorded
// case. AWS appends a parser location after a line break to most of them
// ("\n at [Source: …; line: 1, column: N]"); Baton does not.

// Filter policy scopes: what a policy's keys name.
const (
	// ScopeAttributes: the keys are message attribute names (the default).
	ScopeAttributes = "MessageAttributes"
	// ScopeBody: the keys are property paths of a message body that is a
	// JSON object.
	ScopeBody = "MessageBody"
)

// AWS's limits on a filter policy (Amazon SNS Developer Guide, "Filter
// policy constraints").
const (
	maxFilterPolicyBytes      = 256 * 1024
	maxFilterPolicyKeys       = 5
	maxFilterPolicyComplexity = 150
)

// FilterPolicy is a subscription filter policy, checked and compiled. It
// is immutable and safe for concurrent use.
type FilterPolicy struct {
	scope string
	root  *filterNode
}

// filterNode is one JSON object of a policy: every field must match (AND),
// and of each $or group, one alternative.
type filterNode struct {
	fields []filterField
	ors    [][]*filterNode
}

// filterField is one key of a policy object: either conditions on the
// values at that key (any may match: OR) or a nested object.
type filterField struct {
	key   string
	conds []condition
	child *filterNode
}

// ParseFilterPolicy checks a FilterPolicy for a subscription of scope ("" is
// MessageAttributes) and compiles it. A refusal is InvalidParameter with
// AWS's text as SetSubscriptionAttributes answers it ("Invalid parameter:
// FilterPolicy: …").
func ParseFilterPolicy(policy, scope string) (*FilterPolicy, error) {
	if scope == "" {
		scope = ScopeAttributes
	}
	if len(policy) > maxFilterPolicyBytes {
		// AWS documents the limit; its refusal text is not recorded.
		return nil, policyErr("Filter policy is too large: the most is %d bytes", maxFilterPolicyBytes)
	}
	doc, err := parseOrderedJSON(policy)
	if err != nil {
		return nil, policyErr("failed to parse JSON. %s", err.Error())
	}
	if doc.kind != '{' {
		return nil, policyErr("Filter is not an object")
	}
	root, msg := compileObject(doc, false)
	if msg != "" {
		return nil, policyErr("%s", msg)
	}
	if scope == ScopeAttributes && root.nested() {
		return nil, invalidParameter("Filter policy scope MessageAttributes does not support nested filter policy")
	}
	if root.topKeys() > maxFilterPolicyKeys {
		return nil, policyErr("Filter policy can not have more than %d keys", maxFilterPolicyKeys)
	}
	if root.complexity(1) > maxFilterPolicyComplexity {
		return nil, policyErr("Filter policy is too complex")
	}
	return &FilterPolicy{scope: scope, root: root}, nil
}

func policyErr(format string, args ...any) *baton.Error {
	return invalidParameter("FilterPolicy: "+format, args...)
}

// Scope is the policy's scope: ScopeAttributes or ScopeBody.
func (f *FilterPolicy) Scope() string { return f.scope }

// checkFilterScope checks a FilterPolicyScope value.
func checkFilterScope(v string) error {
	if v != ScopeAttributes && v != ScopeBody {
		return invalidParameter("FilterPolicyScope: Invalid value [%s]. Please use either MessageBody or MessageAttributes", v)
	}
	return nil
}

// checkFilterAttributes checks a subscription's FilterPolicy under its
// FilterPolicyScope, as they stand once a change is made: a scope change
// is refused when the policy set does not hold under the new scope.
func checkFilterAttributes(attrs map[string]string) error {
	policy := attrs["FilterPolicy"]
	if policy == "" {
		return nil
	}
	_, err := compiledFilterPolicy(policy, attrs["FilterPolicyScope"])
	return err
}

// showFilterAttributes makes a subscription's rendered attributes show
// the filter attributes as AWS shows them: FilterPolicyScope only beside a
// FilterPolicy, MessageAttributes when never set.
func showFilterAttributes(out map[string]string) {
	switch {
	case out["FilterPolicy"] == "":
		delete(out, "FilterPolicy")
		delete(out, "FilterPolicyScope")
	case out["FilterPolicyScope"] == "":
		out["FilterPolicyScope"] = ScopeAttributes
	}
}

// filterCache keeps compiled policies by scope and text, so that a publish
// compiles none; it forgets them all when full.
var filterCache = struct {
	sync.Mutex
	m map[string]*FilterPolicy
}{m: map[string]*FilterPolicy{}}

const filterCacheSize = 1024

// compiledFilterPolicy is ParseFilterPolicy, remembered.
func compiledFilterPolicy(policy, scope string) (*FilterPolicy, error) {
	key := scope + "\x00" + policy
	filterCache.Lock()
	f := filterCache.m[key]
	filterCache.Unlock()
	if f != nil {
		return f, nil
	}
	f, err := ParseFilterPolicy(policy, scope)
	if err != nil {
		return nil, err
	}
	filterCache.Lock()
	if len(filterCache.m) >= filterCacheSize {
		clear(filterCache.m)
	}
	filterCache.m[key] = f
	filterCache.Unlock()
	return f, nil
}

// nested reports whether any object of the policy nests another.
func (n *filterNode) nested() bool {
	for _, f := range n.fields {
		if f.child != nil {
			return true
		}
	}
	for _, alts := range n.ors {
		for _, alt := range alts {
			if alt.nested() {
				return true
			}
		}
	}
	return false
}

// topKeys is the most keys of the policy's top level that one $or branch
// holds: only parent keys count toward AWS's limit of five.
func (n *filterNode) topKeys() int {
	keys := len(n.fields)
	for _, alts := range n.ors {
		most := 0
		for _, alt := range alts {
			most = max(most, alt.topKeys())
		}
		keys += most
	}
	return keys
}

// complexityCap bounds a complexity while it is computed: past the limit
// the exact figure does not matter, and products must not overflow.
const complexityCap = 1 << 40

// complexity is AWS's "total combination of values": over the branches
// $or makes, the sum of the products, for each array of values, of the
// array's length and its nesting depth (depth starts at 1).
func (n *filterNode) complexity(depth int) int64 {
	total := int64(1)
	for _, f := range n.fields {
		if f.child != nil {
			total = capMul(total, f.child.complexity(depth+1))
		} else {
			total = capMul(total, int64(depth*len(f.conds)))
		}
	}
	for _, alts := range n.ors {
		sum := int64(0)
		for _, alt := range alts {
			sum = min(sum+alt.complexity(depth), complexityCap)
		}
		total = capMul(total, sum)
	}
	return total
}

func capMul(a, b int64) int64 {
	if a != 0 && b > complexityCap/a {
		return complexityCap
	}
	return a * b
}

// orReserved are the names a key inside $or may not have.
var orReserved = map[string]bool{
	"prefix": true, "suffix": true, "anything-but": true, "exists": true, "numeric": true,
	"cidr": true, "equals-ignore-case": true, "wildcard": true, "exact": true,
}

// compileObject compiles one policy object; insideOr is set within a $or
// alternative. It returns AWS's text for the first fault, in document
// order.
func compileObject(v *jsonValue, insideOr bool) (*filterNode, string) {
	if len(v.keys) == 0 {
		return nil, "Empty objects are not allowed"
	}
	n := &filterNode{}
	for i, key := range v.keys {
		val := v.vals[i]
		if key == "$or" {
			alts, msg := compileOr(val)
			if msg != "" {
				return nil, msg
			}
			n.ors = append(n.ors, alts)
			continue
		}
		if insideOr && orReserved[key] {
			return nil, key + " is Ruler reserved fieldName which cannot be used inside $or."
		}
		switch val.kind {
		case '{':
			child, msg := compileObject(val, insideOr)
			if msg != "" {
				return nil, msg
			}
			n.fields = append(n.fields, filterField{key: key, child: child})
		case '[':
			conds, msg := compileValues(val)
			if msg != "" {
				return nil, msg
			}
			n.fields = append(n.fields, filterField{key: key, conds: conds})
		default:
			return nil, fmt.Sprintf("%q must be an object or an array", key)
		}
	}
	return n, ""
}

// compileOr compiles the array of a $or key: two objects or more.
func compileOr(v *jsonValue) ([]*filterNode, string) {
	if v.kind != '[' {
		return nil, "It must be an Array followed with $or."
	}
	var alts []*filterNode
	for _, e := range v.elems {
		if e.kind != '{' {
			return nil, "Only JSON object is allowed in array of $or relationship."
		}
		alt, msg := compileObject(e, true)
		if msg != "" {
			return nil, msg
		}
		alts = append(alts, alt)
	}
	if len(alts) < 2 {
		return nil, "There must have at least 2 Objects in $or relationship."
	}
	return alts, ""
}

// compileValues compiles the array of values of a key: each a value to
// equal or a match expression.
func compileValues(v *jsonValue) ([]condition, string) {
	var conds []condition
	for _, e := range v.elems {
		switch e.kind {
		case '{':
			c, msg := compileExpression(e)
			if msg != "" {
				return nil, msg
			}
			conds = append(conds, c)
		case '[':
			return nil, "Match value must be String, number, true, false, or null"
		case '0':
			if _, msg := policyNumber(e); msg != "" {
				return nil, msg
			}
			conds = append(conds, exactCond{want: leafOf(e)})
		default:
			conds = append(conds, exactCond{want: leafOf(e)})
		}
	}
	if len(conds) == 0 {
		return nil, "Empty arrays are not allowed"
	}
	return conds, ""
}

// compileExpression compiles one match expression: an object of one
// operator.
func compileExpression(v *jsonValue) (condition, string) {
	if len(v.keys) == 0 {
		return nil, "Match expression name not found"
	}
	op, arg := v.keys[0], v.vals[0]
	var c condition
	var msg string
	switch op {
	case "prefix", "suffix", "equals-ignore-case":
		if arg.kind != '"' {
			return nil, op + " match pattern must be a string"
		}
		c = stringCond{op: op, text: arg.text}
	case "numeric":
		if arg.kind != '[' {
			return nil, "Value of numeric must be an array."
		}
		c, msg = compileNumeric(arg.elems)
	case "anything-but":
		c, msg = compileAnythingBut(arg)
	case "exists":
		if arg.kind != 't' && arg.kind != 'f' {
			return nil, "exists match pattern must be either true or false."
		}
		c = existsCond{want: arg.kind == 't'}
	case "cidr":
		if arg.kind != '"' {
			return nil, "prefix match pattern must be a string"
		}
		c, msg = compileCIDR(arg.text)
	default:
		return nil, "Unrecognized match type " + op
	}
	switch {
	case msg != "":
		return nil, msg
	case len(v.keys) > 1 && (op == "numeric" || op == "anything-but" && arg.kind != '{'):
		return nil, "Too many elements in numeric expression"
	case len(v.keys) > 1:
		return nil, "Only one key allowed in match expression"
	}
	return c, ""
}

// compileNumeric compiles a numeric expression: ["=", n], one bound
// (">", ">=", "<", "<=" and a number), or a lower bound then an upper one.
func compileNumeric(e []*jsonValue) (condition, string) {
	if len(e) == 0 {
		return nil, "Invalid member in numeric match: ]"
	}
	if e[0].kind != '"' {
		return nil, "Invalid member in numeric match: " + e[0].token()
	}
	op := e[0].text
	name := op
	if op == "=" {
		name = "equals"
	}
	switch op {
	case "=", ">", ">=", "<", "<=":
	default:
		return nil, "Unrecognized numeric range operator: " + op
	}
	if len(e) < 2 || e[1].kind != '0' {
		return nil, "Value of " + name + " must be numeric"
	}
	n, msg := policyNumber(e[1])
	if msg != "" {
		return nil, msg
	}
	r := numericCond{}
	switch op {
	case "=":
		r.lo, r.hi, r.hasLo, r.hasHi = n, n, true, true
	case ">", ">=":
		r.lo, r.hasLo, r.openLo = n, true, op == ">"
		if len(e) > 2 {
			return completeRange(r, e[1], e[2:])
		}
		return r, ""
	default:
		r.hi, r.hasHi, r.openHi = n, true, op == "<"
	}
	if len(e) > 2 {
		return nil, "Too many elements in numeric expression"
	}
	return r, ""
}

// completeRange adds the upper bound of a range to its lower one, lo.
func completeRange(r numericCond, lo *jsonValue, e []*jsonValue) (condition, string) {
	if e[0].kind != '"' {
		return nil, "Bad value in numeric range: " + e[0].token()
	}
	op := e[0].text
	if op != "<" && op != "<=" {
		return nil, "Bad numeric range operator: " + op
	}
	if len(e) < 2 || e[1].kind != '0' {
		return nil, "Value of " + op + " must be numeric"
	}
	if len(e) > 2 {
		return nil, "Too many terms in numeric range expression"
	}
	hi, msg := policyNumber(e[1])
	if msg != "" {
		return nil, msg
	}
	r.hi, r.hasHi, r.openHi = hi, true, op == "<"
	if lo.num >= e[1].num {
		return nil, "Bottom must be less than top"
	}
	return r, ""
}

// compileAnythingBut compiles anything-but's argument: a string, a number,
// a list of strings or of numbers, or {"prefix": "…"}.
func compileAnythingBut(arg *jsonValue) (condition, string) {
	switch arg.kind {
	case '{':
		if len(arg.keys) == 0 {
			return nil, "Anything-But expression name not found"
		}
		if op := arg.keys[0]; op != "prefix" {
			return nil, "Unsupported anything-but pattern: " + op
		}
		p := arg.vals[0]
		switch {
		case p.kind != '"':
			return nil, "prefix match pattern must be a string"
		case p.text == "":
			// The text of AWS's matcher of the time SNS's recorded
			// texts match; not recorded on SNS itself.
			return nil, "Null prefix not allowed"
		case len(arg.keys) > 1:
			return nil, "Only one key allowed in match expression"
		}
		return anythingButPrefixCond{prefix: p.text}, ""
	case '"', '0':
		if _, msg := policyNumber(arg); arg.kind == '0' && msg != "" {
			return nil, msg
		}
		return anythingButCond{not: []leaf{leafOf(arg)}}, ""
	case '[':
		var not []leaf
		strs, nums := false, false
		for _, e := range arg.elems {
			switch e.kind {
			case '"':
				strs = true
			case '0':
				nums = true
				if _, msg := policyNumber(e); msg != "" {
					return nil, msg
				}
			default:
				return nil, "Inside anything but list, start|null|boolean is not supported."
			}
			not = append(not, leafOf(e))
		}
		if strs == nums {
			return nil, "Inside anything but list, either all values are number or string, mixed type is not supported"
		}
		return anythingButCond{not: not}, ""
	}
	return nil, "Value of anything-but must be an array or single string/number value."
}

// compileCIDR compiles a cidr pattern: an IPv4 or IPv6 address and its
// mask bits. As AWS's matcher does, the range runs from the address given
// to that address with every host bit set.
func compileCIDR(s string) (condition, string) {
	parts := strings.Split(s, "/")
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1] // as Java's split drops them
	}
	if len(parts) != 2 {
		return nil, "Malformed CIDR, one '/' required"
	}
	bits, err := strconv.Atoi(parts[1])
	if err != nil {
		return nil, "Malformed CIDR, mask bits must be an integer"
	}
	if bits < 0 {
		return nil, "Malformed CIDR, mask bits must not be negative"
	}
	ip, ok := parseIP(parts[0])
	if !ok {
		return nil, "Nonstandard IP address: " + parts[0]
	}
	lo := ip.AsSlice()
	if len(lo) == 4 && bits > 31 {
		return nil, "IPv4 mask bits must be < 32"
	}
	if len(lo) == 16 && bits > 127 {
		return nil, "IPv6 mask bits must be < 128"
	}
	hi := make([]byte, len(lo))
	for i := range lo {
		host := len(lo)*8 - bits - (len(lo)-1-i)*8 // host bits in this byte
		switch {
		case host >= 8:
			hi[i] = 0xff
		case host <= 0:
			hi[i] = lo[i]
		default:
			hi[i] = lo[i] | byte(1<<host-1)
		}
	}
	return cidrCond{lo: lo, hi: hi}, ""
}

// parseIP reads an IPv4 or IPv6 address literal (no zone); an IPv4 address
// written as IPv6 is IPv4.
func parseIP(s string) (netip.Addr, bool) {
	ip, err := netip.ParseAddr(s)
	if err != nil || ip.Zone() != "" {
		return netip.Addr{}, false
	}
	return ip.Unmap(), true
}

// jsonValue is a JSON value that keeps its object's keys in document
// order, as AWS checks a policy in that order. kind is '{', '[', '"'
// (string), '0' (number), 't', 'f' or 'n' (null).
type jsonValue struct {
	kind  byte
	text  string // a string, or a number's literal
	num   float64
	keys  []string
	vals  []*jsonValue
	elems []*jsonValue
}

// token is how AWS names the value in a refusal: its literal, or the
// bracket that opens it.
func (v *jsonValue) token() string {
	switch v.kind {
	case '{', '[':
		return string(v.kind)
	case 't':
		return "true"
	case 'f':
		return "false"
	case 'n':
		return "null"
	}
	return v.text
}

// maxPolicyDepth bounds the nesting of a policy document; no policy that
// deep can be under the complexity limit, which counts depth.
const maxPolicyDepth = 1000

// parseOrderedJSON parses one JSON document, nothing after it.
func parseOrderedJSON(s string) (*jsonValue, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	v, err := readJSONValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("unexpected data after the JSON document")
	}
	return v, nil
}

func readJSONValue(dec *json.Decoder, depth int) (*jsonValue, error) {
	if depth > maxPolicyDepth {
		return nil, errors.New("the document is nested too deeply")
	}
	tok, err := dec.Token()
	if err == io.EOF {
		return nil, errors.New("unexpected end of input")
	}
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' {
			return readJSONObject(dec, depth)
		}
		if t == '[' {
			return readJSONArray(dec, depth)
		}
		return nil, fmt.Errorf("unexpected %q", rune(t))
	case string:
		return &jsonValue{kind: '"', text: t}, nil
	case json.Number:
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return nil, err
		}
		return &jsonValue{kind: '0', text: string(t), num: f}, nil
	case bool:
		if t {
			return &jsonValue{kind: 't'}, nil
		}
		return &jsonValue{kind: 'f'}, nil
	}
	return &jsonValue{kind: 'n'}, nil
}

func readJSONObject(dec *json.Decoder, depth int) (*jsonValue, error) {
	v := &jsonValue{kind: '{'}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string) // the decoder allows only strings here
		val, err := readJSONValue(dec, depth+1)
		if err != nil {
			return nil, err
		}
		v.keys, v.vals = append(v.keys, key), append(v.vals, val)
	}
	_, err := dec.Token() // '}'
	return v, err
}

func readJSONArray(dec *json.Decoder, depth int) (*jsonValue, error) {
	v := &jsonValue{kind: '['}
	for dec.More() {
		e, err := readJSONValue(dec, depth+1)
		if err != nil {
			return nil, err
		}
		v.elems = append(v.elems, e)
	}
	_, err := dec.Token() // ']'
	return v, err
}
