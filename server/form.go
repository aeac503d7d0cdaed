package server

import (
	"mime"
	"net/http"
	"net/url"
)

// parseForm is r.ParseForm, with a POSTed form of known length up to
// maxPooledBody (a Query request of ten 1 KiB messages) read in one go into
// a reused buffer, or taken as Authenticate read it, instead of by
// io.ReadAll, which starts at 512 bytes and grows. r.Form and r.PostForm
// come out as ParseForm makes them, and so does the error: the form's,
// if it has one, else the URL query's.
func parseForm(r *http.Request) error {
	if r.PostForm != nil || r.Method != http.MethodPost || r.ContentLength <= 0 || r.ContentLength > maxPooledBody {
		return r.ParseForm()
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/x-www-form-urlencoded" {
		return r.ParseForm()
	}
	body, buf, err := requestBody(r) // body.go
	if err != nil {
		releaseBody(buf, body)
		return err
	}
	form, formErr := url.ParseQuery(string(body))
	releaseBody(buf, body)
	r.PostForm = form
	err = r.ParseForm() // r.Form: the form, then the URL query's values
	if formErr != nil {
		return formErr
	}
	return err
}
