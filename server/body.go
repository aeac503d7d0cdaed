package server

import (
	"bytes"
	"io"
	"net/http"
	"sync"
)

// requestBody returns r's whole body and the pooled buffer holding it,
// which releaseBody gives back once nothing refers to the body any more
// (both codecs copy every string and byte slice out of it). A body
// Authenticate has read already (bufferedBody) is handed on as it is, not
// copied again, and with no buffer of its own.
func requestBody(r *http.Request) (body []byte, buf *[]byte, err error) {
	if bb, ok := r.Body.(*bufferedBody); ok && bb.Len() == len(bb.b) {
		bb.Seek(0, io.SeekEnd) // read, as io.ReadAll would leave it
		return bb.b, nil, nil
	}
	buf = getBodyBuffer()
	body, err = readBody(r, *buf)
	return body, buf, err
}

// releaseBody gives back the buffer of a body requestBody returned.
func releaseBody(buf *[]byte, body []byte) {
	if buf != nil {
		putBodyBuffer(buf, body)
	}
}

// readBody reads a request's whole body (already capped by
// http.MaxBytesReader in ServeHTTP) into buf, grown if need be, and
// returns it. When the request says it is at most maxPooledBody long, the
// body is read in one go: io.ReadAll starts at 512 bytes and grows, so a
// 1 KiB message was copied three times over and left two buffers for the
// collector. A longer body is read as it arrives, so that a request
// claiming megabytes it never sends is given no memory for them. A body
// that ends early fails as io.ReadAll fails on it, with
// io.ErrUnexpectedEOF.
func readBody(r *http.Request, buf []byte) ([]byte, error) {
	n := r.ContentLength
	if n <= 0 || n > maxPooledBody {
		// Unknown length, or long: grown as it arrives (and past
		// maxBodyBytes, MaxBytesReader reports it).
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

// bufferedBody is a request body read whole before the handler runs, by
// Authenticate to check its hash. It reads as the original would have;
// requestBody takes its bytes without a copy.
type bufferedBody struct {
	*bytes.Reader
	b []byte
}

func newBufferedBody(b []byte) *bufferedBody { return &bufferedBody{Reader: bytes.NewReader(b), b: b} }

// Close does nothing: the connection's body was read to its end already.
func (*bufferedBody) Close() error { return nil }

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
