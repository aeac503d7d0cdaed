// Package sigv4 verifies AWS Signature Version 4 on incoming SQS requests
// (docs/sqs-behaviour.md §1.6): the Authorization header form that SDKs and the AWS
// CLI send, and the presigned query-string form (X-Amz-Algorithm,
// X-Amz-Credential, X-Amz-Date, X-Amz-Expires, X-Amz-SignedHeaders,
// X-Amz-Signature).
//
// A Verifier knows the accepted access keys and, for each, the account whose
// queues its requests see. It rebuilds the canonical request from what
// arrived, signs it with the key's secret for the scope's service ("sqs", or
// "sns" for the SNS API Baton serves on the same endpoint) and compares
// in constant time. Refusals are *baton.Error values with AWS's codes:
// MissingAuthenticationToken (no signature at all), IncompleteSignature (a
// malformed one), InvalidClientTokenId (unknown access key, or a session
// token: the keys a Verifier holds are long-term keys, which have none) and
// SignatureDoesNotMatch (wrong signature, tampered request, date outside the
// 15-minute window, expired presigned URL).
//
// Time comes from the clock.Clock the Verifier is given, so tests check the
// 15-minute window on a fake clock.
package sigv4
