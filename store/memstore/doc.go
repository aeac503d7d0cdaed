// Package memstore is the in-memory baton.Store: nothing survives a restart.
// It serves `baton serve --store memory` and is the index the durable
// embedded store builds on. A Cluster of handles on one in-memory state is a
// baton.SharedStore in process, for tests of several engines acting as one
// queue without a database.
package memstore
