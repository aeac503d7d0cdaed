// Package pgstore is a baton.Store in PostgreSQL, for running several Baton
// servers as one queue service: every server opens the same database, and
// the database, not any server, is the authority on queues, messages and
// leases.
//
// Open applies the schema migrations embedded in the binary (under an
// advisory lock, so servers may start together) and waits, with backoff,
// for a database that is not up yet; FinishUpgrade, an operator's step,
// drops the indexes a migration kept for nodes of an earlier release
// (finish.go). Ping is the readiness check. ReceiptKey
// is the receipt-signing key all servers share, so that a receipt from one
// is honoured by any. A server holds at most pool_max_conns connections
// (a URL parameter; 16 or twice GOMAXPROCS by default) plus one that
// LISTENs; long polls hold none while they wait. Every receive and delete
// leaves a dead row version, so the migration makes autovacuum visit the
// messages table often; on a busy database also lower autovacuum_naptime
// (a server setting, one minute by default).
//
// Sends to standard queues, deletes and visibility changes are committed
// in rounds (group commit, group.go): the requests a server has in hand at
// once are gathered into a few statements over arrays and one transaction,
// sent in one round trip, so that they share its commit. Each request keeps
// its own answer and errors; FIFO sends run alone, one transaction each
// (they number their messages under the queue row's lock).
//
// An operation that meets a lost connection, a failover or a restart of
// the database, a serialization failure or a deadlock runs again with
// backoff for up to Options.RetryFor, then fails with baton.ErrUnavailable;
// each is safe to rerun after a COMMIT whose answer was lost (retry.go).
// ClockOffset measures the database's clock against a server's, by which
// the servers keep one time line.
//
// Leases are taken with UPDATE ... WHERE id IN (SELECT ... FOR UPDATE SKIP
// LOCKED), so two servers never lease one message at once; FIFO group order
// and deduplication are enforced by row locks in the database (see
// receive.go and send.go). Sequence numbers come from a per-queue counter
// updated under the queue row's lock. Every time is the engine's, passed
// in: no statement of a queue operation reads the database's clock.
//
// The store is a baton.SharedStore. As its Notifier, once sends, releases and moves commit, a
// waker NOTIFYs the other servers, one notification per queue per round
// trip, and a LISTENing connection, reconnected when it
// breaks, relays other servers' notifications to the engine so their sends
// wake long polls here. As its LedgerBus, the same connection
// relays the engines' lease-ledger batches (NOTIFY on a channel of their
// own), so that every server's lease reports cover every server's leases.
//
// As its TaskLocker, a message move task runs on the
// server holding its advisory lock, taken on a connection of its own (one
// more per task running here) and lost with that server's session, and the
// database keeps one active task per source queue (see tasklock.go and
// movetasks.go).
package pgstore
