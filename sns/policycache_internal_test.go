package sns

import (
	"fmt"
	"testing"
)

// TestVerdictsKeepTheAnswer: a verdict asked again with the same Policy is
// policyVerdict's answer, remembered (no parse: no allocation); asked
// with another Policy, or about another queue or topic, it is evaluated
// afresh.
func TestVerdictsKeepTheAnswer(t *testing.T) {
	const queue, topic, account = "arn:aws:sqs:us-east-1:000000000000:q", "arn:aws:sns:us-east-1:000000000000:t", "000000000000"
	allows := `{"Statement":[{"Effect":"Allow","Principal":{"Service":"sns.amazonaws.com"},"Action":"sqs:SendMessage","Resource":"` + queue +
		`","Condition":{"ArnEquals":{"aws:SourceArn":"` + topic + `"}}}]}`
	var v verdicts
	for _, c := range []struct {
		policy, queue, topic string
	}{{allows, queue, topic}, {"", queue, topic}, {allows, queue, topic}, {allows, queue, topic + "2"}, {allows, queue + "2", topic}, {`{"Statement":[`, queue, topic}} {
		wantRefused, wantWhy := policyVerdict(c.policy, c.queue, c.topic, account)
		for range 2 {
			if refused, why := v.verdict(c.policy, c.queue, c.topic, account); refused != wantRefused || why != wantWhy {
				t.Errorf("verdict(%q, %s, %s) = %v %q, want policyVerdict's %v %q", c.policy, c.queue, c.topic, refused, why, wantRefused, wantWhy)
			}
		}
	}
	if n := testing.AllocsPerRun(100, func() { v.verdict(allows, queue, topic, account) }); n > 1 {
		t.Errorf("a remembered verdict allocates %v times, want none: the Policy is parsed again", n)
	}
}

// TestVerdictsBounded: verdicts keeps at most maxVerdicts answers however
// many queues and topics it is asked about, and answers right past it.
func TestVerdictsBounded(t *testing.T) {
	var v verdicts
	for i := range 3 * maxVerdicts {
		q := fmt.Sprintf("arn:aws:sqs:us-east-1:000000000000:q%d", i)
		if refused, _ := v.verdict("", q, "arn:aws:sns:us-east-1:000000000000:t", "000000000000"); !refused {
			t.Fatalf("queue %d without a Policy: not refused", i)
		}
		if len(v.m) > maxVerdicts {
			t.Fatalf("after %d queues: %d verdicts kept, want at most %d", i+1, len(v.m), maxVerdicts)
		}
	}
}
