package engine_test

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"slices"
	"strings"
	"testing"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
)

// referenceMD5OfAttributes re-implements docs/sqs-behaviour.md §4.3 without sharing
// code with the engine: names in byte order, each of name, data type and
// value preceded by its length as four big-endian bytes, and a transport
// byte (1 for String and Number, 2 for Binary) before the value.
func referenceMD5OfAttributes(attrs map[string]baton.MessageAttribute) string {
	if len(attrs) == 0 {
		return ""
	}
	var names []string
	for n := range attrs {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int { return bytes.Compare([]byte(a), []byte(b)) })
	var buf bytes.Buffer
	field := func(b []byte) {
		n := len(b)
		buf.Write([]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
		buf.Write(b)
	}
	for _, n := range names {
		a := attrs[n]
		field([]byte(n))
		field([]byte(a.DataType))
		if strings.HasPrefix(a.DataType, "Binary") {
			buf.WriteByte(2)
			field(a.BinaryValue)
		} else {
			buf.WriteByte(1)
			field([]byte(a.StringValue))
		}
	}
	sum := md5.Sum(buf.Bytes())
	return hex.EncodeToString(sum[:])
}

// FuzzMD5OfAttributes feeds up to three attributes of any name, data type
// and value to MD5OfAttributes: it must not panic and must agree with the
// reference. The seeds are the worked examples of docs/sqs-behaviour.md §4.3.
func FuzzMD5OfAttributes(f *testing.F) {
	f.Add(uint8(1), "Foo", "String", []byte("Bar"), "", "", []byte(nil), "", "", []byte(nil))
	f.Add(uint8(1), "Hello", "String", []byte("There"), "", "", []byte(nil), "", "", []byte(nil))
	f.Add(uint8(1), "MyAttribute", "String", []byte("foobar"), "", "", []byte(nil), "", "", []byte(nil))
	f.Add(uint8(3), "General", "String", []byte("Kenobi"), "Hello", "String", []byte("There"), "Help.Me", "String", []byte("Me"))
	f.Add(uint8(3), "ClientId", "String", []byte("c-42"), "Retries", "Number.int", []byte("3"),
		"Blob", "Binary", []byte{0xde, 0xad, 0xbe, 0xef})
	f.Add(uint8(1), "AWSTraceHeader", "String",
		[]byte("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"),
		"", "", []byte(nil), "", "", []byte(nil))
	f.Add(uint8(2), "b", "Binary.custom", []byte{0, 0xff}, "\xff\xfe", "Bin", []byte("\x00"), "", "", []byte(nil))
	f.Add(uint8(0), "", "", []byte(nil), "", "", []byte(nil), "", "", []byte(nil))
	f.Fuzz(func(t *testing.T, count uint8,
		n1, t1 string, v1 []byte, n2, t2 string, v2 []byte, n3, t3 string, v3 []byte) {
		names := []string{n1, n2, n3}
		types := []string{t1, t2, t3}
		values := [][]byte{v1, v2, v3}
		attrs := make(map[string]baton.MessageAttribute)
		for i := 0; i < int(count%4); i++ {
			a := baton.MessageAttribute{DataType: types[i]}
			if strings.HasPrefix(types[i], "Binary") {
				a.BinaryValue = values[i]
			} else {
				a.StringValue = string(values[i])
			}
			attrs[names[i]] = a
		}
		got := engine.MD5OfAttributes(attrs)
		if want := referenceMD5OfAttributes(attrs); got != want {
			t.Fatalf("MD5OfAttributes(%q) = %q, want %q", attrs, got, want)
		}
	})
}

// TestReferenceMD5OfAttributes pins the reference to the worked
// examples of docs/sqs-behaviour.md §4.3, so the fuzz target compares
// against a checked implementation.
func TestReferenceMD5OfAttributes(t *testing.T) {
	t.Parallel()
	got := referenceMD5OfAttributes(map[string]baton.MessageAttribute{
		"ClientId": str("c-42"),
		"Retries":  {DataType: "Number.int", StringValue: "3"},
		"Blob":     {DataType: "Binary", BinaryValue: []byte{0xde, 0xad, 0xbe, 0xef}},
	})
	if want := "489ec3752a0fbb1b289096f88629b322"; got != want {
		t.Errorf("reference = %q, want %q", got, want)
	}
	if got, want := referenceMD5OfAttributes(map[string]baton.MessageAttribute{"Foo": str("Bar")}), "ae7155c6026991b6d54b11589678bf9c"; got != want {
		t.Errorf("reference = %q, want %q", got, want)
	}
}
