package awsjson

import (
	"encoding"
	"encoding/base64"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// The fast decoder reads the request bodies clients actually send — a JSON
// object whose keys are the members' exact names, each at most once, with
// strings, integers, booleans, arrays and string-keyed objects as values —
// in one pass and without encoding/json's separate validation scan. It
// yields the same value as json.Unmarshal or gives up: on any key that is
// not a member's exact name, a repeated key, null, a number that is not a
// plain integer, an escape it does not handle, a control character, or
// anything malformed, it reports false and Decode runs encoding/json, which
// then decides (matching keys case-insensitively, ignoring unknown ones,
// and writing the error). The differential fuzz test holds it to that.

// fastDecode decodes body, which must be valid UTF-8 and start with '{',
// into in, a pointer to a struct. It reports false if it gave up; in is
// then partly written and must be discarded.
func fastDecode(body []byte, in any) bool {
	v := reflect.ValueOf(in)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return false
	}
	v = v.Elem()
	dec := decoderFor(v.Type())
	if dec == nil {
		return false
	}
	d := fastDecoder{data: body}
	if !dec(&d, v) {
		return false
	}
	d.skipSpace()
	return d.pos == len(d.data)
}

// fastDecoder is the cursor over one body.
type fastDecoder struct {
	data []byte
	pos  int
	// scratch holds the unquoted bytes of a string with escapes.
	scratch []byte
}

// valueDecoder decodes the value at the cursor (after any space) into v,
// which is settable, and reports false if it gave up.
type valueDecoder func(d *fastDecoder, v reflect.Value) bool

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// decoders caches a valueDecoder, or nil for "unsupported", per type.
var decoders sync.Map // reflect.Type -> valueDecoder

func decoderFor(t reflect.Type) valueDecoder {
	if f, ok := decoders.Load(t); ok {
		return f.(valueDecoder)
	}
	f := buildDecoder(t, map[reflect.Type]bool{})
	decoders.Store(t, f)
	return f
}

// buildDecoder returns the decoder for t, or nil if t holds a kind the fast
// decoder leaves to encoding/json. building guards against recursive types.
func buildDecoder(t reflect.Type, building map[reflect.Type]bool) valueDecoder {
	if building[t] {
		return nil
	}
	building[t] = true
	defer delete(building, t)
	if pt := reflect.PointerTo(t); pt.Implements(jsonUnmarshaler) || pt.Implements(textUnmarshaler) {
		return nil // encoding/json would call the type's own decoding
	}
	switch t.Kind() {
	case reflect.String:
		return decodeString
	case reflect.Bool:
		return decodeBool
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return decodeInt
	case reflect.Pointer:
		return wrapDecoder(t.Elem(), building, pointerDecoder)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			if t.Elem() != reflect.TypeFor[byte]() {
				return nil // a named byte type: leave it to encoding/json
			}
			return decodeBytes
		}
		return wrapDecoder(t.Elem(), building, sliceDecoder)
	case reflect.Map:
		if t.Key() != reflect.TypeFor[string]() {
			return nil
		}
		return wrapDecoder(t.Elem(), building, mapDecoder)
	case reflect.Struct:
		return structDecoder(t, building)
	}
	return nil
}

// wrapDecoder returns wrap of elem's decoder, or nil if elem has none.
func wrapDecoder(elem reflect.Type, building map[reflect.Type]bool, wrap func(valueDecoder) valueDecoder) valueDecoder {
	dec := buildDecoder(elem, building)
	if dec == nil {
		return nil
	}
	return wrap(dec)
}

// field is a struct member as encoding/json names it.
type field struct {
	name  string
	index int
	dec   valueDecoder
}

func structDecoder(t reflect.Type, building map[reflect.Type]bool) valueDecoder {
	var fields []field
	for i := range t.NumField() {
		sf := t.Field(i)
		if sf.Anonymous {
			return nil // embedded members follow rules left to encoding/json
		}
		if !sf.IsExported() {
			continue
		}
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if strings.Contains(","+opts+",", ",string,") {
			return nil
		}
		if name == "" {
			name = sf.Name
		}
		dec := buildDecoder(sf.Type, building)
		if dec == nil {
			return nil
		}
		fields = append(fields, field{name: name, index: i, dec: dec})
	}
	if len(fields) > 64 {
		return nil
	}
	return func(d *fastDecoder, v reflect.Value) bool {
		if !d.consume('{') {
			return false
		}
		var seen uint64
		if d.consume('}') {
			return true
		}
		for {
			key, ok := d.key()
			if !ok {
				return false
			}
			f := -1
			for i := range fields {
				if fields[i].name == string(key) {
					f = i
					break
				}
			}
			if f < 0 || seen&(1<<f) != 0 {
				return false
			}
			seen |= 1 << f
			if !fields[f].dec(d, v.Field(fields[f].index)) {
				return false
			}
			if d.consume(',') {
				continue
			}
			return d.consume('}')
		}
	}
}

func pointerDecoder(elem valueDecoder) valueDecoder {
	return func(d *fastDecoder, v reflect.Value) bool {
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		return elem(d, v.Elem())
	}
}

func sliceDecoder(elem valueDecoder) valueDecoder {
	return func(d *fastDecoder, v reflect.Value) bool {
		if !d.consume('[') {
			return false
		}
		// encoding/json makes an empty array a non-nil empty slice.
		s := reflect.MakeSlice(v.Type(), 0, 0)
		if !d.consume(']') {
			for {
				s = reflect.Append(s, reflect.Zero(v.Type().Elem()))
				if !elem(d, s.Index(s.Len()-1)) {
					return false
				}
				if d.consume(',') {
					continue
				}
				if !d.consume(']') {
					return false
				}
				break
			}
		}
		v.Set(s)
		return true
	}
}

func mapDecoder(elem valueDecoder) valueDecoder {
	return func(d *fastDecoder, v reflect.Value) bool {
		if !d.consume('{') {
			return false
		}
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		if d.consume('}') {
			return true
		}
		et := v.Type().Elem()
		for {
			key, ok := d.key()
			if !ok {
				return false
			}
			k := string(key)
			e := reflect.New(et).Elem()
			if !elem(d, e) {
				return false
			}
			v.SetMapIndex(reflect.ValueOf(k), e)
			if d.consume(',') {
				continue
			}
			return d.consume('}')
		}
	}
}

func decodeString(d *fastDecoder, v reflect.Value) bool {
	d.skipSpace()
	s, ok := d.str()
	if !ok {
		return false
	}
	v.SetString(string(s))
	return true
}

func decodeBytes(d *fastDecoder, v reflect.Value) bool {
	d.skipSpace()
	s, ok := d.str()
	if !ok {
		return false
	}
	b := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
	n, err := base64.StdEncoding.Decode(b, s)
	if err != nil {
		return false
	}
	v.SetBytes(b[:n])
	return true
}

func decodeBool(d *fastDecoder, v reflect.Value) bool {
	d.skipSpace()
	rest := d.data[d.pos:]
	switch {
	case len(rest) >= 4 && string(rest[:4]) == "true":
		d.pos += 4
		v.SetBool(true)
	case len(rest) >= 5 && string(rest[:5]) == "false":
		d.pos += 5
		v.SetBool(false)
	default:
		return false
	}
	return d.delimited()
}

// decodeInt reads a plain JSON integer: an optional minus and digits
// without a leading zero, at most 18 of them so that it cannot overflow.
func decodeInt(d *fastDecoder, v reflect.Value) bool {
	d.skipSpace()
	start := d.pos
	if d.pos < len(d.data) && d.data[d.pos] == '-' {
		d.pos++
	}
	digits := d.pos
	for d.pos < len(d.data) && d.data[d.pos] >= '0' && d.data[d.pos] <= '9' {
		d.pos++
	}
	n := d.pos - digits
	if n == 0 || n > 18 || n > 1 && d.data[digits] == '0' || !d.delimited() {
		return false
	}
	i, err := strconv.ParseInt(string(d.data[start:d.pos]), 10, 64)
	if err != nil || v.OverflowInt(i) {
		return false
	}
	v.SetInt(i)
	return true
}

func (d *fastDecoder) skipSpace() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// consume skips space and then c, reporting whether c was there.
func (d *fastDecoder) consume(c byte) bool {
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == c {
		d.pos++
		return true
	}
	return false
}

// delimited reports whether a literal ended where it should: at the end or
// before space or one of , ] }.
func (d *fastDecoder) delimited() bool {
	if d.pos == len(d.data) {
		return true
	}
	switch d.data[d.pos] {
	case ' ', '\t', '\n', '\r', ',', ']', '}':
		return true
	}
	return false
}

// key reads an object member's name and its colon.
func (d *fastDecoder) key() ([]byte, bool) {
	d.skipSpace()
	k, ok := d.str()
	if !ok || !d.consume(':') {
		return nil, false
	}
	return k, true
}

// str reads the string at the cursor and returns its unquoted bytes, which
// alias the body or the scratch buffer and are valid until the next call.
func (d *fastDecoder) str() ([]byte, bool) {
	if d.pos >= len(d.data) || d.data[d.pos] != '"' {
		return nil, false
	}
	start := d.pos + 1
	for i := start; i < len(d.data); i++ {
		switch c := d.data[i]; {
		case c == '"':
			d.pos = i + 1
			return d.data[start:i], true
		case c == '\\':
			return d.unescape(start, i)
		case c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

// hex4 reads the four hex digits of a \u escape at data[i:].
func hex4(data []byte, i int) (rune, bool) {
	if i < 0 || i+4 > len(data) {
		return 0, false
	}
	var r rune
	for _, c := range data[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// unescape continues str from the first backslash, at i, building the
// string in scratch.
func (d *fastDecoder) unescape(start, i int) ([]byte, bool) {
	buf := append(d.scratch[:0], d.data[start:i]...)
	for i < len(d.data) {
		c := d.data[i]
		switch {
		case c == '"':
			d.pos = i + 1
			d.scratch = buf
			return buf, true
		case c < 0x20:
			return nil, false
		case c != '\\':
			buf = append(buf, c)
			i++
			continue
		}
		if i+1 >= len(d.data) {
			return nil, false
		}
		switch e := d.data[i+1]; e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, ok := hex4(d.data, i+2)
			if !ok {
				return nil, false
			}
			i += 6
			if utf16.IsSurrogate(r) {
				if lo, ok := hex4(d.data, i+2); ok && r < 0xdc00 && i+1 < len(d.data) && d.data[i] == '\\' && d.data[i+1] == 'u' {
					if pair := utf16.DecodeRune(r, lo); pair != utf8.RuneError {
						buf = utf8.AppendRune(buf, pair)
						i += 6
						continue
					}
				}
				// An unpaired surrogate: kept as the three bytes UTF-8 would
				// give it, which no valid UTF-8 holds, so that the checks of
				// each member refuse it as SQS does (a message body:
				// InvalidMessageContents) instead of taking U+FFFD.
				buf = append(buf, 0xe0|byte(r>>12), 0x80|byte(r>>6)&0x3f, 0x80|byte(r)&0x3f)
				continue
			}
			buf = utf8.AppendRune(buf, r)
			continue
		default:
			return nil, false
		}
		i += 2
	}
	return nil, false
}
