package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
)

// The queue URLs of JSON requests and answers are found by what the JSON
// says, in any of its valid spellings (a key or a URL with escapes, `\/`
// or `\u0051` alike), and rewritten in place: the rest of the document's
// bytes pass as they came. A request's message body of 1 MiB is skipped,
// not decoded (memberSpans); an answer that hands out queue URLs is small,
// and read by encoding/json's tokens (mapJSONAnswer).

// span is the bytes [start, end) of a JSON value in its document.
type span struct{ start, end int }

// memberSpans returns the spans of the values of the top-level members of
// the JSON object doc whose names, decoded, equal name under
// strings.EqualFold (encoding/json matches a member's name so, and takes
// the last of several); false if doc is no JSON object it can read. A
// value is skipped by its delimiters, a string by its closing quote, so a
// large value costs little.
func memberSpans(doc []byte, name string) ([]span, bool) {
	i := skipSpace(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		return nil, false
	}
	var spans []span
	i = skipSpace(doc, i+1)
	if i < len(doc) && doc[i] == '}' {
		return nil, true
	}
	for {
		if i >= len(doc) || doc[i] != '"' {
			return nil, false
		}
		keyEnd := stringEnd(doc, i+1)
		if keyEnd < 0 {
			return nil, false
		}
		key, ok := jsonStringValue(doc[i : keyEnd+1])
		if !ok {
			return nil, false
		}
		i = skipSpace(doc, keyEnd+1)
		if i >= len(doc) || doc[i] != ':' {
			return nil, false
		}
		start := skipSpace(doc, i+1)
		end := skipValue(doc, start)
		if end < 0 {
			return nil, false
		}
		if strings.EqualFold(key, name) {
			spans = append(spans, span{start, end})
		}
		i = skipSpace(doc, end)
		if i >= len(doc) {
			return nil, false
		}
		switch doc[i] {
		case ',':
			i = skipSpace(doc, i+1)
		case '}':
			return spans, true
		default:
			return nil, false
		}
	}
}

// jsonStringValue decodes the JSON string literal lit (quotes included).
func jsonStringValue(lit []byte) (string, bool) {
	if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
		return "", false
	}
	if bytes.IndexByte(lit, '\\') < 0 {
		return string(lit[1 : len(lit)-1]), true
	}
	var s string
	if json.Unmarshal(lit, &s) != nil {
		return "", false
	}
	return s, true
}

// skipSpace returns the index of the first byte from i on that is not
// JSON whitespace.
func skipSpace(doc []byte, i int) int {
	for i < len(doc) && (doc[i] == ' ' || doc[i] == '\t' || doc[i] == '\r' || doc[i] == '\n') {
		i++
	}
	return i
}

// skipValue returns the index just past the JSON value that starts at
// doc[i], -1 if doc ends first. Objects and arrays are skipped by their
// depth, outside strings; a scalar ends where a delimiter or space does.
func skipValue(doc []byte, i int) int {
	if i >= len(doc) {
		return -1
	}
	switch doc[i] {
	case '"':
		end := stringEnd(doc, i+1)
		if end < 0 {
			return -1
		}
		return end + 1
	case '{', '[':
		depth := 0
		for ; i < len(doc); i++ {
			switch doc[i] {
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			case '"':
				end := stringEnd(doc, i+1)
				if end < 0 {
					return -1
				}
				i = end
			}
		}
		return -1
	}
	start := i
	for i < len(doc) && !strings.ContainsRune(",}] \t\r\n", rune(doc[i])) {
		i++
	}
	if i == start {
		return -1
	}
	return i
}

// stringEnd is the index of the quote that closes the JSON string whose
// content starts at b[from], -1 if b ends first.
func stringEnd(b []byte, from int) int {
	for {
		j := bytes.IndexByte(b[from:], '"')
		if j < 0 {
			return -1
		}
		q := from + j
		n := 0 // backslashes before the quote: an odd run escapes it
		for k := q - 1; k >= from && b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return q
		}
		from = q + 1
	}
}

// mapJSONQueueURL maps the QueueUrl members of a JSON request (every
// top-level member a decoder reads as QueueUrl, however spelt), in place;
// a body that names no queue the mapping changes is returned as it came.
func mapJSONQueueURL(body []byte, mapURL func(string) string) []byte {
	spans, ok := memberSpans(body, "QueueUrl")
	if !ok {
		return body
	}
	return replaceStrings(body, spans, mapURL)
}

// replaceStrings returns doc with each string value at spans (in order)
// replaced by what mapURL makes of it; doc itself if none changes.
func replaceStrings(doc []byte, spans []span, mapURL func(string) string) []byte {
	var out []byte
	done := 0 // bytes of doc copied to out
	for _, s := range spans {
		v, ok := jsonStringValue(doc[s.start:s.end])
		if !ok {
			continue
		}
		mapped := mapURL(v)
		if mapped == v {
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(doc)+len(mapped))
		}
		out = append(out, doc[done:s.start]...)
		out = append(out, jsonString(mapped)...)
		done = s.end
	}
	if out == nil {
		return doc
	}
	return append(out, doc[done:]...)
}

// answerSpans returns the spans of the string values, at any depth, of
// the JSON document doc's members named QueueUrl or QueueUrls (in any
// case), the strings of an array so named included; false if doc is not
// JSON.
func answerSpans(doc []byte) ([]span, bool) {
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	type frame struct {
		object  bool
		wantKey bool   // an object's next token is a member's name
		key     string // the member whose value is being read
	}
	var (
		spans []span
		stack []frame
	)
	for {
		before := d.InputOffset()
		tok, err := d.Token()
		if err != nil {
			if errors.Is(err, io.EOF) && len(stack) == 0 {
				return spans, true
			}
			return nil, false
		}
		var top *frame
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		if top != nil && top.object && top.wantKey {
			if k, ok := tok.(string); ok {
				top.key, top.wantKey = k, false
				continue
			}
		}
		key := ""
		if top != nil {
			key = top.key
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				inherit := ""
				if t == '[' {
					inherit = key // an array's strings are its member's
				}
				stack = append(stack, frame{object: t == '{', wantKey: t == '{', key: inherit})
				continue
			default:
				stack = stack[:len(stack)-1]
			}
		case string:
			if k := strings.ToLower(key); k == "queueurl" || k == "queueurls" {
				// Between the last token and this string there are only
				// spaces, a colon or a comma: its first quote opens it.
				end := int(d.InputOffset())
				start := int(before) + bytes.IndexByte(doc[before:end], '"')
				spans = append(spans, span{start, end})
			}
		}
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].wantKey = true
		}
	}
}
