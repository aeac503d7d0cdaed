package sns

import "sync"

// verdicts remembers policyVerdict's answers, so that a publish does not
// parse each subscribed queue's Policy again for every copy. An answer is
// kept beside the Policy text it was given for and serves only that text:
// every copy reads its queue anyway, so a Policy changed by
// SetQueueAttributes, or the Policy of a queue deleted and made again,
// is evaluated afresh on the next copy. policyVerdict depends on nothing
// else (no clock, no other attribute), so a kept answer is the answer.
type verdicts struct {
	mu sync.Mutex
	m  map[verdictKey]verdictEntry
}

// maxVerdicts bounds what verdicts keeps: past it, it starts again empty.
// A Policy is at most 8 KiB, so it keeps at most some 8 MiB of them.
const maxVerdicts = 1024

// verdictKey is what a verdict is asked about besides the Policy.
type verdictKey struct {
	queueARN, topicARN, account string
}

// verdictEntry is an answer and the Policy it was given for.
type verdictEntry struct {
	policy  string
	refused bool
	why     string
}

// verdict is policyVerdict(policy, queueARN, topicARN, account), from
// memory when it was last asked with the same Policy.
func (v *verdicts) verdict(policy, queueARN, topicARN, account string) (refused bool, why string) {
	k := verdictKey{queueARN, topicARN, account}
	v.mu.Lock()
	e, ok := v.m[k]
	v.mu.Unlock()
	if ok && e.policy == policy {
		return e.refused, e.why
	}
	refused, why = policyVerdict(policy, queueARN, topicARN, account)
	v.mu.Lock()
	if v.m == nil || len(v.m) >= maxVerdicts {
		v.m = make(map[verdictKey]verdictEntry)
	}
	v.m[k] = verdictEntry{policy: policy, refused: refused, why: why}
	v.mu.Unlock()
	return refused, why
}
