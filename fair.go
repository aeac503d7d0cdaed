package baton

// Fair queues (docs/sqs-behaviour.md §6.2): on a standard queue each
// message group is a tenant, and SQS marks a tenant noisy when it holds more
// than a tenth of the queue's messages in flight and at least
// NoisyTenantInFlight of its own. A receive then serves the quiet tenants
// first, and of the noisy ones the one with the fewest messages in flight.
// Every store orders a fair receive by this rule.

// NoisyTenantInFlight is how many messages a tenant must hold in flight,
// at least, to be noisy.
const NoisyTenantInFlight = 30

// NoisyTenantShare is the share of the queue's messages in flight, as
// 1/NoisyTenantShare, that a noisy tenant holds more than.
const NoisyTenantShare = 10

// NoisyTenant reports whether a tenant holding inflight of the queue's
// queueInFlight messages in flight is noisy.
func NoisyTenant(inflight, queueInFlight int) bool {
	return inflight >= NoisyTenantInFlight && inflight*NoisyTenantShare > queueInFlight
}
