package sns_test

import (
	"strings"
	"testing"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/sns"
)

func strAttr(name, v string) sns.MessageAttribute {
	return sns.MessageAttribute{Name: name, MessageAttribute: baton.MessageAttribute{DataType: "String", StringValue: v}}
}

func arrAttr(name, v string) sns.MessageAttribute {
	return sns.MessageAttribute{Name: name, MessageAttribute: baton.MessageAttribute{DataType: "String.Array", StringValue: v}}
}

func numAttr(name, v string) sns.MessageAttribute {
	return sns.MessageAttribute{Name: name, MessageAttribute: baton.MessageAttribute{DataType: "Number", StringValue: v}}
}

// docsExampleAttrs are the attributes of the example message of AWS's
// "Example filter policies" page.
var docsExampleAttrs = []sns.MessageAttribute{
	arrAttr("customer_interests", `["soccer", "rugby", "hockey"]`),
	strAttr("store", "example_corp"),
	strAttr("event", "order_placed"),
	numAttr("price_usd", "210.75"),
}

// docsExampleBody is that message as a body, for the MessageBody scope.
const docsExampleBody = `{"customer_interests": ["soccer", "rugby", "hockey"], "store": "example_corp",
	"event": "order_placed", "price_usd": 210.75}`

type filterCase struct {
	name   string
	scope  string
	policy string
	body   string
	attrs  []sns.MessageAttribute
	want   bool
}

// attrCases returns, for one policy of the attribute scope, a case per
// message: those that match, then those that do not.
func attrCases(name, policy string, match, noMatch [][]sns.MessageAttribute) []filterCase {
	var out []filterCase
	for i, a := range match {
		out = append(out, filterCase{name: name + "/match" + string(rune('0'+i)), policy: policy, body: "m", attrs: a, want: true})
	}
	for i, a := range noMatch {
		out = append(out, filterCase{name: name + "/no-match" + string(rune('0'+i)), policy: policy, body: "m", attrs: a, want: false})
	}
	return out
}

// bodyCases is attrCases for the MessageBody scope.
func bodyCases(name, policy string, match, noMatch []string) []filterCase {
	var out []filterCase
	for i, b := range match {
		out = append(out, filterCase{name: name + "/body-match" + string(rune('0'+i)), scope: sns.ScopeBody, policy: policy, body: b, want: true})
	}
	for i, b := range noMatch {
		out = append(out, filterCase{name: name + "/body-no-match" + string(rune('0'+i)), scope: sns.ScopeBody, policy: policy, body: b, want: false})
	}
	return out
}

func one(a ...sns.MessageAttribute) []sns.MessageAttribute { return a }

// filterCases are the examples of AWS's documentation of filter policies
// (Amazon SNS Developer Guide: "Example filter policies", "String value
// matching", "Numeric value matching", "Key matching", "AND/OR logic"),
// each with its documented result, and the cases AWS was recorded on
// (SNS-CONTRACT §6).
func filterCases() []filterCase {
	var cs []filterCase
	add := func(c ...filterCase) { cs = append(cs, c...) }

	// Example filter policies: one accepts the example message, one
	// rejects it (event differs, and "encrypted" is absent).
	add(filterCase{name: "docs-example/accepts", body: "m", attrs: docsExampleAttrs, want: true,
		policy: `{"store": ["example_corp"], "event": [{"anything-but": "order_cancelled"}],
			"customer_interests": ["rugby", "football", "baseball"], "price_usd": [{"numeric": [">=", 100]}]}`})
	add(filterCase{name: "docs-example/rejects", body: "m", attrs: docsExampleAttrs, want: false,
		policy: `{"store": ["example_corp"], "event": ["order_cancelled"], "encrypted": [false],
			"customer_interests": ["basketball", "baseball"]}`})
	add(filterCase{name: "docs-example/accepts-body", scope: sns.ScopeBody, body: docsExampleBody, want: true,
		policy: `{"store": ["example_corp"], "event": [{"anything-but": "order_cancelled"}],
			"customer_interests": ["rugby", "football", "baseball"], "price_usd": [{"numeric": [">=", 100]}]}`})

	// String exact matching, on String and String.Array attributes.
	add(attrCases("exact", `{"customer_interests": ["rugby", "tennis"]}`,
		[][]sns.MessageAttribute{one(strAttr("customer_interests", "rugby")), one(strAttr("customer_interests", "tennis")),
			one(arrAttr("customer_interests", `["rugby", "tennis"]`))},
		[][]sns.MessageAttribute{one(strAttr("customer_interests", "baseball")), one(arrAttr("customer_interests", `["baseball"]`)),
			one(strAttr("other", "rugby")), nil})...)
	add(bodyCases("exact", `{"customer_interests": ["rugby", "tennis"]}`,
		[]string{`{"customer_interests": "rugby"}`, `{"customer_interests": "tennis"}`, `{"customer_interests": ["x", "rugby"]}`},
		[]string{`{"customer_interests": "baseball"}`, `{}`})...)

	// Anything-but: a value, a list; missing key never matches.
	add(attrCases("anything-but", `{"customer_interests": [{"anything-but": ["rugby", "tennis"]}]}`,
		[][]sns.MessageAttribute{one(strAttr("customer_interests", "baseball")), one(strAttr("customer_interests", "football")),
			one(arrAttr("customer_interests", `["baseball", "football"]`))},
		// AWS's current page: on a String.Array it matches only if no
		// element is listed.
		[][]sns.MessageAttribute{one(strAttr("customer_interests", "rugby")), one(strAttr("customer_interests", "tennis")),
			one(arrAttr("customer_interests", `["rugby", "baseball"]`)), nil})...)
	add(bodyCases("anything-but", `{"customer_interests": [{"anything-but": ["rugby", "tennis"]}]}`,
		[]string{`{"customer_interests": "baseball"}`, `{"customer_interests": "football"}`},
		[]string{`{"customer_interests": "rugby"}`, `{"other": "x"}`})...)
	add(attrCases("anything-but-or-absent", `{"customer_interests": [{"anything-but": "rugby"}, {"exists": false}]}`,
		[][]sns.MessageAttribute{one(strAttr("customer_interests", "tennis")), nil},
		[][]sns.MessageAttribute{one(strAttr("customer_interests", "rugby"))})...)
	// Recorded on AWS: null or anything-but does not match a message
	// without the attribute.
	add(attrCases("null-or-anything-but", `{"attr1": [null, {"anything-but": "whatever"}]}`,
		[][]sns.MessageAttribute{one(strAttr("attr1", "x"))},
		[][]sns.MessageAttribute{nil, one(strAttr("attr1", "whatever"))})...)

	// Anything-but prefix.
	add(attrCases("anything-but-prefix", `{"event": [{"anything-but": {"prefix": "order-"}}]}`,
		[][]sns.MessageAttribute{one(strAttr("event", "data-entry")), one(strAttr("event", "order_number"))},
		[][]sns.MessageAttribute{one(strAttr("event", "order-cancelled")), nil})...)

	// Prefix, suffix, equals-ignore-case.
	add(attrCases("prefix", `{"customer_interests": [{"prefix": "bas"}]}`,
		[][]sns.MessageAttribute{one(strAttr("customer_interests", "baseball")), one(strAttr("customer_interests", "basketball"))},
		[][]sns.MessageAttribute{one(strAttr("customer_interests", "rugby"))})...)
	add(bodyCases("prefix", `{"customer_interests": [{"prefix": "bas"}]}`,
		[]string{`{"customer_interests": "baseball"}`}, []string{`{"customer_interests": "rugby"}`})...)
	add(attrCases("suffix", `{"customer_interests": [{"suffix": "ball"}]}`,
		[][]sns.MessageAttribute{one(strAttr("customer_interests", "baseball")), one(strAttr("customer_interests", "basketball"))},
		[][]sns.MessageAttribute{one(strAttr("customer_interests", "rugby"))})...)
	add(attrCases("equals-ignore-case", `{"customer_interests": [{"equals-ignore-case": "tennis"}]}`,
		[][]sns.MessageAttribute{one(strAttr("customer_interests", "TENNIS")), one(strAttr("customer_interests", "Tennis"))},
		[][]sns.MessageAttribute{one(strAttr("customer_interests", "rugby")), one(strAttr("customer_interests", "tennis2"))})...)

	// IP address matching.
	add(attrCases("cidr", `{"source_ip": [{"cidr": "10.0.0.0/24"}]}`,
		[][]sns.MessageAttribute{one(strAttr("source_ip", "10.0.0.0")), one(strAttr("source_ip", "10.0.0.255"))},
		[][]sns.MessageAttribute{one(strAttr("source_ip", "10.1.1.0")), one(strAttr("source_ip", "10.0.0.256")), one(strAttr("source_ip", "x"))})...)
	add(bodyCases("cidr-ipv6", `{"source_ip": [{"cidr": "2001:0db8:1234:1a00:0000:0000:0000:0000/64"}]}`,
		[]string{`{"source_ip": "2001:0db8:1234:1a00:0000:0000:0000:0000"}`, `{"source_ip": "2001:db8:1234:1a00::1"}`},
		[]string{`{"source_ip": "2001:0db8:123f:1a01:0000:0000:0000:0000"}`, `{"source_ip": "10.0.0.1"}`})...)

	// Numeric: exact (301.5 written two ways), anything-but, ranges.
	add(attrCases("numeric-equals", `{"price_usd": [{"numeric": ["=", 301.5]}]}`,
		[][]sns.MessageAttribute{one(numAttr("price_usd", "301.5")), one(numAttr("price_usd", "3.015e2"))},
		[][]sns.MessageAttribute{one(numAttr("price_usd", "301.6")), one(strAttr("price_usd", "301.5"))})...)
	add(bodyCases("numeric-equals", `{"price_usd": [{"numeric": ["=", 301.5]}]}`,
		[]string{`{"price_usd": 301.5}`, `{"price_usd": 3.015e2}`},
		[]string{`{"price_usd": 300}`, `{"price_usd": "301.5"}`})...)
	add(attrCases("numeric-anything-but", `{"price": [{"anything-but": [100, 500]}]}`,
		[][]sns.MessageAttribute{one(numAttr("price", "101")), one(numAttr("price", "100.1"))},
		[][]sns.MessageAttribute{one(numAttr("price", "100")), one(numAttr("price", "500")), one(numAttr("price", "1e2"))})...)
	add(attrCases("numeric-range", `{"price_usd": [{"numeric": [">", 0, "<=", 150]}]}`,
		[][]sns.MessageAttribute{one(numAttr("price_usd", "99")), one(numAttr("price_usd", "150")), one(numAttr("price_usd", "0.001"))},
		[][]sns.MessageAttribute{one(numAttr("price_usd", "0")), one(numAttr("price_usd", "151")), one(strAttr("price_usd", "99"))})...)
	add(attrCases("numeric-below", `{"price_usd": [{"numeric": ["<", 0]}]}`,
		[][]sns.MessageAttribute{one(numAttr("price_usd", "-1"))},
		[][]sns.MessageAttribute{one(numAttr("price_usd", "0")), one(numAttr("price_usd", "1"))})...)
	add(attrCases("numeric-at-least", `{"price_usd": [{"numeric": [">=", 100]}]}`,
		[][]sns.MessageAttribute{one(numAttr("price_usd", "100")), one(numAttr("price_usd", "210.75"))},
		[][]sns.MessageAttribute{one(numAttr("price_usd", "99.99"))})...)
	add(attrCases("number-exact", `{"count": [5]}`,
		[][]sns.MessageAttribute{one(numAttr("count", "5")), one(numAttr("count", "5.0")), one(arrAttr("count", `[1, 5]`))},
		[][]sns.MessageAttribute{one(strAttr("count", "5")), one(numAttr("count", "6"))})...)
	add(bodyCases("true-false-null", `{"a": [true], "b": [null]}`,
		[]string{`{"a": true, "b": null}`}, []string{`{"a": "true", "b": null}`, `{"a": true}`, `{"a": false, "b": null}`})...)

	// Key matching: exists true / false.
	add(attrCases("exists-true", `{"store": [{"exists": true}]}`,
		[][]sns.MessageAttribute{one(strAttr("store", "fans"), arrAttr("customer_interests", `["baseball", "basketball"]`))},
		[][]sns.MessageAttribute{one(arrAttr("customer_interests", `["baseball", "basketball"]`))})...)
	add(attrCases("exists-false", `{"store": [{"exists": false}]}`,
		[][]sns.MessageAttribute{one(arrAttr("customer_interests", `["baseball", "basketball"]`))},
		[][]sns.MessageAttribute{one(strAttr("store", "fans"), arrAttr("customer_interests", `["baseball", "basketball"]`))})...)
	add(bodyCases("exists", `{"store": [{"exists": true}]}`,
		[]string{`{"store": "fans", "customer_interests": ["baseball", "basketball"]}`},
		[]string{`{"customer_interests": ["baseball", "basketball"]}`, `{"store": []}`})...)

	// AND across keys, OR within a key's values.
	add(attrCases("and", `{"customer_interests": ["rugby"], "price_usd": [{"numeric": [">", 100]}]}`,
		[][]sns.MessageAttribute{one(strAttr("customer_interests", "rugby"), numAttr("price_usd", "101"))},
		[][]sns.MessageAttribute{one(strAttr("customer_interests", "rugby"), numAttr("price_usd", "100")),
			one(strAttr("customer_interests", "tennis"), numAttr("price_usd", "101")), one(strAttr("customer_interests", "rugby"))})...)
	add(attrCases("or-values", `{"customer_interests": ["rugby", "football", "baseball"]}`,
		[][]sns.MessageAttribute{one(strAttr("customer_interests", "football")), one(strAttr("customer_interests", "baseball"))},
		[][]sns.MessageAttribute{one(strAttr("customer_interests", "hockey"))})...)

	// $or, at the top and nested.
	add(attrCases("$or", `{"source": ["aws.cloudwatch"], "$or": [{"metricName": ["CPUUtilization"]}, {"namespace": ["AWS/EC2"]}]}`,
		[][]sns.MessageAttribute{one(strAttr("source", "aws.cloudwatch"), strAttr("metricName", "CPUUtilization")),
			one(strAttr("source", "aws.cloudwatch"), strAttr("namespace", "AWS/EC2"))},
		[][]sns.MessageAttribute{one(strAttr("source", "aws.cloudwatch"), strAttr("metricName", "ReadLatency")),
			one(strAttr("source", "aws.events"), strAttr("metricName", "CPUUtilization"))})...)
	orNested := `{"$or": [{"metricName": ["CPUUtilization", "ReadLatency"]}, {"namespace": ["AWS/EC2", "AWS/ES"]}],
		"detail": {"scope": ["Service"], "$or": [{"source": ["aws.cloudwatch"]}, {"type": ["CloudWatch Alarm State Change"]}]}}`
	add(bodyCases("$or-nested", orNested,
		[]string{`{"metricName": "CPUUtilization", "detail": {"scope": "Service", "source": "aws.cloudwatch"}}`,
			`{"namespace": "AWS/ES", "detail": {"scope": "Service", "source": "aws.cloudwatch"}}`,
			`{"metricName": "CPUUtilization", "detail": {"scope": "Service", "type": "CloudWatch Alarm State Change"}}`},
		[]string{`{"metricName": "CPUUtilization", "detail": {"scope": "aws.cloudwatch", "type": "CloudWatch Alarm State Change"}}`,
			`{"metricName": "CPUUtilization", "detail": {"scope": "Service", "type": "CPUUtilization"}}`,
			`{"metricName": "CPUUtilization", "detail": {"scope": "Service"}}`,
			`{"metricName": "CPUUtilization", "scope": "Service"}`,
			`{"metricName": "AWS/EC2", "detail": {"scope": "Service", "type": "CloudWatch Alarm State Change"}}`})...)

	// Body scope: nesting, dotted keys, arrays (of objects, of arrays),
	// and a body that is not a JSON object.
	nested := `{"object": {"key": [{"prefix": "auto-"}, "hardcodedvalue"], "nested_key": [{"exists": false}]}, "test": [{"exists": false}]}`
	add(bodyCases("nested", nested,
		[]string{`{"object": {"key": "auto-test"}}`, `{"object": {"key": "hardcodedvalue"}}`},
		[]string{`{"object": {"key": "test-auto"}}`, `{"object": {"key": "auto-test"}, "test": "just-exists"}`,
			`{"object": {"key": "auto-test", "nested_key": "just-exists"}}`, `{"object": {"test": "auto-test"}}`,
			`{"test": "auto-test"}`, `Regular string message`, `"Regular string message"`, `["object"]`})...)
	add(bodyCases("dotted", `{"object.nested.test": ["string.value"]}`,
		[]string{`{"object": {"nested": {"test": "string.value"}}}`, `{"object.nested.test": "string.value"}`,
			`{"object.nested": {"test": "string.value"}}`, `{"object": {"nested.test": "string.value"}}`},
		[]string{`{"object": {"nested": {"test": "string.notvalue"}}}`})...)
	add(bodyCases("arrays", `{"headers": {"route-to": ["queue1"]}}`,
		[]string{`{"headers": {"route-to": ["queue1"]}}`, `{"headers": {"route-to": ["queue1", "queue2"]}}`},
		[]string{`{"headers": {"route-to": ["queue3"]}}`, `{"headers": {"route-to": []}}`})...)
	s3 := `{"Records": {"s3": {"object": {"key": [{"prefix": "auto-"}]}}, "eventName": [{"prefix": "ObjectCreated:"}]}}`
	add(bodyCases("array-of-objects", s3,
		[]string{`{"Records": [{"eventName": "ObjectCreated:Put", "s3": {"object": {"key": "auto-insurance-2314.xml"}}}]}`,
			`{"Records": [{"eventName": "ObjectCreated:Put", "s3": {"object": [[{"key": "auto-insurance-2314.xml"}]]}},
				{"eventName": "ObjectRemoved:Delete", "s3": {"object": {"key": "home-insurance-2314.xml"}}}]}`},
		[]string{`{"Records": [{"eventName": "ObjectRemoved:Delete", "s3": {"object": {"key": "auto-insurance-2314.xml"}}}]}`,
			`{"Records": [{"eventName": "ObjectCreated:Put", "s3": {"object": {"key": "home-insurance-2314.xml"}}}]}`})...)

	// The scopes do not look at each other: attributes never match a
	// body policy, a body never an attribute policy; Binary attributes
	// are not filtered on.
	add(filterCase{name: "scope/body-ignores-attributes", scope: sns.ScopeBody, policy: `{"store": ["x"]}`, body: `{}`,
		attrs: one(strAttr("store", "x")), want: false})
	add(filterCase{name: "scope/attributes-ignore-body", policy: `{"store": ["x"]}`, body: `{"store": "x"}`, want: false})
	add(filterCase{name: "binary-ignored", policy: `{"b": [{"exists": true}]}`, body: "m",
		attrs: one(sns.MessageAttribute{Name: "b", MessageAttribute: baton.MessageAttribute{DataType: "Binary", BinaryValue: []byte("x")}}), want: false})
	return cs
}

// TestFilterPolicyOperators runs every operator AWS documents over the
// documentation's examples and their documented results.
func TestFilterPolicyOperators(t *testing.T) {
	t.Parallel()
	for _, tc := range filterCases() {
		f, err := sns.ParseFilterPolicy(tc.policy, tc.scope)
		if err != nil {
			t.Errorf("%s: ParseFilterPolicy(%s): %v", tc.name, tc.policy, err)
			continue
		}
		if got := f.Match(tc.body, tc.attrs); got != tc.want {
			t.Errorf("%s: policy %s, body %s, attributes %v: Match = %v, want %v", tc.name, tc.policy, tc.body, tc.attrs, got, tc.want)
		}
	}
}

// refusalCase is an invalid policy, its scope and AWS's refusal text (after
// "Invalid parameter: "; one ending in a space is a prefix).
type refusalCase struct {
	policy, scope, msg string
}

// refusalCases are AWS's refusals of each kind of invalid policy, as
// recorded on AWS (SNS-CONTRACT §6) or, where marked, as AWS's open-source
// matcher words them.
func refusalCases() []refusalCase {
	values := func(n int) string {
		vs := make([]string, n)
		for i := range vs {
			vs[i] = `"v` + string(rune('a'+i%26)) + strings.Repeat("x", i/26) + `"`
		}
		return "[" + strings.Join(vs, ",") + "]"
	}
	return []refusalCase{
		{`{"key":[["value"]]}`, "", "FilterPolicy: Match value must be String, number, true, false, or null"},
		{`{"key":[{"wrong-operator":true}]}`, "", "FilterPolicy: Unrecognized match type wrong-operator"},
		{`{"key":[{"suffix":"value","prefix":"value2"}]}`, "", "FilterPolicy: Only one key allowed in match expression"},
		{`{"key":[{"suffix":100}]}`, "", "FilterPolicy: suffix match pattern must be a string"},
		{`{"key":[{"suffix":null}]}`, "", "FilterPolicy: suffix match pattern must be a string"},
		{`{"key":[{"suffix":[]}]}`, "", "FilterPolicy: suffix match pattern must be a string"},
		{`{"key":[{"prefix":1}]}`, "", "FilterPolicy: prefix match pattern must be a string"},
		{`{"key":[{"equals-ignore-case":1}]}`, "", "FilterPolicy: equals-ignore-case match pattern must be a string"},
		{`{"key":{"suffix":"value"}}`, ScopeBodyOrAttr, `FilterPolicy: "suffix" must be an object or an array`},
		{`{"key":{"not-an-operator":"value"}}`, ScopeBodyOrAttr, `FilterPolicy: "not-an-operator" must be an object or an array`},
		{`{"key_a":"value_one"}`, "", `FilterPolicy: "key_a" must be an object or an array`},
		{`{"key":[]}`, "", "FilterPolicy: Empty arrays are not allowed"},
		{`{"key":[{"numeric":[]}]}`, "", "FilterPolicy: Invalid member in numeric match: ]"},
		{`{"key":[{"numeric":["operator"]}]}`, "", "FilterPolicy: Unrecognized numeric range operator: operator"},
		{`{"key":[{"numeric":[1,"<="]}]}`, "", "FilterPolicy: Invalid member in numeric match: 1"},
		{`{"key":[{"numeric":["=","000"]}]}`, "", "FilterPolicy: Value of equals must be numeric"},
		{`{"key":[{"numeric":[">="]}]}`, "", "FilterPolicy: Value of >= must be numeric"},
		{`{"key":[{"numeric":["<",100,">",10]}]}`, "", "FilterPolicy: Too many elements in numeric expression"},
		{`{"key":[{"numeric":[">=",1,">",2]}]}`, "", "FilterPolicy: Bad numeric range operator: >"},
		{`{"key":[{"numeric":[">",3,"<",1]}]}`, "", "FilterPolicy: Bottom must be less than top"},
		{`{"key":[{"numeric":[">",20,"<="]}]}`, "", "FilterPolicy: Value of <= must be numeric"},
		{`{"key":[{"numeric":[">",20,30]}]}`, "", "FilterPolicy: Bad value in numeric range: 30"},
		{`{"key":[{"numeric":[">",20,"test"]}]}`, "", "FilterPolicy: Bad numeric range operator: test"},
		{`{"key":[{"numeric":[">","20","<","30"]}]}`, "", "FilterPolicy: Value of > must be numeric"},
		{`{"key":[{"numeric":[">",20,"<","30"]}]}`, "", "FilterPolicy: Value of < must be numeric"},
		{`{"key":[{"numeric":[">",20,"<",30,"<",50]}]}`, "", "FilterPolicy: Too many terms in numeric range expression"},
		{`{"key":[{"exists":null}]}`, "", "FilterPolicy: exists match pattern must be either true or false."},
		{`{"key":[{"exists":"no"}]}`, "", "FilterPolicy: exists match pattern must be either true or false."},
		{`{"key":[{"anything-but":{"wrong-operator":null}}]}`, "", "FilterPolicy: Unsupported anything-but pattern: wrong-operator"},
		{`{"key":[{"anything-but":{"suffix":"test"}}]}`, "", "FilterPolicy: Unsupported anything-but pattern: suffix"},
		{`{"key":[{"anything-but":{"exists":false}}]}`, "", "FilterPolicy: Unsupported anything-but pattern: exists"},
		{`{"key":[{"anything-but":{"prefix":false}}]}`, "", "FilterPolicy: prefix match pattern must be a string"},
		{`{"key":[{"cidr":["x"]}]}`, "", "FilterPolicy: prefix match pattern must be a string"},
		{`{"key":[{"cidr":"10.0.0.0"}]}`, "", "FilterPolicy: Malformed CIDR, one '/' required"},
		{`{"key":[{"cidr":"10.0.0.0/x"}]}`, "", "FilterPolicy: Malformed CIDR, mask bits must be an integer"},
		{`{"key":[{"cidr":"10.0.0.256/24"}]}`, "", "FilterPolicy: Nonstandard IP address: 10.0.0.256"},
		{`{"key":` + values(151) + `}`, "", "FilterPolicy: Filter policy is too complex"},
		{`{"key1":` + values(100) + `,"key2":` + values(51) + `}`, "", "FilterPolicy: Filter policy is too complex"},
		{`{"key1":["v"],"key2":["v"],"key3":["v"],"key4":["v"],"key5":["v"],"key6":["v"]}`, "", "FilterPolicy: Filter policy can not have more than 5 keys"},
		// 3 x 4 x 2 x 3 x 1 x 3 = 216: each array's length times its depth.
		{`{"key_a":{"key_b":{"key_c":["1","2","3","4"]}},"key_d":{"key_e":["1","2","3"]},"key_f":["1","2","3"]}`, sns.ScopeBody,
			"FilterPolicy: Filter policy is too complex"},
		// (4 x 6) + (4 x 4 x 4) + (4 x 4 x 4) = 152
		{`{"source":["a","b","c","d"],"$or":[{"metricName":["1","2","3","4","5","6"]},{"metricType":["1","2","3","4"],` +
			`"$or":[{"metricId":[1,2,3,4]},{"spaceId":[1,2,3,4]}]}]}`, "", "FilterPolicy: Filter policy is too complex"},
		// (3 x 4 x 2) + (3 x 4 x 6) + (2 x 4 x 2) + (2 x 4 x 6) = 160
		{`{"$or":[{"metricName":["a","b","c"]},{"namespace":["a","b"]}],"detail":{"scope":["a","b"],` +
			`"$or":[{"source":["a"]},{"type":["a","b","c"]}]}}`, sns.ScopeBody, "FilterPolicy: Filter policy is too complex"},
		{`{"object":{"key":[{"prefix":"auto-"}]}}`, "", "Filter policy scope MessageAttributes does not support nested filter policy"},
		{`{invalidjson}`, "", "FilterPolicy: failed to parse JSON. "},
		// Not recorded on SNS: the texts of AWS's open-source matcher.
		{`{}`, "", "FilterPolicy: Empty objects are not allowed"},
		{`{"key":[{}]}`, "", "FilterPolicy: Match expression name not found"},
		{`{"key":[{"anything-but":"a","x":1}]}`, "", "FilterPolicy: Too many elements in numeric expression"},
		{`{"key":[{"anything-but":{"prefix":"a"},"x":1}]}`, "", "FilterPolicy: Only one key allowed in match expression"},
		{`{"key":[{"anything-but":["a",1]}]}`, "", "FilterPolicy: Inside anything but list, either all values are number or string, mixed type is not supported"},
		{`{"key":[{"anything-but":true}]}`, "", "FilterPolicy: Value of anything-but must be an array or single string/number value."},
		{`{"$or":[{"a":["1"]}]}`, "", "FilterPolicy: There must have at least 2 Objects in $or relationship."},
		{`{"$or":{"a":["1"]}}`, "", "FilterPolicy: It must be an Array followed with $or."},
		{`{"$or":[{"prefix":["1"]},{"b":["2"]}]}`, "", "FilterPolicy: prefix is Ruler reserved fieldName which cannot be used inside $or."},
		{`{"key":[{"cidr":"10.0.0.0/32"}]}`, "", "FilterPolicy: IPv4 mask bits must be < 32"},
		{`["key"]`, "", "FilterPolicy: Filter is not an object"},
	}
}

// TestFilterPolicyRefusals pins AWS's refusal of each kind of invalid
// policy: code InvalidParameter, AWS's text (without the parser location
// AWS appends after a line break).
func TestFilterPolicyRefusals(t *testing.T) {
	t.Parallel()
	for _, tc := range refusalCases() {
		scope := tc.scope
		if scope == ScopeBodyOrAttr {
			scope = sns.ScopeBody
		}
		_, err := sns.ParseFilterPolicy(tc.policy, scope)
		e := baton.AsError(err)
		want := "Invalid parameter: " + tc.msg
		if err == nil || e.Code != baton.ErrSNSInvalidParameter || !strings.HasPrefix(e.Message, want) ||
			(!strings.HasSuffix(tc.msg, " ") && e.Message != want) {
			t.Errorf("ParseFilterPolicy(%s, %q) = %v, want InvalidParameter %q", tc.policy, scope, err, want)
		}
	}
	// The recorded policy of complexity 150 exactly is taken.
	ok := `{"source":["a","b","c"],"$or":[{"metricName":["1","2","3","4","5","6"]},{"metricType":["1","2","3","4"],` +
		`"$or":[{"metricId":[1,2,3,4]},{"spaceId":[1,2,3,4,5,6,7]}]}]}`
	if _, err := sns.ParseFilterPolicy(ok, ""); err != nil {
		t.Errorf("a policy of complexity 150: %v", err)
	}
}

// ScopeBodyOrAttr marks a refusal that is the same in both scopes (tested
// in the body scope, where nesting is allowed).
const ScopeBodyOrAttr = "either"
