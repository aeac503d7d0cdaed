package pebblestore

import (
	"bytes"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/baton-sqs/baton"
)

func TestStateRoundTrip(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	for _, m := range []baton.Message{
		{},
		{
			GroupID: "g ✓", DedupID: "d", SequenceNumber: "10000000000000000042", SenderID: "000000000000",
			DeadLetterSourceARN: "arn:aws:sqs:us-east-1:000000000000:src", SentAt: at, VisibleAt: at.Add(time.Hour),
			FirstReceivedAt: at.Add(time.Second), LeasedAt: at.Add(time.Minute), ReceiveCount: 300, Epoch: 1<<32 - 1, Leased: true,
		},
	} {
		var got baton.Message
		if err := decodeState(appendState(nil, &m), &got, nil); err != nil {
			t.Fatalf("decode %+v: %v", m, err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Errorf("round trip:\n got %+v\nwant %+v", got, m)
		}
	}
}

func TestAttributesRoundTrip(t *testing.T) {
	t.Parallel()
	for _, attrs := range []map[string]baton.MessageAttribute{
		nil,
		{"s": {DataType: "String", StringValue: "v ✓"}, "b": {DataType: "Binary.x", BinaryValue: []byte{0, 0xff}}, "e": {DataType: "String"}},
	} {
		got, err := decodeAttributes(encodeAttributes(attrs))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, attrs) {
			t.Errorf("round trip: got %+v, want %+v", got, attrs)
		}
	}
}

func FuzzDecodeState(f *testing.F) {
	f.Add(appendState(nil, &baton.Message{GroupID: "g", Epoch: 3, Leased: true, SentAt: time.Unix(1, 2)}))
	f.Add([]byte{stateVersion})
	f.Fuzz(func(t *testing.T, b []byte) {
		var m baton.Message
		if decodeState(b, &m, nil) != nil {
			return
		}
		// What decodes encodes back to the same bytes, but for the
		// encodings of one time: 0 is the zero time.
		var again baton.Message
		if err := decodeState(appendState(nil, &m), &again, nil); err != nil || !reflect.DeepEqual(again, m) {
			t.Errorf("re-encoding %x: got %+v, %v; want %+v", b, again, err, m)
		}
	})
}

func FuzzDecodeAttributes(f *testing.F) {
	f.Add(encodeAttributes(map[string]baton.MessageAttribute{"a": {DataType: "Binary", BinaryValue: []byte{1}}}))
	f.Add([]byte{1, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		attrs, err := decodeAttributes(b)
		if err != nil {
			return
		}
		again, err := decodeAttributes(encodeAttributes(attrs))
		if err != nil || len(again) != len(attrs) {
			t.Fatalf("re-encoding %x: got %+v, %v; want %+v", b, again, err, attrs)
		}
		for k, a := range attrs {
			if g := again[k]; g.DataType != a.DataType || g.StringValue != a.StringValue || !bytes.Equal(g.BinaryValue, a.BinaryValue) {
				t.Errorf("attribute %q: got %+v, want %+v", k, g, a)
			}
		}
	})
}

// TestPersistsEveryField fails when baton.Message, baton.Queue or
// baton.QueueAttributes gain a field, so that whoever adds it also makes
// the store keep it (encodeState, the payload, or the queues table) and
// lists it here.
func TestPersistsEveryField(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		v     any
		known []string
	}{
		{baton.Message{}, []string{
			"ID", "Body", "BodyMD5", "Attributes", "TraceHeader", // id and payload columns
			"GroupID", "DedupID", "SequenceNumber", "SenderID", "SentAt", "DeadLetterSourceARN", // encodeState
			"VisibleAt", "Leased", "ReceiveCount", "FirstReceivedAt", "Epoch", "LeasedAt",
		}},
		{baton.Queue{}, []string{
			"ID", "Region", "Account", "Name", "Attributes", "Tags", "CreatedAt", "ModifiedAt", "PurgedAt", "DedupScope", // queues columns
		}},
	} {
		typ := reflect.TypeOf(c.v)
		for i := range typ.NumField() {
			if f := typ.Field(i).Name; !slices.Contains(c.known, f) {
				t.Errorf("%v has a field %s the store does not persist", typ, f)
			}
		}
	}
	// Queue attributes are stored as JSON: every field must be exported
	// and of a type JSON keeps exactly.
	typ := reflect.TypeOf(baton.QueueAttributes{})
	for i := range typ.NumField() {
		f := typ.Field(i)
		switch f.Type.Kind() {
		case reflect.String, reflect.Int, reflect.Bool:
		default:
			t.Errorf("baton.QueueAttributes.%s is a %v: check that the queues table's JSON keeps it", f.Name, f.Type)
		}
	}
}
