package server

import (
	"io"
	"net/http"
	"sync"
)

// readBody reads a request's whole body (already capped by
// http.MaxBytesReader in ServeHTTP) into buf, grown if need be, and
// returns it. When the request says how long it is, the body is read in
// one go: io.ReadAll starts at 512 bytes and grows, so a 1 KiB message was
// copied three times over and left two buffers for the collector. A body
// that ends early fails as io.ReadAll fails on it, with
// io.ErrUnexpectedEOF.
func readBody(r *http.Request, buf []byte) ([]byte, error) {
	n := r.ContentLength
	if n <= 0 || n > maxBodyBytes {
		// Unknown length, or too long: MaxBytesReader reports it.
		for {
			if len(buf) == cap(buf) {
				buf = append(buf, 0)[:len(buf)]
			}
			m, err := r.Body.Read(buf[len(buf):cap(buf)])
			buf = buf[:len(buf)+m]
			if err == io.EOF {
				return buf, nil
			}
			if err != nil {
				return nil, err
			}
		}
	}
	if int64(cap(buf)) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r.Body, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}

// bodyBuffers holds request body buffers for reuse by requests whose
// decoded input keeps no reference into the body (both codecs copy every
// string and byte slice out of it).
var bodyBuffers = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledBody is the largest body buffer kept for reuse: a burst of
// 1 MiB messages must not pin that much per processor for good.
const maxPooledBody = 64 << 10

func getBodyBuffer() *[]byte { return bodyBuffers.Get().(*[]byte) }

func putBodyBuffer(p *[]byte, b []byte) {
	if cap(b) > maxPooledBody {
		return
	}
	*p = b[:0]
	bodyBuffers.Put(p)
}
