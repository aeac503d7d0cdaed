package sns

import (
	"encoding/binary"
)

// Arrays of objects in a message body. A policy's keys under one object
// must match values of one element of each array of objects on their way:
// {"items":{"sku":["a"],"qty":[{"numeric":[">",5]}]}} matches
// {"items":[{"sku":"a","qty":9}]} but not {"items":[{"sku":"a","qty":1},
// {"sku":"b","qty":9}]}. This is the rule of AWS's open-source event
// matcher for JSON events ("array-consistent" matching: no match in which
// two fields lie within objects in different elements of the same array),
// whose texts SNS answers verbatim; AWS's SNS documentation does not state
// it, and no recording on SNS shows it either way.
//
// The search tries, key after key, each value that matches and is
// consistent with the values chosen so far. Conditions on all of a key's
// values (anything-but, exists false) are checked last, over the values
// consistent with the whole choice. A search that would look at more
// than maxArraySteps values gives up and matches as if arrays had no
// elements of their own (each key over all its values), so that a body
// built to be slow costs a bounded time.

// arrayPos says a value lies in element index of the body's array number
// array. Only arrays whose elements are objects or arrays are counted: two
// keys cannot both lie in one array of plain values.
type arrayPos struct{ array, index int32 }

// maxArraySteps bounds the values one policy's search looks at in one
// body.
const maxArraySteps = 100_000

// arraySearch is one policy's search over one body.
type arraySearch struct {
	body  flatBody
	steps int
}

// choice is what the search has chosen so far: the array elements the
// matched values lie in, and the whole-set conditions still to check.
type choice struct {
	bound   []arrayPos
	pending *pendingCheck
}

// pendingCheck is a condition on all the consistent values at a path,
// checked once every key has its value.
type pendingCheck struct {
	c    condition
	path string
	next *pendingCheck
}

// matchBody reports whether a JSON object body, flattened, passes the
// policy with array-consistent matching.
func (f *FilterPolicy) matchBody(body flatBody) bool {
	s := &arraySearch{body: body}
	ok := s.node(f.root, "", choice{}, s.checksHold)
	if s.steps > maxArraySteps {
		return f.root.match("", func(path string) []leaf { return body[path] })
	}
	return ok
}

// node matches a policy object under prefix, then goes on with k.
func (s *arraySearch) node(n *filterNode, prefix string, ch choice, k func(choice) bool) bool {
	return s.fields(n, 0, prefix, ch, func(ch choice) bool { return s.ors(n, 0, prefix, ch, k) })
}

func (s *arraySearch) fields(n *filterNode, i int, prefix string, ch choice, k func(choice) bool) bool {
	if i == len(n.fields) {
		return k(ch)
	}
	f := n.fields[i]
	path := joinPath(prefix, f.key)
	next := func(ch choice) bool { return s.fields(n, i+1, prefix, ch, k) }
	if f.child != nil {
		return s.node(f.child, path, ch, next)
	}
	for _, c := range f.conds {
		if wholeSet(c) {
			if next(choice{bound: ch.bound, pending: &pendingCheck{c: c, path: path, next: ch.pending}}) {
				return true
			}
			continue
		}
		if s.eachValue(c, path, ch, next) {
			return true
		}
	}
	return false
}

// eachValue goes on with k for each value at path that c matches and that
// is consistent with ch, once per distinct set of array elements.
func (s *arraySearch) eachValue(c condition, path string, ch choice, k func(choice) bool) bool {
	var tried map[string]bool // by positions; outside arrays, triedFree
	triedFree := false
	for _, v := range s.body[path] {
		if s.steps++; s.steps > maxArraySteps {
			return false
		}
		if !consistent(ch.bound, v.in) || !c.matches([]leaf{v}) {
			continue
		}
		if len(v.in) == 0 {
			if triedFree {
				continue
			}
			triedFree = true
		} else {
			key := positionsKey(v.in)
			if tried[key] {
				continue
			}
			if tried == nil {
				tried = map[string]bool{}
			}
			tried[key] = true
		}
		if k(choice{bound: bind(ch.bound, v.in), pending: ch.pending}) {
			return true
		}
	}
	return false
}

func (s *arraySearch) ors(n *filterNode, j int, prefix string, ch choice, k func(choice) bool) bool {
	if j == len(n.ors) {
		return k(ch)
	}
	for _, alt := range n.ors[j] {
		if s.node(alt, prefix, ch, func(ch choice) bool { return s.ors(n, j+1, prefix, ch, k) }) {
			return true
		}
	}
	return false
}

// checksHold checks the whole-set conditions over the values consistent
// with the finished choice.
func (s *arraySearch) checksHold(ch choice) bool {
	for p := ch.pending; p != nil; p = p.next {
		var vals []leaf
		for _, v := range s.body[p.path] {
			if consistent(ch.bound, v.in) {
				vals = append(vals, v)
			}
		}
		if !p.c.matches(vals) {
			return false
		}
	}
	return true
}

// wholeSet reports whether a condition is about all of a key's values
// rather than satisfied by one of them.
func wholeSet(c condition) bool {
	switch c := c.(type) {
	case anythingButCond, anythingButPrefixCond:
		return true
	case existsCond:
		return !c.want
	}
	return false
}

// consistent: no position of in names an element of an array bound to
// another element.
func consistent(bound, in []arrayPos) bool {
	for _, p := range in {
		for _, b := range bound {
			if b.array == p.array && b.index != p.index {
				return false
			}
		}
	}
	return true
}

// bind adds to bound the positions of in it lacks, in a new slice.
func bind(bound, in []arrayPos) []arrayPos {
	out := bound
	for _, p := range in {
		have := false
		for _, b := range bound {
			have = have || b.array == p.array
		}
		if !have {
			if len(out) == len(bound) {
				out = append(make([]arrayPos, 0, len(bound)+len(in)), bound...)
			}
			out = append(out, p)
		}
	}
	return out
}

func positionsKey(in []arrayPos) string {
	b := make([]byte, 0, 8*len(in))
	for _, p := range in {
		b = binary.LittleEndian.AppendUint32(b, uint32(p.array))
		b = binary.LittleEndian.AppendUint32(b, uint32(p.index))
	}
	return string(b)
}

func joinPath(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}
