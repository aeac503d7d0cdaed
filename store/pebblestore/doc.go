// Package pebblestore is the embedded, durable baton.Store that `baton
// serve` uses by default: a log-structured key-value store (Pebble) in a
// data directory, written ahead with group commit.
//
// The working set lives in memory, in a memstore index rebuilt from the log
// when the store opens: queues, message metadata and lease state,
// visibility order, FIFO groups, deduplication keys and sequence counters.
// Message bodies, attributes and trace headers stay on disk only and are read
// when a message is received, so memory does not grow with body size.
//
// Every change is applied to the index and queued, in the order the index
// saw it, to one writer goroutine. The writer takes everything queued,
// writes it into one batch and commits the batch atomically; a call returns
// only once the batch holding its change is committed, fsynced unless
// DurabilityRelaxed. Since batches commit in queue order, the log always
// holds a prefix of the index's history: a crash loses only changes no
// caller was told about. keys.go describes the layout of the log.
//
// A data directory of the SQLite store of earlier releases is converted
// when Open first finds it (convert.go).
//
// A lock file keeps a second process from opening the same directory.
package pebblestore
