// Package bench is the load generator behind `baton bench`. It speaks the
// SQS JSON 1.0 protocol with request bodies built once, over a tuned
// net/http transport (no SDK on the hot path), so that what it measures is
// the server and not the client. It works against any SQS-compatible
// endpoint, signing with SigV4 when given a key.
//
// A run drives one scenario (send, send-batch, lifecycle, longpoll-latency,
// lease-expiry) for a duration after a warm-up and reports requests and
// messages per second, latency percentiles and errors by code. Echo is the
// ceiling: a bare JSON server that decodes each request and encodes a
// response of the action's shape with encoding/json and nothing else, so a
// server's figure can be read as a fraction of what HTTP and JSON alone cost
// on the same machine in the same run.
package bench
