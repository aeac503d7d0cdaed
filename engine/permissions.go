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

var permissionActions = []string{
	"*", "SendMessage", "ReceiveMessage", "DeleteMessage", "ChangeMessageVisibility",
	"GetQueueAttributes", "GetQueueUrl", "ListDeadLetterSourceQueues", "PurgeQueue",
	"ListQueueTags", "TagQueue", "UntagQueue", "SetQueueAttributes", "DeleteQueue",
	"CreateQueue", "ListQueues", "AddPermission", "RemovePermission",
	"StartMessageMoveTask", "CancelMessageMoveTask", "ListMessageMoveTasks",
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
		if !slices.Contains(permissionActions, a) {
			return baton.InvalidParameter("ActionName", a, "Please refer to the appropriate WSDL for a list of valid actions.")
		}
	}
	q, err := e.queue(ctx, ref)
	if err != nil {
		return err
	}
	arn := e.ARN(q.Account, q.Name)
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
	return e.setPolicy(ctx, ref, q, pol)
}

// RemovePermission removes the statement with the label; removing the last
// one removes the Policy attribute.
func (e *Engine) RemovePermission(ctx context.Context, ref QueueRef, label string) error {
	if label == "" {
		return baton.MissingParameter("Label")
	}
	q, err := e.queue(ctx, ref)
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
	_, err := e.store.QueueUpdate(ctx, baton.QueueUpdateParams{Account: ref.Account, Name: ref.Name, Attributes: &a, ModifiedAt: e.clock.Now()})
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
