// Package awsjson is the AWS JSON 1.0 codec: requests name their operation in
// X-Amz-Target ("AmazonSQS.<Op>") and carry the request struct as a JSON
// object; responses are the result struct, or an error object with __type.
package awsjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/internal/bufpool"
	"github.com/baton-sqs/baton/protocol"
)

// ContentType is the media type of requests and responses.
const ContentType = "application/x-amz-json-1.0"

// contentType11 is AWS JSON 1.1's media type, which SQS also reads.
const contentType11 = "application/x-amz-json-1.1"

// HasContentType reports whether r's Content-Type is an AWS JSON protocol's
// media type, application/x-amz-json-1.0 or 1.1, whatever its parameters
// (a "; charset=utf-8" is ignored, as the AWS JSON protocol tests require).
// A request naming an operation in X-Amz-Target with any other Content-Type
// is not a JSON request (docs/sqs-behaviour.md §1.1).
func HasContentType(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && (mt == ContentType || mt == contentType11)
}

const targetPrefix = "AmazonSQS."

// Operation returns the operation an X-Amz-Target header names, and whether
// the header is present at all (which selects this protocol).
func Operation(r *http.Request) (name string, ok bool) {
	t := r.Header.Get("X-Amz-Target")
	if t == "" {
		return "", false
	}
	name, _ = strings.CutPrefix(t, targetPrefix)
	if name == t {
		name = ""
	}
	return name, true
}

// Decode parses a request body into op's input struct. An empty body is an
// empty object. Malformed JSON, a body that is not a JSON object (null
// included), invalid UTF-8 (which encoding/json would silently turn into
// U+FFFD) or a member of the wrong type is a SerializationException.
func Decode(body []byte, op protocol.Operation) (any, error) {
	in := op.NewInput()
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return in, nil
	}
	if body[0] != '{' {
		return nil, baton.Errorf(baton.ErrSerialization, "Unable to parse request body: not a JSON object")
	}
	if !utf8.Valid(body) {
		return nil, baton.Errorf(baton.ErrSerialization, "Unable to parse request body: invalid UTF-8")
	}
	if fastDecode(body, in) {
		return in, nil
	}
	in = op.NewInput() // the fast decoder gave up, perhaps halfway
	if hasLoneSurrogate(body) {
		// encoding/json would take it as U+FFFD, a character SQS accepts,
		// where the fast decoder keeps it for the member's checks to
		// refuse; here neither can be done faithfully.
		return nil, baton.Errorf(baton.ErrSerialization, "Unable to parse request body: a string holds an unpaired UTF-16 surrogate")
	}
	if err := json.Unmarshal(body, in); err != nil {
		return nil, baton.Errorf(baton.ErrSerialization, "Unable to parse request body: %s", describe(err))
	}
	return in, nil
}

// hasLoneSurrogate reports whether body, JSON, escapes a UTF-16 surrogate
// that is not half of a pair.
func hasLoneSurrogate(body []byte) bool {
	for i := 0; i+1 < len(body); i++ {
		if body[i] != '\\' {
			continue
		}
		if body[i+1] != 'u' {
			i++ // an escaped character, perhaps a backslash
			continue
		}
		r, ok := hex4(body, i+2)
		if !ok || !utf16.IsSurrogate(r) {
			i += 5
			continue
		}
		lo, ok := hex4(body, i+8)
		if r >= 0xdc00 || !ok || i+7 >= len(body) || body[i+6] != '\\' || body[i+7] != 'u' || utf16.DecodeRune(r, lo) == utf8.RuneError {
			return true
		}
		i += 11
	}
	return false
}

func describe(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return "member " + te.Field + " has the wrong type"
	}
	return "malformed JSON"
}

// WriteResult writes a success response.
func WriteResult(w http.ResponseWriter, out any) {
	buf := bufpool.Get()
	defer bufpool.Put(buf)
	body, ok := fastEncode(buf.AvailableBuffer(), out) // encode_fast.go
	if ok {
		buf.Write(body) // the same bytes: only grows buf for its next use
	} else {
		enc := json.NewEncoder(buf)
		enc.SetEscapeHTML(false)
		if out == nil {
			out = struct{}{}
		}
		if err := enc.Encode(out); err != nil {
			WriteError(w, baton.AsError(err))
			return
		}
		body = bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	}
	// Content-Length keeps a response of more than 2 KiB (a receive of a
	// few messages) from being sent chunked, and makes one whose writing
	// stops short of its end an error to the client, never a shorter
	// answer that reads as complete (see
	// server/TestSuccessAnswersDeclareTheirLength). The header values are
	// set directly: their keys are canonical already.
	h := w.Header()
	h["Content-Type"] = contentTypeValue
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(http.StatusOK)
	w.Write(body)
}

var contentTypeValue = []string{ContentType}

// WriteError writes an error response: the __type and message in the body,
// and the Query code in x-amzn-query-error, which SDKs report as the code.
func WriteError(w http.ResponseWriter, e *baton.Error) {
	spec := e.Code.Spec()
	fault := "Sender"
	if spec.Receiver {
		fault = "Receiver"
	}
	body, _ := json.Marshal(struct {
		Type    string `json:"__type"`
		Message string `json:"message"`
	}{spec.Namespace + "#" + string(e.Code), e.Message})
	w.Header().Set("Content-Type", ContentType)
	w.Header().Set("x-amzn-query-error", spec.QueryCode+";"+fault)
	w.WriteHeader(spec.Status)
	w.Write(body)
}
