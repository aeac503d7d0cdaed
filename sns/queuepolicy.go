package sns

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/lograte"
	"github.com/baton-sqs/baton/sns/accesspolicy"
)

// Queue policies (docs/sns.md, "Queue policies"). On AWS, SNS sends a
// topic's copy to a queue only if the queue's Policy allows the service
// principal sns.amazonaws.com to call sqs:SendMessage on it, usually on
// the condition that aws:SourceArn is the topic; a copy the policy refuses
// is a client-side error, not retried, and goes to the subscription's
// dead-letter queue, whose own Policy must allow it too. Baton asks the
// queue's Policy the same question (sns/accesspolicy) and, by the server's
// QueuePolicyMode, notes AWS's answer beside a copy it delivers all the
// same, or refuses the copy as AWS would.

// QueuePolicyMode is what the fan-out does with a queue whose Policy does
// not let the topic send to it.
type QueuePolicyMode int32

const (
	// QueuePoliciesWarn delivers the copy and notes, in the publish's
	// record and a log line, that AWS would not. The default.
	QueuePoliciesWarn QueuePolicyMode = iota
	// QueuePoliciesOff delivers every copy without reading the policy.
	QueuePoliciesOff
	// QueuePoliciesEnforce refuses the copy as AWS does: a client-side
	// error, to the subscription's dead-letter queue if it has one.
	QueuePoliciesEnforce
)

// String is the mode as the --sns-queue-policies flag spells it.
func (m QueuePolicyMode) String() string {
	switch m {
	case QueuePoliciesOff:
		return "off"
	case QueuePoliciesEnforce:
		return "enforce"
	}
	return "warn"
}

// ParseQueuePolicyMode reads "off", "warn" or "enforce".
func ParseQueuePolicyMode(s string) (QueuePolicyMode, error) {
	for _, m := range []QueuePolicyMode{QueuePoliciesOff, QueuePoliciesWarn, QueuePoliciesEnforce} {
		if s == m.String() {
			return m, nil
		}
	}
	return 0, fmt.Errorf("%q is not a queue policy mode (off, warn or enforce)", s)
}

// SetQueuePolicyMode sets what the fan-out does with a queue whose Policy
// does not let the topic send to it; it holds from the next copy on.
func (s *Service) SetQueuePolicyMode(m QueuePolicyMode) { s.queuePolicies.mode.Store(int32(m)) }

// QueuePolicyMode is the mode set (QueuePoliciesWarn unless set).
func (s *Service) QueuePolicyMode() QueuePolicyMode {
	return QueuePolicyMode(s.queuePolicies.mode.Load())
}

// queuePolicies is the Service's mode, the rate of the warn mode's log
// lines and the Policies' answers kept.
type queuePolicies struct {
	mode atomic.Int32
	// logs holds the warn mode's log lines to one per subscription and
	// queue every policyLogEvery, saying how many it left out, once the
	// interval has passed if no line says it before (lograte.Paced;
	// Service.Close says those due).
	logs *lograte.Paced
	// verdicts are the Policies' answers, kept (policycache.go).
	verdicts verdicts
}

// policyLogEvery is how often warn mode logs one subscription's warning.
const policyLogEvery = 10 * time.Minute

// policyCheck is what a queue's Policy says of a topic's copy.
type policyCheck struct {
	// refuse, in enforce mode, is why the copy is not delivered.
	refuse string
	// warn is what AWS would do otherwise, noted beside a delivered copy.
	warn string
}

// annotate notes the check's warning on a delivered copy's outcome.
func (c policyCheck) annotate(o CopyOutcome) CopyOutcome {
	o.Warning = c.warn
	return o
}

// checkQueuePolicy asks the Policy of queue (queueARN), as the caller read
// it, the endpoint of sub or its dead-letter queue, whether AWS would let
// sub's topic send it a copy. The caller logs the warning (warnDelivered)
// once the queue has taken the copy.
func (s *Service) checkQueuePolicy(sub *baton.Subscription, queue *baton.Queue, queueARN string) policyCheck {
	mode := s.QueuePolicyMode()
	if mode == QueuePoliciesOff {
		return policyCheck{}
	}
	refused, why := s.policyVerdictOf(sub, queue, queueARN)
	switch {
	case why == "":
		return policyCheck{}
	case refused && mode == QueuePoliciesEnforce:
		return policyCheck{refuse: why}
	case refused:
		why = "AWS would not deliver this copy: " + why
	default:
		why = "Baton cannot tell whether AWS would deliver this copy: " + why
	}
	return policyCheck{warn: why}
}

// warnDelivered logs the check's warning, if any, for a copy queueARN has
// taken: a line saying a copy was delivered is written only once it was.
func (s *Service) warnDelivered(sub *baton.Subscription, queueARN string, c policyCheck) {
	if c.warn != "" {
		s.logPolicyWarning(sub, queueARN, c.warn)
	}
}

// QueuePolicyNote says what the Policy of an sqs subscription's queue means
// for the subscription's copies, for the dashboard: "" when AWS would
// deliver them, when the mode is off, or when the subscription or its
// queue cannot be read; else, in words, that Baton refuses them
// (enforce), that AWS would not deliver them (warn), or that Baton cannot
// tell. It logs nothing.
func (s *Service) QueuePolicyNote(ctx context.Context, c Caller, subscriptionARN string) string {
	mode := s.QueuePolicyMode()
	if mode == QueuePoliciesOff {
		return ""
	}
	sub, err := s.subscription(ctx, c, subscriptionARN)
	if err != nil || sub.Protocol != "sqs" {
		return ""
	}
	q, ok := engine.QueueRefOfARN(sub.Endpoint)
	if !ok {
		return ""
	}
	refused, why := s.queueVerdict(ctx, sub, q, sub.Endpoint)
	switch {
	case why == "":
		return ""
	case refused && mode == QueuePoliciesEnforce:
		return "Baton refuses its copies, as AWS would: " + why
	case refused:
		return "AWS would not deliver its copies: " + why
	}
	return "Baton cannot tell whether AWS would deliver its copies: " + why
}

// queueVerdict reads queue q's Policy and evaluates it for a copy of sub's
// topic (policyVerdict). A queue it cannot read (gone, or the store
// failing) passes: a send to it fails as it would anyway.
func (s *Service) queueVerdict(ctx context.Context, sub *baton.Subscription, q engine.QueueRef, queueARN string) (refused bool, why string) {
	queue, err := s.engine.GetQueue(ctx, q)
	if err != nil {
		return false, ""
	}
	return s.policyVerdictOf(sub, queue, queueARN)
}

// policyVerdictOf is policyVerdict of queue's Policy for a copy of sub's
// topic, remembered while the Policy stays (policycache.go).
func (s *Service) policyVerdictOf(sub *baton.Subscription, queue *baton.Queue, queueARN string) (refused bool, why string) {
	return s.queuePolicies.verdicts.verdict(queue.Attributes.Policy, queueARN, TopicARN(sub.Region, sub.Account, sub.Topic), sub.Account)
}

// policyVerdict evaluates a queue's Policy for a copy of topicARN (of
// account): whether AWS would refuse it, and why; why is "" when AWS would
// deliver it. An answer Baton cannot give is not a refusal, and why says
// what it cannot evaluate.
func policyVerdict(policy, queueARN, topicARN, account string) (refused bool, why string) {
	v := accesspolicy.Evaluate(policy, accesspolicy.Request{Service: "sns.amazonaws.com", Action: "sqs:SendMessage", Resource: queueARN,
		Context: map[string]string{"aws:SourceArn": topicARN, "aws:SourceAccount": account}})
	switch v.Decision {
	case accesspolicy.ImplicitDeny:
		if policy == "" {
			return true, "the queue has no Policy, and only a Policy statement lets sns.amazonaws.com sqs:SendMessage to it"
		}
		return true, "the queue's Policy does not allow sns.amazonaws.com to sqs:SendMessage for this topic (" + v.Why + ")"
	case accesspolicy.ExplicitDeny:
		return true, "the queue's Policy denies it (statement " + quoteSid(v.Statement) + ")"
	case accesspolicy.Undecided:
		where := "the queue's Policy"
		if v.Statement != "" {
			where += ", " + v.Statement
		}
		return false, where + ": " + v.Why
	}
	return false, ""
}

func quoteSid(s string) string { return fmt.Sprintf("%q", s) }

// logPolicyWarning logs, at most once every policyLogEvery for each
// subscription, that a copy was delivered which AWS would refuse; the
// copies left out are counted by the next line, or by a line of their own
// once the interval has passed, which names the subscription and queue
// only: the reason may have changed since.
func (s *Service) logPolicyWarning(sub *baton.Subscription, queueARN, text string) {
	const msg = "sns: a copy was delivered that AWS would not deliver, or might not: see the queue's Policy"
	arn := SubscriptionARN(sub)
	s.queuePolicies.logs.Note(arn+" "+queueARN, func(left int, since time.Time) {
		s.log.Warn(msg, append([]any{"subscription", arn, "queue", queueARN, "reason", text}, leftOut(left, since, "mode", s.QueuePolicyMode().String())...)...)
	}, func(left int, since time.Time) {
		s.log.Warn(msg, append([]any{"subscription", arn, "queue", queueARN}, leftOut(left, since)...)...)
	})
}

// leftOut are the attributes of a warning line that counts the warnings
// left out since the one before, written at since, then more.
func leftOut(left int, since time.Time, more ...any) []any {
	attrs := []any{"same_warnings_not_logged", left}
	if left > 0 {
		attrs = append(attrs, "since", since.UTC().Format(time.RFC3339))
	}
	return append(attrs, more...)
}
