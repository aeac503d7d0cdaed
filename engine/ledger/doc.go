// Package ledger is the lease ledger and its doctor: it watches every
// lease an engine hands out begin, renew, lapse and end (docs/architecture.md
// §3), fed by the events the engine records (Event), and answers from them
// what `baton doctor`, the dashboard and /metrics show: a queue's lease
// report and findings (Report), a message's lease history (History), the
// activity, leases in flight, duration histogram and late completions of
// the last minutes, and per-queue metrics.
//
// On a store several nodes share, a Ledger made with a Config.Bus publishes
// the events its node records and applies the others' (bus.go), so that
// every node's answers cover the leases of the whole cluster.
//
// The ledger reads no clock for its answers: the caller passes the time,
// from the engine's injected clock.
package ledger
