package pgstore

import (
	"bytes"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// TestArraysEncodeAsPgxDoes pins arrayPlan to pgx's own binary encoding of
// the same slices, byte for byte: NULL slices, empty ones, NULL elements,
// times before 2000 and with nanoseconds, and that it appends to what the
// buffer held.
func TestArraysEncodeAsPgxDoes(t *testing.T) {
	s1, s2 := "a", ""
	t1 := time.Date(2026, 12, 7, 10, 11, 12, 123456789, time.FixedZone("x", 3600))
	t2 := time.Date(1999, 12, 31, 23, 59, 59, 999999999, time.UTC)
	cases := []struct {
		oid   uint32
		value any
	}{
		{pgtype.TextArrayOID, []string(nil)},
		{pgtype.TextArrayOID, []string{}},
		{pgtype.TextArrayOID, []string{"id-1", "", "body é \x01", string(bytes.Repeat([]byte("x"), 5000))}},
		{pgtype.TextArrayOID, []*string(nil)},
		{pgtype.TextArrayOID, []*string{nil, &s1, &s2, nil}},
		{pgtype.TextArrayOID, []*string{&s1}},
		{pgtype.TimestamptzArrayOID, []time.Time(nil)},
		{pgtype.TimestamptzArrayOID, []time.Time{}},
		{pgtype.TimestamptzArrayOID, []time.Time{t1, t2, {}, time.Unix(0, 1)}},
		{pgtype.TimestamptzArrayOID, []*time.Time{nil, &t1, &t2}},
		{pgtype.TimestamptzArrayOID, []*time.Time(nil)},
	}
	pgx, ours := pgtype.NewMap(), pgtype.NewMap()
	encodeArraysIn(ours)
	for _, c := range cases {
		for _, prefix := range [][]byte{nil, []byte("held")} {
			want, err := pgx.Encode(c.oid, pgtype.BinaryFormatCode, c.value, bytes.Clone(prefix))
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := ours.PlanEncode(c.oid, pgtype.BinaryFormatCode, c.value).(arrayPlan); !ok {
				t.Fatalf("%T for oid %d: not encoded by arrayPlan", c.value, c.oid)
			}
			got, err := ours.Encode(c.oid, pgtype.BinaryFormatCode, c.value, bytes.Clone(prefix))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) || (got == nil) != (want == nil) {
				t.Errorf("%T %v after %q:\n got %x\nwant %x", c.value, c.value, prefix, got, want)
			}
		}
	}
}

// TestArraysOtherKindsToPgx: a slice of another kind, or one of text for a
// timestamptz array, is left to pgx's encoding.
func TestArraysOtherKindsToPgx(t *testing.T) {
	m := pgtype.NewMap()
	encodeArraysIn(m)
	for _, c := range []struct {
		oid   uint32
		value any
	}{
		{pgtype.TextArrayOID, []int64{1}},
		{pgtype.TimestamptzArrayOID, []string{"2026-01-01"}},
		{pgtype.Int8ArrayOID, []int64{1}},
	} {
		if _, ours := m.PlanEncode(c.oid, pgtype.BinaryFormatCode, c.value).(arrayPlan); ours {
			t.Errorf("%T for oid %d: encoded by arrayPlan", c.value, c.oid)
		}
	}
	if _, ours := m.PlanEncode(pgtype.TextArrayOID, pgtype.TextFormatCode, []string{"a"}).(arrayPlan); ours {
		t.Error("text format: encoded by arrayPlan")
	}
}
