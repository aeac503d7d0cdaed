package worker_test

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/baton-sqs/baton/worker"
)

// batchIDs are the message ids of the batch the answers below are about.
var batchIDs = map[string]bool{"id-1": true, "id-2": true, "id-3": true}

func inBatch(id string) bool { return batchIDs[id] }

// TestParseBatchItemFailures pins Lambda's success and failure conditions
// for ReportBatchItemFailures, one row per rule.
func TestParseBatchItemFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		answer string
		want   string // the failed ids, or "ALL" for a whole-batch failure
	}{
		// Full success.
		{"empty answer", ``, "[]"},
		{"white space", " \n\t ", "[]"},
		{"null answer", `null`, "[]"},
		{"empty object", `{}`, "[]"},
		{"other keys only", `{"statusCode":200,"body":"ok"}`, "[]"},
		{"null list", `{"batchItemFailures":null}`, "[]"},
		{"empty list", `{"batchItemFailures":[]}`, "[]"},
		// Partial failure.
		{"two failures", `{"batchItemFailures":[{"itemIdentifier":"id-2"},{"itemIdentifier":"id-3"}]}`, "[id-2 id-3]"},
		{"duplicates once", `{"batchItemFailures":[{"itemIdentifier":"id-2"},{"itemIdentifier":"id-2"}]}`, "[id-2]"},
		{"extra keys in an item", `{"batchItemFailures":[{"itemIdentifier":"id-1","reason":"x"}],"other":1}`, "[id-1]"},
		// The whole batch failed.
		{"invalid JSON", `{"batchItemFailures":[`, "ALL"},
		{"not JSON", `OK`, "ALL"},
		{"two values", `{} {}`, "ALL"},
		{"trailing text", `{}]`, "ALL"},
		{"a list", `[]`, "ALL"},
		{"a string", `"batchItemFailures"`, "ALL"},
		{"a number", `200`, "ALL"},
		{"a boolean", `true`, "ALL"},
		{"list is an object", `{"batchItemFailures":{"itemIdentifier":"id-1"}}`, "ALL"},
		{"list is a string", `{"batchItemFailures":"id-1"}`, "ALL"},
		{"item is null", `{"batchItemFailures":[null]}`, "ALL"},
		{"item is a string", `{"batchItemFailures":["id-1"]}`, "ALL"},
		{"empty itemIdentifier", `{"batchItemFailures":[{"itemIdentifier":""}]}`, "ALL"},
		{"null itemIdentifier", `{"batchItemFailures":[{"itemIdentifier":null}]}`, "ALL"},
		{"number itemIdentifier", `{"batchItemFailures":[{"itemIdentifier":7}]}`, "ALL"},
		{"wrong key name", `{"batchItemFailures":[{"itemIdentifer":"id-1"}]}`, "ALL"},
		{"key in another case", `{"batchItemFailures":[{"ItemIdentifier":"id-1"}]}`, "ALL"},
		{"empty item", `{"batchItemFailures":[{}]}`, "ALL"},
		{"id not in the batch", `{"batchItemFailures":[{"itemIdentifier":"id-9"}]}`, "ALL"},
		{"one good one unknown", `{"batchItemFailures":[{"itemIdentifier":"id-1"},{"itemIdentifier":"nope"}]}`, "ALL"},
	}
	for _, tt := range tests {
		ids, err := worker.ParseBatchItemFailures([]byte(tt.answer), inBatch)
		got := fmt.Sprint(ids)
		if ids == nil {
			got = "[]"
		}
		if err != nil {
			if !errors.Is(err, worker.ErrBadResponse) {
				t.Errorf("%s: error %v does not wrap ErrBadResponse", tt.name, err)
			}
			got = "ALL"
		}
		if got != tt.want {
			t.Errorf("%s: ParseBatchItemFailures(%q) = %s (err %v), want %s", tt.name, tt.answer, got, err, tt.want)
		}
	}
}

// FuzzParseBatchItemFailures: any answer gives either an error or ids that
// are all non-empty, in the batch and distinct.
func FuzzParseBatchItemFailures(f *testing.F) {
	for _, s := range []string{``, `null`, `{}`, `{"batchItemFailures":[{"itemIdentifier":"id-1"}]}`,
		`{"batchItemFailures":[{"itemIdentifier":""}]}`, `[`, `{"batchItemFailures":[null,{"x":1}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, answer []byte) {
		ids, err := worker.ParseBatchItemFailures(answer, inBatch)
		if err != nil {
			if ids != nil {
				t.Fatalf("ids %v with error %v", ids, err)
			}
			return
		}
		seen := map[string]bool{}
		for _, id := range ids {
			if id == "" || !batchIDs[id] || seen[id] {
				t.Fatalf("bad id %q in %v", id, ids)
			}
			seen[id] = true
		}
	})
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		value  string
		want   time.Duration
		wantOK bool
	}{
		{"", 0, false},
		{"3", 3 * time.Second, true},
		{" 120 ", 2 * time.Minute, true},
		{"0", 0, true},
		{"-1", 0, false},
		{"1.5", 0, false},
		{"soon", 0, false},
		{"99999999999", 12 * time.Hour, true},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0, true},
		{now.Add(48 * time.Hour).Format(http.TimeFormat), 12 * time.Hour, true},
		{"Fri, 02 Jan 2026 03:05:05 GMT", time.Minute, true},
		{"Friday, 02-Jan-26 03:05:05 GMT", time.Minute, true}, // RFC 850
		{"Fri Jan  2 03:05:05 2026", time.Minute, true},       // ANSI C
	}
	for _, tt := range tests {
		got, ok := worker.ParseRetryAfter(tt.value, now)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", tt.value, got, ok, tt.want, tt.wantOK)
		}
	}
}
