package proxy

import (
	"strings"
	"testing"
)

// The cost of mapping a SendMessage's QueueUrl, with a message body of
// 256 KiB (with escapes, as a JSON body carries quotes) after it.
func BenchmarkMapJSONQueueURL(b *testing.B) {
	msg := strings.Repeat(`a \"quoted\" line\n`, 256<<10/19)
	body := []byte(`{"MessageBody":"` + msg + `","QueueUrl":"` + proxyBase + `/000000000000/q","DelaySeconds":0}`)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		mapJSONQueueURL(body, toUpstream)
	}
}
