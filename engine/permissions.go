package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/baton-sqs/baton"
)

// maxPermissionActions is the most actions one AddPermission may grant.
const maxPermissionActions = 7

// permissionActions are the actions AddPermission can share with another
// account. The others cross-account permissions do not apply to ("Limitations
// of Amazon SQS custom policies", Amazon SQS Developer Guide) only the
// queue's owner may invoke, and SQS refuses them by that reason.
var permissionActions = []string{
	"*", "SendMessage", "ReceiveMessage", "DeleteMessage", "ChangeMessageVisibility",
	"GetQueueAttributes", "GetQueueUrl", "ListDeadLetterSourceQueues", "PurgeQueue",
}

var ownerOnlyActions = []string{
	"AddPermission", "CancelMessageMoveTask", "CreateQueue", "DeleteQueue", "ListMessageMoveTasks",
	"ListQueues", "ListQueueTags", "RemovePermission", "SetQueueAttributes", "StartMessageMoveTask",
	"TagQueue", "UntagQueue",
}

// queuePolicy is the shape of the Policy attribute AddPermission writes.
type queuePolicy struct {
	Version   string            `json:"Version"`
	ID        string            `json:"Id"`
	Statement []policyStatement `json:"Statement"`
}

type policyStatement struct {
	Sid       string          `json:"Sid"`
	Effect    string          `json:"Effect"`
	Principal json.RawMessage `json:"Principal"`
	Action    json.RawMessage `json:"Action"`
	Resource  string          `json:"Resource"`
}

// AddPermissionParams are the arguments of AddPermission.
type AddPermissionParams struct {
	Label      string
	AccountIDs []string
	Actions    []string
}

// AddPermission appends a statement granting actions on the queue to
// accounts, kept in the queue's Policy attribute. Baton does not evaluate
// the policy; it keeps it as SQS does so that tools reading it agree.
func (e *Engine) AddPermission(ctx context.Context, ref QueueRef, p AddPermissionParams) error {
	switch {
	case p.Label == "":
		return baton.MissingParameter("Label")
	case len(p.AccountIDs) == 0:
		return baton.MissingParameter("AWSAccountIds")
	case len(p.Actions) == 0:
		return baton.MissingParameter("Actions")
	}
	if len(p.Label) > 80 || !validBatchID(p.Label) {
		return baton.InvalidParameter("Label", p.Label, "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length.")
	}
	if len(p.Actions) > maxPermissionActions {
		return baton.Errorf(baton.ErrOverLimit, "%d Actions were found, maximum allowed is %d.", len(p.Actions), maxPermissionActions)
	}
	for _, a := range p.Actions {
		switch {
		case slices.Contains(permissionActions, a):
		case slices.Contains(ownerOnlyActions, a):
			return baton.InvalidParameter("ActionName", "SQS:"+a, "Only the queue owner is allowed to invoke this action.")
		default:
			return baton.InvalidParameter("ActionName", "SQS:"+a, "Please refer to the appropriate WSDL for a list of valid actions.")
		}
	}
	q, err := e.queueToChange(ctx, ref)
	if err != nil {
		return err
	}
	arn := e.QueueARN(q)
	pol := queuePolicy{Version: "2008-10-17", ID: arn + "/SQSDefaultPolicy"}
	if q.Attributes.Policy != "" {
		if err := json.Unmarshal([]byte(q.Attributes.Policy), &pol); err != nil {
			return baton.Errorf(baton.ErrInvalidParameterValue, "The queue's Policy attribute is not a policy AddPermission can extend.")
		}
	}
	for _, st := range pol.Statement {
		if st.Sid == p.Label {
			return baton.InvalidParameter("Label", p.Label, "Already exists.")
		}
	}
	principals := make([]string, len(p.AccountIDs))
	for i, a := range p.AccountIDs {
		principals[i] = "arn:aws:iam::" + a + ":root"
	}
	actions := make([]string, len(p.Actions))
	for i, a := range p.Actions {
		actions[i] = "SQS:" + a
	}
	pol.Statement = append(pol.Statement, policyStatement{
		Sid: p.Label, Effect: "Allow",
		Principal: mustJSON(map[string]json.RawMessage{"AWS": oneOrMany(principals)}),
		Action:    oneOrMany(actions), Resource: arn,
	})
	if err := checkPolicyLimits(string(mustJSON(pol))); err != nil {
		return baton.Errorf(baton.ErrOverLimit, "%s", baton.AsError(err).Message)
	}
	return e.setPolicy(ctx, ref, q, pol)
}

// RemovePermission removes the statement with the label; removing the last
// one removes the Policy attribute.
func (e *Engine) RemovePermission(ctx context.Context, ref QueueRef, label string) error {
	if label == "" {
		return baton.MissingParameter("Label")
	}
	q, err := e.queueToChange(ctx, ref)
	if err != nil {
		return err
	}
	var pol queuePolicy
	if q.Attributes.Policy != "" {
		_ = json.Unmarshal([]byte(q.Attributes.Policy), &pol) // unparsable: no labels to find
	}
	i := slices.IndexFunc(pol.Statement, func(st policyStatement) bool { return st.Sid == label })
	if i < 0 {
		return baton.InvalidParameter("Label", label, "can't find label.")
	}
	pol.Statement = slices.Delete(pol.Statement, i, i+1)
	return e.setPolicy(ctx, ref, q, pol)
}

func (e *Engine) setPolicy(ctx context.Context, ref QueueRef, q *baton.Queue, pol queuePolicy) error {
	a := q.Attributes
	a.Policy = ""
	if len(pol.Statement) > 0 {
		a.Policy = string(mustJSON(pol))
	}
	_, err := e.store.QueueUpdate(ctx, baton.QueueUpdateParams{Region: q.Region, Account: ref.Account, Name: ref.Name, Attributes: &a, ModifiedAt: e.clock.Now()})
	return storeErrOrNil(err, "update policy")
}

// oneOrMany renders one value as a string and several as a list, as SQS
// writes policies.
func oneOrMany(vs []string) json.RawMessage {
	if len(vs) == 1 {
		return mustJSON(vs[0])
	}
	return mustJSON(vs)
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("marshal policy: %v", err)) // plain strings and maps always marshal
	}
	return b
}

// Limits of a queue's Policy besides its size (docs/sqs-behaviour.md §3).
const (
	maxPolicyStatements = 20
	maxPolicyPrincipals = 50
	maxPolicyConditions = 10
)

// checkPolicyLimits checks a Policy document, valid JSON, against SQS's
// limits on statements, principals, conditions and actions per statement.
// It counts what it can read and leaves the rest of the document alone, as
// Baton does not evaluate policies.
func checkPolicyLimits(doc string) error {
	var p struct{ Statement json.RawMessage }
	if json.Unmarshal([]byte(doc), &p) != nil {
		return nil
	}
	var stmts []json.RawMessage
	if json.Unmarshal(p.Statement, &stmts) != nil {
		stmts = []json.RawMessage{p.Statement} // one statement, not in a list
	}
	if len(stmts) > maxPolicyStatements {
		return baton.Errorf(baton.ErrInvalidAttributeValue,
			"%d statements were found in the submitted policy, max allowed is %d", len(stmts), maxPolicyStatements)
	}
	principals, conditions := 0, 0
	for _, raw := range stmts {
		var st struct {
			Principal, NotPrincipal, Action, NotAction json.RawMessage
			Condition                                  map[string]map[string]json.RawMessage
		}
		if json.Unmarshal(raw, &st) != nil {
			continue
		}
		if countOneOrMany(st.Action)+countOneOrMany(st.NotAction) > maxPermissionActions {
			return errAttributeValue(AttrPolicy)
		}
		principals += countPrincipals(st.Principal) + countPrincipals(st.NotPrincipal)
		for _, keys := range st.Condition {
			conditions += len(keys)
		}
	}
	if principals > maxPolicyPrincipals || conditions > maxPolicyConditions {
		return errAttributeValue(AttrPolicy)
	}
	return nil
}

// countOneOrMany counts the values of a member that is one value or a list.
func countOneOrMany(raw json.RawMessage) int {
	if len(raw) == 0 {
		return 0
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) == nil {
		return len(list)
	}
	return 1
}

// countPrincipals counts a Principal: "*", or a map from kinds (AWS,
// Service, …) to one value or a list.
func countPrincipals(raw json.RawMessage) int {
	var byKind map[string]json.RawMessage
	if json.Unmarshal(raw, &byKind) != nil {
		return countOneOrMany(raw)
	}
	n := 0
	for _, v := range byKind {
		n += countOneOrMany(v)
	}
	return n
}
