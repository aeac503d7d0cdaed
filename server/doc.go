// Package server is Baton's HTTP front: it tells the two SQS wire protocols
// apart, decodes with the matching codec, runs the operation on the engine
// and renders the result or error, with x-amzn-RequestId on every answer.
// It also serves /healthz.
package server
