package cli

import (
	"fmt"

	"github.com/baton-sqs/baton/sns"
)

// setQueuePolicies gives the SNS service (nil when the store keeps no
// topics) the --sns-queue-policies mode; "" is the default, warn.
func setQueuePolicies(svc *sns.Service, mode string) error {
	m := sns.QueuePoliciesWarn
	if mode != "" {
		var err error
		if m, err = sns.ParseQueuePolicyMode(mode); err != nil {
			return fmt.Errorf("--sns-queue-policies: %w", err)
		}
	}
	if svc != nil {
		svc.SetQueuePolicyMode(m)
	}
	return nil
}

// checkQueuePolicies is the check of the sns-queue-policies setting.
func checkQueuePolicies(v string) error {
	_, err := sns.ParseQueuePolicyMode(v)
	return err
}
