package engine

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	"github.com/baton-sqs/baton"
)

// Queue attribute names (docs/sqs-behaviour.md §3).
const (
	AttrDelaySeconds                          = "DelaySeconds"
	AttrMaximumMessageSize                    = "MaximumMessageSize"
	AttrMessageRetentionPeriod                = "MessageRetentionPeriod"
	AttrReceiveMessageWaitTimeSeconds         = "ReceiveMessageWaitTimeSeconds"
	AttrVisibilityTimeout                     = "VisibilityTimeout"
	AttrPolicy                                = "Policy"
	AttrRedrivePolicy                         = "RedrivePolicy"
	AttrRedriveAllowPolicy                    = "RedriveAllowPolicy"
	AttrKmsMasterKeyID                        = "KmsMasterKeyId"
	AttrKmsDataKeyReusePeriodSeconds          = "KmsDataKeyReusePeriodSeconds"
	AttrSqsManagedSseEnabled                  = "SqsManagedSseEnabled"
	AttrFifoQueue                             = "FifoQueue"
	AttrContentBasedDeduplication             = "ContentBasedDeduplication"
	AttrDeduplicationScope                    = "DeduplicationScope"
	AttrFifoThroughputLimit                   = "FifoThroughputLimit"
	AttrQueueArn                              = "QueueArn"
	AttrCreatedTimestamp                      = "CreatedTimestamp"
	AttrLastModifiedTimestamp                 = "LastModifiedTimestamp"
	AttrApproximateNumberOfMessages           = "ApproximateNumberOfMessages"
	AttrApproximateNumberOfMessagesNotVisible = "ApproximateNumberOfMessagesNotVisible"
	AttrApproximateNumberOfMessagesDelayed    = "ApproximateNumberOfMessagesDelayed"
)

// Sizes of the free-form attributes a queue keeps in memory for its life.
const (
	// maxKmsKeyID is KMS's bound on a key id, ARN or alias (KeyId, 1 to
	// 2,048 characters).
	maxKmsKeyID = 2048
	// maxRedriveAllowPolicy bounds a RedriveAllowPolicy. SQS documents no
	// size, only at most 10 source queue ARNs, which fit in 2 KiB; Policy's
	// 8,192 bytes is generous for it.
	maxRedriveAllowPolicy = 8192
)

// intAttr describes an integer attribute: its range and where it lives.
type intAttr struct {
	min, max int
	field    func(*baton.QueueAttributes) *int
}

var intAttrs = map[string]intAttr{
	AttrDelaySeconds:                  {0, baton.MaxDelaySeconds, func(a *baton.QueueAttributes) *int { return &a.DelaySeconds }},
	AttrMaximumMessageSize:            {1024, baton.MaxMessageSize, func(a *baton.QueueAttributes) *int { return &a.MaximumMessageSize }},
	AttrMessageRetentionPeriod:        {60, 1209600, func(a *baton.QueueAttributes) *int { return &a.MessageRetentionPeriod }},
	AttrReceiveMessageWaitTimeSeconds: {0, baton.MaxWaitTimeSeconds, func(a *baton.QueueAttributes) *int { return &a.ReceiveMessageWaitTimeSeconds }},
	AttrVisibilityTimeout:             {0, baton.MaxVisibilityTimeout, func(a *baton.QueueAttributes) *int { return &a.VisibilityTimeout }},
	AttrKmsDataKeyReusePeriodSeconds:  {60, 86400, func(a *baton.QueueAttributes) *int { return &a.KmsDataKeyReusePeriodSeconds }},
}

var fifoOnlyAttrs = map[string]bool{
	AttrFifoQueue: true, AttrContentBasedDeduplication: true,
	AttrDeduplicationScope: true, AttrFifoThroughputLimit: true,
}

var readOnlyAttrs = map[string]bool{
	AttrQueueArn: true, AttrCreatedTimestamp: true, AttrLastModifiedTimestamp: true,
	AttrApproximateNumberOfMessages: true, AttrApproximateNumberOfMessagesNotVisible: true,
	AttrApproximateNumberOfMessagesDelayed: true,
}

func errUnknownAttribute(name string) *baton.Error {
	return baton.Errorf(baton.ErrInvalidAttributeName, "Unknown Attribute %s.", name)
}

func errAttributeValue(name string) *baton.Error {
	return baton.Errorf(baton.ErrInvalidAttributeValue, "Invalid value for the parameter %s.", name)
}

// applyAttributes validates the attributes of a CreateQueue or
// SetQueueAttributes request and applies them to a. fifo says whether the
// queue is (or is being created as) a FIFO queue.
func applyAttributes(a *baton.QueueAttributes, attrs map[string]string, fifo bool) error {
	if sse, _ := parseBool(attrs[AttrSqsManagedSseEnabled]); sse && attrs[AttrKmsMasterKeyID] != "" {
		return baton.Errorf(baton.ErrInvalidAttributeName,
			"You can use one type of server-side encryption (SSE) at one time. You can either enable KMS SSE or SQS SSE.")
	}
	// A fixed order makes the reported error deterministic.
	names := make([]string, 0, len(attrs))
	for n := range attrs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := applyAttribute(a, name, attrs[name], fifo); err != nil {
			return err
		}
	}
	return nil
}

// applyAttribute validates one attribute of a request and applies it to a.
// An integer attribute is checked against its range on any queue; a FIFO
// attribute on a standard queue is refused before its value is looked at;
// the others are checked by their kind.
func applyAttribute(a *baton.QueueAttributes, name, value string, fifo bool) error {
	if ia, ok := intAttrs[name]; ok {
		return applyIntAttribute(a, ia, name, value)
	}
	if fifoOnlyAttrs[name] && !fifo {
		return errFIFOOnly(name)
	}
	switch name {
	case AttrPolicy, AttrRedrivePolicy, AttrRedriveAllowPolicy:
		return applyPolicyAttribute(a, name, value)
	case AttrKmsMasterKeyID, AttrSqsManagedSseEnabled:
		return applyEncryptionAttribute(a, name, value)
	case AttrFifoQueue, AttrContentBasedDeduplication, AttrDeduplicationScope, AttrFifoThroughputLimit:
		return applyFIFOAttribute(a, name, value)
	}
	return errUnknownAttribute(name)
}

// applyIntAttribute sets the integer attribute ia, named name, if value is
// a whole number within its range.
func applyIntAttribute(a *baton.QueueAttributes, ia intAttr, name, value string) error {
	n, err := strconv.Atoi(value)
	if err != nil || n < ia.min || n > ia.max {
		return errAttributeValue(name)
	}
	*ia.field(a) = n
	return nil
}

// errFIFOOnly refuses a FIFO attribute on a standard queue as SQS does: the
// two that AWS added later get a message of their own, the older ones are
// unknown to a standard queue.
func errFIFOOnly(name string) *baton.Error {
	if name == AttrDeduplicationScope || name == AttrFifoThroughputLimit {
		return baton.Errorf(baton.ErrInvalidAttributeName,
			"You can specify the %s only when FifoQueue is set to true.", name)
	}
	return errUnknownAttribute(name)
}

// applyPolicyAttribute checks and sets one of the JSON documents a queue
// keeps: its access Policy, its RedrivePolicy (stored in canonical form) or
// its RedriveAllowPolicy. An empty value clears the document.
func applyPolicyAttribute(a *baton.QueueAttributes, name, value string) error {
	switch name {
	case AttrPolicy:
		if value != "" && (len(value) > 8192 || !json.Valid([]byte(value))) {
			return errAttributeValue(name)
		}
		if err := checkPolicyLimits(value); err != nil {
			return err
		}
		a.Policy = value
	case AttrRedrivePolicy:
		if value != "" {
			canonical, err := checkRedrivePolicy(value)
			if err != nil {
				return err
			}
			value = canonical
		}
		a.RedrivePolicy = value
	case AttrRedriveAllowPolicy:
		if len(value) > maxRedriveAllowPolicy {
			return errAttributeValue(name)
		}
		if value != "" {
			if err := checkRedriveAllowPolicy(value); err != nil {
				return err
			}
		}
		a.RedriveAllowPolicy = value
	default:
		return errUnknownAttribute(name)
	}
	return nil
}

// applyEncryptionAttribute sets KmsMasterKeyId or SqsManagedSseEnabled. The
// two kinds of encryption exclude each other: turning one on turns the
// other off (applyAttributes refuses a request that turns on both).
func applyEncryptionAttribute(a *baton.QueueAttributes, name, value string) error {
	switch name {
	case AttrKmsMasterKeyID:
		if len(value) > maxKmsKeyID || !validChars(value) { // as tags: no control characters
			return errAttributeValue(name)
		}
		a.KmsMasterKeyID = value
		if value != "" {
			a.SqsManagedSseEnabled = false
		}
	case AttrSqsManagedSseEnabled:
		b, ok := parseBool(value)
		if !ok {
			return errAttributeValue(name)
		}
		a.SqsManagedSseEnabled = b
		if b {
			a.KmsMasterKeyID = ""
		}
	default:
		return errUnknownAttribute(name)
	}
	return nil
}

// applyFIFOAttribute sets one of a FIFO queue's attributes. FifoQueue itself
// may only be given as the queue already is: a queue's type never changes.
func applyFIFOAttribute(a *baton.QueueAttributes, name, value string) error {
	switch name {
	case AttrFifoQueue:
		b, ok := parseBool(value)
		if !ok || b != a.FifoQueue {
			return baton.Errorf(baton.ErrInvalidAttributeValue,
				"Invalid value for the parameter FifoQueue. Reason: Modifying queue type is not supported.")
		}
	case AttrContentBasedDeduplication:
		b, ok := parseBool(value)
		if !ok {
			return errAttributeValue(name)
		}
		a.ContentBasedDeduplication = b
	case AttrDeduplicationScope:
		if value != "queue" && value != "messageGroup" {
			return errAttributeValue(name)
		}
		a.DeduplicationScope = value
	case AttrFifoThroughputLimit:
		if value != "perQueue" && value != "perMessageGroupId" {
			return errAttributeValue(name)
		}
		a.FifoThroughputLimit = value
	default:
		return errUnknownAttribute(name)
	}
	return nil
}

// checkFIFOAttributes applies the rules between FIFO attributes:
// per-group throughput needs group-scoped deduplication.
func checkFIFOAttributes(a *baton.QueueAttributes) error {
	if a.FifoThroughputLimit == "perMessageGroupId" && a.DeduplicationScope != "messageGroup" {
		return baton.Errorf(baton.ErrInvalidAttributeValue,
			"Invalid value for the parameter FifoThroughputLimit. Reason: perMessageGroupId can be used only when DeduplicationScope is messageGroup.")
	}
	return nil
}

// parseBool reads a boolean attribute. SQS takes "true" and "false" in any
// case (CloudFormation and the CDK send "True") and reports them back in
// lower case.
func parseBool(s string) (bool, bool) {
	switch {
	case strings.EqualFold(s, "true"):
		return true, true
	case strings.EqualFold(s, "false"):
		return false, true
	}
	return false, false
}

// checkRedrivePolicy validates the shape of a RedrivePolicy. That its target
// exists is checked by the caller, which can reach the store.
// checkRedrivePolicy checks a RedrivePolicy and returns it as SQS writes
// it back: {"deadLetterTargetArn":"…","maxReceiveCount":N}, the count a
// number whether it came as one or as a string, so that tools comparing
// the attribute with what they set see the form SQS gives.
func checkRedrivePolicy(value string) (string, error) {
	var p struct {
		DeadLetterTargetArn string          `json:"deadLetterTargetArn"`
		MaxReceiveCount     json.RawMessage `json:"maxReceiveCount"`
	}
	if err := json.Unmarshal([]byte(value), &p); err != nil || p.DeadLetterTargetArn == "" || len(p.MaxReceiveCount) == 0 {
		return "", baton.Errorf(baton.ErrInvalidParameterValue,
			"Value %s for parameter RedrivePolicy is invalid. Reason: Redrive policy is not a valid JSON map with deadLetterTargetArn and maxReceiveCount.", value)
	}
	raw := string(p.MaxReceiveCount)
	if uq, err := strconv.Unquote(raw); err == nil {
		raw = uq
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 || n > 1000 {
		return "", baton.Errorf(baton.ErrInvalidParameterValue,
			"Value %s for parameter RedrivePolicy is invalid. Reason: Invalid value for maxReceiveCount: %s, valid values are from 1 to 1000 both inclusive.", value, raw)
	}
	return string(mustJSON(struct {
		DeadLetterTargetArn string `json:"deadLetterTargetArn"`
		MaxReceiveCount     int    `json:"maxReceiveCount"`
	}{p.DeadLetterTargetArn, n})), nil
}

// redriveTarget returns the deadLetterTargetArn of a valid RedrivePolicy.
func redriveTarget(policy string) string {
	var p struct {
		DeadLetterTargetArn string `json:"deadLetterTargetArn"`
	}
	_ = json.Unmarshal([]byte(policy), &p) // validated by checkRedrivePolicy
	return p.DeadLetterTargetArn
}

func checkRedriveAllowPolicy(value string) error {
	var p struct {
		RedrivePermission string   `json:"redrivePermission"`
		SourceQueueArns   []string `json:"sourceQueueArns"`
	}
	bad := func(reason string) error {
		return baton.Errorf(baton.ErrInvalidParameterValue,
			"Value %s for parameter RedriveAllowPolicy is invalid. Reason: %s", value, reason)
	}
	if err := json.Unmarshal([]byte(value), &p); err != nil {
		return bad("Invalid JSON.")
	}
	switch p.RedrivePermission {
	case "allowAll", "denyAll":
		if len(p.SourceQueueArns) > 0 {
			return bad("sourceQueueArns can only be specified when redrivePermission is byQueue.")
		}
	case "byQueue":
		if len(p.SourceQueueArns) == 0 || len(p.SourceQueueArns) > 10 {
			return bad("byQueue requires between 1 and 10 sourceQueueArns.")
		}
	default:
		return bad("redrivePermission must be one of allowAll, denyAll, byQueue.")
	}
	return nil
}

// renderAttributes returns the named attributes of q (all of them for
// "All"), as GetQueueAttributes reports them. Only attributes that apply to
// the queue and are set appear.
func (e *Engine) renderAttributes(q *baton.Queue, names []string, stats func() (baton.MessageStats, error)) (map[string]string, error) {
	want := make(map[string]bool, len(names))
	all := false
	for _, n := range names {
		if n == "All" {
			all = true
			continue
		}
		if _, ok := intAttrs[n]; !ok && !readOnlyAttrs[n] && !fifoOnlyAttrs[n] {
			switch n {
			case AttrPolicy, AttrRedrivePolicy, AttrRedriveAllowPolicy, AttrKmsMasterKeyID, AttrSqsManagedSseEnabled:
			default:
				return nil, errUnknownAttribute(n)
			}
		}
		want[n] = true
	}
	out := make(map[string]string)
	put := func(name, value string) {
		if all || want[name] {
			out[name] = value
		}
	}
	a := q.Attributes
	itoa := strconv.Itoa
	put(AttrDelaySeconds, itoa(a.DelaySeconds))
	put(AttrMaximumMessageSize, itoa(a.MaximumMessageSize))
	put(AttrMessageRetentionPeriod, itoa(a.MessageRetentionPeriod))
	put(AttrReceiveMessageWaitTimeSeconds, itoa(a.ReceiveMessageWaitTimeSeconds))
	put(AttrVisibilityTimeout, itoa(a.VisibilityTimeout))
	put(AttrSqsManagedSseEnabled, strconv.FormatBool(a.SqsManagedSseEnabled))
	put(AttrQueueArn, e.QueueARN(q))
	put(AttrCreatedTimestamp, strconv.FormatInt(q.CreatedAt.Unix(), 10))
	put(AttrLastModifiedTimestamp, strconv.FormatInt(q.ModifiedAt.Unix(), 10))
	if a.Policy != "" {
		put(AttrPolicy, a.Policy)
	}
	if a.RedrivePolicy != "" {
		put(AttrRedrivePolicy, a.RedrivePolicy)
	}
	if a.RedriveAllowPolicy != "" {
		put(AttrRedriveAllowPolicy, a.RedriveAllowPolicy)
	}
	if a.KmsMasterKeyID != "" {
		put(AttrKmsMasterKeyID, a.KmsMasterKeyID)
		put(AttrKmsDataKeyReusePeriodSeconds, itoa(a.KmsDataKeyReusePeriodSeconds))
	}
	if a.FifoQueue {
		put(AttrFifoQueue, "true")
		put(AttrContentBasedDeduplication, strconv.FormatBool(a.ContentBasedDeduplication))
		put(AttrDeduplicationScope, a.DeduplicationScope)
		put(AttrFifoThroughputLimit, a.FifoThroughputLimit)
	}
	if all || want[AttrApproximateNumberOfMessages] || want[AttrApproximateNumberOfMessagesNotVisible] || want[AttrApproximateNumberOfMessagesDelayed] {
		st, err := stats()
		if err != nil {
			return nil, err
		}
		put(AttrApproximateNumberOfMessages, itoa(st.Visible))
		put(AttrApproximateNumberOfMessagesNotVisible, itoa(st.InFlight))
		put(AttrApproximateNumberOfMessagesDelayed, itoa(st.Delayed))
	}
	return out, nil
}
