package server

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

// TestParseFormAsNetHTTP checks that parseForm leaves a request's Form and
// PostForm, and returns the error, as r.ParseForm does, for the forms it
// reads itself and those it leaves to ParseForm.
func TestParseFormAsNetHTTP(t *testing.T) {
	t.Parallel()
	const form = "application/x-www-form-urlencoded"
	big := "Action=SendMessage&MessageBody=" + strings.Repeat("x", maxPooledBody)
	for _, tt := range []struct {
		method, target, ctype, body string
		length                      int64 // 0: the body's
	}{
		{"POST", "/", form, "Action=SendMessage&MessageBody=a+b%20c%C3%A9", 0},
		{"POST", "/?Action=ReceiveMessage&QueueUrl=q", form, "Action=SendMessage&Action=Again", 0},
		{"POST", "/000000000000/q?Version=2012-11-05", form + "; charset=utf-8", "Action=DeleteMessage", 0},
		{"POST", "/", "Application/X-WWW-Form-URLEncoded", "Action=ListQueues", 0},
		{"POST", "/", form, "Action=Send%zzMessage&B=1", 0},
		{"POST", "/", form, "Action=SendMessage;B=1", 0},
		{"POST", "/?a=%zz", form, "Action=SendMessage", 0},
		{"POST", "/?a=%zz", form, "Action=%zz", 0},
		{"POST", "/", form, "Action=SendMessage", 100}, // cut short
		{"POST", "/", form, big, 0},
		{"POST", "/", "text/plain", "Action=SendMessage", 0},
		{"POST", "/", "", "Action=SendMessage", 0},
		{"POST", "/", "multipart/form-data; boundary=x", "Action=SendMessage", 0},
		{"POST", "/", form + "; charset", "Action=SendMessage", 0},
		{"PUT", "/", form, "Action=SendMessage", 0},
		{"GET", "/?Action=ListQueues&QueueNamePrefix=a%2Bb", "", "", 0},
	} {
		name := fmt.Sprintf("%s %s %q %.40q", tt.method, tt.target, tt.ctype, tt.body)
		build := func() *http.Request {
			r := httptest.NewRequest(tt.method, tt.target, strings.NewReader(tt.body))
			if tt.ctype != "" {
				r.Header.Set("Content-Type", tt.ctype)
			}
			if tt.length > 0 {
				// A connection that ends before the Content-Length it
				// announced, as net/http's body reader reports it.
				r.Body = io.NopCloser(io.MultiReader(strings.NewReader(tt.body), errReader{io.ErrUnexpectedEOF}))
				r.ContentLength = tt.length
			}
			return r
		}
		want, got := build(), build()
		wantErr, gotErr := want.ParseForm(), parseForm(got)
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Errorf("%s: error %v, want %v", name, gotErr, wantErr)
		}
		if wantErr != nil {
			continue // the server answers the error and reads no form
		}
		if !reflect.DeepEqual(got.Form, want.Form) || !reflect.DeepEqual(got.PostForm, want.PostForm) {
			t.Errorf("%s: Form %v PostForm %v, want %v and %v", name, got.Form, got.PostForm, want.Form, want.PostForm)
		}
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// TestParseFormTakesAuthenticatedBody checks that a form Authenticate read
// already is parsed from its bytes, and the body left read.
func TestParseFormTakesAuthenticatedBody(t *testing.T) {
	t.Parallel()
	body := []byte("Action=SendMessage&MessageBody=hi")
	r := httptest.NewRequest(http.MethodPost, "/?Version=1", nil)
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Body, r.ContentLength = newBufferedBody(body), int64(len(body))
	if err := parseForm(r); err != nil {
		t.Fatal(err)
	}
	if got := r.Form.Get("MessageBody") + "," + r.Form.Get("Version"); got != "hi,1" {
		t.Errorf("MessageBody,Version = %q, want hi,1", got)
	}
	if n, _ := r.Body.Read(make([]byte, 1)); n != 0 {
		t.Errorf("the body has %d more bytes to read, want none", n)
	}
}
