// Package engine holds Baton's queue semantics: validation and defaults,
// leases and receipt handles, long-poll waiting, checksums and retention.
// It knows nothing of HTTP or wire formats, and persists through a
// baton.Store, passing it the time from an injected clock.Clock. It feeds
// every lease event it makes to its lease ledger (package engine/ledger),
// which answers the doctor's and the dashboard's questions.
//
// New decides once whether the engine is the only node of its store or one
// of several: a baton.SharedStore makes it one of several, and only then do
// long polls hear of other nodes' sends, move tasks take task locks,
// receive attempts live in the store and the ledger joins the store's bus.
//
// # Lock order
//
// From the engine down to the store, a goroutine takes locks only in this
// order, and releases a later one before it takes an earlier one again:
//
//  1. Engine.waitMu, the long-poll waiters' lock, is a leaf: held only to
//     update the waiters' maps, never across a call to the ledger, the task
//     registry or the store. A shared store's wake-up takes it from the
//     store's side (memstore.Cluster on the sender's goroutine, after it
//     let go of its own locks; pgstore on its listener's).
//  2. The lease ledger's lock (ledger.Ledger) is taken by Record and the
//     ledger's reports alone: the engine records after the store call that
//     made the event returns, and the ledger calls nothing outside itself
//     while it holds the lock (its publisher's queue never blocks; batches
//     go to the store's bus from the publisher's own goroutine, holding no
//     lock).
//  3. A move task's saveMu, then the task registry's moveTasks.mu; saveMu is
//     held across the task's save in the store, moveTasks.mu never across a
//     store call.
//  4. The store's own locks, last (memstore: Store.mu, then a queue's lock,
//     lower queue id first; pebblestore: qmu, then its stripe locks, lower
//     index first; memstore.Cluster's lock before its Store's).
package engine
