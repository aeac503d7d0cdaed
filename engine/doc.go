// Package engine holds Baton's queue semantics: validation and defaults,
// leases and receipt handles, long-poll waiting, checksums and retention.
// It knows nothing of HTTP or wire formats, and persists through a
// baton.Store, passing it the time from an injected clock.Clock.
package engine
