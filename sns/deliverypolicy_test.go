package sns

import (
	"testing"
	"time"
)

// TestDeliveryPolicyPhases: retries come in AWS's four phases (immediate,
// pre-backoff at the minimum delay, backoff from the minimum to the
// maximum, post-backoff at the maximum), and a subscription's policy
// overrides the topic's unless the topic disables overrides.
func TestDeliveryPolicyPhases(t *testing.T) {
	p := effectivePolicy("", `{"healthyRetryPolicy":{"numRetries":10,"numNoDelayRetries":2,"numMinDelayRetries":2,`+
		`"numMaxDelayRetries":2,"minDelayTarget":1,"maxDelayTarget":10,"backoffFunction":"linear"}}`)
	want := []int{0, 0, 1, 1, 1, 4, 7, 10, 10, 10}
	for i, w := range want {
		if got := p.delay(i + 1); got != time.Duration(w)*time.Second {
			t.Errorf("retry %d after %v, want %ds", i+1, got, w)
		}
	}
	for _, fn := range []string{"arithmetic", "geometric", "exponential"} {
		p.backoff = fn
		prev := time.Duration(0)
		for n := 5; n <= 8; n++ {
			d := p.delay(n)
			if d < prev || d < time.Second || d > 10*time.Second {
				t.Errorf("%s: retry %d after %v, after %v before: not rising from 1 s to 10 s", fn, n, d, prev)
			}
			prev = d
		}
		if p.delay(5) != time.Second || p.delay(8) != 10*time.Second {
			t.Errorf("%s: backoff from %v to %v, want 1s to 10s", fn, p.delay(5), p.delay(8))
		}
	}

	def := effectivePolicy("", "")
	if def.retries != 3 || def.delay(1) != 20*time.Second || def.delay(3) != 20*time.Second || def.contentType != "text/plain; charset=UTF-8" {
		t.Errorf("default policy %+v", def)
	}
	topic := `{"http":{"defaultHealthyRetryPolicy":{"numRetries":7},"disableSubscriptionOverrides":true}}`
	if got := effectivePolicy(topic, `{"healthyRetryPolicy":{"numRetries":1}}`).retries; got != 7 {
		t.Errorf("overrides disabled: %d retries, want the topic's 7", got)
	}
	topic = `{"http":{"defaultHealthyRetryPolicy":{"numRetries":7}}}`
	if got := effectivePolicy(topic, `{"healthyRetryPolicy":{"numRetries":1}}`).retries; got != 1 {
		t.Errorf("%d retries, want the subscription's 1", got)
	}
	if got := effectivePolicy(topic, "").retries; got != 7 {
		t.Errorf("%d retries, want the topic's 7", got)
	}
}
