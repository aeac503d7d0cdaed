// Package memstore is the in-memory baton.Store: nothing survives a restart.
// It serves `baton serve --store memory` and is the index the durable
// embedded store builds on.
package memstore
