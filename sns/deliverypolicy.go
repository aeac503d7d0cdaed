package sns

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// retryPolicy is an HTTP/S delivery policy's healthyRetryPolicy: how often
// and how far apart a failed delivery is tried again (AWS's SNS Developer
// Guide, "Amazon SNS message delivery retries"). Members left out of a
// policy take the defaults.
type retryPolicy struct {
	MinDelayTarget     *int    `json:"minDelayTarget,omitempty"`
	MaxDelayTarget     *int    `json:"maxDelayTarget,omitempty"`
	NumRetries         *int    `json:"numRetries,omitempty"`
	NumMaxDelayRetries *int    `json:"numMaxDelayRetries,omitempty"`
	NumNoDelayRetries  *int    `json:"numNoDelayRetries,omitempty"`
	NumMinDelayRetries *int    `json:"numMinDelayRetries,omitempty"`
	BackoffFunction    *string `json:"backoffFunction,omitempty"`
}

type throttlePolicy struct {
	MaxReceivesPerSecond *int `json:"maxReceivesPerSecond,omitempty"`
}

type requestPolicy struct {
	HeaderContentType *string `json:"headerContentType,omitempty"`
}

// topicDeliveryPolicy is a topic's DeliveryPolicy: the defaults of its
// HTTP/S subscriptions.
type topicDeliveryPolicy struct {
	HTTP *struct {
		DefaultHealthyRetryPolicy    *retryPolicy    `json:"defaultHealthyRetryPolicy,omitempty"`
		DisableSubscriptionOverrides bool            `json:"disableSubscriptionOverrides"`
		DefaultThrottlePolicy        *throttlePolicy `json:"defaultThrottlePolicy,omitempty"`
		DefaultRequestPolicy         *requestPolicy  `json:"defaultRequestPolicy,omitempty"`
	} `json:"http,omitempty"`
}

// subscriptionDeliveryPolicy is a subscription's DeliveryPolicy, in the
// members AWS stores it with: those not given are null.
type subscriptionDeliveryPolicy struct {
	HealthyRetryPolicy *retryPolicy    `json:"healthyRetryPolicy"`
	SicklyRetryPolicy  *retryPolicy    `json:"sicklyRetryPolicy"`
	ThrottlePolicy     *throttlePolicy `json:"throttlePolicy"`
	RequestPolicy      *requestPolicy  `json:"requestPolicy"`
	Guaranteed         bool            `json:"guaranteed"`
}

// deliveryPolicy is the policy one HTTP/S delivery follows: the
// subscription's, else the topic's, else AWS's defaults, member by member.
type deliveryPolicy struct {
	minDelay, maxDelay                      int // seconds
	retries, noDelayN, minDelayN, maxDelayN int
	backoff                                 string
	maxPerSecond                            int // 0: unthrottled
	contentType                             string
}

// The defaults of an HTTP/S delivery (AWS's EffectiveDeliveryPolicy of a
// topic without a DeliveryPolicy): three retries 20 s apart.
const (
	defaultDelayTarget = 20
	defaultNumRetries  = 3
	defaultBackoff     = "linear"
	defaultContentType = "text/plain; charset=UTF-8"
	// maxRetryTime bounds the whole retry schedule: AWS's hard limit.
	maxRetryTime = 3600
)

var backoffFunctions = map[string]bool{"linear": true, "arithmetic": true, "geometric": true, "exponential": true}

// decodeStrict reads JSON into v, refusing members v does not have.
func decodeStrict(s string, v any) error {
	d := json.NewDecoder(bytes.NewReader([]byte(s)))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return fmt.Errorf("data after the JSON object")
	}
	return nil
}

// checkTopicDeliveryPolicy checks a topic's DeliveryPolicy and returns it
// as it is stored: "disableSubscriptionOverrides" always present, null
// members left out. "" removes the policy.
func checkTopicDeliveryPolicy(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	var p topicDeliveryPolicy
	if err := decodeStrict(v, &p); err != nil {
		return "", invalidParameter("DeliveryPolicy: failed to parse JSON. %v", err)
	}
	if p.HTTP != nil {
		if err := checkPolicyParts(p.HTTP.DefaultHealthyRetryPolicy, p.HTTP.DefaultThrottlePolicy, p.HTTP.DefaultRequestPolicy); err != nil {
			return "", err
		}
	}
	b, _ := json.Marshal(p)
	return string(b), nil
}

// checkSubscriptionDeliveryPolicy checks a subscription's DeliveryPolicy
// and returns it as AWS stores it.
func checkSubscriptionDeliveryPolicy(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	var p subscriptionDeliveryPolicy
	if err := decodeStrict(v, &p); err != nil {
		return "", invalidParameter("DeliveryPolicy: failed to parse JSON. %v", err)
	}
	if err := checkPolicyParts(p.HealthyRetryPolicy, p.ThrottlePolicy, p.RequestPolicy); err != nil {
		return "", err
	}
	p.SicklyRetryPolicy, p.Guaranteed = nil, false
	b, _ := json.Marshal(p)
	return string(b), nil
}

// checkPolicyParts checks the members of a delivery policy against AWS's
// documented bounds.
func checkPolicyParts(r *retryPolicy, t *throttlePolicy, q *requestPolicy) error {
	if t != nil && t.MaxReceivesPerSecond != nil && *t.MaxReceivesPerSecond < 1 {
		return invalidParameter("DeliveryPolicy: maxReceivesPerSecond must be at least 1")
	}
	if q != nil && q.HeaderContentType != nil && *q.HeaderContentType == "" {
		return invalidParameter("DeliveryPolicy: headerContentType must not be empty")
	}
	if r == nil {
		return nil
	}
	p := policyOf(r, nil, nil)
	switch {
	case p.retries < 0 || p.retries > 100:
		return invalidParameter("DeliveryPolicy: numRetries must be between 0 and 100")
	case p.noDelayN < 0 || p.minDelayN < 0 || p.maxDelayN < 0:
		return invalidParameter("DeliveryPolicy: the numbers of retries of each phase must not be negative")
	case p.noDelayN+p.minDelayN+p.maxDelayN > p.retries:
		return invalidParameter("DeliveryPolicy: numNoDelayRetries, numMinDelayRetries and numMaxDelayRetries together must not exceed numRetries")
	case p.minDelay < 1:
		return invalidParameter("DeliveryPolicy: minDelayTarget must be at least 1")
	case p.maxDelay > maxRetryTime:
		return invalidParameter("DeliveryPolicy: maxDelayTarget must be at most %d", maxRetryTime)
	case p.minDelay > p.maxDelay:
		return invalidParameter("DeliveryPolicy: minDelayTarget must not exceed maxDelayTarget")
	case !backoffFunctions[p.backoff]:
		return invalidParameter("DeliveryPolicy: backoffFunction must be one of linear, arithmetic, geometric, exponential")
	}
	var total time.Duration
	for i := 1; i <= p.retries; i++ {
		total += p.delay(i)
	}
	if total > maxRetryTime*time.Second {
		return invalidParameter("DeliveryPolicy: the retries take more than %d seconds in all", maxRetryTime)
	}
	return nil
}

// policyOf overlays the given parts on AWS's defaults.
func policyOf(r *retryPolicy, t *throttlePolicy, q *requestPolicy) deliveryPolicy {
	p := deliveryPolicy{minDelay: defaultDelayTarget, maxDelay: defaultDelayTarget, retries: defaultNumRetries,
		backoff: defaultBackoff, contentType: defaultContentType}
	if r != nil {
		setInt(&p.minDelay, r.MinDelayTarget)
		setInt(&p.maxDelay, r.MaxDelayTarget)
		setInt(&p.retries, r.NumRetries)
		setInt(&p.noDelayN, r.NumNoDelayRetries)
		setInt(&p.minDelayN, r.NumMinDelayRetries)
		setInt(&p.maxDelayN, r.NumMaxDelayRetries)
		if r.BackoffFunction != nil {
			p.backoff = *r.BackoffFunction
		}
	}
	if t != nil {
		setInt(&p.maxPerSecond, t.MaxReceivesPerSecond)
	}
	if q != nil && q.HeaderContentType != nil {
		p.contentType = *q.HeaderContentType
	}
	return p
}

func setInt(dst *int, v *int) {
	if v != nil {
		*dst = *v
	}
}

// effectivePolicy is the delivery policy of a subscription of a topic: each
// part the subscription's (unless the topic disables overrides), else the
// topic's default, else AWS's. Both were checked when set.
func effectivePolicy(topicPolicy, subPolicy string) deliveryPolicy {
	var tp topicDeliveryPolicy
	var sp subscriptionDeliveryPolicy
	if topicPolicy != "" {
		json.Unmarshal([]byte(topicPolicy), &tp)
	}
	if subPolicy != "" {
		json.Unmarshal([]byte(subPolicy), &sp)
	}
	r, t, q := sp.HealthyRetryPolicy, sp.ThrottlePolicy, sp.RequestPolicy
	if h := tp.HTTP; h != nil {
		if h.DisableSubscriptionOverrides {
			r, t, q = nil, nil, nil
		}
		r = cmpPtr(r, h.DefaultHealthyRetryPolicy)
		t = cmpPtr(t, h.DefaultThrottlePolicy)
		q = cmpPtr(q, h.DefaultRequestPolicy)
	}
	return policyOf(r, t, q)
}

func cmpPtr[T any](a, b *T) *T {
	if a != nil {
		return a
	}
	return b
}

// delay is how long after a failed attempt retry n (from 1) comes: none in
// the immediate phase, the minimum delay in the pre-backoff phase, rising
// from the minimum to the maximum by the backoff function in the backoff
// phase, the maximum in the post-backoff phase. AWS does not publish its
// curves; these rise as their names say (UNCONFIRMED against AWS).
func (p deliveryPolicy) delay(n int) time.Duration {
	backoffN := p.retries - p.noDelayN - p.minDelayN - p.maxDelayN
	switch {
	case n <= p.noDelayN:
		return 0
	case n <= p.noDelayN+p.minDelayN:
		return time.Duration(p.minDelay) * time.Second
	case n > p.noDelayN+p.minDelayN+backoffN:
		return time.Duration(p.maxDelay) * time.Second
	}
	i := n - p.noDelayN - p.minDelayN // 1..backoffN
	x := 1.0
	if backoffN > 1 {
		x = float64(i-1) / float64(backoffN-1)
	}
	var f float64
	switch p.backoff {
	case "arithmetic":
		f = x * (x + 1) / 2
	case "geometric":
		f = x * x
	case "exponential":
		f = (math.Pow(2, 10*x) - 1) / (math.Pow(2, 10) - 1)
	default: // linear
		f = x
	}
	secs := float64(p.minDelay) + f*float64(p.maxDelay-p.minDelay)
	return time.Duration(math.Round(secs)) * time.Second
}

// effectiveTopicDeliveryPolicy is a topic's EffectiveDeliveryPolicy: AWS's
// defaults, overlaid by the topic's DeliveryPolicy.
func effectiveTopicDeliveryPolicy(topicPolicy string) string {
	if topicPolicy == "" {
		return defaultEffectiveDeliveryPolicy
	}
	var tp topicDeliveryPolicy
	json.Unmarshal([]byte(topicPolicy), &tp)
	p := policyOf(nil, nil, nil)
	disable := false
	var throttle *throttlePolicy
	if h := tp.HTTP; h != nil {
		p = policyOf(h.DefaultHealthyRetryPolicy, h.DefaultThrottlePolicy, h.DefaultRequestPolicy)
		disable, throttle = h.DisableSubscriptionOverrides, h.DefaultThrottlePolicy
	}
	h := orderedJSON{{"defaultHealthyRetryPolicy", p.retryJSON()}, {"disableSubscriptionOverrides", disable}}
	if throttle != nil {
		h = append(h, jsonMember{"defaultThrottlePolicy", throttle})
	}
	h = append(h, jsonMember{"defaultRequestPolicy", requestPolicy{HeaderContentType: &p.contentType}})
	out := orderedJSON{{"http", h}}
	b, _ := json.Marshal(out)
	return string(b)
}

// effectiveSubscriptionDeliveryPolicy is an HTTP/S subscription's
// EffectiveDeliveryPolicy, in the members of its stored DeliveryPolicy
// (the layout is UNCONFIRMED against AWS).
func effectiveSubscriptionDeliveryPolicy(p deliveryPolicy) string {
	var throttle any
	if p.maxPerSecond > 0 {
		throttle = throttlePolicy{MaxReceivesPerSecond: &p.maxPerSecond}
	}
	b, _ := json.Marshal(orderedJSON{
		{"healthyRetryPolicy", p.retryJSON()},
		{"sicklyRetryPolicy", nil},
		{"throttlePolicy", throttle},
		{"requestPolicy", requestPolicy{HeaderContentType: &p.contentType}},
		{"guaranteed", false},
	})
	return string(b)
}

// retryJSON is the retry part in the members and order AWS shows.
func (p deliveryPolicy) retryJSON() orderedJSON {
	return orderedJSON{
		{"minDelayTarget", p.minDelay}, {"maxDelayTarget", p.maxDelay}, {"numRetries", p.retries},
		{"numMaxDelayRetries", p.maxDelayN}, {"numNoDelayRetries", p.noDelayN}, {"numMinDelayRetries", p.minDelayN},
		{"backoffFunction", p.backoff},
	}
}

// orderedJSON is a JSON object whose members keep their order.
type orderedJSON []jsonMember

type jsonMember struct {
	k string
	v any
}

func (o orderedJSON) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.k)
		v, err := json.Marshal(m.v)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
