package awsquery

import (
	"bytes"
	"net/http"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/protocol"
)

// SNSNamespace is the XML namespace of every SNS response.
const SNSNamespace = "http://sns.amazonaws.com/doc/2010-03-31/"

// SNS requests are decoded by Decode like SQS's: SNS's lists and maps are
// not flattened, so their wire structs name the member in the tag
// ("Attributes.entry,key,value", "Tags.member"), and a response's list or
// map is a struct element holding its members (see protocol/snswire).

// WriteSNSResult writes an SNS <OpResponse>, as WriteResult writes an SQS
// one, in SNS's namespace.
func WriteSNSResult(w http.ResponseWriter, op protocol.Operation, out any, requestID string) {
	writeResult(w, SNSNamespace, op, out, requestID)
}

// WriteSNSError writes an SNS <ErrorResponse>: as SQS's but in SNS's
// namespace and without SQS's empty <Detail/>.
func WriteSNSError(w http.ResponseWriter, e *baton.Error, requestID string) {
	spec, fault, msg := queryFault(e)
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0"?><ErrorResponse xmlns="` + SNSNamespace + `"><Error><Type>` + fault + `</Type><Code>`)
	escape(&b, spec.QueryCode)
	b.WriteString("</Code><Message>")
	escape(&b, msg)
	b.WriteString("</Message></Error><RequestId>" + requestID + "</RequestId></ErrorResponse>")
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(spec.Status)
	w.Write(b.Bytes())
}
