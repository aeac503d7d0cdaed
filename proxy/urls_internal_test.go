package proxy

import (
	"strings"
	"testing"
)

// Only the top-level QueueUrl member of a JSON request is mapped, in
// place: not a tag or a message body that reads like one.
func TestMapJSONQueueURL(t *testing.T) {
	const proxyURL, upURL = "http://proxy:9325/000000000000/q", "https://sqs.example/000000000000/q"
	mapURL := func(s string) string { return strings.Replace(s, "http://proxy:9325", "https://sqs.example", 1) }
	for _, tt := range []struct{ in, want string }{
		{`{"QueueUrl":"` + proxyURL + `","MessageBody":"x"}`, `{"QueueUrl":"` + upURL + `","MessageBody":"x"}`},
		{`{"MessageBody":"{\"QueueUrl\":\"` + proxyURL + `\"}", "QueueUrl" : "` + proxyURL + `"}`,
			`{"MessageBody":"{\"QueueUrl\":\"` + proxyURL + `\"}", "QueueUrl" : "` + upURL + `"}`},
		{`{"Tags":{"QueueUrl":"` + proxyURL + `"},"QueueUrl":"` + proxyURL + `"}`,
			`{"Tags":{"QueueUrl":"` + proxyURL + `"},"QueueUrl":"` + upURL + `"}`},
		{`{"QueueUrl":"https://elsewhere/1/q"}`, `{"QueueUrl":"https://elsewhere/1/q"}`},
		{`{"QueueUrl":`, `{"QueueUrl":`},
		{`{"QueueUrl":5}`, `{"QueueUrl":5}`},
	} {
		if got := string(mapJSONQueueURL([]byte(tt.in), mapURL)); got != tt.want {
			t.Errorf("mapJSONQueueURL(%s)\n= %s\nwant %s", tt.in, got, tt.want)
		}
	}
}
