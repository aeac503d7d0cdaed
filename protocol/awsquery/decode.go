// Package awsquery is the Query protocol codec: requests are form
// parameters (POST body or GET query string) with lists and maps flattened
// as Name.N…, responses are namespaced XML.
package awsquery

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/protocol"
)

// maxListLen bounds how far a flattened list is read, so a hostile form
// cannot make decoding loop for long.
const maxListLen = 1000

// Decode fills op's input struct from form parameters, following the
// struct's `query` tags (see protocol/wire).
func Decode(form url.Values, op protocol.Operation) (any, error) {
	in := op.NewInput()
	d := decoder{form: form}
	if err := d.fill(reflect.ValueOf(in).Elem(), ""); err != nil {
		return nil, err
	}
	return in, nil
}

type decoder struct {
	form url.Values
	// items maps the name of each flattened list or map in the form
	// ("AttributeName", "SendMessageBatchRequestEntry.2.MessageAttribute")
	// to the numbers of its items, sorted and distinct; built on first use.
	items map[string][]int
	// badItems maps such a name to an item number it cannot have, if the
	// form has one: "0", one with a leading zero ("01"), or one of more
	// than nine digits. Of several, the one reported is chosen by badFirst,
	// so that the same request always gets the same error.
	badItems map[string]string
}

// field describes how one struct field is flattened.
type field struct {
	name     string // the flattened name
	key, val string // map entry member names
}

func fieldOf(f reflect.StructField) field {
	tag := f.Tag.Get("query")
	if tag == "" {
		return field{name: f.Name}
	}
	parts := strings.Split(tag, ",")
	fd := field{name: parts[0]}
	if len(parts) == 3 {
		fd.key, fd.val = parts[1], parts[2]
	}
	return fd
}

// fieldsByType caches fieldsOf: reflect.Type to []field.
var fieldsByType sync.Map

// fieldsOf returns how each field of struct type t is flattened, in order.
func fieldsOf(t reflect.Type) []field {
	if fds, ok := fieldsByType.Load(t); ok {
		return fds.([]field)
	}
	fds := make([]field, t.NumField())
	for i := range fds {
		fds[i] = fieldOf(t.Field(i))
	}
	fieldsByType.Store(t, fds)
	return fds
}

func (d *decoder) fill(v reflect.Value, prefix string) error {
	for i, fd := range fieldsOf(v.Type()) {
		if err := d.value(v.Field(i), prefix+fd.name, fd); err != nil {
			return err
		}
	}
	return nil
}

func (d *decoder) value(v reflect.Value, name string, fd field) error {
	switch v.Kind() {
	case reflect.String:
		v.SetString(d.form.Get(name))
	case reflect.Bool:
		if s, ok := d.get(name); ok {
			b, err := strconv.ParseBool(s)
			if err != nil {
				return invalid(name, s)
			}
			v.SetBool(b)
		}
	case reflect.Pointer: // optional numbers and strings
		if s, ok := d.get(name); ok {
			p := reflect.New(v.Type().Elem())
			if p.Elem().Kind() == reflect.String {
				p.Elem().SetString(s)
				v.Set(p)
				return nil
			}
			n, err := strconv.Atoi(s)
			if err != nil {
				return invalid(name, s)
			}
			p.Elem().SetInt(int64(n))
			v.Set(p)
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 { // []byte: base64
			if s, ok := d.get(name); ok {
				b, err := base64.StdEncoding.DecodeString(s)
				if err != nil {
					return invalid(name, s)
				}
				v.SetBytes(b)
			}
			return nil
		}
		return d.list(v, name)
	case reflect.Map:
		return d.mapping(v, name, fd)
	case reflect.Struct:
		return d.fill(v, name+".")
	}
	return nil
}

func (d *decoder) get(name string) (string, bool) {
	vs, ok := d.form[name]
	if !ok || len(vs) == 0 {
		return "", false
	}
	return vs[0], true
}

// count returns how many items the flattened list or map name has. Items
// are numbered 1, 2, 3, … as every SDK numbers them; a form that skips a
// number (Entry.1, Entry.3), starts at 0 or writes one with a leading zero
// is refused with an error naming the parameter, rather than reading the
// items before the gap and silently dropping the rest (docs/sqs-behaviour.md
// §1.3, flattening).
func (d *decoder) count(name string) (int, error) {
	if d.items == nil {
		d.index()
	}
	if raw, ok := d.badItems[name]; ok {
		reason := fmt.Sprintf("the items of %s are numbered from 1, without leading zeros.", name)
		if raw[0] != '0' {
			reason = fmt.Sprintf("%s has at most %d items.", name, maxListLen)
		}
		return 0, baton.Errorf(baton.ErrInvalidParameterValue, "Value for parameter %s.%s is invalid. Reason: %s", name, raw, reason)
	}
	nums := d.items[name]
	for i, n := range nums {
		if n != i+1 {
			return 0, baton.Errorf(baton.ErrInvalidParameterValue,
				"Value for parameter %s.%d is invalid. Reason: the items of %s are numbered 1, 2, 3, … without a gap, and %s.%d is missing.",
				name, n, name, name, i+1)
		}
	}
	if len(nums) > maxListLen {
		return 0, baton.Errorf(baton.ErrInvalidParameterValue,
			"Value for parameter %s.%d is invalid. Reason: %s has more than %d items.", name, maxListLen+1, name, maxListLen)
	}
	return len(nums), nil
}

// index finds, in one pass over the form's names, every flattened list or
// map and the numbers of its items: "A.2.B.1.C" is item 2 of "A" and item
// 1 of "A.2.B".
func (d *decoder) index() {
	seen := make(map[string]map[int]bool)
	d.badItems = make(map[string]string)
	for k := range d.form {
		for i := 0; i < len(k); i++ {
			if k[i] != '.' {
				continue
			}
			j := i + 1
			for j < len(k) && k[j] >= '0' && k[j] <= '9' {
				j++
			}
			if j == i+1 || j < len(k) && k[j] != '.' {
				continue // not a number between dots
			}
			base, raw := k[:i], k[i+1:j]
			if raw[0] == '0' || len(raw) > 9 { // nine digits fit an int
				if old, ok := d.badItems[base]; !ok || badFirst(raw, old) {
					d.badItems[base] = raw
				}
				continue
			}
			n, _ := strconv.Atoi(raw)
			if seen[base] == nil {
				seen[base] = make(map[int]bool)
			}
			seen[base][n] = true
		}
	}
	d.items = make(map[string][]int, len(seen))
	for base, set := range seen {
		nums := make([]int, 0, len(set))
		for n := range set {
			nums = append(nums, n)
		}
		slices.Sort(nums)
		d.items[base] = nums
	}
}

// badFirst orders bad item numbers for reporting: those with a leading zero
// first, then the shorter, then the smaller.
func badFirst(a, b string) bool {
	if za, zb := a[0] == '0', b[0] == '0'; za != zb {
		return za
	}
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

func (d *decoder) list(v reflect.Value, name string) error {
	n, err := d.count(name)
	if err != nil {
		return err
	}
	elem := v.Type().Elem()
	for i := 1; i <= n; i++ {
		e := reflect.New(elem).Elem()
		if err := d.value(e, name+"."+strconv.Itoa(i), field{}); err != nil {
			return err
		}
		v.Set(reflect.Append(v, e))
	}
	return nil
}

func (d *decoder) mapping(v reflect.Value, name string, fd field) error {
	if fd.key == "" {
		return nil
	}
	n, err := d.count(name)
	if err != nil {
		return err
	}
	t := v.Type()
	for i := 1; i <= n; i++ {
		item := name + "." + strconv.Itoa(i) + "."
		k, ok := d.get(item + fd.key)
		if !ok {
			// An entry without its key cannot be placed in the map.
			return baton.Errorf(baton.ErrInvalidParameterValue,
				"Value for parameter %s%s is invalid. Reason: the parameter is missing, but %s.%d has other members.", item, fd.key, name, i)
		}
		e := reflect.New(t.Elem()).Elem()
		if err := d.value(e, item+fd.val, field{}); err != nil {
			return err
		}
		if v.IsNil() {
			v.Set(reflect.MakeMap(t))
		}
		v.SetMapIndex(reflect.ValueOf(k), e)
	}
	return nil
}

func invalid(name, value string) error {
	return baton.Errorf(baton.ErrInvalidParameterValue, "Value %s for parameter %s is invalid.", value, name)
}
