package awsjson

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/baton-sqs/baton/protocol/protocoltest"
)

// fastSeeds are bodies the fast decoder must take (true) or leave to
// encoding/json (false).
var fastSeeds = []struct {
	op, body string
	fast     bool
}{
	{"SendMessage", `{"QueueUrl":"http://localhost:9324/000000000000/q","MessageBody":"hello"}`, true},
	{"SendMessage", ` { "QueueUrl" : "q" , "MessageBody" : "a\"b\\c\/d\b\f\n\r\t\u00e9\u20ac\u0000" , "DelaySeconds" : -0 } `, true},
	{"SendMessage", `{"QueueUrl":"q","MessageBody":"x","DelaySeconds":900,"MessageAttributes":{"a":{"DataType":"Binary","BinaryValue":"3q2+7w=="},"b":{"DataType":"String","StringValue":"v","StringListValues":[],"BinaryListValues":["AA==",""]}},"MessageGroupId":"g"}`, true},
	{"SendMessageBatch", `{"QueueUrl":"q","Entries":[{"Id":"1","MessageBody":"a"},{"Id":"2","MessageBody":"b","DelaySeconds":1}]}`, true},
	{"SendMessageBatch", `{"QueueUrl":"q","Entries":[]}`, true},
	{"ReceiveMessage", `{"QueueUrl":"q","MaxNumberOfMessages":10,"WaitTimeSeconds":20,"AttributeNames":["All"],"MessageAttributeNames":["All"]}`, true},
	{"DeleteMessageBatch", `{"QueueUrl":"q","Entries":[{"Id":"a","ReceiptHandle":"h"}]}`, true},
	{"CreateQueue", `{"QueueName":"q","Attributes":{"FifoQueue":"true"},"tags":{"a":"b","a":"c"}}`, true},
	{"SendMessage", `{}`, true},
	// Left to encoding/json.
	{"SendMessage", `{"queueurl":"q"}`, false},
	{"SendMessage", `{"QueueUrl":"q","QueueUrl":"r"}`, false},
	{"SendMessage", `{"QueueUrl":null}`, false},
	{"SendMessage", `{"Unknown":"x"}`, false},
	{"SendMessage", `{"DelaySeconds":1.0}`, false},
	{"SendMessage", `{"DelaySeconds":01}`, false},
	{"SendMessage", `{"DelaySeconds":1e3}`, false},
	{"SendMessage", `{"DelaySeconds":99999999999999999999}`, false},
	{"SendMessage", `{"DelaySeconds":"1"}`, false},
	{"SendMessage", `{"MessageBody":"\ud83d\ude00 \uD83D\uDE00"}`, true},
	// Unpaired surrogates: kept, so that the member's checks refuse them.
	{"SendMessage", `{"MessageBody":"a\ud800b","MessageAttributes":{"\udfff":{"StringValue":"\ud83d\u0041"}}}`, true},
	{"SendMessage", `{"MessageBody":"\ud83d\ud83d\ude00\ude00"}`, true},
	{"SendMessage", `{"MessageBody":"\x"}`, false},
	{"SendMessage", "{\"MessageBody\":\"a\tb\"}", false},
	{"SendMessage", `{"MessageAttributes":{"a":{"BinaryValue":"***"}}}`, false},
	{"SendMessage", `{"QueueUrl":"q",}`, false},
	{"SendMessage", `{"QueueUrl":"q"} {}`, false},
	{"SendMessage", `{"QueueUrl":"q"`, false},
	{"SendMessageBatch", `{"Entries":[{"Id":"1"},]}`, false},
	{"SendMessageBatch", `{"Entries":{}}`, false},
}

func TestFastDecodeSeeds(t *testing.T) {
	t.Parallel()
	ops := protocoltest.Table()
	for _, s := range fastSeeds {
		op := ops[s.op]
		in := op.NewInput()
		if got := fastDecode([]byte(s.body), in); got != s.fast {
			t.Errorf("%s %s: fast decoder took it = %v, want %v", s.op, s.body, got, s.fast)
			continue
		}
		if s.fast {
			want := op.NewInput()
			if err := json.Unmarshal([]byte(s.body), want); err != nil {
				t.Fatalf("%s %s: encoding/json: %v", s.op, s.body, err)
			}
			if !reflect.DeepEqual(surrogatesReplaced(in), want) {
				t.Errorf("%s %s:\nfast          %+v\nencoding/json %+v", s.op, s.body, in, want)
			}
		}
	}
}

// FuzzFastDecode holds the fast decoder to encoding/json: whatever it
// takes, encoding/json takes too and decodes to the same value, but for
// unpaired surrogates, which encoding/json turns into U+FFFD and the fast
// decoder keeps as their three bytes.
func FuzzFastDecode(f *testing.F) {
	for _, s := range fastSeeds {
		f.Add(s.body)
	}
	ops := protocoltest.Table()
	f.Fuzz(func(t *testing.T, body string) {
		b := bytes.TrimSpace([]byte(body))
		if len(b) == 0 || b[0] != '{' || !utf8.Valid(b) {
			return // Decode never asks the fast decoder
		}
		for name, op := range ops {
			in := op.NewInput()
			if !fastDecode(b, in) {
				continue
			}
			want := op.NewInput()
			if err := json.Unmarshal(b, want); err != nil {
				t.Fatalf("%s: fast decoder took %q, encoding/json refuses it: %v", name, b, err)
			}
			got := surrogatesReplaced(in)
			if got == nil {
				continue // keys that only unpaired surrogates told apart
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s %q:\nfast          %+v\nencoding/json %+v", name, b, in, want)
			}
		}
	})
}

// upper decodes its JSON string upper-cased: a type with its own decoding.
type upper string

func (u *upper) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*u = upper(strings.ToUpper(s))
	return nil
}

// A type with its own JSON or text decoding, anywhere in the input, leaves
// the whole input to encoding/json, which calls it.
func TestFastDecodeLeavesUnmarshalers(t *testing.T) {
	t.Parallel()
	var in struct {
		Name  string
		Shout upper
	}
	if fastDecode([]byte(`{"Name":"a","Shout":"b"}`), &in) {
		t.Errorf("the fast decoder took a struct with a json.Unmarshaler member")
	}
	var plain struct{ Name string }
	if !fastDecode([]byte(`{"Name":"a"}`), &plain) || plain.Name != "a" {
		t.Errorf("the fast decoder refused a plain struct: %+v", plain)
	}
}

// surrogatesReplaced returns v, a decoded input (a pointer to a struct),
// with every unpaired surrogate the fast decoder kept (three bytes, 0xED
// then 0xA0-0xBF then a continuation byte) replaced by U+FFFD, as
// encoding/json decodes them, in every string and map key. It changes v.
// When two map keys become one, which of their values encoding/json kept
// depends on their order in the input: the value is then nil, to compare
// unequal, and the fuzz target leaves such inputs alone.
func surrogatesReplaced(v any) any {
	if !replaceSurrogates(reflect.ValueOf(v)) {
		return nil
	}
	return v
}

func replaceSurrogates(v reflect.Value) bool {
	ok := true
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			ok = replaceSurrogates(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			ok = replaceSurrogates(v.Field(i)) && ok
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return true // []byte: base64, no text
		}
		for i := range v.Len() {
			ok = replaceSurrogates(v.Index(i)) && ok
		}
	case reflect.Map:
		if v.IsNil() {
			return true
		}
		fixed := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			k := reflect.New(v.Type().Key()).Elem()
			k.Set(it.Key())
			ok = replaceSurrogates(k) && ok
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(it.Value())
			ok = replaceSurrogates(e) && ok
			fixed.SetMapIndex(k, e)
		}
		ok = ok && fixed.Len() == v.Len()
		v.Set(fixed)
	case reflect.String:
		s := v.String()
		if !strings.Contains(s, "\xed") {
			return true
		}
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			if i+2 < len(s) && s[i] == 0xed && s[i+1] >= 0xa0 && s[i+1] <= 0xbf && s[i+2]&0xc0 == 0x80 {
				b.WriteString("\ufffd")
				i += 2
				continue
			}
			b.WriteByte(s[i])
		}
		v.SetString(b.String())
	}
	return ok
}
