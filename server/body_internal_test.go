package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestLongBodyGrowsAsItArrives: a request claiming a body longer than a
// pooled buffer is not given memory for it before its bytes come: a
// client announcing 4 MiB and sending 10 bytes costs no 4 MiB buffer.
func TestLongBodyGrowsAsItArrives(t *testing.T) {
	t.Parallel()
	src := &largestRead{data: []byte("0123456789")}
	r := httptest.NewRequest(http.MethodPost, "/", src)
	r.ContentLength = maxBodyBytes
	if _, err := readBody(r, nil); err == nil {
		t.Fatal("a body 10 bytes long that claimed 4 MiB was read without an error")
	}
	if src.largest > maxPooledBody {
		t.Errorf("read into a buffer of %d bytes for a body that sent 10: memory given for bytes never sent", src.largest)
	}
}

// largestRead is a body that sends data, then ends, and notes the largest
// buffer it was asked to read into.
type largestRead struct {
	data    []byte
	largest int
}

func (l *largestRead) Read(p []byte) (int, error) {
	l.largest = max(l.largest, len(p))
	if len(l.data) == 0 {
		return 0, io.ErrUnexpectedEOF
	}
	n := copy(p, l.data)
	l.data = l.data[n:]
	return n, nil
}
