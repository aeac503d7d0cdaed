package ledger

// Metric names a lease metric and says what it counts. These are the one
// home of the lease metrics' names and help texts, which `baton serve`'s
// /metrics and `baton proxy`'s both export, so that a dashboard or alert
// written for one works on the other.
type Metric struct {
	Name, Help string
}

// The lease metrics, each labelled by queue.
var (
	MetricExpired    = Metric{"baton_lease_expired_total", "Leases that lapsed without a delete or release."}
	MetricLate       = Metric{"baton_lease_late_completions_total", "Deletes or visibility changes carrying the receipt of a lapsed lease."}
	MetricDuplicates = Metric{"baton_lease_confirmed_duplicates_total", "Leases whose message was leased to another receiver after their holder had worked on it (completed late, or deleted in time by a delete the store failed): confirmed duplicate executions."}
	MetricRenewals   = Metric{"baton_lease_renewals_total", "Lease renewals (ChangeMessageVisibility > 0)."}
	MetricDuration   = Metric{"baton_lease_duration_seconds", "Lease duration from receive to delete, late deletes a FIFO queue refused and deletes that found their message already deleted included (their handlers had finished); leases completed at a time not known (a delete whose answer was lost, retried after the lease's end) left out."}
	MetricHung       = Metric{"baton_lease_hung", HungLeasesHelp}
)
