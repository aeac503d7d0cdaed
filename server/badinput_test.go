package server_test

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// This catalogue sends malformed requests over both protocols, raw (no SDK),
// and pins the exact SQS error each gets: the x-amzn-query-error code, the
// JSON __type or the Query XML <Code>, and the HTTP status (docs/sqs-behaviour.md
// §1.2, §1.3, §7). No case may answer 500 or drop the connection.

// badShapes maps a Query error code to the JSON __type docs/sqs-behaviour.md §7
// gives it, independently of error.go's table.
var badShapes = map[string]string{
	"InvalidParameterValue":                               "com.amazon.coral.service#InvalidParameterValueException",
	"MissingParameter":                                    "com.amazon.coral.service#MissingRequiredParameterException",
	"SerializationException":                              "com.amazon.coral.service#SerializationException",
	"RequestEntityTooLarge":                               "com.amazon.coral.service#RequestEntityTooLarge",
	"UnknownOperationException":                           "com.amazon.coral.service#UnknownOperationException",
	"InvalidAction":                                       "com.amazon.coral.service#InvalidAction",
	"AWS.SimpleQueueService.NonExistentQueue":             "com.amazonaws.sqs#QueueDoesNotExist",
	"ReceiptHandleIsInvalid":                              "com.amazonaws.sqs#ReceiptHandleIsInvalid",
	"InvalidMessageContents":                              "com.amazonaws.sqs#InvalidMessageContents",
	"AWS.SimpleQueueService.TooManyEntriesInBatchRequest": "com.amazonaws.sqs#TooManyEntriesInBatchRequest",
	"AWS.SimpleQueueService.EmptyBatchRequest":            "com.amazonaws.sqs#EmptyBatchRequest",
	"AWS.SimpleQueueService.BatchEntryIdsNotDistinct":     "com.amazonaws.sqs#BatchEntryIdsNotDistinct",
	"AWS.SimpleQueueService.InvalidBatchEntryId":          "com.amazonaws.sqs#InvalidBatchEntryId",
	"AWS.SimpleQueueService.BatchRequestTooLong":          "com.amazonaws.sqs#BatchRequestTooLong",
	"InvalidAttributeName":                                "com.amazonaws.sqs#InvalidAttributeName",
	"InvalidAttributeValue":                               "com.amazonaws.sqs#InvalidAttributeValue",
	"InvalidAddress":                                      "com.amazonaws.sqs#InvalidAddress",
}

// Short names for the codes the catalogue expects.
const (
	cInvalid   = "InvalidParameterValue"
	cMissing   = "MissingParameter"
	cSerial    = "SerializationException"
	cUnknownOp = "UnknownOperationException"
	cAction    = "InvalidAction"
	cNoQueue   = "AWS.SimpleQueueService.NonExistentQueue"
	cHandle    = "ReceiptHandleIsInvalid"
	cContents  = "InvalidMessageContents"
	cTooMany   = "AWS.SimpleQueueService.TooManyEntriesInBatchRequest"
	cEmpty     = "AWS.SimpleQueueService.EmptyBatchRequest"
	cDupIDs    = "AWS.SimpleQueueService.BatchEntryIdsNotDistinct"
	cBatchID   = "AWS.SimpleQueueService.InvalidBatchEntryId"
	cAttrName  = "InvalidAttributeName"
	cAttrValue = "InvalidAttributeValue"
)

// badRequest is one malformed request and the error it must get.
type badRequest struct {
	name   string
	method string // POST unless set
	path   string // "/" unless set
	ctype  string
	target string // X-Amz-Target; a JSON error response is expected when set
	body   string
	status int
	code   string
}

const (
	jsonType = "application/x-amz-json-1.0"
	formType = "application/x-www-form-urlencoded"
)

// jsonBad is an AWS JSON 1.0 request of op with a raw body.
func jsonBad(name, op, body string, status int, code string) badRequest {
	return badRequest{name: "json/" + name, ctype: jsonType, target: "AmazonSQS." + op, body: body, status: status, code: code}
}

// queryBad is a Query form POST with a raw (already encoded) form.
func queryBad(name, form string, status int, code string) badRequest {
	return badRequest{name: "query/" + name, ctype: formType, body: form, status: status, code: code}
}

// both is the same rule broken over both protocols: a JSON body for op and
// the equivalent Query form (without Action, which is added).
func both(name, op, jsonBody, form string, status int, code string) []badRequest {
	return []badRequest{
		jsonBad(name, op, jsonBody, status, code),
		queryBad(name, "Action="+op+"&"+form, status, code),
	}
}

// repeat joins n copies of f(i) (i from 1) with sep.
func repeat(n int, sep string, f func(i int) string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = f(i + 1)
	}
	return strings.Join(parts, sep)
}

func TestBadInputCatalogue(t *testing.T) {
	t.Parallel()
	c := newQueryClient(t)
	std := c.createQueue("bad-std")
	other := c.createQueue("bad-other")
	fifo := c.createQueue("bad.fifo", "Attribute.1.Name", "FifoQueue", "Attribute.1.Value", "true")
	c.send(std, "m1")
	c.send(other, "m2")
	handle := c.handle(std)
	otherHandle := c.handle(other)
	// A handle of the right length and alphabet whose MAC does not match:
	// one character in the middle changed.
	mid := len(handle) / 2
	flip := byte('A')
	if handle[mid] == 'A' {
		flip = 'B'
	}
	forged := handle[:mid] + string(flip) + handle[mid+1:]
	// Replaced in every body: $Q the standard queue, $F the FIFO queue, $O
	// the other queue, $H a live handle of $Q, $X one of $O, $M the forged.
	subst := strings.NewReplacer("$Q", std, "$F", fifo, "$O", other, "$H", handle, "$X", otherHandle, "$M", forged)

	var cases []badRequest
	add := func(rs ...badRequest) { cases = append(cases, rs...) }

	// Bodies that are not a JSON object, or not JSON at all.
	add(
		jsonBad("truncated object", "SendMessage", `{"QueueUrl":"$Q","MessageBody":"x"`, 400, cSerial),
		jsonBad("truncated string", "SendMessage", `{"QueueUrl":"$Q`, 400, cSerial),
		jsonBad("only brace", "ListQueues", `{`, 400, cSerial),
		jsonBad("trailing garbage", "ListQueues", `{}}`, 400, cSerial),
		jsonBad("two objects", "ListQueues", `{} {}`, 400, cSerial),
		jsonBad("not json", "ListQueues", `QueueNamePrefix=a`, 400, cSerial),
		jsonBad("array", "SendMessage", `[{"QueueUrl":"$Q","MessageBody":"x"}]`, 400, cSerial),
		jsonBad("string", "SendMessage", `"hello"`, 400, cSerial),
		jsonBad("number", "SendMessage", `42`, 400, cSerial),
		jsonBad("null", "SendMessage", `null`, 400, cSerial),
		jsonBad("true", "ListQueues", `true`, 400, cSerial),
		jsonBad("single quotes", "ListQueues", `{'QueueNamePrefix':'a'}`, 400, cSerial),
		jsonBad("bad escape", "SendMessage", `{"QueueUrl":"$Q","MessageBody":"\q"}`, 400, cSerial),
	)

	// Members of the wrong JSON type.
	add(
		jsonBad("string for int", "ReceiveMessage", `{"QueueUrl":"$Q","MaxNumberOfMessages":"5"}`, 400, cSerial),
		jsonBad("float for int", "ReceiveMessage", `{"QueueUrl":"$Q","WaitTimeSeconds":1.5}`, 400, cSerial),
		jsonBad("bool for int", "SendMessage", `{"QueueUrl":"$Q","MessageBody":"x","DelaySeconds":true}`, 400, cSerial),
		jsonBad("object for string", "SendMessage", `{"QueueUrl":{"u":"$Q"},"MessageBody":"x"}`, 400, cSerial),
		jsonBad("number for string", "SendMessage", `{"QueueUrl":"$Q","MessageBody":7}`, 400, cSerial),
		jsonBad("array for string", "GetQueueUrl", `{"QueueName":["bad-std"]}`, 400, cSerial),
		jsonBad("number for list", "ReceiveMessage", `{"QueueUrl":"$Q","MessageAttributeNames":3}`, 400, cSerial),
		jsonBad("string for list", "UntagQueue", `{"QueueUrl":"$Q","TagKeys":"k"}`, 400, cSerial),
		jsonBad("list for map", "SetQueueAttributes", `{"QueueUrl":"$Q","Attributes":["DelaySeconds"]}`, 400, cSerial),
		jsonBad("number in string map", "TagQueue", `{"QueueUrl":"$Q","Tags":{"k":1}}`, 400, cSerial),
		jsonBad("object for entries", "SendMessageBatch", `{"QueueUrl":"$Q","Entries":{"Id":"a"}}`, 400, cSerial),
		jsonBad("bad base64 binary", "SendMessage",
			`{"QueueUrl":"$Q","MessageBody":"x","MessageAttributes":{"b":{"DataType":"Binary","BinaryValue":"!!!"}}}`, 400, cSerial),
		jsonBad("huge int", "ReceiveMessage", `{"QueueUrl":"$Q","MaxNumberOfMessages":99999999999999999999}`, 400, cSerial),
	)

	// Unknown operations and actions, and requests naming none.
	add(
		jsonBad("unknown target", "Frobnicate", `{}`, 400, cUnknownOp),
		jsonBad("lower-case target", "sendMessage", `{}`, 400, cUnknownOp),
		badRequest{name: "json/target without prefix", ctype: jsonType, target: "SendMessage", body: `{}`, status: 400, code: cUnknownOp},
		badRequest{name: "json/other service target", ctype: jsonType, target: "AmazonSNS.Publish", body: `{}`, status: 400, code: cUnknownOp},
		queryBad("unknown action", "Action=Frobnicate", 400, cAction),
		queryBad("lower-case action", "Action=listQueues", 400, cAction),
		queryBad("no action", "QueueName=a", 400, cAction),
		queryBad("empty action", "Action=", 400, cAction),
		queryBad("repeated action, unknown first", "Action=Frobnicate&Action=ListQueues", 400, cAction),
		badRequest{name: "query/CreateQueue on queue URL", path: "/000000000000/bad-std", ctype: formType,
			body: "Action=CreateQueue&QueueName=x", status: 400, code: cAction},
		badRequest{name: "query/GET unknown action", method: http.MethodGet, path: "/?Action=Nope", status: 400, code: cAction},
	)

	// Every action's required parameters, absent.
	missing := []struct{ op, json, form string }{
		{"CreateQueue", `{}`, ""},
		{"GetQueueUrl", `{}`, ""},
		{"DeleteQueue", `{}`, ""},
		{"GetQueueAttributes", `{}`, ""},
		{"SetQueueAttributes", `{}`, "Attribute.1.Name=DelaySeconds&Attribute.1.Value=1"},
		{"SetQueueAttributes", `{"QueueUrl":"$Q"}`, "QueueUrl=$Q"},
		{"PurgeQueue", `{}`, ""},
		{"SendMessage", `{"MessageBody":"x"}`, "MessageBody=x"},
		{"SendMessage", `{"QueueUrl":"$Q"}`, "QueueUrl=$Q"},
		{"SendMessage", `{"QueueUrl":"$Q","MessageBody":""}`, "QueueUrl=$Q&MessageBody="},
		{"SendMessageBatch", `{"Entries":[{"Id":"a","MessageBody":"x"}]}`, "SendMessageBatchRequestEntry.1.Id=a&SendMessageBatchRequestEntry.1.MessageBody=x"},
		{"ReceiveMessage", `{}`, ""},
		{"DeleteMessage", `{"ReceiptHandle":"$H"}`, "ReceiptHandle=$H"},
		{"DeleteMessage", `{"QueueUrl":"$Q"}`, "QueueUrl=$Q"},
		{"DeleteMessageBatch", `{"Entries":[{"Id":"a","ReceiptHandle":"$H"}]}`, "DeleteMessageBatchRequestEntry.1.Id=a&DeleteMessageBatchRequestEntry.1.ReceiptHandle=$H"},
		{"ChangeMessageVisibility", `{"ReceiptHandle":"$H","VisibilityTimeout":1}`, "ReceiptHandle=$H&VisibilityTimeout=1"},
		{"ChangeMessageVisibility", `{"QueueUrl":"$Q","VisibilityTimeout":1}`, "QueueUrl=$Q&VisibilityTimeout=1"},
		{"ChangeMessageVisibility", `{"QueueUrl":"$Q","ReceiptHandle":"$H"}`, "QueueUrl=$Q&ReceiptHandle=$H"},
		{"ChangeMessageVisibilityBatch", `{"Entries":[{"Id":"a","ReceiptHandle":"$H","VisibilityTimeout":1}]}`,
			"ChangeMessageVisibilityBatchRequestEntry.1.Id=a&ChangeMessageVisibilityBatchRequestEntry.1.ReceiptHandle=$H&ChangeMessageVisibilityBatchRequestEntry.1.VisibilityTimeout=1"},
		{"TagQueue", `{"Tags":{"k":"v"}}`, "Tag.1.Key=k&Tag.1.Value=v"},
		{"TagQueue", `{"QueueUrl":"$Q"}`, "QueueUrl=$Q"},
		{"UntagQueue", `{"TagKeys":["k"]}`, "TagKey.1=k"},
		{"UntagQueue", `{"QueueUrl":"$Q"}`, "QueueUrl=$Q"},
		{"ListQueueTags", `{}`, ""},
		{"ListDeadLetterSourceQueues", `{}`, ""},
		{"AddPermission", `{"Label":"l","AWSAccountIds":["000000000000"],"Actions":["SendMessage"]}`, "Label=l&AWSAccountId.1=000000000000&ActionName.1=SendMessage"},
		{"AddPermission", `{"QueueUrl":"$Q","AWSAccountIds":["000000000000"],"Actions":["SendMessage"]}`, "QueueUrl=$Q&AWSAccountId.1=000000000000&ActionName.1=SendMessage"},
		{"AddPermission", `{"QueueUrl":"$Q","Label":"l","Actions":["SendMessage"]}`, "QueueUrl=$Q&Label=l&ActionName.1=SendMessage"},
		{"AddPermission", `{"QueueUrl":"$Q","Label":"l","AWSAccountIds":["000000000000"]}`, "QueueUrl=$Q&Label=l&AWSAccountId.1=000000000000"},
		{"RemovePermission", `{"Label":"l"}`, "Label=l"},
		{"RemovePermission", `{"QueueUrl":"$Q"}`, "QueueUrl=$Q"},
		{"StartMessageMoveTask", `{}`, ""},
		{"CancelMessageMoveTask", `{}`, ""},
		{"ListMessageMoveTasks", `{}`, ""},
	}
	for i, m := range missing {
		add(both(fmt.Sprintf("missing %s #%d", m.op, i), m.op, m.json, m.form, 400, cMissing)...)
	}
	add(both("missing MessageGroupId on FIFO", "SendMessage",
		`{"QueueUrl":"$F","MessageBody":"x","MessageDeduplicationId":"d"}`,
		"QueueUrl=$F&MessageBody=x&MessageDeduplicationId=d", 400, cMissing)...)

	// Repeated Query parameters: the first value is the one used.
	add(
		queryBad("repeated MaxNumberOfMessages, bad first", "Action=ReceiveMessage&QueueUrl=$Q&MaxNumberOfMessages=11&MaxNumberOfMessages=1", 400, cInvalid),
		queryBad("repeated QueueUrl, missing first", "Action=SendMessage&QueueUrl=http://127.0.0.1/000000000000/nope&QueueUrl=$Q&MessageBody=x", 400, cNoQueue),
		queryBad("repeated QueueName, bad first", "Action=CreateQueue&QueueName=bad%20name&QueueName=good", 400, cInvalid),
		queryBad("repeated MessageBody, empty first", "Action=SendMessage&QueueUrl=$Q&MessageBody=&MessageBody=x", 400, cMissing),
		queryBad("repeated entry id", "Action=DeleteMessageBatch&QueueUrl=$Q&DeleteMessageBatchRequestEntry.1.Id=a&DeleteMessageBatchRequestEntry.1.Id=b&DeleteMessageBatchRequestEntry.1.ReceiptHandle=$H&DeleteMessageBatchRequestEntry.2.Id=a&DeleteMessageBatchRequestEntry.2.ReceiptHandle=$H", 400, cDupIDs),
		queryBad("malformed percent escape", "Action=SendMessage&QueueUrl=$Q&MessageBody=%zz", 400, cInvalid),
		queryBad("non-number int", "Action=ReceiveMessage&QueueUrl=$Q&MaxNumberOfMessages=five", 400, cInvalid),
		queryBad("float int", "Action=ReceiveMessage&QueueUrl=$Q&WaitTimeSeconds=1.5", 400, cInvalid),
		queryBad("bad base64 binary", "Action=SendMessage&QueueUrl=$Q&MessageBody=x&MessageAttribute.1.Name=b&MessageAttribute.1.Value.DataType=Binary&MessageAttribute.1.Value.BinaryValue=%21%21%21", 400, cInvalid),
	)

	// Bodies: invalid UTF-8 and characters SQS forbids (§4.4).
	add(
		jsonBad("invalid UTF-8 body", "SendMessage", "{\"QueueUrl\":\"$Q\",\"MessageBody\":\"a\xffb\"}", 400, cSerial),
		jsonBad("invalid UTF-8 member name", "SendMessage", "{\"QueueUrl\":\"$Q\",\"MessageBody\":\"x\",\"\xc3\":1}", 400, cSerial),
		queryBad("invalid UTF-8 body", "Action=SendMessage&QueueUrl=$Q&MessageBody=a%FFb", 400, cContents),
		queryBad("truncated UTF-8 body", "Action=SendMessage&QueueUrl=$Q&MessageBody=%E2%82", 400, cContents),
		queryBad("surrogate in body", "Action=SendMessage&QueueUrl=$Q&MessageBody=%ED%A0%80", 400, cContents),
		queryBad("U+FFFF in body", "Action=SendMessage&QueueUrl=$Q&MessageBody=%EF%BF%BF", 400, cContents),
		// An unpaired surrogate escape is refused as the character it is, not
		// taken as U+FFFD; in a request the fast decoder leaves to
		// encoding/json (an unknown member here) it cannot be kept.
		jsonBad("unpaired high surrogate in body", "SendMessage", `{"QueueUrl":"$Q","MessageBody":"a\ud800b"}`, 400, cContents),
		jsonBad("unpaired low surrogate in body", "SendMessage", `{"QueueUrl":"$Q","MessageBody":"\udc00"}`, 400, cContents),
		jsonBad("surrogates out of order in body", "SendMessage", `{"QueueUrl":"$Q","MessageBody":"\ude00\ud83d"}`, 400, cContents),
		jsonBad("unpaired surrogate in attribute", "SendMessage",
			`{"QueueUrl":"$Q","MessageBody":"x","MessageAttributes":{"a":{"DataType":"String","StringValue":"\ud800"}}}`, 400, cInvalid),
		jsonBad("unpaired surrogate, unknown member", "SendMessage", `{"QueueUrl":"$Q","MessageBody":"\ud800","Bogus":1}`, 400, cSerial),
	)
	for _, ch := range []struct{ name, json, form string }{
		{"NUL", `\u0000`, "%00"},
		{"U+0001", `\u0001`, "%01"},
		{"U+0008", `\b`, "%08"},
		{"U+000B", `\u000b`, "%0B"},
		{"U+001F", `\u001f`, "%1F"},
		{"U+FFFE", `\ufffe`, "%EF%BF%BE"},
	} {
		add(both(ch.name+" in body", "SendMessage",
			`{"QueueUrl":"$Q","MessageBody":"a`+ch.json+`"}`, "QueueUrl=$Q&MessageBody=a"+ch.form, 400, cContents)...)
	}
	add(both("NUL in attribute value", "SendMessage",
		`{"QueueUrl":"$Q","MessageBody":"x","MessageAttributes":{"a":{"DataType":"String","StringValue":"\u0000"}}}`,
		"QueueUrl=$Q&MessageBody=x&MessageAttribute.1.Name=a&MessageAttribute.1.Value.DataType=String&MessageAttribute.1.Value.StringValue=%00",
		400, cInvalid)...)
	add(both("U+FFFF in attribute value", "SendMessage",
		`{"QueueUrl":"$Q","MessageBody":"x","MessageAttributes":{"a":{"DataType":"String","StringValue":"\uffff"}}}`,
		"QueueUrl=$Q&MessageBody=x&MessageAttribute.1.Name=a&MessageAttribute.1.Value.DataType=String&MessageAttribute.1.Value.StringValue=%EF%BF%BF",
		400, cInvalid)...)
	add(queryBad("invalid UTF-8 attribute value",
		"Action=SendMessage&QueueUrl=$Q&MessageBody=x&MessageAttribute.1.Name=a&MessageAttribute.1.Value.DataType=String&MessageAttribute.1.Value.StringValue=%FF",
		400, cInvalid))

	// Receipt handles: garbled, forged and foreign.
	for _, h := range []struct{ name, handle string }{
		{"short", "abc"},
		{"one char short", handle[:len(handle)-1]},
		{"one char long", handle + "A"},
		{"bad base64", strings.Repeat("!", len(handle))},
		{"std base64 alphabet", strings.Repeat("+", len(handle))},
		{"wrong MAC", forged},
		{"other queue", otherHandle},
	} {
		add(both("handle "+h.name+" on DeleteMessage", "DeleteMessage",
			`{"QueueUrl":"$Q","ReceiptHandle":"`+h.handle+`"}`, "QueueUrl=$Q&ReceiptHandle="+h.handle, 404, cHandle)...)
	}
	add(both("wrong MAC on ChangeMessageVisibility", "ChangeMessageVisibility",
		`{"QueueUrl":"$Q","ReceiptHandle":"$M","VisibilityTimeout":5}`, "QueueUrl=$Q&ReceiptHandle=$M&VisibilityTimeout=5", 404, cHandle)...)
	add(both("other queue on ChangeMessageVisibility", "ChangeMessageVisibility",
		`{"QueueUrl":"$Q","ReceiptHandle":"$X","VisibilityTimeout":5}`, "QueueUrl=$Q&ReceiptHandle=$X&VisibilityTimeout=5", 404, cHandle)...)

	// Batch entry ids and counts.
	sendEntries := func(ids ...string) (string, string) {
		var js []string
		var form []string
		for i, id := range ids {
			js = append(js, `{"Id":"`+id+`","MessageBody":"x"}`)
			form = append(form, fmt.Sprintf("SendMessageBatchRequestEntry.%d.Id=%s&SendMessageBatchRequestEntry.%d.MessageBody=x", i+1, id, i+1))
		}
		return `{"QueueUrl":"$Q","Entries":[` + strings.Join(js, ",") + `]}`, "QueueUrl=$Q&" + strings.Join(form, "&")
	}
	for _, b := range []struct {
		name string
		ids  []string
		code string
	}{
		{"empty id", []string{""}, cBatchID},
		{"id of 81 chars", []string{strings.Repeat("a", 81)}, cBatchID},
		{"id with dot", []string{"a.b"}, cBatchID},
		{"id with space", []string{"a%20b"}, cBatchID},
		{"id with slash", []string{"a/b"}, cBatchID},
		{"duplicate ids", []string{"a", "b", "a"}, cDupIDs},
		{"11 entries", strings.Split("a b c d e f g h i j k", " "), cTooMany},
	} {
		js, form := sendEntries(b.ids...)
		if b.name == "id with space" {
			js = strings.Replace(js, "a%20b", "a b", 1)
		}
		add(both("SendMessageBatch "+b.name, "SendMessageBatch", js, form, 400, b.code)...)
	}
	add(
		jsonBad("SendMessageBatch 0 entries", "SendMessageBatch", `{"QueueUrl":"$Q","Entries":[]}`, 400, cEmpty),
		jsonBad("DeleteMessageBatch 0 entries", "DeleteMessageBatch", `{"QueueUrl":"$Q","Entries":[]}`, 400, cEmpty),
		jsonBad("ChangeMessageVisibilityBatch 0 entries", "ChangeMessageVisibilityBatch", `{"QueueUrl":"$Q","Entries":[]}`, 400, cEmpty),
	)
	add(both("DeleteMessageBatch 11 entries", "DeleteMessageBatch",
		`{"QueueUrl":"$Q","Entries":[`+repeat(11, ",", func(i int) string { return fmt.Sprintf(`{"Id":"e%d","ReceiptHandle":"$H"}`, i) })+`]}`,
		"QueueUrl=$Q&"+repeat(11, "&", func(i int) string {
			return fmt.Sprintf("DeleteMessageBatchRequestEntry.%d.Id=e%d&DeleteMessageBatchRequestEntry.%d.ReceiptHandle=$H", i, i, i)
		}), 400, cTooMany)...)
	add(both("ChangeMessageVisibilityBatch duplicate ids", "ChangeMessageVisibilityBatch",
		`{"QueueUrl":"$Q","Entries":[{"Id":"a","ReceiptHandle":"$H","VisibilityTimeout":1},{"Id":"a","ReceiptHandle":"$H","VisibilityTimeout":1}]}`,
		"QueueUrl=$Q&"+repeat(2, "&", func(i int) string {
			return fmt.Sprintf("ChangeMessageVisibilityBatchRequestEntry.%d.Id=a&ChangeMessageVisibilityBatchRequestEntry.%d.ReceiptHandle=$H&ChangeMessageVisibilityBatchRequestEntry.%d.VisibilityTimeout=1", i, i, i)
		}), 400, cDupIDs)...)

	// Message attribute names, types and values.
	attr := func(name, dataType, value string) (string, string) {
		js := `{"QueueUrl":"$Q","MessageBody":"x","MessageAttributes":{"` + name + `":{"DataType":"` + dataType + `","StringValue":"` + value + `"}}}`
		form := "QueueUrl=$Q&MessageBody=x&MessageAttribute.1.Name=" + name +
			"&MessageAttribute.1.Value.DataType=" + dataType + "&MessageAttribute.1.Value.StringValue=" + value
		return js, form
	}
	for _, a := range []struct{ name, attr, dataType, value string }{
		{"reserved prefix AWS.", "AWS.x", "String", "v"},
		{"reserved prefix amazon.", "amazon.x", "String", "v"},
		{"reserved prefix Amazon.", "Amazon.x", "String", "v"},
		{"leading dot", ".a", "String", "v"},
		{"trailing dot", "a.", "String", "v"},
		{"consecutive dots", "a..b", "String", "v"},
		{"name of 257 chars", strings.Repeat("n", 257), "String", "v"},
		{"name with space", "a b", "String", "v"},
		{"empty data type", "a", "", "v"},
		{"unknown data type", "a", "Integer", "v"},
		{"lower-case data type", "a", "string", "v"},
		{"empty string value", "a", "String", ""},
		{"number not a number", "a", "Number", "abc"},
		{"empty number value", "a", "Number", ""},
	} {
		js, form := attr(a.attr, a.dataType, a.value)
		if a.name == "name with space" {
			form = strings.Replace(form, "a b", "a%20b", 1)
		}
		add(both("attribute "+a.name, "SendMessage", js, form, 400, cInvalid)...)
	}
	add(both("11 attributes", "SendMessage",
		`{"QueueUrl":"$Q","MessageBody":"x","MessageAttributes":{`+repeat(11, ",", func(i int) string {
			return fmt.Sprintf(`"a%d":{"DataType":"String","StringValue":"v"}`, i)
		})+`}}`,
		"QueueUrl=$Q&MessageBody=x&"+repeat(11, "&", func(i int) string {
			return fmt.Sprintf("MessageAttribute.%d.Name=a%d&MessageAttribute.%d.Value.DataType=String&MessageAttribute.%d.Value.StringValue=v", i, i, i, i)
		}), 400, cInvalid)...)
	add(both("binary attribute without value", "SendMessage",
		`{"QueueUrl":"$Q","MessageBody":"x","MessageAttributes":{"b":{"DataType":"Binary"}}}`,
		"QueueUrl=$Q&MessageBody=x&MessageAttribute.1.Name=b&MessageAttribute.1.Value.DataType=Binary", 400, cInvalid)...)

	// Queue names and queue attributes.
	for _, n := range []struct{ name, queue string }{
		{"empty-ish space", "a b"},
		{"81 chars", strings.Repeat("q", 81)},
		{"dot", "a.b"},
		{"slash", "a/b"},
		{"fifo suffix on standard", "a.fifo"},
	} {
		form := "QueueName=" + strings.ReplaceAll(n.queue, " ", "%20")
		add(both("CreateQueue name "+n.name, "CreateQueue", `{"QueueName":"`+n.queue+`"}`, form, 400, cInvalid)...)
	}
	add(both("CreateQueue unknown attribute", "CreateQueue", `{"QueueName":"qa","Attributes":{"Colour":"red"}}`,
		"QueueName=qa&Attribute.1.Name=Colour&Attribute.1.Value=red", 400, cAttrName)...)
	add(both("CreateQueue FifoQueue on standard", "CreateQueue", `{"QueueName":"qb","Attributes":{"FifoQueue":"false"}}`,
		"QueueName=qb&Attribute.1.Name=FifoQueue&Attribute.1.Value=false", 400, cAttrName)...)
	add(both("SetQueueAttributes bad VisibilityTimeout", "SetQueueAttributes", `{"QueueUrl":"$Q","Attributes":{"VisibilityTimeout":"43201"}}`,
		"QueueUrl=$Q&Attribute.1.Name=VisibilityTimeout&Attribute.1.Value=43201", 400, cAttrValue)...)
	add(both("SetQueueAttributes non-number DelaySeconds", "SetQueueAttributes", `{"QueueUrl":"$Q","Attributes":{"DelaySeconds":"soon"}}`,
		"QueueUrl=$Q&Attribute.1.Name=DelaySeconds&Attribute.1.Value=soon", 400, cAttrValue)...)
	add(both("SetQueueAttributes read-only", "SetQueueAttributes", `{"QueueUrl":"$Q","Attributes":{"QueueArn":"x"}}`,
		"QueueUrl=$Q&Attribute.1.Name=QueueArn&Attribute.1.Value=x", 400, cAttrName)...)
	add(both("GetQueueAttributes unknown name", "GetQueueAttributes", `{"QueueUrl":"$Q","AttributeNames":["Colour"]}`,
		"QueueUrl=$Q&AttributeName.1=Colour", 400, cAttrName)...)
	add(both("unknown queue", "SendMessage", `{"QueueUrl":"http://127.0.0.1/000000000000/nope","MessageBody":"x"}`,
		"QueueUrl=http://127.0.0.1/000000000000/nope&MessageBody=x", 400, cNoQueue)...)
	add(both("malformed queue URL", "SendMessage", `{"QueueUrl":"http://127.0.0.1/a/b/c","MessageBody":"x"}`,
		"QueueUrl=http://127.0.0.1/a/b/c&MessageBody=x", 404, "InvalidAddress")...)

	// Out-of-range numbers.
	for _, r := range []struct{ name, op, member, value, extra, extraForm string }{
		{"MaxNumberOfMessages 0", "ReceiveMessage", "MaxNumberOfMessages", "0", "", ""},
		{"MaxNumberOfMessages 11", "ReceiveMessage", "MaxNumberOfMessages", "11", "", ""},
		{"MaxNumberOfMessages -1", "ReceiveMessage", "MaxNumberOfMessages", "-1", "", ""},
		{"WaitTimeSeconds 21", "ReceiveMessage", "WaitTimeSeconds", "21", "", ""},
		{"WaitTimeSeconds -1", "ReceiveMessage", "WaitTimeSeconds", "-1", "", ""},
		{"VisibilityTimeout 43201 on receive", "ReceiveMessage", "VisibilityTimeout", "43201", "", ""},
		{"VisibilityTimeout -1 on receive", "ReceiveMessage", "VisibilityTimeout", "-1", "", ""},
		{"VisibilityTimeout 43201 on change", "ChangeMessageVisibility", "VisibilityTimeout", "43201", `,"ReceiptHandle":"$H"`, "&ReceiptHandle=$H"},
		{"VisibilityTimeout -1 on change", "ChangeMessageVisibility", "VisibilityTimeout", "-1", `,"ReceiptHandle":"$H"`, "&ReceiptHandle=$H"},
		{"DelaySeconds 901", "SendMessage", "DelaySeconds", "901", `,"MessageBody":"x"`, "&MessageBody=x"},
		{"DelaySeconds -1", "SendMessage", "DelaySeconds", "-1", `,"MessageBody":"x"`, "&MessageBody=x"},
		{"MaxResults 0", "ListQueues", "MaxResults", "0", "", ""},
		{"MaxResults 1001", "ListQueues", "MaxResults", "1001", "", ""},
		{"MaxResults 0 on dead-letter sources", "ListDeadLetterSourceQueues", "MaxResults", "0", "", ""},
	} {
		add(both(r.name, r.op, `{"QueueUrl":"$Q","`+r.member+`":`+r.value+r.extra+`}`,
			"QueueUrl=$Q&"+r.member+"="+r.value+r.extraForm, 400, cInvalid)...)
	}
	add(both("FIFO per-message DelaySeconds", "SendMessage",
		`{"QueueUrl":"$F","MessageBody":"x","MessageGroupId":"g","MessageDeduplicationId":"d","DelaySeconds":5}`,
		"QueueUrl=$F&MessageBody=x&MessageGroupId=g&MessageDeduplicationId=d&DelaySeconds=5", 400, cInvalid)...)

	// An oversize body (over maxBodyBytes, 4 MiB + 64 KiB) is HTTP 413, as
	// AWS answers a request body larger than it reads.
	big := strings.Repeat("a", 4<<20+64<<10+1)
	add(
		badRequest{name: "json/oversize body", ctype: jsonType, target: "AmazonSQS.SendMessage", body: big, status: 413, code: "RequestEntityTooLarge"},
		badRequest{name: "query/oversize body", ctype: formType, body: "Action=SendMessage&QueueUrl=$Q&MessageBody=" + big, status: 413, code: "RequestEntityTooLarge"},
	)

	// Crossed protocols. X-Amz-Target with the JSON content type selects
	// JSON, so a form body with them fails to parse as JSON; without the
	// target the request is Query, and a JSON body is no form: there is no
	// Action. (X-Amz-Target with another content type is answered
	// <UnknownOperationException/>: TestJSONContentTypeRequired.)
	add(
		badRequest{name: "json/form body, JSON content type", ctype: jsonType, target: "AmazonSQS.SendMessage",
			body: "QueueUrl=$Q&MessageBody=x", status: 400, code: cSerial},
		badRequest{name: "query/JSON body, form content type", ctype: formType,
			body: `{"QueueUrl":"$Q","MessageBody":"x"}`, status: 400, code: cAction},
		badRequest{name: "query/JSON body, JSON content type, no target", ctype: jsonType,
			body: `{"QueueUrl":"$Q","MessageBody":"x"}`, status: 400, code: cAction},
	)

	if len(cases) < 100 {
		t.Fatalf("catalogue has %d cases, want at least 100", len(cases))
	}
	t.Logf("%d malformed requests", len(cases))
	seen := make(map[string]bool)
	for _, bc := range cases {
		if seen[bc.name] {
			t.Fatalf("duplicate case name %q", bc.name)
		}
		seen[bc.name] = true
		bc.body = subst.Replace(bc.body)
		t.Run(bc.name, func(t *testing.T) {
			checkBadRequest(t, c.srv.URL, bc)
		})
	}
}

// checkBadRequest sends one malformed request and checks its error.
func checkBadRequest(t *testing.T, baseURL string, bc badRequest) {
	t.Helper()
	method, path := bc.method, bc.path
	if method == "" {
		method = http.MethodPost
	}
	if path == "" {
		path = "/"
	}
	var body io.Reader
	if method != http.MethodGet {
		body = strings.NewReader(bc.body)
	}
	req, err := http.NewRequest(method, baseURL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if bc.ctype != "" {
		req.Header.Set("Content-Type", bc.ctype)
	}
	if bc.target != "" {
		req.Header.Set("X-Amz-Target", bc.target)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("connection failed: %v", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	if resp.StatusCode >= 500 {
		t.Fatalf("HTTP %d, a server fault: %s", resp.StatusCode, raw)
	}
	if resp.StatusCode != bc.status {
		t.Errorf("HTTP %d, want %d: %s", resp.StatusCode, bc.status, raw)
	}
	if got, want := resp.Header.Get("x-amzn-query-error"), bc.code+";Sender"; got != want {
		t.Errorf("x-amzn-query-error = %q, want %q", got, want)
	}
	if resp.Header.Get("x-amzn-RequestId") == "" {
		t.Errorf("no x-amzn-RequestId header")
	}
	if bc.target != "" {
		var e struct {
			Type    string `json:"__type"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal(raw, &e); err != nil {
			t.Fatalf("error body is not JSON: %q", raw)
		}
		want, ok := badShapes[bc.code]
		if !ok {
			t.Fatalf("no JSON shape known for %s", bc.code)
		}
		if e.Type != want {
			t.Errorf("__type = %q, want %q (message %q)", e.Type, want, e.Message)
		}
		if e.Message == "" {
			t.Errorf("empty message")
		}
		if got := resp.Header.Get("Content-Type"); got != jsonType {
			t.Errorf("Content-Type = %q, want %s", got, jsonType)
		}
		return
	}
	var x struct {
		XMLName xml.Name
		Error   struct {
			Type    string
			Code    string
			Message string
		}
		RequestID string `xml:"RequestId"`
	}
	if err := xml.Unmarshal(raw, &x); err != nil {
		t.Fatalf("error body is not XML: %q", raw)
	}
	if x.XMLName != (xml.Name{Space: queryNS, Local: "ErrorResponse"}) {
		t.Errorf("root = %v, want ErrorResponse", x.XMLName)
	}
	if x.Error.Code != bc.code || x.Error.Type != "Sender" || x.Error.Message == "" {
		t.Errorf("Error Code, Type, Message = %q, %q, %q; want %q, Sender, non-empty", x.Error.Code, x.Error.Type, x.Error.Message, bc.code)
	}
	if x.RequestID != resp.Header.Get("x-amzn-RequestId") {
		t.Errorf("RequestId = %q, want the header's %q", x.RequestID, resp.Header.Get("x-amzn-RequestId"))
	}
}
