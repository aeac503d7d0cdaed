// Package sns holds Baton's Amazon SNS semantics: topics, subscriptions and
// the fan-out of a publish to the SQS queues subscribed to a topic, with
// AWS's validation, defaults and error texts (docs/architecture.md §8). It
// knows nothing of HTTP or wire formats. Topics and subscriptions persist
// through a baton.TopicStore; a publish is delivered through the engine, as
// an SQS send to each subscribed queue, so every SQS rule of the queue
// holds for the copies and the engine's rules stay written once. What AWS
// would send the protocols Baton does not deliver to (email, sms, lambda,
// firehose) is recorded instead, for tests to read (record.go).
package sns
