// Package bufpool lends the buffers an answer is written into, so that
// writing one neither allocates nor grows a buffer, without a large answer
// pinning its memory for good.
package bufpool

import (
	"bytes"
	"sync"
)

// maxKept is the largest buffer kept for reuse: a receive of ten 1 MiB
// messages must not pin 10 MiB for good.
const maxKept = 256 << 10

var buffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// Get returns an empty buffer, one given back before where there is one.
func Get() *bytes.Buffer { return buffers.Get().(*bytes.Buffer) }

// Put gives b back; b must not be used after. A buffer grown past maxKept
// is left to the collector.
func Put(b *bytes.Buffer) {
	if b.Cap() > maxKept {
		return
	}
	b.Reset()
	buffers.Put(b)
}
