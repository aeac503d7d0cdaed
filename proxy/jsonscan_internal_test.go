package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

const proxyBase, upBase = "http://proxy:9325", "https://sqs.example"

// toUpstream maps a queue URL on proxyBase to upBase, as the proxy maps a
// queue URL naming it.
func toUpstream(s string) string {
	if rest, ok := strings.CutPrefix(s, proxyBase); ok {
		return upBase + rest
	}
	return s
}

// Every member a decoder reads as QueueUrl is mapped, however the JSON
// spells it, in place: not a tag, a nested member or a message body that
// reads like one.
func TestMapJSONQueueURL(t *testing.T) {
	const proxyURL, upURL = proxyBase + "/000000000000/q", upBase + "/000000000000/q"
	escaped := strings.ReplaceAll(proxyURL, "/", `\/`)
	for _, tt := range []struct{ in, want string }{
		{`{"QueueUrl":"` + proxyURL + `","MessageBody":"x"}`, `{"QueueUrl":"` + upURL + `","MessageBody":"x"}`},
		{`{"MessageBody":"{\"QueueUrl\":\"` + proxyURL + `\"}", "QueueUrl" : "` + proxyURL + `"}`,
			`{"MessageBody":"{\"QueueUrl\":\"` + proxyURL + `\"}", "QueueUrl" : "` + upURL + `"}`},
		{`{"Tags":{"QueueUrl":"` + proxyURL + `"},"QueueUrl":"` + proxyURL + `"}`,
			`{"Tags":{"QueueUrl":"` + proxyURL + `"},"QueueUrl":"` + upURL + `"}`},
		{`{"QueueUrl":"https://elsewhere/1/q"}`, `{"QueueUrl":"https://elsewhere/1/q"}`},
		{`{"QueueUrl":`, `{"QueueUrl":`},
		{`{"QueueUrl":5}`, `{"QueueUrl":5}`},
		// Other spellings of the same request.
		{`{"QueueUrl":"` + escaped + `"}`, `{"QueueUrl":"` + upURL + `"}`},
		{`{"Queue\u0055rl":"` + proxyURL + `"}`, `{"Queue\u0055rl":"` + upURL + `"}`},
		{`{"Queue\/Url":"` + proxyURL + `"}`, `{"Queue\/Url":"` + proxyURL + `"}`},
		{`{"queueurl":"` + proxyURL + `"}`, `{"queueurl":"` + upURL + `"}`},
		{`{"MessageBody":"a\\","QueueUrl":"` + proxyURL + `"}`, `{"MessageBody":"a\\","QueueUrl":"` + upURL + `"}`},
		{`{"QueueUrl":"` + proxyURL + `","QueueUrl":"` + proxyURL + `"}`, `{"QueueUrl":"` + upURL + `","QueueUrl":"` + upURL + `"}`},
		{"\n{ \"Entries\" : [ {\"Id\":\"1\"} ] ,\r\n\t\"QueueUrl\"\n:\n\"" + proxyURL + "\" }\n",
			"\n{ \"Entries\" : [ {\"Id\":\"1\"} ] ,\r\n\t\"QueueUrl\"\n:\n\"" + upURL + "\" }\n"},
	} {
		if got := string(mapJSONQueueURL([]byte(tt.in), toUpstream)); got != tt.want {
			t.Errorf("mapJSONQueueURL(%s)\n= %s\nwant %s", tt.in, got, tt.want)
		}
	}
}

// mappedLike checks that out reads as in with the string values at the
// members keyed so (keyed says of a member's name and depth) mapped by
// mapURL, and everything else the same, token by token as encoding/json
// reads them.
func mappedLike(t *testing.T, in, out []byte, keyed func(key string, depth int) bool, mapURL func(string) string) {
	t.Helper()
	din, dout := json.NewDecoder(bytes.NewReader(in)), json.NewDecoder(bytes.NewReader(out))
	din.UseNumber()
	dout.UseNumber()
	type frame struct {
		object, wantKey bool
		key             string
	}
	var stack []frame
	for n := 0; ; n++ {
		a, errA := din.Token()
		b, errB := dout.Token()
		if errA != nil || errB != nil {
			if !errors.Is(errA, io.EOF) || !errors.Is(errB, io.EOF) {
				t.Fatalf("token %d: %v / %v\nin  %q\nout %q", n, errA, errB, in, out)
			}
			return
		}
		want := a
		depth := len(stack)
		var top *frame
		if depth > 0 {
			top = &stack[depth-1]
		}
		_, str := a.(string)
		isKey := str && top != nil && top.object && top.wantKey
		if s, ok := a.(string); ok && !isKey && top != nil && keyed(top.key, depth) {
			want = mapURL(s)
		}
		if want != b {
			t.Fatalf("token %d: %#v, want %#v\nin  %q\nout %q", n, b, want, in, out)
		}
		switch {
		case isKey:
			top.key, top.wantKey = a.(string), false
			continue
		case a == json.Delim('{') || a == json.Delim('['):
			inherit := ""
			if a == json.Delim('[') && top != nil {
				inherit = top.key
			}
			stack = append(stack, frame{object: a == json.Delim('{'), wantKey: a == json.Delim('{'), key: inherit})
			continue
		case a == json.Delim('}') || a == json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].wantKey = true
		}
	}
}

var jsonSeeds = []string{
	`{"QueueUrl":"http://proxy:9325/1/q","MessageBody":"x"}`,
	`{"QueueUrl":"http:\/\/proxy:9325\/1\/q"}`,
	`{"Queue\u0055rl":"http://proxy:9325/1/q","QUEUEURL":"http://proxy:9325/1/r"}`,
	`{"MessageBody":"{\"QueueUrl\":\"http://proxy:9325/1/q\"}","Tags":{"QueueUrl":"http://proxy:9325/1/q"}}`,
	`{"QueueUrls":["http://proxy:9325/1/a","http:\/\/proxy:9325\/1\/b"],"NextToken":null}`,
	`{"ListQueuesResponse":{"ListQueuesResult":{"queueUrls":["http://proxy:9325/1/a"]}}}`,
	` { "a" : [ 1 , -2.5e3 , true , null , { "QueueUrl" : "http://proxy:9325/\u00e9" } ] , "QueueUrl" : "http://proxy:9325/x\\" } `,
	`{}`, `[]`, `"http://proxy:9325/1/q"`,
}

// The hand scan of a request is right for every spelling encoding/json
// reads: the top-level members named QueueUrl in any case are mapped,
// nothing else changes, and a request it leaves alone keeps its bytes.
func FuzzMapJSONQueueURL(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var v map[string]any
		if json.Unmarshal([]byte(in), &v) != nil {
			return // not a JSON object: the upstream refuses it
		}
		out := mapJSONQueueURL([]byte(in), toUpstream)
		mappedLike(t, []byte(in), out, func(k string, depth int) bool {
			return depth == 1 && strings.EqualFold(k, "QueueUrl")
		}, toUpstream)
	})
}

// An answer's queue URLs are found however the JSON spells them: under
// QueueUrl and QueueUrls (in any case), at any depth.
func FuzzAnswerSpans(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if !json.Valid([]byte(in)) {
			return
		}
		spans, ok := answerSpans([]byte(in))
		if !ok {
			t.Fatalf("answerSpans(%q) read no JSON", in)
		}
		out := replaceStrings([]byte(in), spans, toUpstream)
		mappedLike(t, []byte(in), out, func(k string, _ int) bool {
			k = strings.ToLower(k)
			return k == "queueurl" || k == "queueurls"
		}, toUpstream)
	})
}
