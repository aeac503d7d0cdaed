package server

import (
	"io"
	"net/http"
)

// readBody reads a request's whole body (already capped by
// http.MaxBytesReader in ServeHTTP). When the request says how long it is,
// the body is read into one buffer of that size: io.ReadAll starts at 512
// bytes and grows, so a 1 KiB message was copied three times over and left
// two buffers for the collector. A body that ends early fails as
// io.ReadAll fails on it, with io.ErrUnexpectedEOF.
func readBody(r *http.Request) ([]byte, error) {
	n := r.ContentLength
	if n <= 0 || n > maxBodyBytes {
		return io.ReadAll(r.Body) // unknown length, or too long: MaxBytesReader reports it
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r.Body, b); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return b, nil
}
