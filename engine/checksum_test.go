package engine_test

import (
	"testing"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
)

func str(v string) baton.MessageAttribute {
	return baton.MessageAttribute{DataType: "String", StringValue: v}
}

// The digests are docs/sqs-behaviour.md §4.3's worked examples, several recorded from
// real AWS.
func TestMD5OfAttributes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		attrs map[string]baton.MessageAttribute
		want  string
	}{
		{"none", nil, ""},
		{"one string", map[string]baton.MessageAttribute{"Foo": str("Bar")}, "ae7155c6026991b6d54b11589678bf9c"},
		{"hello", map[string]baton.MessageAttribute{"Hello": str("There")}, "a311262e065454b75da111d535b8dacd"},
		{"foobar", map[string]baton.MessageAttribute{"MyAttribute": str("foobar")}, "adb59cd4678ea5a855436b949cd07ab6"},
		{"three sorted", map[string]baton.MessageAttribute{
			"General": str("Kenobi"), "Hello": str("There"), "Help.Me": str("Me"),
		}, "4c360f3fdafd970e05fae2f149d997f5"},
		{"mixed types", map[string]baton.MessageAttribute{
			"ClientId": str("c-42"),
			"Retries":  {DataType: "Number.int", StringValue: "3"},
			"Blob":     {DataType: "Binary", BinaryValue: []byte{0xde, 0xad, 0xbe, 0xef}},
		}, "489ec3752a0fbb1b289096f88629b322"},
		{"trace header", map[string]baton.MessageAttribute{
			"AWSTraceHeader": str("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"),
		}, "5ae4d5d7636402d80f4eb6d213245a88"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := engine.MD5OfAttributes(tt.attrs); got != tt.want {
				t.Errorf("MD5OfAttributes = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestMD5OfBody(t *testing.T) {
	t.Parallel()
	if got, want := engine.MD5OfBody("Hello, SQS!"), "982e00ffc10ba49378a8653ca8fecf47"; got != want {
		t.Errorf("MD5OfBody = %q, want %q", got, want)
	}
}
