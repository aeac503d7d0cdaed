package sns_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/sns"
)

// TestFilterPolicyNumberBounds: a policy's numbers must lie within
// -10^9..10^9 (AWS's documented bounds, inclusive), wherever they are a
// match value; beyond, the policy is refused with InvalidParameter.
func TestFilterPolicyNumberBounds(t *testing.T) {
	t.Parallel()
	const refusal = "Invalid parameter: FilterPolicy: Value must be between -1.0E9 and 1.0E9, inclusive"
	for _, tc := range []struct {
		policy string
		ok     bool
	}{
		{`{"k":[1000000000]}`, true},
		{`{"k":[-1000000000]}`, true},
		{`{"k":[1e9]}`, true},
		{`{"k":[{"numeric":[">=",-1000000000,"<=",1000000000]}]}`, true},
		{`{"k":[100.123456789]}`, true}, // more decimals are taken, compared at five
		{`{"k":[1000000001]}`, false},
		{`{"k":[-1000000000.00001]}`, false},
		{`{"k":[1e10]}`, false},
		{`{"k":[1e400]}`, false},
		{`{"k":[{"numeric":["=",1000000001]}]}`, false},
		{`{"k":[{"numeric":[">",0,"<",1000000000.5]}]}`, false},
		{`{"k":[{"numeric":["<",-2000000000]}]}`, false},
		{`{"k":[{"anything-but":1000000001}]}`, false},
		{`{"k":[{"anything-but":[1,1000000001]}]}`, false},
		{`{"k":["1000000001"]}`, true}, // a string, not a number
	} {
		_, err := sns.ParseFilterPolicy(tc.policy, "")
		switch {
		case tc.ok && err != nil:
			t.Errorf("ParseFilterPolicy(%s) = %v, want it taken", tc.policy, err)
		case !tc.ok && (err == nil || baton.AsError(err).Code != baton.ErrSNSInvalidParameter || baton.AsError(err).Message != refusal):
			t.Errorf("ParseFilterPolicy(%s) = %v, want InvalidParameter %q", tc.policy, err, refusal)
		}
	}
}

// TestFilterPolicyNumberPrecision: numbers compare with five digits after
// the decimal point, rounded down, in both scopes; a message's number
// beyond the bounds matches no numeric condition.
func TestFilterPolicyNumberPrecision(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		policy, value string
		want          bool
	}{
		// AWS was seen to match these (policy 100.123456789, message 100.1234567).
		{`{"p":[100.123456789]}`, "100.1234567", true},
		{`{"p":[{"numeric":["=",100.123456789]}]}`, "100.1234567", true},
		{`{"p":[100.00001]}`, "100.000019999", true},
		{`{"p":[100.00001]}`, "100.00002", false},
		{`{"p":[0.3]}`, "0.30000000000000004", true},
		{`{"p":[301.5]}`, "3.015e2", true},
		{`{"p":[{"numeric":[">",1.000001,"<",2]}]}`, "1.000009", false}, // equal to the bound at five places
		{`{"p":[{"numeric":[">",1.000001,"<",2]}]}`, "1.00001", true},
		{`{"p":[{"numeric":["<",0]}]}`, "-0.000001", true}, // rounded down, below zero
		{`{"p":[{"numeric":[">",0]}]}`, "1000000001", false},
		{`{"p":[{"anything-but":[100]}]}`, "100.000001", false},
		{`{"p":[{"anything-but":[100]}]}`, "100.00001", true},
	} {
		f, err := sns.ParseFilterPolicy(tc.policy, "")
		if err != nil {
			t.Fatalf("ParseFilterPolicy(%s): %v", tc.policy, err)
		}
		if got := f.Match("m", one(numAttr("p", tc.value))); got != tc.want {
			t.Errorf("%s with Number attribute %s: Match = %v, want %v", tc.policy, tc.value, got, tc.want)
		}
		fb, err := sns.ParseFilterPolicy(tc.policy, sns.ScopeBody)
		if err != nil {
			t.Fatalf("ParseFilterPolicy(%s, body): %v", tc.policy, err)
		}
		if got := fb.Match(`{"p":`+tc.value+`}`, nil); got != tc.want {
			t.Errorf("%s with body number %s: Match = %v, want %v", tc.policy, tc.value, got, tc.want)
		}
	}
}

// TestFilterPolicyArraysOfObjects: the keys of a policy object match values
// of one element of an array of objects, never values taken from two.
func TestFilterPolicyArraysOfObjects(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, policy, body string
		want               bool
	}{
		{"same element", `{"items":{"sku":["a"],"qty":[{"numeric":[">",5]}]}}`,
			`{"items":[{"sku":"b","qty":1},{"sku":"a","qty":9}]}`, true},
		{"two elements", `{"items":{"sku":["a"],"qty":[{"numeric":[">",5]}]}}`,
			`{"items":[{"sku":"a","qty":1},{"sku":"b","qty":9}]}`, false},
		{"one key any element", `{"items":{"sku":["b"]}}`, `{"items":[{"sku":"a"},{"sku":"b"}]}`, true},
		{"nested arrays", `{"a":{"x":[1],"y":[4]}}`, `{"a":[[{"x":1,"y":2}],[{"x":3,"y":4}]]}`, false},
		{"nested arrays same", `{"a":{"x":[3],"y":[4]}}`, `{"a":[[{"x":1,"y":2}],[{"x":3,"y":4}]]}`, true},
		{"deeper object", `{"Records":{"eventName":[{"prefix":"ObjectCreated:"}],"s3":{"object":{"key":[{"prefix":"auto-"}]}}}}`,
			`{"Records":[{"eventName":"ObjectCreated:Put","s3":{"object":{"key":"home-1"}}},` +
				`{"eventName":"ObjectRemoved:Delete","s3":{"object":{"key":"auto-1"}}}]}`, false},
		// The record AWS matched: the first element has both.
		{"recorded", `{"Records":{"eventName":[{"prefix":"ObjectCreated:"}],"s3":{"object":{"key":[{"prefix":"auto-"}]}}}}`,
			`{"Records":[{"eventName":"ObjectCreated:Put","s3":{"object":[[{"key":"auto-insurance-2314.xml"}]]}},` +
				`{"eventName":"ObjectRemoved:Delete","s3":{"object":{"key":"home-insurance-2314.xml"}}}]}`, true},
		{"array of plain values in an element", `{"items":{"tags":["x"],"id":[2]}}`,
			`{"items":[{"tags":["x","y"],"id":1},{"tags":["z"],"id":2}]}`, false},
		{"array of plain values same element", `{"items":{"tags":["z"],"id":[2]}}`,
			`{"items":[{"tags":["x","y"],"id":1},{"tags":["z","w"],"id":2}]}`, true},
		{"outside the array", `{"store":["s"],"items":{"sku":["a"]}}`, `{"store":"s","items":[{"sku":"b"},{"sku":"a"}]}`, true},
		{"exists false in the element", `{"items":{"sku":["a"],"gift":[{"exists":false}]}}`,
			`{"items":[{"sku":"a","gift":true},{"sku":"b"}]}`, false},
		{"exists false other element", `{"items":{"sku":["b"],"gift":[{"exists":false}]}}`,
			`{"items":[{"sku":"a","gift":true},{"sku":"b"}]}`, true},
		{"anything-but in the element", `{"items":{"sku":["a"],"state":[{"anything-but":"gone"}]}}`,
			`{"items":[{"sku":"a","state":"gone"},{"sku":"b","state":"here"}]}`, false},
		{"anything-but same element", `{"items":{"sku":["b"],"state":[{"anything-but":"gone"}]}}`,
			`{"items":[{"sku":"a","state":"gone"},{"sku":"b","state":"here"}]}`, true},
		{"$or within the element", `{"items":{"sku":["a"],"$or":[{"qty":[9]},{"qty":[8]}]}}`,
			`{"items":[{"sku":"a","qty":1},{"sku":"b","qty":9}]}`, false},
		{"$or same element", `{"items":{"sku":["a"],"$or":[{"qty":[9]},{"qty":[1]}]}}`,
			`{"items":[{"sku":"a","qty":1},{"sku":"b","qty":9}]}`, true},
	} {
		f, err := sns.ParseFilterPolicy(tc.policy, sns.ScopeBody)
		if err != nil {
			t.Fatalf("%s: ParseFilterPolicy(%s): %v", tc.name, tc.policy, err)
		}
		if got := f.Match(tc.body, nil); got != tc.want {
			t.Errorf("%s: policy %s, body %s: Match = %v, want %v", tc.name, tc.policy, tc.body, got, tc.want)
		}
	}
}

// TestFilterPolicyArraysBounded: a body that would make the search look
// at too many values is decided in bounded time, by each key over all its
// values (as if arrays had no elements of their own), as documented.
func TestFilterPolicyArraysBounded(t *testing.T) {
	t.Parallel()
	var a []string
	for i := range 4000 {
		key := "x"
		if i%2 == 1 {
			key = "w"
		}
		a = append(a, fmt.Sprintf(`{%q:1,"i":%d}`, key, i))
	}
	// No element has both x and w: array-consistent matching says no, after
	// trying each of 2000 x's against 2000 w's; the bounded search gives up
	// and answers by all values, where both are present.
	body := `{"a":[` + strings.Join(a, ",") + `]}`
	f, err := sns.ParseFilterPolicy(`{"a":{"x":[1],"w":[1]}}`, sns.ScopeBody)
	if err != nil {
		t.Fatal(err)
	}
	if !f.Match(body, nil) {
		t.Errorf("Match = false, want true (the bounded search's answer)")
	}
	small := `{"a":[` + strings.Join(a[:20], ",") + `]}`
	if f.Match(small, nil) {
		t.Errorf("Match on 20 elements = true, want false")
	}
}
