// Package sqlitestore is the embedded, durable baton.Store that `baton serve`
// uses by default: one SQLite database (modernc.org/sqlite, no cgo) in a data
// directory, written ahead (WAL) with group commit.
//
// The working set lives in memory, in a memstore index rebuilt from the
// database when the store opens: queues, message metadata and lease state,
// visibility order, FIFO groups, deduplication keys and sequence counters.
// Message bodies, attributes and trace headers stay on disk only and are read
// when a message is received, so memory does not grow with body size.
//
// Every change is applied to the index and queued, in the order the index
// saw it, to one writer goroutine. The writer takes everything queued, writes
// it in one transaction and commits; a call returns only once the transaction
// holding its change is committed, with fsync unless DurabilityRelaxed. Since
// transactions commit in queue order, the database always holds a prefix of
// the index's history: a crash loses only changes no caller was told about.
//
// A lock file keeps a second process from opening the same directory.
package sqlitestore
