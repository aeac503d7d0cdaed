// Package accesspolicy evaluates an access policy document (the IAM policy
// language an SQS queue's Policy attribute is written in) for one request
// made by an AWS service principal, as AWS evaluates it: an explicit Deny
// wins, else an Allow, else the request is implicitly denied ("Policy
// evaluation logic", IAM User Guide).
//
// It knows the part of the language that decides whether SNS may send to a
// queue: Version, Statement (one object or a list), Sid, Effect,
// Principal/NotPrincipal, Action/NotAction, Resource/NotResource with
// wildcards, and the Condition operators ArnEquals, ArnLike, ArnNotEquals,
// ArnNotLike, StringEquals, StringNotEquals, StringEqualsIgnoreCase,
// StringNotEqualsIgnoreCase, StringLike, StringNotLike (each with the
// IfExists suffix) and Null, over the keys the request carries. What it
// does not know (another operator, a key the request does not name, a
// policy variable) it does not guess: a statement that depends on it makes
// the answer Undecided, with the reason, unless another statement decides
// the request whatever it says.
package accesspolicy

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Request is what a policy is asked about: may Service do Action on
// Resource.
type Request struct {
	// Service is the service principal making the request, e.g.
	// "sns.amazonaws.com".
	Service string
	// Action is "service:Name", e.g. "sqs:SendMessage".
	Action string
	// Resource is the ARN of the resource the policy is attached to.
	Resource string
	// Context holds the request's condition keys and their values, e.g.
	// aws:SourceArn; key names are compared without regard to case. A
	// condition on a key not listed is one Baton cannot evaluate.
	Context map[string]string
}

// Decision is a policy's answer to a request.
type Decision int

const (
	// ImplicitDeny: no statement allows the request (or there is no policy).
	ImplicitDeny Decision = iota
	// Allow: a statement allows it and none denies it.
	Allow
	// ExplicitDeny: a statement denies it.
	ExplicitDeny
	// Undecided: the answer depends on a part of the policy Baton does not
	// evaluate (Verdict.Why says which).
	Undecided
)

// String names the decision as logs do.
func (d Decision) String() string {
	switch d {
	case Allow:
		return "allow"
	case ExplicitDeny:
		return "explicit deny"
	case Undecided:
		return "undecided"
	}
	return "implicit deny"
}

// Verdict is a decision and what made it.
type Verdict struct {
	Decision Decision
	// Statement names the statement that decided (its Sid, else its
	// position, "statement 2"), for Allow, ExplicitDeny and Undecided.
	Statement string
	// Why says, for ImplicitDeny and Undecided, why in words.
	Why string
}

// Evaluate answers whether policy (a JSON document; "" for none) lets r
// through. A document it cannot read is Undecided.
func Evaluate(policy string, r Request) Verdict {
	if strings.TrimSpace(policy) == "" {
		return Verdict{Decision: ImplicitDeny, Why: "there is no policy"}
	}
	doc, err := parse(policy)
	if err != nil {
		return Verdict{Decision: Undecided, Why: err.Error()}
	}
	ctx := make(map[string]string, len(r.Context))
	for k, v := range r.Context {
		ctx[strings.ToLower(k)] = v
	}
	r.Context = ctx
	var allow, unknownAllow, unknownDeny *Verdict
	for i, st := range doc.statements {
		name := st.name(i)
		applies, why := st.applies(r, doc.variables)
		switch {
		case applies == yes && st.effect == "Deny":
			return Verdict{Decision: ExplicitDeny, Statement: name}
		case applies == yes && allow == nil:
			allow = &Verdict{Decision: Allow, Statement: name}
		case applies == unknown && st.effect == "Deny" && unknownDeny == nil:
			unknownDeny = &Verdict{Decision: Undecided, Statement: name, Why: why}
		case applies == unknown && st.effect == "Allow" && unknownAllow == nil:
			unknownAllow = &Verdict{Decision: Undecided, Statement: name, Why: why}
		}
	}
	switch {
	case allow != nil && unknownDeny != nil:
		return *unknownDeny
	case allow != nil:
		return *allow
	case unknownAllow != nil:
		return *unknownAllow
	}
	// A Deny that may apply changes nothing when nothing allows.
	return Verdict{Decision: ImplicitDeny, Why: "no statement allows it"}
}

// tri is a three-valued truth: whether a statement applies may be unknown.
type tri int

const (
	no tri = iota
	yes
	unknown
)

// document is a parsed policy.
type document struct {
	statements []statement
	// variables: Version 2012-10-17, under which ${...} in a resource or a
	// condition value is a policy variable.
	variables bool
}

// statement is one parsed statement; a nil list is an element it lacks.
type statement struct {
	sid    string
	effect string
	// principal or notPrincipal, whichever it has (notPrincipal set).
	principal    map[string][]string
	notPrincipal bool
	hasPrincipal bool
	actions      []string
	notAction    bool
	hasAction    bool
	resources    []string
	notResource  bool
	hasResource  bool
	conditions   []condition
}

func (st *statement) name(i int) string {
	if st.sid != "" {
		return st.sid
	}
	return fmt.Sprintf("statement %d", i+1)
}

// applies says whether the statement covers r: its principal, action,
// resource and every condition; why says what is unknown.
func (st *statement) applies(r Request, variables bool) (tri, string) {
	if st.effect != "Allow" && st.effect != "Deny" {
		return unknown, fmt.Sprintf("its Effect %q is neither Allow nor Deny", st.effect)
	}
	if !st.hasPrincipal {
		return unknown, "it has no Principal"
	}
	if st.principalMatches(r.Service) == st.notPrincipal {
		return no, ""
	}
	if !st.hasAction {
		return unknown, "it has no Action"
	}
	if matchAny(st.actions, r.Action, true) == st.notAction {
		return no, ""
	}
	if !st.hasResource {
		return unknown, "it has no Resource"
	}
	if variables && hasVariable(st.resources) {
		return unknown, "its Resource holds a policy variable"
	}
	if matchAny(st.resources, r.Resource, false) == st.notResource {
		return no, ""
	}
	result, why := yes, ""
	for _, c := range st.conditions {
		switch got, w := c.holds(r.Context, variables); got {
		case no:
			return no, ""
		case unknown:
			result, why = unknown, w
		}
	}
	return result, why
}

// principalMatches says whether the statement's principal list names the
// service: "*", {"AWS": "*"} or {"Service": service}.
func (st *statement) principalMatches(service string) bool {
	for kind, ids := range st.principal {
		for _, id := range ids {
			if id == "*" && (kind == "*" || kind == "AWS") || kind == "Service" && id == service {
				return true
			}
		}
	}
	return false
}

func hasVariable(vals []string) bool {
	for _, v := range vals {
		if strings.Contains(v, "${") {
			return true
		}
	}
	return false
}

// matchAny says whether any pattern matches s (wildcards * and ?), without
// regard to case if fold (action names are not case-sensitive).
func matchAny(patterns []string, s string, fold bool) bool {
	if fold {
		s = strings.ToLower(s)
	}
	for _, p := range patterns {
		if fold {
			p = strings.ToLower(p)
		}
		if wildcard(p, s) {
			return true
		}
	}
	return false
}

// wildcard matches s against p, in which * is any run of characters and ?
// any one.
func wildcard(p, s string) bool {
	// The usual linear walk: on a mismatch, retry from just after the last
	// star, which swallows one more character of s.
	pi, si, star, mark := 0, 0, -1, 0
	for si < len(s) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == s[si]):
			pi++
			si++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// parse reads a policy document.
func parse(policy string) (*document, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(policy), &raw); err != nil || raw == nil {
		return nil, fmt.Errorf("the policy is not a JSON object")
	}
	doc := &document{}
	if v, ok := raw["Version"]; ok {
		var version string
		if json.Unmarshal(v, &version) != nil {
			return nil, fmt.Errorf("its Version is not a string")
		}
		doc.variables = version == "2012-10-17"
	}
	var list []map[string]json.RawMessage
	if err := oneOrList(raw["Statement"], &list); err != nil || len(list) == 0 {
		return nil, fmt.Errorf("its Statement is not a statement or a list of them")
	}
	for i, m := range list {
		st, err := parseStatement(m)
		if err != nil {
			return nil, fmt.Errorf("statement %d: %v", i+1, err)
		}
		doc.statements = append(doc.statements, st)
	}
	return doc, nil
}

// oneOrList reads a JSON value that is one T or a list of them.
func oneOrList[T any](raw json.RawMessage, out *[]T) error {
	if len(raw) == 0 {
		return fmt.Errorf("missing")
	}
	if err := json.Unmarshal(raw, out); err == nil {
		return nil
	}
	var one T
	if err := json.Unmarshal(raw, &one); err != nil {
		return err
	}
	*out = []T{one}
	return nil
}

func parseStatement(m map[string]json.RawMessage) (statement, error) {
	var st statement
	if v, ok := m["Sid"]; ok && json.Unmarshal(v, &st.sid) != nil {
		return st, fmt.Errorf("its Sid is not a string")
	}
	if v, ok := m["Effect"]; ok && json.Unmarshal(v, &st.effect) != nil {
		return st, fmt.Errorf("its Effect is not a string")
	}
	var err error
	if st.principal, st.notPrincipal, st.hasPrincipal, err = parsePrincipal(m); err != nil {
		return st, err
	}
	if st.actions, st.notAction, st.hasAction, err = pair(m, "Action", "NotAction"); err != nil {
		return st, err
	}
	if st.resources, st.notResource, st.hasResource, err = pair(m, "Resource", "NotResource"); err != nil {
		return st, err
	}
	if v, ok := m["Condition"]; ok {
		if st.conditions, err = parseConditions(v); err != nil {
			return st, err
		}
	}
	return st, nil
}

// pair reads an element and its Not form, of which a statement has at most
// one, as a list of strings.
func pair(m map[string]json.RawMessage, name, notName string) (vals []string, not, has bool, err error) {
	v, okPlain := m[name]
	nv, okNot := m[notName]
	switch {
	case okPlain && okNot:
		return nil, false, false, fmt.Errorf("it has both %s and %s", name, notName)
	case okNot:
		v, not = nv, true
		name = notName
	case !okPlain:
		return nil, false, false, nil
	}
	if err := oneOrList(v, &vals); err != nil {
		return nil, false, false, fmt.Errorf("its %s is not a string or a list of strings", name)
	}
	return vals, not, true, nil
}

// parsePrincipal reads Principal or NotPrincipal: "*", or an object of
// kinds (AWS, Service, Federated, CanonicalUser) to one id or a list.
func parsePrincipal(m map[string]json.RawMessage) (map[string][]string, bool, bool, error) {
	v, okPlain := m["Principal"]
	nv, okNot := m["NotPrincipal"]
	if okPlain && okNot {
		return nil, false, false, fmt.Errorf("it has both Principal and NotPrincipal")
	}
	if okNot {
		v = nv
	}
	if !okPlain && !okNot {
		return nil, false, false, nil
	}
	var star string
	if json.Unmarshal(v, &star) == nil {
		if star != "*" {
			return nil, false, false, fmt.Errorf("its principal %q is neither \"*\" nor an object", star)
		}
		return map[string][]string{"*": {"*"}}, okNot, true, nil
	}
	var kinds map[string]json.RawMessage
	if err := json.Unmarshal(v, &kinds); err != nil {
		return nil, false, false, fmt.Errorf("its principal is neither \"*\" nor an object")
	}
	out := make(map[string][]string, len(kinds))
	for kind, ids := range kinds {
		var list []string
		if err := oneOrList(ids, &list); err != nil {
			return nil, false, false, fmt.Errorf("its %s principal is not a string or a list of strings", kind)
		}
		out[kind] = list
	}
	return out, okNot, true, nil
}
