package server

import (
	"io"
	"log/slog"
	"net/http"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/ids"
	"github.com/baton-sqs/baton/protocol/awsjson"
	"github.com/baton-sqs/baton/protocol/sigv4"
)

// Authenticate wraps next so that only requests signed (SigV4, header or
// presigned form) by one of v's keys reach it, with the key's account in
// their context (baton.AccountFromContext): handlers behind it act for that
// account alone. A request naming no key of v's, or dated outside the
// window, is refused unread; otherwise the body, at most maxBodyBytes of it,
// is read to check the payload hash and next gets an unread copy. A refusal
// is written as an SQS error in the request's protocol (JSON 1.0 when
// X-Amz-Target is set, else Query: XML, or the JSON a request accepting
// application/json gets) with AWS's code and status, and
// logged at debug level.
//
// Server.New puts the SQS API behind it when Config.Verifier is set; other
// handlers that must require the same credentials (an admin API, metrics)
// can be wrapped the same way.
func Authenticate(v *sigv4.Verifier, log *slog.Logger, next http.Handler) http.Handler {
	if log == nil {
		log = slog.Default()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// What the request states of its signature is checked first: a
		// request without a key of v's is refused before its body is read,
		// so that not everyone who reaches the port can make the server
		// hold up to maxBodyBytes per connection.
		st, err := v.Precheck(r)
		if err != nil {
			e := baton.AsError(err)
			log.Debug("request refused", "request_id", requestFrom(r.Context()).reqID, "remote", r.RemoteAddr, "code", e.Code)
			writeError(w, r, e)
			return
		}
		body, buf, err := readSignedBody(w, r)
		defer func() { releaseBody(buf, body) }() // next has copied what it keeps of the body
		if err != nil {
			writeError(w, r, readError(r, err))
			return
		}
		cred, err := v.Finish(r, st, body)
		if err != nil {
			e := baton.AsError(err)
			log.Debug("request refused", "request_id", requestFrom(r.Context()).reqID, "remote", r.RemoteAddr, "code", e.Code)
			writeError(w, r, e)
			return
		}
		r.Body = newBufferedBody(body)
		next.ServeHTTP(w, r.WithContext(baton.NewContextWithAccount(r.Context(), cred.Account)))
	})
}

// readSignedBody reads the body of a request whose signature Precheck
// passed, at most maxBodyBytes of it, with the pooled buffer holding it,
// if any, for releaseBody. A body of known length up to maxPooledBody (every
// request of ten 1 KiB messages) is read in one go into a reused buffer;
// a longer one grows as it arrives, so that a request that only claims a
// large Content-Length does not get that much memory before it sends it.
func readSignedBody(w http.ResponseWriter, r *http.Request) ([]byte, *[]byte, error) {
	if r.ContentLength > 0 && r.ContentLength <= maxPooledBody {
		buf := getBodyBuffer()
		body, err := readBody(r, *buf)
		return body, buf, err
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	return body, nil, err
}

// writeError writes e in the protocol r speaks.
func writeError(w http.ResponseWriter, r *http.Request, e *baton.Error) {
	reqID := requestFrom(r.Context()).reqID
	if reqID == "" {
		reqID = ids.NewUUID()
		w.Header().Set("x-amzn-RequestId", reqID)
	}
	if _, ok := awsjson.Operation(r); ok {
		awsjson.WriteError(w, e)
		return
	}
	writeQueryError(w, r, e, reqID)
}
