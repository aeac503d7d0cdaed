// Package awsquery is the Query protocol codec: requests are form
// parameters (POST body or GET query string) with lists and maps flattened
// as Name.N…, responses are namespaced XML.
package awsquery

import (
	"encoding/base64"
	"net/url"
	"reflect"
	"strconv"
	"strings"

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
	// prefixes caches which "Name.N." prefixes occur in the form.
	prefixes map[string]bool
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

func (d *decoder) fill(v reflect.Value, prefix string) error {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		fd := fieldOf(sf)
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

// has reports whether any parameter starts with prefix.
func (d *decoder) has(prefix string) bool {
	if d.prefixes == nil {
		d.prefixes = make(map[string]bool)
		for k := range d.form {
			for i := 0; i < len(k); i++ {
				if k[i] == '.' {
					d.prefixes[k[:i+1]] = true
				}
			}
		}
	}
	return d.prefixes[prefix]
}

func (d *decoder) list(v reflect.Value, name string) error {
	elem := v.Type().Elem()
	for n := 1; n <= maxListLen; n++ {
		item := name + "." + strconv.Itoa(n)
		if _, ok := d.get(item); !ok && !d.has(item+".") {
			break
		}
		e := reflect.New(elem).Elem()
		if err := d.value(e, item, field{}); err != nil {
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
	t := v.Type()
	for n := 1; n <= maxListLen; n++ {
		item := name + "." + strconv.Itoa(n) + "."
		k, ok := d.get(item + fd.key)
		if !ok {
			break
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
