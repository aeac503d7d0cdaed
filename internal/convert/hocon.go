package convert

import (
	"fmt"
	"strings"
	"unicode"
)

// The part of HOCON (the configuration format ElasticMQ reads) that
// queue-definition files use: objects with or without a separator before
// their brace, = or : between key and value, dotted keys (a.b = 1 is
// a { b = 1 }), quoted and unquoted keys and strings, values running to
// the end of the line ("10 seconds"), arrays, commas or newlines between
// fields, # and // comments, and include lines, which are skipped (the
// files include ElasticMQ's own defaults). Objects given twice merge, a
// later scalar wins. Substitutions (${…}) are refused: they need the
// environment of the process that reads the file.

// hObject is a HOCON object: its keys in first-seen order.
type hObject struct {
	keys   []string
	fields map[string]hValue
	line   int
}

// hValue is an *hObject, an hArray or an hScalar.
type hValue any

type hArray struct {
	items []hValue
	line  int
}

// hScalar is a string, number, boolean or null as written (quotes removed).
type hScalar struct {
	text   string
	quoted bool
	line   int
}

func newObject(line int) *hObject { return &hObject{fields: map[string]hValue{}, line: line} }

// get returns the field key, or nil.
func (o *hObject) get(key string) hValue {
	if o == nil {
		return nil
	}
	return o.fields[key]
}

// set merges v into the field key.
func (o *hObject) set(key string, v hValue) {
	old, seen := o.fields[key]
	if !seen {
		o.keys = append(o.keys, key)
	}
	if a, ok := old.(*hObject); ok {
		if b, ok := v.(*hObject); ok {
			for _, k := range b.keys {
				a.set(k, b.fields[k])
			}
			return
		}
	}
	o.fields[key] = v
}

type hoconParser struct {
	src  []rune
	pos  int
	line int
}

// parseHOCON parses a HOCON document into its root object.
func parseHOCON(text string) (*hObject, error) {
	p := &hoconParser{src: []rune(text), line: 1}
	p.skipSpace(true)
	if p.peek() == '{' {
		p.pos++
		root, err := p.fields('}')
		if err != nil {
			return nil, err
		}
		p.skipSpace(true)
		if p.pos < len(p.src) {
			return nil, p.errorf("text after the root object's closing brace")
		}
		return root, nil
	}
	return p.fields(0)
}

func (p *hoconParser) errorf(format string, args ...any) error {
	return fmt.Errorf("line %d: "+format, append([]any{p.line}, args...)...)
}

func (p *hoconParser) peek() rune {
	if p.pos >= len(p.src) {
		return 0
	}
	return p.src[p.pos]
}

func (p *hoconParser) startsWith(s string) bool {
	return strings.HasPrefix(string(p.src[p.pos:min(len(p.src), p.pos+len(s))]), s)
}

// skipSpace skips blanks and comments, and newlines when newlines is set.
func (p *hoconParser) skipSpace(newlines bool) {
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == '\n' && newlines:
			p.line++
			p.pos++
		case c != '\n' && unicode.IsSpace(c), c == '\ufeff':
			p.pos++
		case c == '#' || p.startsWith("//"):
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				p.pos++
			}
		default:
			return
		}
	}
}

// fields reads an object's fields up to end ('}', or 0 for the end of the
// document).
func (p *hoconParser) fields(end rune) (*hObject, error) {
	obj := newObject(p.line)
	for {
		p.skipSpace(true)
		switch c := p.peek(); {
		case c == end && (end != 0 || p.pos >= len(p.src)):
			if end != 0 {
				p.pos++
			}
			return obj, nil
		case c == 0:
			return nil, p.errorf("the file ends inside an object: a closing brace is missing")
		case c == ',':
			p.pos++
			continue
		}
		if p.startsWith("include") && p.isInclude() {
			p.skipLine()
			continue
		}
		path, err := p.key()
		if err != nil {
			return nil, err
		}
		p.skipSpace(false)
		switch p.peek() {
		case '=', ':':
			p.pos++
			p.skipSpace(false)
		case '{':
		default:
			return nil, p.errorf("after the key %q: want =, : or {", strings.Join(path, "."))
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		for i := len(path) - 1; i > 0; i-- {
			o := newObject(p.line)
			o.set(path[i], v)
			v = o
		}
		obj.set(path[0], v)
	}
}

// isInclude reports whether the text at pos is an include statement
// rather than a key named include.
func (p *hoconParser) isInclude() bool {
	rest := strings.TrimLeft(string(p.src[p.pos+len("include"):min(len(p.src), p.pos+len("include")+40)]), " \t")
	return strings.HasPrefix(rest, "\"") || strings.HasPrefix(rest, "classpath(") || strings.HasPrefix(rest, "file(") ||
		strings.HasPrefix(rest, "url(") || strings.HasPrefix(rest, "required(")
}

func (p *hoconParser) skipLine() {
	for p.pos < len(p.src) && p.src[p.pos] != '\n' {
		p.pos++
	}
}

// key reads a key path: segments, quoted or not, joined by dots.
func (p *hoconParser) key() ([]string, error) {
	var path []string
	for {
		var seg string
		if p.peek() == '"' {
			s, err := p.quoted()
			if err != nil {
				return nil, err
			}
			seg = s
		} else {
			start := p.pos
			for p.pos < len(p.src) && !strings.ContainsRune(".=:{}[],#\"\n", p.src[p.pos]) && !unicode.IsSpace(p.src[p.pos]) && !p.startsWith("//") {
				p.pos++
			}
			seg = string(p.src[start:p.pos])
			if seg == "" {
				return nil, p.errorf("want a key, found %q", string(p.peek()))
			}
		}
		path = append(path, seg)
		if p.peek() != '.' {
			return path, nil
		}
		p.pos++
	}
}

// quoted reads a double-quoted string with JSON's escapes.
func (p *hoconParser) quoted() (string, error) {
	if p.startsWith(`"""`) {
		return "", p.errorf("triple-quoted strings are not read; write the value on one line")
	}
	p.pos++ // the opening quote
	var b strings.Builder
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		p.pos++
		switch c {
		case '"':
			return b.String(), nil
		case '\n':
			return "", p.errorf("a quoted string runs past the end of its line")
		case '\\':
			if p.pos >= len(p.src) {
				break
			}
			e := p.src[p.pos]
			p.pos++
			switch e {
			case 'n':
				b.WriteRune('\n')
			case 't':
				b.WriteRune('\t')
			case '"', '\\', '/':
				b.WriteRune(e)
			default:
				return "", p.errorf("the escape \\%c is not read", e)
			}
		default:
			b.WriteRune(c)
		}
	}
	return "", p.errorf("a quoted string is not closed")
}

// value reads an object, an array or a scalar running to the end of the
// line, a comma, or a closing bracket.
func (p *hoconParser) value() (hValue, error) {
	switch p.peek() {
	case '{':
		p.pos++
		return p.fields('}')
	case '[':
		return p.array()
	}
	line := p.line
	var b strings.Builder
	quoted := false
	for {
		switch c := p.peek(); {
		case c == 0 || c == '\n' || c == ',' || c == '}' || c == ']' || c == '#' || p.startsWith("//"):
			text := strings.TrimRightFunc(b.String(), unicode.IsSpace)
			if text == "" && !quoted {
				return nil, p.errorf("a key has no value")
			}
			return hScalar{text: text, quoted: quoted, line: line}, nil
		case c == '"':
			s, err := p.quoted()
			if err != nil {
				return nil, err
			}
			b.WriteString(s)
			quoted = true
		case p.startsWith("${"):
			return nil, p.errorf("substitutions (${…}) are not read: write the value itself")
		case c == '{' || c == '[':
			return nil, p.errorf("an object or array after other text in a value")
		default:
			b.WriteRune(c)
			p.pos++
		}
	}
}

func (p *hoconParser) array() (hValue, error) {
	arr := hArray{line: p.line}
	p.pos++ // [
	for {
		p.skipSpace(true)
		switch p.peek() {
		case ']':
			p.pos++
			return arr, nil
		case ',':
			p.pos++
			continue
		case 0:
			return nil, p.errorf("an array is not closed")
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		arr.items = append(arr.items, v)
	}
}
