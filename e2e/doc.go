// Package e2e holds end-to-end tests of the baton binary as users run it.
//
// The tests build cmd/baton once, start it with `baton serve --listen
// 127.0.0.1:0` (one process per test, killed when the test ends) and drive it
// over HTTP with real clients: the AWS CLI v1, boto3 over both the AWS JSON
// 1.0 and the Query protocol, and aws-sdk-go-v2 for a long poll cut short by
// SIGTERM. They check the answers the way a client sees them: queue URLs,
// attributes, tags, message bodies and their MD5 digests, batch results
// with per-entry failures, error codes and HTTP statuses, and a graceful
// shutdown that answers waiting long polls and exits with status 0.
//
// A test whose external client (aws, or python3 with boto3) is missing, or
// a boto3 run whose botocore cannot be made to speak Query, is skipped,
// unless BATON_REQUIRE_CLIENTS=1 is set, as CI does: then it fails. The
// disk tests (diskfull_test.go) mount small file systems, freeze one and
// limit the server's file descriptors, which needs root: without it they
// are skipped, unless BATON_REQUIRE_MOUNT=1 or CI=true.
// The package has no non-test code.
package e2e
