package server_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/testutil"
)

// These tests drive every action of server/operations.go through the Query
// protocol (docs/sqs-behaviour.md §1.3): SigV4-signed form POSTs and GET query
// strings, answered with namespaced XML.

const queryNS = "http://queue.amazonaws.com/doc/2012-11-05/"

// queryActions are the actions server/operations.go serves.
var queryActions = []string{
	"CreateQueue", "DeleteQueue", "GetQueueUrl", "ListQueues",
	"GetQueueAttributes", "SetQueueAttributes", "PurgeQueue",
	"SendMessage", "SendMessageBatch", "ReceiveMessage",
	"DeleteMessage", "DeleteMessageBatch",
	"ChangeMessageVisibility", "ChangeMessageVisibilityBatch",
	"TagQueue", "UntagQueue", "ListQueueTags",
	"ListDeadLetterSourceQueues", "StartMessageMoveTask", "CancelMessageMoveTask",
	"ListMessageMoveTasks", "AddPermission", "RemovePermission",
}

var queryUUIDRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// xmlNode is any XML element: enough to check a response's exact shape.
type xmlNode struct {
	XMLName  xml.Name
	Attrs    []xml.Attr `xml:",any,attr"`
	Text     string     `xml:",chardata"`
	Children []*xmlNode `xml:",any"`
}

// names returns the names of n's child elements, sorted.
func (n *xmlNode) names() []string {
	out := make([]string, len(n.Children))
	for i, c := range n.Children {
		out[i] = c.XMLName.Local
	}
	slices.Sort(out)
	return out
}

// all returns n's children named name, in document order.
func (n *xmlNode) all(name string) []*xmlNode {
	var out []*xmlNode
	for _, c := range n.Children {
		if c.XMLName.Local == name {
			out = append(out, c)
		}
	}
	return out
}

// child returns the one child named name.
func (n *xmlNode) child(tb testing.TB, name string) *xmlNode {
	tb.Helper()
	cs := n.all(name)
	if len(cs) != 1 {
		tb.Fatalf("<%s> has %d <%s> children, want 1 (children %v)", n.XMLName.Local, len(cs), name, n.names())
	}
	return cs[0]
}

// leaves returns n's children as name -> text; each must be a leaf and
// appear once.
func (n *xmlNode) leaves(tb testing.TB) map[string]string {
	tb.Helper()
	out := make(map[string]string, len(n.Children))
	for _, c := range n.Children {
		name := c.XMLName.Local
		if len(c.Children) > 0 {
			tb.Fatalf("<%s> in <%s> has children %v, want a leaf", name, n.XMLName.Local, c.names())
		}
		if _, dup := out[name]; dup {
			tb.Fatalf("<%s> appears twice in <%s>", name, n.XMLName.Local)
		}
		out[name] = c.Text
	}
	return out
}

// checkXMLNames fails unless n's children are exactly want, in any order.
func checkXMLNames(tb testing.TB, n *xmlNode, want ...string) {
	tb.Helper()
	want = slices.Clone(want)
	slices.Sort(want)
	if got := n.names(); !slices.Equal(got, want) {
		tb.Fatalf("<%s> children = %v, want %v", n.XMLName.Local, got, want)
	}
}

// xmlPairs reads flattened <elem><key/><val/></elem> children of n, such as
// <Attribute><Name/><Value/></Attribute>, into a map.
func xmlPairs(tb testing.TB, n *xmlNode, elem, key, val string) map[string]string {
	tb.Helper()
	out := make(map[string]string)
	for _, e := range n.all(elem) {
		checkXMLNames(tb, e, key, val)
		f := e.leaves(tb)
		if _, dup := out[f[key]]; dup {
			tb.Fatalf("<%s> %s %q appears twice", elem, key, f[key])
		}
		out[f[key]] = f[val]
	}
	return out
}

// queryResponse is one HTTP response of the server.
type queryResponse struct {
	status int
	header http.Header
	body   []byte
	root   *xmlNode
}

func (r *queryResponse) String() string {
	return fmt.Sprintf("HTTP %d %s", r.status, r.body)
}

// result checks a success response of action with result members and
// returns its <ActionResult> element.
func (r *queryResponse) result(tb testing.TB, action string) *xmlNode {
	tb.Helper()
	r.checkSuccess(tb, action, action+"Result", "ResponseMetadata")
	return r.root.child(tb, action+"Result")
}

// noResult checks a success response of an action without output: no
// <ActionResult> element at all.
func (r *queryResponse) noResult(tb testing.TB, action string) {
	tb.Helper()
	r.checkSuccess(tb, action, "ResponseMetadata")
}

func (r *queryResponse) checkSuccess(tb testing.TB, action string, children ...string) {
	tb.Helper()
	if r.status != http.StatusOK {
		tb.Fatalf("%s: got %v, want HTTP 200", action, r)
	}
	if got := r.header.Get("Content-Type"); got != "text/xml" {
		tb.Errorf("%s: Content-Type = %q, want text/xml", action, got)
	}
	if !bytes.HasPrefix(r.body, []byte(`<?xml version="1.0"?>`)) {
		tb.Errorf("%s: body does not start with an XML declaration: %s", action, r.body)
	}
	if r.root == nil {
		tb.Fatalf("%s: body is not XML: %s", action, r.body)
	}
	if want := (xml.Name{Space: queryNS, Local: action + "Response"}); r.root.XMLName != want {
		tb.Fatalf("%s: root element = %v, want %v", action, r.root.XMLName, want)
	}
	checkXMLNames(tb, r.root, children...)
	md := r.root.child(tb, "ResponseMetadata")
	checkXMLNames(tb, md, "RequestId")
	if got, want := md.leaves(tb)["RequestId"], r.header.Get("x-amzn-RequestId"); got != want || !queryUUIDRE.MatchString(got) {
		tb.Errorf("%s: RequestId = %q, want the x-amzn-RequestId header %q (a UUID)", action, got, want)
	}
}

// fail checks an error response and returns its message.
func (r *queryResponse) fail(tb testing.TB, status int, code string) string {
	tb.Helper()
	if r.status != status {
		tb.Fatalf("got %v, want HTTP %d %s", r, status, code)
	}
	if got, want := r.header.Get("x-amzn-query-error"), code+";Sender"; got != want {
		tb.Errorf("x-amzn-query-error = %q, want %q", got, want)
	}
	if got := r.header.Get("Content-Type"); got != "text/xml" {
		tb.Errorf("Content-Type = %q, want text/xml", got)
	}
	if r.root == nil {
		tb.Fatalf("error body is not XML: %s", r.body)
	}
	if want := (xml.Name{Space: queryNS, Local: "ErrorResponse"}); r.root.XMLName != want {
		tb.Fatalf("root element = %v, want %v", r.root.XMLName, want)
	}
	checkXMLNames(tb, r.root, "Error", "RequestId")
	e := r.root.child(tb, "Error")
	checkXMLNames(tb, e, "Type", "Code", "Message", "Detail")
	f := e.leaves(tb)
	if f["Type"] != "Sender" || f["Code"] != code || f["Detail"] != "" {
		tb.Errorf("Error Type, Code, Detail = %q, %q, %q; want Sender, %q, empty", f["Type"], f["Code"], f["Detail"], code)
	}
	if got, want := r.root.child(tb, "RequestId").Text, r.header.Get("x-amzn-RequestId"); got != want || got == "" {
		tb.Errorf("RequestId = %q, want the x-amzn-RequestId header %q", got, want)
	}
	return f["Message"]
}

// failWith checks an error response including its exact message.
func (r *queryResponse) failWith(tb testing.TB, status int, code, message string) {
	tb.Helper()
	if got := r.fail(tb, status, code); got != message {
		tb.Errorf("Message = %q, want %q", got, message)
	}
}

// queryClient sends signed Query requests to one test server.
type queryClient struct {
	tb  testing.TB
	srv *testutil.Server
}

func newQueryClient(tb testing.TB) queryClient {
	tb.Helper()
	return queryClient{tb: tb, srv: testutil.StartServer(tb)}
}

// queryForm builds parameters from name, value pairs.
func queryForm(kv ...string) url.Values {
	if len(kv)%2 != 0 {
		panic("form: odd number of arguments")
	}
	v := url.Values{}
	for i := 0; i < len(kv); i += 2 {
		v.Add(kv[i], kv[i+1])
	}
	return v
}

// post sends the parameters as a signed form POST to path.
func (c queryClient) post(path string, kv ...string) *queryResponse {
	c.tb.Helper()
	return c.do(http.MethodPost, path, queryForm(kv...))
}

// get sends the parameters as a signed GET query string to path.
func (c queryClient) get(path string, kv ...string) *queryResponse {
	c.tb.Helper()
	return c.do(http.MethodGet, path, queryForm(kv...))
}

func (c queryClient) do(method, path string, params url.Values) *queryResponse {
	c.tb.Helper()
	encoded := params.Encode()
	target := c.srv.URL + path
	var body io.Reader
	payload := ""
	if method == http.MethodGet {
		if encoded != "" {
			target += "?" + encoded
		}
	} else {
		payload = encoded
		body = strings.NewReader(payload)
	}
	req, err := http.NewRequest(method, target, body)
	if err != nil {
		c.tb.Fatal(err)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	}
	sum := sha256.Sum256([]byte(payload))
	creds := aws.Credentials{AccessKeyID: "AKIDTEST", SecretAccessKey: "secret"}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hex.EncodeToString(sum[:]),
		"sqs", "us-east-1", c.srv.Clock.Now()); err != nil {
		c.tb.Fatalf("sign request: %v", err)
	}
	if !strings.HasPrefix(req.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=AKIDTEST/") {
		c.tb.Fatalf("request not signed: Authorization = %q", req.Header.Get("Authorization"))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.tb.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.tb.Fatalf("read response: %v", err)
	}
	r := &queryResponse{status: resp.StatusCode, header: resp.Header, body: b}
	if resp.Header.Get("x-amzn-RequestId") == "" {
		c.tb.Errorf("%s %s %s: no x-amzn-RequestId header", method, path, params.Get("Action"))
	}
	var root xmlNode
	if err := xml.Unmarshal(b, &root); err == nil {
		r.root = &root
	}
	return r
}

func queryQueuePath(name string) string { return "/" + testutil.Account + "/" + name }

func (c queryClient) queueURL(name string) string { return c.srv.URL + queryQueuePath(name) }

// createQueue creates a queue through the Query protocol and returns its URL.
func (c queryClient) createQueue(name string, kv ...string) string {
	c.tb.Helper()
	r := c.post("/", append([]string{"Action", "CreateQueue", "QueueName", name}, kv...)...)
	return r.result(c.tb, "CreateQueue").child(c.tb, "QueueUrl").Text
}

// send sends a message and returns its message id.
func (c queryClient) send(queueURL, body string, kv ...string) string {
	c.tb.Helper()
	r := c.post("/", append([]string{"Action", "SendMessage", "QueueUrl", queueURL, "MessageBody", body}, kv...)...)
	return r.result(c.tb, "SendMessage").child(c.tb, "MessageId").Text
}

// receive receives messages and returns the <Message> elements.
func (c queryClient) receive(queueURL string, kv ...string) []*xmlNode {
	c.tb.Helper()
	r := c.post("/", append([]string{"Action", "ReceiveMessage", "QueueUrl", queueURL}, kv...)...)
	return r.result(c.tb, "ReceiveMessage").all("Message")
}

// handle receives one message and returns its receipt handle.
func (c queryClient) handle(queueURL string, kv ...string) string {
	c.tb.Helper()
	msgs := c.receive(queueURL, kv...)
	if len(msgs) != 1 {
		c.tb.Fatalf("received %d messages, want 1", len(msgs))
	}
	return msgs[0].child(c.tb, "ReceiptHandle").Text
}

// attributes returns queue attributes through GetQueueAttributes.
func (c queryClient) attributes(queueURL string, names ...string) map[string]string {
	c.tb.Helper()
	kv := []string{"Action", "GetQueueAttributes", "QueueUrl", queueURL}
	for i, n := range names {
		kv = append(kv, "AttributeName."+strconv.Itoa(i+1), n)
	}
	return xmlPairs(c.tb, c.post("/", kv...).result(c.tb, "GetQueueAttributes"), "Attribute", "Name", "Value")
}

// counts returns the visible, in-flight and delayed message counts.
func (c queryClient) counts(queueURL string) [3]int {
	c.tb.Helper()
	a := c.attributes(queueURL, "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed")
	var out [3]int
	for i, n := range []string{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"} {
		v, err := strconv.Atoi(a[n])
		if err != nil {
			c.tb.Fatalf("%s = %q: %v", n, a[n], err)
		}
		out[i] = v
	}
	return out
}

func queryMD5(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// Every action is dispatched on the Query protocol: without parameters each
// asks for its first required one rather than failing as an unknown action.
func TestQueryEveryActionIsServed(t *testing.T) {
	t.Parallel()
	c := newQueryClient(t)
	for _, action := range queryActions {
		r := c.post("/", "Action", action)
		switch action {
		case "ListQueues":
			checkXMLNames(t, r.result(t, action))
		case "CreateQueue", "GetQueueUrl":
			r.failWith(t, 400, "MissingParameter", "The request must contain the parameter QueueName.")
		case "StartMessageMoveTask", "ListMessageMoveTasks":
			r.failWith(t, 400, "MissingParameter", "The request must contain the parameter SourceArn.")
		case "CancelMessageMoveTask":
			r.failWith(t, 400, "MissingParameter", "The request must contain the parameter TaskHandle.")
		default:
			r.failWith(t, 400, "MissingParameter", "The request must contain the parameter QueueUrl.")
		}
	}
}

func TestQueryCreateQueue(t *testing.T) {
	t.Parallel()
	c := newQueryClient(t)
	r := c.post("/", "Action", "CreateQueue", "Version", "2012-11-05", "QueueName", "orders",
		"Attribute.1.Name", "VisibilityTimeout", "Attribute.1.Value", "45",
		"Attribute.2.Name", "DelaySeconds", "Attribute.2.Value", "5",
		"Tag.1.Key", "team", "Tag.1.Value", "payments",
		"Tag.2.Key", "env", "Tag.2.Value", "")
	res := r.result(t, "CreateQueue")
	checkXMLNames(t, res, "QueueUrl")
	if got, want := res.child(t, "QueueUrl").Text, c.queueURL("orders"); got != want {
		t.Errorf("QueueUrl = %q, want %q", got, want)
	}

	got := c.attributes(c.queueURL("orders"), "VisibilityTimeout", "DelaySeconds")
	if want := map[string]string{"VisibilityTimeout": "45", "DelaySeconds": "5"}; !maps.Equal(got, want) {
		t.Errorf("attributes = %v, want %v", got, want)
	}
	tags := xmlPairs(t, c.post("/", "Action", "ListQueueTags", "QueueUrl", c.queueURL("orders")).result(t, "ListQueueTags"), "Tag", "Key", "Value")
	if want := map[string]string{"team": "payments", "env": ""}; !maps.Equal(tags, want) {
		t.Errorf("tags = %v, want %v", tags, want)
	}

	// The same name with equal supplied attributes, or none, returns the
	// existing queue.
	for _, kv := range [][]string{
		{"Attribute.1.Name", "VisibilityTimeout", "Attribute.1.Value", "45"},
		nil,
	} {
		if got, want := c.createQueue("orders", kv...), c.queueURL("orders"); got != want {
			t.Errorf("create again with %v: QueueUrl = %q, want %q", kv, got, want)
		}
	}
}

func TestQueryGetQueueURL(t *testing.T) {
	t.Parallel()
	c := newQueryClient(t)
	c.createQueue("invoices")
	for _, kv := range [][]string{
		{"QueueName", "invoices"},
		{"QueueName", "invoices", "QueueOwnerAWSAccountId", testutil.Account},
	} {
		res := c.post("/", append([]string{"Action", "GetQueueUrl"}, kv...)...).result(t, "GetQueueUrl")
		checkXMLNames(t, res, "QueueUrl")
		if got, want := res.child(t, "QueueUrl").Text, c.queueURL("invoices"); got != want {
			t.Errorf("%v: QueueUrl = %q, want %q", kv, got, want)
		}
	}
}

func TestQueryListQueues(t *testing.T) {
	t.Parallel()
	c := newQueryClient(t)
	for _, n := range []string{"b1", "a2", "a1"} {
		c.createQueue(n)
	}
	urls := func(res *xmlNode) []string {
		var out []string
		for _, u := range res.all("QueueUrl") {
			out = append(out, u.Text)
		}
		return out
	}

	res := c.post("/", "Action", "ListQueues").result(t, "ListQueues")
	checkXMLNames(t, res, "QueueUrl", "QueueUrl", "QueueUrl")
	if got, want := urls(res), []string{c.queueURL("a1"), c.queueURL("a2"), c.queueURL("b1")}; !slices.Equal(got, want) {
		t.Errorf("QueueUrls = %v, want %v", got, want)
	}

	res = c.post("/", "Action", "ListQueues", "QueueNamePrefix", "a").result(t, "ListQueues")
	if got, want := urls(res), []string{c.queueURL("a1"), c.queueURL("a2")}; !slices.Equal(got, want) {
		t.Errorf("prefix a: QueueUrls = %v, want %v", got, want)
	}

	res = c.post("/", "Action", "ListQueues", "QueueNamePrefix", "a", "MaxResults", "1").result(t, "ListQueues")
	checkXMLNames(t, res, "QueueUrl", "NextToken")
	if got, want := urls(res), []string{c.queueURL("a1")}; !slices.Equal(got, want) {
		t.Errorf("page 1: QueueUrls = %v, want %v", got, want)
	}
	token := res.child(t, "NextToken").Text
	res = c.post("/", "Action", "ListQueues", "QueueNamePrefix", "a", "MaxResults", "1", "NextToken", token).result(t, "ListQueues")
	checkXMLNames(t, res, "QueueUrl")
	if got, want := urls(res), []string{c.queueURL("a2")}; !slices.Equal(got, want) {
		t.Errorf("page 2: QueueUrls = %v, want %v", got, want)
	}

	// No match: an empty <ListQueuesResult/>.
	checkXMLNames(t, c.post("/", "Action", "ListQueues", "QueueNamePrefix", "zzz").result(t, "ListQueues"))
}

func TestQueryDeleteQueue(t *testing.T) {
	t.Parallel()
	c := newQueryClient(t)
	u := c.createQueue("doomed")
	c.send(u, "left behind")
	c.post("/", "Action", "DeleteQueue", "QueueUrl", u).noResult(t, "DeleteQueue")
	c.post("/", "Action", "GetQueueUrl", "QueueName", "doomed").
		failWith(t, 400, "AWS.SimpleQueueService.NonExistentQueue", "The specified queue does not exist for this wsdl version.")
}

func TestQueryGetQueueAttributes(t *testing.T) {
	t.Parallel()
	c := newQueryClient(t)
	u := c.createQueue("attrs")

	res := c.post("/", "Action", "GetQueueAttributes", "QueueUrl", u, "AttributeName.1", "All").result(t, "GetQueueAttributes")
	for _, a := range res.all("Attribute") {
		checkXMLNames(t, a, "Name", "Value")
	}
	got := xmlPairs(t, res, "Attribute", "Name", "Value")
	created := strconv.FormatInt(testutil.Epoch.Unix(), 10)
	want := map[string]string{
		"ApproximateNumberOfMessages":           "0",
		"ApproximateNumberOfMessagesNotVisible": "0",
		"ApproximateNumberOfMessagesDelayed":    "0",
		"CreatedTimestamp":                      created,
		"DelaySeconds":                          "0",
		"LastModifiedTimestamp":                 created,
		"MaximumMessageSize":                    "1048576",
		"MessageRetentionPeriod":                "345600",
		"QueueArn":                              "arn:aws:sqs:us-east-1:000000000000:attrs",
		"ReceiveMessageWaitTimeSeconds":         "0",
		"SqsManagedSseEnabled":                  "true",
		"VisibilityTimeout":                     "30",
	}
	if !maps.Equal(got, want) {
		t.Errorf("All attributes =\n%v\nwant\n%v", got, want)
	}

	// AttributeName.N selects; no names is an empty result.
	if got, want := c.attributes(u, "QueueArn", "VisibilityTimeout"), map[string]string{
		"QueueArn": "arn:aws:sqs:us-east-1:000000000000:attrs", "VisibilityTimeout": "30",
	}; !maps.Equal(got, want) {
		t.Errorf("selected attributes = %v, want %v", got, want)
	}
	checkXMLNames(t, c.post("/", "Action", "GetQueueAttributes", "QueueUrl", u).result(t, "GetQueueAttributes"))
}

func TestQuerySetQueueAttributes(t *testing.T) {
	t.Parallel()
	c := newQueryClient(t)
	u := c.createQueue("settable")
	c.srv.Clock.Advance(90 * time.Second)
	policy := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"sqs:SendMessage","Resource":"*"}]}`
	c.post("/", "Action", "SetQueueAttributes", "QueueUrl", u,
		"Attribute.1.Name", "VisibilityTimeout", "Attribute.1.Value", "60",
		"Attribute.2.Name", "Policy", "Attribute.2.Value", policy,
		"Attribute.3.Name", "ReceiveMessageWaitTimeSeconds", "Attribute.3.Value", "0",
	).noResult(t, "SetQueueAttributes")

	r := c.post("/", "Action", "GetQueueAttributes", "QueueUrl", u,
		"AttributeName.1", "VisibilityTimeout", "AttributeName.2", "Policy", "AttributeName.3", "LastModifiedTimestamp")
	got := xmlPairs(t, r.result(t, "GetQueueAttributes"), "Attribute", "Name", "Value")
	want := map[string]string{
		"VisibilityTimeout":     "60",
		"Policy":                policy,
		"LastModifiedTimestamp": strconv.FormatInt(testutil.Epoch.Add(90*time.Second).Unix(), 10),
	}
	if !maps.Equal(got, want) {
		t.Errorf("attributes = %v, want %v", got, want)
	}
	// SQS escapes quotes in text nodes (docs/sqs-behaviour.md §1.3).
	if !bytes.Contains(r.body, []byte(`{&quot;Version&quot;:&quot;2012-10-17&quot;`)) {
		t.Errorf("Policy not escaped with &quot; in %s", r.body)
	}

	// An empty Policy removes it.
	c.post("/", "Action", "SetQueueAttributes", "QueueUrl", u,
		"Attribute.1.Name", "Policy", "Attribute.1.Value", "").noResult(t, "SetQueueAttributes")
	if got := c.attributes(u, "Policy"); len(got) != 0 {
		t.Errorf("Policy after removal = %v, want none", got)
	}
}

func TestQueryPurgeQueue(t *testing.T) {
	t.Parallel()
	c := newQueryClient(t)
	u := c.createQueue("purgeable")
	c.send(u, "visible")
	c.send(u, "delayed", "DelaySeconds", "60")
	c.send(u, "in flight")
	c.handle(u)
	if got, want := c.counts(u), [3]int{1, 1, 1}; got != want {
		t.Fatalf("counts before purge = %v, want %v", got, want)
	}

	c.post("/", "Action", "PurgeQueue", "QueueUrl", u).noResult(t, "PurgeQueue")
	if got, want := c.counts(u), [3]int{0, 0, 0}; got != want {
		t.Errorf("counts after purge = %v, want %v", got, want)
	}

	c.srv.Clock.Advance(59 * time.Second)
	c.post("/", "Action", "PurgeQueue", "QueueUrl", u).failWith(t, 403, "AWS.SimpleQueueService.PurgeQueueInProgress",
		"Only one PurgeQueue operation on purgeable is allowed every 60 seconds.")
	c.srv.Clock.Advance(2 * time.Second)
	c.post("/", "Action", "PurgeQueue", "QueueUrl", u).noResult(t, "PurgeQueue")
}

// The attributes of docs/sqs-behaviour.md §4.3's worked example, flattened.
var queryExampleAttributes = []string{
	"MessageAttribute.1.Name", "ClientId",
	"MessageAttribute.1.Value.DataType", "String",
	"MessageAttribute.1.Value.StringValue", "c-42",
	"MessageAttribute.2.Name", "Retries",
	"MessageAttribute.2.Value.DataType", "Number.int",
	"MessageAttribute.2.Value.StringValue", "3",
	"MessageAttribute.3.Name", "Blob",
	"MessageAttribute.3.Value.DataType", "Binary",
	"MessageAttribute.3.Value.BinaryValue", "3q2+7w==",
}

const queryExampleTrace = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"

func TestQuerySendMessage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		kv   []string
		want map[string]string // result members other than MessageId
	}{
		{
			name: "body only",
			want: map[string]string{"MD5OfMessageBody": "982e00ffc10ba49378a8653ca8fecf47"},
		},
		{
			name: "message attributes",
			kv:   queryExampleAttributes,
			want: map[string]string{
				"MD5OfMessageBody":       "982e00ffc10ba49378a8653ca8fecf47",
				"MD5OfMessageAttributes": "489ec3752a0fbb1b289096f88629b322",
			},
		},
		{
			name: "system attribute",
			kv: []string{
				"MessageSystemAttribute.1.Name", "AWSTraceHeader",
				"MessageSystemAttribute.1.Value.DataType", "String",
				"MessageSystemAttribute.1.Value.StringValue", queryExampleTrace,
			},
			want: map[string]string{
				"MD5OfMessageBody":             "982e00ffc10ba49378a8653ca8fecf47",
				"MD5OfMessageSystemAttributes": "5ae4d5d7636402d80f4eb6d213245a88",
			},
		},
		{
			name: "delay and fair-queue group",
			kv:   []string{"DelaySeconds", "0", "MessageGroupId", "tenant-1"},
			want: map[string]string{"MD5OfMessageBody": "982e00ffc10ba49378a8653ca8fecf47"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newQueryClient(t)
			u := c.createQueue("q")
			r := c.post("/", append([]string{"Action", "SendMessage", "QueueUrl", u, "MessageBody", "Hello, SQS!"}, tt.kv...)...)
			got := r.result(t, "SendMessage").leaves(t)
			if !queryUUIDRE.MatchString(got["MessageId"]) {
				t.Errorf("MessageId = %q, want a UUID", got["MessageId"])
			}
			delete(got, "MessageId")
			if !maps.Equal(got, tt.want) {
				t.Errorf("result = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestQueryReceiveMessage(t *testing.T) {
	t.Parallel()
	c := newQueryClient(t)
	u := c.createQueue("inbox")
	body := "a \"quoted\" <tag> & 'apostrophe'\r\nsecond line ✓"
	id := c.send(u, body, queryExampleAttributes...)

	r := c.post("/", "Action", "ReceiveMessage", "QueueUrl", u,
		"AttributeName.1", "SentTimestamp", "AttributeName.2", "ApproximateReceiveCount",
		"MessageAttributeName.1", "ClientId", "MessageAttributeName.2", "Blob",
		"MaxNumberOfMessages", "10", "VisibilityTimeout", "30", "WaitTimeSeconds", "0")
	res := r.result(t, "ReceiveMessage")
	checkXMLNames(t, res, "Message")
	m := res.child(t, "Message")
	checkXMLNames(t, m, "MessageId", "ReceiptHandle", "MD5OfBody", "Body", "Attribute", "Attribute",
		"MD5OfMessageAttributes", "MessageAttribute", "MessageAttribute")
	if got := m.child(t, "MessageId").Text; got != id {
		t.Errorf("MessageId = %q, want %q", got, id)
	}
	if got := m.child(t, "Body").Text; got != body {
		t.Errorf("Body = %q, want %q", got, body)
	}
	if got, want := m.child(t, "MD5OfBody").Text, queryMD5(body); got != want {
		t.Errorf("MD5OfBody = %q, want %q", got, want)
	}
	if m.child(t, "ReceiptHandle").Text == "" {
		t.Error("empty ReceiptHandle")
	}
	// SQS escapes quotes and carriage returns (docs/sqs-behaviour.md §1.3).
	for _, esc := range []string{"&quot;quoted&quot;", "&lt;tag&gt; &amp;", "&#xD;"} {
		if !bytes.Contains(r.body, []byte(esc)) {
			t.Errorf("body lacks %s: %s", esc, r.body)
		}
	}

	sys := xmlPairs(t, m, "Attribute", "Name", "Value")
	if want := map[string]string{
		"SentTimestamp":           strconv.FormatInt(testutil.Epoch.UnixMilli(), 10),
		"ApproximateReceiveCount": "1",
	}; !maps.Equal(sys, want) {
		t.Errorf("system attributes = %v, want %v", sys, want)
	}

	// <MessageAttribute><Name/><Value><StringValue/><DataType/></Value>,
	// only the requested ones, digested as a subset.
	gotAttrs := map[string]map[string]string{}
	for _, a := range m.all("MessageAttribute") {
		checkXMLNames(t, a, "Name", "Value")
		gotAttrs[a.child(t, "Name").Text] = a.child(t, "Value").leaves(t)
	}
	wantAttrs := map[string]map[string]string{
		"ClientId": {"StringValue": "c-42", "DataType": "String"},
		"Blob":     {"BinaryValue": "3q2+7w==", "DataType": "Binary"},
	}
	if len(gotAttrs) != len(wantAttrs) {
		t.Errorf("message attributes = %v, want %v", gotAttrs, wantAttrs)
	}
	for name, want := range wantAttrs {
		if got := gotAttrs[name]; !maps.Equal(got, want) {
			t.Errorf("message attribute %s Value = %v, want %v", name, got, want)
		}
	}
	wantMD5 := engine.MD5OfAttributes(map[string]baton.MessageAttribute{
		"ClientId": {DataType: "String", StringValue: "c-42"},
		"Blob":     {DataType: "Binary", BinaryValue: []byte{0xde, 0xad, 0xbe, 0xef}},
	})
	if got := m.child(t, "MD5OfMessageAttributes").Text; got != wantMD5 {
		t.Errorf("MD5OfMessageAttributes = %q, want %q (the returned subset)", got, wantMD5)
	}

	// Nothing visible: <ReceiveMessageResult/> with no children.
	empty := c.post("/", "Action", "ReceiveMessage", "QueueUrl", u)
	checkXMLNames(t, empty.result(t, "ReceiveMessage"))
}

func TestQueryReceiveMessageRepeatsMessage(t *testing.T) {
	t.Parallel()
	c := newQueryClient(t)
	u := c.createQueue("many")
	want := []string{"one", "two", "three"}
	for _, b := range want {
		c.send(u, b)
	}
	// A plain receive returns one message with no attributes.
	msgs := c.receive(u, "VisibilityTimeout", "0")
	if len(msgs) != 1 {
		t.Fatalf("default receive returned %d messages, want 1", len(msgs))
	}
	checkXMLNames(t, msgs[0], "MessageId", "ReceiptHandle", "MD5OfBody", "Body")

	// <Message> repeats directly in the result; no wrapper element.
	msgs = c.receive(u, "MaxNumberOfMessages", "10", "AttributeName.1", "All", "MessageAttributeName.1", "All")
	var got []string
	for _, m := range msgs {
		checkXMLNames(t, m, "MessageId", "ReceiptHandle", "MD5OfBody", "Body",
			"Attribute", "Attribute", "Attribute", "Attribute")
		got = append(got, m.child(t, "Body").Text)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("bodies = %v, want %v", got, want)
	}
}

func TestQuerySendMessageBatch(t *testing.T) {
	t.Parallel()
	c := newQueryClient(t)
	u := c.createQueue("batch")
	r := c.post("/", "Action", "SendMessageBatch", "QueueUrl", u,
		"SendMessageBatchRequestEntry.1.Id", "first",
		"SendMessageBatchRequestEntry.1.MessageBody", "one",
		"SendMessageBatchRequestEntry.1.MessageAttribute.1.Name", "Foo",
		"SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.DataType", "String",
		"SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.StringValue", "Bar",
		"SendMessageBatchRequestEntry.2.Id", "second",
		"SendMessageBatchRequestEntry.2.MessageBody", "two",
		"SendMessageBatchRequestEntry.2.DelaySeconds", "30",
		"SendMessageBatchRequestEntry.2.MessageSystemAttribute.1.Name", "AWSTraceHeader",
		"SendMessageBatchRequestEntry.2.MessageSystemAttribute.1.Value.DataType", "String",
		"SendMessageBatchRequestEntry.2.MessageSystemAttribute.1.Value.StringValue", queryExampleTrace,
		"SendMessageBatchRequestEntry.3.Id", "bad",
		"SendMessageBatchRequestEntry.3.MessageBody", "bell\x07",
	)
	res := r.result(t, "SendMessageBatch")
	checkXMLNames(t, res, "SendMessageBatchResultEntry", "SendMessageBatchResultEntry", "BatchResultErrorEntry")

	ok := map[string]map[string]string{}
	for _, e := range res.all("SendMessageBatchResultEntry") {
		f := e.leaves(t)
		if !queryUUIDRE.MatchString(f["MessageId"]) {
			t.Errorf("entry %s: MessageId = %q, want a UUID", f["Id"], f["MessageId"])
		}
		delete(f, "MessageId")
		ok[f["Id"]] = f
	}
	wantOK := map[string]map[string]string{
		"first":  {"Id": "first", "MD5OfMessageBody": queryMD5("one"), "MD5OfMessageAttributes": "ae7155c6026991b6d54b11589678bf9c"},
		"second": {"Id": "second", "MD5OfMessageBody": queryMD5("two"), "MD5OfMessageSystemAttributes": "5ae4d5d7636402d80f4eb6d213245a88"},
	}
	for id, want := range wantOK {
		if got := ok[id]; !maps.Equal(got, want) {
			t.Errorf("entry %s = %v, want %v", id, got, want)
		}
	}

	failed := res.child(t, "BatchResultErrorEntry")
	checkXMLNames(t, failed, "Id", "SenderFault", "Code", "Message")
	f := failed.leaves(t)
	if f["Id"] != "bad" || f["SenderFault"] != "true" || f["Code"] != "InvalidMessageContents" || f["Message"] == "" {
		t.Errorf("failed entry = %v, want Id bad, SenderFault true, Code InvalidMessageContents and a message", f)
	}

	if got, want := c.counts(u), [3]int{1, 0, 1}; got != want {
		t.Errorf("counts = %v, want %v (one visible, one delayed)", got, want)
	}
}

func TestQueryDeleteMessage(t *testing.T) {
	t.Parallel()
	c := newQueryClient(t)
	u := c.createQueue("del")
	c.send(u, "bye")
	h := c.handle(u)
	c.post("/", "Action", "DeleteMessage", "QueueUrl", u, "ReceiptHandle", h).noResult(t, "DeleteMessage")
	if got, want := c.counts(u), [3]int{0, 0, 0}; got != want {
		t.Errorf("counts after delete = %v, want %v", got, want)
	}
	// Deleting again succeeds on a standard queue.
	c.post("/", "Action", "DeleteMessage", "QueueUrl", u, "ReceiptHandle", h).noResult(t, "DeleteMessage")
}

func TestQueryDeleteMessageBatch(t *testing.T) {
	t.Parallel()
	c := newQueryClient(t)
	u := c.createQueue("delbatch")
	c.send(u, "one")
	c.send(u, "two")
	h1, h2 := c.handle(u), c.handle(u)
	res := c.post("/", "Action", "DeleteMessageBatch", "QueueUrl", u,
		"DeleteMessageBatchRequestEntry.1.Id", "e1", "DeleteMessageBatchRequestEntry.1.ReceiptHandle", h1,
		"DeleteMessageBatchRequestEntry.2.Id", "e2", "DeleteMessageBatchRequestEntry.2.ReceiptHandle", "garbage",
		"DeleteMessageBatchRequestEntry.3.Id", "e3", "DeleteMessageBatchRequestEntry.3.ReceiptHandle", h2,
	).result(t, "DeleteMessageBatch")
	checkXMLNames(t, res, "DeleteMessageBatchResultEntry", "DeleteMessageBatchResultEntry", "BatchResultErrorEntry")
	var ids []string
	for _, e := range res.all("DeleteMessageBatchResultEntry") {
		checkXMLNames(t, e, "Id")
		ids = append(ids, e.child(t, "Id").Text)
	}
	if want := []string{"e1", "e3"}; !slices.Equal(ids, want) {
		t.Errorf("successful ids = %v, want %v", ids, want)
	}
	f := res.child(t, "BatchResultErrorEntry").leaves(t)
	want := map[string]string{
		"Id": "e2", "SenderFault": "true", "Code": "ReceiptHandleIsInvalid",
		"Message": `The input receipt handle "garbage" is not a valid receipt handle.`,
	}
	if !maps.Equal(f, want) {
		t.Errorf("failed entry = %v, want %v", f, want)
	}
	if got, want := c.counts(u), [3]int{0, 0, 0}; got != want {
		t.Errorf("counts after delete = %v, want %v", got, want)
	}
}

func TestQueryChangeMessageVisibility(t *testing.T) {
	t.Parallel()
	c := newQueryClient(t)
	u := c.createQueue("cmv")
	c.send(u, "again")
	h := c.handle(u, "VisibilityTimeout", "30")
	c.post("/", "Action", "ChangeMessageVisibility", "QueueUrl", u, "ReceiptHandle", h, "VisibilityTimeout", "0").
		noResult(t, "ChangeMessageVisibility")
	msgs := c.receive(u, "AttributeName.1", "ApproximateReceiveCount", "VisibilityTimeout", "30")
	if len(msgs) != 1 {
		t.Fatalf("after releasing the lease received %d messages, want 1", len(msgs))
	}
	if got := xmlPairs(t, msgs[0], "Attribute", "Name", "Value")["ApproximateReceiveCount"]; got != "2" {
		t.Errorf("ApproximateReceiveCount = %q, want 2", got)
	}

	// Extending: still hidden past the first lease, visible after the new one.
	h = msgs[0].child(t, "ReceiptHandle").Text
	c.post("/", "Action", "ChangeMessageVisibility", "QueueUrl", u, "ReceiptHandle", h, "VisibilityTimeout", "120").
		noResult(t, "ChangeMessageVisibility")
	c.srv.Clock.Advance(60 * time.Second)
	if got := c.receive(u); len(got) != 0 {
		t.Errorf("received %d messages during the extended lease, want 0", len(got))
	}
	c.srv.Clock.Advance(61 * time.Second)
	if got := c.receive(u); len(got) != 1 {
		t.Errorf("received %d messages after the extended lease, want 1", len(got))
	}
}

// Over the Query protocol too, the handle of an earlier receive moves the
// lease of the message's current receive.
func TestQueryChangeMessageVisibilityOlderHandle(t *testing.T) {
	t.Parallel()
	c := newQueryClient(t)
	u := c.createQueue("cmv-older")
	c.send(u, "again")
	first := c.handle(u, "VisibilityTimeout", "10")
	c.srv.Clock.Advance(11 * time.Second)
	c.handle(u, "VisibilityTimeout", "10") // until t=21
	c.post("/", "Action", "ChangeMessageVisibility", "QueueUrl", u, "ReceiptHandle", first, "VisibilityTimeout", "60").
		noResult(t, "ChangeMessageVisibility")
	c.srv.Clock.Advance(20 * time.Second) // t=31
	if got := c.receive(u); len(got) != 0 {
		t.Errorf("received %d messages during the extended lease, want 0", len(got))
	}
	res := c.post("/", "Action", "ChangeMessageVisibilityBatch", "QueueUrl", u,
		"ChangeMessageVisibilityBatchRequestEntry.1.Id", "release",
		"ChangeMessageVisibilityBatchRequestEntry.1.ReceiptHandle", first,
		"ChangeMessageVisibilityBatchRequestEntry.1.VisibilityTimeout", "0",
	).result(t, "ChangeMessageVisibilityBatch")
	checkXMLNames(t, res, "ChangeMessageVisibilityBatchResultEntry")
	if got := c.receive(u); len(got) != 1 {
		t.Errorf("received %d messages after the batch release, want 1", len(got))
	}
}

func TestQueryChangeMessageVisibilityBatch(t *testing.T) {
	t.Parallel()
	c := newQueryClient(t)
	u := c.createQueue("cmvbatch")
	c.send(u, "one")
	c.send(u, "two")
	c.send(u, "three")
	h1, h2, h3 := c.handle(u), c.handle(u), c.handle(u)
	res := c.post("/", "Action", "ChangeMessageVisibilityBatch", "QueueUrl", u,
		"ChangeMessageVisibilityBatchRequestEntry.1.Id", "release",
		"ChangeMessageVisibilityBatchRequestEntry.1.ReceiptHandle", h1,
		"ChangeMessageVisibilityBatchRequestEntry.1.VisibilityTimeout", "0",
		"ChangeMessageVisibilityBatchRequestEntry.2.Id", "extend",
		"ChangeMessageVisibilityBatchRequestEntry.2.ReceiptHandle", h2,
		"ChangeMessageVisibilityBatchRequestEntry.2.VisibilityTimeout", "300",
		"ChangeMessageVisibilityBatchRequestEntry.3.Id", "bogus",
		"ChangeMessageVisibilityBatchRequestEntry.3.ReceiptHandle", "bogus",
		"ChangeMessageVisibilityBatchRequestEntry.3.VisibilityTimeout", "10",
		"ChangeMessageVisibilityBatchRequestEntry.4.Id", "no-timeout",
		"ChangeMessageVisibilityBatchRequestEntry.4.ReceiptHandle", h3,
	).result(t, "ChangeMessageVisibilityBatch")
	checkXMLNames(t, res, "ChangeMessageVisibilityBatchResultEntry", "ChangeMessageVisibilityBatchResultEntry",
		"BatchResultErrorEntry", "BatchResultErrorEntry")
	var ids []string
	for _, e := range res.all("ChangeMessageVisibilityBatchResultEntry") {
		checkXMLNames(t, e, "Id")
		ids = append(ids, e.child(t, "Id").Text)
	}
	if want := []string{"release", "extend"}; !slices.Equal(ids, want) {
		t.Errorf("successful ids = %v, want %v", ids, want)
	}
	failed := map[string]map[string]string{}
	for _, e := range res.all("BatchResultErrorEntry") {
		checkXMLNames(t, e, "Id", "SenderFault", "Code", "Message")
		f := e.leaves(t)
		failed[f["Id"]] = f
	}
	if f := failed["bogus"]; f["SenderFault"] != "true" || f["Code"] != "ReceiptHandleIsInvalid" {
		t.Errorf("bogus entry = %v, want SenderFault true, Code ReceiptHandleIsInvalid", f)
	}
	// SQS fails such an entry alone, naming it by position (as recorded in
	// aws-sdk-go-v2#2250, when that SDK dropped zero timeouts).
	if f := failed["no-timeout"]; f["SenderFault"] != "true" || f["Code"] != "MissingParameter" ||
		f["Message"] != "The request must contain the parameter ChangeMessageVisibilityBatchRequestEntry.4.VisibilityTimeout." {
		t.Errorf("entry without VisibilityTimeout = %v, want SenderFault true, Code MissingParameter and the entry's parameter named", f)
	}

	// Only the released message is visible; the extended one after 300 s
	// (the one without a timeout keeps its 30 s lease).
	if got := c.receive(u, "MaxNumberOfMessages", "10", "VisibilityTimeout", "1000"); len(got) != 1 || got[0].child(t, "Body").Text != "one" {
		t.Errorf("received %d messages after the batch, want only %q", len(got), "one")
	}
	c.srv.Clock.Advance(301 * time.Second)
	var bodies []string
	for _, m := range c.receive(u, "MaxNumberOfMessages", "10") {
		bodies = append(bodies, m.child(t, "Body").Text)
	}
	slices.Sort(bodies)
	if want := []string{"three", "two"}; !slices.Equal(bodies, want) {
		t.Errorf("bodies after 301 s = %v, want %v", bodies, want)
	}
}

func TestQueryTags(t *testing.T) {
	t.Parallel()
	c := newQueryClient(t)
	u := c.createQueue("tagged")
	tags := func() map[string]string {
		t.Helper()
		res := c.post("/", "Action", "ListQueueTags", "QueueUrl", u).result(t, "ListQueueTags")
		for _, e := range res.all("Tag") {
			checkXMLNames(t, e, "Key", "Value")
		}
		return xmlPairs(t, res, "Tag", "Key", "Value")
	}

	// No tags: an empty <ListQueueTagsResult/>.
	checkXMLNames(t, c.post("/", "Action", "ListQueueTags", "QueueUrl", u).result(t, "ListQueueTags"))

	c.post("/", "Action", "TagQueue", "QueueUrl", u,
		"Tag.1.Key", "team", "Tag.1.Value", "core",
		"Tag.2.Key", "cost-center", "Tag.2.Value", "42",
		"Tag.3.Key", "Team", "Tag.3.Value", "case matters").noResult(t, "TagQueue")
	if got, want := tags(), map[string]string{"team": "core", "cost-center": "42", "Team": "case matters"}; !maps.Equal(got, want) {
		t.Errorf("tags = %v, want %v", got, want)
	}

	c.post("/", "Action", "TagQueue", "QueueUrl", u, "Tag.1.Key", "team", "Tag.1.Value", "platform").noResult(t, "TagQueue")
	c.post("/", "Action", "UntagQueue", "QueueUrl", u, "TagKey.1", "cost-center", "TagKey.2", "absent").noResult(t, "UntagQueue")
	if got, want := tags(), map[string]string{"team": "platform", "Team": "case matters"}; !maps.Equal(got, want) {
		t.Errorf("tags after overwrite and untag = %v, want %v", got, want)
	}

	c.post("/", "Action", "UntagQueue", "QueueUrl", u, "TagKey.1", "team", "TagKey.2", "Team").noResult(t, "UntagQueue")
	checkXMLNames(t, c.post("/", "Action", "ListQueueTags", "QueueUrl", u).result(t, "ListQueueTags"))
}

// A Query request may be sent to the queue URL itself (docs/sqs-behaviour.md §1.3).
func TestQueryQueueURLPath(t *testing.T) {
	t.Parallel()

	t.Run("path names the queue", func(t *testing.T) {
		t.Parallel()
		c := newQueryClient(t)
		c.createQueue("a")
		b := c.createQueue("b")
		c.post(queryQueuePath("a"), "Action", "SendMessage", "MessageBody", "to a").result(t, "SendMessage")
		msgs := c.post(queryQueuePath("a"), "Action", "ReceiveMessage", "VisibilityTimeout", "0").result(t, "ReceiveMessage").all("Message")
		if len(msgs) != 1 || msgs[0].child(t, "Body").Text != "to a" {
			t.Errorf("receive on path a got %d messages, want the one sent to a", len(msgs))
		}
		if got := c.counts(b); got != [3]int{} {
			t.Errorf("queue b counts = %v, want none", got)
		}
		got := xmlPairs(t, c.post(queryQueuePath("a"), "Action", "GetQueueAttributes", "AttributeName.1", "QueueArn").
			result(t, "GetQueueAttributes"), "Attribute", "Name", "Value")
		if want := "arn:aws:sqs:us-east-1:000000000000:a"; got["QueueArn"] != want {
			t.Errorf("QueueArn on path a = %q, want %q", got["QueueArn"], want)
		}
	})

	t.Run("QueueUrl overrides the path", func(t *testing.T) {
		t.Parallel()
		c := newQueryClient(t)
		a, b := c.createQueue("a"), c.createQueue("b")
		c.post(queryQueuePath("a"), "Action", "SendMessage", "QueueUrl", b, "MessageBody", "to b").result(t, "SendMessage")
		if got, want := c.counts(a), [3]int{}; got != want {
			t.Errorf("queue a counts = %v, want %v", got, want)
		}
		if got, want := c.counts(b), [3]int{1, 0, 0}; got != want {
			t.Errorf("queue b counts = %v, want %v", got, want)
		}
	})

	t.Run("GetQueueUrl for another queue", func(t *testing.T) {
		t.Parallel()
		c := newQueryClient(t)
		c.createQueue("a")
		b := c.createQueue("b")
		res := c.post(queryQueuePath("a"), "Action", "GetQueueUrl", "QueueName", "b").result(t, "GetQueueUrl")
		if got := res.child(t, "QueueUrl").Text; got != b {
			t.Errorf("QueueUrl = %q, want %q", got, b)
		}
	})

	t.Run("DeleteQueue on its path", func(t *testing.T) {
		t.Parallel()
		c := newQueryClient(t)
		c.createQueue("a")
		c.post(queryQueuePath("a"), "Action", "DeleteQueue").noResult(t, "DeleteQueue")
		c.post("/", "Action", "GetQueueUrl", "QueueName", "a").fail(t, 400, "AWS.SimpleQueueService.NonExistentQueue")
	})

	t.Run("actions not valid on a queue URL", func(t *testing.T) {
		t.Parallel()
		c := newQueryClient(t)
		c.createQueue("a")
		for _, kv := range [][]string{
			{"Action", "CreateQueue", "QueueName", "c"},
			{"Action", "ListQueues"},
			{"Action", "NoSuchAction"},
		} {
			c.post(queryQueuePath("a"), kv...).failWith(t, 400, "InvalidAction",
				"The action "+kv[1]+" is not valid for this endpoint.")
		}
		c.get(queryQueuePath("a"), "Action", "ListQueues").failWith(t, 400, "InvalidAction",
			"The action ListQueues is not valid for this endpoint.")
		// Nothing was created on the way.
		if got := c.post("/", "Action", "ListQueues").result(t, "ListQueues").all("QueueUrl"); len(got) != 1 {
			t.Errorf("ListQueues found %d queues, want 1", len(got))
		}
	})

	t.Run("GET without Action", func(t *testing.T) {
		t.Parallel()
		c := newQueryClient(t)
		c.createQueue("a")
		r := c.get(queryQueuePath("a"))
		if r.status != http.StatusNotFound {
			t.Fatalf("got %v, want HTTP 404", r)
		}
		if r.root == nil || r.root.XMLName.Local != "UnknownOperationException" || len(r.root.Children) != 0 || r.root.Text != "" {
			t.Errorf("body = %s, want <UnknownOperationException/>", r.body)
		}
	})
}

func TestQueryGET(t *testing.T) {
	t.Parallel()
	c := newQueryClient(t)
	res := c.get("/", "Action", "CreateQueue", "QueueName", "viaget",
		"Attribute.1.Name", "VisibilityTimeout", "Attribute.1.Value", "5").result(t, "CreateQueue")
	u := res.child(t, "QueueUrl").Text
	if want := c.queueURL("viaget"); u != want {
		t.Errorf("QueueUrl = %q, want %q", u, want)
	}

	send := c.get("/", append([]string{"Action", "SendMessage", "QueueUrl", u, "MessageBody", "Hello, SQS!"}, queryExampleAttributes...)...).
		result(t, "SendMessage").leaves(t)
	if send["MD5OfMessageAttributes"] != "489ec3752a0fbb1b289096f88629b322" || send["MD5OfMessageBody"] != "982e00ffc10ba49378a8653ca8fecf47" {
		t.Errorf("SendMessage by GET = %v, want the worked example's digests", send)
	}

	msgs := c.get(queryQueuePath("viaget"), "Action", "ReceiveMessage", "MessageAttributeName.1", "Retries").
		result(t, "ReceiveMessage").all("Message")
	if len(msgs) != 1 {
		t.Fatalf("ReceiveMessage by GET returned %d messages, want 1", len(msgs))
	}
	attr := msgs[0].child(t, "MessageAttribute")
	if got, want := attr.child(t, "Value").leaves(t), map[string]string{"StringValue": "3", "DataType": "Number.int"}; attr.child(t, "Name").Text != "Retries" || !maps.Equal(got, want) {
		t.Errorf("MessageAttribute = %s %v, want Retries %v", attr.child(t, "Name").Text, got, want)
	}

	if got := xmlPairs(t, c.get("/", "Action", "GetQueueAttributes", "QueueUrl", u, "AttributeName.1", "VisibilityTimeout").
		result(t, "GetQueueAttributes"), "Attribute", "Name", "Value"); got["VisibilityTimeout"] != "5" {
		t.Errorf("VisibilityTimeout by GET = %v, want 5", got)
	}
	c.get("/", "Action", "DeleteMessage", "QueueUrl", u,
		"ReceiptHandle", msgs[0].child(t, "ReceiptHandle").Text).noResult(t, "DeleteMessage")
	if got := c.get("/", "Action", "ListQueues").result(t, "ListQueues").all("QueueUrl"); len(got) != 1 || got[0].Text != u {
		t.Errorf("ListQueues by GET = %d urls, want [%s]", len(got), u)
	}
	c.get("/", "Action", "GetQueueUrl", "QueueName", "missing").fail(t, 400, "AWS.SimpleQueueService.NonExistentQueue")
}

// Version is optional; with or without it every action behaves the same.
func TestQueryVersionOptional(t *testing.T) {
	t.Parallel()
	for _, version := range []string{"", "2012-11-05"} {
		t.Run("Version="+version, func(t *testing.T) {
			t.Parallel()
			c := newQueryClient(t)
			v := func(kv ...string) []string {
				if version != "" {
					kv = append(kv, "Version", version)
				}
				return kv
			}
			u := c.post("/", v("Action", "CreateQueue", "QueueName", "q")...).result(t, "CreateQueue").child(t, "QueueUrl").Text
			c.post("/", v("Action", "SendMessage", "QueueUrl", u, "MessageBody", "m")...).result(t, "SendMessage")
			m := c.post("/", v("Action", "ReceiveMessage", "QueueUrl", u)...).result(t, "ReceiveMessage").child(t, "Message")
			c.post("/", v("Action", "DeleteMessage", "QueueUrl", u, "ReceiptHandle", m.child(t, "ReceiptHandle").Text)...).noResult(t, "DeleteMessage")
			c.post("/", v("Action", "DeleteQueue", "QueueUrl", u)...).noResult(t, "DeleteQueue")
		})
	}
}

// Each error of docs/sqs-behaviour.md §7 the actions can raise, as Query XML with the
// x-amzn-query-error header.
func TestQueryErrors(t *testing.T) {
	t.Parallel()
	// setup prepares a server; it may return extra parameters for the call.
	type setup func(c queryClient) []string
	withQueue := func(attrs ...string) setup {
		return func(c queryClient) []string {
			c.createQueue("q", attrs...)
			return nil
		}
	}
	entries := func(kind string, n int, id func(i int) string, extra ...string) []string {
		var kv []string
		for i := 1; i <= n; i++ {
			p := kind + "." + strconv.Itoa(i) + "."
			kv = append(kv, p+"Id", id(i))
			for j := 0; j < len(extra); j += 2 {
				kv = append(kv, p+extra[j], extra[j+1])
			}
		}
		return kv
	}
	seq := func(i int) string { return "e" + strconv.Itoa(i) }
	same := func(int) string { return "dup" }
	sendEntry := []string{"MessageBody", "x"}
	deleteEntry := []string{"ReceiptHandle", "h"}
	cmvEntry := []string{"ReceiptHandle", "h", "VisibilityTimeout", "0"}
	big := strings.Repeat("x", 600000)
	q := queryQueuePath("q")

	tests := []struct {
		name    string
		setup   setup
		method  string // default POST
		path    string // default "/"
		kv      []string
		status  int
		code    string
		message string
		suffix  bool // message is only the end of the message (it names a handle)
	}{
		// QueueDoesNotExist
		{
			name: "GetQueueUrl of a missing queue", kv: []string{"Action", "GetQueueUrl", "QueueName", "nope"},
			status: 400, code: "AWS.SimpleQueueService.NonExistentQueue", message: "The specified queue does not exist for this wsdl version.",
		},
		{
			name: "SendMessage to a missing queue", path: queryQueuePath("nope"), kv: []string{"Action", "SendMessage", "MessageBody", "x"},
			status: 400, code: "AWS.SimpleQueueService.NonExistentQueue", message: "The specified queue does not exist for this wsdl version.",
		},
		{
			name: "GET ReceiveMessage on a missing queue", method: http.MethodGet, path: queryQueuePath("nope"), kv: []string{"Action", "ReceiveMessage"},
			status: 400, code: "AWS.SimpleQueueService.NonExistentQueue", message: "The specified queue does not exist for this wsdl version.",
		},
		{
			name: "DeleteQueue of a missing queue", kv: []string{"Action", "DeleteQueue", "QueueUrl", "/000000000000/nope"},
			status: 400, code: "AWS.SimpleQueueService.NonExistentQueue", message: "The specified queue does not exist for this wsdl version.",
		},
		// QueueAlreadyExists
		{
			name: "CreateQueue with a different attribute", setup: withQueue("Attribute.1.Name", "VisibilityTimeout", "Attribute.1.Value", "30"),
			kv:     []string{"Action", "CreateQueue", "QueueName", "q", "Attribute.1.Name", "VisibilityTimeout", "Attribute.1.Value", "60"},
			status: 400, code: "QueueAlreadyExists", message: "A queue already exists with the same name and a different value for attribute VisibilityTimeout",
		},
		// QueueDeletedRecently
		{
			name: "CreateQueue within 60 s of deleting",
			setup: func(c queryClient) []string {
				u := c.createQueue("q")
				c.post("/", "Action", "DeleteQueue", "QueueUrl", u).noResult(c.tb, "DeleteQueue")
				c.srv.Clock.Advance(59 * time.Second)
				return nil
			},
			kv:     []string{"Action", "CreateQueue", "QueueName", "q"},
			status: 400, code: "AWS.SimpleQueueService.QueueDeletedRecently",
			message: "You must wait 60 seconds after deleting a queue before you can create another with the same name.",
		},
		// PurgeQueueInProgress
		{
			name: "second PurgeQueue within 60 s",
			setup: func(c queryClient) []string {
				c.createQueue("q")
				c.post(q, "Action", "PurgeQueue").noResult(c.tb, "PurgeQueue")
				return nil
			},
			path: q, kv: []string{"Action", "PurgeQueue"},
			status: 403, code: "AWS.SimpleQueueService.PurgeQueueInProgress", message: "Only one PurgeQueue operation on q is allowed every 60 seconds.",
		},
		// ReceiptHandleIsInvalid
		{
			name: "DeleteMessage with a garbage handle", setup: withQueue(), path: q,
			kv:     []string{"Action", "DeleteMessage", "ReceiptHandle", "garbage"},
			status: 404, code: "ReceiptHandleIsInvalid", message: `The input receipt handle "garbage" is not a valid receipt handle.`,
		},
		{
			name: "ChangeMessageVisibility with a garbage handle", setup: withQueue(), path: q,
			kv:     []string{"Action", "ChangeMessageVisibility", "ReceiptHandle", "garbage", "VisibilityTimeout", "10"},
			status: 404, code: "ReceiptHandleIsInvalid", message: `The input receipt handle "garbage" is not a valid receipt handle.`,
		},
		// InvalidMessageContents
		{
			name: "SendMessage with a control character", setup: withQueue(), path: q,
			kv:     []string{"Action", "SendMessage", "MessageBody", "nul\x00"},
			status: 400, code: "InvalidMessageContents",
			message: "Invalid characters found. Valid unicode characters are #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF",
		},
		{
			name: "SendMessage with invalid UTF-8", setup: withQueue(), path: q,
			kv:     []string{"Action", "SendMessage", "MessageBody", "\xff\xfe"},
			status: 400, code: "InvalidMessageContents",
			message: "Invalid characters found. Valid unicode characters are #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF",
		},
		// TooManyEntriesInBatchRequest
		{
			name: "SendMessageBatch of 11", setup: withQueue(), path: q,
			kv:     append([]string{"Action", "SendMessageBatch"}, entries("SendMessageBatchRequestEntry", 11, seq, sendEntry...)...),
			status: 400, code: "AWS.SimpleQueueService.TooManyEntriesInBatchRequest", message: "Maximum number of entries per request are 10. You have sent 11.",
		},
		{
			name: "DeleteMessageBatch of 11", setup: withQueue(), path: q,
			kv:     append([]string{"Action", "DeleteMessageBatch"}, entries("DeleteMessageBatchRequestEntry", 11, seq, deleteEntry...)...),
			status: 400, code: "AWS.SimpleQueueService.TooManyEntriesInBatchRequest", message: "Maximum number of entries per request are 10. You have sent 11.",
		},
		{
			name: "ChangeMessageVisibilityBatch of 11", setup: withQueue(), path: q,
			kv:     append([]string{"Action", "ChangeMessageVisibilityBatch"}, entries("ChangeMessageVisibilityBatchRequestEntry", 11, seq, cmvEntry...)...),
			status: 400, code: "AWS.SimpleQueueService.TooManyEntriesInBatchRequest", message: "Maximum number of entries per request are 10. You have sent 11.",
		},
		// EmptyBatchRequest
		{
			name: "empty SendMessageBatch", setup: withQueue(), path: q, kv: []string{"Action", "SendMessageBatch"},
			status: 400, code: "AWS.SimpleQueueService.EmptyBatchRequest", message: "There should be at least one SendMessageBatchRequestEntry in the request.",
		},
		{
			name: "empty DeleteMessageBatch", setup: withQueue(), path: q, kv: []string{"Action", "DeleteMessageBatch"},
			status: 400, code: "AWS.SimpleQueueService.EmptyBatchRequest", message: "There should be at least one DeleteMessageBatchRequestEntry in the request.",
		},
		{
			name: "empty ChangeMessageVisibilityBatch", setup: withQueue(), path: q, kv: []string{"Action", "ChangeMessageVisibilityBatch"},
			status: 400, code: "AWS.SimpleQueueService.EmptyBatchRequest", message: "There should be at least one ChangeMessageVisibilityBatchRequestEntry in the request.",
		},
		// BatchEntryIdsNotDistinct
		{
			name: "SendMessageBatch with repeated ids", setup: withQueue(), path: q,
			kv:     append([]string{"Action", "SendMessageBatch"}, entries("SendMessageBatchRequestEntry", 2, same, sendEntry...)...),
			status: 400, code: "AWS.SimpleQueueService.BatchEntryIdsNotDistinct", message: "Id dup repeated.",
		},
		{
			name: "DeleteMessageBatch with repeated ids", setup: withQueue(), path: q,
			kv:     append([]string{"Action", "DeleteMessageBatch"}, entries("DeleteMessageBatchRequestEntry", 2, same, deleteEntry...)...),
			status: 400, code: "AWS.SimpleQueueService.BatchEntryIdsNotDistinct", message: "Id dup repeated.",
		},
		{
			name: "ChangeMessageVisibilityBatch with repeated ids", setup: withQueue(), path: q,
			kv:     append([]string{"Action", "ChangeMessageVisibilityBatch"}, entries("ChangeMessageVisibilityBatchRequestEntry", 2, same, cmvEntry...)...),
			status: 400, code: "AWS.SimpleQueueService.BatchEntryIdsNotDistinct", message: "Id dup repeated.",
		},
		// BatchRequestTooLong
		{
			name: "SendMessageBatch over 1 MiB", setup: withQueue(), path: q,
			kv:     append([]string{"Action", "SendMessageBatch"}, entries("SendMessageBatchRequestEntry", 2, seq, "MessageBody", big)...),
			status: 400, code: "AWS.SimpleQueueService.BatchRequestTooLong", message: "Batch requests cannot be longer than 1048576 bytes. You have sent 1200000 bytes.",
		},
		// InvalidBatchEntryId
		{
			name: "SendMessageBatch with a bad id", setup: withQueue(), path: q,
			kv:     append([]string{"Action", "SendMessageBatch"}, entries("SendMessageBatchRequestEntry", 1, func(int) string { return "bad id!" }, sendEntry...)...),
			status: 400, code: "AWS.SimpleQueueService.InvalidBatchEntryId",
			message: "A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long.",
		},
		{
			name: "DeleteMessageBatch with an empty id", setup: withQueue(), path: q,
			kv:     []string{"Action", "DeleteMessageBatch", "DeleteMessageBatchRequestEntry.1.Id", "", "DeleteMessageBatchRequestEntry.1.ReceiptHandle", "h"},
			status: 400, code: "AWS.SimpleQueueService.InvalidBatchEntryId",
			message: "A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long.",
		},
		{
			name: "ChangeMessageVisibilityBatch with an 81-character id", setup: withQueue(), path: q,
			kv:     append([]string{"Action", "ChangeMessageVisibilityBatch"}, entries("ChangeMessageVisibilityBatchRequestEntry", 1, func(int) string { return strings.Repeat("a", 81) }, cmvEntry...)...),
			status: 400, code: "AWS.SimpleQueueService.InvalidBatchEntryId",
			message: "A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long.",
		},
		// InvalidAttributeName
		{
			name: "GetQueueAttributes of an unknown name", setup: withQueue(), path: q,
			kv:     []string{"Action", "GetQueueAttributes", "AttributeName.1", "VisibilityTimeout", "AttributeName.2", "Bogus"},
			status: 400, code: "InvalidAttributeName", message: "Unknown Attribute Bogus.",
		},
		{
			name:   "CreateQueue standard with FifoQueue false",
			kv:     []string{"Action", "CreateQueue", "QueueName", "std", "Attribute.1.Name", "FifoQueue", "Attribute.1.Value", "false"},
			status: 400, code: "InvalidAttributeName", message: "Unknown Attribute FifoQueue.",
		},
		{
			name:   "CreateQueue standard with DeduplicationScope",
			kv:     []string{"Action", "CreateQueue", "QueueName", "std", "Attribute.1.Name", "DeduplicationScope", "Attribute.1.Value", "queue"},
			status: 400, code: "InvalidAttributeName", message: "You can specify the DeduplicationScope only when FifoQueue is set to true.",
		},
		{
			name: "SetQueueAttributes of a read-only name", setup: withQueue(), path: q,
			kv:     []string{"Action", "SetQueueAttributes", "Attribute.1.Name", "QueueArn", "Attribute.1.Value", "arn:aws:sqs:us-east-1:000000000000:x"},
			status: 400, code: "InvalidAttributeName", message: "Unknown Attribute QueueArn.",
		},
		{
			name: "ReceiveMessage of an unknown system attribute", setup: withQueue(), path: q,
			kv:     []string{"Action", "ReceiveMessage", "AttributeName.1", "Bogus"},
			status: 400, code: "InvalidAttributeName", message: "Unknown Attribute Bogus.",
		},
		// InvalidAttributeValue
		{
			name: "SetQueueAttributes VisibilityTimeout out of range", setup: withQueue(), path: q,
			kv:     []string{"Action", "SetQueueAttributes", "Attribute.1.Name", "VisibilityTimeout", "Attribute.1.Value", "43201"},
			status: 400, code: "InvalidAttributeValue", message: "Invalid value for the parameter VisibilityTimeout.",
		},
		{
			name:   "CreateQueue DelaySeconds not a number",
			kv:     []string{"Action", "CreateQueue", "QueueName", "q2", "Attribute.1.Name", "DelaySeconds", "Attribute.1.Value", "soon"},
			status: 400, code: "InvalidAttributeValue", message: "Invalid value for the parameter DelaySeconds.",
		},
		// InvalidParameterValue
		{
			// SQS's answer to a FIFO queue without the suffix, as
			// CloudFormation users have met it.
			name:   "CreateQueue FIFO without the .fifo suffix",
			kv:     []string{"Action", "CreateQueue", "QueueName", "orders", "Attribute.1.Name", "FifoQueue", "Attribute.1.Value", "true"},
			status: 400, code: "InvalidParameterValue",
			message: "The name of a FIFO queue can only include alphanumeric characters, hyphens, or underscores, must end with .fifo suffix and be 1 to 80 in length.",
		},
		{
			// A standard queue named like a FIFO one (botocore#3058).
			name:   "CreateQueue standard with the .fifo suffix",
			kv:     []string{"Action", "CreateQueue", "QueueName", "orders.fifo"},
			status: 400, code: "InvalidParameterValue", message: "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length",
		},
		{
			name:   "CreateQueue with a bad name",
			kv:     []string{"Action", "CreateQueue", "QueueName", "bad name!"},
			status: 400, code: "InvalidParameterValue", message: "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length",
		},
		{
			name: "ReceiveMessage MaxNumberOfMessages 11", setup: withQueue(), path: q,
			kv:     []string{"Action", "ReceiveMessage", "MaxNumberOfMessages", "11"},
			status: 400, code: "InvalidParameterValue", message: "Value 11 for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided.",
		},
		{
			name: "ReceiveMessage WaitTimeSeconds 21", setup: withQueue(), path: q,
			kv:     []string{"Action", "ReceiveMessage", "WaitTimeSeconds", "21"},
			status: 400, code: "InvalidParameterValue", message: "Value 21 for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and <= 20, if provided.",
		},
		{
			name: "ReceiveMessage MaxNumberOfMessages not a number", setup: withQueue(), path: q,
			kv:     []string{"Action", "ReceiveMessage", "MaxNumberOfMessages", "ten"},
			status: 400, code: "InvalidParameterValue", message: "Value ten for parameter MaxNumberOfMessages is invalid.",
		},
		{
			name: "SendMessage BinaryValue not base64", setup: withQueue(), path: q,
			kv: []string{"Action", "SendMessage", "MessageBody", "x", "MessageAttribute.1.Name", "b",
				"MessageAttribute.1.Value.DataType", "Binary", "MessageAttribute.1.Value.BinaryValue", "not*base64"},
			status: 400, code: "InvalidParameterValue", message: "Value not*base64 for parameter MessageAttribute.1.Value.BinaryValue is invalid.",
		},
		{
			name: "SendMessage larger than MaximumMessageSize", setup: withQueue("Attribute.1.Name", "MaximumMessageSize", "Attribute.1.Value", "1024"), path: q,
			kv:     []string{"Action", "SendMessage", "MessageBody", strings.Repeat("x", 1025)},
			status: 400, code: "InvalidParameterValue", message: "One or more parameters are invalid. Reason: Message must be shorter than 1024 bytes.",
		},
		{
			name: "SendMessage DelaySeconds 901", setup: withQueue(), path: q,
			kv:     []string{"Action", "SendMessage", "MessageBody", "x", "DelaySeconds", "901"},
			status: 400, code: "InvalidParameterValue", message: "Value 901 for parameter DelaySeconds is invalid. Reason: DelaySeconds must be >= 0 and <= 900.",
		},
		{
			name: "ListQueues MaxResults 0", kv: []string{"Action", "ListQueues", "MaxResults", "0"},
			status: 400, code: "InvalidParameterValue", message: "Value 0 for parameter MaxResults is invalid. Reason: MaxResults must be an integer between 1 and 1000.",
		},
		{
			name: "ChangeMessageVisibility of a deleted message",
			setup: func(c queryClient) []string {
				u := c.createQueue("q")
				c.send(u, "gone")
				h := c.handle(u)
				c.post(q, "Action", "DeleteMessage", "ReceiptHandle", h).noResult(c.tb, "DeleteMessage")
				return []string{"ReceiptHandle", h}
			},
			path: q, kv: []string{"Action", "ChangeMessageVisibility", "VisibilityTimeout", "10"},
			status: 400, code: "InvalidParameterValue", suffix: true,
			message: " for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for visibility timeout change.",
		},
		// MissingParameter
		{
			name: "SendMessage without MessageBody", setup: withQueue(), path: q, kv: []string{"Action", "SendMessage"},
			status: 400, code: "MissingParameter", message: "The request must contain the parameter MessageBody.",
		},
		{
			name: "SendMessage with an empty MessageBody", setup: withQueue(), path: q, kv: []string{"Action", "SendMessage", "MessageBody", ""},
			status: 400, code: "MissingParameter", message: "The request must contain the parameter MessageBody.",
		},
		{
			name: "DeleteMessage without ReceiptHandle", setup: withQueue(), path: q, kv: []string{"Action", "DeleteMessage"},
			status: 400, code: "MissingParameter", message: "The request must contain the parameter ReceiptHandle.",
		},
		{
			name: "ChangeMessageVisibility without VisibilityTimeout",
			setup: func(c queryClient) []string {
				u := c.createQueue("q")
				c.send(u, "m")
				return []string{"ReceiptHandle", c.handle(u)}
			},
			path:   q,
			kv:     []string{"Action", "ChangeMessageVisibility"},
			status: 400, code: "MissingParameter", message: "The request must contain the parameter VisibilityTimeout.",
		},
		{
			name: "SetQueueAttributes without attributes", setup: withQueue(), path: q, kv: []string{"Action", "SetQueueAttributes"},
			status: 400, code: "MissingParameter", message: "The request must contain the parameter Attributes.",
		},
		{
			name: "TagQueue without tags", setup: withQueue(), path: q, kv: []string{"Action", "TagQueue"},
			status: 400, code: "MissingParameter", message: "The request must contain the parameter Tags.",
		},
		{
			name: "UntagQueue without keys", setup: withQueue(), path: q, kv: []string{"Action", "UntagQueue"},
			status: 400, code: "MissingParameter", message: "The request must contain the parameter TagKeys.",
		},
		{
			name: "CreateQueue with an empty QueueName", kv: []string{"Action", "CreateQueue", "QueueName", ""},
			status: 400, code: "MissingParameter", message: "The request must contain the parameter QueueName.",
		},
		{
			name: "ReceiveMessage at the root without QueueUrl", setup: withQueue(), kv: []string{"Action", "ReceiveMessage"},
			status: 400, code: "MissingParameter", message: "The request must contain the parameter QueueUrl.",
		},
		// InvalidAction
		{
			name: "unknown action", kv: []string{"Action", "SendPigeon"},
			status: 400, code: "InvalidAction", message: "The action SendPigeon is not valid for this endpoint.",
		},
		{
			name: "JSON-only spelling of an action", kv: []string{"Action", "AmazonSQS.ListQueues"},
			status: 400, code: "InvalidAction", message: "The action AmazonSQS.ListQueues is not valid for this endpoint.",
		},
		{
			name: "CreateQueue on a queue URL", setup: withQueue(), path: q, kv: []string{"Action", "CreateQueue", "QueueName", "other"},
			status: 400, code: "InvalidAction", message: "The action CreateQueue is not valid for this endpoint.",
		},
		{
			name: "ListQueues on a queue URL", setup: withQueue(), path: q, kv: []string{"Action", "ListQueues"},
			status: 400, code: "InvalidAction", message: "The action ListQueues is not valid for this endpoint.",
		},
		{
			name: "POST without Action", kv: []string{"QueueName", "q"},
			status: 400, code: "InvalidAction", message: "No Action was given; send an Action parameter or an X-Amz-Target header.",
		},
		// A URL without a path names no queue: NonExistentQueue, as for
		// any queue that does not exist.
		{
			name: "QueueUrl without a path", kv: []string{"Action", "SendMessage", "QueueUrl", "http://localhost:9324", "MessageBody", "x"},
			status: 400, code: "AWS.SimpleQueueService.NonExistentQueue", message: "The specified queue does not exist for this wsdl version.",
		},
		{
			name: "QueueUrl of a bare root", kv: []string{"Action", "SendMessage", "QueueUrl", "http://localhost:9324/", "MessageBody", "x"},
			status: 400, code: "AWS.SimpleQueueService.NonExistentQueue", message: "The specified queue does not exist for this wsdl version.",
		},
		// InvalidAddress
		{
			name: "QueueUrl with too many segments", kv: []string{"Action", "GetQueueAttributes", "QueueUrl", "http://localhost/000000000000/q/extra"},
			status: 404, code: "InvalidAddress", message: "The address http://localhost/000000000000/q/extra is not valid for this endpoint.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newQueryClient(t)
			kv := tt.kv
			if tt.setup != nil {
				kv = append(slices.Clone(kv), tt.setup(c)...)
			}
			method, path := tt.method, tt.path
			if method == "" {
				method = http.MethodPost
			}
			if path == "" {
				path = "/"
			}
			msg := c.do(method, path, queryForm(kv...)).fail(t, tt.status, tt.code)
			if tt.suffix {
				if !strings.HasSuffix(msg, tt.message) {
					t.Errorf("Message = %q, want it to end %q", msg, tt.message)
				}
				return
			}
			if msg != tt.message {
				t.Errorf("Message = %q, want %q", msg, tt.message)
			}
		})
	}
}

// A handle is only valid for the queue that issued it.
func TestQueryReceiptHandleOfAnotherQueue(t *testing.T) {
	t.Parallel()
	c := newQueryClient(t)
	a, b := c.createQueue("a"), c.createQueue("b")
	c.send(a, "m")
	h := c.handle(a)
	for _, kv := range [][]string{
		{"Action", "DeleteMessage", "QueueUrl", b, "ReceiptHandle", h},
		{"Action", "ChangeMessageVisibility", "QueueUrl", b, "ReceiptHandle", h, "VisibilityTimeout", "0"},
	} {
		c.post("/", kv...).failWith(t, 404, "ReceiptHandleIsInvalid", `The receipt handle "`+h+`" is not valid for this queue.`)
	}
	// A recreated queue of the same name does not accept its predecessor's
	// handles either.
	c.post("/", "Action", "DeleteQueue", "QueueUrl", a).noResult(t, "DeleteQueue")
	c.srv.Clock.Advance(61 * time.Second)
	c.createQueue("a")
	c.post("/", "Action", "DeleteMessage", "QueueUrl", a, "ReceiptHandle", h).fail(t, 404, "ReceiptHandleIsInvalid")
}

// After 60 s a deleted queue's name may be used again.
func TestQueryRecreateAfterDelete(t *testing.T) {
	t.Parallel()
	c := newQueryClient(t)
	u := c.createQueue("phoenix")
	c.send(u, "old")
	c.post("/", "Action", "DeleteQueue", "QueueUrl", u).noResult(t, "DeleteQueue")
	c.srv.Clock.Advance(60*time.Second + time.Millisecond)
	if got := c.createQueue("phoenix"); got != u {
		t.Errorf("QueueUrl = %q, want %q", got, u)
	}
	if got := c.counts(u); got != [3]int{} {
		t.Errorf("recreated queue counts = %v, want empty", got)
	}
}

// Every response carries its own request id.
func TestQueryRequestIDsDiffer(t *testing.T) {
	t.Parallel()
	c := newQueryClient(t)
	seen := map[string]bool{}
	for _, r := range []*queryResponse{
		c.post("/", "Action", "ListQueues"),
		c.post("/", "Action", "ListQueues"),
		c.post("/", "Action", "Nope"),
		c.get(queryQueuePath("nope")),
	} {
		id := r.header.Get("x-amzn-RequestId")
		if !queryUUIDRE.MatchString(id) || seen[id] {
			t.Errorf("x-amzn-RequestId = %q, want a fresh UUID", id)
		}
		seen[id] = true
	}
}

// queryARN is the ARN of a queue of the test server.
func queryARN(name string) string { return "arn:aws:sqs:us-east-1:" + testutil.Account + ":" + name }

// deadLetter sets up queue src whose messages go to dlq after one receive,
// and dead-letters n messages.
func (c queryClient) deadLetter(src, dlq string, n int) {
	c.tb.Helper()
	c.createQueue(dlq)
	u := c.createQueue(src, "Attribute.1.Name", "RedrivePolicy",
		"Attribute.1.Value", `{"deadLetterTargetArn":"`+queryARN(dlq)+`","maxReceiveCount":"1"}`)
	for i := range n {
		c.send(u, "dead "+strconv.Itoa(i))
	}
	if got := c.receive(u, "MaxNumberOfMessages", "10", "VisibilityTimeout", "0"); len(got) != n {
		c.tb.Fatalf("first receive got %d messages, want %d", len(got), n)
	}
	if got := c.receive(u, "MaxNumberOfMessages", "10"); len(got) != 0 {
		c.tb.Fatalf("second receive got %d messages, want them dead-lettered", len(got))
	}
	if got, want := c.counts(c.queueURL(dlq)), [3]int{n, 0, 0}; got != want {
		c.tb.Fatalf("dead-letter queue counts = %v, want %v", got, want)
	}
}

func TestQueryListDeadLetterSourceQueues(t *testing.T) {
	t.Parallel()
	c := newQueryClient(t)
	c.deadLetter("src-b", "dlq", 0)
	c.createQueue("src-a", "Attribute.1.Name", "RedrivePolicy",
		"Attribute.1.Value", `{"deadLetterTargetArn":"`+queryARN("dlq")+`","maxReceiveCount":5}`)
	c.createQueue("unrelated")
	dlq := c.queueURL("dlq")

	res := c.post("/", "Action", "ListDeadLetterSourceQueues", "QueueUrl", dlq).result(t, "ListDeadLetterSourceQueues")
	checkXMLNames(t, res, "QueueUrl", "QueueUrl")
	var got []string
	for _, u := range res.all("QueueUrl") {
		got = append(got, u.Text)
	}
	if want := []string{c.queueURL("src-a"), c.queueURL("src-b")}; !slices.Equal(got, want) {
		t.Errorf("QueueUrls = %v, want %v", got, want)
	}

	res = c.post(queryQueuePath("dlq"), "Action", "ListDeadLetterSourceQueues", "MaxResults", "1").result(t, "ListDeadLetterSourceQueues")
	checkXMLNames(t, res, "QueueUrl", "NextToken")
	res = c.post("/", "Action", "ListDeadLetterSourceQueues", "QueueUrl", dlq, "MaxResults", "1",
		"NextToken", res.child(t, "NextToken").Text).result(t, "ListDeadLetterSourceQueues")
	checkXMLNames(t, res, "QueueUrl")
	if got, want := res.child(t, "QueueUrl").Text, c.queueURL("src-b"); got != want {
		t.Errorf("page 2 QueueUrl = %q, want %q", got, want)
	}

	// A queue nothing dead-letters to: an empty result.
	checkXMLNames(t, c.post("/", "Action", "ListDeadLetterSourceQueues", "QueueUrl", c.queueURL("unrelated")).
		result(t, "ListDeadLetterSourceQueues"))
}

// moveTasks lists the move tasks of a source queue.
func (c queryClient) moveTasks(sourceARN string, kv ...string) []map[string]string {
	c.tb.Helper()
	res := c.post("/", append([]string{"Action", "ListMessageMoveTasks", "SourceArn", sourceARN}, kv...)...).
		result(c.tb, "ListMessageMoveTasks")
	checkXMLNames(c.tb, res, slices.Repeat([]string{"ListMessageMoveTasksResultEntry"}, len(res.Children))...)
	var out []map[string]string
	for _, e := range res.all("ListMessageMoveTasksResultEntry") {
		out = append(out, e.leaves(c.tb))
	}
	return out
}

func TestQueryMessageMoveTaskCompletes(t *testing.T) {
	t.Parallel()
	c := newQueryClient(t)
	c.deadLetter("src", "dlq", 2)
	if got := c.moveTasks(queryARN("dlq")); len(got) != 0 {
		t.Errorf("tasks before any = %v, want none", got)
	}

	res := c.post("/", "Action", "StartMessageMoveTask", "SourceArn", queryARN("dlq")).result(t, "StartMessageMoveTask")
	checkXMLNames(t, res, "TaskHandle")
	if res.child(t, "TaskHandle").Text == "" {
		t.Error("empty TaskHandle")
	}

	var task map[string]string
	testutil.CheckFor(t, 5*time.Second, func() error {
		tasks := c.moveTasks(queryARN("dlq"))
		if len(tasks) != 1 || tasks[0]["Status"] != "COMPLETED" {
			return fmt.Errorf("tasks = %v, want one COMPLETED", tasks)
		}
		task = tasks[0]
		return nil
	})
	// No TaskHandle once finished, no DestinationArn for the default.
	want := map[string]string{
		"Status":                            "COMPLETED",
		"SourceArn":                         queryARN("dlq"),
		"ApproximateNumberOfMessagesMoved":  "2",
		"ApproximateNumberOfMessagesToMove": "2",
		"StartedTimestamp":                  strconv.FormatInt(testutil.Epoch.UnixMilli(), 10),
	}
	if !maps.Equal(task, want) {
		t.Errorf("task =\n%v\nwant\n%v", task, want)
	}
	if got, want := c.counts(c.queueURL("src")), [3]int{2, 0, 0}; got != want {
		t.Errorf("source counts after the move = %v, want %v", got, want)
	}
}

func TestQueryMessageMoveTaskCancel(t *testing.T) {
	t.Parallel()
	c := newQueryClient(t)
	c.deadLetter("src", "dlq", 3)
	c.createQueue("elsewhere")
	res := c.post("/", "Action", "StartMessageMoveTask", "SourceArn", queryARN("dlq"),
		"DestinationArn", queryARN("elsewhere"), "MaxNumberOfMessagesPerSecond", "1").result(t, "StartMessageMoveTask")
	handle := res.child(t, "TaskHandle").Text
	c.srv.WaitForTimers(t, 1) // the task moved its first message and waits a second

	tasks := c.moveTasks(queryARN("dlq"), "MaxResults", "10")
	want := map[string]string{
		"TaskHandle":                        handle,
		"Status":                            "RUNNING",
		"SourceArn":                         queryARN("dlq"),
		"DestinationArn":                    queryARN("elsewhere"),
		"MaxNumberOfMessagesPerSecond":      "1",
		"ApproximateNumberOfMessagesMoved":  "1",
		"ApproximateNumberOfMessagesToMove": "3",
		"StartedTimestamp":                  strconv.FormatInt(testutil.Epoch.UnixMilli(), 10),
	}
	if len(tasks) != 1 || !maps.Equal(tasks[0], want) {
		t.Errorf("running tasks =\n%v\nwant\n[%v]", tasks, want)
	}

	c.post("/", "Action", "StartMessageMoveTask", "SourceArn", queryARN("dlq")).failWith(t, 400, "InvalidParameterValue",
		"There is already a task running. Only one active task is allowed for a source queue arn at a given time.")

	res = c.post("/", "Action", "CancelMessageMoveTask", "TaskHandle", handle).result(t, "CancelMessageMoveTask")
	checkXMLNames(t, res, "ApproximateNumberOfMessagesMoved")
	if got := res.child(t, "ApproximateNumberOfMessagesMoved").Text; got != "1" {
		t.Errorf("ApproximateNumberOfMessagesMoved = %q, want 1", got)
	}
	testutil.CheckFor(t, 5*time.Second, func() error {
		if tasks := c.moveTasks(queryARN("dlq")); len(tasks) != 1 || tasks[0]["Status"] != "CANCELLED" {
			return fmt.Errorf("tasks = %v, want one CANCELLED", tasks)
		}
		return nil
	})
	c.post("/", "Action", "CancelMessageMoveTask", "TaskHandle", handle).
		failWith(t, 404, "ResourceNotFoundException", "Task does not exist.")
	if got, want := c.counts(c.queueURL("elsewhere")), [3]int{1, 0, 0}; got != want {
		t.Errorf("destination counts = %v, want %v", got, want)
	}
}

func TestQueryPermissions(t *testing.T) {
	t.Parallel()
	c := newQueryClient(t)
	u := c.createQueue("shared")
	c.post("/", "Action", "AddPermission", "QueueUrl", u, "Label", "one",
		"AWSAccountId.1", "111111111111", "ActionName.1", "SendMessage").noResult(t, "AddPermission")
	c.post(queryQueuePath("shared"), "Action", "AddPermission", "Label", "two",
		"AWSAccountId.1", "111111111111", "AWSAccountId.2", "222222222222",
		"ActionName.1", "ReceiveMessage", "ActionName.2", "DeleteMessage").noResult(t, "AddPermission")

	arn := queryARN("shared")
	want := `{"Version":"2008-10-17","Id":"` + arn + `/SQSDefaultPolicy","Statement":[` +
		`{"Sid":"one","Effect":"Allow","Principal":{"AWS":"arn:aws:iam::111111111111:root"},"Action":"SQS:SendMessage","Resource":"` + arn + `"},` +
		`{"Sid":"two","Effect":"Allow","Principal":{"AWS":["arn:aws:iam::111111111111:root","arn:aws:iam::222222222222:root"]},` +
		`"Action":["SQS:ReceiveMessage","SQS:DeleteMessage"],"Resource":"` + arn + `"}]}`
	if got := c.attributes(u, "Policy")["Policy"]; got != want {
		t.Errorf("Policy =\n%s\nwant\n%s", got, want)
	}

	c.post("/", "Action", "AddPermission", "QueueUrl", u, "Label", "one",
		"AWSAccountId.1", "333333333333", "ActionName.1", "*").
		failWith(t, 400, "InvalidParameterValue", "Value one for parameter Label is invalid. Reason: Already exists.")
	c.post("/", "Action", "AddPermission", "QueueUrl", u, "Label", "many", "AWSAccountId.1", "333333333333",
		"ActionName.1", "SendMessage", "ActionName.2", "ReceiveMessage", "ActionName.3", "DeleteMessage",
		"ActionName.4", "ChangeMessageVisibility", "ActionName.5", "GetQueueAttributes", "ActionName.6", "GetQueueUrl",
		"ActionName.7", "PurgeQueue", "ActionName.8", "ListQueueTags").
		failWith(t, 403, "OverLimit", "8 Actions were found, maximum allowed is 7.")

	c.post("/", "Action", "RemovePermission", "QueueUrl", u, "Label", "one").noResult(t, "RemovePermission")
	c.post(queryQueuePath("shared"), "Action", "RemovePermission", "Label", "one").
		failWith(t, 400, "InvalidParameterValue", "Value one for parameter Label is invalid. Reason: can't find label.")
	c.post(queryQueuePath("shared"), "Action", "RemovePermission", "Label", "two").noResult(t, "RemovePermission")
	if got := c.attributes(u, "Policy"); len(got) != 0 {
		t.Errorf("Policy after removing every label = %v, want none", got)
	}
}

// Errors of the dead-letter and move-task actions.
func TestQueryMoveTaskErrors(t *testing.T) {
	t.Parallel()
	c := newQueryClient(t)
	c.createQueue("plain")
	c.post("/", "Action", "StartMessageMoveTask", "SourceArn", queryARN("plain")).
		failWith(t, 400, "InvalidParameterValue", "Source queue must be configured as a Dead Letter Queue.")
	c.post("/", "Action", "StartMessageMoveTask", "SourceArn", queryARN("missing")).
		failWith(t, 404, "ResourceNotFoundException", "The resource that you specified for the SourceArn parameter doesn't exist.")
	c.post("/", "Action", "ListMessageMoveTasks", "SourceArn", queryARN("missing")).
		failWith(t, 404, "ResourceNotFoundException", "The resource that you specified for the SourceArn parameter doesn't exist.")
	c.post("/", "Action", "CancelMessageMoveTask", "TaskHandle", "not a handle").
		failWith(t, 400, "InvalidParameterValue", "Value for parameter TaskHandle is invalid.")
	c.post("/", "Action", "ListDeadLetterSourceQueues", "QueueUrl", c.queueURL("missing")).
		failWith(t, 400, "AWS.SimpleQueueService.NonExistentQueue", "The specified queue does not exist for this wsdl version.")
	c.post("/", "Action", "ListMessageMoveTasks", "SourceArn", queryARN("plain"), "MaxResults", "11").
		failWith(t, 400, "InvalidParameterValue", "Value 11 for parameter MaxResults is invalid. Reason: MaxResults must be between 1 and 10.")
}
