package answered_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/baton-sqs/baton/internal/answered"
)

func hello(w http.ResponseWriter) {
	w.WriteHeader(http.StatusOK)
	w.Write([]byte("hello"))
}

// failing is a writer whose connection is gone: every write fails.
type failing struct{ h http.Header }

func (f *failing) Header() http.Header       { return f.h }
func (f *failing) WriteHeader(int)           {}
func (f *failing) Write([]byte) (int, error) { return 0, errors.New("write: broken pipe") }

// A written and flushed answer went out; one whose write fails, or whose
// client had left before it was written, did not, and says why. A writer
// that cannot flush is no evidence of a loss.
func TestWrite(t *testing.T) {
	rec := httptest.NewRecorder()
	if err := answered.Write(context.Background(), rec, hello); err != nil || rec.Body.String() != "hello" || !rec.Flushed {
		t.Errorf("written: %v, %q, flushed %v", err, rec.Body, rec.Flushed)
	}
	if err := answered.Write(context.Background(), &failing{h: http.Header{}}, hello); err == nil || !strings.Contains(err.Error(), "broken pipe") {
		t.Errorf("a failing write: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec = httptest.NewRecorder()
	if err := answered.Write(ctx, rec, hello); err == nil || !strings.Contains(err.Error(), "had left before") || rec.Body.String() != "hello" {
		t.Errorf("a client gone before: %v, %q", err, rec.Body)
	}
	var noFlush struct{ http.ResponseWriter }
	noFlush.ResponseWriter = httptest.NewRecorder()
	if err := answered.Write(context.Background(), noFlush, hello); err != nil {
		t.Errorf("a writer that cannot flush: %v", err)
	}
}
