// Package compat holds the tests that prove third-party Go libraries work
// against Baton: each a short real round trip through the library's own
// API, against a server batontest starts. It is a module of its own
// (e2e/compat/go.mod, replacing github.com/baton-sqs/baton with this
// repository) so that the libraries' dependencies stay out of Baton's
// go.mod. docs/compatibility.md lists what is tested, with the versions
// this go.mod pins; .ci/run runs it.
package compat
