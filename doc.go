// Package baton is the vocabulary of Baton, a self-hosted queue server that
// speaks the Amazon SQS API: queues, messages, leases, the one error type
// clients see, the injected clock and the Store seam every backend fills.
//
// It imports only the standard library. The queue semantics live in package
// engine, the wire formats in protocol/*, and persistence in store/*.
package baton
