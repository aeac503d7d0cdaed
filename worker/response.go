package worker

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// ErrBadResponse wraps every reason ParseBatchItemFailures fails a whole
// batch for.
var ErrBadResponse = errors.New("worker: the batch item failures response fails the whole batch")

// ParseBatchItemFailures reads a target's answer with
// ReportBatchItemFailures, by Lambda's rules, and returns the message ids
// it reports as failed (each once, in the answer's order). inBatch says
// whether a message id belongs to the batch.
//
// Full success (no ids, no error): an empty answer (or only white space),
// null, an object without a batchItemFailures key (other keys are ignored,
// as Lambda ignores them: {"statusCode":200} deletes the batch), and a
// null or empty batchItemFailures list.
//
// The whole batch failed (an error wrapping ErrBadResponse): an answer
// that is not JSON, JSON that is not an object or null, a batchItemFailures
// that is not a list, an item that is not an object, an item without an
// itemIdentifier key (a wrong key name, which Lambda names as a case), and
// an itemIdentifier that is null, not a string, empty, or not the
// messageId of a message of the batch.
func ParseBatchItemFailures(answer []byte, inBatch func(id string) bool) ([]string, error) {
	answer = bytes.TrimSpace(answer)
	if len(answer) == 0 {
		return nil, nil
	}
	if !json.Valid(answer) {
		return nil, fmt.Errorf("%w: not valid JSON (%s)", ErrBadResponse, quoteStart(answer))
	}
	dec := json.NewDecoder(bytes.NewReader(answer))
	dec.UseNumber()
	var top any
	if err := dec.Decode(&top); err != nil {
		return nil, fmt.Errorf("%w: not valid JSON: %v", ErrBadResponse, err)
	}
	var obj map[string]any
	switch v := top.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		obj = v
	default:
		return nil, fmt.Errorf("%w: the answer is %s, not an object", ErrBadResponse, jsonKind(v))
	}
	raw, ok := obj["batchItemFailures"]
	if !ok || raw == nil {
		return nil, nil
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, fmt.Errorf("%w: batchItemFailures is %s, not a list", ErrBadResponse, jsonKind(raw))
	}
	var ids []string
	seen := map[string]bool{}
	for i, it := range list {
		item, ok := it.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%w: batchItemFailures[%d] is %s, not an object", ErrBadResponse, i, jsonKind(it))
		}
		v, ok := item["itemIdentifier"]
		if !ok {
			return nil, fmt.Errorf("%w: batchItemFailures[%d] has no itemIdentifier key (keys: %s)", ErrBadResponse, i, keyList(item))
		}
		id, ok := v.(string)
		switch {
		case v == nil:
			return nil, fmt.Errorf("%w: batchItemFailures[%d].itemIdentifier is null", ErrBadResponse, i)
		case !ok:
			return nil, fmt.Errorf("%w: batchItemFailures[%d].itemIdentifier is %s, not a string", ErrBadResponse, i, jsonKind(v))
		case id == "":
			return nil, fmt.Errorf("%w: batchItemFailures[%d].itemIdentifier is empty", ErrBadResponse, i)
		case !inBatch(id):
			return nil, fmt.Errorf("%w: batchItemFailures[%d].itemIdentifier %q is not a message of the batch", ErrBadResponse, i, truncate(id, 100))
		}
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// jsonKind names a decoded JSON value's kind for messages.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// keyList lists an object's keys for messages.
func keyList(m map[string]any) string {
	if len(m) == 0 {
		return "none"
	}
	var b bytes.Buffer
	n := 0
	for k := range m {
		if n == 5 {
			b.WriteString(", …")
			break
		}
		if n > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", truncate(k, 40))
		n++
	}
	return b.String()
}

// quoteStart quotes the start of an answer for messages.
func quoteStart(b []byte) string {
	if len(b) > 60 {
		return fmt.Sprintf("%q…", b[:60])
	}
	return fmt.Sprintf("%q", b)
}

// truncate cuts s to at most n bytes.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// noteIgnoredFailures notes a successful answer that lists batchItemFailures
// while ReportBatchItemFailures is off: the worker deletes the whole batch
// all the same, which the target may not expect. The first such answer is
// logged at WARN, with its count; all are counted in the stop line.
func (w *Worker) noteIgnoredFailures(answer []byte, inBatch func(id string) bool) {
	if !bytes.Contains(answer, []byte("batchItemFailures")) {
		return
	}
	ids, err := ParseBatchItemFailures(answer, inBatch)
	if err != nil || len(ids) == 0 {
		return
	}
	if w.counts.ignored.Add(int64(len(ids))) == int64(len(ids)) {
		w.log.Warn("the target answered batchItemFailures, but ReportBatchItemFailures (--report-batch-item-failures) is off: the worker ignores them and deletes the whole batch; turn it on for those messages to come back (this is said once; the stop line counts them all)",
			"failures", len(ids))
	}
}
